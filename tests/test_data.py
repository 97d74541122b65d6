"""The one validated load of ``data/``: every mistake in a data file is one line naming the
file and the field (issue 12, "data values are barely validated").

Each test edits a copy of ``data/`` under ``tmp_path`` and points ``K3LAB_DATA`` at it, so
the repository's data is never touched. Expected field paths are written out by hand from
the files' layout, not taken from the loader.
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from k3lab import data, paths, readers

REPO = Path(__file__).resolve().parents[1]
# The MI355X's bandwidth line in data/hardware.yaml (the issue's `.inf` gave T1 a bound of
# 34,541 tok/s instead of 7,633 with exit 0).
BW_LINE = "hbm_bw_tb_s: {value: 8.0, source: amd_mi355x}"
ARTICLE_MI355X = "{tier: article, gpu: mi355x, usd_per_gpu_hour: 2.50,"
RATE_CHECK_MI355X = "{tier: article_rate_check, gpu: mi355x, usd_per_gpu_hour: 2.59,"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"fixture drift: {old!r} is not exactly once in {path.name}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _one_line_error(name: str) -> str:
    """Load ``name`` from the copy → the DataError's message, checked to be one line."""
    data.clear_cache()
    with pytest.raises(data.DataError) as ei:
        data.load(name)
    msg = str(ei.value)
    assert "\n" not in msg, f"not one line: {msg!r}"
    return msg


def _row_index(path: Path, tier: str, gpu: str) -> int:
    """Index of a price row, read independently with PyYAML."""
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))["prices"]
    return next(i for i, r in enumerate(rows) if r.get("tier") == tier and r.get("gpu") == gpu)


# --------------------------------------------------------------------------- K3LAB_DATA


def test_k3lab_data_points_the_loader_at_the_copy(data_copy):
    _edit(data_copy / "hardware.yaml", BW_LINE, "hbm_bw_tb_s: {value: 9.5, source: amd_mi355x}")
    data.clear_cache()
    assert data.load("hardware").gpus["mi355x"].hbm_bw_tb_s.value == 9.5
    # and the repository's own file still says 8.0
    assert yaml.safe_load((paths.DATA_DIR / "hardware.yaml").read_text())["gpus"]["mi355x"]["hbm_bw_tb_s"]["value"] == 8.0


def test_data_path_under_k3lab_data(data_copy):
    (data_copy / "only_in_the_copy.yaml").write_text("a: 1\n")
    assert paths.data_path("only_in_the_copy.yaml") == data_copy / "only_in_the_copy.yaml"
    # a missing file is a FileNotFoundError naming it, also when data/ lives outside the repo
    with pytest.raises(FileNotFoundError, match=r"nope\.yaml"):
        paths.data_path("nope.yaml")


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("bad", [".inf", "-.inf", "0", ".nan", "-1", '"fast"', "true", "[8.0]"])
def test_hbm_bandwidth_must_be_a_finite_positive_number(data_copy, bad):
    _edit(data_copy / "hardware.yaml", BW_LINE, f"hbm_bw_tb_s: {{value: {bad}, source: amd_mi355x}}")
    msg = _one_line_error("hardware")
    assert msg.startswith("data/hardware.yaml: "), msg
    assert "gpus.mi355x.hbm_bw_tb_s.value" in msg, msg


def test_bad_value_reaches_consumers_as_data_error(data_copy):
    """Not only data.load: the specs loader every finding uses refuses it too."""
    from k3lab import specs

    _edit(data_copy / "hardware.yaml", BW_LINE, "hbm_bw_tb_s: {value: .inf, source: amd_mi355x}")
    data.clear_cache()
    with pytest.raises(data.DataError, match=r"^data/hardware\.yaml: gpus\.mi355x\.hbm_bw_tb_s\.value"):
        specs.load_gpu("mi355x")


