"""Patch: let sglang's AITER attention backend serve 12 MLA heads per rank by zero-padding to 16.

For sglang 0.5.16 (``sglang/srt/layers/attention/aiter_backend.py``), whose
``AiterAttnBackend.__init__`` asserts heads per rank ∈ {4, 8} ∪ {16, 32, …, 128} and so
refuses Kimi K3 at TP8 (12 heads) at start-up. After :data:`PATCH` is applied:

* ``__init__``: for an MLA model whose per-rank head count fails sglang's rule but can be
  padded (:func:`k3lab_patches.head_padding.padded_heads`, 12 → 16), sglang's own ``__init__`` runs
  against a view of the model config that reports the padded count (q heads, and the kv
  heads of the MHA-form prefill, which equal the q heads). Every buffer and kernel
  parameter sized by the head count (``num_head``, ``num_kv_head``, ``num_head_padded``,
  the persistent-prefill metadata) is then built for 16. The real count is kept in
  ``k3lab_real_heads``; nothing in the model config is modified.
* ``mla_fp8_prefill_attn`` (the fp8 ASM MHA-form prefill on gfx950, AITER
  ``mla_prefill_ps_asm_fwd`` + ``mla_reduce_v1``, which has no 12-head instance): q, k, v
  are zero-padded to 16 heads with :func:`k3lab_patches.head_padding.with_head_padding`, the original
  method runs on them and the 12 real heads are sliced out.
* ``_mla_decode_fwd_with_head_pad`` (every absorbed-form call: decode, target verify,
  draft extend; AITER's 16-head decode kernels): q is zero-padded to 16 heads and the output
  sliced, so a backend that also decodes stays correct. With
  ``--decode-attention-backend triton`` it is never called.

The non-fp8 prefill (``flash_attn_varlen_func``, CK) accepts any head count and is left as
it is. Upstream (data/sglang_upstream_changes.yaml of the study): sglang 0.5.19 accepts 12
heads itself (PR #34647, the 12-head fp8 Gluon decode, with the 12-head prefill gated to
``flash_attn_varlen_func``); its fp8 ASM prefill pads 12 → 16 from 0.5.22 (PR #34438, the
gate removed; PR #36356 in 0.5.19 added the ``pad_heads`` it uses). Version-guarded (``known_versions``), idempotent (a second ``apply`` patches
nothing), reversible (``revert`` restores the original functions). Written against
sglang 0.5.16's source; it copies none of it.
"""

from __future__ import annotations

import functools

from . import check_version
from .lazy import LazyModule
from .preconditions import signature_gap

#: the padding itself, imported on first use: it imports torch, which `status --version X` never needs
A = LazyModule(__package__ + ".head_padding")

_MODULE = "sglang.srt.layers.attention.aiter_backend"
_CLASS = "AiterAttnBackend"
_METHODS = ("__init__", "mla_fp8_prefill_attn", "_mla_decode_fwd_with_head_pad")
# the leading parameters each wrapper passes on by position (0.5.16's signatures)
_PARAMS = {"__init__": ("self", "model_runner"), "mla_fp8_prefill_attn": ("self", "q", "k", "v", "layer"),
           "_mla_decode_fwd_with_head_pad": ("self", "q", "k_buffer_flat", "layer")}
_MARK = "__k3lab_aiter_head_pad__"


class _View:
    """Read-through view of an object with some attributes replaced (the original is untouched)."""

    def __init__(self, base, **overrides):
        object.__setattr__(self, "_k3lab_base", base)
        object.__setattr__(self, "_k3lab_over", overrides)

    def __getattr__(self, name):
        over = object.__getattribute__(self, "_k3lab_over")
        if name in over:
            return over[name]
        return getattr(object.__getattribute__(self, "_k3lab_base"), name)


