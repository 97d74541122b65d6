"""Finding 3's stand-ins (k3lab's, labelled, never AITER's or sglang's): kernels, runner, batch.

:class:`AiterStandIns` stands in for the AITER functions sglang's ``aiter_backend`` calls
(``mla_prefill_ps_asm_fwd``, ``mla_reduce_v1``, ``get_ps_metadata_v1``, ``mla_decode_fwd``,
``flash_attn_varlen_func``), computing with :func:`k3lab.mla_kernels.mla_prefill_reference`
and refusing what AITER refuses; :func:`stand_ins_installed` binds them into the real
backend module. :class:`FakeModelConfig` and :func:`_runner` stand in for the model config
and model runner ``AiterAttnBackend.__init__`` reads, 0.5.16 … 0.5.23.

:class:`AiterStandIns` inherits the call records and ``get_ps_metadata_v1`` of
:class:`k3lab.probes.aiter_backend.StandIns` but has its own kernels: the matrix records
their refusals, and they model the AITER that sglang's backend is written against (see
:data:`AITER_REDUCE_V1_HEADS_DV128`), not the PyPI release :mod:`k3lab.aiter_release` reads.
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace as NS

import torch

from ...mla_kernels import make_varlen_batch, mla_prefill_reference
from .. import aiter_backend
from .emulation import swapped

# Head lists typed here rather than read by k3lab.aiter_release, on purpose: that module reads
# the one amd-aiter on PyPI (0.1.7.post2.dev18 = ROCm/aiter e6015f3a, 2025-11-18), whose
# mla_reduce_v1 has only {8, 16, 128} at v head dim 128 and which ships no
# mla_prefill_ps_asm kernel at all, while sglang 0.5.16 … 0.5.23's aiter_backend calls the
# later AITER below. The rows were measured against these sets (and the child must not need
# the amd-aiter install).

#: ``mla_reduce_v1`` head counts at v head dim 128 (ROCm/aiter e4048607,
#: csrc/kernels/mla/reduce.cu, MLA_REDUCE_ROUTER, as k3lab recorded them on 2026-12-02). Only
#: "12 is absent, 16 is present" matters here.
AITER_REDUCE_V1_HEADS_DV128 = frozenset({1, 2, 4, 8, 10, 16, 32, 40, 48, 64, 96, 128})
#: q heads AITER's absorbed-form MLA decode kernels are built for (qh16 / qh128), same commit.
AITER_DECODE_HEADS = frozenset({16, 128})


def reference_prefill(q, k, v, cu, scale: float):
    """Causal varlen MHA-form attention in float32 (cold prefill: q and k share ``cu``).

    q/k ``[T, H, 192]``, v ``[T, H, 128]`` (any float dtype, fp8 included) → float32
    ``[T, H, 128]``: :func:`k3lab.mla_kernels.mla_prefill_reference` on float32 copies
    (so an fp8 input is not rounded back to fp8 on output).
    """
    return mla_prefill_reference(q.float(), k.float(), v.float(), cu, softmax_scale=scale)


def varlen_batch(seq_lens, heads: int, seed: int = 3):
    """Seeded bf16 q/k ``[T, heads, 192]``, v ``[T, heads, 128]`` and int32 cu_seqlens."""
    return make_varlen_batch(seq_lens, heads, dtype=torch.bfloat16, seed=seed)


class AiterStandIns(aiter_backend.StandIns):
    """k3lab stand-ins for the AITER functions the backend calls (call records kept). Not AITER.

    ``mla_prefill_ps_asm_fwd`` (fp8 ASM MHA-form prefill): reference math into ``output``;
    ``mla_reduce_v1``: refuses head counts it has no instance for (AITER's rule, above);
    ``get_ps_metadata_v1`` (inherited): records (gqa ratio, kv heads); ``mla_decode_fwd``:
    16/128 heads only, output = 2·q[..., :d_v]; ``flash_attn_varlen_func`` (CK varlen, any
    head count): reference math. The call records (``prefill_heads``, ``reduce_heads``,
    ``decode_heads``, ``ps_metadata``) are :class:`k3lab.probes.aiter_backend.StandIns`'s, plus
    ``flash_heads``; the kernels are this module's own (the rows record their refusals).
    """

    def __init__(self):
        super().__init__()
        self.flash_heads: list[int] = []

    def mla_prefill_ps_asm_fwd(self, Q, K, V, qo_indptr, kv_indptr, kv_page_indices, work_indptr,
                               work_info_set, max_seqlen_q, softmax_scale, is_causal, split_data,
                               split_lse, output, q_scale=None, k_scale=None, v_scale=None):
        self.prefill_heads.append(_mha_form_heads(Q, K))
        output.copy_(reference_prefill(Q, K, V, qo_indptr, float(softmax_scale)).to(output.dtype))

    def mla_reduce_v1(self, partial_output, partial_lse, reduce_indptr, reduce_final_map,
                      reduce_partial_map, tile_q, num_kv_splits, final_output, final_lse=None):
        h, d = final_output.shape[-2], final_output.shape[-1]
        if d != 128 or h not in AITER_REDUCE_V1_HEADS_DV128:
            raise RuntimeError(f"kn_mla_reduce_v1 doesn't support the specified settings: #heads: {h}, "
                               f"head dimension: {d}. (k3lab stand-in reproducing AITER's refusal)")
        self.reduce_heads.append(int(h))

    def mla_decode_fwd(self, q, kv_buffer, o, **kwargs):
        if q.shape[1] not in AITER_DECODE_HEADS:
            raise RuntimeError(f"stand-in mla_decode_fwd: no kernel for {q.shape[1]} q heads (qh16/qh128)")
        self.decode_heads.append(int(q.shape[1]))
        o.copy_((2 * q[..., : o.shape[-1]].float()).to(o.dtype))

    def flash_attn_varlen_func(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None,
                               max_seqlen_k=None, softmax_scale=None, causal=True, **kwargs):
        if not causal or not bool((cu_seqlens_q == cu_seqlens_k).all()):
            raise RuntimeError("stand-in flash_attn_varlen_func: cold causal prefill only")
        self.flash_heads.append(int(q.shape[1]))
        scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
        return reference_prefill(q, k, v, cu_seqlens_q, float(scale)).to(q.dtype)


def _mha_form_heads(Q, K) -> int:
    """The fp8 prefill's head count; it computes the MHA form only (one k head per q head)."""
    if K.shape[1] != Q.shape[1]:
        raise RuntimeError("stand-in mla_prefill_ps_asm_fwd: MHA form needs kv heads == q heads")
    return int(Q.shape[1])


_STAND_IN_NAMES = ("mla_prefill_ps_asm_fwd", "mla_reduce_v1", "get_ps_metadata_v1", "mla_decode_fwd",
                   "flash_attn_varlen_func")


@contextlib.contextmanager
def stand_ins_installed(mod, si: AiterStandIns):
    """Bind the stand-ins into the real backend module (the ``from aiter import`` names)."""
    with swapped(mod.__dict__, {n: getattr(si, n) for n in _STAND_IN_NAMES}):
        yield mod


class FakeModelConfig(aiter_backend.FakeModelConfig):
    """Stand-in for the fields of sglang's ModelConfig the backend reads (K3-like MLA): that of
    :mod:`k3lab.probes.aiter_backend` with one KV head per head (the MHA form)."""

    def __init__(self, heads: int = 96, context_len: int = 4096):
        super().__init__(heads, context_len=context_len)


def _runner(heads: int, max_bs: int = 4):
    """Stand-in model runner: the attributes ``AiterAttnBackend.__init__`` reads, 0.5.16 … 0.5.23."""
    cfg = FakeModelConfig(heads)
    pool = NS()
    return NS(model_config=cfg, device="cpu", kv_cache_dtype=torch.bfloat16, dtype=torch.bfloat16,
              server_args=NS(page_size=1, speculative_num_draft_tokens=None, speculative_num_steps=None),
              sliding_window_size=None, token_to_kv_pool=pool,
              token_to_kv_pool_allocator=NS(get_kvcache=lambda: pool),
              req_to_token_pool=NS(req_to_token=torch.zeros(max_bs, cfg.context_len, dtype=torch.int32),
                                   size=max_bs),
              decode_attention_backend_str="aiter", prefill_attention_backend_str="aiter",
              kv_index_translator=None)
