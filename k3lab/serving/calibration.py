"""Fitting the serving model's parameters per GPU family, and how wrong it is, per metric.

The calibration set is every public observation of the family (:mod:`k3lab.serving.observations`:
what the data and the normalisation rules admit), of every kind the model predicts: decode speed
(TPOT, ITL, output tok/s), TTFT, and both with DSpark. The article's own figures are never in it
(they are not in ``data/public_measurements.yaml``).

**Fit**: least squares on ``ln(predicted / published)`` (every point counts by its relative error,
whatever its unit), each point weighted ``1/√n`` for an origin with ``n`` points
(:func:`origin_weights`: a parameter grid of one repository counts more than one figure, not a
hundred times more), over :class:`~k3lab.serving.model.FamilyParams` within :data:`BOUNDS`, from
the same start each time (scipy's trust-region reflective method: deterministic). A parameter the
family's points cannot move is not fitted (:func:`free_parameters`): the fallback prefill kernel's
efficiency is tied to the fast kernel's where no run of the family used the fallback, the
scale-out latency to 0 where none spans nodes, the verify-row cost to 0 where none ran DSpark.
Every observation is timed with its own engine, harness and admission (the run's stated limits,
else the engine's defaults, capped by the pools: :func:`admitted`).

**Validation**, on points the fit did not see, by whole families of sources (:data:`SPLITS`):

- *leave one repository out*: each origin (a repository's issues, pull requests, docs and result
  files together, :func:`k3lab.serving.observations.origin_of`) removed in turn, the family
  refitted on the rest, its points predicted (points of one project share a setup and a build, so
  leaving out a document at a time would flatter the model);
- *leave one engine out* and *leave one harness out*: the same by engine and by harness, where the
  family has two or more (how wrong the model is on an engine or a harness it has not seen);
- *time split*: fitted on the figures dated before the family's median date, tested on the rest
  (builds move: a model fitted on July's runs must say how wrong it is on September's).

A held-out figure whose deployment needs a cross-node cost the refit could not fit (a TP group or
a pipeline across nodes when no training run had one: ``scale_out_us`` or ``pipeline_us`` tied to
0, :func:`cross_node_gaps`) is an **extrapolation**: it is predicted and recorded, with its error,
but no band is computed from it — ``predict`` refuses such a question as outside the validated
domain unless two repositories' runs cross nodes (:func:`k3lab.serving.domain.gaps`), so a band
measured on it would describe questions no band is ever printed for.

A family's **band per metric** (:data:`~k3lab.serving.observations.METRICS`: decode, TTFT, DSpark) is
the band that promises :data:`COVERAGE` on a new point by split-conformal prediction's rule
(:func:`covering`: the ⌈(n + 1)·0.9⌉-th smallest out-of-sample error, wider than the in-sample
quantile when the points are few), on *each* split (:func:`covering_band`): a prediction ``p``
reads ``[p·e^-band, p·e^band]``. The band comes from the repository split, widened to the time
split's; the file records beside it the coverage it reaches on every split. A metric with too few
out-of-repository points inside the domain to promise it (:data:`MIN_POINTS`), or whose figures
come from fewer than :data:`MIN_SOURCES` independent repositories, or whose band is wider than
:data:`MAX_BAND_FACTOR` (``e^band``), is
**not validated**: ``predict`` and ``compare`` say so and no verdict or price uses it.

The fit and its validation take about twenty seconds, so they are made once, by ``make serving-fit``, and
committed as ``data/serving_fit.yaml`` (:mod:`k3lab.serving.committed` writes and reads it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data
from ..specs import load_model
from .model import FamilyParams, plan, spans_nodes, timing
from .observations import KINDS, METRICS, Observation, observations

#: (low, high) of each fitted parameter: efficiencies below what the best kernels sustain on
#: their datasheet peaks (GEMMs and flash attention ~75-80% of dense peak, streaming ~95% of HBM
#: bandwidth), fixed costs in µs / ms
BOUNDS = {"hbm_efficiency": (0.05, 0.95), "flop_efficiency": (0.02, 0.8), "layer_overhead_us": (0.0, 400.0),
          "kv_efficiency": (0.02, 0.95), "prefill_attention_efficiency": (0.01, 0.8),
          "fallback_attention_efficiency": (0.0005, 0.8), "request_overhead_ms": (0.0, 500.0),
          "scale_out_us": (0.0, 500.0), "token_us": (0.0, 20.0), "verify_row_us": (0.0, 50.0),
          "pipeline_us": (0.0, 20000.0)}
#: the start of every fit, and the typical values the weak prior pulls toward
START = {"hbm_efficiency": 0.6, "flop_efficiency": 0.3, "layer_overhead_us": 40.0, "kv_efficiency": 0.5,
         "prefill_attention_efficiency": 0.3, "fallback_attention_efficiency": 0.1, "request_overhead_ms": 20.0,
         "scale_out_us": 20.0, "token_us": 0.5, "verify_row_us": 1.0, "pipeline_us": 100.0}
SCALE = {"hbm_efficiency": 0.1, "flop_efficiency": 0.1, "layer_overhead_us": 10.0, "kv_efficiency": 0.1,
         "prefill_attention_efficiency": 0.1, "fallback_attention_efficiency": 0.05, "request_overhead_ms": 10.0,
         "scale_out_us": 10.0, "token_us": 0.5, "verify_row_us": 1.0, "pipeline_us": 1000.0}
#: weight of the weak prior: a parameter at the far end of its bounds costs as much as one point
#: off by this log error. It keeps a parameter the points barely move (a family without long
#: prompts says little of prefill attention) near a typical value instead of a bound, so that
#: leave-one-source-out refits stay comparable; where the points speak, they outweigh it.
PRIOR_WEIGHT = 1.0
#: independent repositories a family (and a metric) needs before its out-of-sample error means anything
MIN_SOURCES = 2
#: out-of-sample points a metric needs before a band can promise COVERAGE on a new point (the
#: smallest n with ⌈(n + 1)·0.9⌉ ≤ n: :func:`covering`)
MIN_POINTS = 9
#: share of out-of-sample points the band must cover, on each split
COVERAGE = 0.9
#: a band wider than this factor (e^band) is not usable: the metric is "not validated"
MAX_BAND_FACTOR = 2.0
#: the validation splits: each leaves out a whole family of sources — a repository (a project's
#: issues, PRs, docs and result files together), an engine, a harness — or the later half in time
SPLITS = ("leave_one_repository_out", "leave_one_engine_out", "leave_one_harness_out", "time_split")
#: what each grouping split leaves out together
GROUPS = {"leave_one_repository_out": lambda o: o.origin, "leave_one_engine_out": lambda o: o.engine,
          "leave_one_harness_out": lambda o: o.harness_name}


def predict_observation(o: Observation, params: FamilyParams) -> float:
    """The model's value of an observation's ``kind`` (same unit as ``o.value``)."""
    t = timing(_plan(o), params)
    if o.kind == "output_tok_s":
        return t.output_tok_s
    if o.kind == "tpot_ms":
        return t.tpot_s * 1e3
    if o.kind == "itl_ms":
        return t.step_s * 1e3
    return t.ttft_s * 1e3


def admitted(o: Observation) -> int:
    """Requests the observation's deployment ran at once: its engine's limit (the run's stated one,
    else the engine's default) capped by what the KV pool holds at the run's memory fraction
    (:func:`k3lab.serving.engines.admission`); at least one."""
    from .engines import admission, mean_lengths

    I, O = mean_lengths(o.workload.input_len, o.workload.output_len, o.harness)
    a = admission(load_model("kimi-k3"), o.deployment, I + O, o.spec.on, tuple(o.variants), o.kv_dtype,
                  o.engine_settings)
    return max(1, a.requests)


def _plan(o: Observation):
    return plan(load_model("kimi-k3"), o.deployment, o.workload, o.spec, tuple(o.variants), o.kv_dtype,
                None, o.prefill_attention, o.engine_settings, o.harness, _admitted(o))


_ADMITTED: dict = {}


def _admitted(o: Observation) -> int:
    if o.id not in _ADMITTED:
        _ADMITTED[o.id] = admitted(o)
    return _ADMITTED[o.id]


def free_parameters(obs: list[Observation]) -> tuple[str, ...]:
    """The parameters ``obs`` can move: all but the fallback kernel's efficiency where no run
    used the fallback prefill kernel (it is then tied to the fast kernel's), the cross-node
    all-reduce latency where no TP group spans nodes and the pipeline hand-off where no pipeline
    does (:data:`CROSS_NODE`; then 0), and the verify-row cost where no run used DSpark (then 0)."""
    names = list(FamilyParams.NAMES)
    if not any(o.prefill_attention == "fallback" for o in obs):
        names.remove("fallback_attention_efficiency")
    for k, needs in CROSS_NODE.items():
        if not any(needs(o.deployment) for o in obs):
            names.remove(k)
    if not any(o.spec.on and o.kind != "ttft_ms" for o in obs):
        names.remove("verify_row_us")
    return tuple(names)


#: the cross-node costs, and what in a deployment needs each (a TP group or a pipeline spanning nodes)
CROSS_NODE = {"scale_out_us": lambda d: d.tp_nodes > 1, "pipeline_us": lambda d: d.pp > 1 and spans_nodes(d)}


def cross_node_gaps(o: Observation, free: tuple[str, ...]) -> tuple[str, ...]:
    """The cross-node costs ``o``'s deployment needs that a fit with free parameters ``free`` did
    not fit (tied to 0 for want of a run that needs them): predicting ``o`` from it is an
    extrapolation across the node boundary."""
    return tuple(k for k, needs in CROSS_NODE.items() if needs(o.deployment) and k not in free)


def _params(family: str, names, x) -> FamilyParams:
    kw = dict(zip(names, (float(v) for v in x)))
    kw.setdefault("fallback_attention_efficiency", kw["prefill_attention_efficiency"])
    return FamilyParams(family, **kw)


def fit(obs: list[Observation], family: str) -> FamilyParams:
    """Least-squares fit of one family's parameters on ``obs`` (with the weak prior of
    :data:`PRIOR_WEIGHT`)."""
    import numpy as np
    from scipy.optimize import least_squares

    pts = [o for o in obs if o.kind in KINDS]
    names = free_parameters(pts)
    if len(pts) < len(names):
        raise ValueError(f"family {family}: {len(pts)} calibration points cannot fit {len(names)} parameters")
    plans = [_plan(o) for o in pts]
    kinds = [o.kind for o in pts]
    logv = np.log([o.value for o in pts])
    weight = np.array(origin_weights(pts))

    def residuals(x):
        p = _params(family, names, x)
        out = np.empty(len(pts))
        for i, (pl, k) in enumerate(zip(plans, kinds)):
            t = timing(pl, p)
            v = (t.output_tok_s if k == "output_tok_s" else 1e3 * (t.tpot_s if k == "tpot_ms" else
                 t.step_s if k == "itl_ms" else t.ttft_s))
            out[i] = math.log(v)
        return (out - logv) * weight

    prior = np.array([PRIOR_WEIGHT / (BOUNDS[n][1] - BOUNDS[n][0]) for n in names])
    x0 = np.array([START[n] for n in names])
    r = least_squares(lambda x: np.concatenate([residuals(x), prior * (x - x0)]), x0, bounds=([BOUNDS[n][0] for n in names],
                                                                     [BOUNDS[n][1] for n in names]),
                      method="trf", x_scale=[SCALE[n] for n in names], xtol=1e-10, ftol=1e-10)
    return _params(family, names, r.x)


def origin_weights(obs: list[Observation]) -> list[float]:
    """Each point's weight in the fit: ``1/√n`` for an origin with ``n`` points, scaled so the
    weights' squares average 1 — an origin with many figures of one setup (a parameter grid) counts
    more than one with few, but not in proportion, so one repository cannot own the fit."""
    n = {}
    for o in obs:
        n[o.origin] = n.get(o.origin, 0) + 1
    w = [1 / math.sqrt(n[o.origin]) for o in obs]
    scale = math.sqrt(len(w) / sum(x * x for x in w)) if w else 1.0
    return [x * scale for x in w]


def family_observations(family: str) -> list[Observation]:
    return [o for o in observations() if o.family == family]


def families() -> list[str]:
    """Families with public observations, in the order of ``data/serving_model.yaml``."""
    have = {o.family for o in observations()}
    return [f for f in data.load("serving_model").families if f in have]


@dataclass(frozen=True)
class Validation:
    """Out-of-sample predictions of one family: rows of (observation, prediction, log error,
    split), ``split`` one of :data:`SPLITS`; ``split_date`` the time split's date;
    ``extrapolated`` the (id, split) of rows whose refit lacked a cross-node cost the figure
    needs (:func:`cross_node_gaps`)."""

    family: str
    rows: tuple
    split_date: str | None = None
    extrapolated: frozenset = frozenset()

    def is_extrapolated(self, o: Observation, split: str) -> bool:
        return (o.id, split) in self.extrapolated

    def errors(self, metric: str | None = None, split: str | None = None, within: bool | None = True) -> list[float]:
        """|log errors| of the rows of ``metric`` and ``split`` (None: all); ``within``: True the
        rows inside the refit's domain (what bands are made of), False the extrapolations, None both."""
        return [abs(e) for o, _, e, s in self.rows
                if (metric is None or o.metric == metric) and (split is None or s == split)
                and (within is None or within != self.is_extrapolated(o, s))]


def split_date(obs: list[Observation]) -> str | None:
    """The family's time split: the median date of its dated points (those before it fit, those
    on or after it test), or None when fewer than two dates."""
    dates = sorted(o.date for o in obs if o.date)
    if len(set(dates)) < 2:
        return None
    d = dates[len(dates) // 2]
    return d if any(x < d for x in dates) else sorted(set(dates))[1]


@data.cached
def calibrated(family: str) -> FamilyParams:
    """The family's parameters fitted on all its calibration points (cached)."""
    return fit(family_observations(family), family)


@data.cached
def validation(family: str) -> Validation:
    """Out-of-sample predictions of ``family``'s observations on every split of :data:`SPLITS`
    (cached): each group left out in turn (a family with one group has nothing to leave out on
    that split), and the time split."""
    obs = family_observations(family)
    rows, extrapolated = [], set()

    def held_out(train, test, split):
        free = free_parameters(train)
        if len(train) < len(free) or not test:
            return
        p = fit(train, family)
        for o in test:
            pred = predict_observation(o, p)
            rows.append((o, pred, math.log(pred / o.value), split))
            if cross_node_gaps(o, free):
                extrapolated.add((o.id, split))

    for split, key in GROUPS.items():
        groups = sorted({key(o) for o in obs})
        if len(groups) < 2:
            continue
        for g in groups:
            held_out([o for o in obs if key(o) != g], [o for o in obs if key(o) == g], split)
    d = split_date(obs)
    if d is not None:
        held_out([o for o in obs if o.date and o.date < d], [o for o in obs if not o.date or o.date >= d], SPLITS[-1])
    rows.sort(key=lambda r: (SPLITS.index(r[3]), r[0].id))
    return Validation(family, tuple(rows), d, frozenset(extrapolated))


def quantile(xs: list[float], q: float) -> float:
    """The q-quantile of xs (linear interpolation between order statistics)."""
    s = sorted(xs)
    if not s:
        return math.nan
    k = (len(s) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def covering(errors: list[float], coverage: float = COVERAGE) -> float | None:
    """The band (log factor) that promises ``coverage`` on a *new* point, from ``errors`` (|log
    errors| of points the fit did not see): the ⌈(n + 1)·coverage⌉-th smallest — split-conformal
    prediction's finite-sample rule (for exchangeable points a new one falls inside with
    probability at least ``coverage``), which is wider than the in-sample quantile when n is
    small. None when n is too small to promise it (n < 9 at 90%)."""
    s = sorted(errors)
    k = math.ceil((len(s) + 1) * coverage)
    return s[k - 1] if 0 < k <= len(s) else None


def coverage_of(errors: list[float], band: float) -> float:
    """Share of ``errors`` inside ``band``."""
    return sum(e <= band + 1e-12 for e in errors) / len(errors) if errors else math.nan


@dataclass(frozen=True)
class MetricBand:
    """One family's band for one metric: the log factor, whether it is validated (enough
    out-of-sample points from enough sources, and no wider than :data:`MAX_BAND_FACTOR`), why
    not, and per split the points and the share inside."""

    metric: str
    band_log: float | None
    validated: bool
    why_not: str
    points: dict
    coverage: dict

    @property
    def factor(self) -> float | None:
        return None if self.band_log is None else math.exp(self.band_log)


def covering_band(family: str, metric: str) -> MetricBand:
    """The band of ``family`` for ``metric`` (see the module docstring): the conformal band
    (:func:`covering`) of the leave-one-repository-out errors, widened to the time split's where
    that split has enough points to promise one, or to its largest error where it has fewer (a
    floor: the model erred that much on later figures), on the rows inside each refit's domain
    (extrapolations across the node boundary are left out: :class:`Validation`). Not validated when
    the metric's figures come from fewer than :data:`MIN_SOURCES` independent repositories, or too
    few points inside the domain promise :data:`COVERAGE`.
    The engine and harness splits are reported beside it (their coverage), not folded in: a
    question on an engine or harness the family never measured is outside the validated domain
    (:func:`k3lab.serving.predict.domain_gaps`)."""
    v = validation(family)
    errs = {s: v.errors(metric, s) for s in SPLITS}
    srcs = {o.origin for o, _, _, s in v.rows if o.metric == metric and s == SPLITS[0]}
    points = {s: len(e) for s, e in errs.items()}
    loso = errs[SPLITS[0]]
    b = covering(loso) if loso else None
    if b is None or len(srcs) < MIN_SOURCES:
        out = len(v.errors(metric, SPLITS[0], within=False))
        return MetricBand(metric, None, False, f"{len(loso)} out-of-repository points inside the domain"
                          + (f" (and {out} extrapolated across nodes)" if out else "")
                          + f", from {len(srcs)} repositories, cannot promise {COVERAGE:.0%} on a new one "
                          f"(needs {MIN_POINTS} from {MIN_SOURCES})", points, {s: math.nan for s in SPLITS})
    later = errs[SPLITS[-1]]
    if later:
        t = covering(later)
        b = max(b, max(later) if t is None else t)
    cov = {s: coverage_of(e, b) for s, e in errs.items()}
    ok = math.exp(b) <= MAX_BAND_FACTOR
    return MetricBand(metric, b, ok, "" if ok else f"band ×{math.exp(b):.2f} is wider than ×{MAX_BAND_FACTOR:g}",
                      points, cov)


def summary():
    """Per family and metric: sources, calibration points, the band, its coverage on each split
    beside the nominal level, median and max out-of-sample error (inside each refit's domain), the
    leave-one-repository-out points extrapolated across nodes and their median error, validated or
    why not. → DataFrame; errors as factors (e^|log error|)."""
    import pandas as pd

    rows = []
    for f in families():
        obs = family_observations(f)
        v = validation(f)
        for m in METRICS:
            mb = covering_band(f, m)
            e, x = v.errors(m), v.errors(m, SPLITS[0], within=False)
            rows.append({"family": f, "metric": m, "repositories": len({o.origin for o in obs if o.metric == m}),
                         "calibration_points": sum(1 for o in obs if o.metric == m),
                         "band_factor": mb.factor if mb.factor is not None else math.nan,
                         "nominal": COVERAGE,
                         **{f"coverage_{s}": mb.coverage[s] for s in SPLITS},
                         **{f"points_{s}": mb.points[s] for s in SPLITS},
                         "error_median": math.exp(quantile(e, 0.5)) if e else math.nan,
                         "error_max": math.exp(max(e)) if e else math.nan,
                         "extrapolated_points": len(x),
                         "extrapolated_error_median": math.exp(quantile(x, 0.5)) if x else math.nan,
                         "validated": mb.validated, "why_not": mb.why_not})
    return pd.DataFrame(rows)
