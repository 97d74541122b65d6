"""What the validated serving model answers (k3lab.serving.predict) and ``python -m k3lab predict``.

Admission is read off k3lab.memory.fit's Plan by hand; bands, domain limits and calibrated
families come from data/serving_fit.yaml read independently with PyYAML; the command's JSON is
compared with predict() called here.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from k3lab import data, memory
from k3lab.serving import predict as P
from k3lab.serving.engines import Engine, Harness
from k3lab.serving.model import NO_SPEC, Spec, Workload
from k3lab.specs import Deployment, load_model

REPO = Path(__file__).resolve().parents[1]
CFG = load_model("kimi-k3")
MI355X = Deployment("mi355x", 8, 8)
B300 = Deployment("b300", 8, 8)


@pytest.fixture(scope="module")
def fit_yaml():
    return yaml.safe_load((REPO / "data" / "serving_fit.yaml").read_text(encoding="utf-8"))


def _measured(fit_yaml, family, metric="decode"):
    obs = [o for o in fit_yaml["observations"] if o["family"] == family and o["metric"] == metric]
    assert obs
    return (min(o["input_len"] for o in obs), max(o["input_len"] for o in obs), max(o["concurrency"] for o in obs))


# --------------------------------------------------------------------------- admission


@pytest.mark.parametrize("dep, ctx, spec, variants, binds", [
    (MI355X, 8192 + 1024, NO_SPEC, (), "requests"),            # sglang's request cap binds
    (MI355X, 100_000, NO_SPEC, (), "kv"),                      # the KV pool binds
    (Deployment("b300", 16, 8), 1024 + 400, NO_SPEC, (), None),  # two TP8 replicas
    (MI355X, 1024 + 400, Spec("dspark", 3.0), ("aiter-k3-opt",), None),
])
def test_admission_is_the_plans_arithmetic(dep, ctx, spec, variants, binds):
    var = tuple(sorted(set(variants) | ({"dspark"} if spec.on else set())))
    plan = memory.fit(CFG, dep, 0.9, "bf16", context_tokens=ctx, variants=var)
    assert plan.weights_fit
    per_replica_kv = plan.max_kv_tokens // ctx                          # whole requests of ctx tokens
    want = plan.replicas * min(plan.max_running_requests, per_replica_kv)
    a = P.admission(CFG, dep, ctx, spec, variants)
    assert a.requests == want > 0
    assert (a.max_running_requests_per_replica, a.kv_requests_per_replica, a.replicas) == (
        plan.max_running_requests, per_replica_kv, dep.replicas)
    assert a.variants == var
    if binds == "requests":
        assert plan.max_running_requests < per_replica_kv
    elif binds == "kv":
        assert per_replica_kv < plan.max_running_requests


def test_dspark_admission_uses_the_drafts_request_default():
    # with the draft sglang's --max-running-requests is 48 (the article's launch; memory.fit)
    a = P.admission(CFG, MI355X, 1424, Spec("dspark", 3.0), ("aiter-k3-opt",))
    assert "dspark" in a.variants and a.max_running_requests_per_replica <= 48


def test_concurrency_above_the_pools_is_lowered_to_them():
    a = P.admission(CFG, MI355X, 8192 + 1024)
    asked = a.requests + 45
    p = P.predict(CFG, MI355X, Workload(8192, 1024, asked))
    assert (p.concurrency_asked, p.concurrency, p.admitted) == (asked, a.requests, a.requests)
    q = P.predict(CFG, MI355X, Workload(8192, 1024, a.requests))
    assert p.output_tok_s == q.output_tok_s and p.tpot_ms == q.tpot_ms


def test_a_request_longer_than_the_pools_hold():
    ctx = 1_000_000 + 100   # within Kimi K3's 1,048,576-token context
    plan = memory.fit(CFG, MI355X, 0.9, "bf16", context_tokens=ctx)
    assert plan.weights_fit and plan.max_kv_tokens < ctx                # the weights load, the pool is short
    assert P.admission(CFG, MI355X, ctx).requests == 0
    with pytest.raises(ValueError, match=r"^8×MI355X TP8: not one 1,000,100-token request fits "
                                         r"\(the weights load, the pools hold none\)$"):
        P.predict(CFG, MI355X, Workload(1_000_000, 100, 1))
    assert P.curve(CFG, MI355X, 1_000_000, 100) == []
    with pytest.raises(ValueError, match=r"not one 1,000,100-token request fits"):
        P.peak(CFG, MI355X, 1_000_000, 100)


@pytest.mark.parametrize("engine, why", [
    (Engine(max_mamba_cache_size=10_000_000), r"the state pool's 10,000,000 slots \(--max-mamba-cache-size "
                                              r"10,000,000\) need [\d,.]+ GiB per GPU"),
    (Engine(max_mamba_cache_size=1), r"the pools admit no request \(max_running_requests=0: 1 state slots, 5 a "
                                     r"request\)"),
    (Engine(max_running_requests=100_000, disable_radix_cache=True),
     r"the state pool's 100,000 slots \(--max-running-requests 100,000\) need [\d,.]+ GiB per GPU")])
def test_a_state_pool_setting_that_admits_nothing_says_why(engine, why):
    """predict's new state-pool flags (newcomer 6, Q2): a setting under which no request runs said
    'weights do not load' for weights that do; the error now names what the pools' sizing said."""
    with pytest.raises(ValueError, match=rf"^8×B300 TP8: not one 1,424-token request fits \({why}"):
        P.predict(CFG, B300, Workload(1024, 400, 8), engine=engine)


@pytest.mark.parametrize("input_len, output_len", [(9_999_999, 1), (1_048_576, 1), (1, 1_048_576)])
def test_a_request_above_the_models_context_is_never_predicted(input_len, output_len):
    """Issue 35: ``--layout '32xb300 tp8 pp4' --input-len 9999999 --output-len 1`` printed a TTFT of
    16,431,122 ms: a pool big enough to hold it is no reason to answer for a request the model
    cannot read (1,048,576 tokens, its config's max_position_embeddings)."""
    big = Deployment("b300", 32, 8, 4)
    total = input_len + output_len
    assert total > CFG.max_position_embeddings == 1_048_576
    for call in (lambda: P.predict(CFG, big, Workload(input_len, output_len, 1)),
                 lambda: P.curve(CFG, big, input_len, output_len), lambda: P.peak(CFG, big, input_len, output_len),
                 lambda: memory.fit(CFG, big, 0.9, "bf16", context_tokens=total)):
        with pytest.raises(ValueError, match=rf"{total:,} tokens exceeds kimi-k3's maximum of 1,048,576"):
            call()


