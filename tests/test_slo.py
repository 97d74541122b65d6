"""Service-level objectives (issue 38): the highest concurrency at which the serving model meets a
latency target, and at the band's slow edge. Expected values come from a brute-force scan of every
concurrency the pools admit with :func:`k3lab.serving.predict.predict` (a second implementation of
the search), and the limits from the definitions (tok/s per user = 1,000 / TPOT)."""

import math

import pytest

from k3lab.serving.model import Workload
from k3lab.serving.predict import admission, peak, predict
from k3lab.serving.slo import SLO, operating_point
from k3lab.specs import load_model, parse_layout

CFG = load_model("kimi-k3")
MI = parse_layout("8xmi355x tp8")
B300 = parse_layout("8xb300 tp8")
OPT = ("aiter-k3-opt",)


def _scan(dep, variants, ok, input_len=1024, output_len=400):
    """The highest concurrency in 1..admitted whose prediction passes ``ok`` (brute force)."""
    n = admission(CFG, dep, input_len + output_len, variants=variants).requests
    best = None
    for c in range(1, n + 1):
        p = predict(CFG, dep, Workload(input_len, output_len, c), variants=variants)
        if ok(p):
            best = c
    return best


def test_an_slo_is_positive_and_tok_s_per_user_is_a_tpot_limit():
    assert SLO(max_tpot_ms=50, min_tok_s_per_user=25).tpot_limit_ms == 40.0   # 1,000 / 25 = 40 ms, the tighter
    assert SLO(max_tpot_ms=30, min_tok_s_per_user=25).tpot_limit_ms == 30.0
    assert SLO().tpot_limit_ms is None and not SLO().active
    assert SLO.of(0, 0.0, 0) == SLO()                      # a notebook's 0 means no limit
    for bad in (-1, 0, math.nan, math.inf, True, "50"):
        with pytest.raises(ValueError, match="max_tpot_ms must be a positive number of ms"):
            SLO(max_tpot_ms=bad)
    assert SLO(max_tpot_ms=50, max_ttft_ms=2000).label() == "TPOT ≤ 50 ms, TTFT ≤ 2,000 ms"


def test_the_point_is_the_highest_concurrency_whose_latency_meets_the_slo():
    slo = SLO(max_tpot_ms=50)
    op = operating_point(CFG, MI, 1024, 400, slo, variants=OPT)
    want = _scan(MI, OPT, lambda p: p.tpot_ms <= 50)
    assert op.point.concurrency == want
    assert op.point.tpot_ms <= 50 < predict(CFG, MI, Workload(1024, 400, want + 1), variants=OPT).tpot_ms
    # the slow edge: the band's slow end meets it (TPOT x e^band), priced at the band's low throughput
    slow = _scan(MI, OPT, lambda p: p.interval("tpot_ms")[1] <= 50)
    assert op.slow.concurrency == slow < want
    assert op.slow_tok_s == pytest.approx(op.slow.output_tok_s * math.exp(-op.slow.band))


def test_the_fast_edge_is_the_highest_concurrency_the_bands_fast_end_meets_up_to_what_the_pools_admit():
    """Newcomer 55: under a target the quote's band was the model's at the centre's concurrency ("$3.90-$6.51"), whose
    top misses the target, beside a slow edge of $9.04. Its ends are now the band's edges, each at the concurrency that
    still meets the target: the fast one by brute force, capped by what the pools admit, priced at the band's high end."""
    for dep, vs, limit in ((MI, OPT, 50), (B300, (), 50), (MI, OPT, 30)):
        op = operating_point(CFG, dep, 1024, 400, SLO(max_tpot_ms=limit), variants=vs)
        fast = _scan(dep, vs, lambda p: p.interval("tpot_ms")[0] <= limit)
        assert op.fast.concurrency == fast >= op.point.concurrency > op.slow.concurrency
        assert fast <= admission(CFG, dep, 1424, variants=vs).requests
        assert op.fast_tok_s == pytest.approx(op.fast.output_tok_s * math.exp(op.fast.band))
    # where the pools, not the latency, stop the fast edge: the MI355X at TPOT <= 50 ms runs all 121 it admits
    op = operating_point(CFG, MI, 1024, 400, SLO(max_tpot_ms=50), variants=OPT)
    assert op.fast.concurrency == admission(CFG, MI, 1424, variants=OPT).requests
    # and none without a target, nor where the limited metric has no band (NVIDIA TTFT)
    assert operating_point(CFG, MI, 1024, 400, variants=OPT).fast is None
    assert operating_point(CFG, B300, 1024, 400, SLO(max_ttft_ms=2000)).fast is None


def test_tok_s_per_user_and_ttft_limits_search_the_same_way():
    op = operating_point(CFG, B300, 1024, 400, SLO(min_tok_s_per_user=40), variants=())
    assert op.point.concurrency == _scan(B300, (), lambda p: 1e3 / p.tpot_ms >= 40)
    op = operating_point(CFG, MI, 1024, 400, SLO(max_ttft_ms=1000), variants=OPT)
    assert op.point.concurrency == _scan(MI, OPT, lambda p: p.ttft_ms <= 1000)


