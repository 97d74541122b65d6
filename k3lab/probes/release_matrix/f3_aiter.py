"""Finding 3 per release: does sglang's AITER backend take 12 heads per rank, and is it exact?

``sglang/srt/layers/attention/aiter_backend.py``: the real ``AiterAttnBackend.__init__`` for
96 heads at TP8 (12 per rank) with the stand-in model runner/config of :mod:`.f3_stand_ins`,
plus stand-ins for the launcher's published ``spec``/``schedule`` config (from 0.5.17 the
backend reads ``get_spec()`` and ``get_schedule()`` instead of the runner) bound into the
backend module. :func:`finding3` records refusal (exact message) or the mode
(``head_pad_mode``, padded counts), the head counts 1…144 the constructor accepts at TP1,
and — where 12 is accepted — the real ``forward_extend`` cold prefill on the gfx950 fp8 path
with :class:`.f3_stand_ins.AiterStandIns`, compared with
:func:`k3lab.attention.with_head_padding` around the same stand-in, and the real decode
wrapper ``_mla_decode_fwd_with_head_pad``. Where 12 is refused, the same is run with
:data:`k3lab_patches.aiter_head_pad.PATCH` applied (``force=True`` outside its known
versions) to see whether the k3lab patch carries over.

sglang is imported inside functions: this runs in the child, on the release ``PYTHONPATH``
selected, and the package must import without sglang.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from importlib.metadata import version
from types import SimpleNamespace as NS

import torch

from ... import attention as A
from .emulation import swapped
from .f3_stand_ins import AiterStandIns, _runner, reference_prefill, stand_ins_installed, varlen_batch
from .record import _error, _sanitize

AITER = "sglang.srt.layers.attention.aiter_backend"
# Where the cold prefill is measured (tokens per sequence); small: the point is equality.
PREFILL_SEQ_LENS = (7, 19, 1)
HEAD_SWEEP = range(1, 145)


@contextlib.contextmanager
def aiter_context(tp: int):
    """Stand-in published config bound into the backend module + the TP width override."""
    from sglang.srt.runtime_context import get_parallel   # child: release on PYTHONPATH

    mod = importlib.import_module(AITER)
    bags = {"get_spec": NS(speculative_num_draft_tokens=None, speculative_num_steps=None,
                           speculative_algorithm=None, speculative_attention_mode="prefill"),
            "get_schedule": NS(page_size=1)}
    over = {"attn_tp_size": tp}
    try:
        get_parallel().attn_dcp_size
    except Exception:
        over["attn_dcp_size"] = 1
    # bound only where the release's module has them (it reads them from 0.5.17 on)
    readers = {n: (lambda b=bag: b) for n, bag in bags.items() if n in mod.__dict__}
    with swapped(mod.__dict__, readers), get_parallel().override(**over):
        yield mod


def construct(total_heads: int, tp: int):
    with aiter_context(tp) as mod:
        mod._use_fp8_prefill_attn = True        # gfx950 (is_gfx95_supported() is false on CPU)
        return mod.AiterAttnBackend(_runner(total_heads))


def _ranges(ns: list[int]) -> str:
    out, start = [], None
    for i, n in enumerate(ns):
        if start is None:
            start = n
        if i + 1 == len(ns) or ns[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ", ".join(out)


def _cold_prefill(mod, backend, heads: int, seed: int = 3):
    """The real ``forward_extend`` on an EXTEND batch without prefix (stand-in metadata)."""
    # child: release on PYTHONPATH
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    lens = list(PREFILL_SEQ_LENS)
    q, k, v, cu = varlen_batch(lens, heads, seed)
    t = q.shape[0]
    backend.token_to_kv_pool.get_key_buffer = lambda layer_id: torch.zeros(t, 1, 576, dtype=torch.bfloat16)
    backend.token_to_kv_pool.get_value_buffer = lambda layer_id: torch.zeros(t, 1, 512, dtype=torch.bfloat16)
    z2, z1 = torch.zeros(2, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    values = dict(kv_indptr=cu, kv_indices=torch.arange(t, dtype=torch.int32), qo_indptr=cu,
                  kv_last_page_len=torch.ones(len(lens), dtype=torch.int32), max_q_len=max(lens),
                  max_kv_len=max(lens), work_metadata=z1, work_indptr=z2, work_info_set=z1,
                  reduce_indptr=z2, reduce_final_map=z1, reduce_partial_map=z1,
                  fp8_prefill_kv_indices=torch.arange(t, dtype=torch.int32), is_causal=True,
                  need_lse=False, num_partial_tiles=0)
    if hasattr(mod, "MlaPrefillPsMetadata"):
        ps_fields = {f.name for f in dataclasses.fields(mod.MlaPrefillPsMetadata)}
        values["prefill_ps_metadata"] = mod.MlaPrefillPsMetadata(
            **{n: v_ for n, v_ in values.items() if n in ps_fields})
    fm_fields = {f.name for f in dataclasses.fields(mod.ForwardMetadata)}
    backend.forward_metadata = mod.ForwardMetadata(**{n: v_ for n, v_ in values.items() if n in fm_fields})
    layer = NS(logit_cap=0.0, is_cross_attention=False, k_scale=None, v_scale=None, layer_id=0,
               tp_q_head_num=heads, tp_k_head_num=heads, tp_v_head_num=heads, qk_head_dim=192,
               v_head_dim=128, head_dim=192, scaling=1 / 192 ** 0.5, sliding_window_size=None)
    batch = NS(forward_mode=ForwardMode.EXTEND, out_cache_loc=torch.arange(t),
               extend_prefix_lens_cpu=[0] * len(lens), encoder_out_cache_loc=None,
               attn_attend_prefix_cache=False, mha_return_lse=False, num_prefix_chunks=0,
               extend_prefix_lens=torch.zeros(len(lens), dtype=torch.int32),
               extend_seq_lens=torch.tensor(lens, dtype=torch.int32))
    out = backend.forward_extend(q, k, v, layer, batch, save_kv_cache=False)
    return out, (q, k, v, cu, layer)


def _prefill_equality(mod, backend, heads: int = 12) -> dict:
    """Real cold prefill for ``heads`` vs :func:`k3lab.attention.with_head_padding` around the
    same stand-in kernel.

    gfx950 is emulated (fp8 prefill switch on). Which AITER kernel the backend called is
    recorded: the fp8 ASM prefill (``mla_prefill_ps_asm_fwd`` + ``mla_reduce_v1``, inputs cast
    to the module's ``fp8_dtype`` as sglang does) or the CK varlen ``flash_attn_varlen_func``;
    the comparison wraps that same stand-in, fed the same way.
    """
    si = AiterStandIns()
    try:
        with swapped(mod.__dict__, {"_use_fp8_prefill_attn": True}), stand_ins_installed(mod, si):
            out, (q, k, v, cu, layer) = _cold_prefill(mod, backend, heads)
    except Exception as e:
        return {"ok": False, "error": _error(e), "kernel_heads": si.prefill_heads or si.flash_heads}
    scale = layer.scaling
    si2 = AiterStandIns()
    if si.prefill_heads:
        fp8 = getattr(mod, "fp8_dtype", torch.float8_e4m3fn)

        def same_kernel(q_, k_, v_, cu_):
            o = q_.new_empty((q_.shape[0], q_.shape[1], 128), dtype=torch.bfloat16)
            si2.mla_prefill_ps_asm_fwd(q_.to(fp8), k_.to(fp8), v_.to(fp8), cu_, cu_, None, None, None,
                                       max(PREFILL_SEQ_LENS), scale, True, None, None, o)
            si2.mla_reduce_v1(None, None, None, None, None, 256, 0, o)
            return o

        kernel, kernel_heads = "mla_prefill_ps_asm_fwd + mla_reduce_v1 (fp8 ASM)", si.prefill_heads
        ref = reference_prefill(q.to(fp8), k.to(fp8), v.to(fp8), cu, scale).to(torch.bfloat16)
    else:
        def same_kernel(q_, k_, v_, cu_):
            return si2.flash_attn_varlen_func(q_, k_, v_, cu_, cu_, max(PREFILL_SEQ_LENS),
                                              max(PREFILL_SEQ_LENS), softmax_scale=scale, causal=True)

        kernel, kernel_heads = "flash_attn_varlen_func (CK, bf16)", si.flash_heads
        ref = reference_prefill(q, k, v, cu, scale).to(q.dtype)
    padded = A.with_head_padding(same_kernel)(q, k, v, cu)
    return {"ok": True, "kernel": kernel, "kernel_heads": kernel_heads,
            "reduce_heads": si.reduce_heads, "out_shape": list(out.shape),
            "padded_heads_content": (_pad_content(backend, q, heads) if si.prefill_heads else "no padding"),
            "comparison_kernel_heads": si2.prefill_heads or si2.flash_heads,
            "max_abs_diff_vs_with_head_padding": float((out.float() - padded.float()).abs().max()),
            "bitwise_equal_to_with_head_padding": bool(torch.equal(out, padded)),
            "max_abs_diff_vs_unpadded_reference": float((out.float() - ref.float()).abs().max())}


def _pad_content(backend, q, heads: int) -> str:
    """What the fp8 prefill's extra heads hold: zeros (k3lab patch), tiled copies (sglang), none."""
    if getattr(backend, "k3lab_padded_heads", None):
        return "zeros (k3lab with_head_padding inside the patched method)"
    m = getattr(backend, "fp8_prefill_num_head", None)
    if m is None or m == heads or not hasattr(backend, "pad_heads"):
        return "no padding"
    p = backend.pad_heads(q, m)
    if torch.equal(p[:, heads:], torch.zeros_like(p[:, heads:])):
        return "zeros"
    if torch.equal(p[:, heads:], q[:, : m - heads]):
        return f"tiled copies of heads 0..{m - heads - 1}"
    return "other"


def _decode_12(mod, backend) -> dict:
    """The real ``_mla_decode_fwd_with_head_pad`` on 12 heads with the decode stand-in."""
    si = AiterStandIns()
    q = (torch.arange(3 * 12 * 576, dtype=torch.float32).reshape(3, 12, 576) / 1000).to(torch.bfloat16)
    layer = NS(v_head_dim=512, tp_q_head_num=12)
    try:
        with stand_ins_installed(mod, si):
            o = backend._mla_decode_fwd_with_head_pad(q, torch.zeros(4, 1, 576, dtype=torch.bfloat16),
                                                      layer, max_seqlen_q=1)
    except Exception as e:
        return {"ok": False, "error": _error(e)}
    expect = (2 * q[..., :512].float()).to(torch.bfloat16)
    return {"ok": True, "kernel_heads": si.decode_heads, "out_shape": list(o.shape),
            "equal_to_unpadded": bool(torch.equal(o, expect))}


def finding3() -> dict:
    mod = importlib.import_module(AITER)
    res: dict = {"module": AITER}
    accepted = []
    for n in HEAD_SWEEP:
        try:
            construct(n, 1)
            accepted.append(n)
        except AssertionError:
            pass
    res["accepted_heads_tp1"] = _ranges(accepted)
    res["accepts_12"] = 12 in accepted
    res["matches_k3lab_is_supported_heads"] = accepted == [n for n in HEAD_SWEEP if A.is_supported_heads(n)]
    try:
        backend = construct(96, 8)
        res["error_12"] = ""
        res["mode_12"] = {
            "num_head": backend.num_head,
            "num_head_padded": getattr(backend, "num_head_padded", None),
            "head_pad_mode": getattr(backend, "head_pad_mode", "(no head_pad_mode)"),
            "head_repeat_factor": getattr(backend, "head_repeat_factor", None),
            "fp8_prefill_num_head": getattr(backend, "fp8_prefill_num_head", None),
            "mla_kernel_num_head_padded": getattr(backend, "mla_kernel_num_head_padded", None)}
        res["prefill_12"] = _prefill_equality(mod, backend)
        res["decode_12"] = _decode_12(mod, backend)
        res["k3lab_patch"] = "not needed"
    except AssertionError as e:
        res["error_12"] = _sanitize(f"AssertionError: {e}")
        res["mode_12"] = None
        res["prefill_12"] = None
        res["decode_12"] = None
        res["k3lab_patch"] = _with_k3lab_patch(mod)
    return res


def _with_k3lab_patch(mod) -> dict:
    # Child only, after PYTHONPATH chose the release the patch is applied to.
    from k3lab_patches.aiter_head_pad import PATCH

    v = version("sglang")
    forced = v not in PATCH.known_versions
    try:
        PATCH.apply(v, force=True)
    except Exception as e:
        return {"forced": forced, "applies": False, "error": _error(e)}
    try:
        backend = construct(96, 8)
        out = {"forced": forced, "applies": True,
               "num_head_padded": backend.num_head_padded,
               "prefill_12": _prefill_equality(mod, backend),
               "decode_12": _decode_12(mod, backend)}
    except Exception as e:
        out = {"forced": forced, "applies": True, "error": _error(e)}
    finally:
        PATCH.revert()
    return out
