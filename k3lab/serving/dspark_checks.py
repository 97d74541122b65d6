"""DSpark's speed where real traffic runs: the model against public DSpark runs on natural-text
prompts, which its fit leaves out.

Acceptance follows the prompts (:func:`k3lab.serving.field.accept_groups`): natural text accepts
about 2 tokens a verify step, a repeated passage 6 or more. On a family whose fitted DSpark runs
all prompted repetitively, a question at natural-text acceptance lies outside the speed fit. Some
public runs did time DSpark on natural text, but state their lengths only roughly (``use: false``,
``why_kind: variable_workload`` in ``data/public_measurements.yaml``), so the fit leaves them out.
They can still check the model's mechanism (what a wider verify step and the draft's pass cost
against the tokens a step emits): each beside the same source's run without DSpark on the same
layout, concurrency and output length (its input length nearest), the measured gain (DSpark ÷ no
DSpark output tok/s) against the model's, each run priced at its own setting with the committed fit.
Never fitted on, and too few for a band: a check, said as one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data
from . import committed, field
from .calibration import predict_observation
from .observations import Observation, family_of, normalise


@dataclass(frozen=True)
class GainCheck:
    """One natural-text DSpark run and its twin without DSpark. ``dspark``, ``plain``: the two
    :class:`Observation` (output tok/s per deployment); ``model_dspark``, ``model_plain``: the
    committed fit's values for them (output tok/s per deployment)."""

    dspark: Observation
    plain: Observation
    model_dspark: float
    model_plain: float

    @property
    def measured_gain(self) -> float:
        """DSpark ÷ no DSpark output tok/s, as measured (dimensionless)."""
        return self.dspark.value / self.plain.value

    @property
    def model_gain(self) -> float:
        """The same ratio from the model at each run's own setting."""
        return self.model_dspark / self.model_plain

    @property
    def model_over_measured(self) -> float:
        """The model's DSpark output tok/s over the measurement's (>1: the model runs fast)."""
        return self.model_dspark / self.dspark.value


def _usable(m) -> Observation | None:
    """A current entry as an observation, reading one set aside only for its rough lengths
    (``variable_workload``: lengths as stated, their ambiguity accepted) as usable — to check the
    model, never to fit it."""
    if not m.use and m.why_kind != "variable_workload":
        return None
    rough = {k: v for k, v in m.ambiguous.items() if k not in ("input_len", "output_len")}
    o = normalise(m if m.use else m.model_copy(update={"use": True, "why": None, "why_kind": None, "ambiguous": rough}))
    return o if isinstance(o, Observation) else None


@data.cached
def _checks_all() -> tuple[GainCheck, ...]:
    ms = data.load("public_measurements").measurements
    lower = {}
    out = []
    for m in ms:
        fam = family_of(m.gpu)
        if (m.status != "current" or m.metric not in ("output_tok_s", "total_tok_s") or fam is None
                or m.spec.algorithm != "dspark" or m.spec.acceptance != "measured" or m.spec.accept_length is None):
            continue
        if fam not in lower:
            gs = field.accept_groups(fam)
            # only a family whose runs split by their prompts has a natural-text group to check
            lower[fam] = (gs[0]["low"], gs[0]["high"]) if len(gs) > 1 else None
        if lower[fam] is None or not lower[fam][0] <= m.spec.accept_length <= lower[fam][1]:
            continue
        o = _usable(m)
        if o is None:
            continue
        twins = []
        for t in ms:
            if (t.source == m.source and t.status == "current" and t.metric in ("output_tok_s", "total_tok_s")
                    and t.spec.algorithm == "none" and t.concurrency == m.concurrency and t.output_len == m.output_len):
                ot = _usable(t)
                if ot is not None and ot.gpu == o.gpu and ot.deployment == o.deployment:
                    twins.append(ot)
        if not twins:
            continue
        plain = min(twins, key=lambda t: (abs(t.workload.input_len - o.workload.input_len), t.id))
        params = committed.fitted(fam)[0]
        out.append(GainCheck(o, plain, predict_observation(o, params), predict_observation(plain, params)))
    return tuple(sorted(out, key=lambda c: (c.dspark.family, c.dspark.source, c.dspark.deployment.label,
                                            c.dspark.workload.concurrency, c.dspark.id)))


def gain_checks(family: str) -> list[GainCheck]:
    """The :class:`GainCheck` of a GPU family (empty where its acceptance is one group or no
    natural-text run has a twin), by source, layout and concurrency."""
    return [c for c in _checks_all() if c.dspark.family == family]


def check_accept(family: str) -> float | None:
    """The median acceptance of ``family``'s checked runs (tokens per verify step; None without any)."""
    from .calibration import quantile

    cs = gain_checks(family)
    return round(quantile([c.dspark.spec.accept_len for c in cs], 0.5), 2) if cs else None


