"""torch SDPA one backend at a time: which of flash / efficient / cuDNN / math runs a shape,
which refuses and why, and the MLA attention calls in the layouts the GPU benchmark times.

``torch.nn.attention.sdpa_kernel([backend])`` allows only that backend; a backend that cannot
take the inputs makes torch raise ``RuntimeError`` ("No available kernel") after warnings that
say why — :func:`probe` keeps the most specific of those as the reason. Flash attention needs
equal q/k and v head dims: :func:`probe` then retries with v zero-padded to the q/k head dim
(the usual MLA trick, exact: the extra output columns are sliced away) and says so.

Layouts: prefill q/k ``[tokens, heads, 192]``, v ``[tokens, heads, 128]`` (sglang's varlen
layout, one sequence); decode q ``[batch, q_heads, 576]`` against one latent KV head
``[batch, context, 576]`` whose first 512 columns are the value (absorbed MLA).
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from .device_bench import one_line

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}


class Refused(RuntimeError):
    """The backend will not run these inputs; ``str()`` is torch's reason in one line."""


def _reason(caught, err: Exception) -> str:
    """The most specific warning torch gave before refusing (not its "… not used because:"
    header), else the error itself."""
    texts = [one_line(w.message) for w in caught]
    specific = [t for t in texts if not t.rstrip().endswith("because:")]
    return specific[0] if specific else one_line(err)


def call(backend: str, q, k, v, *, causal: bool, scale: float) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` through ``backend`` only (q ``[B, Hq, Sq, D]``, k ``[B,
    Hk, Sk, D]``, v ``[B, Hk, Sk, Dv]`` → ``[B, Hq, Sq, Dv]``); :class:`Refused` if it will not."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown SDPA backend {backend!r}; known: {', '.join(BACKENDS)}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sdpa_kernel([BACKENDS[backend]]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
        except RuntimeError as e:
            raise Refused(_reason(caught, e)) from None


def probe(backend: str, q, k, v, *, causal: bool, scale: float, wide_v=None, how: str = "zero-padded"
          ) -> tuple[bool, str]:
    """Whether ``backend`` runs these inputs (SDPA layout) → (v widened to q's head dim?, what
    was done, in words). A refused v narrower than q is retried widened: ``wide_v`` (default v
    zero-padded; decode passes the whole latent), described as ``how``. :class:`Refused` with
    torch's reasons when it runs neither way."""
    try:
        call(backend, q, k, v, causal=causal, scale=scale)
        return False, f"v head dim {v.shape[-1]} as given"
    except Refused as first:
        if v.shape[-1] >= q.shape[-1]:
            raise
        why = str(first)
    wide = F.pad(v, (0, q.shape[-1] - v.shape[-1])) if wide_v is None else wide_v
    try:
        call(backend, q, k, wide, causal=causal, scale=scale)
    except Refused as second:
        again = "the same" if str(second) == why else str(second)
        raise Refused(f"{why} (v widened to {q.shape[-1]}: {again})") from None
    return True, f"v {how} {v.shape[-1]} -> {q.shape[-1]} (output sliced back) because: {why}"


def prefill_kernel(backend: str, pad_v: bool, scale: float):
    """A causal single-sequence prefill kernel ``(q, k, v) → [tokens, heads, d_v]`` in the
    varlen layout, through ``backend`` only; with ``pad_v`` it zero-pads v to q's head dim
    inside the call (a cost both head counts pay). Returns a strided view, no output copy."""
    allowed = [BACKENDS[backend]]

    def run(q, k, v):
        dv = v.shape[-1]
        vv = F.pad(v, (0, q.shape[-1] - dv)) if pad_v else v
        with sdpa_kernel(allowed):
            o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                               vv.transpose(0, 1)[None], is_causal=True, scale=scale)
        return o[0, :, :, :dv].transpose(0, 1)

    run.__name__ = f"sdpa_{backend}_prefill"
    return run


def decode_layout(q, kv, value_dim: int, pad_v: bool):
    """SDPA inputs for absorbed MLA decode: the q heads as the query positions of one head,
    ``[B, 1, Hq, L]``; k the latent ``[B, 1, ctx, L]``; v its first ``value_dim`` columns, or
    with ``pad_v`` the whole latent (no copy: its extra columns are sliced off the output)."""
    k = kv[:, None]
    return q[:, None], k, (k if pad_v else k[..., :value_dim])


def decode_kernel(backend: str, pad_v: bool, value_dim: int, scale: float):
    """Absorbed-MLA decode ``(q [B, Hq, L], kv [B, ctx, L]) → [B, Hq, value_dim]`` through
    ``backend`` only (one query token per sequence: no causal mask)."""
    allowed = [BACKENDS[backend]]

    def run(q, kv):
        qq, k, v = decode_layout(q, kv, value_dim, pad_v)
        with sdpa_kernel(allowed):
            o = F.scaled_dot_product_attention(qq, k, v, scale=scale)
        return o[:, 0, :, :value_dim]

    run.__name__ = f"sdpa_{backend}_decode"
    return run
