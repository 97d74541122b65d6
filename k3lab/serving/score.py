"""Predictions on record and their score: what the serving model said, before anyone measured it.

``data/predictions/<date>-model-v<N>.yaml`` holds dated predictions (model version, commit, the
fit's sha256, each output with its band) for the deployments the study prices that no public run
has measured (:func:`questions`): the article's three configurations at its 1,024 / 400 workload,
8×MI355X and 8×B300 at c16–c128 with and without DSpark, 16×B200 as TP16 and TP8×PP2. A file is
written once (:func:`write_record`, refused over an existing one) and never edited; a new model
version writes a new file. ``python -m k3lab score`` matches every prediction on record against
the public figures now in ``data/public_measurements.yaml`` (:func:`score_rows`): a prediction is
scored, never refitted away.

:func:`held_out_errors` measures the model on the repository found last, kept out of the fit
(``why_kind: held_out``), as the committed fit's closing check.
"""

from __future__ import annotations

import hashlib
import math

from .. import data
from ..specs import load_model, parse_layout
from . import committed
from .engines import Engine, Harness
from .model import NO_SPEC, Spec, Workload

#: (layouts with their sglang switches, workloads, concurrencies, DSpark too) the study prices
#: and no public run has measured; every question is asked of sglang under bench_serving
PLAN = (
    # the article's three configurations at its own workload (data/article_table.yaml)
    ((("8xmi355x tp8", ("aiter-k3-opt",)), ("8xb300 tp8 dcp8", ()), ("16xb200 tp16", ())),
     ((1024, 400),), (16, 32, 64, 128), False),
    # 8×MI355X and 8×B300, one node each, with and without DSpark
    ((("8xmi355x tp8", ("aiter-k3-opt",)), ("8xb300 tp8", ())), ((1024, 400), (8192, 1024)), (16, 32, 64, 128), True),
    # 16×B200 on two nodes, both layouts that load Kimi K3
    ((("16xb200 tp16", ()), ("16xb200 tp8 pp2", ())), ((1024, 400), (8192, 1024)), (16, 32, 64, 128), False),
)
KINDS = ("output_tok_s", "tpot_ms", "ttft_ms")


def questions():
    """Every question on record → list of (id, why, Deployment, variants, Workload, Spec): DSpark
    at the GPU family's median measured acceptance length (:func:`k3lab.serving.field.accept_range`)."""
    from .field import accept_range
    from .observations import family_of

    out, seen = [], set()
    for layouts, works, concs, with_spec in PLAN:
        for label, variants in layouts:
            dep = parse_layout(label)
            specs = [NO_SPEC] + ([Spec("dspark", accept_range(family_of(dep.gpu))[0])] if with_spec else [])
            for (i, o) in works:
                for c in concs:
                    for s in specs:
                        qid = f"{label.replace(' ', '_')}_{i}_{o}_c{c}_{s.algorithm}"
                        if qid in seen:
                            continue
                        seen.add(qid)
                        why = "the article's configuration at its workload" if (i, o) == (1024, 400) and label in (
                            "8xmi355x tp8", "8xb300 tp8 dcp8", "16xb200 tp16") else "a deployment the study prices"
                        out.append((qid, why, dep, variants, Workload(i, o, c), s))
    return out


def record(date: str, commit: str, command: str) -> dict:
    """The document of a new recording: every :func:`questions` that no public figure answers yet
    (one that a public run already measured is no prediction), answered by ``predict`` on the
    committed fit; ``matched_at_record`` stays in each entry (empty) for a later score to tell new
    figures from old ones."""
    from ..paths import data_dir
    from .predict import predict

    cfg = load_model("kimi-k3")
    preds = []
    for qid, why, dep, variants, work, spec in questions():
        p = predict(cfg, dep, work, spec, variants)
        vals = {}
        for kind in KINDS:
            iv = p.interval(kind)
            inside = p.in_domain if kind != "ttft_ms" else p.ttft_in_domain
            vals[kind] = {"value": round(getattr(p, kind), 6), "low": None if iv is None else round(iv[0], 6),
                          "high": None if iv is None else round(iv[1], 6), "in_domain": bool(inside)}
        q = {"layout": _layout_text(dep), "variants": list(variants), "engine": "sglang",
             "arrival": "closed_loop", "lengths": "fixed", "input_len": work.input_len, "output_len": work.output_len,
             "concurrency": work.concurrency, "spec": spec.algorithm, "accept_len": float(spec.accept_len),
             "kv_dtype": "bf16"}
        seen = sorted({o.id for o in matches(q)})
        if seen:
            continue
        preds.append({"id": qid, "why": why, "question": q, "values": vals, "matched_at_record": seen})
    fit_sha = hashlib.sha256((data_dir() / "serving_fit.yaml").read_bytes()).hexdigest()
    return {"made": {"date": date, "model_version": committed.MODEL_VERSION, "commit": commit, "fit_sha256": fit_sha,
                     "command": command}, "predictions": preds}


