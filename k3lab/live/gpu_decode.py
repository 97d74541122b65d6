"""Section b of the GPU benchmark: does padding 12 q heads to 16 move absorbed-MLA decode (P7)?

Decode runs MLA absorbed: each sequence's one query token has 12 q heads per TP8 rank, each
576 wide (512 latent + 64 rope), against ONE latent KV head ``[context, 576]`` whose first 512
columns are the value (shapes from the published config). The bytes read are the KV cache's,
whatever the q-head count; the benchmark measures whether time moves anyway. Kernels: plain
``torch.matmul`` + fp32 softmax (``bmm``), and every torch SDPA backend with the q heads as
the query positions of one head (which ran, which refused, recorded). Per kernel, batch and
context, in rotating rounds: 12 heads; 12 zero-padded to 16 with :func:`k3lab.attention.pad_heads`
and sliced back (copies included); 16 native heads. Checked: the slice against the 12-head
output, and each kernel once against an fp32 reference on the host.
"""

from __future__ import annotations

import math

import torch

from .. import attention as A
from ..specs import load_model
from . import device_bench as D
from . import sdpa_backends as B

SECTION = "decode"
BMM = "bmm"
KERNELS = (BMM,) + tuple(f"sdpa:{b}" for b in B.BACKENDS)
TP = 8


def rank_shapes(tp: int = TP) -> dict:
    """q heads per rank, the latent width (kv_lora_rank + rope) and the value width of K3's decode."""
    cfg = load_model("kimi-k3")
    return {"heads": cfg.num_attention_heads // tp, "latent_dim": cfg.kv_lora_rank + cfg.qk_rope_head_dim,
            "value_dim": cfg.kv_lora_rank, "scale": 1.0 / math.sqrt(cfg.qk_nope_head_dim + cfg.qk_rope_head_dim)}


def bmm_decode(value_dim: int, scale: float):
    """Absorbed decode in plain torch: ``(q [B, H, L], kv [B, ctx, L]) → [B, H, value_dim]``."""
    def run(q, kv):
        p = torch.softmax(torch.matmul(q, kv.transpose(1, 2)).float() * scale, dim=-1)
        return torch.matmul(p.to(kv.dtype), kv[:, :, :value_dim])

    return run


def _inputs(batch: int, context: int, heads: int, sh: dict, device, dtype, seed: int):
    """(q [B, heads, L], kv [B, ctx, L]) drawn on the device."""
    q = D.seeded_normal((batch, heads, sh["latent_dim"]), device, dtype, seed)
    kv = D.seeded_normal((batch, context, sh["latent_dim"]), device, dtype, seed + 1)
    return q, kv


def kernels(sh: dict, device, dtype, seed: int) -> tuple[dict, list[dict]]:
    """Which kernels run the decode shapes here → ({name: (q, kv) → out}, kernel rows), each
    that runs checked once against an fp32 reference on the host."""
    q, kv = _inputs(2, 64, sh["heads"], sh, device, dtype, seed)
    ref = bmm_decode(sh["value_dim"], sh["scale"])(q.float().cpu(), kv.float().cpu())
    found, rows = {}, []
    for name in KERNELS:
        v_dim = sh["value_dim"]
        if name == BMM:
            fn, what = bmm_decode(sh["value_dim"], sh["scale"]), "torch.matmul, fp32 softmax, matmul with the latent's first 512 columns"
        else:
            backend = name.split(":", 1)[1]
            qq, k, v = B.decode_layout(q, kv, sh["value_dim"], pad_v=False)
            try:
                pad_v, what = B.probe(backend, qq, k, v, causal=False, scale=sh["scale"], wide_v=k,
                                      how="widened to the whole latent")
            except B.Refused as e:
                rows.append(D.kernel_row(SECTION, name, "refused", str(e)))
                continue
            fn = B.decode_kernel(backend, pad_v, sh["value_dim"], sh["scale"])
            v_dim = sh["latent_dim"] if pad_v else v_dim
        try:
            diff = float((fn(q, kv).float().cpu() - ref).abs().max())
        except Exception as e:  # recorded, not fatal
            rows.append(D.kernel_row(SECTION, name, "refused", f"failed on the reference check: {D.one_line(e)}"))
            continue
        found[name] = fn
        rows.append(D.kernel_row(SECTION, name, "ran", what, v_dim, diff))
    return found, rows


def _one_point(name, fn, v_run: int, batch: int, context: int, sh: dict, q16, kv, clock, repeats, warmups) -> dict:
    h = sh["heads"]
    m = A.padded_heads(h)
    q = q16[:, :h].contiguous()

    def padded():
        return fn(A.pad_heads(q, m), kv)[:, :h].contiguous()

    plain_out, padded_out = fn(q, kv), padded()
    diff = float((plain_out.float() - padded_out.float()).abs().max())
    equal = bool(torch.equal(plain_out, padded_out))
    del plain_out, padded_out
    t = D.medians(D.rounds({"12": lambda: fn(q, kv), "12_padded": padded, "16": lambda: fn(q16, kv)},
                           clock, repeats, warmups))
    kv_bytes = kv.numel() * kv.element_size()
    return {"batch": batch, "context": context, "kernel": name, "dtype": str(kv.dtype).replace("torch.", ""),
            "heads_real": h, "heads_padded": m, "latent_dim": sh["latent_dim"], "value_dim": sh["value_dim"],
            "v_head_dim_run": v_run, "repeats": repeats, "t_12_median_s": t["12"],
            "t_12_padded_median_s": t["12_padded"], "t_16_native_median_s": t["16"],
            "ratio_padded_over_12": t["12_padded"] / t["12"], "ratio_native_over_12": t["16"] / t["12"],
            "kv_bytes": kv_bytes, "kv_gb_s_12": kv_bytes / t["12"] / 1e9, "max_abs_diff_sliced_vs_12": diff,
            "sliced_equals_12": equal, "device": clock.device.type}


def measure(batches, contexts, repeats: int, warmups: int, device, dtype=torch.bfloat16, seed: int = 0, bar=None):
    """Run section b → (rows of ``gpu_bench_decode.csv``, kernel rows)."""
    sh = rank_shapes()
    m = A.padded_heads(sh["heads"])
    clock = D.Clock(device)
    fns, status = kernels(sh, device, dtype, seed)
    v_run = {r["kernel"]: r["v_head_dim_run"] for r in status}
    notes: dict[str, list[str]] = {n: [] for n in fns}
    out = []
    for ctx in contexts:
        for b in batches:
            q16, kv = _inputs(b, ctx, m, sh, device, dtype, seed)
            for name in KERNELS:
                if name in fns:
                    try:
                        out.append(_one_point(name, fns[name], v_run[name], b, ctx, sh, q16, kv, clock, repeats,
                                              warmups))
                    except (RuntimeError, ValueError) as e:  # out of memory: said, not fatal
                        notes[name].append(f"batch {b} context {ctx} failed: {D.one_line(e, 160)}")
                        if device.type == "cuda":
                            torch.cuda.empty_cache()
                if bar is not None:
                    bar.update(1)
            del q16, kv
    D.add_notes(status, notes)
    return out, status
