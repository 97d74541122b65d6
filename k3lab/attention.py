"""Finding 3: the AITER MLA prefill head-count rule, the 12→16 zero-pad wrapper, a reference.

Kimi K3 has 96 attention heads; at TP8 each rank holds 12. MLA prefill runs in MHA form:
q/k head dim 192 (128 nope + 64 rope slot), v head dim 128, one KV head per q head.

Two rules decide whether a head count reaches AITER's fast (ASM) prefill:

* sglang's rule (``sglang/srt/layers/attention/aiter_backend.py``, ``AiterAttnBackend.__init__``,
  sglang 0.5.16 and 0.5.17): at start-up it asserts that heads per rank are 4, 8, or a
  multiple of 16 in [16, 128]; anything else stops the server (it does not fall back).
  4 and 8 are then run on 16-head decode kernels by repeating q heads. That is
  :func:`is_supported_heads` / :func:`padded_heads`.
* AITER's own checks (``ROCm/aiter`` at commit e4048607, 2026-08-22) are per kernel and
  differ from sglang's: the absorbed-form ASM prefill ``mla_prefill_asm_fwd``
  (``csrc/py_itfs_cu/asm_mla.cu``) accepts q-heads/kv-heads of exactly 16 or 128 with one
  KV head, bf16 only (so not 4, 8, 32, 48, 64, 96); the MHA-form fp8 persistent prefill
  ``mla_prefill_ps_asm_fwd`` is picked from a kernel table by GQA ratio (1 in MHA form,
  any head count), but its split reduction ``mla_reduce_v1`` (``csrc/kernels/mla/reduce.cu``)
  is compiled only for the head counts in :data:`AITER_REDUCE_V1_HEADS`, and 12 is not
  one of them at v head dim 128. :func:`aiter_reduce_v1_supports` and
  :func:`aiter_absorbed_prefill_supports` state those rules.

Zero-padding is exact because attention heads are independent: a padded head reads only
its own (zero) q/k/v and its output is sliced away. :func:`with_head_padding` wraps a
varlen prefill kernel that way. :func:`mla_prefill_reference` is the plain-PyTorch
reference it is tested against; :class:`StrictAsmPrefillStandIn` refuses what AITER
refuses, to show the failure and the fix on a CPU. No code here is copied from sglang or
AITER; the behaviour matched is cited above.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import torch

#: sglang 0.5.16/0.5.17 AiterAttnBackend: the small head counts run by repeating q heads.
SGLANG_REPEAT_HEADS = (4, 8)
#: sglang's accepted multiples of 16 lie in [16, 128].
SGLANG_MAX_HEADS = 128
SGLANG_RULE_SOURCE = ("sglang 0.5.16 python/sglang/srt/layers/attention/aiter_backend.py, "
                      "AiterAttnBackend.__init__ (assertion 'Aiter MLA supports num_head of 4, "
                      "8, or multiples of 16 in [16, 128]')")

#: Head counts AITER's ``mla_reduce_v1`` is compiled for, by v head dim (ROCm/aiter
#: e4048607, csrc/kernels/mla/reduce.cu, the MLA_REDUCE_ROUTER cases). The fp8 ASM MHA-form
#: prefill (``mla_prefill_ps_asm_fwd``) reduces its KV splits through it.
AITER_REDUCE_V1_HEADS: dict[int, frozenset[int]] = {
    64: frozenset({64}),
    128: frozenset({1, 2, 4, 8, 10, 16, 32, 40, 48, 64, 96, 128}),
    512: frozenset({8, 16, 24, 32, 48, 64, 80, 96, 112, 128}),
}
#: q-heads per KV head accepted by AITER's absorbed-form ``mla_prefill_asm_fwd`` (one KV head, bf16).
AITER_ABSORBED_PREFILL_GQA = frozenset({16, 128})
AITER_SOURCE = "ROCm/aiter commit e4048607 (2026-08-22): csrc/py_itfs_cu/asm_mla.cu, csrc/kernels/mla/reduce.cu"


def _check_heads(n, what: str = "head count") -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"{what} must be an int, got {n!r}")
    if n <= 0:
        raise ValueError(f"{what} must be positive, got {n}")
    return n


def is_supported_heads(n: int) -> bool:
    """sglang's AITER-MLA rule: heads per rank in {4, 8} or a multiple of 16 in [16, 128]."""
    n = _check_heads(n, "heads per rank")
    return n in SGLANG_REPEAT_HEADS or (n % 16 == 0 and 16 <= n <= SGLANG_MAX_HEADS)


