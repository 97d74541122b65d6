"""Predictions on record (data/predictions/) and ``python -m k3lab score`` (k3lab.serving.score):
what is recorded is what ``predict`` says, a recording is never rewritten, and a prediction is
scored against the public figures that answer its question, never refitted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from k3lab import data
from k3lab.schemas.serving import Predictions
from k3lab.serving import committed
from k3lab.serving import score as S
from k3lab.serving.predict import predict
from k3lab.specs import load_model, parse_layout

REPO = Path(__file__).resolve().parents[1]


def test_the_questions_are_the_deployments_the_study_prices():
    qs = S.questions()
    ids = [q[0] for q in qs]
    assert len(ids) == len(set(ids))
    labels = {(q[2].label, q[4].input_len, q[4].output_len, q[5].algorithm) for q in qs}
    # the article's three configurations at its 1,024 / 400
    for lab in ("8×MI355X TP8", "8×B300 TP8+DCP8", "16×B200 TP16"):
        assert (lab, 1024, 400, "none") in labels, lab
    # 8xMI355X and 8xB300 with and without DSpark, 16xB200 in both layouts
    for lab in ("8×MI355X TP8", "8×B300 TP8"):
        assert {(lab, 8192, 1024, "none"), (lab, 8192, 1024, "dspark")} <= labels
    assert ("16×B200 TP8×PP2", 8192, 1024, "none") in labels
    assert sorted({q[4].concurrency for q in qs}) == [16, 32, 64, 128]


@pytest.fixture(scope="module")
def doc():
    return S.record("2026-12-05", "abc (test)", "test")


def test_a_recording_is_what_predict_says(doc):
    """Every question no public figure answers is recorded as predict answers it; one a public run
    already measured (e.g. 8xMI355X at 8,192/1,024 c32, issue #32548) is no prediction."""
    Predictions.model_validate(doc)
    cfg = load_model("kimi-k3")
    by_id = {p["id"]: p for p in doc["predictions"]}
    assert "8xmi355x_tp8_8192_1024_c32_none" not in by_id
    assert all(p["matched_at_record"] == [] for p in doc["predictions"])
    for qid, _, dep, variants, work, spec in S.questions()[::11]:
        if qid not in by_id:
            assert S.matches(_question_of(dep, variants, work, spec)), qid
            continue
        p = predict(cfg, dep, work, spec, variants)
        rec = by_id[qid]
        assert rec["question"]["layout"] and parse_layout(rec["question"]["layout"]).label == dep.label
        for kind in S.KINDS:
            v = rec["values"][kind]
            assert v["value"] == pytest.approx(getattr(p, kind), rel=1e-6)
            iv = p.interval(kind)
            assert (v["low"] is None) == (iv is None)
    assert doc["made"]["model_version"] == committed.MODEL_VERSION


def _question_of(dep, variants, work, spec):
    return {"layout": S._layout_text(dep), "variants": list(variants), "engine": "sglang", "arrival": "closed_loop",
            "lengths": "fixed", "input_len": work.input_len, "output_len": work.output_len,
            "concurrency": work.concurrency, "spec": spec.algorithm, "accept_len": spec.accept_len, "kv_dtype": "bf16"}


def test_the_committed_recording_is_a_recording_of_this_model():
    """data/predictions/ holds at least one recording; each validates, names its model version and
    fit, and none of its predictions was already measured when recorded."""
    docs = S.on_record()
    assert docs
    for d in docs:
        assert d.made["model_version"] and len(d.made["fit_sha256"]) == 64
        assert all(p.matched_at_record == [] for p in d.predictions)


def test_a_recording_is_never_rewritten(tmp_path, doc):
    path = tmp_path / "2026-12-05-model-v3.yaml"
    S.write_record(path, doc)
    back = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert back == doc
    with pytest.raises(ValueError, match="never rewritten"):
        S.write_record(path, doc)


def test_a_prediction_is_scored_against_the_figures_that_answer_it(monkeypatch):
    """A recorded question that a public figure answers (the cookbook's 8×MI350X 8,192/1,024 c16,
    here as if predicted before it was published) is scored: ratio published ÷ predicted, inside
    the recorded band or not, new (it did not match when recorded)."""
    o = next(x for x in committed.fitted_observations() if x.id == "sglang_cookbook_mi350x_nospec_tpot_c16")
    q = {"layout": "8xmi350x tp8", "variants": [], "engine": "sglang", "arrival": "closed_loop", "lengths": "fixed",
         "input_len": 8192, "output_len": 1024, "concurrency": 16, "spec": "none", "accept_len": 1.0, "kv_dtype": "bf16"}
    assert o.id in {m.id for m in S.matches(q)}
    rec = Predictions.model_validate({"made": {"date": "2026-01-01", "model_version": "3", "commit": "x", "fit_sha256": "y",
                                               "command": "test"},
                                      "predictions": [{"id": "q", "why": "test", "question": q, "matched_at_record": [],
                                                       "values": {"tpot_ms": {"value": o.value * 1.25, "low": o.value,
                                                                              "high": o.value * 1.5, "in_domain": True}}}]})
    monkeypatch.setattr(S, "on_record", lambda: [rec])
    t = S.score_rows()
    row = t[t.figure == o.id].iloc[0]
    assert row.ratio == pytest.approx(1 / 1.25) and bool(row.inside) and bool(row.new)
    s = S.summary()
    assert (s["predictions"], s["inside"]) == (1, s["with_band"]) and s["figures"] == len(t)


def test_held_out_rows_predict_the_last_repository_with_committed_parameters():
    from k3lab.serving.observations import held_out

    t = S.held_out_errors(committed.HELD_OUT_PROXY)
    assert len(t) == len(held_out()) and set(t.params) <= set(committed.fitted_families())
    rows = {r.id: r for r in committed.fitted_held_out()}
    for r in t.itertuples():
        assert r.ratio == pytest.approx(rows[r.id].predicted / rows[r.id].published, rel=1e-6)


def test_the_score_command():
    env = dict(os.environ)
    env.pop("K3LAB_DATA", None)
    p = subprocess.run([sys.executable, "-m", "k3lab", "score", "--json"], capture_output=True, text=True, cwd=REPO,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["summary"]["recordings"] == len([k for k in data.SCHEMAS if k.startswith("predictions@")])
    q = subprocess.run([sys.executable, "-m", "k3lab", "score"], capture_output=True, text=True, cwd=REPO, env=env,
                       timeout=300)
    assert q.returncode == 0 and "predictions on record" in q.stdout


def test_every_recording_is_scored_with_its_own_model_version(monkeypatch):
    """Model v4 recorded a new file beside v3's (a recording is never edited): a figure that answers a
    question both recorded is scored once per recording, each against the value that recording holds."""
    from types import SimpleNamespace

    docs = {d.made["model_version"]: d for d in S.on_record()}
    assert {"3", "4"} <= set(docs)
    qid = "8xb300_tp8_8192_1024_c32_none"
    recorded = {v: next(p for p in d.predictions if p.id == qid).values["output_tok_s"].value for v, d in docs.items()}
    fig = SimpleNamespace(id="a_later_b300_figure", kind="output_tok_s", value=1000.0)
    monkeypatch.setattr(S, "matches", lambda q: [fig] if (q.layout, q.input_len, q.concurrency, q.spec) == (
        "8xb300 tp8", 8192, 32, "none") else [])
    t = S.score_rows()
    got = {r.model_version: r.predicted for r in t.itertuples()}
    assert got == recorded and len(t) == len(docs)
    assert all(r.ratio == pytest.approx(1000.0 / r.predicted) for r in t.itertuples())
