"""Section c of the GPU benchmark: top-k renorm on the device (finding 2).

Contenders, on ``[rows, vocab]`` = 512 × 163,840 probabilities (64 requests × 8 verify rows,
K3's vocabulary; softmax of 3·N(0, 1) logits in fp32, seeded, stored as fp32 or bf16), per-row
k as sglang passes it (an int64 tensor):

* ``k3lab_patch``: the function :mod:`k3lab.patches.topk_renorm` binds into sglang (its
  ``REPLACEMENTS``), which calls :func:`k3lab.sampling.top_k_renorm_prob` with its input checks;
* ``k3lab_unchecked``: the same with ``validate=False`` (the checks read tensors on the host:
  on a GPU each such read is a sync, which is what this pair measures);
* ``sort_fix``: the article's sort, masked_fill, divide (:func:`k3lab.sampling.top_k_sort_fix`);
* ``rank_mask``: keep exactly k by rank (:func:`k3lab.sampling.top_k_rank_mask`, the behaviour
  of sglang 0.5.23's torch fallback);
* ``topk``: one ``torch.topk(probs, k)`` — a floor, not a renormalisation;
* ``flashinfer``: ``flashinfer.sampling.top_k_renorm_probs`` (the kernel sglang calls on CUDA)
  where flashinfer imports and runs; otherwise skipped, and the kernel row says why.

Per contender: median and minimum seconds of ``repeats`` rotating rounds after warm-ups, the
ratio to ``k3lab_patch``, the host syncs of one call (GPU only), and whether it keeps the same
entries as the sort fix (and the largest difference).
"""

from __future__ import annotations

import time

import torch

from .. import sampling as S
from k3lab_patches.topk_renorm import REPLACEMENTS
from . import device_bench as D

SECTION = "renorm"
CONTENDERS = ("k3lab_patch", "k3lab_unchecked", "sort_fix", "rank_mask", "topk", "flashinfer")
NOT_RENORMS = ("topk",)  # compared with nothing: it returns values and indices, not a row
LOGIT_STD = 3.0
_PATCHED = REPLACEMENTS["top_k_renorm_prob"]
IMPL = {"k3lab_patch": "k3lab.patches.topk_renorm REPLACEMENTS['top_k_renorm_prob'] (input checks on)",
        "k3lab_unchecked": "k3lab.sampling.top_k_renorm_prob(validate=False)",
        "sort_fix": "k3lab.sampling.top_k_sort_fix (the article's sort, masked_fill, divide)",
        "rank_mask": "k3lab.sampling.top_k_rank_mask (keeps exactly k by rank)",
        "topk": "torch.topk(probs, k) (a floor: selection only)",
        "flashinfer": "flashinfer.sampling.top_k_renorm_probs"}


def _flashinfer(enabled: bool):
    """(fn, None) or (None, why it is skipped)."""
    if not enabled:
        return None, "not asked for (--no-flashinfer)"
    try:
        from flashinfer.sampling import top_k_renorm_probs
    except Exception as e:  # not installed, or installed without its CUDA pieces
        return None, f"flashinfer is not importable here: {D.one_line(e)}"
    return (lambda probs, k_rows, k: top_k_renorm_probs(probs, k)), None


def contenders(device, flashinfer: bool = True) -> tuple[dict, list[dict]]:
    """{name: fn(probs, k_rows, k) → output} and a kernel row per contender."""
    fns = {"k3lab_patch": lambda p, kr, k: _PATCHED(p, kr),
           "k3lab_unchecked": lambda p, kr, k: S.top_k_renorm_prob(p, kr, validate=False),
           "sort_fix": lambda p, kr, k: S.top_k_sort_fix(p, kr),
           "rank_mask": lambda p, kr, k: S.top_k_rank_mask(p, kr),
           "topk": lambda p, kr, k: torch.topk(p, k, dim=-1)}
    rows = [D.kernel_row(SECTION, n, "ran", IMPL[n]) for n in fns]
    if device.type != "cuda":
        fi, why = None, "needs a GPU (flashinfer's kernels are CUDA only)"
    else:
        fi, why = _flashinfer(flashinfer)
    if fi is None:
        rows.append(D.kernel_row(SECTION, "flashinfer", "skipped", why))
    else:
        fns["flashinfer"] = fi
        rows.append(D.kernel_row(SECTION, "flashinfer", "ran", IMPL["flashinfer"]))
    return fns, rows


