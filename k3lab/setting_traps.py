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

import math

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
    """One setting's answer: output tok/s where the question is asked (None: the model gives none),
    the requests running there, and whether a request of the model's full context fits (with
    defaults or a state-pool setting)."""

    tok_s: float | None
    holds_full_context: bool
    concurrency: int = 0


def _outcome(cfg, dep, variants, kv_dtype, mem_fraction, input_len, output_len, slo, concurrency=None,
             prefill_attention="fast", engine=None, context_tokens=None, spec=None, harness=None) -> Outcome:
    """At ``concurrency`` clients when given (the engine runs what this setting admits, the rest
    queue), else at the SLO's operating point (its peak without one); the prefill priced with
    ``prefill_attention``'s kernel (:data:`k3lab.serving.model.PREFILL_ATTENTION`); ``engine``: the
    question's (its state-pool flags; sglang's defaults when None); ``context_tokens``: the request
    that must fit (the model's full context when None); ``spec``: the question's speculative setting
    (none when None), so that the numbers are its table's (attack 6: DSpark's table beside figures without it);
    ``harness``: the question's benchmark (its arrivals and lengths; the engine's usual one when None), for
    the same reason (newcomer 33: "1,323" at the cohort's arrivals beside a ramped prediction of 1,268)."""
    from .serving.model import NO_SPEC, Workload
    from .serving.predict import NotCalibrated, predict
    from .serving.slo import operating_point

    p = memory.plan(cfg, dep.gpu, dep.num_gpus, dep.tp, mem_fraction, kv_dtype, pp=dep.pp,
                    context_tokens=context_tokens or cfg.max_position_embeddings, variants=variants)
    holds = p.verdict in ("fits with defaults", "fits only with a setting")
    kw = ({} if engine is None else {"engine": engine}) | ({} if harness is None else {"harness": harness})
    spec = NO_SPEC if spec is None else spec
    try:
        pt = (predict(cfg, dep, Workload(input_len, output_len, concurrency), spec, variants=variants, kv_dtype=kv_dtype,
                      mem_fraction=mem_fraction, prefill_attention=prefill_attention, **kw) if concurrency else
              operating_point(cfg, dep, input_len, output_len, slo, spec, variants=variants, kv_dtype=kv_dtype,
                              mem_fraction=mem_fraction, prefill_attention=prefill_attention, **kw).point)
    except (NotCalibrated, ValueError):
        pt = None
    if pt is None or not pt.validated():
        return Outcome(None, holds)
    return Outcome(pt.output_tok_s, holds, pt.concurrency)


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


def _moves(alt: Outcome, base: Outcome) -> bool:
    return bool(alt.tok_s and base.tok_s) and not 1 / FACTOR <= alt.tok_s / base.tok_s <= FACTOR


@dataclass(frozen=True)
class Trap:
    """One alternative setting that changes the answer: ``how`` it differs from the question's
    (e.g. "without SGLANG_AITER_K3_OPT=1 (sglang's ROCm default)"), the ``sentence`` that says what it
    changes, and the ``brief`` that says it in a few words for a line that has named the setting
    ("x0.42 output tok/s at TPOT ≤ 50 ms, no 1,048,576-token request")."""

    how: str
    sentence: str
    brief: str


def traps(cfg: ModelConfig, dep: Deployment, input_len: int, output_len: int, variants=(),
          kv_dtype: str = "bf16", mem_fraction: float = 0.9, slo=None, concurrency: int | None = None,
          prefill_attention: str = "fast", engine=None, context_tokens: int | None = None, spec=None,
          harness=None) -> list[Trap]:
    """:func:`setting_traps`' findings as :class:`Trap` (the same arguments; the same order)."""
    from .serving.slo import NO_SLO

    slo = NO_SLO if slo is None else slo
    variants = tuple(sorted(set(variants)))
    at = lambda vs, kv, c=concurrency: _outcome(cfg, dep, vs, kv, mem_fraction, input_len, output_len, slo, c,  # noqa: E731
                                                prefill_attention, engine, context_tokens, spec, harness)
    base = at(variants, kv_dtype)
    where = (f" at {slo.label()} (each at its highest concurrency meeting it)" if slo.active else " at each one's peak")
    out = []
    for how, vs, kv in _alternatives(dep, variants, kv_dtype):
        alt = at(vs, kv)
        parts, brief = [], []
        if _moves(alt, base):
            parts.append(f"serves {alt.tok_s:,.0f} output tok/s instead of {base.tok_s:,.0f} (x{alt.tok_s / base.tok_s:.2f})"
                         + (f" at your concurrency {concurrency:,}" if concurrency else where))
            # where it was compared, in a few words (newcomer 15: x0.42 here and x0.33 there read as a contradiction)
            brief.append(f"x{alt.tok_s / base.tok_s:.2f} output tok/s " + (f"at c{concurrency:,}" if concurrency else
                                                                         f"at {slo.label()}" if slo.active else
                                                                         "at the peaks"))
        elif concurrency and alt.tok_s and base.tok_s:  # the same at your concurrency: does it move at the peaks?
            pa, pb = at(vs, kv, None), at(variants, kv_dtype, None)
            if _moves(pa, pb):
                # "about the same" only where it is (newcomer 15: said of 447 against 604)
                r = alt.tok_s / base.tok_s
                same = "about the same" if abs(math.log(r)) < math.log(1.05) else f"x{r:.2f}"
                parts.append(f"serves {same} at your concurrency {concurrency:,} ({alt.tok_s:,.0f} against "
                             f"{base.tok_s:,.0f} output tok/s) but {pa.tok_s:,.0f} instead of {pb.tok_s:,.0f} "
                             f"(x{pa.tok_s / pb.tok_s:.2f}){where} (c{pa.concurrency:,} against c{pb.concurrency:,})")
                brief.append(f"x{pa.tok_s / pb.tok_s:.2f} output tok/s at the peaks")
        if alt.holds_full_context != base.holds_full_context:
            ctx = f"{context_tokens or cfg.max_position_embeddings:,}-token request"
            parts.append(f"{'holds' if alt.holds_full_context else 'no longer holds'} a {ctx}")
            brief.append(f"{'holds' if alt.holds_full_context else 'no'} {ctx}")
        if parts:
            out.append(Trap(how, f"{how}, {dep.label} " + " and ".join(parts), ", ".join(brief)))
    return out


