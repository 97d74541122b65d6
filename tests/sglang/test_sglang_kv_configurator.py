"""sglang 0.5.23's real ``KVCacheConfigurator`` against k3lab's pool sizing, branch by branch (issue 21).

:func:`k3lab.probes.kv_configurator.run_cases` runs the release's
``_resolve_memory_pool_config`` (``_profile_available_bytes`` → ``_handle_max_mamba_cache`` →
``config_from_budget`` → ``resolve_max_num_reqs``) for Kimi K3 on an emulated SM100 GPU, in one
child process. Stubbed there (the module docstring says how): ``get_available_gpu_memory``
(returns the free GiB after loading that k3lab computes for the plan), the configurator's
``__init__`` (fields set from the real ``ServerArgs`` and ``ModelConfig``; ``layer_info`` a
stand-in with the stage's layer range), the world group, and under PP the ``all_reduce(MIN)``
of token capacities (answered with the minimum of a first pass). Everything else — the server
argument hooks, the K3 model config and its state slot, the three state-pool branches, the KV
cell, the page flooring, the running-request caps — is the release's own code.

Each case feeds the release the same free memory k3lab's :func:`k3lab.memory.plan` starts from
(capacity − start-up overhead before loading; that minus weights and vision tower after), so
the numbers compared are the sizing alone: the branch, the state slots, the KV tokens and the
running requests. k3lab's searched settings are checked at their edge: the release fits the
request under each, and not one step further.
"""

import pytest

from k3lab import memory
from k3lab.probes.kv_configurator import run_cases
from k3lab.specs import load_model

GiB = 2**30
CTX = 1_048_576


@pytest.fixture(scope="module")
def cfg():
    return load_model("kimi-k3")


def _stages(p) -> list[dict]:
    """The free memory sglang measures, per stage, for k3lab's plan ``p`` (GiB as sglang's GB)."""
    pre = p.capacity_bytes_per_gpu - p.init_overhead_bytes
    return [{"pre_model_load_gib": pre / GiB, "available_gib": (pre - w - p.other_resident_bytes_per_gpu) / GiB}
            for w in p.stage_weights_bytes]


def _args(p, **flags) -> dict:
    return {"tp_size": p.tp, "pp_size": p.pp, "mem_fraction_static": p.mem_fraction, **flags}


#: (name, k3lab plan keywords, sglang ServerArgs keywords) on 8×B300 TP8
B300_CASES = [
    ("ratio default", {}, {}),
    ("ratio 0.5", {"mamba_full_memory_ratio": 0.5}, {"mamba_full_memory_ratio": 0.5}),
    ("ratio 2 (above 1: the state pool takes 2/3)", {"mamba_full_memory_ratio": 2.0}, {"mamba_full_memory_ratio": 2.0}),
    ("explicit 300", {"max_mamba_cache_size": 300}, {"max_mamba_cache_size": 300}),
    ("from max running 40", {"disable_radix_cache": True, "max_running_requests": 40},
     {"disable_radix_cache": True, "max_running_requests": 40}),
    ("radix off alone: ratio, 1 slot per request", {"disable_radix_cache": True}, {"disable_radix_cache": True}),
    ("explicit 300, max running 20", {"max_mamba_cache_size": 300, "max_running_requests": 20},
     {"max_mamba_cache_size": 300, "max_running_requests": 20}),
]
#: (name, layout keywords of memory.plan, state-pool keywords, extra ServerArgs keywords)
OTHER_LAYOUTS = [
    ("dp-attention explicit 800", {"num_gpus": 16, "tp": 16, "variants": ["dp-attention"]},
     {"max_mamba_cache_size": 800}, {"enable_dp_attention": True, "dp_size": 16}),
    ("pp2 ratio default", {"num_gpus": 16, "tp": 8, "pp": 2}, {}, {}),
    ("pp2 explicit 1000", {"num_gpus": 16, "tp": 8, "pp": 2}, {"max_mamba_cache_size": 1000}, {}),
    ("pp2 from max running 200", {"num_gpus": 16, "tp": 8, "pp": 2},
     {"disable_radix_cache": True, "max_running_requests": 200}, {}),
]
SGLANG_REFUSES = [("max_mamba_cache_size 0", {"max_mamba_cache_size": 0}),
                  ("mamba_full_memory_ratio 0", {"mamba_full_memory_ratio": 0.0})]


