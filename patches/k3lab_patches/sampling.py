"""Top-k / top-p probability renormalisation in plain PyTorch, with FlashInfer's semantics.

These are the functions sglang's speculative verifier calls on its dense path
(``top_k_renorm_prob`` / ``top_p_renorm_prob``; ``sglang/srt/speculative/dflash_utils.py``,
0.5.16). On ROCm 0.5.16 binds both to ``None``; :mod:`k3lab_patches.topk_renorm` binds
these instead. Written from the documented behaviour of FlashInfer's
``top_k_renorm_probs`` / ``top_p_renorm_probs`` (``flashinfer.sampling``) and of sglang's
Triton renorm kernels (``sglang/kernels/ops/sampling/renorm_triton.py``, 0.5.23), not
from their code:

* top-k: per row, the pivot is the k-th largest probability; every entry ``>= pivot`` is
  kept (ties at the pivot survive, so a row may keep more than k entries); the row is
  divided by ``max(kept sum, 1e-8)``. ``k >= vocab`` (sglang's ``TOP_K_ALL = 1 << 30``) or
  ``k == -1`` means "unrestricted": the row is only renormalised.
* top-p: per row, the pivot is the smallest probability of the shortest
  highest-probability prefix whose mass reaches ``p`` times the row's mass; every entry
  ``>= pivot`` is kept (ties again survive) and the row is renormalised. ``p == 1``
  only renormalises.

Dtype policy: float16, bfloat16, float32 and float64 are accepted. The pivot and the mask
are computed on the values exactly as given (an up-cast to float32 is exact, so ties in
bf16/fp16 stay ties); sums are accumulated in float32 (float64 for float64 input); the
result is returned in the input dtype. Any device works: nothing here names one.

Bad input raises ``ValueError`` naming the problem: NaN/inf, negative entries, a row
whose entries are all zero, ``k`` of 0 or below (other than -1), a per-row ``k``/``p``
whose length does not match the rows, an empty batch.

The k3lab study re-exports this module as ``k3lab.sampling`` and keeps its baselines there
(the article's sort fix, sglang 0.5.23's rank mask).
"""

from __future__ import annotations

import math
import numbers
import reprlib

import torch

TOP_K_ALL = 1 << 30  # sglang's "whole vocabulary" value (sglang/srt/sampling/sampling_params.py)
UNRESTRICTED_K = -1  # the user-facing "no top-k" convention
NORM_EPS = 1e-8  # FlashInfer's normaliser floor: divide by max(sum, 1e-8)
TOP_P_SLACK = 1e-6  # relative slack when testing "cumulative mass >= p"
_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def check_probs(probs: torch.Tensor, name: str = "probs") -> torch.Tensor:
    """Validate a ``[rows, vocab]`` probability tensor → its row sums ``[rows]`` (acc dtype).

    ValueError naming the problem (and the rows) for NaN, inf, negative entries or a row
    whose entries are all zero. Cheap on purpose: one flat ``aminmax`` pass finds NaN
    (it propagates), ±inf and negatives; one row-sum pass finds all-zero rows. The
    per-row scan that names the rows only runs once something is wrong.
    """
    _check_layout(probs, name)
    lo, hi = torch.aminmax(probs)
    if not (bool(torch.isfinite(lo)) and bool(torch.isfinite(hi)) and bool(lo >= 0)):
        bad_nan = torch.isnan(probs).any(dim=-1)
        if bool(bad_nan.any()):
            raise ValueError(f"{name} has NaN in row(s) {_rows(bad_nan)}")
        bad_inf = torch.isinf(probs).any(dim=-1)
        if bool(bad_inf.any()):
            raise ValueError(f"{name} has inf in row(s) {_rows(bad_inf)}")
        neg = (probs < 0).any(dim=-1)
        raise ValueError(f"{name} has negative entries in row(s) {_rows(neg)}")
    sums = probs.sum(dim=-1, dtype=_acc_dtype(probs.dtype))
    zero = sums == 0
    if bool(zero.any()):
        raise ValueError(f"{name} has all-zero row(s) {_rows(zero)}: nothing to renormalise")
    # finite entries whose sum overflows the accumulation dtype would renormalise to zeros
    big = torch.isinf(sums)
    if bool(big.any()):
        raise ValueError(f"{name} row(s) {_rows(big)} sum past the {_acc_dtype(probs.dtype)} range: "
                         "scale the row down (these are meant to be probabilities)")
    return sums


