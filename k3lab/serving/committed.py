"""The committed fit: what ``make serving-fit`` writes from :mod:`k3lab.serving.calibration`, with
the sha256 of what it read of every input (parsed values; and of the bytes, to check fast), in two files — ``data/serving_fit.yaml`` (every family's parameters,
bands per metric with their coverage, the observations, the field's DSpark acceptance lengths:
what ``predict``, ``compare`` and the findings read, kept small so that ``predict`` stays under a
second) and ``data/serving_validation.yaml`` (the out-of-sample predictions of every split,
aiconfigurator beside the model, the held-out repository: what the notebooks and tests read). :func:`fitted` refuses the file, in one line, when an input changed since
or another model version made it (``tests/test_serving_fit.py`` refits and compares).
"""

from __future__ import annotations

import math

from .. import data
from ..schemas.serving import FIT_DIGEST, fit_digest
from .calibration import (calibrated, covering_band, families, family_observations, free_parameters,
                          predict_observation, validation)
from .model import FamilyParams, spans_nodes
from .observations import METRICS, observations

#: files the fit depends on (relative to data/); what it read of each is recorded in serving_fit.yaml
FIT_INPUTS = ("public_measurements.yaml", "serving_model.yaml", "hardware.yaml", "sglang_sharding.yaml",
              "model/kimi_k3_config.json", "model/storage_overrides.yaml", "model/kimi_k3_dspark_draft.yaml")
#: bumped whenever the model's equations change (the refit test catches a forgotten bump)
MODEL_VERSION = "4"


def _input_path(rel: str):
    from ..paths import data_dir

    p = data_dir() / rel
    if not p.exists():
        raise data.DataError(f"data/{rel}: file missing (the serving model's fit needs it)")
    return p


def parsed_digest(rel: str) -> str:
    """sha256 of what the fit reads of ``data/<rel>``: its parsed values (YAML or JSON) in one
    canonical form (JSON, keys sorted), so a comment, a blank line or another quoting style
    changes nothing, and any value does (a note or source included). DataError naming the file
    when it does not parse."""
    import hashlib
    import json

    from .. import readers

    p, where = _input_path(rel), f"data/{rel}"
    doc = readers.read_json(p, where) if rel.endswith(".json") else readers.read_yaml(p, where)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def bytes_digest(rel: str) -> str:
    """sha256 of the bytes of ``data/<rel>``: the fast check (same bytes, same values: no parse,
    which of public_measurements.yaml takes most of a second)."""
    import hashlib

    return hashlib.sha256(_input_path(rel).read_bytes()).hexdigest()


def input_hashes() -> dict[str, str]:
    """:func:`parsed_digest` of every file of :data:`FIT_INPUTS` (under ``$K3LAB_DATA`` if set)."""
    return {rel: parsed_digest(rel) for rel in FIT_INPUTS}


def input_bytes() -> dict[str, str]:
    """:func:`bytes_digest` of every file of :data:`FIT_INPUTS`."""
    return {rel: bytes_digest(rel) for rel in FIT_INPUTS}


def changed_inputs(recorded: dict[str, str], recorded_bytes: dict[str, str]) -> list[str]:
    """The files of :data:`FIT_INPUTS` whose values differ from what the fit read (``recorded``:
    its parsed digests); a file with the recorded bytes is not parsed again."""
    return [k for k in FIT_INPUTS
            if bytes_digest(k) != recorded_bytes.get(k) and parsed_digest(k) != recorded.get(k)]


def _r(x: float, nd: int = 9) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, nd)


