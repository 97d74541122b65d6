"""k3lab.live.bench_serving: bench_serving JSONL validation, command construction, the sweep driver.

The fixture is real: ``data/measured/cpu-2core/bench_live_smoke.jsonl`` was written by
sglang 0.5.16's bench_serving against a llama.cpp server on this CPU
(``benchmarks/live_bench_smoke.py``)."""

import json

import pytest

from k3lab import cli
from k3lab.live import bench_serving as bench
from k3lab.paths import MEASURED_DIR

SMOKE = MEASURED_DIR / "cpu-2core" / "bench_live_smoke.jsonl"


@pytest.fixture()
def record():
    return json.loads(SMOKE.read_text().splitlines()[0])


def test_reads_real_bench_serving_output():
    recs = bench.read_jsonl(SMOKE)
    assert [r["max_concurrency"] for r in recs] == [1, 4]
    df = bench.summarize(recs)
    assert list(df.columns) == bench.SUMMARY_COLUMNS
    r = recs[0]
    assert df["output_tok_s"].iloc[0] == pytest.approx(r["total_output_tokens"] / r["duration"])
    meta = json.loads(SMOKE.with_suffix(".meta.json").read_text())
    assert {"machine", "versions", "date", "command"} <= set(meta)


def _write(tmp_path, lines):
    p = tmp_path / "b.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_malformed_line_is_named(tmp_path, record):
    p = _write(tmp_path, [json.dumps(record), "{not json"])
    with pytest.raises(ValueError, match=r"b.jsonl:line 2: not valid JSON"):
        bench.read_jsonl(p)


def test_missing_key_is_named(tmp_path, record):
    del record["output_throughput"]
    p = _write(tmp_path, ["", json.dumps(record)])
    with pytest.raises(ValueError, match=r"line 2: missing key\(s\) \['output_throughput'\]"):
        bench.read_jsonl(p)


@pytest.mark.parametrize("key, value, msg", [
    ("output_throughput", "fast", "must be a number"),
    ("completed", 2.5, "must be an integer"),
    ("mean_ttft_ms", -1.0, ">= 0"),
    ("completed", 0, "no request completed"),
    ("duration", 0, "must be positive seconds"),
])
def test_bad_values(record, key, value, msg):
    record[key] = value
    with pytest.raises(ValueError, match=msg):
        bench.validate_record(record)


def test_units_that_do_not_match(record):
    bad = dict(record, output_throughput=record["output_throughput"] / 1000)  # tok/ms
    with pytest.raises(ValueError, match="units do not match: 'output_throughput'"):
        bench.validate_record(bad)
    secs = dict(record, duration=record["duration"] * 1000)  # duration given in ms
    with pytest.raises(ValueError, match="units do not match"):
        bench.validate_record(secs)
    lat = dict(record, mean_e2e_latency_ms=record["duration"] * 1000 * 10)
    with pytest.raises(ValueError, match="exceeds the run's duration"):
        bench.validate_record(lat)


def test_percentiles_and_token_counts_that_cannot_come_from_the_run(record):
    # a p99 first-token time longer than the whole run (seconds written as ms, or another run's)
    with pytest.raises(ValueError, match="p99_ttft_ms .* exceeds the run's duration"):
        bench.validate_record(dict(record, p99_ttft_ms=record["duration"] * 1000 * 3))
    with pytest.raises(ValueError, match="median_ttft_ms .* exceeds p99_ttft_ms"):
        bench.validate_record(dict(record, median_ttft_ms=record["p99_ttft_ms"] * 2))
    # the smoke run: 2 requests of at most 16 output tokens; 10x the tokens is not this run
    many = record["total_output_tokens"] * 10
    bad = dict(record, total_output_tokens=many, output_throughput=many / record["duration"],
               total_throughput=record["input_throughput"] + many / record["duration"])
    with pytest.raises(ValueError, match="exceeds completed × random_output_len"):
        bench.validate_record(bad)
    # a non-random dataset has no such cap
    assert bench.validate_record(dict(bad, dataset_name="sharegpt"))["total_output_tokens"] == many


def test_empty_file(tmp_path):
    with pytest.raises(ValueError, match="no bench_serving result lines"):
        bench.read_jsonl(_write(tmp_path, [""]))