def _check_layout(probs: torch.Tensor, name: str = "probs") -> None:
    """ValueError unless ``probs`` is a non-empty 2-D float16/bf16/fp32/fp64 tensor."""
    if not isinstance(probs, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(probs).__name__}")
    if probs.dim() != 2:
        raise ValueError(f"{name} must be 2-D [rows, vocab], got shape {tuple(probs.shape)}")
    if probs.dtype not in _FLOAT_DTYPES:
        raise ValueError(f"{name} must be float16/bfloat16/float32/float64, got {probs.dtype}")
    _check_device(probs.device, name)
    rows, vocab = probs.shape
    if rows == 0:
        raise ValueError(f"{name}: empty batch (0 rows)")
    if vocab == 0:
        raise ValueError(f"{name}: empty vocabulary (0 columns)")


def _check_finite_nonneg(probs: torch.Tensor) -> None:
    """One flat ``aminmax`` pass: NaN, ±inf, a negative entry, or entries so large that a
    row sum might overflow (max × vocab past the accumulation range) → :func:`check_probs`,
    which raises when the problem is real."""
    lo, hi = torch.aminmax(probs)
    if not (bool(torch.isfinite(lo)) and bool(torch.isfinite(hi)) and bool(lo >= 0)):
        check_probs(probs)
    elif float(hi) * probs.shape[-1] > torch.finfo(_acc_dtype(probs.dtype)).max:
        check_probs(probs)


def _rows(mask: torch.Tensor, limit: int = 8) -> str:
    idx = torch.nonzero(mask).flatten().tolist()
    more = f" (+{len(idx) - limit} more)" if len(idx) > limit else ""
    return ", ".join(map(str, idx[:limit])) + more


def _row_major(probs):
    """A contiguous copy of a strided tensor (the scatters index rows flat, and sums then run
    in the same order whatever the strides: the same bits as the contiguous input gives)."""
    return probs.contiguous() if isinstance(probs, torch.Tensor) and not probs.is_contiguous() else probs


def _check_device(device, name: str) -> None:
    """ValueError for the meta device: its tensors have shapes but no values to check or use."""
    if device is not None and torch.device(device).type == "meta":
        raise ValueError(f"{name} is on the meta device: it holds no values")


def _check_one_per_row(t: torch.Tensor, name: str, symbol: str, rows: int) -> None:
    """ValueError unless ``t`` is 1-D with one entry per row of probs (and not on meta)."""
    _check_device(t.device, name)
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D (one {symbol} per row), got shape {tuple(t.shape)}")
    if t.numel() != rows:
        raise ValueError(f"{name} has {t.numel()} entries but probs has {rows} rows")


def per_row_k(top_k, rows: int, vocab: int, device=None) -> torch.Tensor:
    """``top_k`` (int or 1-D integer tensor of ``rows``) → int64 ``[rows]`` on ``device``.

    Unrestricted entries (``-1`` or ``>= vocab``) become ``vocab``. ValueError for k == 0,
    k < -1, a float or non-1-D tensor, or a length that does not match the rows.
    """
    if isinstance(top_k, bool):
        raise ValueError(f"top_k must be an int or a 1-D integer tensor, got {top_k!r}")
    _check_device(device, "probs")
    if isinstance(top_k, numbers.Integral):  # NumPy's np.int64 too, as sglang's own code passes
        top_k = int(top_k)
    if isinstance(top_k, int):
        if top_k == 0 or top_k < UNRESTRICTED_K:  # checked before any int64 arithmetic
            raise ValueError(f"top_k must be >= 1 or -1 (unrestricted); got {reprlib.repr(top_k)}")
        # any k past the vocabulary means "all of it"; clamp before an int64 could overflow
        k = torch.full((rows,), min(top_k, vocab + 1), dtype=torch.int64, device=device)
    elif isinstance(top_k, torch.Tensor):
        if top_k.dtype.is_floating_point or top_k.dtype == torch.bool or top_k.is_complex():
            raise ValueError(f"top_k must hold integers, got dtype {top_k.dtype}")
        _check_one_per_row(top_k, "top_k", "k", rows)
        k = top_k.to(device=device, dtype=torch.int64)
    else:
        raise ValueError(f"top_k must be an int or a 1-D integer tensor, got {type(top_k).__name__}")
    bad = (k <= 0) & (k != UNRESTRICTED_K)
    if bool(bad.any()):
        raise ValueError(f"top_k must be >= 1 or -1 (unrestricted); got {k[bad][0].item()} "
                         f"in row(s) {_rows(bad)}")
    return torch.where((k == UNRESTRICTED_K) | (k > vocab), torch.full_like(k, vocab), k)