def test_weights_that_do_not_load():
    one = Deployment("mi355x", 1, 1)
    assert not memory.fit(CFG, one, 0.9, "bf16", context_tokens=1124).weights_fit
    assert P.admission(CFG, one, 1124).requests == 0
    with pytest.raises(ValueError, match=r"1×MI355X TP1: not one 1,124-token request fits \(the weights do not load\)"):
        P.predict(CFG, one, Workload(1024, 100, 1))


# --------------------------------------------------------------------------- band


def _bands(fit_yaml, family):
    return {m: (b["band_log"] if b["validated"] else None) for m, b in fit_yaml["families"][family]["bands"].items()}


def test_each_output_takes_its_metrics_band(fit_yaml):
    """TTFT is judged by the TTFT band; tok/s, TPOT and the step by the decode band (the DSpark
    band with speculation); a metric that is not validated gives no interval at all."""
    p = P.predict(CFG, MI355X, Workload(1024, 128, 8))
    bands = _bands(fit_yaml, "amd-cdna4")
    assert p.family == "amd-cdna4" and p.bands == bands and p.band == bands["decode"]
    d = p.as_dict()
    for k, metric in (("tpot_ms", "decode"), ("ttft_ms", "ttft"), ("itl_ms", "decode"), ("output_tok_s", "decode")):
        v, b = getattr(p, k), bands[metric]
        assert v > 0 and p.band_of(k) == b
        if b is None:
            assert p.interval(k) is None and d[f"{k}_low"] is None
        else:
            assert p.interval(k) == pytest.approx((v * math.exp(-b), v * math.exp(b)), rel=1e-12)
            assert (d[k], d[f"{k}_low"], d[f"{k}_high"]) == (v, *p.interval(k))
    b = bands["decode"]
    assert d["output_tok_s_per_gpu_low"] == pytest.approx(p.output_tok_s / 8 * math.exp(-b))
    assert d["bands_log"] == bands
    q = P.predict(CFG, MI355X, Workload(1024, 128, 8), Spec("dspark", 3.0))
    assert q.band == bands["dspark"] and q.band_of("ttft_ms") == bands["ttft"]


def test_the_acceptance_spread_widens_the_dspark_interval():
    """A DSpark answer at the field's acceptance range spans the model at both ends, each widened
    by the band: a low acceptance is slower, a high one faster."""
    bands = {"decode": 0.1, "ttft": 0.2, "dspark": 0.3}
    mid = P.predict(CFG, B300, Workload(1024, 400, 8), Spec("dspark", 3.0), accept_range=(2.0, 4.5))
    ends = [P.predict(CFG, B300, Workload(1024, 400, 8), Spec("dspark", a)) for a in (2.0, 4.5)]
    assert ends[0].output_tok_s < mid.output_tok_s < ends[1].output_tok_s
    assert mid.spread["output_tok_s"] == pytest.approx((ends[0].output_tok_s, ends[1].output_tok_s))
    assert mid.spread["tpot_ms"] == pytest.approx((ends[1].tpot_ms, ends[0].tpot_ms))
    assert mid.accept_range == (2.0, 4.5)
    if mid.band is not None:
        lo, hi = mid.interval("output_tok_s")
        assert lo == pytest.approx(ends[0].output_tok_s * math.exp(-mid.band))
        assert hi == pytest.approx(ends[1].output_tok_s * math.exp(mid.band))
    import dataclasses
    fake = dataclasses.replace(mid, bands=bands)
    assert fake.interval("tpot_ms") == pytest.approx((ends[1].tpot_ms * math.exp(-0.3), ends[0].tpot_ms * math.exp(0.3)))


def test_per_node_and_per_gpu_rates():
    # 16 B300 = 2 nodes of 8 (NVLink domain) = two TP8 replicas
    p = P.predict(CFG, Deployment("b300", 16, 8), Workload(1024, 400, 32))
    assert (p.num_gpus, p.num_nodes) == (16, 2)
    assert p.output_tok_s_per_node == pytest.approx(p.output_tok_s / 2)
    assert p.output_tok_s_per_gpu == pytest.approx(p.output_tok_s / 16)
    assert p.family == "nvidia-blackwell"


def test_params_are_the_committed_fit(fit_yaml):
    p = P.predict(CFG, B300, Workload(1024, 400, 4))
    want = fit_yaml["families"]["nvidia-blackwell"]["params"]
    assert p.params.as_tuple() == tuple(want[k] for k in p.params.NAMES)


# --------------------------------------------------------------------------- the validated domain


def test_measured_domain_of_the_families(fit_yaml):
    # what the domain tests below stand on, from the committed observations
    assert _measured(fit_yaml, "amd-cdna4") == (1024, 131072, 192)
    # one Blackwell family: kernelore's 16×B200 runs (917-33,008-token prompts, up to c128) with the B300s
    assert _measured(fit_yaml, "nvidia-blackwell") == (917, 33008, 128)
    across = {(o["family"], o["origin"]) for o in fit_yaml["observations"] if o["spans_nodes"]}
    assert across == {("nvidia-blackwell", "kernelore/kimi-k3-gcp-enterprise-serving")}  # only the 16×B200 runs


