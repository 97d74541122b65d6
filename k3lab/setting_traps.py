"""Settings that change the answer: where one sglang switch or the KV dtype moves a deployment's
throughput by more than :data:`FACTOR` (either way) or decides whether a full-context request
fits, say which and how, where the user meets it (``predict``, ``quote``).

The plain ``8xmi355x tp8`` is the trap this names first: sglang 0.5.23's ROCm default pads Kimi
K3's expert intermediate to 512 per rank, so the weights leave a small pool; the article's
``SGLANG_AITER_K3_OPT=1`` (setting ``aiter-k3-opt``) keeps 384, and the node then holds a
1,048,576-token request and serves about three times the tokens. The alternatives tried: the
article's switch toggled on AMD GPUs, and the other KV dtype. Throughput is the serving model's
operating point (:func:`k3lab.serving.slo.operating_point`: its peak, or the SLO's point), the
fit sglang 0.5.23's pool sizing (:func:`k3lab.memory.plan`). Units: output tok/s per deployment.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import memory
from .model.capacity import KV_DTYPES
from .specs import Deployment, ModelConfig

#: a setting that moves the throughput by more than this factor is named
FACTOR = 1.5
#: the switch sglang's K3 path reads on ROCm, and how a person sets it
K3_OPT = "aiter-k3-opt"
K3_OPT_HOW = "SGLANG_AITER_K3_OPT=1"


@dataclass(frozen=True)
class Outcome:
    """One setting's answer: output tok/s at the operating point (None: the model gives none) and
    whether a request of the model's full context fits (with defaults or a state-pool setting)."""

    tok_s: float | None
    holds_full_context: bool


def _outcome(cfg, dep, variants, kv_dtype, mem_fraction, input_len, output_len, slo) -> Outcome:
    from .serving.predict import NotCalibrated
    from .serving.slo import operating_point

    p = memory.plan(cfg, dep.gpu, dep.num_gpus, dep.tp, mem_fraction, kv_dtype, pp=dep.pp,
                    context_tokens=cfg.max_position_embeddings, variants=variants)
    holds = p.verdict in ("fits with defaults", "fits only with a setting")
    try:
        pt = operating_point(cfg, dep, input_len, output_len, slo, variants=variants, kv_dtype=kv_dtype,
                             mem_fraction=mem_fraction).point
    except (NotCalibrated, ValueError):
        pt = None
    return Outcome(None if pt is None or not pt.validated() else pt.output_tok_s, holds)


def _alternatives(dep: Deployment, variants: tuple, kv_dtype: str) -> list[tuple[str, tuple, str]]:
    """(how to say it, variants, kv dtype) of each alternative setting tried."""
    out = []
    if dep.gpu_spec.vendor == "amd":
        if K3_OPT in variants:
            out.append((f"without {K3_OPT_HOW} (sglang's ROCm default)", tuple(v for v in variants if v != K3_OPT),
                        kv_dtype))
        else:
            out.append((f"with {K3_OPT_HOW} (setting [{K3_OPT}])", tuple(sorted({*variants, K3_OPT})), kv_dtype))
    other = next(k for k in KV_DTYPES if k != kv_dtype)
    out.append((f"with --kv-cache-dtype {other}" if other != "bf16" else "with a bf16 KV cache", variants, other))
    return out


def setting_traps(cfg: ModelConfig, dep: Deployment, input_len: int, output_len: int, variants=(),
                  kv_dtype: str = "bf16", mem_fraction: float = 0.9, slo=None) -> list[str]:
    """Sentences, one per alternative setting that moves the throughput by more than :data:`FACTOR`
    or changes whether a full-context request fits; empty when none does."""
    from .serving.slo import NO_SLO

    slo = NO_SLO if slo is None else slo
    variants = tuple(sorted(set(variants)))
    base = _outcome(cfg, dep, variants, kv_dtype, mem_fraction, input_len, output_len, slo)
    out = []
    for how, vs, kv in _alternatives(dep, variants, kv_dtype):
        alt = _outcome(cfg, dep, vs, kv, mem_fraction, input_len, output_len, slo)
        parts = []
        if alt.tok_s and base.tok_s and not 1 / FACTOR <= alt.tok_s / base.tok_s <= FACTOR:
            parts.append(f"serves {alt.tok_s:,.0f} output tok/s instead of {base.tok_s:,.0f} "
                         f"(x{alt.tok_s / base.tok_s:.2f})")
        if alt.holds_full_context != base.holds_full_context:
            ctx = f"{cfg.max_position_embeddings:,}-token request"
            parts.append(f"{'holds' if alt.holds_full_context else 'no longer holds'} a {ctx}")
        if parts:
            out.append(f"{how}, {dep.label} " + " and ".join(parts))
    return out