def make_probs(rows: int, vocab: int, dtype, device, seed: int = 0) -> torch.Tensor:
    """``softmax(3·N(0, 1))`` rows in fp32 (as sglang's dense path), stored as ``dtype``."""
    logits = D.seeded_normal((rows, vocab), device, torch.float32, seed, scale=LOGIT_STD)
    return torch.softmax(logits, dim=-1).to(dtype)


def _one_case(fns: dict, probs, k: int, clock, repeats: int, warmups: int, status: dict) -> list[dict]:
    """Rows for one (dtype, k): every contender that runs on this dtype."""
    rows_n, vocab = probs.shape
    k_rows = torch.full((rows_n,), k, dtype=torch.int64, device=probs.device)
    outs, live = {}, {}
    for n, fn in fns.items():
        t0 = time.perf_counter()
        try:
            outs[n] = fn(probs, k_rows, k)  # the first call (a JIT build included), kept to compare
        except Exception as e:  # e.g. a dtype the kernel does not take: recorded, the others still run
            status[n].append(f"{str(probs.dtype)[6:]} k={k} refused: {D.one_line(e, 160)}")
            continue
        clock.sync()
        if n == "flashinfer" and not status[n]:
            status[n].append(f"first call {time.perf_counter() - t0:.1f} s (JIT build included)")
        live[n] = (lambda f: lambda: f(probs, k_rows, k))(fn)
    times = D.rounds(live, clock, repeats, warmups)
    med = D.medians(times)
    ref = outs["sort_fix"] != 0
    out = []
    for n in live:
        renorm = n not in NOT_RENORMS
        out.append({"k": k, "dtype": str(probs.dtype).replace("torch.", ""), "rows": rows_n, "vocab": vocab,
                    "contender": n, "impl": IMPL[n], "repeats": repeats, "warmups": warmups,
                    "median_s": med[n], "min_s": min(times[n]), "ratio_to_k3lab_patch": med[n] / med["k3lab_patch"],
                    "host_syncs": _or_na(D.host_syncs(live[n], probs.device)),
                    "same_kept_set_as_sort_fix": bool(torch.equal(outs[n] != 0, ref)) if renorm else D.NOT_AVAILABLE,
                    "max_abs_diff_vs_sort_fix": float((outs[n].float() - outs["sort_fix"].float()).abs().max())
                    if renorm else D.NOT_AVAILABLE, "device": probs.device.type})
    return out


def _or_na(x):
    return D.NOT_AVAILABLE if x is None else x


def measure(rows: int, vocab: int, ks, dtypes, repeats: int, warmups: int, device, seed: int = 0,
            flashinfer: bool = True, bar=None):
    """Run section c → (rows of ``gpu_bench_renorm.csv``, kernel rows)."""
    if max(ks) >= vocab:
        raise ValueError(f"every k must be below the vocabulary ({vocab}), got {max(ks)}")
    clock = D.Clock(device)
    fns, status_rows = contenders(device, flashinfer)
    notes: dict[str, list[str]] = {n: [] for n in fns}
    out = []
    for dtype in dtypes:
        probs = make_probs(rows, vocab, dtype, device, seed)
        for k in ks:
            out += _one_case(fns, probs, int(k), clock, repeats, warmups, notes)
            if bar is not None:
                bar.update(1)
        del probs
    ran = {r["contender"] for r in out}
    for row in status_rows:  # a contender that refused every case did not run here
        if row["status"] == "ran" and row["kernel"] not in ran:
            row["status"] = "refused"
    D.add_notes(status_rows, notes)
    return out, status_rows