def _edge_cases(b300) -> list[tuple[str, dict, bool]]:
    """k3lab's searched settings for 8×B300 TP8 (a 1M request fits only with one), and one step
    past each: (name, sglang keywords, whether k3lab says it fits)."""
    out = []
    for o in b300.fit_options:
        st = o.settings
        if o.branch == "ratio":
            at, past = {"mamba_full_memory_ratio": st.mamba_full_memory_ratio}, \
                {"mamba_full_memory_ratio": round(st.mamba_full_memory_ratio + 0.001, 3)}
        elif o.branch == "explicit":
            at, past = {"max_mamba_cache_size": st.max_mamba_cache_size}, \
                {"max_mamba_cache_size": st.max_mamba_cache_size + 1}
        else:
            at = {"disable_radix_cache": True, "max_running_requests": st.max_running_requests}
            past = {"disable_radix_cache": True, "max_running_requests": st.max_running_requests + 1}
        out += [(f"{o.branch} at k3lab's edge", at, True), (f"{o.branch} one step past", past, False)]
    return out


@pytest.fixture(scope="module")
def runs(cfg):
    b300 = memory.plan(cfg, "b300", 8, 8)
    pp2 = memory.plan(cfg, "b300", 16, 8, pp=2)
    cases = [(n, memory.plan(cfg, "b300", 8, 8, **kw), _args(b300, **sa)) for n, kw, sa in B300_CASES]
    cases += [(n, None, _args(b300, **sa)) for n, sa in SGLANG_REFUSES]
    edges = _edge_cases(b300)
    cases += [(n, fits, _args(b300, **sa)) for n, sa, fits in edges]
    stages = {n: _stages(b300) for n, _, _ in cases}
    for n, layout, kw, extra in OTHER_LAYOUTS:
        p = memory.plan(cfg, "b300", **layout, **kw)
        cases.append((n, p, _args(p, **kw, **extra)))
        stages[n] = _stages(p)
    results = run_cases([{"server_args": sa, "stages": stages[n]} for n, _, sa in cases])
    return {"b300": b300, "pp2": pp2, "edges": edges,
            "by_name": {n: (want, got) for (n, want, _), got in zip(cases, results)}}


def test_the_release_runs_k3_as_k3lab_assumes(runs, cfg):
    _, got = runs["by_name"]["ratio default"]
    assert got["sglang_version"] == "0.5.23"
    # the state slot of sglang's own KimiLinear config = k3lab's (69 KDA layers at TP8)
    assert got["mamba_cache_per_req"] == memory.kda_state_bytes_per_request(cfg, 8) == 56_171_520
    # trtllm_mla on SM100: 64-token pages; multimodal with the CPU feature transport (100 MiB reserve)
    assert got["page_size"] == runs["b300"].page_size == 64
    assert got["is_multimodal"] and got["mm_feature_transport"] == "cpu"
    assert got["mamba_full_memory_ratio"] == 0.9 and got["context_len"] == CTX


@pytest.mark.parametrize("name", [n for n, _, _ in B300_CASES])
def test_each_branch_equals_the_release(runs, name):
    want, got = runs["by_name"][name]
    assert "error" not in got, got.get("error")
    s = got["stages"][0]
    assert s["branch"] == want.state_pool_branch, (name, s["overrides"])
    assert (s["max_mamba_cache_size"], s["max_total_num_tokens"], s["max_running_requests"]) == \
        (want.state_slots, want.max_kv_tokens, want.max_running_requests), name


