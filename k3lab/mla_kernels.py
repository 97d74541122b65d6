"""Finding 3: MLA prefill kernels to pad around — a reference, torch's SDPA, a strict stand-in.

:func:`mla_prefill_reference` is the plain-PyTorch varlen MHA-form MLA prefill that
:func:`k3lab.attention.with_head_padding` is tested against; :func:`sdpa_prefill` the same
through torch's fused SDPA (the CPU benchmark); :class:`StrictAsmPrefillStandIn` a CPU
stand-in that refuses the head counts AITER's own release refuses (read from the installed
``amd-aiter`` files by :mod:`k3lab.aiter_release`), to show the failure and the fix on a CPU;
:func:`aiter_kernel` the real AITER varlen kernel where it imports (ROCm only). Shapes:
q/k ``[tokens, heads, 192]``, v ``[tokens, heads, 128]``, ``cu_seqlens`` int ``[batch + 1]``.
No code here is copied from sglang or AITER.
"""

from __future__ import annotations

import math

import torch

from . import aiter_release
from .attention import check_qkv, check_cu

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
    cq = check_cu(cu_seqlens_q, tq, "cu_seqlens_q")
    ck = check_cu(cu_seqlens_q if cu_seqlens_k is None else cu_seqlens_k, k.shape[0], "cu_seqlens_k")
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
    cq = check_cu(cu_seqlens_q, tq, "cu_seqlens_q")
    ck = check_cu(cu_seqlens_q if cu_seqlens_k is None else cu_seqlens_k, k.shape[0], "cu_seqlens_k")
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


# --------------------------------------------------------------------------- stand-in kernel

class UnsupportedHeadCount(RuntimeError):
    """Raised by the strict stand-in, as AITER's AITER_CHECK raises a RuntimeError."""


class StrictAsmPrefillStandIn:
    """A CPU stand-in for AITER's fp8 ASM MHA-form prefill that refuses what AITER refuses.

    NOT AITER: it computes with :func:`mla_prefill_reference` and only mimics the kernel's
    acceptance rules: one k/v head per q head (GQA ratio 1), q/k head dim 192 and v head dim
    128 (the only MHA-form ASM prefill kernel, ``mla_pfl_qh192_vh128``, added to AITER in
    commit 37f5df85, 2026-01-19), and a head count its split-KV reduction ``mla_reduce_v1``
    accepts at v head dim 128 — read from the installed ``amd-aiter`` release
    (:func:`k3lab.aiter_release.accepts`, family ``mla_reduce_v1_dv128``, gfx950).
    Calls with q [T, H, 192], k [T, H, 192], v [T, H, 128],
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
        if not aiter_release.accepts("mla_reduce_v1_dv128", "gfx950", h):
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
    heads = int(heads)
    g = torch.Generator().manual_seed(seed)
    t = sum(lens)
    q = torch.randn((t, heads, qk_head_dim), generator=g).to(dtype=dtype, device=device)
    k = torch.randn((t, heads, qk_head_dim), generator=g).to(dtype=dtype, device=device)
    v = torch.randn((t, heads, v_head_dim), generator=g).to(dtype=dtype, device=device)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int32, device=device)
    return q, k, v, cu