def fit_document(date: str, command: str) -> tuple[dict, dict]:
    """The contents of ``data/serving_fit.yaml`` (what ``predict`` reads: every family's parameters,
    bands per metric with their coverage, the observations, the acceptance lengths, the input
    hashes) and ``data/serving_validation.yaml`` (what the notebooks and tests read: every family's
    out-of-sample predictions, aiconfigurator beside the model, the held-out repository)."""
    import scipy

    from .observations import measured_accept_lengths

    fams, rows = {}, {}
    for f in families():
        p = calibrated(f)
        obs = family_observations(f)
        v = validation(f)
        bands = {}
        for m in METRICS:
            mb = covering_band(f, m)
            bands[m] = {"band_log": _r(mb.band_log), "validated": mb.validated, "why_not": mb.why_not,
                        "points": dict(mb.points), "coverage": {s: _r(c, 6) for s, c in mb.coverage.items()}}
        fams[f] = {"params": {k: round(getattr(p, k), 9) for k in FamilyParams.NAMES},
                   "fitted_parameters": list(free_parameters(obs)),
                   "sources": len({o.source for o in obs}),
                   "calibration_points": len(obs),
                   "time_split_date": v.split_date,
                   "bands": bands}
        rows[f] = [{"id": o.id, "source": o.source, "gpu": o.gpu, "kind": o.kind, "metric": o.metric,
                    "split": s, "published": o.value, "predicted_out_of_sample": round(pred, 9),
                    "log_error": round(e, 9), "extrapolated": v.is_extrapolated(o, s)} for o, pred, e, s in v.rows]
    from .calibration import _admitted
    from .engines import regime

    obs = [{"id": o.id, "source": o.source, "origin": o.origin, "date": o.date, "family": o.family, "gpu": o.gpu,
            "engine": o.engine, "harness": o.harness_name, "regime": regime(o.engine_settings, o.harness),
            "admitted": _admitted(o), "kv_dtype": o.kv_dtype, "tp": o.deployment.tp, "pp": o.deployment.pp,
            "dcp": o.deployment.dcp, "ep": bool(o.deployment.ep), "block": o.spec.block, "build": o.build, "layout": o.deployment.label, "variants": list(o.variants),
            "prefill_attention": o.prefill_attention, "input_len": o.workload.input_len,
            "output_len": o.workload.output_len, "concurrency": o.workload.concurrency, "spec": o.spec.algorithm,
            "accept_len": o.spec.accept_len, "kind": o.kind, "metric": o.metric, "value": o.value,
            "fitted": round(predict_observation(o, calibrated(o.family)), 6), "normalisation": o.normalisation,
            "spans_nodes": spans_nodes(o.deployment)} for o in observations()]
    gen = {"date": date, "command": command, "model_version": MODEL_VERSION, "scipy": scipy.__version__}
    ins, raw = input_hashes(), input_bytes()
    fit = {"generated": gen, "inputs": ins, "input_bytes": raw, "families": fams, "observations": obs,
           "accept_lengths": [{"id": i, "family": f, "value": v} for i, f, v in measured_accept_lengths()]}
    val = {"generated": gen, "inputs": ins, "input_bytes": raw, "validation": rows,
           "aiconfigurator": aiconfigurator_rows(), "held_out": held_out_rows()}
    return seal(fit), seal(val)


def seal(doc: dict) -> dict:
    """``doc`` with its seal (``generated.content_sha256``, :func:`fit_digest` of everything
    else): a hand edit of any value, its provenance included, shows."""
    gen = {k: v for k, v in doc["generated"].items() if k != FIT_DIGEST}
    return {**doc, "generated": {**gen, FIT_DIGEST: fit_digest(doc)}}


#: where the held-out repository's figures are predicted from when their own family has no fit: the
#: nearest fitted family of the same vendor's stack (its efficiencies on the held-out GPU's own peaks)
HELD_OUT_PROXY = {"nvidia-hopper": "nvidia-blackwell"}