def per_row_p(top_p, rows: int, device=None) -> torch.Tensor:
    """``top_p`` (number or 1-D tensor of ``rows``) → float64 ``[rows]``, each in (0, 1]."""
    if isinstance(top_p, bool):
        raise ValueError(f"top_p must be a number or a 1-D tensor, got {top_p!r}")
    _check_device(device, "probs")
    if isinstance(top_p, numbers.Real) and not isinstance(top_p, (int, float)):  # np.float32, np.int64
        top_p = int(top_p) if isinstance(top_p, numbers.Integral) else float(top_p)
    if isinstance(top_p, (int, float)):
        if not 0 < top_p <= 1:  # checked before float(): a huge int would overflow it
            raise ValueError(f"top_p must be in (0, 1]; got {reprlib.repr(top_p)}")
        p = torch.full((rows,), float(top_p), dtype=torch.float64, device=device)
    elif isinstance(top_p, torch.Tensor):
        if top_p.dtype == torch.bool or top_p.is_complex():
            raise ValueError(f"top_p must hold real numbers, got dtype {top_p.dtype}")
        _check_one_per_row(top_p, "top_p", "p", rows)
        p = top_p.to(device=device, dtype=torch.float64)
    else:
        raise ValueError(f"top_p must be a number or a 1-D tensor, got {type(top_p).__name__}")
    bad = ~((p > 0) & (p <= 1))  # also catches NaN
    if bool(bad.any()):
        raise ValueError(f"top_p must be in (0, 1]; got {p[bad][0].item()} in row(s) {_rows(bad)}")
    return p


