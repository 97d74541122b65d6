"""sglang's AITER-MLA head-count rule, and the zero-pad wrapper that serves 12 heads as 16.

Kimi K3 has 96 attention heads; at TP8 each rank holds 12. MLA prefill runs in MHA form:
q/k head dim 192 (128 nope + 64 rope slot), v head dim 128, one k/v head per q head.

sglang's rule (``sglang/srt/layers/attention/aiter_backend.py``, ``AiterAttnBackend.__init__``,
0.5.16 … 0.5.18; from 0.5.19 it zero-pads instead, ``head_pad_mode == "zero"``): at start-up it
asserts that heads per rank are 4, 8, or a multiple of 16 in [16, 128]; 4 and 8 are then run
on 16-head kernels by repeating q heads (:func:`is_supported_heads`, :func:`padded_heads`,
:func:`kernel_heads`). The k3lab study checks these against every release (its release
matrix) and sets them beside AITER's own per-kernel rules (``k3lab.attention.head_table``).

Zero-padding is exact because attention heads are independent: a padded head reads only its
own (zero) q/k/v and its output is sliced away. :func:`with_head_padding` wraps a varlen
prefill kernel that way (:mod:`k3lab_patches.aiter_head_pad` wraps sglang's with it).
No code here is copied from sglang or AITER; the behaviour matched is cited above.
"""

from __future__ import annotations

import functools
import numbers
import reprlib
from typing import Callable

import torch

#: sglang's AiterAttnBackend: the small head counts run by repeating q heads.
SGLANG_REPEAT_HEADS = (4, 8)
#: sglang's accepted multiples of 16 lie in [16, 128].
SGLANG_MAX_HEADS = 128


def _check_heads(n, what: str = "head count") -> int:
    """``n`` as a plain int (NumPy's integers too); ValueError for anything else or n <= 0."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"{what} must be an int, got {reprlib.repr(n)}")
    if n <= 0:
        raise ValueError(f"{what} must be positive, got {n}")
    return int(n)


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


# --------------------------------------------------------------------------- inputs

def check_cu(cu: torch.Tensor, total: int, name: str) -> list[int]:
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


# --------------------------------------------------------------------------- padding

def pad_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """Zero-pad ``x`` [tokens, h, d] along dim 1 to ``heads`` → new contiguous tensor.

    ``heads`` is an int from ``h`` up to :data:`SGLANG_MAX_HEADS` (the most any AITER MLA kernel
    takes: padding past it only spends memory, ``10**12`` heads would ask for terabytes);
    ValueError in one line otherwise, before anything is allocated."""
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise ValueError(f"expected a tensor [tokens, heads, head_dim], got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    heads = _check_heads(heads, "padded head count")
    h = x.shape[1]
    if heads < h:
        raise ValueError(f"cannot pad {h} heads down to {heads}")
    if heads > max(h, SGLANG_MAX_HEADS):
        raise ValueError(f"cannot pad {h} heads to {heads:,}: no AITER MLA kernel takes more than "
                         f"{SGLANG_MAX_HEADS} heads")
    out = x.new_zeros((x.shape[0], heads, x.shape[2]))
    out[:, :h] = x
    return out


def _shares_memory(t: torch.Tensor, inputs) -> bool:
    """``t`` is (a view of) one of the tensors the caller passed in."""
    return any(isinstance(x, torch.Tensor) and x.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
               for x in inputs)


def _slice_extra(extra, tq: int, m: int, h: int, i, inputs=()):
    """Slice a kernel's extra output back to the ``h`` real heads: [tokens, heads, ...] along
    dim 1, [heads, tokens, ...] along dim 0; a dict, list or (named) tuple of them item by item,
    keeping its type. Only a floating-point tensor the kernel computed has padded heads: an
    integer one (cu_seqlens, indices) or one of ``inputs`` passed through comes back as it is.
    ValueError when the heads dimension is ambiguous (tokens == padded heads and both leading
    dims match; a 1-D tensor as long as the padded heads, which could as well be one value per
    sequence) or a dim of m is neither."""
    if isinstance(extra, dict):
        return type(extra)((k, _slice_extra(v, tq, m, h, f"{i}[{k!r}]", inputs)) for k, v in extra.items())
    if isinstance(extra, (list, tuple)):
        items = [_slice_extra(v, tq, m, h, f"{i}[{j}]", inputs) for j, v in enumerate(extra)]
        return _same_kind(extra, items)
    if (not isinstance(extra, torch.Tensor) or extra.dim() == 0 or not extra.is_floating_point()
            or _shares_memory(extra, inputs)):
        return extra
    if extra.dim() == 1:
        if extra.shape[0] == m:
            raise ValueError(f"kernel output #{i} is 1-D of length {m}, the padded head count: one value per head "
                             f"or per something else cannot be told apart; return [heads, tokens] or [tokens, heads]")
        return extra
    lead = tuple(extra.shape[:2])
    by_tokens = lead == (tq, m)
    by_heads = extra.shape[0] == m and extra.shape[1] == tq
    if by_tokens and by_heads:
        raise ValueError(f"kernel output #{i} has shape {tuple(extra.shape)}: with {tq} tokens and {m} padded "
                         f"heads its heads dimension is ambiguous; return [tokens, heads, ...]")
    if by_tokens:
        return extra[:, :h].contiguous()
    if by_heads:
        return extra[:h].contiguous()
    if m in tuple(extra.shape):
        raise ValueError(f"kernel output #{i} has shape {tuple(extra.shape)}: a dimension of {m} (the padded "
                         f"heads) that is not [tokens, heads, ...] or [heads, tokens, ...]")
    return extra


def _same_kind(seq, items: list):
    """``items`` as the sequence type of ``seq``: a namedtuple stays that namedtuple."""
    if isinstance(seq, tuple) and hasattr(seq, "_fields"):
        return type(seq)(*items)
    return type(seq)(items) if isinstance(seq, (tuple, list)) else items


def _check_out(out, tq: int, h: int, dv: int, q: torch.Tensor) -> None:
    """The caller's ``out=`` buffer must be what the unpadded kernel would fill: [T, h, d_v]."""
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (tq, h, dv):
        raise ValueError(f"out= must be a tensor [{tq}, {h}, {dv}] (tokens, real heads, v head dim), got "
                         f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}")
    if out.dtype != q.dtype or out.device != q.device:
        raise ValueError(f"out= is {out.dtype} on {out.device}, q is {q.dtype} on {q.device}")