def held_out_rows() -> list[dict]:
    """The model on the repository found last and kept out of the fit
    (:func:`k3lab.serving.observations.held_out`), each figure predicted with its family's fit or,
    where its family has none, :data:`HELD_OUT_PROXY`'s → rows of id, family, params, kind, metric,
    published, predicted, log_error."""
    from .observations import held_out

    out = []
    for o in held_out():
        fam = o.family if o.family in families() else HELD_OUT_PROXY.get(o.family)
        if fam is None:
            continue
        p = calibrated(fam)
        pred = predict_observation(o, FamilyParams(o.family, **{k: getattr(p, k) for k in FamilyParams.NAMES}))
        out.append({"id": o.id, "family": o.family, "params": fam, "kind": o.kind, "metric": o.metric,
                    "published": o.value, "predicted": round(pred, 9), "log_error": round(math.log(pred / o.value), 9)})
    return out


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
    """Write :func:`fit_document` as YAML to ``path`` and ``serving_validation.yaml`` beside it
    (atomically each), after checking that the fit reads back as the same document under its seal
    (ValueError otherwise; nothing is written)."""
    import yaml

    from .. import io, readers

    fit, val = fit_document(date, command)
    texts = []
    for p, doc, what in ((path, fit, "fit"), (path.parent / "serving_validation.yaml", val, "validation")):
        texts.append((p, f"# The serving model's {what} (k3lab.serving.calibration), generated by `make serving-fit`.\n"
                         "# Do not edit: regenerate when an input file changes (k3lab refuses a stale fit and one "
                         "edited by hand).\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)))
    for (p, text), doc in zip(texts, (fit, val)):
        back = readers.parse_yaml(text, f"{p.name} about to be written")
        if back != doc or fit_digest(back) != doc["generated"][FIT_DIGEST]:
            raise ValueError(f"{p.name} does not read back as written (a value YAML cannot carry exactly); "
                             f"nothing written")
    for p, text in texts:
        io.write_text(p, text)


@data.cached
def _fitted_doc():
    return _checked("serving_fit")


@data.cached
def _validation_doc():
    return _checked("serving_validation")


def _checked(name: str):
    """The committed document ``name`` (``serving_fit`` or ``serving_validation``), refused in one
    line when another model version made it or an input changed since."""
    doc = data.load(name)
    fname = data.SCHEMAS[name][0]
    if doc.generated.get("model_version") != MODEL_VERSION:
        raise data.DataError(f"data/{fname}: made by serving model version "
                             f"{doc.generated.get('model_version')!r}, this code is {MODEL_VERSION!r}; run `make serving-fit`")
    stale = changed_inputs(doc.inputs, doc.input_bytes)
    # a changed input that is broken says what is wrong with it (its own file and field) first
    by_file = {f: name for name, (f, _) in data.SCHEMAS.items()}
    for k in stale:
        if k in by_file:
            data.load(by_file[k])
        elif k.startswith("model/") and k.endswith(".json"):
            from ..specs import MODEL_FILES, load_model

            load_model(next(m for m, f in MODEL_FILES.items() if f == k.split("/", 1)[1]))
    if stale:
        raise data.DataError(f"data/{fname}: stale, data/{stale[0]} changed since the fit; run `make serving-fit`")
    return doc


def fitted(family: str) -> tuple[FamilyParams, dict]:
    """(parameters, bands) of ``family`` from the committed fit: ``bands`` maps each metric of
    :data:`METRICS` to its log band, or None where the metric is not validated. DataError when
    the fit is stale or the family has no fit."""
    doc = _fitted_doc()
    if family not in doc.families:
        raise data.DataError(f"data/serving_fit.yaml: no fit for family {family!r} "
                             f"(fitted: {', '.join(doc.families) or 'none'})")
    f = doc.families[family]
    bands = {m: (b.band_log if b.validated else None) for m, b in f.bands.items()}
    return FamilyParams(family, **{k: getattr(f.params, k) for k in FamilyParams.NAMES}), bands


def fitted_bands(family: str) -> dict:
    """The committed :class:`MetricBand`-like records of a family (band, validated, why not,
    points and coverage per split), per metric."""
    return _fitted_doc().families[family].bands


def _held_out(family: str, metric: str) -> list:
    """The committed validation rows a band rests on: the family's leave-one-repository-out
    predictions of ``metric``, each inside its refit's domain (no extrapolation)."""
    from .calibration import SPLITS

    return [r for r in fitted_validation(family)
            if r.metric == metric and r.split == SPLITS[0] and not r.extrapolated]


def band_evidence(family: str, metric: str = "decode") -> dict:
    """What a family's band of ``metric`` rests on (why it is as wide as it is): ``factor`` (the
    band as a factor, None when the metric is not validated), ``why_not``, ``repositories`` (the
    origins whose figures of the metric the fit saw), ``points`` (the leave-one-repository-out
    predictions inside each refit's domain) and ``median_error`` (their median error as a factor,
    e^median|log error|; None without points). Read from the committed fit and validation."""
    from .calibration import quantile

    b = fitted_bands(family)[metric]
    errs = [abs(r.log_error) for r in _held_out(family, metric)]
    repos = sorted({o.origin for o in fitted_observations() if o.family == family and o.metric == metric})
    return {"factor": math.exp(b.band_log) if b.validated else None, "why_not": b.why_not, "repositories": repos,
            "points": len(errs), "median_error": math.exp(quantile(errs, 0.5)) if errs else None}


def own_runs_reading(gpu: str) -> tuple[float | None, int]:
    """(median of fit / published, runs): how the committed fit reads the GPU's own public decode
    runs without speculative decoding (output tok/s; above 1 it reads them fast). In sample — the fit
    saw these runs — so it is no validation (that is :func:`band_evidence`'s, whose refits did not see
    a run's repository); it says whether the fit used here leans on that GPU. (None, 0) without runs."""
    from .calibration import quantile

    r = [o.fitted / o.value for o in fitted_observations()
         if o.gpu == gpu and o.kind == "output_tok_s" and o.spec == "none" and o.value > 0]
    return (quantile(r, 0.5) if r else None), len(r)


def blind_reading(gpu: str) -> tuple[int, int, int, float | None]:
    """(too fast, figures, repositories, median miss): how many of the GPU's public decode figures the
    refits that had not seen their repository (:func:`_held_out`'s rows, the ones
    :func:`band_evidence` counts) predicted faster than measured — more output tok/s, or a
    shorter TPOT — against how many there are, how many repositories those figures come from, and
    their median miss as a factor (e^median|log error|). Which way the model errs where it has not
    looked; with one repository, what a fit that never saw that GPU's runs makes of them (it knew the
    GPU only from its family's others). (0, 0, 0, None) without such figures."""
    from .calibration import quantile
    from .observations import family_of

    origin = {o.id: o.origin for o in fitted_observations()}
    rows = [r for r in _held_out(family_of(gpu), "decode") if r.gpu == gpu]
    if not rows:
        return 0, 0, 0, None
    fast = sum(1 for r in rows if (r.log_error > 0) == (r.kind == "output_tok_s"))
    return (fast, len(rows), len({origin[r.id] for r in rows}),
            math.exp(quantile([abs(r.log_error) for r in rows], 0.5)))


def fitted_families() -> list[str]:
    """Families with a fit in the committed file (each metric validated or not: :func:`fitted`)."""
    return list(_fitted_doc().families)


def fitted_accept_lengths():
    """The DSpark acceptance lengths public runs measured, as the committed fit recorded them
    (:func:`k3lab.serving.observations.measured_accept_lengths`)."""
    return _fitted_doc().accept_lengths


def fitted_observations():
    """The observations the committed fit was made from (rows of serving_fit.yaml)."""
    return _fitted_doc().observations


def fitted_aiconfigurator():
    """The committed rows of NVIDIA aiconfigurator beside the model on the same public NVIDIA
    figures (:func:`aiconfigurator_rows`, rows of serving_validation.yaml)."""
    return _validation_doc().aiconfigurator


def fitted_validation(family: str):
    """The committed out-of-sample predictions of a family (rows of serving_validation.yaml)."""
    return _validation_doc().validation.get(family, [])


def fitted_held_out():
    """The committed predictions of the held-out repository's figures (:func:`held_out_rows`)."""
    return _validation_doc().held_out