def _layout_text(dep) -> str:
    """A deployment in the notation ``parse_layout`` reads back (``16xb200 tp8 pp2``)."""
    parts = [f"{dep.num_gpus}x{dep.gpu}", f"tp{dep.tp}"]
    parts += [f"pp{dep.pp}"] if dep.pp > 1 else []
    parts += [f"dcp{dep.dcp}"] if dep.dcp > 1 else []
    parts += ["ep"] if dep.ep else []
    return " ".join(parts)


def write_record(path, doc: dict) -> None:
    """Write a recording to ``path`` (YAML, atomically); refused when the file exists (a record is
    never edited: a new model writes a new file)."""
    import yaml

    from .. import io

    if path.exists():
        raise ValueError(f"{path.name}: predictions on record are never rewritten; record under a new date or version")
    text = ("# Predictions on record (k3lab.serving.score): dated, never edited. Scored by `python -m k3lab score`.\n"
            + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120))
    register(path, hashlib.sha256(text.encode()).hexdigest())  # first: a kill between leaves no unregistered file
    io.write_text(path, text)


def register(path, sha256: str) -> None:
    """Record ``sha256`` of the recording ``path`` in the registry beside it
    (:data:`~k3lab.schemas.serving.PREDICTION_SEALS`), which the loader checks every recording against."""
    import yaml

    from .. import io
    from ..schemas.serving import PREDICTION_SEALS

    seals = path.parent / PREDICTION_SEALS
    recorded = dict(data.read("prediction_seals", seals).recorded) if seals.exists() else {}
    recorded[path.name] = sha256
    io.write_text(seals, "# sha256 of each recording in data/predictions/ as `make record-predictions` wrote it "
                         "(k3lab.serving.score):\n# a recording edited since is refused. Never edited by hand.\n"
                  + yaml.safe_dump({"algorithm": "sha256", "recorded": dict(sorted(recorded.items()))}, sort_keys=False))


def on_record() -> list:
    """Every recording in ``data/predictions/`` (validated), oldest first. A recording the registry
    lists but the folder lacks is refused in one line (a prediction on record is never removed)."""
    from ..schemas.serving import PREDICTION_SEALS

    folder = data.data_dir() / data.PREDICTIONS_DIR
    if (folder / PREDICTION_SEALS).exists():
        missing = sorted(set(data.load("prediction_seals").recorded) - {p.name for p in folder.glob("*.yaml")})
        if missing:
            raise data.DataError(f"data/{data.PREDICTIONS_DIR}/{missing[0]}: listed in {PREDICTION_SEALS} but missing "
                                 "(predictions on record are never removed: restore it)")
    return [data.load(n) for n in sorted(k for k in data.SCHEMAS if k.startswith("predictions@"))]


def matches(q) -> list:
    """Public figures (rows of the committed fit) that answer question ``q`` (a
    :class:`~k3lab.schemas.serving.PredictedQuestion` or its dict): the same GPU, GPU count, TP, PP
    and DCP, engine, prompt and output lengths, concurrency and speculative setting."""
    g = q if isinstance(q, dict) else q.model_dump()
    dep = parse_layout(g["layout"])
    return [o for o in committed.fitted_observations()
            if o.gpu == dep.gpu and o.layout == dep.label
            and o.engine == g["engine"] and o.input_len == g["input_len"] and o.output_len == g["output_len"]
            and o.concurrency == g["concurrency"] and (o.spec != "none") == (g["spec"] != "none")
            and o.kind in KINDS]


