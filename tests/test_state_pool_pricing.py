"""The fourth hostile pass (issue 38's last surface: predict's state-pool flags, quote and compare priced
past a prefix-cached setting under a latency target, the DSpark answer's nearest run). Each test is one
finding: what the tool did, and what it does now, checked against the memory fit and predict themselves."""

import re
import subprocess
import sys

import pytest

from k3lab import compare, decision, memory, quote, specs
from k3lab.paths import REPO_ROOT
from k3lab.serving import dspark_answer
from k3lab.serving.engines import Engine, admission
from k3lab.serving.model import Spec, Workload
from k3lab.serving.predict import predict
from k3lab.serving.slo import SLO

CFG = specs.load_model("kimi-k3")
B300 = specs.parse_layout("8xb300 tp8")


def _run(*args):
    return subprocess.run([sys.executable, "-m", "k3lab", *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=300)


def test_a_shorter_context_never_admits_fewer_requests_past_the_cache():
    """S1: with --context 131072 the B300's radix-off setting took the most slots that still hold the request
    (860), which left the KV pool 92 of the workload's requests, fewer than the 1M-context answer (322). The
    setting now stops where its pools still hold M requests of the workload, as sglang would run them."""
    def row(ctx):
        df = compare.compare_rows("kimi-k3", context_tokens=ctx, gpus=["b300"], input_len=1024, output_len=400,
                                  slo=SLO(max_tpot_ms=80))
        return df.set_index("layout").loc["8xb300 tp8"]

    short, full = row(131072), row(None)
    assert short["priced_with"] and full["priced_with"]
    assert int(short["model_concurrency"]) >= int(full["model_concurrency"])
    m = int(re.search(r"--max-running-requests (\d+)", short["priced_with"]).group(1))
    # the named setting runs all of them (the pools hold m requests of 1,424 tokens) and holds the 131,072 request
    eng = Engine(max_running_requests=m, disable_radix_cache=True)
    assert admission(CFG, B300, 1424, engine=eng).requests >= m
    assert memory.fit(CFG, B300, context_tokens=131072, disable_radix_cache=True, max_running_requests=m).fits


@pytest.mark.parametrize("cmd", ["quote", "compare"])
def test_a_tpot_target_of_one_output_token_is_refused_as_predict_refuses_it(cmd):
    """S2: compare and quote priced a TPOT for --output-len 1, which predict refuses (no decode step)."""
    r = _run(cmd, "--max-tpot", "45", "--input-len", "1", "--output-len", "1")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "--output-len 1 has no TPOT" in r.stderr and "give --max-ttft" in r.stderr
    # a TTFT target still answers
    assert _run(cmd, "--max-ttft", "5000", "--input-len", "1", "--output-len", "1", "--gpu", "b300").returncode == 0


def test_a_row_whose_admitted_peak_passes_the_latency_cap_is_priced_lower_down():
    """S3: 16xMI355X TP8xPP2 at 1,000,000 in / 48,576 out, TPOT <= 500 ms: at every request its pools admit the
    TTFT passes predict's 600,000 ms cap, so the row was left unpriced; the highest concurrency under the cap
    that meets the target now prices it (predict at that concurrency agrees)."""
    df = compare.compare_rows("kimi-k3", gpus=["mi355x"], input_len=1_000_000, output_len=48_576,
                              slo=SLO(max_tpot_ms=500))
    r = df.set_index("layout").loc["16xmi355x tp8 pp2 [aiter-k3-opt]"]
    c = int(r["model_concurrency"])
    assert c >= 1 and r["model_ttft_ms"] <= 600_000 and r["model_tpot_ms"] <= 500
    p = predict(CFG, specs.parse_layout("16xmi355x tp8 pp2"), Workload(1_000_000, 48_576, c), variants=("aiter-k3-opt",))
    assert p.output_tok_s == pytest.approx(r["model_tok_s"], rel=1e-9) and not p.over_latency_cap()


def test_predicts_setting_trap_is_priced_with_the_users_state_pool_flags():
    """S4: with --disable-radix-cache --max-running-requests 222 the trap said '557 instead of 1,677 at your
    concurrency 222' while the table printed 2,239: it priced the default pools. It now prices the user's."""
    r = _run("predict", "--layout", "8xmi355x tp8 [aiter-k3-opt]", "--input-len", "1024", "--output-len", "400",
             "--disable-radix-cache", "--max-running-requests", "222", "--concurrency", "222")
    assert r.returncode == 0, r.stderr
    table = float(re.search(r"output tok/s, deployment\s+([\d,]+)", r.stdout).group(1).replace(",", ""))
    for m in re.finditer(r"instead of ([\d,]+)", r.stdout):
        assert float(m.group(1).replace(",", "")) == pytest.approx(table, abs=1), r.stdout


def test_an_uncalibrated_gpu_says_so_under_a_latency_target_too():
    """C2: 16xH200 said 'not one request fits' with --max-tpot and 'the serving model refuses h200' with
    --concurrency; both now say the second, the true reason."""
    for extra in (["--max-tpot", "50"], ["--concurrency", "10"]):
        r = _run("predict", "--layout", "16xh200 tp16", "--input-len", "1024", "--output-len", "400", *extra)
        assert r.returncode == 2 and "the serving model refuses h200" in r.stderr, extra


def test_a_state_pool_that_admits_nothing_says_why_under_a_target_too():
    """C1 / M5: the reason a request does not fit is the same with or without a latency target."""
    for extra in (["--concurrency", "1"], ["--max-tpot", "50"]):
        r = _run("predict", "--layout", "8xb300 tp8", "--input-len", "1024", "--output-len", "400",
                 "--max-mamba-cache-size", "4", *extra)
        assert r.returncode == 2 and "state slots, 5 a request" in r.stderr, extra


@pytest.mark.parametrize("tpot", [80, 150])
def test_a_full_quote_drops_sentences_whole(tpot):
    """M1: a wrapped band line was cut to '(it spans' when the screen was full: every sentence of the quote is
    now whole (its brackets close), and the verdict is the last thing to give way."""
    lines = _run("quote", "--max-tpot", str(tpot)).stdout.splitlines()
    assert len(lines) <= quote.MAX_LINES
    blocks, cur = [], []
    for x in lines[3:]:   # after the head and the table's header
        if x.startswith("  ") and cur:
            cur.append(x.strip())
        else:
            blocks.append(" ".join(cur))
            cur = [x]
    blocks.append(" ".join(cur))
    for b in blocks:
        assert b.count("(") == b.count(")") and not b.rstrip().endswith(","), b
    assert any(x.startswith("verdict: ") for x in lines)


def test_the_quotes_trap_names_the_context_asked():
    """M2: with --context 131072 the trap said 'no longer holds a 1,048,576-token request'; the plain MI355X node
    holds a 131,072-token request (fit), so at that context the trap says nothing of holding, and at the full
    context it names the full context."""
    from k3lab.setting_traps import setting_traps

    mi = specs.parse_layout("8xmi355x tp8")
    plain = memory.plan(CFG, "mi355x", 8, 8, context_tokens=131072)
    assert plain.verdict in ("fits with defaults", "fits only with a setting")
    short = " ".join(setting_traps(CFG, mi, 1024, 400, ("aiter-k3-opt",), slo=SLO(max_tpot_ms=80),
                                   context_tokens=131072))
    assert "holds a" not in short and "1,048,576" not in short
    full = " ".join(setting_traps(CFG, mi, 1024, 400, ("aiter-k3-opt",), slo=SLO(max_tpot_ms=80)))
    assert "no longer holds a 1,048,576-token request" in full
    # and the quote at that context says no 1M anywhere
    assert "1,048,576" not in " ".join(quote.quote_lines(decision.decide("kimi-k3", 131072, slo=SLO(max_tpot_ms=80))))


def test_a_flag_named_by_its_words_is_suggested():
    """M4: --mamba-ratio was answered with --mem-fraction; a flag holding every word typed is the one meant."""
    r = _run("predict", "--layout", "8xb300 tp8", "--input-len", "1", "--output-len", "2", "--concurrency", "1",
             "--mamba-ratio", "0.5")
    assert r.returncode == 2 and "(did you mean '--mamba-full-memory-ratio'?)" in r.stderr


def test_the_dspark_answer_names_a_measured_run_even_when_three_plain_runs_sit_closer():
    """M6: at 1,024 / 1,024 c1 on 8xB300 the three nearest runs had no DSpark, so the answer named no DSpark
    measurement; and a run measured by TPOT only got no reading of the model's lean. Both are said now."""
    p = predict(CFG, B300, Workload(1024, 1024, 1), Spec("dspark", 2.0))
    # (newcomer 15: the question's own speculative setting is listed first now, so the nearest are DSpark runs)
    assert all(n["accept_len"] is not None for n in p.nearest)
    text = dspark_answer.nearest_dspark_run(p)
    assert text.startswith("measured: the nearest public DSpark run, B300 ")
    mi = predict(CFG, specs.parse_layout("8xmi355x tp8"), Workload(100_000, 2000, 2), Spec("dspark", 2.0),
                 variants=("aiter-k3-opt",))
    runs = [n for n in mi.nearest if n["accept_len"] is not None] or dspark_answer._dspark_runs(mi)
    tpot = next(n for n in runs if n["kind"] == "tpot_ms")
    assert not any(n["kind"] == "output_tok_s" and n["workload"] == tpot["workload"] for n in runs)
    lean = tpot["value"] / tpot["fitted"]
    assert f"the model runs x{lean:.2f} too fast there" in dspark_answer.nearest_dspark_run(mi) and lean > 1.1
