"""A causal flash-attention forward in Triton, written for MLA prefill's head dims (k3lab's own).

Importing this module needs ``triton``; running it needs a GPU (or ``TRITON_INTERPRET=1`` set
before the import: Triton's CPU interpreter, which the sglang-tier test uses; the interpreter
cannot multiply bfloat16 tiles, so that test runs float32 and float16).

One program computes ``BLOCK_M`` query rows of one head: it streams key blocks up to the
diagonal, keeps the running row maximum and row sum (online softmax, base 2, fp32) and
accumulates P·V in fp32. The q/k head dim 192 is not a power of two, which ``tl.arange``
needs: it is split into a 128 part and a 64 part (MLA's nope + rope slots), and the scores
are the sum of the two dot products. Nothing here is copied from sglang, AITER, FlashInfer
or Triton's tutorials; the algorithm is the published FlashAttention one (Dao et al., 2022).

Shapes: q, k ``[tokens, heads, d_qk]``, v ``[tokens, heads, d_v]`` (last dim contiguous), one
sequence, causal; → ``[tokens, heads, d_v]`` in q's dtype. ``d_v`` a power of two; ``d_qk`` a
power of two or the sum of two.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
#: (BLOCK_M, BLOCK_N, num_warps, num_stages), tried in order until one fits the GPU
CONFIGS = ((128, 64, 8, 2), (64, 64, 4, 2), (64, 32, 4, 1), (32, 32, 4, 1))
_CHOSEN: dict[tuple, tuple] = {}


@triton.jit
def _causal_fwd(Q, K, V, O, scale_log2, sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, so_t, so_h, n_tokens,
                D_A: tl.constexpr, D_B: tl.constexpr, D_V: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    block = tl.program_id(0)
    head = tl.program_id(1)
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_tokens
    da = tl.arange(0, D_A)
    dv = tl.arange(0, D_V)
    q_ptr = Q + head * sq_h + rows[:, None] * sq_t
    qa = tl.load(q_ptr + da[None, :], mask=row_ok[:, None], other=0.0)
    if D_B > 0:
        db = tl.arange(0, D_B)
        qb = tl.load(q_ptr + D_A + db[None, :], mask=row_ok[:, None], other=0.0)
    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D_V], tl.float32)
    last = tl.minimum((block + 1) * BLOCK_M, n_tokens)  # causal: no key past the block's last row
    for start in range(0, last, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_ok = cols < n_tokens
        k_ptr = K + head * sk_h + cols[None, :] * sk_t  # k tiles loaded transposed: [d, BLOCK_N]
        s = tl.dot(qa, tl.load(k_ptr + da[:, None], mask=col_ok[None, :], other=0.0))
        if D_B > 0:
            s += tl.dot(qb, tl.load(k_ptr + D_A + db[:, None], mask=col_ok[None, :], other=0.0))
        s = tl.where((rows[:, None] >= cols[None, :]) & col_ok[None, :], s * scale_log2, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(s, 1))
        p = tl.exp2(s - new_max[:, None])
        shrink = tl.exp2(row_max - new_max)  # rescales what was summed under the old maximum
        row_sum = row_sum * shrink + tl.sum(p, 1)
        v = tl.load(V + head * sv_h + cols[:, None] * sv_t + dv[None, :], mask=col_ok[:, None], other=0.0)
        acc = acc * shrink[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max
    out = acc / row_sum[:, None]
    tl.store(O + head * so_h + rows[:, None] * so_t + dv[None, :], out.to(O.dtype.element_ty), mask=row_ok[:, None])


def _split(d: int) -> tuple[int, int]:
    """d → (a, b) with a a power of two, b a smaller power of two or 0, a + b = d."""
    a = 1 << (d.bit_length() - 1)
    b = d - a
    if b and b & (b - 1):
        raise ValueError(f"q/k head dim {d} is not a power of two or a sum of two (e.g. 192 = 128 + 64)")
    return a, b


def causal_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None,
                   config: tuple[int, int, int, int] | None = None) -> torch.Tensor:
    """Causal attention of one sequence (shapes in the module docstring) → ``[tokens, heads, d_v]``.

    ``config`` (BLOCK_M, BLOCK_N, warps, stages) forces a tiling; by default the first of
    :data:`CONFIGS` that launches on this GPU is kept for later calls of the same dims.
    """
    t, h, d = q.shape
    dv = v.shape[-1]
    if k.shape != q.shape or v.shape[:2] != (t, h):
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: need q == k shapes and "
                         "v [tokens, heads, d_v]")
    if dv & (dv - 1) or min(x.stride(-1) for x in (q, k, v)) != 1:
        raise ValueError(f"v head dim {dv} must be a power of two and every last dim contiguous")
    d_a, d_b = _split(d)
    out = torch.empty((t, h, dv), dtype=q.dtype, device=q.device)
    scale_log2 = (1.0 / math.sqrt(d) if scale is None else float(scale)) * LOG2E
    key = (d, dv, q.dtype, q.device.type)
    tried = [config] if config else ([_CHOSEN[key]] if key in _CHOSEN else list(CONFIGS))
    last_err = None
    for bm, bn, warps, stages in tried:
        try:
            _causal_fwd[(triton.cdiv(t, bm), h)](
                q, k, v, out, scale_log2, q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0),
                v.stride(1), out.stride(0), out.stride(1), t, D_A=d_a, D_B=d_b, D_V=dv, BLOCK_M=bm, BLOCK_N=bn,
                num_warps=warps, num_stages=stages)
        except Exception as e:  # an out-of-resources tiling: try the next, smaller one
            last_err = e
            continue
        _CHOSEN.setdefault(key, (bm, bn, warps, stages))
        return out
    raise RuntimeError(f"no Triton tiling of {[c[:2] for c in tried]} launched: {last_err}") from last_err


def chosen_config(d: int, dv: int, dtype: torch.dtype, device_type: str = "cuda") -> tuple | None:
    """The tiling :func:`causal_prefill` settled on for these dims, or None before a call."""
    return _CHOSEN.get((d, dv, dtype, device_type))
