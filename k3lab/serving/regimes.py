"""The serving model's three regimes (:data:`k3lab.serving.engines.REGIMES`): a
:class:`~k3lab.serving.model.BenchmarkPlan` and fitted parameters → a
:class:`~k3lab.serving.model.Timing`, per busy replica. Units: seconds, requests, tokens.

Notation: ``n`` requests running (the admission), ``q`` clients queued beyond it, ``I``/``O``
prompt and output tokens, ``a`` the acceptance length (1 without DSpark), ``t(D)`` the decode (or
verify + draft) step over ``D`` requests, ``p`` one prompt prefilled alone, ``r`` the request
overhead, ``X`` requests finished per second, ``L = n / X`` a running request's life (Little's
law); a queued client waits ``q / X`` more for its first token.

- **cohort** (:func:`cohort`): ``burst`` = the cohort's chunks; ``L = r + burst + (O − 1)·t(n)/a``;
  ``TTFT = r + mean chunk end``; ``TPOT = (L − TTFT)/(O − 1)``.
- **staggered** (:func:`staggered`): the other ``n − 1`` requests' prefills take ``f = X·p·(n − 1)/n``
  of a request's decode time: ``TPOT = t(D)/(a(1 − f))``; ``TTFT = r + t(D)·(n − 1)/(2n) + p + W``,
  ``W = X·p²/(2(1 − f))`` (M/D/1 wait behind other prefills); ``L = TTFT + (O − 1)·TPOT`` solved in
  closed form (a quadratic in ``L``), ``D = n − X·TTFT`` requests decoding.
- **mixed** (:func:`mixed`): a step over ``D`` decodes with ``x`` prompts' worth of chunks riding in it
  takes ``t = T0 + k·x`` (``T0 = t(D)``, ``k`` one whole prompt's marginal cost in a step, weights read
  once); ``x = X·t`` in steady state, so ``t = T0/(1 − k·X)``; ``TTFT = r + t/2 + chunks·t`` with
  ``chunks = ⌈I/(B − D)⌉``; ``n = X·(r + K·t)``, ``K = 1/2 + chunks + (O − 1)/a``, a quadratic in ``X``.
  The budget caps ``x·I ≤ B − D``: past it prompts queue and ``TTFT = L − (O − 1)·t/a``. Equal
  requests started together (a closed loop over fixed lengths) keep arriving in groups that fill
  the budget, so their chunks ride in full steps: ``TTFT = r + (1/2 + chunks)·(T0 + k·min(n, (B − D)/I))``.
"""

from __future__ import annotations

import math

from .passes import BenchmarkPlan, FamilyParams, PassCost, Timing


def _interp(xs, ys, x: float) -> float:
    """Linear interpolation of ``ys`` over ascending ``xs`` at ``x`` (clamped to the ends)."""
    if x <= xs[0]:
        return ys[0]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            f = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return ys[i - 1] + f * (ys[i] - ys[i - 1])
    return ys[-1]


def _step_seconds(pl: BenchmarkPlan, p: FamilyParams) -> list[float]:
    """The decode / verify step (draft pass included) at each batch size of ``pl.batches``."""
    draft = [d.seconds(p) for d in pl.drafts] or [0.0] * len(pl.steps)
    return [pl.step_repeats * (s.seconds(p, pl.fallback) + d) for s, d in zip(pl.steps, draft)]


def _prompt_cost(pl: BenchmarkPlan) -> PassCost:
    """One whole prompt's prefill as work riding in decode steps: its chunks' FLOPs, attention and
    collectives summed, one pass's weight read and fixed costs (the step already pays them)."""
    c = pl.alone
    return PassCost(max(x.gemm_mem_s for x in c), sum(x.gemm_flop_s for x in c), sum(x.attn_mem_s for x in c),
                    sum(x.attn_flop_s for x in c), max(x.layer_passes for x in c), sum(x.comm_s for x in c),
                    sum(x.extend_flop_s for x in c), max(x.scale_out_events for x in c), 0.0, 0.0,
                    max(x.pp_handoffs for x in c))


def _result(pl: BenchmarkPlan, step: float, prefill: float, per_request: float, life: float, x: float,
            tpot: float, ttft: float, regime: str) -> Timing:
    w = pl.workload
    return Timing(concurrency=w.concurrency, replicas=pl.replicas, step_s=step, prefill_s=prefill,
                  prefill_per_request_s=per_request, cycle_s=life, output_tok_s=pl.busy_replicas * x * w.output_len,
                  tpot_s=tpot, ttft_s=ttft, accept_len=pl.accept_len, tokens_in=w.input_len, regime=regime,
                  running=pl.running)