def test_input_length_beyond_twice_the_measured_max(fit_yaml):
    lo, hi, _ = _measured(fit_yaml, "amd-cdna4")
    assert P.domain_gaps("mi355x", MI355X, Workload(2 * hi, 128, 8)) == ()
    assert P.domain_gaps("mi355x", MI355X, Workload(2 * hi + 1, 128, 8)) == (
        "input length 262,145 is outside the measured 1,024-131,072 (x2)",)
    assert P.domain_gaps("mi355x", MI355X, Workload(lo // 2, 128, 8)) == ()
    assert P.domain_gaps("mi355x", MI355X, Workload(lo // 2 - 1, 128, 8)) == (
        "input length 511 is outside the measured 1,024-131,072 (x2)",)


def test_decode_context_beyond_twice_the_measured(fit_yaml):
    """Issue 35: a 100k-token output printed the decode band as if measured. The decode context
    (input + output / 2) of the family's decode figures bounds it like the prompt length."""
    obs = [o for o in fit_yaml["observations"] if o["family"] == "nvidia-blackwell" and o["metric"] == "decode"]
    hi = max(o["input_len"] + o["output_len"] / 2 for o in obs)
    assert P.domain_gaps("b300", B300, Workload(8192, int(2 * (2 * hi - 8192)), 8)) == ()
    got = P.domain_gaps("b300", B300, Workload(8192, 200_000, 8))
    assert got == (f"decode context 108,192 is outside the measured "
                   f"{min(o['input_len'] + o['output_len'] / 2 for o in obs):,.0f}-{hi:,.0f} (x2)",)


def test_concurrency_beyond_twice_the_measured_max(fit_yaml):
    _, _, c = _measured(fit_yaml, "amd-cdna4")
    assert P.domain_gaps("mi350x", MI355X, Workload(1024, 128, 2 * c)) == ()
    assert P.domain_gaps("mi350x", MI355X, Workload(1024, 128, 2 * c + 1)) == (
        f"concurrency {2 * c + 1} is outside the measured 1-{c} (x2)",)
    _, _, c = _measured(fit_yaml, "nvidia-blackwell")
    assert P.domain_gaps("b300", B300, Workload(1024, 128, 2 * c + 1)) == (
        "concurrency 257 is outside the measured 1-128 (x2)",)
    both = P.domain_gaps("b300", B300, Workload(70_000, 128, 300))
    assert [g.split()[0] for g in both] == ["input", "decode", "concurrency"]


def test_a_deployment_spanning_nodes_leaves_the_domain():
    tp16 = Deployment("mi355x", 16, 16)                                   # TP across two 8-GPU nodes
    assert P.spans_nodes(tp16) and not P.spans_nodes(Deployment("mi355x", 16, 8))
    assert P.domain_gaps("mi355x", tp16, Workload(1024, 128, 8)) == (
        "TP16: no public measurement of decode on this family used it",
        "it spans nodes over scale-out; decode runs of the family that do: none")
    p = P.predict(CFG, tp16, Workload(1024, 128, 8))
    assert not p.in_domain and p.as_dict()["in_validated_domain"] is False


def test_spanning_nodes_needs_two_repositories_that_do(fit_yaml):
    """Model v4: the cross-node costs (scale_out_us, pipeline_us) are fitted on kernelore's 16×B200
    runs, the only public ones across nodes; leaving that repository out can only extrapolate them,
    so a 16×B200 question is outside the validated domain and says whose runs it rests on."""
    b200 = Deployment("b200", 16, 16)
    assert P.spans_nodes(b200) and P.spans_nodes(Deployment("b200", 16, 8, pp=2))
    gaps = P.domain_gaps("b200", b200, Workload(1024, 1024, 8))
    assert gaps == ("it spans nodes over scale-out; decode runs of the family that do: 1 repository "
                    "(kernelore/kimi-k3-gcp-enterprise-serving), so its cross-node costs are fitted but not "
                    "validated on another",)
    assert P.domain_gaps("b300", B300, Workload(1024, 1024, 8)) == ()     # the same family inside one node


def test_a_question_inside_is_in_domain():
    p = P.predict(CFG, MI355X, Workload(8192, 1024, 16), variants=("aiter-k3-opt",), prefill_attention="fallback")
    assert p.in_domain and p.outside == () and p.as_dict()["outside_validated_domain"] == []
    assert p.ttft_in_domain and p.as_dict()["in_validated_domain"] is True


def test_layout_settings_and_engine_leave_the_domain():
    """Issue 35: EP, fp8 KV, TP4xPP2, another engine, a setting no public run used: each is named."""
    w = Workload(1024, 1024, 8)
    tp4pp2 = Deployment("mi355x", 8, 4, pp=2)
    cases = [("expert parallelism: no public measurement of decode on this family used it", Deployment("mi355x", 8, 8, ep=True), {}),
             ("a KV cache in fp8: no public measurement of decode on this family used it", B300, {"kv_dtype": "fp8"}),
             ("TP4: no public measurement of decode on this family used it", tp4pp2, {}),
             ("pipeline stages: no public measurement of decode on this family used it", tp4pp2, {}),
             ("engine tokenspeed: no public measurement of decode on this family ran it", MI355X, {"engine": Engine("tokenspeed")}),
             ("setting hicache: no public measurement of decode on this family ran it", MI355X, {"variants": ("hicache",)})]
    for gap, dep, kw in cases:
        got = P.domain_gaps(dep.gpu, dep, w, **kw)
        assert gap in got, (gap, got)
    assert P.domain_gaps("mi355x", MI355X, w, engine=Engine("vllm")) == ()   # vLLM decode was measured on MI355X


def test_dspark_domain_covers_the_acceptance_and_the_block():
    w = Workload(1024, 1024, 8)
    assert P.domain_gaps("mi355x", MI355X, w, "dspark", spec=Spec("dspark", 3.0)) == ()
    far = P.domain_gaps("mi355x", MI355X, w, "dspark", spec=Spec("dspark", 7.9))
    assert far and far[0].startswith("acceptance length 7.9 is outside the measured")
    assert P.domain_gaps("mi355x", MI355X, w, "dspark", spec=Spec("dspark", 2.0, block=4)) == (
        "DSpark block size 4: no public measurement on this family used it",)


def test_json_in_validated_domain_is_false_when_the_ttft_is_outside():
    """Issue 35: `predict --json` said in_validated_domain: true beside a TTFT outside its domain."""
    p = P.predict(CFG, MI355X, Workload(8192, 1024, 16), variants=("aiter-k3-opt",), prefill_attention="fast",
                  harness=Harness("rate", "uniform", 0.8))
    d = p.as_dict()
    assert d["ttft_outside_validated_domain"] and d["ttft_in_validated_domain"] is False
    assert d["in_validated_domain"] is False
    assert d["speed_in_validated_domain"] == (not p.outside)


def test_ttft_has_its_own_domain_per_prefill_kernel(fit_yaml):
    """TTFT is validated where TTFT was measured with the same prefill kernel: the Triton fallback's
    on MI35x to 131,072 tokens (one long-context playbook), so a 300k fallback prefill is outside;
    the engine is not a TTFT regime of its own (the kernel is), the harness's regime is."""
    slow = [o["input_len"] for o in fit_yaml["observations"] if o["family"] == "amd-cdna4"
            and o["metric"] == "ttft" and o["prefill_attention"] == "fallback"]
    assert slow and (min(slow), max(slow)) == (1024, 131072)
    assert P.domain_gaps("mi355x", MI355X, Workload(262144, 1, 1), "ttft", "fallback") == ()
    assert P.domain_gaps("mi355x", MI355X, Workload(262145, 1, 1), "ttft", "fallback") == (
        "input length 262,145 is outside the measured 1,024-131,072 (x2)",)
    assert P.domain_gaps("mi355x", MI355X, Workload(8192, 1, 1), "ttft", "fast", engine=Engine("tokenspeed")) == ()
    staggered = P.domain_gaps("mi355x", MI355X, Workload(8192, 1, 1), "ttft", "fast",
                              harness=Harness("rate", "uniform", 0.8))
    assert staggered and "the staggered regime" in staggered[0]


def test_nearest_measurements_start_with_the_same_workload():
    # the cookbook's 8×MI350X 8192/1024 c16 cell has three figures (tok/s, TPOT, TTFT): distance 0
    p = P.predict(CFG, Deployment("mi350x", 8, 8), Workload(8192, 1024, 16))
    assert [n["id"] for n in p.nearest] == ["sglang_cookbook_mi350x_nospec_tokps_gpu_c16",
                                            "sglang_cookbook_mi350x_nospec_tpot_c16",
                                            "sglang_cookbook_mi350x_nospec_ttft_c16"]
    assert all(n["workload"] == "8192/1024 c16" and n["gpu"] == "mi350x" for n in p.nearest)


# --------------------------------------------------------------------------- uncalibrated GPUs


@pytest.mark.parametrize("gpu, family", [("h100", "nvidia-hopper"), ("mi300x", "amd-cdna3")])
def test_a_gpu_of_an_uncalibrated_family(fit_yaml, gpu, family):
    fams = yaml.safe_load((REPO / "data" / "serving_model.yaml").read_text(encoding="utf-8"))["families"]
    assert gpu in fams[family]["gpus"]
    calibrated = list(fit_yaml["families"])
    assert family not in calibrated
    with pytest.raises(P.NotCalibrated) as ei:
        P.predict(CFG, Deployment(gpu, 8, 8), Workload(1024, 128, 1))
    assert isinstance(ei.value, ValueError)
    assert str(ei.value) == (f"no public Kimi K3 measurements calibrate the serving model for {gpu} "
                             f"(family {family}); calibrated families: {', '.join(calibrated)}")


@pytest.mark.parametrize("gpu", ["gb300", "h200", "mi325x", "mi455x", "rtx_pro_6000_blackwell", "ascend_a3"])
def test_a_gpu_public_runs_used_is_refused_by_name_with_why(gpu):
    """Every GPU a public Kimi K3 run used is calibrated or refused by name, with the reason."""
    why = yaml.safe_load((REPO / "data" / "serving_model.yaml").read_text(encoding="utf-8"))["refused_gpus"][gpu]
    with pytest.raises(P.NotCalibrated) as ei:
        P.family_params(gpu)
    assert str(ei.value) == f"the serving model refuses {gpu}: {why}"


def test_every_gpu_of_a_public_run_is_known_or_refused(fit_yaml):
    pm = yaml.safe_load((REPO / "data" / "public_measurements.yaml").read_text(encoding="utf-8"))
    sm = yaml.safe_load((REPO / "data" / "serving_model.yaml").read_text(encoding="utf-8"))
    calibrated = {g for f in fit_yaml["families"] for g in sm["families"][f]["gpus"]}
    used = {m["gpu"] for m in pm["measurements"] if m["gpu"]}
    assert used - calibrated - set(sm["refused_gpus"]) == set(), used - calibrated


# --------------------------------------------------------------------------- curve and peak


def test_curve_sweeps_the_admitted_concurrencies():
    a = P.admission(CFG, MI355X, 1024 + 400).requests
    pts = P.curve(CFG, MI355X, 1024, 400)
    want = sorted({c for c in P.SWEEP if c <= a} | {a})
    assert a < max(P.SWEEP) and [p.concurrency for p in pts] == want
    assert all(p.concurrency == p.concurrency_asked and p.admitted == a for p in pts)


def test_peak_is_the_max_over_the_curve():
    for dep, var in ((MI355X, ("aiter-k3-opt",)), (B300, ())):
        pts = P.curve(CFG, dep, 1024, 400, NO_SPEC, var)
        best = P.peak(CFG, dep, 1024, 400, NO_SPEC, var)
        assert best.output_tok_s == max(p.output_tok_s for p in pts)
        assert best.concurrency in [p.concurrency for p in pts]
        assert all(best.output_tok_s >= p.output_tok_s for p in pts)


def test_peak_over_given_concurrencies():
    pts = P.curve(CFG, B300, 1024, 400, concurrencies=(1, 4, 10_000))
    a = P.admission(CFG, B300, 1424).requests
    assert [p.concurrency for p in pts] == [1, 4, a]                       # 10,000 is replaced by the limit
    best = P.peak(CFG, B300, 1024, 400, concurrencies=(1, 4, 10_000))
    assert best.output_tok_s == max(p.output_tok_s for p in pts)


# --------------------------------------------------------------------------- python -m k3lab predict


def _env():
    env = dict(os.environ)
    env.pop("K3LAB_DATA", None)
    env.pop("K3LAB_DEBUG", None)
    return env


def _cmd(*args):
    return [sys.executable, "-m", "k3lab", "predict", *args]


BASE = ["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--input-len", "8192", "--output-len", "1024"]

JSON_KEYS = {
    "layout", "gpu", "family", "variants", "input_len", "output_len", "concurrency_asked", "concurrency",
    "admitted_requests", "spec", "accept_len", "accept_len_range", "bands_log", "band_validated", "validated",
    "in_validated_domain",
    "ttft_outside_validated_domain", "admission", "engine", "regime", "arrival", "length_distribution",
    "speed_in_validated_domain", "ttft_in_validated_domain",
    "outside_validated_domain", "params", "nearest_measurements",
    *(f"{k}{s}" for k in ("tpot_ms", "ttft_ms", "itl_ms", "output_tok_s", "output_tok_s_per_node",
                          "output_tok_s_per_gpu") for s in ("", "_low", "_high")),
}

BAD = {
    "unknown gpu": (["--gpu", "xyz", "--gpus", "8", "--tp", "8", "--input-len", "1024", "--output-len", "100",
                     "--concurrency", "4"], "unknown GPU 'xyz'; known GPUs: "),
    "negative concurrency": (BASE + ["--concurrency", "-4"], "argument --concurrency: must be 1 to 10,000,000 requests"),
    "zero input": (["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--input-len", "0", "--output-len", "100",
                    "--concurrency", "4"], "argument --input-len: must be 1 to 10,000,000 tokens"),
    "gpus not whole replicas": (["--gpu", "mi355x", "--gpus", "12", "--tp", "8", "--input-len", "1024",
                                 "--output-len", "100", "--concurrency", "4"], "num_gpus=12 is not a multiple of tp x pp = 8"),
    "dcp not dividing tp": (BASE + ["--concurrency", "4", "--dcp", "3"], "dcp=3 must divide tp=8"),
    "tp not a number": (["--gpu", "mi355x", "--gpus", "8", "--tp", "eight", "--input-len", "1024", "--output-len", "100",
                         "--concurrency", "4"], "argument --tp: must be an integer (1 to 1,024), got 'eight'"),
    "concurrency not an integer": (BASE + ["--concurrency", "1.5"], "argument --concurrency: must be an integer"),
    "accept-len nan": (BASE + ["--concurrency", "4", "--spec", "dspark", "--accept-len", "nan"],
                       "argument --accept-len: must be a finite number (1 to 8 tokens per verify step), got nan"),
    "accept-len without spec": (BASE + ["--concurrency", "4", "--accept-len", "3"],
                                "--accept-len needs --spec dspark"),
    "unknown engine": (BASE + ["--concurrency", "4", "--engine", "trtllm"], "argument --engine: invalid choice"),
    "range ratio without uniform": (BASE + ["--concurrency", "4", "--range-ratio", "0.8"],
                                    "--range-ratio goes with --lengths uniform"),
    "unknown variant": (BASE + ["--concurrency", "4", "--variant", "turbo"], "unknown variant(s) ['turbo']"),
    "uncalibrated gpu": (["--gpu", "h100", "--gpus", "8", "--tp", "8", "--input-len", "1024", "--output-len", "100",
                          "--concurrency", "4"], "no public Kimi K3 measurements calibrate the serving model for h100"),
    "request too long": (["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--input-len", "1000000", "--output-len", "100",
                          "--concurrency", "1"], "not one 1,000,100-token request fits"),
    "request above the context": (["--layout", "32xb300 tp8 pp4", "--input-len", "9999999", "--output-len", "1",
                                   "--concurrency", "1"],
                                  "a request of 9,999,999 + 1 of 10,000,000 tokens exceeds kimi-k3's maximum of 1,048,576"),
    "layout past the GPU cap": (["--layout", "100008xmi355x tp8", "--input-len", "1024", "--output-len", "1",
                                 "--concurrency", "1"], "the GPU count must be 1 to 100,000 GPUs"),
    "layout with an open setting": (["--layout", "8xmi355x tp8 [", "--input-len", "1024", "--output-len", "1",
                                     "--concurrency", "1"], "a setting is written [name, ...] at the end"),
    "missing argument": (["--gpu", "mi355x", "--gpus", "8", "--tp", "8"], "the following arguments are required"),
}


@pytest.fixture(scope="module")
def runs():
    """Every command of this module, run at once (in parallel): {name: CompletedProcess-like}."""
    cmds = {"json": _cmd(*BASE, "--concurrency", "64", "--json"),
            "json_dspark": _cmd("--gpu", "b300", "--gpus", "16", "--tp", "8", "--input-len", "1024",
                                "--output-len", "400", "--concurrency", "32", "--spec", "dspark", "--accept-len", "3.5",
                                "--kv-dtype", "fp8", "--json"),
            "text": _cmd(*BASE, "--concurrency", "64"),
            "outside": _cmd("--gpu", "mi355x", "--gpus", "32", "--tp", "32", "--input-len", "1000000",
                            "--output-len", "100", "--concurrency", "1")}
    cmds.update({k: _cmd(*a) for k, (a, _) in BAD.items()})
    procs = {k: subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=_env())
             for k, c in cmds.items()}
    out = {}
    for k, p in procs.items():
        so, se = p.communicate(timeout=300)
        out[k] = (p.returncode, so, se)
    return out


#: what the CLI's JSON adds to Prediction.as_dict: the latency target, the settings that change the answer,
#: (None off AMD GPUs) the attention backends side by side and the latency floors public runs on the same setup set
#: (k3lab.serving.measured_bounds; {} where none does)
CLI_KEYS = {"slo", "slo_met", "slo_concurrency", "slo_slow_edge_concurrency", "slo_fast_edge_concurrency",
            "setting_traps", "attention_backend", "your_setting", "measured_bounds"}
#: ... and with DSpark: the answer without it, the break-even acceptance, the field's acceptance groups, the
#: natural-text checks (k3lab.serving.dspark_checks; empty where the acceptance lies inside the speed fit)
DSPARK_KEYS = {"without_dspark", "accept_len_breakeven", "accept_len_groups", "accept_len_speed_fit",
               "natural_text_checks", "plan_on"}


def _same(got: dict, p: P.Prediction):
    want = p.as_dict()
    assert set(got) == set(want) | CLI_KEYS | (DSPARK_KEYS if p.spec_on else set()) and set(want) == JSON_KEYS
    assert got["slo"] == {"max_tpot_ms": None, "max_ttft_ms": None, "min_tok_s_per_user": None}
    for k, v in want.items():
        if k == "bands_log":
            assert got[k] == pytest.approx(v, rel=1e-12) if None not in v.values() else got[k] == v
        elif isinstance(v, float):
            assert got[k] == pytest.approx(v, rel=1e-12), k
        elif k == "params":
            assert got[k] == pytest.approx(v, rel=1e-12)
        else:
            assert got[k] == json.loads(json.dumps(v)), k


def test_cli_json_agrees_with_predict(runs):
    rc, so, se = runs["json"]
    assert rc == 0 and se == "", se
    got = json.loads(so)
    p = P.predict(CFG, MI355X, Workload(8192, 1024, 64))
    _same(got, p)
    # asked 64, the pools admit fewer at 9,216 tokens a request
    assert got["concurrency_asked"] == 64 and got["concurrency"] == got["admitted_requests"] < 64
    assert got["layout"] == "8×MI355X TP8" and got["family"] == "amd-cdna4" and got["spec"] == "none"
    assert len(got["nearest_measurements"]) == 3


def test_cli_json_with_dspark_fp8_and_replicas(runs):
    rc, so, se = runs["json_dspark"]
    assert rc == 0 and se == "", se
    got = json.loads(so)
    p = P.predict(CFG, Deployment("b300", 16, 8), Workload(1024, 400, 32), Spec("dspark", 3.5), (), "fp8")
    _same(got, p)
    assert got["spec"] == "dspark" and got["accept_len"] == 3.5
    assert got["output_tok_s_per_gpu"] == pytest.approx(got["output_tok_s"] / 16)


def test_cli_text_names_the_settings_and_the_admission(runs):
    rc, so, se = runs["text"]
    assert rc == 0 and se == "", se
    a = P.admission(CFG, MI355X, 9216).requests
    lines = so.splitlines()
    # (newcomers 47-48: "cohort regime: closed_loop arrivals" needed the docs): the load in words
    assert lines[0] == ("kimi-k3 on 8×MI355X TP8 — sglang; load: each client sends its next request when one ends, "
                        "fixed lengths (requests run in step: the model's cohort regime), settings: defaults")
    assert (f"concurrency {a} running (asked 64: the engine admits {a}, the rest queue and wait in the TTFT)"
            in lines[1]) and "no speculative decoding" in lines[1]
    assert "A model, not a measurement" in so
    assert "decode speed: OUTSIDE the validated domain" not in so   # 8192/1024 c64 on 8xMI355X is inside


def test_cli_text_says_when_the_question_is_outside_the_validated_domain(runs):
    """The issue: a ±14% band printed with no caveat where the JSON says in_validated_domain: false."""
    rc, so, se = runs["outside"]
    assert rc == 0 and se == "", se
    p = P.predict(CFG, Deployment("mi355x", 32, 32), Workload(1_000_000, 100, 1))
    assert not p.in_domain
    caveat = next(line for line in so.splitlines() if "OUTSIDE the validated domain" in line)
    assert all(gap in caveat for gap in p.outside), (caveat, p.outside)
    assert "No band holds here (the table prints none)" in so and caveat.startswith("  decode speed: OUTSIDE")
    # ... and the table prints none: a band shown and then disclaimed read as a band (the renter's Q3)
    row = next(line for line in so.splitlines() if line.startswith("  output tok/s, deployment"))
    assert row.rstrip().endswith("outside its domain") and " – " not in row
    # the header's band says it holds inside the domain, not here (newcomer 14: "x1.29" above "outside its domain")
    bands = next(line for line in so.splitlines() if "bands = the out-of-sample error" in line)
    assert "decode x1.29 (-23%/+29%) inside its validated domain (not here: below)" in bands, bands


def test_cli_text_band_line_inside_the_domain_has_no_caveat(runs):
    bands = next(line for line in runs["text"][1].splitlines() if "bands = the out-of-sample error" in line)
    assert "decode x1.29 (-23%/+29%), TTFT" in bands and "not here" not in bands, bands


@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_bad_input_is_one_line_and_exit_2(runs, case):
    rc, so, se = runs[case]
    assert rc == 2, (rc, so, se)
    assert "Traceback" not in se and so == ""
    err = se.strip().splitlines()
    assert len(err) == 1, se
    assert err[0].startswith("k3lab predict: error: "), err[0]
    assert BAD[case][1] in err[0], err[0]


def test_curve_adds_the_admission_limit_only_in_place_of_a_concurrency_above_it():
    from k3lab.serving.predict import admission, curve
    from k3lab.specs import Deployment, load_model

    cfg, dep = load_model("kimi-k3"), Deployment("b300", 8, 8)
    limit = admission(cfg, dep, 1024 + 400).requests
    assert [p.concurrency for p in curve(cfg, dep, 1024, 400, concurrencies=(1, 2))] == [1, 2]
    assert [p.concurrency for p in curve(cfg, dep, 1024, 400, concurrencies=(1, 2, 10 * limit))] == [1, 2, limit]
    assert [p.concurrency for p in curve(cfg, dep, 1024, 400, concurrencies=(1, 2, 10 * limit), max_running=2)] == [1, 2]


def test_the_admission_limit_is_explained():
    """Issue 31: with DSpark "the pools admit 32" while a public run ran at c64 — the answer says what
    binds (the request slots, not the KV pool) and what a run at higher concurrency sets."""
    dep = Deployment("b300", 8, 8, dcp=8)
    p = P.predict(CFG, dep, Workload(8192, 1024, 64), Spec("dspark", 4.5))
    a = P.admission(CFG, dep, 9216, Spec("dspark", 4.5))
    assert p.concurrency == a.requests < 64 and a.max_running_requests_per_replica < a.kv_requests_per_replica
    assert p.admission_note.startswith(f"sglang's request slots bind: {a.max_running_requests_per_replica} per replica")
    assert "--max-running-requests 48" in p.admission_note and "--max-mamba-cache-size" in p.admission_note
    kv = P.predict(CFG, MI355X, Workload(100_000, 1000, 64))
    assert kv.admission_note.startswith("the KV pool holds") and kv.concurrency < 64


def test_one_blackwell_family_validates_nvidia_decode_across_gpus(fit_yaml):
    """Model v4 (issue 37's follow-up): B200, GB200 and B300 share one set of efficiencies, so the
    decode band is the error of predicting one GPU's repository from another's: sglang's B300 and
    GB200 figures from a fit on kernelore's 16×B200 runs (and whn09's B300 DSpark runs). kernelore's
    figures, predicted from single-node fits, are extrapolations across nodes: recorded, not banded."""
    b = fit_yaml["families"]["nvidia-blackwell"]["bands"]["decode"]
    assert b["validated"] and 0 < b["band_log"] <= math.log(2)
    assert {o["origin"] for o in fit_yaml["observations"] if o["family"] == "nvidia-blackwell"
            and o["metric"] == "decode"} == {"sgl-project/sglang", "kernelore/kimi-k3-gcp-enterprise-serving"}
    rows = yaml.safe_load((Path(data.__file__).parent.parent / "data" / "serving_validation.yaml").read_text())
    loro = [r for r in rows["validation"]["nvidia-blackwell"]
            if r["metric"] == "decode" and r["split"] == "leave_one_repository_out"]
    inside = [r for r in loro if not r["extrapolated"]]
    assert {r["gpu"] for r in inside} == {"b300", "gb200"} and all(r["extrapolated"] for r in loro if r["gpu"] == "b200")
    # the band is the conformal one of the inside rows: the ⌈(n + 1)·0.9⌉-th smallest |log error|
    errs = sorted(abs(r["log_error"]) for r in inside)
    assert b["band_log"] == pytest.approx(errs[math.ceil((len(errs) + 1) * 0.9) - 1], abs=1e-9)
    assert b["points"]["leave_one_repository_out"] == len(inside) >= 9
    p = P.predict(CFG, B300, Workload(1024, 400, 16))
    assert p.validated() and p.interval("output_tok_s") is not None


def _predict_cli(*args):
    return subprocess.run([sys.executable, "-m", "k3lab", "predict", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300, env={**os.environ})


def test_bands_print_as_the_factors_they_are_never_as_plus_minus(fit_yaml):
    """Q2 (c): a band of x1.88 puts the value between central ÷ 1.88 (-47%) and × 1.88 (+88%): printed that way."""
    assert P.band_words(math.log(1.88)) == "x1.88 (-47%/+88%)"     # 1 - 1/1.88 = 0.468
    assert P.band_words(math.log(1.5)) == "x1.50 (-33%/+50%)" and P.band_words(None) == "not validated"
    out = _predict_cli("--layout", "8xb300 tp8", "--input-len", "1024", "--output-len", "400", "--concurrency", "32")
    b = math.exp(fit_yaml["families"]["nvidia-blackwell"]["bands"]["decode"]["band_log"])
    assert out.returncode == 0 and f"decode x{b:.2f} (-{1 - 1 / b:.0%}/+{b - 1:.0%})" in out.stdout
    assert "±" not in out.stdout


def test_a_default_that_does_not_hold_a_full_context_request_names_the_setting_on_nvidia_too():
    """Q2 (d): sglang's defaults on 8xB300 TP8 leave no room for one 1,048,576-token request (the memory plan's
    verdict); the state-pool setting that does is named with the running requests it leaves, beside the defaults'."""
    plan = memory.plan(CFG, "b300", 8, 8, context_tokens=CFG.max_position_embeddings)
    assert plan.verdict == "fits only with a setting"
    opt = plan.best_option
    out = _predict_cli("--layout", "8xb300 tp8", "--input-len", "1024", "--output-len", "400", "--concurrency", "32")
    assert out.returncode == 0
    assert (f"a setting that changes the answer: with {opt.flags}, 8×B300 TP8 holds a 1,048,576-token request "
            f"(sglang's defaults do not) and runs at most {opt.max_running_requests} requests instead of "
            f"{plan.max_running_requests}, still all of your 32") in out.stdout
    # the MI355X with the article's setting holds it with the defaults: no such line
    mi = _predict_cli("--layout", "8xmi355x tp8 [aiter-k3-opt]", "--input-len", "1024", "--output-len", "400",
                      "--concurrency", "32")
    assert mi.returncode == 0 and "(sglang's defaults do not)" not in mi.stdout


def test_dspark_at_a_concurrency_a_full_context_request_leaves_no_room_for_says_both_numbers():
    """Q3 (e): with the DSpark draft on 8xB300 the defaults run 32 requests but hold no full-context one; the
    setting that holds it leaves fewer (the plan with the draft): 32 clients and a full-context request do not go
    together, said with both numbers."""
    plan = memory.plan(CFG, "b300", 8, 8, context_tokens=CFG.max_position_embeddings, variants=("dspark",))
    left, dflt = plan.best_option.max_running_requests, plan.max_running_requests
    assert left < 32 <= dflt
    out = _predict_cli("--layout", "8xb300 tp8", "--input-len", "8192", "--output-len", "1024", "--concurrency", "32",
                       "--spec", "dspark")
    assert out.returncode == 0
    flat = " ".join(out.stdout.split())
    assert (f"with {plan.best_option.flags}, 8×B300 TP8 with DSpark holds a 1,048,576-token request (sglang's defaults "
            f"do not) and runs at most {left} requests instead of {dflt}: your 32 clients and a full-context request "
            f"do not go together") in flat
    # at a concurrency the setting leaves room for, it says so
    few = _predict_cli("--layout", "8xb300 tp8", "--input-len", "8192", "--output-len", "1024", "--concurrency",
                       str(left), "--spec", "dspark")
    assert f"still all of your {left}" in few.stdout


def test_the_trap_line_is_computed_at_the_concurrency_the_table_shows():
    """Q5 (i): at --concurrency 1 the header's setting trap speaks of concurrency 1 (the table's tok/s), and names
    the peaks (each setting's own) where only they move past x1.5."""
    at1 = {v: P.predict(CFG, MI355X, Workload(1024, 400, 1), variants=v).output_tok_s for v in ((), ("aiter-k3-opt",))}
    peaks = {v: P.peak(CFG, MI355X, 1024, 400, variants=v) for v in ((), ("aiter-k3-opt",))}
    out = _predict_cli("--layout", "8xmi355x tp8", "--input-len", "1024", "--output-len", "400", "--concurrency", "1")
    assert out.returncode == 0
    line = next(x for x in out.stdout.splitlines() if "a setting that changes the answer" in x)
    on, off = peaks[("aiter-k3-opt",)], peaks[()]
    assert (f"serves about the same at your concurrency 1 ({at1[('aiter-k3-opt',)]:,.0f} against {at1[()]:,.0f} output "
            f"tok/s) but {on.output_tok_s:,.0f} instead of {off.output_tok_s:,.0f} (x{on.output_tok_s / off.output_tok_s:.2f})"
            f" at each one's peak (c{on.concurrency} against c{off.concurrency})") in line
    table = next(x for x in out.stdout.splitlines() if x.strip().startswith("output tok/s, deployment"))
    assert f"{at1[()]:,.0f}" in table.split()[3]
    # where it moves at your concurrency, the numbers are at it (the default admits 19 of 64; the rest queue)
    at64 = {v: P.predict(CFG, MI355X, Workload(1024, 400, 64), variants=v).output_tok_s for v in ((), ("aiter-k3-opt",))}
    out = _predict_cli("--layout", "8xmi355x tp8", "--input-len", "1024", "--output-len", "400", "--concurrency", "64")
    assert (f"serves {at64[('aiter-k3-opt',)]:,.0f} output tok/s instead of {at64[()]:,.0f} "
            f"(x{at64[('aiter-k3-opt',)] / at64[()]:.2f}) at your concurrency 64") in out.stdout


def test_nearest_lists_a_figure_once_and_the_run_that_matches_first():
    """The renter's Q3: a run's out and total tok/s rows (one figure, two rows) were listed twice,
    crowding out its TPOT and TTFT. The B300 DSpark run at c32 8,192/1,024 (whn09's README) is the
    nearest; its out tok/s, TPOT and TTFT come, each once."""
    rows = P.nearest("b300", Workload(8192, 1024, 32), Spec("dspark", 2.0))
    pub = {m.id: m for m in data.load("public_measurements").measurements}
    assert [r["kind"] for r in rows] == ["output_tok_s", "tpot_ms", "ttft_ms"]
    assert all(r["id"].startswith("whn09_b300_sa_balanced_r1_") for r in rows)
    # the figures are the README's: out tok/s 1333.3, mean TPOT 17.52 ms, mean TTFT 5.15 s
    assert [round(r["value"], 2) for r in rows] == [1333.3, 17.52, 5150.0]
    assert pub[rows[0]["id"]].value == 1333.3
    keys = [(r["layout"], r["workload"], r["kind"], round(r["value"], 1)) for r in rows]
    assert len(set(keys)) == len(keys)


def test_a_nearest_figure_says_what_it_was_published_as():
    """The renter's report: an id ending `tokps_gpu` printed as `output_tok_s 1,240.0` read as per GPU.
    sglang PR #37878's B300 row published 1,395 total tok/s per GPU; listed, it is the deployment's output
    tok/s (1,395 × 8 × 1,024 / 9,216 = 1,240) and says where it came from."""
    from k3lab.serving.cli import format_prediction

    p = P.predict(CFG, Deployment("b300", 8, 8), Workload(8192, 1024, 32))
    text = format_prediction(p)
    row = next(line for line in text.splitlines() if "sglang_pr37878_b300_bal_mxfp4_nospec_tokps_gpu_c64" in line)
    assert f"output tok/s (deployment) {1395 * 8 * 1024 / 9216:,.1f}" in row
    assert "normalised from the published figure: × 8 GPUs, total × O/(I+O)" in row


def test_a_nearest_run_says_how_it_differs_from_the_question():
    """The renter's Q3: at 8xB300 TP8+DCP8 c32 8,192/1,024 DSpark 6.4 — the public run's own setting — the
    answer (c32) and the fit's value for the run (1,828 tok/s) differed unexplained: the run admitted 22 at
    once (its --mamba-full-memory-ratio 5.13). The listing says so; a run that differs in nothing says nothing."""
    from k3lab.serving.cli import format_prediction
    from k3lab.specs import parse_layout

    p = P.predict(CFG, parse_layout("8xb300 tp8 dcp8"), Workload(8192, 1024, 32), Spec("dspark", 6.4))
    row = next(x for x in format_prediction(p).splitlines() if "whn09_b300_sa_balanced_r1_out" in x)
    assert row.endswith("; differs from your question in: 22 of its 32 clients running at once (yours 32))")
    assert "normalised from" not in row   # published per deployment, as output tok/s: nothing to say
    q = P.predict(CFG, parse_layout("8xb300 tp8"), Workload(8192, 1024, 32), Spec("dspark", 2.0))
    row = next(x for x in format_prediction(q).splitlines() if "whn09_b300_sa_balanced_r1_out" in x)
    assert ("differs from your question in: its layout 8×B300 TP8+DCP8, 22 of its 32 clients running at once (yours 32), "
            "acceptance 6.4 (yours 2)") in row


def test_a_nearest_run_the_fit_misses_past_any_band_says_so():
    """The renter's Q5: at 172,000 in, c1 on the MI355X the nearest runs include a DSpark one whose TPOT the
    fit reads at x0.12 (221.5 ms measured, 26.0 fitted), listed without a word. MI35x DSpark has no validated
    band, so a miss past x2 is named; the no-DSpark runs beside it (x0.96, x1.37) are inside theirs."""
    from k3lab.serving.cli import format_prediction
    from k3lab.specs import parse_layout

    p = P.predict(CFG, parse_layout("8xmi355x tp8"), Workload(172_000, 1024, 1), variants=("aiter-k3-opt",))
    rows = [x for x in format_prediction(p).splitlines() if x.startswith("    arist12_pb54_")]
    assert rows and all("does not explain" not in x for x in rows if "nospec" in x)
    # (attack 6: a run of other lengths says so: 131,072 in / 512 out beside 172,000 / 1,024)
    assert all("differs from your question in: 131,072 in / 512 out (yours 172,000 / 1,024))" in x
               for x in rows if "nospec_128k512" in x)
    # newcomer 15: that DSpark run sat among a no-DSpark question's nearest, unexplained; the question's own
    # setting comes first now, and the run is named under a DSpark question, with its miss and its setting
    assert not any("DSpark accepting" in x for x in rows)   # (a DSpark run's TTFT is a prefill's: listed as one)
    q = P.predict(CFG, parse_layout("8xmi355x tp8"), Workload(172_000, 1024, 1), Spec("dspark", 1.25),
                  variants=("aiter-k3-opt",))
    ds = next(x for x in format_prediction(q).splitlines() if x.startswith("    arist12_pb54_dspark_128k512_c1_tpot"))
    assert ds.endswith("; a miss beyond x2 (no validated band here): a run the fit does not explain)"), ds
    plain = P.predict(CFG, parse_layout("8xmi355x tp8"), Workload(131_072, 512, 1), variants=("aiter-k3-opt",))
    run = next(n for n in P.nearest("mi355x", Workload(131_072, 512, 1), Spec("dspark", 1.25))
               if n["id"] == "arist12_pb54_dspark_128k512_c1_tpot")
    assert "DSpark at 1.25 tokens per step (yours without)" in P.differences(run, plain)


def test_the_trap_says_about_the_same_only_where_it_is():
    """Newcomer 15: at 8,192 / 1,024 c32 the MI355X without K3_OPT serves 447 against 604 output tok/s (under the
    x1.5 that makes a trap, 26% less): the line said "about the same". It gives the factor; "about the same"
    stays for a difference under 5% (c1's 49 against 50)."""
    at32 = {v: P.predict(CFG, MI355X, Workload(8192, 1024, 32), variants=v).output_tok_s
            for v in ((), ("aiter-k3-opt",))}
    r = at32[()] / at32[("aiter-k3-opt",)]
    assert 1 / 1.5 < r < 0.95
    out = _predict_cli("--layout", "8xmi355x tp8 [aiter-k3-opt]", "--input-len", "8192", "--output-len", "1024",
                       "--concurrency", "32")
    line = next(x for x in out.stdout.splitlines() if "a setting that changes the answer" in x)
    assert (f"serves x{r:.2f} at your concurrency 32 ({at32[()]:,.0f} against {at32[('aiter-k3-opt',)]:,.0f} output "
            "tok/s) but") in line and "about the same" not in line, line


def test_a_setting_trap_is_priced_on_the_questions_own_benchmark():
    """Newcomer 33: with --arrival ramped the trap line said "557 output tok/s instead of 1,323" (the cohort
    benchmark's figures) beside a table of 1,268: the trap is priced on the question's harness, so its "instead of"
    is the table's number, and its ratio the two at that harness."""
    from k3lab.serving.engines import ARRIVALS
    from k3lab.setting_traps import setting_traps
    from k3lab.specs import parse_layout

    assert "ramped" in ARRIVALS
    r = _predict_cli("--layout", "8xmi355x tp8 [aiter-k3-opt]", "--input-len", "1024", "--output-len", "400",
                     "--concurrency", "76", "--arrival", "ramped", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    ramped = f"instead of {got['output_tok_s']:,.0f} (x"
    assert any(ramped in t for t in got["setting_traps"]), got["setting_traps"]
    # the cohort's own figure differs here, so the test would fail on the old pricing
    dep = parse_layout("8xmi355x tp8")
    cohort = P.predict(CFG, dep, Workload(1024, 400, 76), variants=("aiter-k3-opt",)).output_tok_s
    assert f"{cohort:,.0f}" != f"{got['output_tok_s']:,.0f}"
    plain = setting_traps(CFG, dep, 1024, 400, ("aiter-k3-opt",), concurrency=76)
    assert any(f"instead of {cohort:,.0f} (x" in t for t in plain)


def test_a_ttft_band_beside_an_out_of_domain_decode_says_why_it_holds():
    """Newcomer 56: at 1,048,575 tokens predict printed a TTFT band "157,528 – 367,831" under "decode speed: OUTSIDE the
    validated domain: input length ... outside the measured 1,024-131,072": TTFT has its own domain (public TTFT runs
    reach 600,000-token prompts), said where the two part; and "holds 1 requests" reads "1 request"."""
    cfg = load_model("kimi-k3")
    dep = Deployment("mi355x", 8, 8)
    p = P.predict(cfg, dep, Workload(1048575, 1, 1), variants=("aiter-k3-opt",))
    assert p.outside and not p.ttft_outside and p.band_of("ttft_ms")
    out = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xmi355x tp8 [aiter-k3-opt]",
                          "--input-len", "1048575", "--output-len", "1", "--concurrency", "1"],
                         capture_output=True, text=True, timeout=300).stdout
    assert "  TTFT: inside its validated domain (its public runs cover other prompts and layouts than decode's), so " \
           "its band holds." in out.splitlines()
    assert "holds 1 request of 1,048,576 tokens per replica" in out and "1 requests" not in out
    # inside both domains, no such line
    q = subprocess.run([sys.executable, "-m", "k3lab", "predict", "--layout", "8xmi355x tp8 [aiter-k3-opt]",
                        "--input-len", "8192", "--output-len", "1024", "--concurrency", "8"],
                       capture_output=True, text=True, timeout=300).stdout
    assert "TTFT: inside its validated domain" not in q