def test_radix_cache_off_needs_no_max_running_requests(runs):
    """0.5.23 takes the ratio branch (one slot per request) when the radix cache is off and no
    --max-running-requests is given: nothing refuses it, so k3lab does not either."""
    want, got = runs["by_name"]["radix off alone: ratio, 1 slot per request"]
    assert got["disable_radix_cache"] and got["max_running_requests_arg"] is None
    assert got["stages"][0]["branch"] == "ratio"
    default = runs["by_name"]["ratio default"][1]["stages"][0]
    assert got["stages"][0]["max_mamba_cache_size"] == default["max_mamba_cache_size"]
    assert got["stages"][0]["max_running_requests"] > default["max_running_requests"]


@pytest.mark.parametrize("name", [n for n, _ in SGLANG_REFUSES])
def test_the_release_refuses_what_k3lab_refuses(runs, name, cfg):
    _, got = runs["by_name"][name]
    assert "Not enough GPU memory for hybrid" in got["error"], got
    kw = {"max_mamba_cache_size": 0} if "cache_size" in name else {"mamba_full_memory_ratio": 0.0}
    with pytest.raises(ValueError, match="must be"):
        memory.plan(cfg, "b300", 8, 8, **kw)


def test_k3lab_search_is_exact_at_the_releases_edge(runs):
    b300 = runs["b300"]
    assert not b300.fits and b300.verdict == "fits only with a setting"
    assert {o.branch for o in b300.fit_options} == {"ratio", "explicit", "from_max_running_requests"}
    for name, _, fits in runs["edges"]:
        _, got = runs["by_name"][name]
        s = got["stages"][0]
        holds = s["max_total_num_tokens"] >= CTX and s["max_running_requests"] >= 1
        assert holds is fits, (name, s)
    for o in b300.fit_options:
        s = runs["by_name"][f"{o.branch} at k3lab's edge"][1]["stages"][0]
        assert (s["max_total_num_tokens"], s["max_running_requests"], s["max_mamba_cache_size"]) == \
            (o.max_total_num_tokens, o.max_running_requests, o.state_slots), o.branch


@pytest.mark.parametrize("name", [n for n, *_ in OTHER_LAYOUTS if n.startswith("pp2")])
def test_pipeline_stages_equal_the_release(runs, name):
    """Under PP every rank charges the state slot of the stage with the most KDA layers
    (35 of 69 on stage 0 at PP2), the overlap scheduler is off (4 slots per request with the
    radix cache), and the stages run with the fewer tokens; k3lab's binding stage is sglang's."""
    want, got = runs["by_name"][name]
    assert "error" not in got, got.get("error")
    st = got["stages"]
    assert [(s["start_layer"], s["end_layer"]) for s in st] == [(0, 46), (46, 93)]
    assert want.kda_state_bytes_per_request == 56_171_520 * 35 // 69 == 28_492_800
    assert all(s["branch"] == want.state_pool_branch for s in st)
    assert st[0]["max_total_num_tokens"] == st[1]["max_total_num_tokens"] == want.max_kv_tokens
    assert min(s["own_token_capacity"] for s in st) == want.max_kv_tokens
    binding = min(st, key=lambda s: s["own_token_capacity"])
    assert (binding["max_mamba_cache_size"], binding["max_running_requests"]) == \
        (want.state_slots, want.max_running_requests)


def test_dp_attention_divides_the_explicit_slots(runs):
    """--max-mamba-cache-size is divided over the attention-DP workers (800 / 16 = 50 slots),
    each slot the whole KDA state (attention TP 1: 8 × the TP8 slot); 16×B300 TP16."""
    want, got = runs["by_name"]["dp-attention explicit 800"]
    assert "error" not in got, got.get("error")
    s = got["stages"][0]
    assert got["mamba_cache_per_req"] == want.kda_state_bytes_per_request == 8 * 56_171_520
    assert s["branch"] == "explicit" and s["max_mamba_cache_size"] == want.state_slots == 50
    assert (s["max_total_num_tokens"], s["max_running_requests"]) == (want.max_kv_tokens, want.max_running_requests)
