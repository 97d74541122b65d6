"""Section a of the GPU benchmark: 12 heads vs zero-padded 16 on real attention kernels (finding 3).

One MLA layer of one TP8 rank of Kimi K3 (shapes from the published config: 96 heads / 8 =
12, q/k head dim 192, v 128), causal cold prefill of one sequence, bf16, through every torch
SDPA backend (:mod:`k3lab.live.sdpa_backends`: flash, efficient, cuDNN, math — which ran and
which refused is recorded) and k3lab's Triton kernel (:mod:`k3lab.live.triton_attention`,
skipped with the reason where triton or a GPU is missing). Per kernel and length, timed in
rotating rounds: the 12 real heads; the same through :func:`k3lab.attention.with_head_padding`
(pad to :func:`k3lab.attention.padded_heads` = 16, run, slice; the copies included); 16
native heads; and the pad+slice copies alone. Checked once per row: the sliced padded output
against the unpadded one (max abs diff), and once per kernel its output against the fp32
reference (:func:`k3lab.mla_kernels.mla_prefill_reference`) on the first tokens.
"""

from __future__ import annotations

import math

import torch

from .. import attention as A
from .. import mla_kernels
from ..specs import load_model
from . import device_bench as D
from . import sdpa_backends as B
from .kernel_timing import pad_copies

SECTION = "prefill"
TRITON = "triton:k3lab"
KERNELS = tuple(f"sdpa:{b}" for b in B.BACKENDS) + (TRITON,)
TP = 8
#: the math backend materialises the [heads, S, S] scores; lengths past this are skipped
MATH_MAX_SCORE_BYTES = 8 * 2**30
#: tokens of the fp32 reference check (causal: the first R outputs depend on the first R tokens only)
REFERENCE_TOKENS = 256


def rank_shapes(tp: int = TP) -> dict:
    """Heads per rank and head dims of K3's MLA prefill (MHA form) at TP ``tp``."""
    cfg = load_model("kimi-k3")
    return {"heads": cfg.num_attention_heads // tp, "qk_head_dim": cfg.qk_nope_head_dim + cfg.qk_rope_head_dim,
            "v_head_dim": cfg.v_head_dim}


def _inputs(seq_len: int, heads: int, sh: dict, device, dtype, seed: int):
    """q, k, v for ``heads`` heads ``[S, heads, d]``, drawn on the device; the first 12 heads of the
    16-head tensors are the 12-head inputs, so both runs see the same values."""
    return tuple(D.seeded_normal((seq_len, heads, d), device, dtype, seed + i)
                 for i, d in enumerate((sh["qk_head_dim"], sh["qk_head_dim"], sh["v_head_dim"])))


def _triton_kernel(device):
    """(kernel, None) or (None, why it is skipped)."""
    if device.type != "cuda":
        return None, "needs a GPU: Triton compiles GPU code (its CPU interpreter is checked by the sglang-tier test)"
    try:
        from . import triton_attention
    except ImportError as e:
        return None, f"triton is not importable here: {e}"
    return triton_attention.causal_prefill, None


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


def kernels(sh: dict, device, dtype, seed: int) -> tuple[dict, list[dict]]:
    """Which kernels run K3's shapes here → ({name: (q, k, v) → out}, kernel rows). Each that
    runs is checked against the fp32 reference on :data:`REFERENCE_TOKENS` tokens."""
    h, r = sh["heads"], REFERENCE_TOKENS
    q, k, v = (x[:, :h].contiguous() for x in _inputs(r, A.padded_heads(h), sh, device, dtype, seed))
    scale = 1.0 / math.sqrt(sh["qk_head_dim"])
    cu = torch.tensor([0, r], dtype=torch.int32)
    ref = mla_kernels.mla_prefill_reference(q.float().cpu(), k.float().cpu(), v.float().cpu(), cu, softmax_scale=scale)
    found, rows = {}, []
    for name in KERNELS:
        v_dim = sh["v_head_dim"]
        if name == TRITON:
            fn, why = _triton_kernel(device)
            if fn is None:
                rows.append(D.kernel_row(SECTION, name, "skipped", why))
                continue
            what = "k3lab's Triton kernel, q/k split 128 + 64"
        else:
            backend = name.split(":", 1)[1]
            args = (q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None])
            try:
                pad_v, what = B.probe(backend, *args, causal=True, scale=scale)
            except B.Refused as e:
                rows.append(D.kernel_row(SECTION, name, "refused", str(e)))
                continue
            fn = B.prefill_kernel(backend, pad_v, scale)
            v_dim = sh["qk_head_dim"] if pad_v else v_dim
        try:
            diff = _max_diff(fn(q, k, v), ref.to(q.device))
        except Exception as e:  # a kernel that compiles but fails here is recorded, not fatal
            rows.append(D.kernel_row(SECTION, name, "refused", f"failed on the reference check: {D.one_line(e)}"))
            continue
        found[name] = fn
        rows.append(D.kernel_row(SECTION, name, "ran", what, v_dim, diff))
    return found, rows


