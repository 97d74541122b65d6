"""The serving model's fit (k3lab.serving.calibration) and the committed data/serving_fit.yaml
(parameters, bands) and data/serving_validation.yaml (out-of-sample rows, held-out repository).

The refit is done once per module (a few seconds to half a minute): it proves the committed fit
is what the code makes from the data today. The committed file is read independently with
PyYAML; the band's percentile and every hash are recomputed here by hand.
"""

import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from k3lab import data
from k3lab.serving import calibration as C
from k3lab.serving import committed as K
from k3lab.serving import observations as O

REPO = Path(__file__).resolve().parents[1]
FIT = REPO / "data" / "serving_fit.yaml"
VAL = REPO / "data" / "serving_validation.yaml"
REPO_SPLIT, TIME_SPLIT = "leave_one_repository_out", "time_split"


@pytest.fixture(scope="module")
def committed():
    """The committed fit with each family's validation rows folded in from serving_validation.yaml."""
    fit = yaml.safe_load(FIT.read_text(encoding="utf-8"))
    val = yaml.safe_load(VAL.read_text(encoding="utf-8"))
    unsealed = [{k: v for k, v in d["generated"].items() if k != "content_sha256"} for d in (fit, val)]
    assert val["inputs"] == fit["inputs"] and unsealed[0] == unsealed[1]   # each file has its own seal
    for fam, f in fit["families"].items():
        f["validation"] = val["validation"].get(fam, [])
    fit["held_out"] = val["held_out"]
    return fit


@pytest.fixture(scope="module")
def refit():
    """Every family refitted from the repository's data: {family: (params, validation, bands)}."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("K3LAB_DATA", raising=False)
        data.clear_cache()
        out = {f: (C.calibrated(f), C.validation(f), {m: C.covering_band(f, m) for m in O.METRICS})
               for f in C.families()}
    return out


def _covering_by_hand(errs, q=0.9):
    """Split-conformal: the ceil((n+1)·q)-th smallest of errs, None when that exceeds n."""
    s = sorted(errs)
    k = math.ceil((len(s) + 1) * q)
    return s[k - 1] if k <= len(s) else None


# --------------------------------------------------------------------------- the refit


def test_families_with_observations(refit, committed):
    # data/serving_model.yaml order; Hopper and CDNA3 have no usable public figure
    assert list(refit) == ["amd-cdna4", "nvidia-blackwell"] == list(committed["families"])


def test_refit_reproduces_the_committed_parameters(refit, committed):
    # A PIN: the committed numbers move when the data (an input file), the model's equations,
    # the fit's bounds, prior or tolerances, or scipy's least_squares change; then rerun
    # `make serving-fit` (and bump MODEL_VERSION if the equations changed).
    for fam, (p, _, _) in refit.items():
        want = committed["families"][fam]["params"]
        for k in p.NAMES:
            assert getattr(p, k) == pytest.approx(want[k], rel=1e-6, abs=1e-9), (fam, k)


def test_refit_reproduces_the_committed_validation_and_bands(refit, committed):
    # A PIN like the parameters: every out-of-sample prediction, both splits, and every band.
    for fam, (_, v, bands) in refit.items():
        f = committed["families"][fam]
        rows = f["validation"]
        assert [(o.id, s) for o, _, _, s in v.rows] == [(r["id"], r["split"]) for r in rows]
        for (o, pred, err, _), r in zip(v.rows, rows):
            assert o.source == r["source"] and o.kind == r["kind"] and o.value == pytest.approx(r["published"])
            assert pred == pytest.approx(r["predicted_out_of_sample"], rel=1e-6), r["id"]
            assert err == pytest.approx(r["log_error"], abs=1e-6), r["id"]
        assert v.split_date == f["time_split_date"]
        for m, mb in bands.items():
            want = f["bands"][m]
            assert mb.validated == want["validated"] and mb.points == want["points"], (fam, m)
            if want["band_log"] is None:
                assert mb.band_log is None
            else:
                assert mb.band_log == pytest.approx(want["band_log"], rel=1e-6), (fam, m)


def test_committed_counts_by_hand(committed):
    for fam, f in committed["families"].items():
        obs = [o for o in committed["observations"] if o["family"] == fam]
        assert f["sources"] == len({o["source"] for o in obs})
        assert f["calibration_points"] == len(obs)
        loso = [r for r in f["validation"] if r["split"] == REPO_SPLIT]
        # every observation is predicted out of its own source at most once (a source whose
        # removal leaves fewer points than parameters is not predicted at all)
        ids = [r["id"] for r in loso]
        assert len(ids) == len(set(ids)) and set(ids) <= {o["id"] for o in obs}
        # the time split tests exactly the points dated on or after its date
        d = f["time_split_date"]
        late = sorted(o["id"] for o in obs if d is not None and (o["date"] is None or o["date"] >= d))
        assert sorted(r["id"] for r in f["validation"] if r["split"] == "time_split") == late
        for m, b in f["bands"].items():
            for split in C.SPLITS:
                assert b["points"][split] == sum(1 for r in f["validation"] if r["metric"] == m and r["split"] == split
                                                 and not r["extrapolated"])


def test_extrapolations_are_the_rows_across_nodes_no_other_repository_crosses(committed):
    """Model v4: a left-out repository's figure is an extrapolation when its deployment spans nodes
    and none of the other repositories' runs does (the refit ties the cross-node costs to 0)."""
    for fam, f in committed["families"].items():
        obs = {o["id"]: o for o in committed["observations"] if o["family"] == fam}
        for r in f["validation"]:
            if r["split"] != REPO_SPLIT:
                continue
            o = obs[r["id"]]
            others_cross = any(x["spans_nodes"] for x in obs.values() if x["origin"] != o["origin"])
            assert r["extrapolated"] == (o["spans_nodes"] and not others_cross), r["id"]
    nv = [r for r in committed["families"]["nvidia-blackwell"]["validation"] if r["split"] == REPO_SPLIT]
    assert {r["gpu"] for r in nv if r["extrapolated"]} == {"b200"}