def _padded_config(cfg, tp: int, real: int, padded: int):
    """A view of sglang's ModelConfig that reports ``padded`` heads per rank (MHA-form kv too)."""
    real_kv = cfg.get_num_kv_heads(tp)
    kv = padded if real_kv == real else real_kv

    def get_num_kv_heads(tensor_parallel_size):
        return kv if tensor_parallel_size == tp else cfg.get_num_kv_heads(tensor_parallel_size)

    return _View(cfg, num_attention_heads=padded * tp, get_num_kv_heads=get_num_kv_heads)


def _wrap_init(orig):
    @functools.wraps(orig)
    def __init__(self, model_runner, *args, **kwargs):
        from sglang.srt.configs.model_config import AttentionArch
        from sglang.srt.runtime_context import get_parallel

        cfg = model_runner.model_config
        tp = get_parallel().attn_tp_size
        n = cfg.num_attention_heads // tp
        self.k3lab_real_heads = n
        if (cfg.attention_arch != AttentionArch.MLA or A.is_supported_heads(n)
                or n > A.SGLANG_MAX_HEADS):
            return orig(self, model_runner, *args, **kwargs)
        m = A.padded_heads(n)
        runner = _View(model_runner, model_config=_padded_config(cfg, tp, n, m))
        orig(self, runner, *args, **kwargs)
        self.k3lab_padded_heads = m

    setattr(__init__, _MARK, orig)
    return __init__


def _active(self, heads: int) -> int | None:
    """The padded count if this backend was set up by the patch and ``heads`` is the real count."""
    m = getattr(self, "k3lab_padded_heads", None)
    return m if m is not None and heads == getattr(self, "k3lab_real_heads", None) else None


def _wrap_prefill(orig):
    @functools.wraps(orig)
    def mla_fp8_prefill_attn(self, q, k, v, layer):
        m = _active(self, q.shape[1])
        if m is None:
            return orig(self, q, k, v, layer)
        layer16 = _View(layer, tp_q_head_num=m, tp_k_head_num=m, tp_v_head_num=m)
        return A.with_head_padding(lambda q_, k_, v_: orig(self, q_, k_, v_, layer16), heads=m)(q, k, v)

    setattr(mla_fp8_prefill_attn, _MARK, orig)
    return mla_fp8_prefill_attn


def _wrap_decode(orig):
    @functools.wraps(orig)
    def _mla_decode_fwd_with_head_pad(self, q, k_buffer_flat, layer, **kwargs):
        m = _active(self, q.shape[1]) if q.dim() == 3 else None
        if m is None:
            return orig(self, q, k_buffer_flat, layer, **kwargs)
        n = q.shape[1]
        out = orig(self, A.pad_heads(q, m), k_buffer_flat, _View(layer, tp_q_head_num=m), **kwargs)
        return out[:, :n].contiguous()

    setattr(_mla_decode_fwd_with_head_pad, _MARK, orig)
    return _mla_decode_fwd_with_head_pad


_WRAPPERS = {"__init__": _wrap_init, "mla_fp8_prefill_attn": _wrap_prefill,
             "_mla_decode_fwd_with_head_pad": _wrap_decode}