def test_unknown_key_in_a_gpu_entry(data_copy):
    _edit(data_copy / "hardware.yaml", BW_LINE, BW_LINE + "\n    hbm_bw_tbs_typo: {value: 8.0, source: amd_mi355x}")
    msg = _one_line_error("hardware")
    assert msg.startswith("data/hardware.yaml: ") and "gpus.mi355x.hbm_bw_tbs_typo" in msg, msg


# --------------------------------------------------------------------------- bytes and syntax


def test_random_bytes_in_hardware_yaml(data_copy):
    junk = random.Random(12).randbytes(4096)
    (data_copy / "hardware.yaml").write_bytes(junk)
    msg = _one_line_error("hardware")
    assert msg.startswith("data/hardware.yaml: "), msg
    assert "not UTF-8" in msg or "not valid YAML" in msg, msg


def test_broken_yaml_syntax_names_file_and_line(data_copy):
    hw = data_copy / "hardware.yaml"
    lines = hw.read_text(encoding="utf-8").splitlines(keepends=True)
    n = next(i for i, l in enumerate(lines) if BW_LINE in l)
    lines[n] = lines[n].replace(BW_LINE, "hbm_bw_tb_s: {value: 8.0, source: amd_mi355x")  # unclosed {
    hw.write_text("".join(lines), encoding="utf-8")
    msg = _one_line_error("hardware")
    assert re.match(r"data/hardware\.yaml: not valid YAML \(line \d+", msg), msg


def _edit_line(path: Path, where: str, edit) -> int:
    """Rewrite the first line of ``path`` holding ``where`` with ``edit(line) -> new text``
    (lines to insert after it may follow) → its 0-based index; the loader's caches cleared."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    n = next(i for i, t in enumerate(lines) if where in t)
    lines[n] = edit(lines[n])
    path.write_text("".join(lines), encoding="utf-8")
    data.clear_cache()
    return n


def test_a_number_too_long_to_read_names_file_line_and_field(data_copy):
    """Issue 35: a 5,000-digit number failed with Python's digit-limit message, no file, no field."""
    n = _edit_line(data_copy / "hardware.yaml", "board_power_w: {value: 750,",
                   lambda t: t.replace("value: 750,", "value: " + "7" * 5000 + ","))
    with pytest.raises(data.DataError) as ei:
        data.load("hardware")
    assert str(ei.value) == (f"data/hardware.yaml: line {n + 1}: value: a number written with 5,000 digits "
                             f"(at most 100 are read; no quantity here needs more)")
    with pytest.raises(data.DataError, match=r"^data/x\.json: line 2: a number written with 4,400 digits"):
        readers.parse_json('{"a": 1,\n "b": ' + "1" * 4400 + "}", "data/x.json")