def test_committed_observations_are_todays(committed):
    now = {o.id: o for o in O.observations()}
    rows = committed["observations"]
    assert sorted(r["id"] for r in rows) == sorted(now)
    for r in rows:
        o = now[r["id"]]
        assert (r["kind"], r["family"], r["layout"], r["concurrency"], r["metric"]) == (
            o.kind, o.family, o.deployment.label, o.workload.concurrency, o.metric)
        assert r["value"] == pytest.approx(o.value, rel=1e-12)


# --------------------------------------------------------------------------- the bands


def test_log_errors_are_ln_predicted_over_published(committed):
    for fam, f in committed["families"].items():
        for r in f["validation"]:
            assert r["log_error"] == pytest.approx(math.log(r["predicted_out_of_sample"] / r["published"]), abs=1e-7)


def test_each_band_is_the_conformal_band_of_each_split_by_hand(committed):
    """A metric's band is the leave-one-repository-out conformal band (the ceil((n+1)·0.9)-th
    smallest |error|, which promises 90% on a new point), widened to the time split's conformal band,
    or to its largest error when it has too few points; the recorded coverage is the share inside,
    on every split (engine and harness ones too); too few points or repositories, or a band wider
    than ×2, is not validated."""
    splits = ("leave_one_repository_out", "leave_one_engine_out", "leave_one_harness_out", "time_split")
    for fam, f in committed["families"].items():
        for m, b in f["bands"].items():
            errs = {s: [abs(r["log_error"]) for r in f["validation"] if r["metric"] == m and r["split"] == s
                        and not r["extrapolated"]] for s in splits}
            srcs = {o["origin"] for o in committed["observations"]
                    if o["id"] in {r["id"] for r in f["validation"] if r["metric"] == m
                                   and r["split"] == REPO_SPLIT}}
            want = _covering_by_hand(errs[REPO_SPLIT]) if errs[REPO_SPLIT] else None
            if want is None or len(srcs) < 2:
                assert b["band_log"] is None and not b["validated"] and b["why_not"], (fam, m)
                continue
            late = errs[TIME_SPLIT]
            if late:
                t = _covering_by_hand(late)
                want = max(want, max(late) if t is None else t)
            assert b["band_log"] == pytest.approx(want, abs=1e-8), (fam, m)
            for s, e in errs.items():
                if e:
                    share = sum(x <= want + 1e-12 for x in e) / len(e)
                    assert b["coverage"][s] == pytest.approx(share, abs=1e-6), (fam, m, s)
            assert b["validated"] == (math.exp(want) <= 2.0), (fam, m)