def padded_heads(n: int) -> int:
    """Smallest head count ≥ ``n`` that :func:`is_supported_heads` accepts (``n`` if it does).

    12 → 16, 24 → 32, 6 → 8, 3 → 4, 96 → 96. ValueError above 128 (nothing to pad to).
    """
    n = _check_heads(n, "heads per rank")
    if n > SGLANG_MAX_HEADS:
        raise ValueError(f"{n} heads per rank exceeds sglang's AITER MLA maximum of "
                         f"{SGLANG_MAX_HEADS}; no padded count exists (raise the TP degree)")
    for m in range(n, SGLANG_MAX_HEADS + 1):
        if is_supported_heads(m):
            return m
    raise AssertionError("unreachable: 128 is supported")  # pragma: no cover


def kernel_heads(n: int) -> int:
    """Heads the 16-head AITER kernels actually process for ``n`` heads after sglang's handling.

    sglang repeats 4 and 8 up to 16; a zero-padded count runs as itself. → int.
    """
    m = padded_heads(n)
    return 16 if m in SGLANG_REPEAT_HEADS else m


def aiter_reduce_v1_supports(n: int, v_head_dim: int = 128) -> bool:
    """AITER's ``mla_reduce_v1`` (fp8 ASM MHA-form prefill) has an instance for ``n`` heads."""
    n = _check_heads(n)
    return n in AITER_REDUCE_V1_HEADS.get(int(v_head_dim), frozenset())


def aiter_reduce_v1_padded(n: int, v_head_dim: int = 128) -> int | None:
    """Smallest compiled ``mla_reduce_v1`` head count ≥ n at ``v_head_dim``; None if none."""
    n = _check_heads(n)
    larger = sorted(h for h in AITER_REDUCE_V1_HEADS.get(int(v_head_dim), ()) if h >= n)
    return larger[0] if larger else None


def aiter_absorbed_prefill_supports(q_heads: int, kv_heads: int = 1) -> bool:
    """AITER ``mla_prefill_asm_fwd``: one KV head and q/kv ratio 16 or 128."""
    q_heads, kv_heads = _check_heads(q_heads, "q heads"), _check_heads(kv_heads, "kv heads")
    return kv_heads == 1 and q_heads in AITER_ABSORBED_PREFILL_GQA


# --------------------------------------------------------------------------- FLOPs

def causal_pairs(q_len: int, kv_len: int | None = None) -> int:
    """(query, key) pairs a causal mask keeps, bottom-right aligned (flash-attn convention).

    Query i (0-based) of ``q_len`` sees keys 0 … i + (kv_len − q_len). For q_len == kv_len
    = S that is S(S+1)/2.
    """
    kv_len = q_len if kv_len is None else kv_len
    if q_len < 0 or kv_len < q_len:
        raise ValueError(f"need 0 <= q_len <= kv_len, got q_len={q_len}, kv_len={kv_len}")
    prefix = kv_len - q_len
    return q_len * prefix + q_len * (q_len + 1) // 2


def attention_flops(seq_len: int, heads: int, qk_head_dim: int = 192, v_head_dim: int = 128,
                    causal: bool = True, kv_len: int | None = None) -> int:
    """FLOPs of one MHA-form attention over one sequence (QKᵀ and PV matmuls, 2 per MAC).

    ``seq_len`` query tokens against ``kv_len`` keys (default: the same). Softmax and
    masking are not counted (O(S²·heads), a few % of the matmuls). → int FLOPs.
    """
    _check_heads(heads)
    kv = seq_len if kv_len is None else kv_len
    pairs = causal_pairs(seq_len, kv) if causal else seq_len * kv
    return 2 * heads * (qk_head_dim + v_head_dim) * pairs


@dataclass(frozen=True)
class HeadRow:
    tp: int
    heads_per_rank: int
    sglang_supported: bool
    padded_heads: int
    kernel_heads: int
    extra_attention_flops_pct: float
    aiter_reduce_v1_ok: bool
    aiter_reduce_v1_padded: int | None
    aiter_absorbed_ok: bool


def head_table(total_heads: int = 96, tps=(1, 2, 4, 8, 16, 32), v_head_dim: int = 128):
    """Per TP degree: heads per rank, sglang's verdict, the padded count, wasted FLOPs.

    ``extra_attention_flops_pct`` = (padded − real) / real × 100: attention FLOPs spent on
    zero heads relative to the real ones (33.3 % for 12 → 16). → pandas DataFrame.
    """
    import pandas as pd

    _check_heads(total_heads, "total heads")
    rows = []
    for tp in tps:
        _check_heads(tp, "TP degree")
        if total_heads % tp:
            raise ValueError(f"TP {tp} does not divide {total_heads} heads")
        n = total_heads // tp
        m = padded_heads(n)
        rows.append(HeadRow(tp, n, is_supported_heads(n), m, kernel_heads(n),
                            round(100.0 * (m - n) / n, 4), aiter_reduce_v1_supports(n, v_head_dim),
                            aiter_reduce_v1_padded(n, v_head_dim),
                            aiter_absorbed_prefill_supports(n, 1)).__dict__)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- inputs