def _renorm(x: torch.Tensor, keep: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    """Zero what ``keep`` drops, divide each row by max(kept sum, 1e-8) (``x`` in acc dtype)."""
    kept = x * keep
    s = kept.sum(dim=-1, keepdim=True).clamp_min(NORM_EPS)
    return (kept / s).to(out_dtype)


# How the max k + 1 largest entries of each row are found: see _top_k_plan. Chunk lengths
# are powers of two in [32, 1024] because ``amax`` over a shorter inner dimension is slow.
_CHUNK_MIN, _CHUNK_MAX = 32, 1024
_GATHER_SHARE = 1 / 16  # "gather" while the candidates are at most this share of a row
_HEAP_FACTOR = 64  # torch.topk on CPU keeps a heap (partial sort) where 64 * k <= row length


def _top_k_plan(vocab: int, kmax: int) -> tuple[str, int]:
    """How to find the ``kmax + 1`` largest entries of each row → (plan, chunk length).

    * ``"gather"``: chunk maxima (one streaming ``amax``), a topk over them picks ``kmax + 1``
      chunks, a topk over those chunks' entries gives the result. The two topks cost about
      ``vocab / chunk`` and ``(kmax + 1) * chunk``, least near ``chunk = sqrt(vocab / (kmax + 1))``
      (×2: the first is the cheaper per entry). Used while the candidates stay small.
    * ``"floor"``: the same chunk maxima give a floor under the ``kmax + 1`` largest entries;
      entries below it are raised to it in the output buffer (one fused pass that also pages
      the output in), and one topk over that buffer finds the result with few heap updates.
    * ``"topk"``: one ``torch.topk`` over the rows (small vocabularies, k near the vocabulary).
    """
    s = kmax + 1
    target = 2.0 * math.sqrt(vocab / s)
    chunk = min(max(1 << max(0, round(math.log2(max(target, 1.0)))), _CHUNK_MIN), _CHUNK_MAX)
    if -(-vocab // chunk) >= s and s * chunk <= _GATHER_SHARE * vocab:
        return "gather", chunk
    if -(-vocab // _CHUNK_MIN) >= 4 * s and _HEAP_FACTOR * s <= vocab:
        return "floor", _CHUNK_MIN
    return "topk", 0


def _chunk_maxima(x: torch.Tensor, chunk: int) -> torch.Tensor:
    """``[rows, ceil(vocab / chunk)]``: the maximum of each run of ``chunk`` entries (the last
    run may be shorter). ``x`` contiguous."""
    rows, vocab = x.shape
    n_full = vocab // chunk
    cmax = x[:, : n_full * chunk].view(rows, n_full, chunk).amax(dim=-1)
    if vocab > n_full * chunk:
        cmax = torch.cat([cmax, x[:, n_full * chunk:].amax(dim=-1, keepdim=True)], dim=1)
    return cmax


def _top_via_gather(x: torch.Tensor, cmax: torch.Tensor, rid: torch.Tensor, s: int, chunk: int):
    """The ``s`` largest entries of rows ``rid`` of ``x`` from the ``s`` chunks with the largest
    maxima (``cmax``: :func:`_chunk_maxima` of those rows).

    Returns (values ``[n, s]`` descending, columns ``[n, s]``, ``m_s [n, 1]`` the smallest
    maximum among the chosen chunks, ``row_max [n]``). Exact: every chunk whose maximum
    exceeds ``m_s`` was chosen and the ``s`` chosen maxima are ``s`` candidates ``>= m_s``, so
    the ``j``-th largest candidate is the row's ``j``-th largest for every ``j <= s``. Entries
    outside the chosen chunks are ``<= m_s``: a row whose pivot exceeds ``m_s`` has all its
    entries ``>= pivot`` among the candidates, and one whose pivot is ``<= m_s`` has at least
    ``s`` entries ``>= pivot`` (a tie straddles its pivot, as its ``k < s``).
    """
    rows, vocab = x.shape
    n_full = vocab // chunk
    tail = vocab - n_full * chunk
    cv, ci = torch.topk(cmax, s, dim=-1, sorted=False)
    n = ci.shape[0]
    if not tail:
        flat = x.view(rows * n_full, chunk)
        cand = flat.index_select(0, (rid.unsqueeze(1) * n_full + ci).flatten())
    else:
        body = x[:, : n_full * chunk].view(rows, n_full, chunk)
        cand = body[rid.unsqueeze(1), ci.clamp_max(n_full - 1)]  # [n, s, chunk]
        is_tail = ci == n_full
        if bool(is_tail.any()):
            pad = x.new_full((n, chunk), float("-inf"))  # below every valid probability
            pad[:, :tail] = x[rid, n_full * chunk:]
            cand = torch.where(is_tail.unsqueeze(-1), pad.unsqueeze(1), cand)
    vals, j = torch.topk(cand.view(n, s * chunk), s, dim=-1)
    cols = ci.gather(1, torch.div(j, chunk, rounding_mode="floor")) * chunk + j % chunk
    return vals, cols.clamp_max(vocab - 1), cv.amin(dim=-1, keepdim=True), cv.amax(dim=-1)


def _top_via_floor(x: torch.Tensor, cmax: torch.Tensor, s: int, out: torch.Tensor):
    """The ``s`` largest entries of every row of ``x``, using ``out`` (same shape) as scratch.

    ``m_s``, the ``s``-th largest chunk maximum, is at most the row's ``s``-th largest entry.
    ``out = clamp(x, min=m_s)`` keeps every entry ``>= m_s`` and raises the rest to ``m_s``, so
    its ``s`` largest values are the row's, and a topk over it seldom updates its heap. A
    returned column is genuine wherever its value exceeds ``m_s``; the caller keeps only such
    entries (a clean row's pivot exceeds ``m_s``, see :func:`_top_via_gather`). ``out`` (any
    contents on entry) is all zeros on return.
    Returns (values ``[rows, s]`` descending, columns ``[rows, s]``, ``m_s [rows, 1]``).
    """
    m_s = torch.topk(cmax, s, dim=-1, sorted=False).values.amin(dim=-1, keepdim=True)
    torch.clamp(x, min=m_s, out=out)
    vals, idx = torch.topk(out, s, dim=-1)
    out.zero_()
    return vals, idx, m_s


def top_k_renorm_prob(probs: torch.Tensor, top_k, *, validate: bool = True) -> torch.Tensor:
    """Top-k renormalisation, FlashInfer semantics (see the module docstring).

    probs: ``[rows, vocab]`` probabilities (need not sum to 1), float16/bf16/fp32/fp64.
    top_k: an int or an integer tensor ``[rows]``; -1 or >= vocab = unrestricted.
    Returns ``[rows, vocab]`` in probs' dtype: each row keeps the entries >= its k-th
    largest value, divided by max(kept sum, 1e-8). ``validate=False`` skips the input
    checks for callers that already guarantee finite, non-negative, nonzero rows.

    How (no sort; at large vocabularies no topk over whole rows for small k): the
    ``max k + 1`` largest entries of each restricted row, found as :func:`_top_k_plan`
    decides, give each row's pivot (rank k-1) and the next value (rank k). Where those
    differ, the kept set is exactly the first k entries: their values, summed in rank
    order, are divided and scattered into a zero row. Where they are equal (a tie straddles
    the pivot) the row is masked densely (``probs >= pivot``) and divided by its masked row
    sum, so every tied entry is kept. Unrestricted rows are divided by their row sum.
    Every plan reaches the same values in the same order, so the output bits do not depend
    on the plan (they are those of one topk of ``max k + 1`` over the rows, the previous
    implementation). Validation: one ``aminmax`` pass (NaN, inf, negatives) and the row
    maxima (all-zero rows); row sums only where some row is unrestricted.
    """
    probs = _row_major(probs)
    if validate:
        _check_layout(probs)
    rows, vocab = probs.shape
    try:
        k = per_row_k(top_k, rows, vocab, device=probs.device)
    except ValueError:
        if validate:
            check_probs(probs)  # a bad probs tensor is reported before a bad top_k
        raise
    acc = _acc_dtype(probs.dtype)
    restricted = k < vocab
    free = torch.nonzero(~restricted).flatten()
    r_idx = torch.nonzero(restricted).flatten()
    sums = None
    if validate:
        if free.numel():
            sums = check_probs(probs)  # unrestricted rows are divided by these sums
        else:
            _check_finite_nonneg(probs)  # all-zero rows: from the row maxima below
    all_restricted = r_idx.numel() == rows
    sub_k = k if all_restricted else k[r_idx]
    kmax = int(sub_k.max()) if r_idx.numel() else 0
    plan, chunk = _top_k_plan(vocab, kmax)
    if plan == "floor" and not all_restricted:
        plan = "topk"  # the floor plan uses the whole output buffer as scratch
    # the floor plan writes every entry of out before zeroing it: no zero fill needed first
    out = torch.empty_like(probs) if plan == "floor" else torch.zeros_like(probs)
    if free.numel():  # unrestricted rows: only renormalised
        x = probs[free].to(acc)
        s = (sums[free] if sums is not None else x.sum(dim=-1)).unsqueeze(1).clamp_min(NORM_EPS)
        out[free] = (x / s).to(probs.dtype)
    if not r_idx.numel():
        return out
    m_s = None
    if plan == "topk":
        vals, idx = torch.topk(probs if all_restricted else probs[r_idx], kmax + 1, dim=-1)
        row_max = vals[:, 0]
    else:
        x = probs if probs.is_contiguous() else probs.contiguous()
        cmax = _chunk_maxima(x, chunk)
        if plan == "gather":
            rid = r_idx if not all_restricted else torch.arange(rows, device=probs.device)
            vals, idx, m_s, row_max = _top_via_gather(
                x, cmax if all_restricted else cmax[r_idx], rid, kmax + 1, chunk)
        else:
            vals, idx, m_s = _top_via_floor(x, cmax, kmax + 1, out)
            row_max = vals[:, 0]
    if validate and sums is None and bool((row_max == 0).any()):
        check_probs(probs)  # names the all-zero rows
    pivot = vals.gather(1, (sub_k - 1).unsqueeze(1))
    nxt = vals.gather(1, sub_k.unsqueeze(1))
    straddle = nxt == pivot
    if m_s is not None:
        straddle |= m_s >= pivot  # entries >= pivot may lie outside the candidates
    straddle = straddle.squeeze(1)
    c = torch.nonzero(~straddle).flatten()
    if c.numel():
        every = c.numel() == r_idx.numel()
        ranks = torch.arange(kmax + 1, device=probs.device).unsqueeze(0)
        v = (vals if every else vals[c]).to(acc)
        v = v.masked_fill(ranks >= (sub_k if every else sub_k[c]).unsqueeze(1), 0.0)
        v = (v / v.sum(dim=-1, keepdim=True).clamp_min(NORM_EPS)).to(probs.dtype)
        if all_restricted and every:
            out.scatter_(1, idx, v)  # the common case: no copy of the rows
        else:
            flat_idx = r_idx[c].unsqueeze(1) * vocab + (idx if every else idx[c])
            out.view(-1).scatter_(0, flat_idx.flatten(), v.flatten())
    s_rows = torch.nonzero(straddle).flatten()
    if s_rows.numel():
        dense_rows = r_idx[s_rows]
        x = probs[dense_rows]
        out[dense_rows] = _renorm(x.to(acc), x >= pivot[s_rows], probs.dtype)
    return out


def top_p_pivot(probs: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """The smallest value of the shortest top prefix reaching mass ``p`` → ``[rows, 1]``.

    probs ``[rows, vocab]``; p float64 ``[rows]`` in (0, 1]. Mass is measured relative to
    the row's total (cumulative sum in float64 over a descending sort), with a relative
    slack of :data:`TOP_P_SLACK`.
    """
    sorted_vals = torch.sort(probs, dim=-1, descending=True).values
    csum = torch.cumsum(sorted_vals.to(torch.float64), dim=-1)
    # reaching p is judged with a relative slack of 1e-6: the row's total carries the
    # rounding of its float32/bf16 entries, and p = 0.5 on [0.5, 0.2, 0.2, 0.1] must stop at 0.5
    target = p.to(csum.device).unsqueeze(1) * csum[:, -1:] * (1.0 - TOP_P_SLACK)
    # first position whose cumulative mass reaches the target (p == 1 → the last nonzero)
    n = torch.searchsorted(csum, target, right=False).clamp_max(probs.shape[1] - 1)
    return sorted_vals.gather(1, n)


def top_p_renorm_prob(probs: torch.Tensor, top_p, *, validate: bool = True) -> torch.Tensor:
    """Top-p (nucleus) renormalisation, FlashInfer threshold semantics.

    probs: ``[rows, vocab]``; top_p: a number or a tensor ``[rows]`` in (0, 1].
    Returns ``[rows, vocab]`` in probs' dtype: each row keeps every entry >= the pivot of
    :func:`top_p_pivot` (ties kept), divided by max(kept sum, 1e-8). p == 1 keeps all.
    """
    probs = _row_major(probs)
    if validate:
        check_probs(probs)
    rows, _ = probs.shape
    p = per_row_p(top_p, rows, device=probs.device)
    full = p >= 1.0
    pivot = top_p_pivot(probs, p)
    pivot = torch.where(full.unsqueeze(1), torch.zeros_like(pivot), pivot)
    keep = probs >= pivot
    return _renorm(probs.to(_acc_dtype(probs.dtype)), keep, probs.dtype)