def fixed_shares(cfg, family: str, dep, concurrency: int, context_tokens: float, kv_dtype: str = "bf16"
                 ) -> tuple[float, float] | None:
    """(there, here): the share of a plain decode step that is fixed per pass
    (:func:`k3lab.serving.model.step_fixed_share`) on the checked run nearest ``concurrency`` and on
    the question (``dep`` at ``concurrency`` requests of ``context_tokens`` mean context): why the
    model's DSpark gain differs between them. None without a check."""
    from .model import step_fixed_share

    cs = gain_checks(family)
    if not cs:
        return None
    c = min(cs, key=lambda c: (abs(c.dspark.workload.concurrency - concurrency), c.dspark.id))
    params = committed.fitted(family)[0]
    w = c.dspark.workload
    there = step_fixed_share(cfg, c.dspark.deployment, w.concurrency, w.input_len + w.output_len / 2, params,
                             c.dspark.kv_dtype)
    return there, step_fixed_share(cfg, dep, concurrency, context_tokens, params, kv_dtype)


def check_brief(family: str) -> str:
    """The natural-text checks of ``family`` in one clause for ``predict --brief``'s table head (newcomers 52-54:
    "DSpark at 2 is an extrapolation" with the checks only in the full output): "gain checked on 3 natural-text
    runs of 16×B200 TP16 EP: within 5%", the worst of :func:`check_line`'s gain misses; "" without any."""
    cs = gain_checks(family)
    if not cs:
        return ""
    worst = max(abs(math.log(c.model_gain / c.measured_gain)) for c in cs)
    where = ", ".join(dict.fromkeys(c.dspark.deployment.label for c in cs))
    return f"gain checked on {len(cs)} natural-text runs of {where}: within {math.exp(worst) - 1:.0%}"


def check_line(family: str, gpu: str | None = None, layout: str | None = None,
               yours: float | None = None, shares: tuple[float, float] | None = None) -> str:
    """One sentence: what the natural-text checks of ``family`` measured and what the model says
    of the same runs, per source and layout (``gpu``, ``layout``: the question's, to say whether
    the checked runs share them; ``yours``: the model's DSpark gain on the question at
    :func:`check_accept`, to set beside them, with ``shares`` (:func:`fixed_shares`) saying why they
    differ); "" without any."""
    cs = gain_checks(family)
    if not cs:
        return ""
    parts = []
    for key in dict.fromkeys((c.dspark.source, c.dspark.gpu, c.dspark.deployment.label) for c in cs):
        g = [c for c in cs if (c.dspark.source, c.dspark.gpu, c.dspark.deployment.label) == key]
        acc = sorted(c.dspark.spec.accept_len for c in g)
        ins = sorted({c.dspark.workload.input_len for c in g})
        worst = max(abs(math.log(c.model_gain / c.measured_gain)) for c in g)
        fast = [c.model_over_measured for c in g]
        parts.append(
            f"on {key[2]} ({key[0]}, {', '.join(f'{i:,}' for i in ins)}-token prompts, acceptance "
            f"{acc[0]:g}-{acc[-1]:g}) DSpark measured "
            + ", ".join(f"x{c.measured_gain:.2f}" for c in g) + " its run without at "
            + ", ".join(f"c{c.dspark.workload.concurrency}" for c in g) + " and the model says "
            + ", ".join(f"x{c.model_gain:.2f}" for c in g)
            + f": its gain within {math.exp(worst) - 1:.0%} (its DSpark tok/s x{min(fast):.2f}-{max(fast):.2f} "
              "the measured)")
    other = [] if all(c.dspark.gpu == gpu for c in cs) else ["GPU"]
    other += [] if all(c.dspark.deployment.label == layout for c in cs) else ["layout"]
    mine = ""
    if yours is not None and other:
        # newcomers 22, 23: "the B200 runs gained x1.45" against "x0.92 for you" had to be reconciled by the reader
        more = "more than" if yours < min(c.model_gain for c in cs) else "about as much as"
        mine = (f" Those runs gain {more} yours (the model gives yours x{yours:.2f} at their "
                f"{check_accept(family):g})")
        if shares is not None and shares[0] > shares[1] + 0.1:
            mine += (f": {shares[0]:.0%} of a plain step there is fixed cost per pass (cross-node collectives, "
                     f"layer overhead), which a wider verify step does not add to; {shares[1]:.0%} of yours")
        mine += "."
    # "a check, not a band" first (newcomers 29-30: "its gain within 5%" beside "DSpark at 2 has no validated band"
    # read as a contradiction until the last clause)
    return (f"checked on natural text (a check, not a band: {len(cs)} runs"
            + (f" on another {' and '.join(other)}" if other else "") + "): the model's DSpark gain, on public runs "
            "the fit leaves out for their rough lengths: " + "; ".join(parts) + "." + mine)