def test_build_command_by_hand():
    cmd = bench.build_command("http://127.0.0.1:30000", 16, "o.jsonl", python="PY")
    assert cmd == ["PY", "-m", "sglang.bench_serving", "--backend", "sglang-oai",
                   "--base-url", "http://127.0.0.1:30000", "--dataset-name", "random-ids",
                   "--random-input-len", "1024", "--random-output-len", "400",
                   "--random-range-ratio", "1", "--num-prompts", "64", "--max-concurrency", "16",
                   "--seed", "1", "--disable-tqdm", "--output-file", "o.jsonl"]
    small = bench.build_command("http://localhost:1/", 1, "o", num_prompts=3, tokenizer="T")
    assert small[small.index("--num-prompts") + 1] == "3" and small[-2:] == ["--tokenizer", "T"]
    # at least 8 prompts even at concurrency 1
    one = bench.build_command("http://localhost:1", 1, "o")
    assert one[one.index("--num-prompts") + 1] == "8"


@pytest.mark.parametrize("url, msg", [
    ("http://10.0.0.5:30000", "not a loopback"), ("ftp://127.0.0.1", "must look like"),
    ("127.0.0.1:30000", "must look like"), ("http://127.0.0.1:30000/v1", "must not have a path"),
])
def test_bad_base_urls(url, msg):
    with pytest.raises(ValueError, match=msg):
        bench.build_command(url, 1, "o")


def test_parse_concurrencies():
    assert bench.parse_concurrencies("1,4,16,24,64") == [1, 4, 16, 24, 64]
    for bad, msg in (("1,x", "not an integer"), ("0", "positive"), ("4,4", "twice"), ("", "no concurrency")):
        with pytest.raises(ValueError, match=msg):
            bench.parse_concurrencies(bad)


def _fake_runner(record, fail_at=None):
    calls = []

    def run(cmd):
        calls.append(cmd)
        c = int(cmd[cmd.index("--max-concurrency") + 1])
        if c == fail_at:
            return 1
        out = cmd[cmd.index("--output-file") + 1]
        with open(out, "a") as f:
            f.write(json.dumps(dict(record, max_concurrency=c)) + "\n")
        return 0

    return run, calls


def test_sweep_writes_validated_jsonl(tmp_path, record):
    run, calls = _fake_runner(record)
    out = bench.sweep("http://127.0.0.1:30000", [1, 4, 16], tmp_path / "s.jsonl", runner=run, progress=False)
    assert [r["max_concurrency"] for r in bench.read_jsonl(out)] == [1, 4, 16]
    assert len(calls) == 3 and all("--max-concurrency" in c for c in calls)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_failed_sweep_leaves_nothing(tmp_path, record):
    run, _ = _fake_runner(record, fail_at=4)
    with pytest.raises(RuntimeError, match="concurrency 4"):
        bench.sweep("http://127.0.0.1:30000", [1, 4, 16], tmp_path / "s.jsonl", runner=run, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_default_output_goes_under_results(record):
    run, _ = _fake_runner(record)
    out = bench.sweep("http://127.0.0.1:30000", [2], runner=run, progress=False)
    assert out.parent.name == "04_throughput_perf_per_dollar" and out.name == "bench_sweep.jsonl"


def test_cli_dry_run_and_errors(capsys):
    assert "bench" in cli.COMMANDS
    assert cli.main(["bench", "--base-url", "http://127.0.0.1:30000", "--concurrency", "1,64",
                     "--dry-run", "--python", "PY"]) == 0
    got = capsys.readouterr()
    lines = got.out.strip().splitlines()
    assert len(lines) == 2 and "--max-concurrency 64" in lines[1] and lines[0].startswith("PY -m sglang.bench_serving")
    # newcomer 19: random-ids prompts overstate a DSpark server's acceptance; said on stderr (stdout stays commands),
    # with the public groups' medians
    from k3lab.serving.field import accept_groups

    gs = accept_groups("nvidia-blackwell")
    assert got.err.startswith("note: the sweep prompts with random-ids: on a speculative (DSpark) server")
    assert (f"accept a median {gs[-1]['median']:g} tokens a step on synthetic prompts, {gs[0]['median']:g} on "
            "natural text") in got.err and "--dataset-name random-ids" in lines[0]
    assert cli.main(["bench", "--base-url", "http://192.168.1.2:30000", "--dry-run"]) == 2
    assert "not a loopback" in capsys.readouterr().err
