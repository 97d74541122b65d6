"""What the field's figures and tables take from the serving model and its committed fit
(no claim is judged here: :mod:`k3lab.findings.field` does that). Curves against concurrency:
output tok/s per GPU (:func:`model_series`, for :func:`k3lab.findings.field.curve_panels`), output
tok/s per deployment for the throughput figure (:func:`serving_curves`), TTFT / TPOT with their
bands for the latency figure (:func:`latency_rows`); and the fit's own tables (calibration,
coverage, parameters, aiconfigurator beside it, the validation figure's inputs).

Every curve is :func:`k3lab.serving.predict.curve`: the concurrencies a sweep tries that
sglang's pools admit, the last one the admission limit itself. A band is the metric's
validated error (:meth:`k3lab.serving.predict.Prediction.interval`); NaN / None where the
metric is not validated for the GPU's family.
"""

from __future__ import annotations

import math

from ..figures import deployment_color
from ..serving import article as A
from ..serving import calibration, committed
from ..throughput import article_table, article_workload


def model_series(cfg, dep, I, O, spec, variants, label, dashed=False) -> dict:
    """The model's output tok/s per GPU against concurrency for ``dep`` at ``I`` in / ``O`` out
    tokens → a series of :func:`k3lab.figures.field.curves_figure`: label, colour (the
    deployment's), dashed, points [(concurrency, value, low, high)], low / high NaN where not
    validated or where the question lies outside the validated domain (a band says nothing there: the
    16×B200 spans nodes, as the latency figure draws it)."""
    from ..serving.predict import curve

    pts = [(p.concurrency, p.output_tok_s / dep.num_gpus,
            *((p.interval("output_tok_s", 1 / dep.num_gpus) if p.in_domain else None) or (math.nan, math.nan)))
           for p in curve(cfg, dep, I, O, spec, variants)]
    return {"label": label, "color": deployment_color(dep.label), "dashed": dashed, "points": pts}


def _article_curves(kv_dtype: str = "bf16"):
    """(Deployment, predictions) of the article's three table rows at its 1,024 / 400 workload,
    no DSpark, with the article's switches (K3_OPT on the MI355X): the CLI's defaults."""
    from ..serving.predict import curve
    from ..specs import load_model

    cfg = load_model("kimi-k3")
    w = article_workload()
    return [(row.deployment, curve(cfg, row.deployment, w["input_len_tokens"], w["output_len_tokens"],
                                   variants=A.variants_for(row.deployment), kv_dtype=kv_dtype))
            for row in article_table().values()]


def serving_curves(label: str = "serving model (no DSpark)", kv_dtype: str = "bf16") -> list[tuple]:
    """The serving model's output tok/s (whole deployment) against concurrency for the article's
    three deployments, for :func:`k3lab.figures.throughput.throughput_figure`'s ``serving`` →
    list of (label, deployment label, [(concurrency, tok/s, low, high)]); low and high NaN where
    the family's decode speed is not validated."""
    out = []
    for dep, preds in _article_curves(kv_dtype):
        pts = [(p.concurrency, p.output_tok_s, *(p.interval("output_tok_s") or (math.nan, math.nan))) for p in preds]
        out.append((label, dep.label, pts))
    return out


def latency_rows(kv_dtype: str = "bf16") -> list[dict]:
    """TTFT and TPOT (ms) of the serving model against concurrency for the article's three
    deployments at its 1,024 / 400 workload (no DSpark; K3_OPT on the MI355X), for
    :func:`k3lab.figures.field.latency_figure` → one dict per (layout, concurrency): layout,
    concurrency, admitted (the requests the pools hold at once, whole deployment), ttft_ms,
    ttft_ms_low, ttft_ms_high, ttft_in_domain, tpot_ms, tpot_ms_low, tpot_ms_high,
    tpot_in_domain; a low / high is None where the metric is not validated for the family."""
    rows = []
    for dep, preds in _article_curves(kv_dtype):
        for p in preds:
            r = {"layout": dep.label, "concurrency": p.concurrency, "admitted": p.admitted}
            for kind, gaps in (("ttft_ms", p.ttft_outside), ("tpot_ms", p.outside)):
                iv = p.interval(kind)
                r.update({kind: getattr(p, kind), f"{kind}_low": None if iv is None else iv[0],
                          f"{kind}_high": None if iv is None else iv[1], f"{kind[:4]}_in_domain": not gaps})
            rows.append(r)
    return rows