def with_head_padding(kernel: Callable, heads: int | Callable[[int], int] | None = None) -> Callable:
    """Wrap a varlen MHA-form prefill kernel so it only ever sees a supported head count.

    ``kernel(q, k, v, *args, **kwargs)`` takes q/k/v ``[tokens, heads, head_dim]`` (as
    sglang's varlen kernels: cu_seqlens etc. follow in ``args``) and returns the output
    ``[tokens, heads, d_v]`` (or a tuple — a namedtuple stays one — whose first item is that;
    further tensors with a heads dimension, such as an LSE laid out ``[tokens, heads]`` or
    ``[heads, tokens]``, are sliced along it too, inside a dict, list or tuple as well; one
    whose heads dimension cannot be told apart raises; an integer tensor or an input passed
    through is returned untouched). The wrapper zero-pads q, k and v along the head dim to
    ``heads`` (an int, or a function of the real count; default :func:`padded_heads`), calls
    the kernel, checks the output shape and returns the real heads ``[:, :h]`` (a contiguous
    copy). An ``out=`` buffer ``[tokens, h, d_v]`` is honoured: the kernel fills a padded one,
    and the real heads are copied into the caller's, which is what comes back. A count that
    needs no padding is passed through untouched. ValueError for layouts it cannot handle.
    """
    if not callable(kernel):
        raise ValueError(f"with_head_padding needs a callable kernel, got {type(kernel).__name__}")
    target_of = padded_heads if heads is None else (heads if callable(heads) else (lambda _n: heads))

    @functools.wraps(kernel)
    def padded(q, k, v, *args, **kwargs):
        tq, h, _dqk, dv = check_qkv(q, k, v)
        m = _check_heads(target_of(h), "padded head count")
        if m < h:
            raise ValueError(f"padded head count must be an int >= {h}, got {m!r}")
        if m == h:
            return kernel(q, k, v, *args, **kwargs)
        user_out = kwargs.get("out")
        if user_out is not None:
            _check_out(user_out, tq, h, dv, q)
            kwargs = {**kwargs, "out": user_out.new_zeros((tq, m, dv))}
        res = kernel(pad_heads(q, m), pad_heads(k, m), pad_heads(v, m), *args, **kwargs)
        if res is None and user_out is not None:  # a kernel that only fills out=
            user_out.copy_(kwargs["out"][:, :h])
            return None
        items = list(res) if isinstance(res, tuple) else [res]
        o = items[0]
        if not isinstance(o, torch.Tensor) or tuple(o.shape) != (tq, m, dv):
            raise ValueError(f"kernel returned {getattr(o, 'shape', type(o).__name__)}, expected "
                             f"[{tq}, {m}, {dv}] for {m} padded heads")
        first = user_out.copy_(o[:, :h]) if user_out is not None else o[:, :h].contiguous()
        inputs = (q, k, v, *args, *kwargs.values())
        out = [first] + [_slice_extra(extra, tq, m, h, i, inputs) for i, extra in enumerate(items[1:], 1)]
        return _same_kind(res, out) if isinstance(res, tuple) else out[0]

    padded.k3lab_head_padding = True
    return padded