def _check_cu(cu: torch.Tensor, total: int, name: str) -> list[int]:
    if not isinstance(cu, torch.Tensor) or cu.dim() != 1 or cu.numel() < 2:
        raise ValueError(f"{name} must be a 1-D tensor [batch + 1], got "
                         f"{getattr(cu, 'shape', type(cu).__name__)}")
    if cu.dtype.is_floating_point or cu.dtype == torch.bool:
        raise ValueError(f"{name} must be an integer tensor, got {cu.dtype}")
    vals = [int(x) for x in cu.tolist()]
    if vals[0] != 0:
        raise ValueError(f"{name} must start at 0, got {vals[0]}")
    if any(b < a for a, b in zip(vals, vals[1:])):
        raise ValueError(f"{name} must be non-decreasing, got {vals}")
    if vals[-1] != total:
        raise ValueError(f"{name} ends at {vals[-1]} but the tensor holds {total} tokens")
    return vals


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, int, int, int]:
    """Validate MHA-form prefill inputs ``[tokens, heads, head_dim]`` → (T_q, heads, d_qk, d_v)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 3:
            raise ValueError(f"{name} must be [tokens, heads, head_dim] (3-D), got shape "
                             f"{tuple(t.shape)}")
        if not t.dtype.is_floating_point:
            raise ValueError(f"{name} must be floating point, got {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v devices differ: {q.device}, {k.device}, {v.device}")
    tq, h, dqk = q.shape
    if h == 0:
        raise ValueError("q has 0 heads")
    if k.shape[1] != h or v.shape[1] != h:
        raise ValueError(f"MHA-form prefill needs one k/v head per q head: q has {h} heads, "
                         f"k {k.shape[1]}, v {v.shape[1]} (head padding of GQA/MQA layouts "
                         f"is not supported)")
    if k.shape[2] != dqk:
        raise ValueError(f"q and k head dims differ: {dqk} vs {k.shape[2]}")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"k and v token counts differ: {k.shape[0]} vs {v.shape[0]}")
    return tq, h, dqk, v.shape[2]


# --------------------------------------------------------------------------- reference

def mla_prefill_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor | None = None,
                          softmax_scale: float | None = None, causal: bool = True) -> torch.Tensor:
    """Reference varlen MHA-form MLA prefill in plain PyTorch.

    q: [T_q, H, d_qk], k: [T_k, H, d_qk], v: [T_k, H, d_v]; ``cu_seqlens_q``/``_k``: int
    [B + 1] offsets of each sequence (``_k`` defaults to ``_q``). Causal masking is
    bottom-right aligned (a sequence's queries are its last tokens). Scores and softmax in
    fp32 (float64 inputs stay float64); output [T_q, H, d_v] in the input dtype. Default
    scale 1/sqrt(d_qk).
    """
    tq, h, dqk, dv = check_qkv(q, k, v)
    cq = _check_cu(cu_seqlens_q, tq, "cu_seqlens_q")
    ck = _check_cu(cu_seqlens_q if cu_seqlens_k is None else cu_seqlens_k, k.shape[0], "cu_seqlens_k")
    if len(cq) != len(ck):
        raise ValueError(f"cu_seqlens_q has {len(cq) - 1} sequences, cu_seqlens_k {len(ck) - 1}")
    scale = 1.0 / math.sqrt(dqk) if softmax_scale is None else float(softmax_scale)
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    out = q.new_zeros((tq, h, dv))
    for b in range(len(cq) - 1):
        q0, q1, k0, k1 = cq[b], cq[b + 1], ck[b], ck[b + 1]
        lq, lk = q1 - q0, k1 - k0
        if lq == 0:
            continue
        if lk < lq and causal:
            raise ValueError(f"sequence {b}: {lq} queries but only {lk} keys (causal needs kv >= q)")
        qs = q[q0:q1].to(acc).transpose(0, 1)            # [H, lq, d]
        ks = k[k0:k1].to(acc).transpose(0, 1)            # [H, lk, d]
        vs = v[k0:k1].to(acc).transpose(0, 1)            # [H, lk, dv]
        s = torch.matmul(qs, ks.transpose(1, 2)) * scale  # [H, lq, lk]
        if causal:
            i = torch.arange(lq).unsqueeze(1)
            j = torch.arange(lk).unsqueeze(0)
            s = s.masked_fill(j > i + (lk - lq), float("-inf"))
        p = torch.softmax(s, dim=-1)
        out[q0:q1] = torch.matmul(p, vs).transpose(0, 1).to(q.dtype)
    return out


def sdpa_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                 cu_seqlens_k: torch.Tensor | None = None, softmax_scale: float | None = None,
                 causal: bool = True) -> torch.Tensor:
    """The same computation through ``torch.nn.functional.scaled_dot_product_attention``.

    A memory-efficient kernel for the CPU benchmark (the reference materialises [H, S, S]).
    torch's fused CPU flash kernel needs equal q/k and v head dims, so v is zero-padded
    from d_v to d_qk and the output sliced back (the usual MLA trick; exact). Causal only
    for sequences whose q and kv lengths agree (a cold prefill). Shapes as
    :func:`mla_prefill_reference`.
    """
    import torch.nn.functional as F

    tq, h, dqk, dv = check_qkv(q, k, v)
    cq = _check_cu(cu_seqlens_q, tq, "cu_seqlens_q")
    ck = _check_cu(cu_seqlens_q if cu_seqlens_k is None else cu_seqlens_k, k.shape[0], "cu_seqlens_k")
    if cq != ck:
        raise ValueError("sdpa_prefill handles cold prefills only (cu_seqlens_k == cu_seqlens_q)")
    scale = 1.0 / math.sqrt(dqk) if softmax_scale is None else float(softmax_scale)
    if dv < dqk:
        v = torch.nn.functional.pad(v, (0, dqk - dv))
    out = q.new_empty((tq, h, dv))
    for b in range(len(cq) - 1):
        a, e = cq[b], cq[b + 1]
        if e == a:
            continue
        o = F.scaled_dot_product_attention(q[a:e].transpose(0, 1).unsqueeze(0),
                                           k[a:e].transpose(0, 1).unsqueeze(0),
                                           v[a:e].transpose(0, 1).unsqueeze(0),
                                           is_causal=causal, scale=scale)
        out[a:e] = o[0, :, :, :dv].transpose(0, 1)
    return out


# --------------------------------------------------------------------------- padding

def pad_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """Zero-pad ``x`` [tokens, h, d] along dim 1 to ``heads`` → new contiguous tensor."""
    if x.dim() != 3:
        raise ValueError(f"expected [tokens, heads, head_dim], got shape {tuple(x.shape)}")
    h = x.shape[1]
    if heads < h:
        raise ValueError(f"cannot pad {h} heads down to {heads}")
    out = x.new_zeros((x.shape[0], heads, x.shape[2]))
    out[:, :h] = x
    return out


def with_head_padding(kernel: Callable, heads: int | Callable[[int], int] | None = None) -> Callable:
    """Wrap a varlen MHA-form prefill kernel so it only ever sees a supported head count.

    ``kernel(q, k, v, *args, **kwargs)`` takes q/k/v ``[tokens, heads, head_dim]`` (as
    sglang's varlen kernels: cu_seqlens etc. follow in ``args``) and returns the output
    ``[tokens, heads, d_v]`` (or a tuple whose first item is that; items of shape
    [tokens, heads, ...] such as an LSE are sliced too). The wrapper zero-pads q, k and v
    along the head dim to ``heads`` (an int, or a function of the real count; default
    :func:`padded_heads`), calls the kernel, checks the output shape and returns the real
    heads ``[:, :h]`` (a contiguous copy). A count that needs no padding is passed
    through untouched. ValueError for layouts it cannot handle.
    """
    if not callable(kernel):
        raise ValueError(f"with_head_padding needs a callable kernel, got {type(kernel).__name__}")
    target_of = padded_heads if heads is None else (heads if callable(heads) else (lambda _n: heads))

    @functools.wraps(kernel)
    def padded(q, k, v, *args, **kwargs):
        tq, h, _dqk, dv = check_qkv(q, k, v)
        m = target_of(h)
        if isinstance(m, bool) or not isinstance(m, int) or m < h:
            raise ValueError(f"padded head count must be an int >= {h}, got {m!r}")
        if m == h:
            return kernel(q, k, v, *args, **kwargs)
        res = kernel(pad_heads(q, m), pad_heads(k, m), pad_heads(v, m), *args, **kwargs)
        items = list(res) if isinstance(res, tuple) else [res]
        o = items[0]
        if not isinstance(o, torch.Tensor) or tuple(o.shape) != (tq, m, dv):
            raise ValueError(f"kernel returned {getattr(o, 'shape', type(o).__name__)}, expected "
                             f"[{tq}, {m}, {dv}] for {m} padded heads")
        out = [o[:, :h].contiguous()]
        for extra in items[1:]:
            if isinstance(extra, torch.Tensor) and extra.dim() >= 2 and extra.shape[1] == m:
                extra = extra[:, :h].contiguous()
            out.append(extra)
        return tuple(out) if isinstance(res, tuple) else out[0]

    padded.k3lab_head_padding = True
    return padded


# --------------------------------------------------------------------------- stand-in kernel

class UnsupportedHeadCount(RuntimeError):
    """Raised by the strict stand-in, as AITER's AITER_CHECK raises a RuntimeError."""


class StrictAsmPrefillStandIn:
    """A CPU stand-in for AITER's fp8 ASM MHA-form prefill that refuses what AITER refuses.

    NOT AITER: it computes with :func:`mla_prefill_reference` and only mimics the kernel's
    acceptance rules (ROCm/aiter e4048607): one k/v head per q head (GQA ratio 1), q/k head
    dim 192 and v head dim 128 (the only MHA-form ASM prefill kernel,
    ``mla_pfl_qh192_vh128``), and a head count ``mla_reduce_v1`` is compiled for
    (:data:`AITER_REDUCE_V1_HEADS`). Calls with q [T, H, 192], k [T, H, 192], v [T, H, 128],
    cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k (ignored), softmax_scale, causal.
    ``calls`` records the head count of every accepted call.
    """

    qk_head_dim = 192
    v_head_dim = 128

    def __init__(self):
        self.calls: list[int] = []

    def __call__(self, q, k, v, cu_seqlens_q, cu_seqlens_k=None, max_seqlen_q=None,
                 max_seqlen_k=None, softmax_scale=None, causal=True):
        _tq, h, dqk, dv = check_qkv(q, k, v)
        if dqk != self.qk_head_dim or dv != self.v_head_dim:
            raise UnsupportedHeadCount(f"stand-in for mla_prefill_ps_asm_fwd: no kernel for "
                                       f"qk head dim {dqk} / v head dim {dv}")
        if not aiter_reduce_v1_supports(h, dv):
            raise UnsupportedHeadCount(
                f"kn_mla_reduce_v1 doesn't support the specified settings: #heads: {h}, "
                f"head dimension: {dv}. (k3lab stand-in reproducing AITER's refusal)")
        self.calls.append(h)
        return mla_prefill_reference(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                     softmax_scale=softmax_scale, causal=causal)


def aiter_kernel():
    """The real AITER varlen prefill (``aiter.flash_attn_varlen_func``) where importable.

    Returns a callable with the stand-in's signature, or raises ImportError naming why
    (AITER is ROCm-only). The fp8 ASM persistent path needs AITER's work metadata and is
    not wrapped here.
    """
    import aiter  # noqa: F401  (ROCm only)

    def run(q, k, v, cu_seqlens_q, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
            softmax_scale=None, causal=True):
        ck = cu_seqlens_q if cu_seqlens_k is None else cu_seqlens_k
        mq = int((cu_seqlens_q[1:] - cu_seqlens_q[:-1]).max()) if max_seqlen_q is None else max_seqlen_q
        mk = int((ck[1:] - ck[:-1]).max()) if max_seqlen_k is None else max_seqlen_k
        out = aiter.flash_attn_varlen_func(q, k, v, cu_seqlens_q, ck, mq, mk,
                                           softmax_scale=softmax_scale, causal=causal)
        return out[0] if isinstance(out, tuple) else out

    return run


def make_varlen_batch(seq_lens, heads: int, qk_head_dim: int = 192, v_head_dim: int = 128,
                      dtype=torch.float32, seed: int = 0, device="cpu"):
    """Random q, k, v ``[sum(seq_lens), heads, d]`` and int32 cu_seqlens [B + 1] (fixed seed)."""
    lens = [int(s) for s in seq_lens]
    if not lens or any(s < 0 for s in lens):
        raise ValueError(f"seq_lens must be a non-empty list of non-negative ints, got {seq_lens!r}")
    _check_heads(heads)
    g = torch.Generator().manual_seed(seed)
    t = sum(lens)
    q = torch.randn((t, heads, qk_head_dim), generator=g).to(dtype=dtype, device=device)
    k = torch.randn((t, heads, qk_head_dim), generator=g).to(dtype=dtype, device=device)
    v = torch.randn((t, heads, v_head_dim), generator=g).to(dtype=dtype, device=device)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int32, device=device)
    return q, k, v, cu