def test_covering_band_by_hand():
    errs = [0.3, 0.01, 0.2, 0.05, 0.12, 0.4, 0.07, 0.09, 0.11, 0.5]
    assert C.covering(errs) == 0.5                                          # n = 10: ceil(9.9) = 10th smallest
    assert C.covering(errs + [0.6] * 9) == 0.6 and C.covering([0.01 * i for i in range(1, 20)]) == 0.18  # n = 19: 18th
    assert C.covering(errs[:9]) == max(errs[:9])                            # n = 9: ceil(9) = 9th, the largest
    assert C.covering(errs[:8]) is None                                     # n = 8 cannot promise 90%
    assert C.coverage_of(errs, 0.2) == 0.7


def test_time_split_date_is_the_median_date():
    obs = C.family_observations("nvidia-blackwell")
    dates = sorted(o.date for o in obs if o.date)
    d = C.split_date(obs)
    assert d == dates[len(dates) // 2]
    assert any(x < d for x in dates) and any(x >= d for x in dates)


# --------------------------------------------------------------------------- out-of-sample fits


def test_out_of_repository_prediction_is_a_fit_without_that_repository(committed):
    """Refit the MI35x family without every sgl-project/sglang figure (issue #32548, PR #39029, the
    cookbook: one project) and predict them: the committed out-of-repository predictions; the
    in-sample fit (with them) predicts otherwise."""
    fam, repo = "amd-cdna4", "sgl-project/sglang"
    obs = C.family_observations(fam)
    mine = [o for o in obs if o.origin == repo]
    rest = [o for o in obs if o.origin != repo]
    assert mine and len(rest) + len(mine) == len(obs) and {o.source for o in mine} >= {"sglang_i32548", "sglang_pr39029"}
    p = C.fit(rest, fam)
    rows = {r["id"]: r for r in committed["families"][fam]["validation"] if r["split"] == REPO_SPLIT}
    full = C.calibrated(fam)
    for o in mine:
        assert rows[o.id]["source"] == o.source
        out = C.predict_observation(o, p)
        assert out == pytest.approx(rows[o.id]["predicted_out_of_sample"], rel=1e-6), o.id
        assert abs(math.log(out / C.predict_observation(o, full))) > 1e-4, o.id


def test_every_validation_row_was_fitted_without_its_source(refit):
    """A row's prediction uses a fit on the other sources only: for each source, the fit on the
    rest predicts that source's rows; a fit on all points (its own source included) does not."""
    for fam, (full, v, _) in refit.items():
        obs = C.family_observations(fam)
        by_src = {}
        for o, pred, _, split in v.rows:
            if split == REPO_SPLIT:
                by_src.setdefault(o.origin, []).append((o, pred))
        # an origin whose removal leaves too few points to fit is not predicted out of source
        fit_ok = {s for s in {o.origin for o in obs}
                  if len([o for o in obs if o.origin != s]) >= len(C.free_parameters([o for o in obs if o.origin != s]))}
        assert set(by_src) == fit_ok
        src = max(by_src, key=lambda s: (len(by_src[s]), s))
        p = C.fit([o for o in obs if o.origin != src], fam)
        assert p.as_tuple() != pytest.approx(full.as_tuple(), rel=1e-6)
        for o, pred in by_src[src]:
            assert pred == pytest.approx(C.predict_observation(o, p), rel=1e-9)


def test_time_split_rows_come_from_a_fit_on_earlier_figures(refit):
    for fam, (_, v, _) in refit.items():
        if v.split_date is None:
            continue
        obs = C.family_observations(fam)
        p = C.fit([o for o in obs if o.date and o.date < v.split_date], fam)
        rows = [(o, pred) for o, pred, _, s in v.rows if s == "time_split"]
        assert rows and all(not o.date or o.date >= v.split_date for o, _ in rows)
        for o, pred in rows:
            assert pred == pytest.approx(C.predict_observation(o, p), rel=1e-9)


def test_fit_needs_as_many_points_as_parameters():
    obs = C.family_observations("amd-cdna4")[:2]
    n = len(C.free_parameters(obs))
    with pytest.raises(ValueError, match=f"2 calibration points cannot fit {n} parameters"):
        C.fit(obs, "amd-cdna4")


def test_the_fallback_kernel_and_cross_node_costs_are_tied_without_a_run_that_used_them():
    nv = C.family_observations("nvidia-blackwell")
    assert all(o.prefill_attention == "fast" for o in nv)
    free = C.free_parameters(nv)
    assert "fallback_attention_efficiency" not in free
    p = C.calibrated("nvidia-blackwell")
    assert p.fallback_attention_efficiency == p.prefill_attention_efficiency
    # kernelore's TP16 (a TP group across nodes) and TP8×PP2 (a pipeline across nodes) move both
    assert any(o.deployment.tp_nodes > 1 for o in nv) and any(o.deployment.pp == 2 for o in nv)
    assert {"scale_out_us", "pipeline_us"} <= set(free)
    single = [o for o in nv if not C.spans_nodes(o.deployment)]
    assert not {"scale_out_us", "pipeline_us"} & set(C.free_parameters(single))
    amd = C.family_observations("amd-cdna4")
    assert "fallback_attention_efficiency" in C.free_parameters(amd)
    assert not any(C.spans_nodes(o.deployment) for o in amd)
    q = C.calibrated("amd-cdna4")
    assert q.scale_out_us == 0.0 and q.pipeline_us == 0.0


def test_cross_node_gaps_name_the_costs_a_fit_lacks():
    nv = C.family_observations("nvidia-blackwell")
    tp16 = next(o for o in nv if o.deployment.tp_nodes > 1)
    pp2 = next(o for o in nv if o.deployment.pp == 2)
    b300 = next(o for o in nv if o.gpu == "b300")
    assert C.cross_node_gaps(tp16, ()) == ("scale_out_us",) and C.cross_node_gaps(pp2, ()) == ("pipeline_us",)
    assert C.cross_node_gaps(tp16, ("scale_out_us",)) == () and C.cross_node_gaps(b300, ()) == ()


def test_fitted_parameters_lie_within_bounds(refit):
    for _, (p, _, _) in refit.items():
        for k, (lo, hi) in C.BOUNDS.items():
            assert lo <= getattr(p, k) <= hi


# --------------------------------------------------------------------------- the committed file and its inputs


def test_committed_hashes_are_the_inputs_values_and_bytes(committed):
    """``inputs``: sha256 of each file's parsed values as JSON with sorted keys (parsed here by
    PyYAML / json, not k3lab's reader); ``input_bytes``: of its bytes."""
    import json

    assert set(committed["inputs"]) == set(committed["input_bytes"]) == set(K.FIT_INPUTS)
    for rel, h in committed["inputs"].items():
        text = (REPO / "data" / rel).read_text(encoding="utf-8")
        doc = json.loads(text) if rel.endswith(".json") else yaml.safe_load(text)
        canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        assert hashlib.sha256(canon.encode()).hexdigest() == h, rel
        assert hashlib.sha256((REPO / "data" / rel).read_bytes()).hexdigest() == committed["input_bytes"][rel], rel


def test_fitted_reads_the_committed_fit(committed):
    data.clear_cache()
    for fam, f in committed["families"].items():
        p, bands = K.fitted(fam)
        assert p.as_tuple() == tuple(f["params"][k] for k in p.NAMES)
        assert bands == {m: (b["band_log"] if b["validated"] else None) for m, b in f["bands"].items()}
    assert K.fitted_families() == ["amd-cdna4", "nvidia-blackwell"]
    with pytest.raises(data.DataError, match=r"^data/serving_fit\.yaml: no fit for family 'nvidia-hopper' "
                                             r"\(fitted: amd-cdna4, nvidia-blackwell\)$"):
        K.fitted("nvidia-hopper")


def _append_comment(path: Path) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write("# a harmless comment: same data, other bytes\n")


def _edit_a_value(path: Path) -> None:
    """The first source title gains a word: the same file with one value changed."""
    import re

    text = path.read_text(encoding="utf-8")
    edited = re.sub(r"""title: (['"])""", r"title: \1edited ", text, count=1)
    assert edited != text
    path.write_text(edited, encoding="utf-8")


@pytest.mark.parametrize("rel", ["hardware.yaml", "public_measurements.yaml", "model/kimi_k3_dspark_draft.yaml"])
def test_a_comment_or_blank_line_leaves_the_fit_current(data_copy, rel):
    """The fit records what it read (parsed values), not bytes (issue 35, M4)."""
    _append_comment(data_copy / rel)
    with (data_copy / rel).open("a", encoding="utf-8") as f:
        f.write("\n\n")
    data.clear_cache()
    assert K.fitted_families() == ["amd-cdna4", "nvidia-blackwell"]
    assert K.fitted("amd-cdna4")[0].as_tuple()


@pytest.mark.parametrize("rel", ["hardware.yaml", "public_measurements.yaml", "model/kimi_k3_dspark_draft.yaml"])
def test_a_changed_input_makes_the_fit_stale(data_copy, rel):
    _edit_a_value(data_copy / rel)
    data.clear_cache()
    with pytest.raises(data.DataError) as ei:
        K.fitted("amd-cdna4")
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg == f"data/serving_fit.yaml: stale, data/{rel} changed since the fit; run `make serving-fit`"


def test_a_file_the_fit_does_not_read_leaves_it_current(data_copy):
    assert "prices.yaml" not in K.FIT_INPUTS
    _edit_a_value(data_copy / "prices.yaml")
    data.clear_cache()
    assert K.fitted_families() == ["amd-cdna4", "nvidia-blackwell"]


def test_a_stale_fit_refuses_predictions_too(data_copy):
    from k3lab.serving.predict import predict
    from k3lab.serving.model import Workload
    from k3lab.specs import Deployment, load_model

    _edit_a_value(data_copy / "hardware.yaml")
    data.clear_cache()
    with pytest.raises(data.DataError, match=r"^data/serving_fit\.yaml: stale, data/hardware\.yaml changed"):
        predict(load_model("kimi-k3"), Deployment("mi355x", 8, 8), Workload(1024, 128, 8))


def test_a_stale_fit_is_one_line_from_the_command(data_copy, tmp_path):
    _edit_a_value(data_copy / "public_measurements.yaml")
    env = dict(os.environ, K3LAB_DATA=str(data_copy))
    env.pop("K3LAB_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--gpu", "mi355x", "--gpus", "8", "--tp", "8",
                        "--input-len", "1024", "--output-len", "128", "--concurrency", "8"],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr
    err = p.stderr.strip().splitlines()
    assert len(err) == 1, p.stderr
    assert "data/serving_fit.yaml" in err[0] and "data/public_measurements.yaml changed" in err[0], err[0]


def test_a_fit_of_another_model_version_is_refused(data_copy):
    f = data_copy / "serving_fit.yaml"
    text = f.read_text(encoding="utf-8")
    assert text.count("model_version: '4'\n") == 1 and K.MODEL_VERSION == "4"
    doc = yaml.safe_load(text.replace("model_version: '4'\n", "model_version: '1'\n"))
    doc["generated"]["content_sha256"] = _seal_by_hand(doc)   # as that version's serving-fit would seal it
    f.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    data.clear_cache()
    with pytest.raises(data.DataError) as ei:
        K.fitted("amd-cdna4")
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("data/serving_fit.yaml: made by serving model version '1'")
    assert "this code is '4'" in msg


def test_code_of_another_model_version_refuses_the_committed_fit(monkeypatch):
    monkeypatch.setattr(K, "MODEL_VERSION", "5")
    data.clear_cache()
    try:
        with pytest.raises(data.DataError, match=r"version '4', this code is '5'"):
            K.fitted_families()
    finally:
        data.clear_cache()


def test_a_missing_input_is_named(data_copy):
    (data_copy / "sglang_sharding.yaml").unlink()
    with pytest.raises(data.DataError, match=r"data/sglang_sharding\.yaml: file missing"):
        K.input_hashes()


def test_the_fit_carries_the_fields_acceptance_lengths(committed):
    """predict reads DSpark's acceptance lengths from the fit (no 1.6 MB parse): the committed
    list is exactly what the public measurements give today."""
    from k3lab.serving import field, observations

    want = observations.measured_accept_lengths()
    assert [(r["id"], r["family"], r["value"]) for r in committed["accept_lengths"]] == want
    assert field.accept_lengths() == [(i, v) for i, _, v in want] and len(want) >= 10
    # a family's own runs where it has any (issue 38: the B300's public run states 4.5)
    b300 = [v for _, f, v in want if f == "nvidia-blackwell"]
    assert b300 and field.accept_lengths("nvidia-blackwell") == [(i, v) for i, f, v in want
                                                                        if f == "nvidia-blackwell"]
    assert field.accept_lengths("amd-cdna3") == field.accept_lengths()   # no run of its own: every run's


def test_engine_and_harness_rows_are_fits_without_that_engine_or_harness(refit):
    """The engine and harness splits leave a whole engine (or harness) out: for the MI35x family
    (sglang, vLLM and ATOM; several harnesses) the vLLM rows are predicted by a fit on the other
    engines, and a family with one engine has no engine rows."""
    _, v, _ = refit["amd-cdna4"]
    obs = C.family_observations("amd-cdna4")
    for split, key, group in (("leave_one_engine_out", lambda o: o.engine, "vllm"),
                              ("leave_one_harness_out", lambda o: o.harness_name, "custom")):
        rows = [(o, pred) for o, pred, _, s in v.rows if s == split and key(o) == group]
        assert rows, split
        p = C.fit([o for o in obs if key(o) != group], "amd-cdna4")
        for o, pred in rows:
            assert pred == pytest.approx(C.predict_observation(o, p), rel=1e-9)
    _, vb, _ = refit["nvidia-blackwell"]
    assert len({o.engine for o in C.family_observations("nvidia-blackwell")}) >= 1


def test_held_out_rows_are_the_held_out_repository(committed):
    """The held-out repository is predicted, never fitted: its rows are the held-out figures
    (its family, or the proxy family where its own has no fit), and none is an observation."""
    held = {o.id for o in O.held_out()}
    rows = committed["held_out"]
    assert held and {r["id"] for r in rows} == held
    assert not held & {o["id"] for o in committed["observations"]}
    for r in rows:
        assert r["params"] in committed["families"]
        assert r["log_error"] == pytest.approx(math.log(r["predicted"] / r["published"]), abs=1e-7)


# --------------------------------------------------------------------------- issue 35: a fit edited by hand


def _seal_by_hand(doc: dict) -> str:
    """The seal recomputed here: sha256 of the whole document but the seal itself (its
    ``generated`` provenance included) as sorted, compact JSON."""
    import json

    body = {**doc, "generated": {k: v for k, v in doc["generated"].items() if k != "content_sha256"}}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@pytest.mark.parametrize("path", [FIT, VAL], ids=["fit", "validation"])
def test_the_committed_files_carry_the_seal_of_their_own_content(path):
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert doc["generated"]["content_sha256"] == _seal_by_hand(doc)


def _edit_hbm(doc):
    doc["families"]["amd-cdna4"]["params"]["hbm_efficiency"] = 0.92


def _edit_band(doc):
    doc["families"]["amd-cdna4"]["bands"]["decode"]["band_log"] /= 10


def _edit_input_hash(doc):
    doc["inputs"]["public_measurements.yaml"] = "0" * 64


def _edit_observation(doc):
    doc["observations"][0]["value"] /= 10


def _edit_provenance(doc):
    """Attack on main: the seal did not cover ``generated`` (date, command, scipy...)."""
    doc["generated"]["scipy"] = "0.1.0"


def _edit_date(doc):
    doc["generated"]["date"] = "1999-01-01"


@pytest.mark.parametrize("edit", [_edit_hbm, _edit_band, _edit_input_hash, _edit_observation, _edit_provenance,
                                  _edit_date])
def test_a_fit_edited_by_hand_is_refused_in_one_line(data_copy, capsys, edit):
    """Issue 35: ``hbm_efficiency`` 0.62→0.92 moved compare's answer $3.08→$2.53/M and ``band_log``
    ÷10 printed "decode ±4%", without notice: only the fit's inputs were hashed. Each edit here is
    made to the committed fit's values, whatever they are, and the file written back as YAML."""
    import yaml

    from k3lab import cli

    f = data_copy / "serving_fit.yaml"
    doc = yaml.safe_load(f.read_text(encoding="utf-8"))
    edit(doc)
    f.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    data.clear_cache()
    with pytest.raises(data.DataError) as ei:
        K.fitted("amd-cdna4")
    assert str(ei.value).startswith("data/serving_fit.yaml: generated.content_sha256: the fit is not what "
                                    "`make serving-fit` wrote") and "\n" not in str(ei.value)
    assert cli.main(["compare", "--top", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "generated.content_sha256" in err, err


def test_a_comment_is_no_edit_of_the_fit(data_copy, committed):
    f = data_copy / "serving_fit.yaml"
    f.write_text(f.read_text(encoding="utf-8") + "# a note\n", encoding="utf-8")
    data.clear_cache()
    assert K.fitted("amd-cdna4")[0].hbm_efficiency == pytest.approx(committed["families"]["amd-cdna4"]["params"]["hbm_efficiency"])


def test_make_serving_fit_writes_a_sealed_fit_that_loads(data_copy, committed, monkeypatch):
    """What ``make serving-fit`` writes carries the seal of what it wrote, and loads (the
    aiconfigurator rows, which the seal treats as any other section, are the committed ones:
    the tool's sweep alone takes seconds)."""
    aic = yaml.safe_load(VAL.read_text(encoding="utf-8"))["aiconfigurator"]   # they live beside the fit
    monkeypatch.setattr(K, "aiconfigurator_rows", lambda progress=True: aic)
    (data_copy / "serving_fit.yaml").unlink()
    data.clear_cache()
    K.write_fit(data_copy / "serving_fit.yaml", "2099-01-01", "a test")
    for name in ("serving_fit.yaml", "serving_validation.yaml"):   # both files sealed
        doc = yaml.safe_load((data_copy / name).read_text(encoding="utf-8"))
        assert doc["generated"]["content_sha256"] == _seal_by_hand(doc) and doc["generated"]["command"] == "a test"
    data.clear_cache()
    assert K.fitted_families() == list(committed["families"])   # the same inputs: the same families