def setting_traps(cfg: ModelConfig, dep: Deployment, input_len: int, output_len: int, variants=(),
                  kv_dtype: str = "bf16", mem_fraction: float = 0.9, slo=None, concurrency: int | None = None,
                  prefill_attention: str = "fast", engine=None, context_tokens: int | None = None,
                  spec=None, harness=None) -> list[str]:
    """Sentences, one per alternative setting that moves the throughput by more than :data:`FACTOR`
    or changes whether a full-context request fits; empty when none does. The throughput is
    compared at ``concurrency`` clients when given (what ``predict --concurrency`` asks), and the
    sentence says so; where it moves only at the two settings' peaks, it names those; without a
    concurrency, each at its SLO's operating point (its peak without an SLO). ``prefill_attention``:
    the prefill kernel the question prices (``predict --attention-backend``), and ``engine`` its
    engine (a user's state-pool flags), so that the numbers are the table's; ``context_tokens``: the
    request that must fit (``--context``; the model's full context when None); ``spec``: its speculative
    setting (``predict --spec dspark``); ``harness``: its benchmark (``--arrival``, ``--lengths``)."""
    return [t.sentence for t in traps(cfg, dep, input_len, output_len, variants, kv_dtype, mem_fraction, slo,
                                      concurrency, prefill_attention, engine, context_tokens, spec, harness)]


def full_context_setting(cfg: ModelConfig, dep: Deployment, variants=(), kv_dtype: str = "bf16",
                         mem_fraction: float = 0.9, concurrency: int | None = None, dspark: bool = False) -> str | None:
    """The state-pool trap, the other half of :func:`setting_traps`'s: where sglang's defaults do
    not hold a request of the model's full context but a state-pool setting does
    (:attr:`k3lab.memory.Plan.verdict` ``fits only with a setting``; its pick,
    :attr:`~k3lab.memory.Plan.best_option`), one sentence naming the setting and the running
    requests it leaves against the defaults' (whole deployment), and whether ``concurrency``
    clients still all run with it — when not, a full-context request and that concurrency do not
    go together. ``dspark``: the plan with the DSpark draft beside the model (its weights, KV and
    sglang's 48-request cap). None where the defaults hold it, or nothing does."""
    vs = tuple(sorted({*variants, "dspark"})) if dspark else tuple(sorted(set(variants)))
    p = memory.plan(cfg, dep.gpu, dep.num_gpus, dep.tp, mem_fraction, kv_dtype, pp=dep.pp,
                    context_tokens=cfg.max_position_embeddings, variants=vs)
    if p.verdict != "fits only with a setting":
        return None
    left, dflt = p.best_option.max_running_requests * p.replicas, p.max_running_requests_total
    out = (f"with {p.best_option.flags}, {dep.label}{' with DSpark' if dspark else ''} holds a "
           f"{cfg.max_position_embeddings:,}-token request (sglang's defaults do not) and runs at most {left:,} "
           f"requests instead of {dflt:,}")
    if concurrency is None:
        return out
    if concurrency <= left:
        return out + f", still all of your {concurrency:,}"
    return (out + f": your {concurrency:,} clients and a full-context request do not go together (the defaults run "
            f"{min(concurrency, dflt):,} of them and hold no such request; the setting holds one and runs {left:,}, "
            "the rest queue)")