def cohort(pl: BenchmarkPlan, p: FamilyParams) -> Timing:
    """The cohort regime (module docstring)."""
    n, a = pl.running, pl.accept_len
    t = _step_seconds(pl, p)[-1]
    ends, s = [], 0.0
    for ch in pl.chunks:
        s += ch.seconds(p, pl.fallback)
        ends.append(s)
    r = p.request_overhead_ms * 1e-3
    decode_tokens = max(1, pl.workload.output_len - 1)
    ttft = r + sum(ends[k] for k in pl.last_chunk) / len(pl.last_chunk)
    life = r + s + decode_tokens / a * t
    x = n / life
    alone = sum(ch.seconds(p, pl.fallback) for ch in pl.alone)
    return _result(pl, t, alone, s / len(pl.last_chunk), life, x, (life - ttft) / decode_tokens,
                   ttft + pl.queued / x, "cohort")


def staggered(pl: BenchmarkPlan, p: FamilyParams) -> Timing:
    """The staggered regime (module docstring)."""
    n, a = pl.running, pl.accept_len
    steps = _step_seconds(pl, p)
    prefill = sum(ch.seconds(p, pl.fallback) for ch in pl.alone)
    r = p.request_overhead_ms * 1e-3
    decode_tokens = max(1, pl.workload.output_len - 1)
    others = (n - 1) / n
    d, wait = n, 0.0
    for _ in range(8):  # the decoding batch and the wait behind other prefills, refined to a fixed point
        t = _interp(pl.batches, steps, d)
        ttft = r + t * others / 2 + prefill + wait
        b, np_ = decode_tokens * t / a, (n - 1) * prefill
        s = np_ + ttft + b
        life = (s + math.sqrt(max(s * s - 4 * ttft * np_, 0.0))) / 2
        x = n / life
        f = min(x * prefill * others, 0.999)
        wait = x * prefill * prefill * others / (2 * (1 - f))
        d = max(1.0, n - x * ttft)
    t = _interp(pl.batches, steps, d)
    tpot = t / (a * (1 - f))
    ttft = r + t * others / 2 + prefill + wait
    life = ttft + decode_tokens * tpot
    x = n / life
    return _result(pl, t, prefill, prefill, life, x, tpot, ttft + pl.queued / x, "staggered")


def mixed(pl: BenchmarkPlan, p: FamilyParams) -> Timing:
    """The mixed regime (module docstring)."""
    n, a, w = pl.running, pl.accept_len, pl.workload
    base = _step_seconds(pl, p)
    prompt = _prompt_cost(pl)
    draft = [dd.seconds(p) for dd in pl.drafts] or [0.0] * len(pl.steps)
    loaded = [pl.step_repeats * (s.plus(prompt).seconds(p, pl.fallback) + dr) for s, dr in zip(pl.steps, draft)]
    prefill = sum(ch.seconds(p, pl.fallback) for ch in pl.alone)
    r = p.request_overhead_ms * 1e-3
    decode_tokens = max(1, w.output_len - 1)
    d = n
    for _ in range(2):  # the decoding batch, refined once
        t0 = _interp(pl.batches, base, d)
        k = max(_interp(pl.batches, loaded, d) - t0, 1e-12)
        room = max(1.0, pl.budget - d)
        chunks = math.ceil(w.input_len / room)
        K = 0.5 + chunks + decode_tokens / a
        # n = X·(r + K·T0/(1 − kX))  →  r·k·X² − (n·k + r + K·T0)·X + n = 0
        B = n * k + r + K * t0
        x = n / B if r * k <= 0 else (B - math.sqrt(max(B * B - 4 * r * k * n, 0.0))) / (2 * r * k)
        share = room / w.input_len  # prompts' worth of tokens a step can take
        x_sat = share / (t0 + k * share)
        saturated = x > x_sat
        if saturated:
            x = x_sat
        t = t0 / (1 - k * x) if not saturated else t0 + k * share
        # equal requests started together keep arriving in groups that fill the budget: their
        # chunks ride in full steps (a closed loop settles into the spread of its first burst)
        t_in = t0 + k * min(share, n) if pl.together else t
        ttft = r + t_in / 2 + chunks * t_in
        if saturated:
            ttft = max(ttft, n / x - decode_tokens * t / a)
        d = max(1.0, n - x * ttft)
    return _result(pl, t, prefill, prefill, n / x, x, t / a, ttft + pl.queued / x, "mixed")


REGIME_TIMING = {"cohort": cohort, "staggered": staggered, "mixed": mixed}


def timing(pl: BenchmarkPlan, p: FamilyParams) -> Timing:
    """:class:`Timing` of ``pl`` in its regime."""
    return REGIME_TIMING[pl.regime](pl, p)