# --------------------------------------------------------------------------- the committed fit's tables


def validation_inputs():
    """(out-of-sample rows by family, observations, bands by family and metric) of the committed
    fit, for the figures: rows of every split (``split``), bands as :func:`committed.fitted`
    gives them (None where a metric is not validated)."""
    fams = committed.fitted_families()
    rows = {f: list(committed.fitted_validation(f)) for f in fams}
    bands = {f: committed.fitted(f)[1] for f in fams}
    return rows, list(committed.fitted_observations()), bands


def aiconfigurator_table():
    """The serving model and NVIDIA aiconfigurator (silicon mode) on the same public B300
    figures → DataFrame: id, kind, published, k3lab (the fit that left the figure's own source
    out, so neither model saw the figure), aiconfigurator (ms, or output tok/s of the whole
    deployment), each one's error (model ÷ published − 1), note."""
    import pandas as pd

    oos = {r.id: r.predicted_out_of_sample for f in committed.fitted_families() for r in committed.fitted_validation(f)
           if r.split == calibration.SPLITS[0]}
    rows = []
    for r in committed.fitted_aiconfigurator():
        k = oos.get(r.id)
        if k is None:
            continue
        rows.append({"id": r.id, "kind": r.kind, "published": r.published, "k3lab": k,
                     "aiconfigurator": r.aiconfigurator, "k3lab_error": k / r.published - 1,
                     "aiconfigurator_error": None if r.aiconfigurator is None else r.aiconfigurator / r.published - 1,
                     "note": r.note})
    return pd.DataFrame(rows)


