"""Attention FLOP counts: plain arithmetic on shapes, no torch (the serving model imports it).

MHA-form attention over one sequence, as flash-attention counts it: QKᵀ and PV matmuls, 2 FLOPs
per multiply-add, causal masks bottom-right aligned. Used by :mod:`k3lab.attention` (finding 3)
and :mod:`k3lab.model.step` (prefill terms).
"""

from __future__ import annotations


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
    if isinstance(heads, bool) or not isinstance(heads, int) or heads <= 0:
        raise ValueError(f"head count must be a positive integer, got {heads!r}")
    kv = seq_len if kv_len is None else kv_len
    pairs = causal_pairs(seq_len, kv) if causal else seq_len * kv
    return 2 * heads * (qk_head_dim + v_head_dim) * pairs
