"""Fitting the serving model's three parameters per GPU family, and how wrong it is.

The calibration set is every public observation of the family (:mod:`k3lab.serving.observations`:
what the data and the normalisation rules admit), of every kind the model predicts
(:data:`k3lab.serving.observations.FITTED_KINDS`: output tok/s, TPOT, median ITL, TTFT — at
concurrency 1 and under load). The article's own figures are never in it (they are not in
``data/public_measurements.yaml``).

Fit: least squares on ``ln(predicted / published)`` (every point counts by its relative error,
whatever its unit), over :class:`~k3lab.serving.model.FamilyParams` within the bounds of
:data:`BOUNDS`, from the same start each time (scipy's trust-region reflective method:
deterministic).

Validation: **leave one source out**. Each source (an issue, a PR, a blog) is removed in turn,
the family refitted on the rest, and that source's points predicted: the error a reader should
expect on a source the model has not seen. Points of one source share a setup, so leaving out a
point at a time would flatter the model. A family's *band* is the 90th percentile of those
out-of-source errors, ``|ln(predicted / published)|``, over its fitted kinds (:func:`band`);
A family with fewer than :data:`MIN_SOURCES` sources cannot be validated this way and has no
band: the model then refuses to predict for it.

The fit takes about half a minute, so it is made once, by ``make serving-fit``
(``benchmarks/serving_fit.py`` → :func:`write_fit`), and committed as ``data/serving_fit.yaml``
with the sha256 of every input file. :func:`fitted` reads it and refuses it, in one line, when an
input has changed since (``tests/test_serving_fit.py`` refits and compares, so a change of the
model's code shows too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data
from ..specs import load_model
from .model import FamilyParams, benchmark
from .observations import FITTED_KINDS, Observation, observations

#: (low, high) of each parameter: efficiencies in (0, 1], the per-layer cost in µs
BOUNDS = {"hbm_efficiency": (0.05, 1.0), "flop_efficiency": (0.02, 1.0), "layer_overhead_us": (0.0, 400.0)}
START = (0.6, 0.3, 40.0)
#: sources a family needs before its out-of-source error means anything
MIN_SOURCES = 2
BAND_QUANTILE = 0.9


def predict_observation(o: Observation, params: FamilyParams) -> float:
    """The model's value of an observation's ``kind`` (same unit as ``o.value``)."""
    t = benchmark(load_model("kimi-k3"), o.deployment, o.workload, params, o.spec, o.variants, o.kv_dtype)
    if o.kind == "output_tok_s":
        return t.output_tok_s
    if o.kind == "tpot_ms":
        return t.tpot_s * 1e3
    if o.kind == "itl_ms":
        return t.step_s * 1e3
    return t.ttft_s * 1e3


def _residuals(obs, family, x):
    p = FamilyParams(family, *x)
    return [math.log(predict_observation(o, p) / o.value) for o in obs]


def fit(obs: list[Observation], family: str) -> FamilyParams:
    """Least-squares fit of one family's parameters on ``obs`` (their fitted kinds only)."""
    from scipy.optimize import least_squares

    pts = [o for o in obs if o.kind in FITTED_KINDS]
    if len(pts) < len(START):
        raise ValueError(f"family {family}: {len(pts)} calibration points cannot fit {len(START)} parameters")
    lo = [b[0] for b in BOUNDS.values()]
    hi = [b[1] for b in BOUNDS.values()]
    r = least_squares(lambda x: _residuals(pts, family, x), START, bounds=(lo, hi), method="trf",
                      x_scale=[0.1, 0.1, 10.0], xtol=1e-10, ftol=1e-10)
    return FamilyParams(family, *(float(v) for v in r.x))


#: files the fit depends on (relative to data/); their sha256 is recorded in serving_fit.yaml
FIT_INPUTS = ("public_measurements.yaml", "serving_model.yaml", "hardware.yaml", "sglang_sharding.yaml",
              "model/kimi_k3_config.json", "model/storage_overrides.yaml", "model/kimi_k3_dspark_draft.yaml")
#: bumped whenever the model's equations change (the refit test catches a forgotten bump)
MODEL_VERSION = "1"


def family_observations(family: str) -> list[Observation]:
    return [o for o in observations() if o.family == family]


def families() -> list[str]:
    """Families with public observations, in the order of ``data/serving_model.yaml``."""
    have = {o.family for o in observations()}
    return [f for f in data.load("serving_model").families if f in have]


@dataclass(frozen=True)
class Validation:
    """Out-of-source predictions of one family: rows of (observation, prediction, error)."""

    family: str
    rows: tuple  # (Observation, predicted, log_error)

    def errors(self, kinds=FITTED_KINDS) -> list[float]:
        return [abs(e) for o, _, e in self.rows if o.kind in kinds]