def calibration_table():
    """Per family and metric (decode, TTFT, DSpark): GPUs, sources, public figures, the band with
    its coverage on each out-of-sample split beside the nominal 90%, the median error, and
    whether the metric is validated → DataFrame (from the committed fit)."""
    import pandas as pd

    rows = []
    obs = list(committed.fitted_observations())
    for f in committed.fitted_families():
        val = list(committed.fitted_validation(f))
        for m, b in committed.fitted_bands(f).items():
            fo = [o for o in obs if o.family == f and o.metric == m]
            errs = sorted(abs(r.log_error) for r in val if r.metric == m)
            rows.append({"family": f, "metric": m, "GPUs": ", ".join(sorted({o.gpu for o in fo})) or "—",
                         "repositories": len({o.origin for o in fo}), "engines": ", ".join(sorted({o.engine for o in fo})),
                         "public figures": len(fo),
                         "band (±)": None if b.band_log is None else math.expm1(b.band_log),
                         **{f"coverage, {s.replace('_', ' ').replace('leave one ', 'leave-one-').replace(' out', '-out')}":
                            b.coverage[s] for s in calibration.SPLITS},
                         "nominal": calibration.COVERAGE,
                         "median error": math.expm1(errs[len(errs) // 2]) if errs else None,
                         "validated": "yes" if b.validated else f"no: {b.why_not}"})
    return pd.DataFrame(rows)


def coverage_rows() -> list[dict]:
    """Per family and metric of the committed fit: band factor (NaN without one), validated, and
    per split the points and the share inside the band (for :func:`k3lab.figures.field.coverage_figure`)."""
    out = []
    for f in committed.fitted_families():
        for m, b in committed.fitted_bands(f).items():
            r = {"family": f, "metric": m, "validated": b.validated,
                 "band_factor": math.nan if b.band_log is None else math.exp(b.band_log)}
            for split in calibration.SPLITS:
                c = b.coverage[split]
                r[f"coverage_{split}"] = math.nan if c is None else c
                r[f"points_{split}"] = b.points[split]
            out.append(r)
    return out


def build_table():
    """Does the engine build matter? Per family, engine and month of the figure: points, and the
    median signed out-of-source error (``published ÷ model``: above 1, the runs of that build were
    slower than the model fitted on the other sources) → DataFrame."""
    import pandas as pd

    obs = {o.id: o for o in committed.fitted_observations()}
    rows = []
    for f in committed.fitted_families():
        for r in committed.fitted_validation(f):
            if r.split != calibration.SPLITS[0]:
                continue
            o = obs[r.id]
            rows.append({"family": f, "engine": o.engine, "month": (o.date or "undated")[:7], "metric": r.metric,
                         "published_over_model": math.exp(-r.log_error)})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    g = df.groupby(["family", "engine", "month"], sort=True)["published_over_model"]
    return pd.DataFrame({"points": g.size(), "median published ÷ model": g.median(),
                         "lowest": g.min(), "highest": g.max()}).reset_index()


def parameters_table():
    """Per family: the fitted parameters (:class:`k3lab.serving.model.FamilyParams`) and which
    were fitted (the rest tied) → DataFrame."""
    import pandas as pd

    rows = []
    for f in committed.fitted_families():
        p, _ = committed.fitted(f)
        rows.append({"family": f, "HBM efficiency (weights)": p.hbm_efficiency,
                     "GEMM FLOP efficiency": p.flop_efficiency, "µs per layer per pass": p.layer_overhead_us,
                     "KV read efficiency (decode attention)": p.kv_efficiency,
                     "prefill attention efficiency": p.prefill_attention_efficiency,
                     "Triton-fallback prefill attention efficiency": p.fallback_attention_efficiency,
                     "ms per request": p.request_overhead_ms, "µs per collective across nodes": p.scale_out_us,
                     "µs per decode token per layer": p.token_us, "µs per verify row per layer": p.verify_row_us})
    return pd.DataFrame(rows)


def score_table():
    """The predictions on record (``data/predictions/``) against the public figures that answer
    them (:func:`k3lab.serving.score.score_rows`) → (one line for the reader, DataFrame)."""
    from ..serving import score

    t, s = score.score_rows(), score.summary()
    line = (f"{s['predictions']} predictions on record (made {', '.join(s['made']) or 'never'}); "
            f"{s['figures']} public figure(s) answer them"
            + (f": inside the band {s['inside']} of {s['with_band']} with a band, median error x{s['median_error']:.2f}"
               if s["figures"] else ": nothing to score yet"))
    return line, t


def held_out_table():
    """The repository found last, kept out of the fit (``data/serving_validation.yaml``
    ``held_out``), per layout and output: figures, the parameters that predicted them, the median
    and the range of predicted ÷ published → DataFrame."""
    import pandas as pd

    from ..serving.observations import held_out

    obs = {o.id: o for o in held_out()}
    rows = [{"layout": obs[r.id].deployment.label, "engine": obs[r.id].engine, "kind": r.kind, "params": r.params,
             "ratio": math.exp(r.log_error)} for r in committed.fitted_held_out() if r.id in obs]
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    g = df.groupby(["layout", "engine", "kind", "params"], sort=True)["ratio"]
    return pd.DataFrame({"figures": g.size(), "median predicted ÷ published": g.median(),
                         "lowest": g.min(), "highest": g.max()}).reset_index()


def write_serving_tables(out):
    """Write notebook 04's serving-model tables a reader opens as CSV (the fitted parameters, the
    builds, the score of the predictions on record, the held-out repository) into ``out`` →
    (:func:`score_table`'s line, :func:`held_out_table`)."""
    from .. import io

    line, score = score_table()
    held = held_out_table()
    for name, df in (("serving_model_parameters", parameters_table()), ("serving_model_builds", build_table()),
                     ("serving_model_score", score), ("serving_model_held_out", held)):
        io.write_csv(df, out / f"{name}.csv")
    return line, held