class AiterHeadPadPatch:
    """The :class:`k3lab_patches.Patch` for AITER MLA head padding."""

    name = "aiter_head_pad"
    known_versions = frozenset({"0.5.16"})
    # upstream, as the study read it (data/sglang_upstream_changes.yaml; a study test holds the two equal)
    UPSTREAM = {"accepts": ("0.5.19", 34647), "prefill": ("0.5.22", 34438), "pad_heads": ("0.5.19", 36356)}
    #: the open sglang PR that fences the padded fp8 prefill kernel off for 12-head models on gfx950 (the MI355X),
    #: where it memory-faulted (read 2026-12-04; the study's claim P4), and the switch that falls back
    FENCED_BY, FALLBACK = 33341, "SGLANG_AITER_FP8_PREFILL_ATTN=false"
    fixed_by = ("sglang 0.5.19 accepts 12 heads per rank (PR #34647; PR #36356's pad_heads not yet called); from "
                "0.5.22 its fp8 prefill pads 12 -> 16 and slices back, as this patch does (PR #34438, likely)")

    @classmethod
    def load_test(cls) -> str:
        """What a release that pads for itself still asks on the MI355X (newcomer 47: "recommended" beside the
        open PR fencing that kernel): load-test, and the switch that falls back."""
        return (f"load-test it on the MI355X: sglang PR #{cls.FENCED_BY} (open) fences this padded fp8 prefill off on "
                f"gfx950, where it memory-faulted; if it faults, {cls.FALLBACK}")

    @classmethod
    def fixed_says(cls, version: str) -> str:
        """Why sglang ``version`` (one the matrix shows fixed) needs no patch, in its own release's terms: the
        patch goes, the padding does not (newcomer 38: "fixed upstream" here against "still needed" in the
        README's padding answer). From 0.5.22 sglang pads 12 -> 16 for its fp8 prefill itself; 0.5.19-0.5.21
        take 12 heads unpadded, on the non-fp8 prefill."""
        from .releases import version_key

        pad_from, pad_pr = cls.UPSTREAM["prefill"]
        acc_from, acc_pr = cls.UPSTREAM["accepts"]
        if version_key(version) >= version_key(pad_from):
            return (f"sglang pads 12 heads to 16 and slices back itself from {pad_from} (PR #{pad_pr}, likely), as this "
                    "patch does: the padding is still what AITER's fast fp8 prefill needs (--attention-backend aiter), "
                    f"the patch is not; {cls.load_test()}")
        return (f"sglang accepts 12 heads per rank from {acc_from} (PR #{acc_pr}), unpadded, on the non-fp8 prefill; "
                f"its padded fp8 prefill comes in {pad_from} (PR #{pad_pr}, likely)")

    @staticmethod
    def broken(row: dict) -> bool:
        """The release matrix's verdict (:mod:`k3lab_patches.releases`): the AITER backend
        refuses 12 heads per rank."""
        return bool(row["aiter_head_pad"])

    def _cls(self, check: bool = True):
        """sglang's backend class; ``check``: refuse unless each method to wrap takes what the wrapper
        passes (revert needs only the class: it restores what apply wrapped, whatever the signatures)."""
        import importlib

        mod = importlib.import_module(_MODULE)
        cls = getattr(mod, _CLASS, None)
        if cls is None:
            raise RuntimeError(f"{_MODULE} has no {_CLASS}; this sglang is not one the patch knows")
        gaps = check and [g for m in _METHODS if (g := signature_gap(
            f"{_CLASS}.{m}", getattr(getattr(cls, m, None), _MARK, getattr(cls, m, None)), _PARAMS[m]))]
        if gaps:
            raise RuntimeError(f"k3lab patch {self.name!r}: {_MODULE}: {'; '.join(gaps)}; refusing to patch")
        return cls

    def is_applied(self) -> bool:
        cls = self._cls()
        return all(hasattr(cls.__dict__.get(m), _MARK) for m in _METHODS)

    def apply(self, version: str, force: bool = False) -> list[str]:
        """Wrap the three methods (those not wrapped yet) → ``["module.Class.method", …]``."""
        check_version(self, version, force)
        cls = self._cls()
        done = []
        for m in _METHODS:
            cur = cls.__dict__[m]
            if hasattr(cur, _MARK):
                continue
            setattr(cls, m, _WRAPPERS[m](cur))
            done.append(f"{_MODULE}.{_CLASS}.{m}")
        return done

    def revert(self) -> list[str]:
        """Restore the original methods → list of what was restored (empty if not applied)."""
        import sys

        if _MODULE not in sys.modules:
            return []
        cls = self._cls(check=False)
        done = []
        for m in _METHODS:
            cur = cls.__dict__.get(m)
            if hasattr(cur, _MARK):
                setattr(cls, m, getattr(cur, _MARK))
                done.append(f"{_MODULE}.{_CLASS}.{m}")
        return done


PATCH = AiterHeadPadPatch()