@data.cached
def calibrated(family: str) -> FamilyParams:
    """The family's parameters fitted on all its calibration points (cached)."""
    return fit(family_observations(family), family)


@data.cached
def validation(family: str) -> Validation:
    """Leave-one-source-out predictions of every observation of ``family`` (cached)."""
    obs = family_observations(family)
    sources = sorted({o.source for o in obs})
    rows = []
    for s in sources:
        rest = [o for o in obs if o.source != s]
        if sum(1 for o in rest if o.kind in FITTED_KINDS) < len(START):
            continue
        p = fit(rest, family)
        for o in obs:
            if o.source == s:
                pred = predict_observation(o, p)
                rows.append((o, pred, math.log(pred / o.value)))
    rows.sort(key=lambda r: r[0].id)
    return Validation(family, tuple(rows))


def _quantile(xs: list[float], q: float) -> float:
    """The q-quantile of xs (linear interpolation between order statistics)."""
    s = sorted(xs)
    if not s:
        return math.nan
    k = (len(s) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def band(family: str, kinds=FITTED_KINDS) -> float | None:
    """The family's validated error: the 90th percentile of ``|ln(pred / published)|`` over its
    out-of-source predictions of ``kinds``; None when the family has fewer than
    :data:`MIN_SOURCES` sources or no out-of-source prediction of those kinds. A prediction
    ``p`` then reads ``[p · e^-band, p · e^band]``."""
    if len({o.source for o in family_observations(family)}) < MIN_SOURCES:
        return None
    errs = validation(family).errors(kinds)
    return _quantile(errs, BAND_QUANTILE) if errs else None


def summary():
    """Per family: GPUs, sources, calibration points, fitted parameters, and the out-of-source
    error (median, 90th percentile = the band, max) over the fitted kinds.
    → DataFrame, one row per family; errors as fractions (e^x − 1)."""
    import pandas as pd

    rows = []
    for f in families():
        obs = family_observations(f)
        p = calibrated(f)
        v = validation(f)
        e = v.errors()
        b = band(f)
        rows.append({"family": f, "gpus": ", ".join(sorted({o.gpu for o in obs})),
                     "sources": len({o.source for o in obs}),
                     "calibration_points": sum(1 for o in obs if o.kind in FITTED_KINDS),
                     "hbm_efficiency": p.hbm_efficiency, "flop_efficiency": p.flop_efficiency,
                     "layer_overhead_us": p.layer_overhead_us,
                     "validated_points": len(e),
                     "error_median": math.expm1(_quantile(e, 0.5)) if e else math.nan,
                     "error_band": math.expm1(b) if b is not None else math.nan,
                     "error_max": math.expm1(max(e)) if e else math.nan})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the committed fit


def input_hashes() -> dict[str, str]:
    """sha256 of the bytes of every file of :data:`FIT_INPUTS` (under ``$K3LAB_DATA`` if set)."""
    import hashlib

    from ..paths import data_dir

    out = {}
    for rel in FIT_INPUTS:
        p = data_dir() / rel
        if not p.exists():
            raise data.DataError(f"data/{rel}: file missing (the serving model's fit needs it)")
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def fit_document(date: str, command: str) -> dict:
    """The content of ``data/serving_fit.yaml``: every family's parameters, band and
    out-of-source predictions, the observations, and the input hashes."""
    import scipy

    fams = {}
    for f in families():
        p = calibrated(f)
        b = band(f)
        obs = family_observations(f)
        fams[f] = {"params": {k: round(getattr(p, k), 9) for k in FamilyParams.NAMES},
                   "band_log": None if b is None else round(b, 9),
                   "sources": len({o.source for o in obs}),
                   "calibration_points": sum(1 for o in obs if o.kind in FITTED_KINDS),
                   "validation": [{"id": o.id, "source": o.source, "gpu": o.gpu, "kind": o.kind,
                                   "published": o.value, "predicted_out_of_source": round(pred, 6),
                                   "log_error": round(e, 9)} for o, pred, e in validation(f).rows]}
    obs = [{"id": o.id, "source": o.source, "family": o.family, "gpu": o.gpu, "engine": o.engine,
            "layout": o.deployment.label, "input_len": o.workload.input_len, "output_len": o.workload.output_len,
            "concurrency": o.workload.concurrency, "spec": o.spec.algorithm, "accept_len": o.spec.accept_len,
            "kind": o.kind, "value": o.value, "normalisation": o.normalisation,
            "spans_nodes": o.deployment.tp_nodes > 1 or (o.deployment.pp > 1 and o.deployment.tp * o.deployment.pp
                                                          > o.deployment.gpus_per_node)} for o in observations()]
    return {"generated": {"date": date, "command": command, "model_version": MODEL_VERSION,
                          "scipy": scipy.__version__},
            "inputs": input_hashes(), "families": fams, "observations": obs,
            "aiconfigurator": aiconfigurator_rows()}


#: GPUs aiconfigurator has measured kernel data for (its "silicon" mode)
AIC_GPUS = ("b200", "b300")


def aiconfigurator_rows(progress: bool = True) -> list[dict]:
    """NVIDIA aiconfigurator (silicon mode: kernel timings measured on B200/B300 with sglang)
    at the workload of every B200/B300 observation, beside k3lab's fitted model and the
    published value. DCP, EP and DP attention are not modelled by the tool: those rows run
    plain TP and say so. Rows: id, kind, published, k3lab, aiconfigurator, note."""
    from tqdm.auto import tqdm

    from .. import crosscheck

    obs = [o for o in observations() if o.gpu in AIC_GPUS]
    rows = []
    for o in tqdm(obs, desc="aiconfigurator", disable=not progress):
        d, w = o.deployment, o.workload
        notes = []
        if d.dcp > 1 or d.ep:
            notes.append("run without " + " and ".join(x for x, on in (("DCP", d.dcp > 1), ("EP", d.ep)) if on)
                         + " (not modelled by the tool)")
        kw = {"nextn": 7, "accept_len": o.spec.accept_len} if o.spec.on else {}
        try:
            r = crosscheck.throughput(d.gpu, d.num_gpus, d.tp, d.pp, concurrency=w.concurrency, isl=w.input_len,
                                      osl=w.output_len, **kw)
            aic = {"output_tok_s": r.tok_s, "tpot_ms": r.tpot_ms, "itl_ms": r.tpot_ms, "ttft_ms": r.ttft_ms}[o.kind]
            if o.kind == "itl_ms":
                notes.append("the tool's TPOT (it has no ITL)")
        except ValueError as e:
            aic = None
            notes.append(f"no estimate: {str(e).splitlines()[0][:160]}")
        rows.append({"id": o.id, "kind": o.kind, "published": o.value,
                     "k3lab": round(predict_observation(o, calibrated(o.family)), 6),
                     "aiconfigurator": None if aic is None else round(float(aic), 6), "note": "; ".join(notes)})
    return rows


def write_fit(path, date: str, command: str) -> None:
    """Write :func:`fit_document` as YAML to ``path`` (atomically)."""
    import yaml

    from .. import io

    text = ("# The serving model's fit (k3lab.serving.calibration), generated by `make serving-fit`.\n"
            "# Do not edit: regenerate when an input file changes (k3lab refuses a stale fit).\n"
            + yaml.safe_dump(fit_document(date, command), sort_keys=False, allow_unicode=True, width=120))
    io.write_text(path, text)


@data.cached
def _fitted_doc():
    doc = data.load("serving_fit")
    if doc.generated.get("model_version") != MODEL_VERSION:
        raise data.DataError(f"data/serving_fit.yaml: made by serving model version "
                             f"{doc.generated.get('model_version')!r}, this code is {MODEL_VERSION!r}; run `make serving-fit`")
    now = input_hashes()
    stale = [k for k in FIT_INPUTS if doc.inputs.get(k) != now[k]]
    # a changed input that is broken says what is wrong with it (its own file and field) first
    by_file = {f: name for name, (f, _) in data.SCHEMAS.items()}
    for k in stale:
        if k in by_file:
            data.load(by_file[k])
        elif k.startswith("model/") and k.endswith(".json"):
            from ..specs import MODEL_FILES, load_model

            load_model(next(m for m, f in MODEL_FILES.items() if f == k.split("/", 1)[1]))
    if stale:
        raise data.DataError(f"data/serving_fit.yaml: stale, data/{stale[0]} changed since the fit; run `make serving-fit`")
    return doc


def fitted(family: str) -> tuple[FamilyParams, float | None]:
    """(parameters, band) of ``family`` from the committed fit; DataError when it is stale
    or the family has no fit."""
    doc = _fitted_doc()
    if family not in doc.families:
        raise data.DataError(f"data/serving_fit.yaml: no fit for family {family!r} "
                             f"(fitted: {', '.join(doc.families) or 'none'})")
    f = doc.families[family]
    return FamilyParams(family, f.params.hbm_efficiency, f.params.flop_efficiency, f.params.layer_overhead_us), f.band_log


def fitted_families() -> list[str]:
    """Families with a validated band in the committed fit."""
    return [k for k, f in _fitted_doc().families.items() if f.band_log is not None]


def fitted_observations():
    """The observations the committed fit was made from (rows of serving_fit.yaml)."""
    return _fitted_doc().observations


def fitted_aiconfigurator():
    """The committed rows of NVIDIA aiconfigurator beside the model on the same public NVIDIA
    figures (:func:`aiconfigurator_rows`, rows of serving_fit.yaml)."""
    return _fitted_doc().aiconfigurator


def fitted_validation(family: str):
    """The committed out-of-source predictions of a family (rows of serving_fit.yaml)."""
    return _fitted_doc().families[family].validation