def test_fit_help_with_random_bytes_in_hardware_yaml_is_one_line(data_copy, tmp_path):
    (data_copy / "hardware.yaml").write_bytes(random.Random(12).randbytes(4096))
    env = dict(os.environ, K3LAB_DATA=str(data_copy), K3LAB_RESULTS=str(tmp_path / "results"))
    env.pop("K3LAB_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "k3lab", "fit", "--help"], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=120)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert len(err) == 1 and p.stdout == "", (p.stdout, p.stderr)
    assert "data/hardware.yaml" in err[0] and ("not UTF-8" in err[0] or "not valid YAML" in err[0]), err[0]


def test_fit_with_infinite_bandwidth_is_one_line(data_copy, tmp_path):
    _edit(data_copy / "hardware.yaml", BW_LINE, "hbm_bw_tb_s: {value: .inf, source: amd_mi355x}")
    env = dict(os.environ, K3LAB_DATA=str(data_copy), K3LAB_RESULTS=str(tmp_path / "results"))
    env.pop("K3LAB_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "k3lab", "fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8"],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    err = p.stderr.strip().splitlines()
    assert "Traceback" not in p.stderr and len(err) == 1, p.stderr
    assert "data/hardware.yaml" in err[0] and "gpus.mi355x.hbm_bw_tb_s.value" in err[0], err[0]


# --------------------------------------------------------------------------- references


def test_source_key_that_does_not_exist(data_copy):
    _edit(data_copy / "hardware.yaml", BW_LINE, "hbm_bw_tb_s: {value: 8.0, source: amd_mi999x_page}")
    msg = _one_line_error("hardware")
    assert msg.startswith("data/hardware.yaml: "), msg
    assert "gpus.mi355x.hbm_bw_tb_s" in msg and "amd_mi999x_page" in msg, msg


def test_duplicate_claim_id(data_copy):
    cl = data_copy / "claims.yaml"
    ids = [c["id"] for c in yaml.safe_load(cl.read_text(encoding="utf-8"))["claims"]]
    second = ids.index("T5")
    _edit(cl, "  - id: T5\n", "  - id: T4\n")
    msg = _one_line_error("claims")
    assert msg.startswith("data/claims.yaml: "), msg
    assert f"claims.{second}.id" in msg and "'T4'" in msg and "duplicate" in msg, msg


# --------------------------------------------------------------------------- prices


def test_article_price_edited_in_prices_disagrees_with_claim_t5(data_copy):
    """The article's MI355X price is a claim (claims.yaml T5) and a model input (prices.yaml):
    editing one without the other must fail, whichever file is loaded first."""
    _edit(data_copy / "prices.yaml", ARTICLE_MI355X, "{tier: article, gpu: mi355x, usd_per_gpu_hour: 2.60,")
    for name in ("prices", "claims", "article_table", "hardware"):
        msg = _one_line_error(name)
        assert "T5" in msg and "data/prices.yaml" in msg and "data/claims.yaml" in msg, (name, msg)
        assert "2.60" in msg, msg


def test_claim_t5_edited_disagrees_with_prices(data_copy):
    _edit(data_copy / "claims.yaml", "claimed: 2.50 / 6.00 / 4.25", "claimed: 2.40 / 6.00 / 4.25")
    msg = _one_line_error("prices")
    assert msg.startswith("data/claims.yaml: T5") and "data/prices.yaml" in msg, msg


def test_unknown_gpu_in_prices(data_copy):
    pr = data_copy / "prices.yaml"
    i = _row_index(pr, "article_rate_check", "mi355x")
    _edit(pr, RATE_CHECK_MI355X, "{tier: article_rate_check, gpu: mi999x, usd_per_gpu_hour: 2.59,")
    msg = _one_line_error("prices")
    assert msg.startswith("data/prices.yaml: "), msg
    assert f"prices.{i}.gpu" in msg and "mi999x" in msg, msg


def test_prices_file_in_another_unit(data_copy):
    _edit(data_copy / "prices.yaml", 'unit: "USD/GPU-hour"', 'unit: "EUR/GPU-hour"')
    msg = _one_line_error("prices")
    assert msg.startswith("data/prices.yaml: unit"), msg


def test_price_row_in_another_unit(data_copy):
    pr = data_copy / "prices.yaml"
    i = _row_index(pr, "article_rate_check", "mi355x")
    _edit(pr, RATE_CHECK_MI355X, "{tier: article_rate_check, gpu: mi355x, eur_per_gpu_hour: 2.40,")
    msg = _one_line_error("prices")
    assert msg.startswith(f"data/prices.yaml: prices.{i}"), msg


def test_price_with_a_currency_in_the_value(data_copy):
    pr = data_copy / "prices.yaml"
    i = _row_index(pr, "article_rate_check", "mi355x")
    _edit(pr, RATE_CHECK_MI355X, '{tier: article_rate_check, gpu: mi355x, usd_per_gpu_hour: "2.40 EUR",')
    msg = _one_line_error("prices")
    assert msg.startswith(f"data/prices.yaml: prices.{i}.usd_per_gpu_hour"), msg


def test_the_repository_data_loads_cleanly(monkeypatch):
    monkeypatch.delenv("K3LAB_DATA", raising=False)
    data.clear_cache()
    try:
        for name in data.SCHEMAS:
            data.load(name)
    finally:
        data.clear_cache()


def test_upstream_change_without_a_pr_must_say_not_found(data_copy):
    """A PR number and its confidence go together: a change whose PR was not found cannot
    carry a number, and one with a number cannot say not_found."""
    up = data_copy / "sglang_upstream_changes.yaml"
    _edit(up, "    pr: null\n    confidence: not_found", "    pr: null\n    confidence: likely")
    msg = _one_line_error("upstream_changes")
    assert msg.startswith("data/sglang_upstream_changes.yaml: changes.4") and "confidence is 'likely'" in msg, msg


def test_startup_log_id_used_twice(data_copy):
    _edit(data_copy / "public_startup_logs.yaml", "  - id: lmsys_kda_state_per_request\n", "  - id: lmsys_kv_per_token\n")
    msg = _one_line_error("startup_logs")
    assert msg.startswith("data/public_startup_logs.yaml: ") and "lmsys_kv_per_token" in msg and "twice" in msg, msg


def test_startup_log_variant_both_stated_and_open(data_copy):
    _edit(data_copy / "public_startup_logs.yaml", "    variants: [aiter-k3-opt]\n",
          "    variants: [aiter-k3-opt]\n    open_variants: [aiter-k3-opt]\n")
    msg = _one_line_error("startup_logs")
    assert "mi35x_nightly_pools" in msg and "aiter-k3-opt named twice" in msg, msg


def test_upstream_changes_by_release():
    from k3lab.findings.upstream import changes_by_release

    prefill = changes_by_release("prefill")
    assert sorted(prefill) == ["0.5.19", "0.5.22"]
    assert prefill["0.5.19"].startswith("PR #34647 (confirmed): ") and "PR #36356 (confirmed)" in prefill["0.5.19"]
    assert changes_by_release("memory")["0.5.17"].startswith("PR not found: SGLANG_AITER_K3_OPT")


# --------------------------------------------------------------------------- issue 23: every input as strict


def test_a_yaml_key_written_twice_names_the_file_the_key_and_both_lines(data_copy):
    hw = data_copy / "hardware.yaml"
    lines = hw.read_text(encoding="utf-8").splitlines(keepends=True)
    n = next(i for i, l in enumerate(lines) if BW_LINE in l)
    indent = lines[n][: len(lines[n]) - len(lines[n].lstrip())]
    lines.insert(n + 1, f"{indent}hbm_bw_tb_s: {{value: 80.0, source: amd_mi355x}}\n")  # PyYAML keeps the last
    hw.write_text("".join(lines), encoding="utf-8")
    msg = _one_line_error("hardware")
    assert msg == (f"data/hardware.yaml: duplicate key 'hbm_bw_tb_s' (lines {n + 1} and {n + 2}); "
                   "YAML would keep only the second"), msg


def test_a_json_key_written_twice_names_its_path_and_both_lines(data_copy):
    n = _edit_line(data_copy / "model" / "kimi_k3_config.json", '"num_hidden_layers"',
                   lambda t: t + t.replace("93", "61"))   # the key again on the next line
    with pytest.raises(data.DataError) as ei:
        data.load("kimi_k3_config")
    assert str(ei.value) == (f"data/model/kimi_k3_config.json: duplicate key 'text_config.num_hidden_layers' "
                             f"(lines {n + 1} and {n + 2}); JSON readers would keep only the second")
    # and the command that reads it says so in one line
    from k3lab import specs
    data.clear_cache()
    with pytest.raises(ValueError, match=r"^data/model/kimi_k3_config\.json: duplicate key"):
        specs.load_model("kimi-k3")


def test_a_profile_with_a_key_twice_is_refused(tmp_path):
    from k3lab import pipeline

    (tmp_path / "twice.yaml").write_text("defaults: {mode: offline}\ndefaults: {mode: live}\n")
    with pytest.raises(pipeline.PipelineError, match=r"^params/twice\.yaml: duplicate key 'defaults' \(lines 1 and 2\)"):
        pipeline.load_profile("twice", tmp_path)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_json_numbers_must_be_finite(data_copy, token):
    p = data_copy / "measured" / "cpu-2core" / "sglang_aiter_probe.json"
    _edit(p, '"max_abs_diff": 0.0', f'"max_abs_diff": {token}')
    with pytest.raises(data.DataError, match=r"^data/measured/cpu-2core/sglang_aiter_probe\.json: "
                                             r"prefill_12_heads_patched\.max_abs_diff: must be a finite number"):
        data.read("sglang_aiter_probe")


def test_bench_serving_may_say_request_rate_infinity_and_nothing_else(data_copy):
    p = data_copy / "measured" / "cpu-2core" / "bench_live_smoke.jsonl"
    text = p.read_text(encoding="utf-8")
    assert '"request_rate": Infinity' in text          # sglang's own encoding of --request-rate inf
    assert len(data.read("bench_live_smoke")) == 2
    for bad, key in (('"request_rate": -Infinity', "request_rate"), ('"request_rate": NaN', "request_rate")):
        p.write_text(text.replace('"request_rate": Infinity', bad, 1), encoding="utf-8")
        with pytest.raises(data.DataError, match=rf"bench_live_smoke\.jsonl:line 1: {key}: must be a finite number"):
            data.read("bench_live_smoke")
    p.write_text(text.replace('"random_range_ratio": 1.0', '"random_range_ratio": Infinity', 1), encoding="utf-8")
    with pytest.raises(data.DataError, match=r"line 1: random_range_ratio: must be a finite number"):
        data.read("bench_live_smoke")


def test_a_negative_byte_count_deep_in_the_rank_transcript(data_copy):
    p = data_copy / "measured" / "cpu-2core" / "sglang_0523_k3_rank_bytes.json"
    doc = json.loads(p.read_text(encoding="utf-8"))
    key = sorted(doc["rank_checks"])[0]
    doc["rank_checks"][key]["bytes_per_world_rank"]["3"] = -1   # a part no schema field names
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(data.DataError, match=rf"rank_checks\.{re.escape(key)}\.bytes_per_world_rank\.3: a byte count "
                                             r"must be a non-negative integer \(got -1\)"):
        data.read("sglang_k3_rank_bytes")


@pytest.mark.parametrize("old, new, match", [
    ("      digits: true\n      why: '''about 103B'''", "      rel: 1.5\n      why: x", r"claims\.1\.tolerance\.rel: Input should be less than 1"),
    ("      digits: true\n      why: '''about 103B'''", "      rel: .nan\n      why: x", r"claims\.1\.tolerance\.rel: Input should be a finite number"),
    ("      digits: true\n      why: '''about 103B'''", "      rel: 0\n      why: x", r"claims\.1\.tolerance\.rel: Input should be greater than 0"),
    ("    claimed: 103\n", "    claimed: -103\n", r"claims\.1: claim M2: claimed: must be a finite number > 0, got -103"),
    ("    claimed: 103\n", "    claimed: .inf\n", r"claims\.1\.claimed: Input should be a finite number"),
    ("    claimed: 103\n", "    claimed: about a hundred\n", r"claim M2: claimed: rule 'within_tolerance' compares the claimed"),
])
def test_claimed_values_and_tolerances_are_finite_signed_and_in_range(data_copy, old, new, match):
    _edit(data_copy / "claims.yaml", old, new)
    msg = _one_line_error("claims")
    assert msg.startswith("data/claims.yaml: ") and re.search(match, msg), msg


def test_a_claimed_range_must_agree_with_the_article_prefill_figures(data_copy):
    """P6 is the article's '2-3x': claims.yaml holds the words, article_prefill.yaml the numbers."""
    _edit(data_copy / "article_prefill.yaml", 'ttft_speedup_high: {value: 3,', 'ttft_speedup_high: {value: 4,')
    msg = _one_line_error("claims")
    assert msg == "data/claims.yaml: P6.claimed (2-3) disagrees with data/article_prefill.yaml (2 / 4)", msg


def test_csv_tables_read_as_pandas_reads_them():
    """The loader converts every cell by its column's type; the frame a consumer gets equals
    what pandas makes of the committed file (so notebook outputs do not move)."""
    import pandas as pd

    for name, (rel, _) in data.SCHEMAS.items():
        if rel.endswith(".csv"):
            pd.testing.assert_frame_equal(data.load(name), pd.read_csv(paths.DATA_DIR / rel), check_exact=True)


def test_every_input_is_checked_by_check_all(monkeypatch):
    monkeypatch.delenv("K3LAB_DATA", raising=False)
    data.clear_cache()
    try:
        assert data.check_all() == list(data.SCHEMAS)
    finally:
        data.clear_cache()


def test_a_live_runs_fresh_files_are_checked_like_the_committed_ones(tmp_path):
    """Live mode hands notebooks 02/03 a fresh folder; the loader checks it with the same schemas."""
    from k3lab.findings import f2_topk as f2
    from k3lab.live import kernel_timing

    src = paths.DATA_DIR / "measured" / "cpu-2core"
    fresh = tmp_path / "live"
    shutil.copytree(src, fresh)
    assert f2.transcript(fresh / "sglang_topk_repro.json") == data.load("sglang_topk_repro")
    assert kernel_timing.load(fresh).equals(data.load("attention_heads"))
    _edit(fresh / "sglang_topk_repro.json", '"returncode": 1', '"returncode": "1"')
    with pytest.raises(data.DataError, match=r"^sglang_topk_repro\.json: crash\.returncode: "):
        f2.transcript(fresh / "sglang_topk_repro.json")
    _edit(fresh / "topk_renorm_ties.csv", "bf16 logits -> fp32 softmax,1,20,1024,163840,0.438477",
          "bf16 logits -> fp32 softmax,1,20,1024,163840,1.438477")
    with pytest.raises(data.DataError, match=r"^topk_renorm_ties\.csv: line 2: share_rows_differ: "):
        f2.renorm_bench(fresh)


# --------------------------------------------------------------------------- plausible typos (issue 28)

USABLE_MI355X = "usable_hbm_gb: {value: 309.220868096, source: driver_readings}"
LABEL_MI355X = 'hbm_label_gb: {value: 288, source: amd_mi355x, note: "288 GiB = 309.2e9 B"}'


def _config_edit(path: Path, key: str, new) -> None:
    """Set ``key`` (wherever it is: top level or text_config) in a config copy, as written."""
    text = path.read_text(encoding="utf-8")
    m = re.search(rf'"{key}": (\d+)', text)
    assert m and text.count(f'"{key}":') == 1, f"fixture drift: {key} in {path.name}"
    path.write_text(text[:m.start(1)] + str(new) + text[m.end(1):], encoding="utf-8")


def _fit_line(data_copy, tmp_path, *args) -> str:
    env = dict(os.environ, K3LAB_DATA=str(data_copy), K3LAB_RESULTS=str(tmp_path / "results"))
    env.pop("K3LAB_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "k3lab", "fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", *args],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(err) == 1 and p.stdout == "", (p.stdout, p.stderr)
    return err[0]


@pytest.mark.parametrize("old, new, share", [
    (USABLE_MI355X, "usable_hbm_gb: {value: 30.9220868096, source: driver_readings}", "10.0%"),   # 28.8 for 288
    (LABEL_MI355X, LABEL_MI355X.replace("value: 288,", "value: 3092,"), "9.3%"),
    (USABLE_MI355X, "usable_hbm_gb: {value: 330.0, source: driver_readings}", "106.7%"),      # above the label
])
def test_usable_hbm_against_the_label_and_the_vendor_reserve(data_copy, tmp_path, old, new, share):
    """A GPU entry with 28.8 GB usable for 288, or a label of 3092, passed every check: fit
    printed a plan and compare dropped the MI355X rows."""
    _edit(data_copy / "hardware.yaml", old, new)
    msg = _one_line_error("hardware")
    assert msg.startswith("data/hardware.yaml: gpus.mi355x: usable_hbm_gb") and "hbm_label_gb" in msg, msg
    assert f"is {share} of" in msg and "usable_share.amd" in msg, msg
    assert "data/hardware.yaml: gpus.mi355x" in _fit_line(data_copy, tmp_path)


def test_every_gpu_lies_within_its_vendors_stated_band():
    """The band is data with its source; every GPU of the repository's data is inside it, the
    B300 (93.3% of 288 GiB, by hand: 275,040 MiB / 294,912 MiB) the lowest."""
    hw = data.load("hardware")
    assert hw.usable_share["nvidia"].source == "driver_readings"
    assert 275_040 / (288 * 1024) == pytest.approx(0.9326, abs=1e-4)
    b300 = hw.gpus["b300"]
    assert b300.usable_hbm_gb.value * 1e9 / (b300.hbm_label_gb.value * 2**30) == pytest.approx(0.9326, abs=1e-4)


@pytest.mark.parametrize("config, key, new, says", [
    ("kimi_k3", "max_position_embeddings", 104_857_600, "max_position_embeddings 104,857,600 is not the 1,048,576-token"),
    ("kimi_k3", "kv_lora_rank", 51, "kv_lora_rank 51 + qk_rope_head_dim 64 over 24 MLA layers give 5.4 KiB"),
    ("deepseek_v3", "max_position_embeddings", 16_384_000, "max_position_embeddings 16,384,000 is not the 131,072-token"),
    ("deepseek_v3", "kv_lora_rank", 51, "active parameters; deepseek-v3 is published with 37B"),
    ("kimi_k2", "kv_lora_rank", 51, "active parameters; kimi-k2 is published with 32B"),
    ("kimi_k2", "num_hidden_layers", 6, "total parameters; kimi-k2 is published with 1,000B"),
])
def test_a_model_config_against_the_figures_it_is_published_with(data_copy, tmp_path, config, key, new, says):
    """max_position_embeddings x100 and kv_lora_rank 51 passed every check and fit printed a
    plan. The counts by hand: K3's KV per token is (51 + 64) x 24 x 2 B = 5,520 B = 5.4 KiB
    against the ~26-27 KiB public sglang runs report."""
    from k3lab import specs

    _config_edit(data_copy / "model" / f"{config}_config.json", key, new)
    data.clear_cache()
    model = config.replace("_", "-")
    with pytest.raises(ValueError) as ei:
        specs.load_model(model)
    msg = str(ei.value)
    assert msg.startswith(f"data/model/{config}_config.json: ") and says in msg and "\n" not in msg, msg
    if model == "kimi-k3":
        assert f"data/model/{config}_config.json" in _fit_line(data_copy, tmp_path)


def test_the_published_figures_hold_for_the_repositorys_configs():
    """By hand from the model cards: DeepSeek-V3 671B / 37B, Kimi K2 1T / 32B, K3 2.78T / ~103B."""
    from k3lab import memory, specs

    pub = data.load("published_models").models
    for model, total, active in (("deepseek-v3", 671e9, 37e9), ("kimi-k2", 1e12, 32e9), ("kimi-k3", 2.78e12, 103e9)):
        pc = memory.count_params(specs.load_model(model))
        assert pub[model].total_params.value == total and pub[model].active_params.value == active
        assert abs(pc.total_without_mtp / total - 1) <= pub[model].total_params.tolerance
        assert abs(pc.active / active - 1) <= pub[model].active_params.tolerance