def test_without_an_slo_the_point_is_the_peak_and_there_is_no_slow_edge():
    op = operating_point(CFG, MI, 1024, 400, SLO(), variants=OPT)
    p = peak(CFG, MI, 1024, 400, variants=OPT)
    assert (op.point.concurrency, op.point.output_tok_s) == (p.concurrency, p.output_tok_s)
    assert op.slow is None and math.isnan(op.slow_tok_s)


def test_an_slo_nothing_meets_says_why_and_an_unvalidated_band_has_no_slow_edge():
    op = operating_point(CFG, MI, 1024, 400, SLO(max_tpot_ms=5), variants=OPT)
    assert op.point is None and op.why.startswith("even one request in flight misses TPOT ≤ 5 ms")
    # the B300's TTFT is not validated (no band): a TTFT limit can be met at the model's value, never judged at
    # the slow edge
    op = operating_point(CFG, B300, 1024, 400, SLO(max_ttft_ms=1500), variants=())
    assert op.point is not None and op.point.ttft_ms <= 1500 and op.point.interval("ttft_ms") is None
    assert op.slow is None and "no validated band" in op.slow_why


def test_compare_prices_each_row_at_the_slo_with_its_latency_beside_the_price():
    from k3lab import compare
    from k3lab.throughput import usd_per_million_tokens

    df = compare.compare_rows("kimi-k3", gpus=["mi355x"], overrides={"mi355x": 3.0}, slo=SLO(max_tpot_ms=50))
    r = df.set_index("layout").loc["8xmi355x tp8 [aiter-k3-opt]"]
    c = _scan(MI, OPT, lambda p: p.tpot_ms <= 50)
    p = predict(CFG, MI, Workload(1024, 400, c), variants=OPT)
    assert r["model_concurrency"] == c and r["model_tpot_ms"] == pytest.approx(p.tpot_ms)
    assert r["model_ttft_ms"] == pytest.approx(p.ttft_ms)
    # $/M = $/GPU-hour x 1e6 / (tok/s per GPU x 3,600), at the SLO's concurrency
    assert r["usd_per_million_tokens[override]"] == pytest.approx(3.0 * 1e6 / (p.output_tok_s / 8 * 3600))
    op = operating_point(CFG, MI, 1024, 400, SLO(max_tpot_ms=50), variants=OPT)
    assert r["usd_per_million_tokens_slow[override]"] == pytest.approx(usd_per_million_tokens(op.slow_tok_s, 8, 3.0))
    assert r["usd_per_million_tokens_fast[override]"] == pytest.approx(usd_per_million_tokens(op.fast_tok_s, 8, 3.0))
    assert int(r["fast_concurrency"]) == op.fast.concurrency
    assert df.attrs["slo"] == {"max_tpot_ms": 50, "max_ttft_ms": None, "min_tok_s_per_user": None}


def test_notebook_04_latency_parameters_are_checked_like_the_flags():
    from k3lab import param_values

    param_values.check({"max_tpot_ms": 0.0, "max_ttft_ms": 2000, "min_tok_s_per_user": 0})   # 0: no limit
    for name, bad in (("max_tpot_ms", -5.0), ("max_ttft_ms", 1e9), ("min_tok_s_per_user", -1)):
        with pytest.raises(ValueError, match=f"parameter '{name}' must be"):
            param_values.check({name: bad})


def test_predict_and_the_quote_give_one_band_at_a_target():
    """Newcomer 55: the quote's band under a target runs from the fast edge to the slow edge; predict, asked the same
    question, prints the same ends (and the band at its own concurrency beside them), its JSON the fast edge."""
    import json
    import subprocess
    import sys

    from k3lab import decision, quote
    from k3lab.paths import REPO_ROOT
    from k3lab.throughput import usd_per_million_tokens

    args = [sys.executable, "-m", "k3lab", "predict", "--layout", "8xmi355x tp8 [aiter-k3-opt]", "--input-len", "1024",
            "--output-len", "400", "--max-tpot", "50", "--usd-per-gpu-hour", "mi355x=3"]
    text = subprocess.run(args + ["--brief"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300).stdout
    doc = json.loads(subprocess.run(args + ["--json"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300).stdout)
    op = operating_point(CFG, MI, 1024, 400, SLO(max_tpot_ms=50), variants=OPT)
    fast, slow = (usd_per_million_tokens(x, 8, 3.0) for x in (op.fast_tok_s, op.slow_tok_s))
    assert doc["slo_fast_edge_concurrency"] == op.fast.concurrency and doc["slo_slow_edge_concurrency"] == op.slow.concurrency
    assert (f"band at your target ${fast:,.2f}-${slow:,.2f}, c{op.fast.concurrency} to c{op.slow.concurrency}; at "
            f"c{op.point.concurrency} itself $") in text
    assert f", c{op.fast.concurrency} ({op.fast_tok_s:,.0f} tok/s) at its fast edge" in text
    d = decision.decide("kimi-k3", input_len=1024, output_len=400, overrides={"mi355x": 3.0}, slo=SLO(max_tpot_ms=50))
    assert f"(${fast:,.2f}-${slow:,.2f})" in "\n".join(quote.quote_lines(d))
