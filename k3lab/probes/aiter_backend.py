"""Run the real sglang AITER attention backend's Python on a CPU, with labelled stand-ins.

What is real: sglang 0.5.16's ``aiter_backend`` module and its ``AiterAttnBackend``
methods (``__init__`` with its head-count assertion, ``forward_extend``,
``mla_fp8_prefill_attn``, ``make_mla_prefill_ps_meta_data``,
``_mla_decode_fwd_with_head_pad``), sglang's ``ForwardMode``, ``ForwardMetadata``,
``AttentionArch`` and ``get_parallel().override``. The module imports on a CPU as it is:
its ``from aiter import …`` sits in ``try/except ImportError`` and only prints a notice,
so the AITER names are simply absent from the module.

What is a stand-in (k3lab's, never AITER): the model runner, model config, layer, KV
pool and forward batch (plain objects with the attributes those methods read), and the
AITER kernels ``mla_prefill_ps_asm_fwd``, ``mla_reduce_v1``, ``get_ps_metadata_v1`` and
``mla_decode_fwd``, which enforce AITER's head-count rules (k3lab.attention) and compute
with k3lab's reference. What cannot run here: AITER's kernels themselves (ROCm GPU
code), ``init_forward_metadata`` (Triton index kernels, GPU only), CUDA graphs, a server.
Import this only where sglang is installed (``.venv-sglang``).
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace as NS

import torch

from .. import aiter_release, mla_kernels

MODULE = "sglang.srt.layers.attention.aiter_backend"


def backend_module():
    import importlib

    return importlib.import_module(MODULE)


class FakeModelConfig:
    """The fields of sglang's ModelConfig that AiterAttnBackend.__init__ reads (K3-like MLA)."""

    def __init__(self, heads: int = 96, kv_heads: int | None = None, context_len: int = 4096):
        from sglang.srt.configs.model_config import AttentionArch

        self.num_attention_heads = heads
        self._kv = heads if kv_heads is None else kv_heads
        self.dtype = torch.bfloat16
        self.is_multimodal = False
        self.head_dim = 192
        self.v_head_dim = 128
        self.attention_arch = AttentionArch.MLA
        self.context_len = context_len

    def get_num_kv_heads(self, tensor_parallel_size: int) -> int:
        return max(1, self._kv // tensor_parallel_size)


def fake_runner(cfg: FakeModelConfig, max_bs: int = 4):
    return NS(model_config=cfg,
              server_args=NS(page_size=1, speculative_num_draft_tokens=None, speculative_num_steps=None),
              device="cpu", kv_cache_dtype=torch.bfloat16, dtype=torch.bfloat16,
              sliding_window_size=None, token_to_kv_pool=NS(),
              req_to_token_pool=NS(req_to_token=torch.zeros(max_bs, cfg.context_len, dtype=torch.int32),
                                   size=max_bs))


def make_backend(total_heads: int = 96, tp: int = 8):
    """Construct the real AiterAttnBackend for ``total_heads``/``tp`` heads per rank."""
    from sglang.srt.runtime_context import get_parallel

    cfg = FakeModelConfig(total_heads)
    with get_parallel().override(attn_tp_size=tp):
        return backend_module().AiterAttnBackend(fake_runner(cfg)), cfg


def accepts(total_heads: int, tp: int = 1) -> tuple[bool, str]:
    """Does the real ``__init__`` accept this head count? → (ok, first line of the error)."""
    try:
        make_backend(total_heads, tp)
        return True, ""
    except AssertionError as e:
        return False, str(e).splitlines()[0]


# --------------------------------------------------------------------------- AITER stand-ins

class StandIns:
    """k3lab stand-ins for AITER functions, with call records. Not AITER."""

    def __init__(self):
        self.prefill_heads: list[int] = []
        self.reduce_heads: list[int] = []
        self.decode_heads: list[int] = []
        self.ps_metadata: list[tuple[int, int]] = []

    def mla_prefill_ps_asm_fwd(self, Q, K, V, qo_indptr, kv_indptr, kv_page_indices, work_indptr,
                               work_info_set, max_seqlen_q, softmax_scale, is_causal, split_data,
                               split_lse, output, q_scale=None, k_scale=None, v_scale=None):
        """MHA-form fp8 prefill: GQA-1 table kernel (any head count), reference math into output."""
        if K.shape[1] != Q.shape[1]:
            raise RuntimeError("stand-in mla_prefill_ps_asm_fwd: MHA form needs num_kv_heads == num_q_heads")
        self.prefill_heads.append(Q.shape[1])
        ref = mla_kernels.mla_prefill_reference(Q.float(), K.float(), V.float(), qo_indptr.long(),
                                      kv_indptr.long(), softmax_scale=softmax_scale,
                                      causal=bool(is_causal))
        output.copy_(ref.to(output.dtype))

    def mla_reduce_v1(self, partial_output, partial_lse, reduce_indptr, reduce_final_map,
                      reduce_partial_map, tile_q, num_kv_splits, final_output, final_lse=None):
        """Split reduction: refuses head counts mla_reduce_v1 is not compiled for (AITER's rule)."""
        h, d = final_output.shape[-2], final_output.shape[-1]
        if not aiter_release.accepts("mla_reduce_v1_dv128", "gfx950", h) or d != 128:
            raise RuntimeError(f"kn_mla_reduce_v1 doesn't support the specified settings: #heads: {h}, "
                               f"head dimension: {d}. (k3lab stand-in reproducing AITER's refusal)")
        self.reduce_heads.append(h)   # the stand-in prefill wrote the final output already

    def get_ps_metadata_v1(self, qo_indptr, kv_indptr, seq_lens, gqa_ratio, num_heads_k, *args, **kwargs):
        self.ps_metadata.append((int(gqa_ratio), int(num_heads_k)))

    def mla_decode_fwd(self, q, kv_buffer, o, **kwargs):
        """Absorbed-form decode on AITER's 16/128-head kernels; output = 2·q[..., :d_v] per head."""
        if q.shape[1] not in (16, 128):
            raise RuntimeError(f"stand-in mla_decode_fwd: no kernel for {q.shape[1]} q heads (qh16/qh128 only)")
        self.decode_heads.append(q.shape[1])
        o.copy_((2 * q[..., : o.shape[-1]].float()).to(o.dtype))


@contextlib.contextmanager
def installed(stand_ins: StandIns, fp8_prefill: bool = True):
    """Bind the stand-ins into the real module (and force its gfx950 fp8-prefill switch)."""
    mod = backend_module()
    names = ("mla_prefill_ps_asm_fwd", "mla_reduce_v1", "get_ps_metadata_v1", "mla_decode_fwd")
    missing = object()
    saved = {n: getattr(mod, n, missing) for n in names + ("_use_fp8_prefill_attn",)}
    try:
        for n in names:
            setattr(mod, n, getattr(stand_ins, n))
        mod._use_fp8_prefill_attn = fp8_prefill
        yield mod
    finally:
        for n, v in saved.items():
            if v is missing:
                delattr(mod, n)
            else:
                setattr(mod, n, v)


def cold_prefill(backend, seq_lens, heads: int = 12, seed: int = 0):
    """Run the real ``forward_extend`` on a cold-prefill batch → (output, (q, k, v, cu)).

    Builds ForwardMetadata / a forward batch / a layer / a KV pool by hand (what
    ``init_forward_metadata`` would compute on a GPU) for an EXTEND batch with no prefix.
    """
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    mod = backend_module()
    q, k, v, cu = mla_kernels.make_varlen_batch(seq_lens, heads, dtype=torch.bfloat16, seed=seed)
    cu = cu.to(torch.int32)
    t = q.shape[0]
    backend.token_to_kv_pool.get_key_buffer = lambda layer_id: torch.zeros(t, 1, 576, dtype=torch.bfloat16)
    backend.token_to_kv_pool.get_value_buffer = lambda layer_id: torch.zeros(t, 1, 512, dtype=torch.bfloat16)
    backend.forward_metadata = mod.ForwardMetadata(
        kv_indptr=cu, kv_indices=torch.arange(t, dtype=torch.int32), qo_indptr=cu,
        kv_last_page_len=torch.ones(len(seq_lens), dtype=torch.int32),
        max_q_len=max(seq_lens), max_kv_len=max(seq_lens),
        work_indptr=torch.zeros(2, dtype=torch.int32), work_info_set=torch.zeros(1, dtype=torch.int32),
        reduce_indptr=torch.zeros(2, dtype=torch.int32), reduce_final_map=torch.zeros(1, dtype=torch.int32),
        reduce_partial_map=torch.zeros(1, dtype=torch.int32),
        fp8_prefill_kv_indices=torch.arange(t, dtype=torch.int32))
    layer = NS(logit_cap=0.0, is_cross_attention=False, k_scale=None, v_scale=None, layer_id=0,
               tp_q_head_num=heads, tp_k_head_num=heads, tp_v_head_num=heads,
               qk_head_dim=192, v_head_dim=128, head_dim=192, scaling=1 / 192 ** 0.5)
    batch = NS(forward_mode=ForwardMode.EXTEND, out_cache_loc=torch.arange(t),
               extend_prefix_lens_cpu=[0] * len(seq_lens), encoder_out_cache_loc=None)
    out = backend.forward_extend(q, k, v, layer, batch, save_kv_cache=False)
    return out, (q, k, v, cu, layer)


def fp8_reference(q, k, v, cu, scale):
    """What the fp8 prefill should give: inputs cast to float8_e4m3fn (as sglang does), then reference."""
    f8 = torch.float8_e4m3fn
    return mla_kernels.mla_prefill_reference(q.to(f8).float(), k.to(f8).float(), v.to(f8).float(), cu.long(),
                                   softmax_scale=scale).to(torch.bfloat16)
