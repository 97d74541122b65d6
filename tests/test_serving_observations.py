"""Public measurements → the serving model's observations (k3lab.serving.observations).

Each normalisation rule of the module docstring on a real entry of
``data/public_measurements.yaml`` (whose quoted numbers give the expected value) or on a
hand-made variant of one (a real entry with one field changed, re-validated by the schema).
Expected values are hand arithmetic on the published figures, never the code's output.
"""

import math
from pathlib import Path

import pytest
import yaml

from k3lab import data
from k3lab.schemas.public import Measurement
from k3lab.serving import observations as O

REPO = Path(__file__).resolve().parents[1]

# Real entries used as bases (read from the data file, not written out again here).
TPOT_BASE = "sglang_pr32890_b300_tp8_bs1_8192_1024_tpot_ms_baseline"      # 8×B300 TP8, 8192/1024 c1, TPOT 8.57 ms
OUTPUT_BASE = "sglang_pr32890_b300_tp8_bs1_8192_1024_output_tok_s_baseline"  # 112.07 tok/s, deployment
AMD_ITL = "sglang_i32548_mi355_tp8_nospec_itl_c2"                          # median ITL 20.86 ms, K3_OPT=1


@pytest.fixture(scope="module")
def raw():
    """data/public_measurements.yaml read independently with PyYAML."""
    return yaml.safe_load((REPO / "data" / "public_measurements.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def families_yaml():
    return yaml.safe_load((REPO / "data" / "serving_model.yaml").read_text(encoding="utf-8"))["families"]


def entry(mid: str) -> Measurement:
    return next(m for m in data.load("public_measurements").measurements if m.id == mid)


def variant(mid: str, spec: dict | None = None, **changes) -> Measurement:
    """A hand-made entry: the real entry ``mid`` with ``changes``, validated by the schema."""
    d = entry(mid).model_dump()
    d.update(changes)
    if spec is not None:
        d["spec"] = {**d["spec"], **spec}
    return Measurement.model_validate(d)


def obs_of(m) -> O.Observation:
    r = O.normalise(m)
    assert isinstance(r, O.Observation), r
    return r


def reason_of(m) -> str:
    r = O.normalise(m)
    assert isinstance(r, O.Excluded), r
    assert r.id == m.id and r.source == m.source and r.metric == m.metric
    return r.reason


# --------------------------------------------------------------------------- units: scope and metric


def test_a_published_tpot_is_kept_as_is():
    o = obs_of(entry(TPOT_BASE))
    assert (o.kind, o.value, o.normalisation) == ("tpot_ms", 8.57, "as published")
    assert o.family == "nvidia-blackwell" and o.gpu == "b300" and o.engine == "sglang"
    assert (o.workload.input_len, o.workload.output_len, o.workload.concurrency) == (8192, 1024, 1)
    assert o.deployment.label == "8×B300 TP8" and o.spec.algorithm == "none" and o.spec.accept_len == 1.0
    assert o.kv_dtype == "bf16"                        # kv_dtype not stated → bf16


def test_a_deployment_output_rate_is_kept_as_is():
    o = obs_of(entry(OUTPUT_BASE))
    assert (o.kind, o.value, o.normalisation) == ("output_tok_s", 112.07, "deployment")


def test_per_gpu_output_rate_times_the_gpus():
    o = obs_of(variant(OUTPUT_BASE, scope="per_gpu", value=14.0))
    assert o.kind == "output_tok_s" and o.value == pytest.approx(14.0 * 8) and o.normalisation == "× 8 GPUs"


def test_per_stream_output_rate_times_the_concurrency():
    o = obs_of(variant(OUTPUT_BASE, scope="per_stream", concurrency=4, value=30.0))
    assert o.kind == "output_tok_s" and o.value == pytest.approx(120.0) and o.normalisation == "× c4"


def test_per_node_output_rate_times_the_nodes():
    # 16 B300 at 8 per NVLink domain = 2 nodes (and 2 TP8 replicas)
    o = obs_of(variant(OUTPUT_BASE, scope="per_node", num_gpus=16, nodes=2, value=500.0))
    assert o.deployment.num_nodes == 2 and o.deployment.replicas == 2
    assert o.value == pytest.approx(1000.0) and o.normalisation == "× 2 nodes"


def test_total_rate_per_gpu_by_hand():
    # 90 total tok/s per GPU on 16 GPUs at 1000 in / 200 out: 90 × 16 × 200 / 1200 = 240
    o = obs_of(variant(OUTPUT_BASE, metric="total_tok_s", scope="per_gpu", num_gpus=16, value=90.0,
                       input_len=1000, output_len=200))
    assert o.kind == "output_tok_s" and o.value == pytest.approx(240.0)
    assert o.normalisation == "× 16 GPUs, total × O/(I+O) = 0.1667"


def test_real_total_per_gpu_entry_by_hand():
    # cookbook cell: tokens_per_sec_per_gpu 58 (total), 8×MI350X, 8192/1024: 58 × 8 × 1024 / 9216 = 464 / 9
    o = obs_of(entry("sglang_cookbook_mi350x_nospec_tokps_gpu_c1"))
    assert o.kind == "output_tok_s" and o.value == pytest.approx(464 / 9, rel=1e-12)
    assert o.normalisation == "× 8 GPUs, total × O/(I+O) = 0.1111"
    assert o.kv_dtype == "fp8" and o.family == "amd-cdna4"


def test_real_total_deployment_entry_by_hand():
    # issue #32548: TTT 820.02 tok/s is total (2 × 9216 tokens / 22.47 s, the entry's reading):
    # output = 820.02 × 1024 / 9216
    o = obs_of(entry("sglang_i32548_mi355_tp8_nospec_ttt_c2"))
    assert o.value == pytest.approx(820.02 / 9, rel=1e-12)
    assert o.normalisation == "deployment, total × O/(I+O) = 0.1111"


def test_total_rate_of_a_dcp_layout_by_hand():
    # PR #37878's balanced cell: 1,395 total tok/s/GPU on 8×B300 TP8+DCP8: 1395 × 8 / 9 = 1240
    o = obs_of(entry("sglang_pr37878_b300_bal_mxfp4_nospec_tokps_gpu_c64"))
    assert o.deployment.dcp == 8 and o.value == pytest.approx(1240.0, rel=1e-12)


def test_median_itl_is_one_decode_step():
    o = obs_of(entry(AMD_ITL))
    assert (o.kind, o.value, o.normalisation) == ("itl_ms", 20.86, "median ITL = one decode step")
    o = obs_of(variant(AMD_ITL, statistic="p50"))
    assert o.kind == "itl_ms"


def test_mean_itl_is_read_as_tpot():
    o = obs_of(variant(AMD_ITL, statistic="mean"))
    assert (o.kind, o.value, o.normalisation) == ("tpot_ms", 20.86, "mean ITL read as TPOT")


def test_tok_s_per_user_is_1000_over_tpot():
    o = obs_of(variant(TPOT_BASE, metric="tok_s_per_user", value=125.0))
    assert o.kind == "tpot_ms" and o.value == pytest.approx(8.0) and o.normalisation == "TPOT = 1000 / (tok/s per user)"


def test_ttft_under_load_is_kept_as_is():
    o = obs_of(variant(TPOT_BASE, metric="ttft_ms", value=3539.0, concurrency=16))
    assert (o.kind, o.value, o.workload.concurrency) == ("ttft_ms", 3539.0, 16)


def test_fp8_kv_spellings_are_fp8():
    assert obs_of(variant(TPOT_BASE, kv_dtype="fp8_e4m3")).kv_dtype == "fp8"
    assert obs_of(variant(TPOT_BASE, kv_dtype="bf16")).kv_dtype == "bf16"


def test_k3_opt_switch_is_read_from_the_recorded_setting_not_the_text():
    # #32548's recipe sets SGLANG_AITER_K3_OPT=1: recorded in sglang_env (with its evidence)
    m = entry(AMD_ITL)
    assert m.sglang_env == {"SGLANG_AITER_K3_OPT": "1"} and m.sglang_env_evidence
    assert obs_of(m).variants == ("aiter-k3-opt",)
    # the text alone no longer decides: a note naming the switch, with the setting recorded off or unknown
    off = variant(AMD_ITL, sglang_env={"SGLANG_AITER_K3_OPT": "0"}, note="K3_OPT=1 in another cell")
    unknown = variant(AMD_ITL, sglang_env={"SGLANG_AITER_K3_OPT": None})
    assert obs_of(off).variants == () and obs_of(unknown).variants == ()


def test_dspark_with_acceptance_is_an_observation():
    o = obs_of(variant(TPOT_BASE, spec={"algorithm": "dspark", "accept_length": 4.5}, value=2.84))
    assert o.spec.algorithm == "dspark" and o.spec.accept_len == 4.5 and o.value == 2.84


# --------------------------------------------------------------------------- exclusions


def test_withdrawn_and_superseded_figures_are_excluded_with_their_note():
    for mid, status in (("sglang_pr32890_b300_tp8_c24_ttft_first_reading", "withdrawn"),
                        ("vllm_pr50055_tp8_120k_c1_tpot_p50", "superseded")):
        m = entry(mid)
        assert m.status == status
        assert reason_of(m) == f"{status}: {m.status_note}"


def test_status_is_the_first_rule():
    # withdrawn AND on a GPU of no family: the status names the reason
    m = variant(TPOT_BASE, status="withdrawn", status_note="the author retracted it", gpu="mi455x")
    assert reason_of(m) == "withdrawn: the author retracted it"


def test_a_duplicate_is_excluded_with_its_why():
    m = entry("ixrepro_mi355x_c16_cprr_mns6_cg24_tpg")
    assert m.duplicate_of == "ixdoc_mi355x_c16_cprr_mns6_tpg" and m.status == "current"
    assert reason_of(m) == m.why == "the same figure as ixdoc_mi355x_c16_cprr_mns6_tpg (collected twice)"


def test_set_aside_in_the_data_is_excluded_with_its_why():
    m = variant(TPOT_BASE, use=False, why="prefix-reusing workload", why_kind="prefix_reuse")
    assert reason_of(m) == "prefix-reusing workload"


@pytest.mark.parametrize("gpu, reason", [
    ("mi455x", "GPU mi455x is in no serving family"),
    ("gb300", "GPU gb300 is in no serving family"),
    (None, "GPU not stated is in no serving family"),
])
def test_gpu_outside_every_family(gpu, reason):
    assert reason_of(variant(TPOT_BASE, gpu=gpu)) == reason


def test_real_entry_on_a_gpu_of_no_family():
    m = entry("atom_mi455_dp16ep16_1k256_c16_out")
    assert m.gpu == "mi455x" and reason_of(m) == "GPU mi455x is in no serving family"


def test_engine_not_modelled():
    assert reason_of(variant(TPOT_BASE, engine="trtllm")) == "engine trtllm is not modelled"
    assert reason_of(variant(TPOT_BASE, engine=None)) == "engine not stated is not modelled"


def test_metric_not_a_model_output_and_tail_statistics():
    assert reason_of(variant(TPOT_BASE, metric="e2e_latency_s")) == "metric e2e_latency_s is not a model output"
    assert reason_of(variant(TPOT_BASE, statistic="p99")) == "a tail statistic (p99)"
    assert reason_of(entry("ixdoc_mi355x_c16_nospec_exact_control_tpot_p99")) == "a tail statistic (p99)"


def test_unstated_workload_names_every_missing_field():
    assert reason_of(variant(TPOT_BASE, input_len=None)) == "workload not stated: input_len"
    assert reason_of(variant(TPOT_BASE, input_len=None, concurrency=None)) == "workload not stated: input_len, concurrency"
    m = entry("sglang_cookbook_mi35x_a8w4_median_output")
    assert (m.input_len, m.output_len, m.concurrency) == (None, None, None)
    assert reason_of(m) == "workload not stated: input_len, output_len, concurrency"


def test_ambiguous_workload_needs_a_reading():
    amb = {"concurrency": "'1…128' read as powers of two"}
    assert reason_of(variant(TPOT_BASE, ambiguous=amb)) == "ambiguous concurrency: '1…128' read as powers of two"
    o = obs_of(variant(TPOT_BASE, ambiguous=amb, reading="a second table states c1"))
    assert o.workload.concurrency == 1
    # a field outside the workload (here mem_fraction, already ambiguous in the base) needs none
    assert "mem_fraction" in entry(TPOT_BASE).ambiguous and entry(TPOT_BASE).reading is None


@pytest.mark.parametrize("spec, changes, reason", [
    ({"algorithm": None}, {}, "speculative decoding not stated"),
    ({"algorithm": "eagle"}, {}, "speculative algorithm eagle is not modelled"),
    ({"algorithm": "dspark"}, {}, "DSpark without a stated acceptance length"),
    ({"algorithm": "dspark", "accept_length": 4.0}, {"metric": "itl_ms", "statistic": "median"},
     "ITL with speculative decoding (a chunk carries several tokens)"),
    # the draft block is 7 tokens: at most 8 emitted per verify step
    ({"algorithm": "dspark", "accept_length": 9.0}, {}, "accept_len must be in [1, 8] (the draft block + the bonus token), got 9"),
])
def test_speculative_setting_rules(spec, changes, reason):
    assert reason_of(variant(TPOT_BASE, spec=spec, **changes)) == reason


def test_ambiguous_spec_without_acceptance_is_not_stated():
    m = variant(TPOT_BASE, spec={"algorithm": "dspark"}, ambiguous={"spec": "draft on, acceptance unknown"})
    assert reason_of(m) == "speculative decoding not stated"


@pytest.mark.parametrize("changes, reason", [
    ({"dp": 2}, "DP attention / data-parallel ranks (dp=2) are not modelled"),
    ({"num_gpus": 12}, "12 GPUs are not whole TP8×PP1 replicas"),
    ({"num_gpus": 16, "pp": 3}, "16 GPUs are not whole TP8×PP3 replicas"),
    ({"ep": 16}, "EP16 spans more than one TP8 group"),
    ({"dcp": 3}, "DCP3 does not divide TP8"),
])
def test_layout_rules(changes, reason):
    assert reason_of(variant(TPOT_BASE, **changes)) == reason


def test_covered_layouts_become_deployments():
    o = obs_of(variant(TPOT_BASE, ep=8))
    assert o.deployment.ep is True
    o = obs_of(variant(TPOT_BASE, num_gpus=16, pp=2))
    assert (o.deployment.tp, o.deployment.pp, o.deployment.replicas) == (8, 2, 1)
    o = obs_of(variant(TPOT_BASE, dcp=4))
    assert o.deployment.dcp == 4


# --------------------------------------------------------------------------- the whole file


def test_every_entry_is_an_observation_or_excluded_once(raw):
    ids = [m["id"] for m in raw["measurements"]]
    obs, exc = O.observations(), O.excluded()
    assert len(obs) + len(exc) == len(ids)
    assert sorted([o.id for o in obs] + [e.id for e in exc]) == sorted(ids)
    assert all(e.reason for e in exc)
    t = O.table()
    assert len(t) == len(ids) and int(t["used"].sum()) == len(obs)


def test_set_aside_entries_are_all_excluded(raw, families_yaml):
    """Counted from the YAML itself: every withdrawn, superseded, use: false or duplicate entry
    is excluded, and every observation is a current, used entry of a GPU of some family."""
    exc = {e.id: e.reason for e in O.excluded()}
    obs = {o.id: o for o in O.observations()}
    for status in ("withdrawn", "superseded"):
        stated = [m["id"] for m in raw["measurements"] if m["status"] == status]
        assert stated, status
        assert sorted(i for i, r in exc.items() if r.startswith(f"{status}: ")) == sorted(stated)
    for m in raw["measurements"]:
        if m.get("use") is False or m.get("duplicate_of"):
            assert m["id"] in exc, m["id"]
    gpus = {g for f in families_yaml.values() for g in f["gpus"]}
    by_id = {m["id"]: m for m in raw["measurements"]}
    for i, o in obs.items():
        m = by_id[i]
        assert m["status"] == "current" and m.get("use", True) and m.get("duplicate_of") is None
        assert m["gpu"] in gpus and o.family in families_yaml and m["gpu"] in families_yaml[o.family]["gpus"]
        assert o.kind in O.KINDS and o.value > 0 and math.isfinite(o.value)


def test_family_of_follows_serving_model_yaml(families_yaml):
    for name, f in families_yaml.items():
        for g in f["gpus"]:
            assert O.family_of(g) == name
    assert O.family_of("mi455x") is None and O.family_of(None) is None


def test_observations_change_with_the_data(tmp_path, monkeypatch):
    """A copy of the data with one more usable figure gives one more observation (the cache follows
    K3LAB_DATA and clear_cache)."""
    import shutil

    from k3lab import paths

    d = tmp_path / "data"
    shutil.copytree(paths.DATA_DIR, d)
    monkeypatch.setenv("K3LAB_DATA", str(d))
    data.clear_cache()
    try:
        n = len(O.observations())
        p = d / "public_measurements.yaml"
        text = p.read_text(encoding="utf-8")
        old = f"- id: {TPOT_BASE}\n"
        assert text.count(old) == 1
        # the same entry again under a new id, its TPOT doubled (a hand-made second figure)
        start = text.index(old)
        end = text.index("\n- id: ", start + 1) + 1
        block = text[start:end].replace(old, "- id: handmade_b300_tpot_copy\n").replace("  value: 8.57\n", "  value: 17.14\n")
        p.write_text(text[:end] + block + text[end:], encoding="utf-8")
        data.clear_cache()
        obs = {o.id: o for o in O.observations()}
        assert len(obs) == n + 1 and obs["handmade_b300_tpot_copy"].value == 17.14
    finally:
        data.clear_cache()