def score_rows():
    """Every prediction on record against every public figure that answers it → DataFrame: made
    (date), model_version, prediction, kind, predicted, low, high, in_domain, figure, published,
    ratio (published ÷ predicted), inside (the band held; None where not validated), new (the figure
    did not match when the prediction was recorded)."""
    import pandas as pd

    rows = []
    for doc in on_record():
        for p in doc.predictions:
            for o in matches(p.question):
                v = p.values.get(o.kind)
                if v is None:
                    continue
                inside = None if v.low is None else bool(v.low <= o.value <= v.high)
                rows.append({"made": doc.made["date"], "model_version": doc.made["model_version"], "prediction": p.id,
                             "kind": o.kind, "predicted": v.value, "low": v.low, "high": v.high,
                             "in_domain": v.in_domain, "figure": o.id, "published": o.value,
                             "ratio": o.value / v.value, "inside": inside, "new": o.id not in p.matched_at_record})
    cols = ["made", "model_version", "prediction", "kind", "predicted", "low", "high", "in_domain", "figure",
            "published", "ratio", "inside", "new"]
    return pd.DataFrame(rows, columns=cols)


def summary() -> dict:
    """Counts for the score table's header: recordings, predictions, scored figures, inside the band,
    median |log error| as a factor."""
    t = score_rows()
    docs = on_record()
    scored = t[t.inside.notna()] if len(t) else t
    return {"recordings": len(docs), "predictions": sum(len(d.predictions) for d in docs), "figures": len(t),
            "with_band": len(scored), "inside": int(scored.inside.sum()) if len(scored) else 0,
            "median_error": (math.exp(sorted(abs(math.log(r)) for r in t.ratio)[len(t) // 2]) if len(t) else None),
            "made": [d.made["date"] for d in docs]}


def held_out_errors(proxy: dict | None = None):
    """The model on the repository found last and kept out of the fit (``why_kind: held_out``,
    :func:`k3lab.serving.observations.held_out`) → DataFrame: id, family, params (the family whose
    committed fit predicted it: its own, or ``proxy[family]`` where its family has no fit), kind,
    metric, published, predicted, ratio (predicted ÷ published)."""
    import pandas as pd

    from .calibration import predict_observation
    from .model import FamilyParams
    from .observations import held_out

    proxy = proxy or {}
    fitted = committed.fitted_families()
    rows = []
    for o in held_out():
        fam = o.family if o.family in fitted else proxy.get(o.family)
        if fam is None:
            continue
        params, _ = committed.fitted(fam)
        p = FamilyParams(o.family, **{k: getattr(params, k) for k in FamilyParams.NAMES})
        pred = predict_observation(o, p)
        rows.append({"id": o.id, "family": o.family, "params": fam, "engine": o.engine, "layout": o.deployment.label,
                     "concurrency": o.workload.concurrency, "kind": o.kind, "metric": o.metric, "published": o.value,
                     "predicted": pred, "ratio": pred / o.value})
    return pd.DataFrame(rows)


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab score [--json]``: the predictions on record against the public figures."""
    import json
    import sys

    from ..cli_parser import OneLineParser

    ap = OneLineParser(prog="python -m k3lab score",
                       description="Score the serving model's predictions on record (data/predictions/) against the "
                                   "public figures now in data/public_measurements.yaml.")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    t, s = score_rows(), summary()
    if args.json:
        print(json.dumps({"summary": s, "rows": t.to_dict(orient="records")}, indent=2, sort_keys=True))
        return 0
    head = (f"{s['predictions']} predictions on record ({s['recordings']} recording(s), made "
            f"{', '.join(s['made']) or 'never'}); {s['figures']} public figure(s) answer them")
    if not len(t):
        print(head + ": nothing to score yet (no public run has measured these deployments).")
        return 0
    print(head + f"; inside the band: {s['inside']} of {s['with_band']} with a band; median error "
                 f"x{s['median_error']:.2f}")
    print(t.to_string(index=False))
    sys.stdout.flush()
    return 0
