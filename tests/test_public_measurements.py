"""data/public_measurements.yaml: every set-aside figure names its rule, and the rule holds.

``use: false`` entries carry a ``why_kind`` (k3lab.schemas.public.WHY_KINDS); where a field
other than ``why`` can show the reason, the test checks that field, in both directions where
the field is specific enough (every entry it picks is set aside). AMD sglang entries record
``SGLANG_AITER_K3_OPT`` from their recipe (``sglang_env``), not from a text match. The file is
read with PyYAML independently of the loader; the schema's refusals are checked on a copy.
"""

import re
from pathlib import Path

import pytest
import yaml

from k3lab import data
from k3lab.schemas import public

REPO = Path(__file__).resolve().parents[1]
# written out by hand from the categories, not imported
KINDS = {"duplicate", "prefix_reuse", "trace_workload", "variable_workload", "disaggregated", "requantised",
         "kernel_variant", "broken_run", "harness_artifact", "offline_benchmark", "held_out"}


@pytest.fixture(scope="module")
def doc():
    return yaml.safe_load((REPO / "data" / "public_measurements.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def entries(doc):
    return doc["measurements"]


@pytest.fixture(scope="module")
def by_id(entries):
    return {m["id"]: m for m in entries}


@pytest.fixture(scope="module")
def amd_gpus():
    hw = yaml.safe_load((REPO / "data" / "hardware.yaml").read_text(encoding="utf-8"))["gpus"]
    return {g for g, f in hw.items() if f["vendor"] == "amd"}


def kind_rows(entries, kind):
    rows = [m for m in entries if m.get("why_kind") == kind]
    assert rows, f"no {kind} rows: the predicate below would pass vacuously"
    return rows


def text(m, *fields):
    return " ".join(str(m.get(f) or "") for f in fields)


def test_the_schema_lists_the_same_kinds():
    assert set(public.WHY_KINDS) == KINDS


def test_every_set_aside_entry_names_its_rule_and_no_used_entry_does(entries):
    for m in entries:
        if m.get("use", True) is False:
            assert m.get("why") and m.get("why_kind") in KINDS, m["id"]
        else:
            assert "why_kind" not in m and "why" not in m, m["id"]


# --------------------------------------------------------------------------- one predicate per kind


def test_held_out_is_one_whole_repository_otherwise_usable(doc, entries):
    """held_out: every figure of exactly one repository (the one found last), none of its figures
    used, and each would pass the rules if it were (the model is measured on it, never fitted)."""
    from k3lab.serving.observations import held_out, normalise

    rows = kind_rows(entries, "held_out")
    repos = {doc["sources"][m["source"]]["repo"] for m in rows}
    assert len(repos) == 1, repos
    every = [m for m in entries if doc["sources"][m["source"]]["repo"] in repos]
    assert len(every) == len(rows)
    models = {m.id: m for m in data.load("public_measurements").measurements}
    assert {o.id for o in held_out()} == {m["id"] for m in rows}
    assert all(normalise(models[m["id"]]).reason == m["why"] for m in rows)


def test_new_sources_state_their_harness_and_admission(entries):
    """The figures added for model v3 carry the harness fields; a uniform length distribution
    states its range ratio (the schema refuses one without the other)."""
    for m in entries:
        if m["source"].startswith(("arist12_", "amppbc_", "mnmehta_")):
            assert m.get("harness") and m.get("arrival") and m.get("length_distribution"), m["id"]
            assert m.get("max_running_requests"), m["id"]
        assert (m.get("length_distribution") == "uniform") == (m.get("range_ratio") is not None), m["id"]


def _deployment_rate(m):
    """A throughput figure scaled to the whole deployment, or None where the entry lacks the count."""
    k = {"deployment": 1, "per_gpu": m.get("num_gpus"), "per_node": m.get("nodes"), "per_stream": m.get("concurrency")}
    n = k[m["scope"]]
    return None if n is None else m["value"] * n


def test_a_duplicate_restates_its_target(entries, by_id):
    """duplicate ⇔ duplicate_of; the target exists, is not itself a duplicate, and carries the
    same number: equal within the rounding of a restatement (1 %), equal once both are scaled to
    the deployment, or — for an 'effective TPOT' — 1000 × concurrency / the target's output tok/s."""
    for m in entries:
        assert (m.get("why_kind") == "duplicate") == (m.get("duplicate_of") is not None), m["id"]
    for m in kind_rows(entries, "duplicate"):
        t = by_id[m["duplicate_of"]]
        assert t.get("why_kind") != "duplicate", (m["id"], t["id"])
        if m["metric"] == t["metric"] and m["scope"] == t["scope"]:
            a, b = m["value"], t["value"]
        elif m["metric"] == t["metric"]:
            a, b = _deployment_rate(m), _deployment_rate(t)
        else:
            assert (m["metric"], m["scope"], t["metric"], t["scope"]) == (
                "tpot_ms", "per_stream", "output_tok_s", "deployment"), m["id"]
            assert m["concurrency"] == t["concurrency"], m["id"]
            a, b = m["value"], 1000 * m["concurrency"] / t["value"]
        assert a is not None and b is not None, m["id"]
        assert abs(a - b) <= 0.01 * max(a, b), (m["id"], a, b)


PREFIX = re.compile(r"shared[- ]prefix|prefix \+|common prefix|prefix cach\w* on|prefix cache on", re.I)


def test_prefix_reuse_is_what_the_dataset_says(entries):
    """prefix_reuse rows describe a prefix in their dataset, and none says it defeated the cache;
    every current entry whose dataset describes a shared prefix is set aside."""
    for m in kind_rows(entries, "prefix_reuse"):
        assert "prefix" in (m.get("dataset") or "").lower(), m["id"]
        assert not re.search(r"nonce|0% (prefix[- ])?cache hits", m.get("dataset") or "", re.I), m["id"]
    for m in entries:
        if PREFIX.search(m.get("dataset") or "") and m["status"] == "current":
            assert m.get("use", True) is False, m["id"]


def test_trace_workloads_are_replays(entries):
    for m in kind_rows(entries, "trace_workload"):
        assert re.search(r"trace|replay", m.get("dataset") or "", re.I), m["id"]
    for m in entries:
        if re.search(r"trace|replay", m.get("dataset") or "", re.I) and m["status"] == "current":
            assert m.get("use", True) is False, m["id"]


def test_requantised_rows_name_their_checkpoint(entries):
    def other_checkpoint(m):
        return m["model"] != "kimi-k3" and "official" not in m["model"]

    for m in kind_rows(entries, "requantised"):
        assert other_checkpoint(m), m["id"]
    for m in entries:
        if other_checkpoint(m) and m["status"] == "current":
            assert m.get("use", True) is False, m["id"]


def test_kernel_variants_name_their_moe_path(entries):
    variant = re.compile(r"EMULATION|A4W4")
    for m in kind_rows(entries, "kernel_variant"):
        assert variant.search(m.get("moe_backend") or ""), m["id"]


def test_offline_benchmarks_are_fixed_batch(entries):
    fixed = re.compile(r"fixed batch|bench_one_batch")
    for m in kind_rows(entries, "offline_benchmark"):
        assert fixed.search(m.get("dataset") or ""), m["id"]
    for m in entries:
        if fixed.search(m.get("dataset") or ""):
            assert m.get("use", True) is False, m["id"]


def test_disaggregated_rows_say_so_outside_why(entries):
    pd = re.compile(r"disagg|\bPD\b|1P1D|\bpd\d|_pd_", re.I)
    for m in kind_rows(entries, "disaggregated"):
        assert pd.search(text(m, "id", "dataset", "note", "quote", "engine_version")), m["id"]


def test_variable_workloads_do_not_state_fixed_lengths(entries):
    for m in kind_rows(entries, "variable_workload"):
        assert not re.search(r"range[- ]ratio 1", m.get("dataset") or ""), m["id"]


@pytest.mark.parametrize("kind", ["broken_run", "harness_artifact"])
def test_kinds_no_field_can_show_have_a_reason(entries, kind):
    """No field but ``why`` shows a bug or a clock that measures the harness; the why must say more
    than the kind's name."""
    for m in kind_rows(entries, kind):
        assert len(m["why"]) > 40, m["id"]


# --------------------------------------------------------------------------- sglang switches from the recipe


def test_every_amd_sglang_entry_records_k3_opt_with_evidence(entries, amd_gpus):
    rows = [m for m in entries if m["engine"] == "sglang" and m.get("gpu") in amd_gpus]
    assert len(rows) >= 40
    for m in rows:
        env = m.get("sglang_env") or {}
        assert "SGLANG_AITER_K3_OPT" in env, m["id"]
        value, ev = env["SGLANG_AITER_K3_OPT"], m.get("sglang_env_evidence") or ""
        # the evidence opens with the value it supports, and a stated "1" quotes the switch
        assert ev.startswith("'1':" if value == "1" else "'0':" if value == "0" else "null:"), m["id"]
        if value == "1":
            assert re.search(r"SGLANG_AITER_K3_OPT(=|\\?\"?: \\?\")1", ev), m["id"]
    for m in entries:
        if m.get("sglang_env"):
            assert m["engine"] == "sglang", m["id"]


def test_one_recipe_one_setting(entries, amd_gpus):
    """Rows measured with one recipe agree: #32548's c2/c4 rows and its c32 row quoted by the
    nightly test (the text match split them), and the MI350X cookbook cells with PR #39029."""
    k3 = {m["id"]: (m.get("sglang_env") or {}).get("SGLANG_AITER_K3_OPT", "absent") for m in entries}
    assert k3["sglang_i32548_mi355_tp8_nospec_ttt_per_gpu_c32"] == k3["sglang_i32548_mi355_tp8_nospec_ttt_c2"] == "1"
    mi350x = [m["id"] for m in entries if m.get("gpu") == "mi350x" and m["engine"] == "sglang"
              and m["source"] in ("sglang_cookbook_bench_jsx", "sglang_pr39029")]
    assert len(mi350x) == 19 and {k3[i] for i in mi350x} == {"1"}
    # within one source and build, one value
    seen = {}
    for m in entries:
        if m["engine"] == "sglang" and m.get("gpu") in amd_gpus:
            key = (m["source"], m.get("engine_version"))
            assert seen.setdefault(key, k3[m["id"]]) == k3[m["id"]], m["id"]


# --------------------------------------------------------------------------- the schema refuses


def _set_aside_line(path: Path, mid: str, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"- id: {mid}\n")
    end = text.index("\n- id: ", start + 1) + 1
    block = text[start:end]
    assert block.count(old) == 1, (mid, old)
    path.write_text(text[:start] + block.replace(old, new) + text[end:], encoding="utf-8")


def _error(data_copy) -> str:
    data.clear_cache()
    with pytest.raises(data.DataError) as ei:
        data.load("public_measurements")
    msg = str(ei.value)
    assert "\n" not in msg and "public_measurements.yaml" in msg, msg
    return msg


DUP = "sglang_i32548_mi355_tp8_nospec_ttt_per_gpu_c2"      # use: false, why_kind duplicate
USED = "sglang_i32548_mi355_tp8_nospec_tpot_c2"            # use: true, K3_OPT "1"


@pytest.mark.parametrize("mid, old, new, named", [
    # a set-aside entry without its kind
    (DUP, "  why_kind: duplicate\n", "", ("why_kind",)),
    # a kind outside the list
    (DUP, "  why_kind: duplicate\n", "  why_kind: stale\n", ("why_kind",)),
    # a kind on a used entry
    (USED, "  metric: tpot_ms\n", "  metric: tpot_ms\n  why_kind: broken_run\n", ("use: false",)),
    # the duplicate kind without its target
    (DUP, "  duplicate_of: sglang_i32548_mi355_tp8_nospec_ttt_c2\n", "", ("duplicate_of",)),
    # K3_OPT takes "1", "0" or null only
    (USED, "SGLANG_AITER_K3_OPT: '1'", "SGLANG_AITER_K3_OPT: 'on'", ("sglang_env",)),
    # sglang switches on an entry of another engine
    (USED, "  engine: sglang\n", "  engine: vllm\n", ("sglang_env",)),
])
def test_the_schema_refuses(data_copy, mid, old, new, named):
    _set_aside_line(data_copy / "public_measurements.yaml", mid, old, new)
    msg = _error(data_copy)
    assert all(n in msg for n in named), msg


def test_k3_opt_without_evidence_is_refused(data_copy):
    p = data_copy / "public_measurements.yaml"
    text = p.read_text(encoding="utf-8")
    start = text.index(f"- id: {USED}\n")
    end = text.index("\n- id: ", start + 1) + 1
    block = re.sub(r"  sglang_env_evidence: .*?\n(?=  \w)", "", text[start:end], count=1, flags=re.S)
    assert block != text[start:end]
    p.write_text(text[:start] + block + text[end:], encoding="utf-8")
    msg = _error(data_copy)
    assert USED in msg and "sglang_env_evidence" in msg