def _one_length(name, fn, v_run: int, s: int, sh: dict, tensors, clock, repeats: int, warmups: int) -> dict:
    """One row: the four timings of ``fn`` at ``s`` tokens, and the exactness of the slice."""
    h = sh["heads"]
    m = A.padded_heads(h)
    q16, k16, v16 = tensors
    q, k, v = (x[:, :h].contiguous() for x in tensors)
    padded = A.with_head_padding(fn)
    plain_out, padded_out = fn(q, k, v), padded(q, k, v)  # also the first warm-up
    diff = _max_diff(plain_out, padded_out)
    equal = bool(torch.equal(plain_out, padded_out))
    del plain_out, padded_out
    t = D.medians(D.rounds({"12": lambda: fn(q, k, v), "12_padded": lambda: padded(q, k, v),
                            "16": lambda: fn(q16, k16, v16), "copies": lambda: pad_copies(q, k, v, m)},
                           clock, repeats, warmups))
    fl12, fl16 = A.attention_flops(s, h), A.attention_flops(s, m)
    return {"seq_len": s, "kernel": name, "dtype": str(q.dtype).replace("torch.", ""), "heads_real": h,
            "heads_padded": m, "v_head_dim_run": v_run, "repeats": repeats,
            "t_12_median_s": t["12"], "t_12_padded_median_s": t["12_padded"], "t_16_native_median_s": t["16"],
            "t_pad_copies_median_s": t["copies"], "ratio_padded_over_12": t["12_padded"] / t["12"],
            "ratio_native_over_12": t["16"] / t["12"], "ratio_flops": fl16 / fl12,
            "ratio_flops_plus_copies": fl16 / fl12 + t["copies"] / t["12"],
            "copies_share_of_padded": t["copies"] / t["12_padded"], "max_abs_diff_sliced_vs_12": diff,
            "sliced_equals_12": equal, "tflop_s_12": fl12 / t["12"] / 1e12, "device": clock.device.type}


def measure(lens, repeats: int, warmups: int, device, dtype=torch.bfloat16, seed: int = 0, bar=None):
    """Run section a → (list of rows of ``gpu_bench_prefill.csv``, kernel rows)."""
    sh = rank_shapes()
    m = A.padded_heads(sh["heads"])
    clock = D.Clock(device)
    fns, status = kernels(sh, device, dtype, seed)
    v_run = {r["kernel"]: r["v_head_dim_run"] for r in status}  # the v head dim each kernel runs at
    notes: dict[str, list[str]] = {n: [] for n in fns}
    out = []
    for s in lens:
        tensors = _inputs(s, m, sh, device, dtype, seed)
        for name in KERNELS:
            if name in fns and name == "sdpa:math" and m * s * s * 4 > MATH_MAX_SCORE_BYTES:
                notes[name].append(f"S={s} skipped (its [heads, S, S] fp32 scores would take "
                                   f"{m * s * s * 4 / 2**30:.0f} GiB)")
            elif name in fns:
                try:
                    out.append(_one_length(name, fns[name], v_run[name], s, sh, tensors, clock, repeats, warmups))
                except (RuntimeError, ValueError) as e:  # out of memory at a long length: said, not fatal
                    notes[name].append(f"S={s} failed: {D.one_line(e, 160)}")
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
            if bar is not None:
                bar.update(1)
        del tensors
    D.add_notes(status, notes)
    return out, status
