"""``python -m k3lab compare`` and :func:`k3lab.compare.compare_rows`.

Expected values come from outside the code under test:

- DeepSeek-V3: 671B parameters in the target model, 685B with the 14B MTP module, and an
  FP8 checkpoint of 688.6 GB (the deepseek-ai/DeepSeek-V3 model card and its safetensors
  listing); sglang's DeepSeek-V3 usage page: "Full precision FP8 (recommended) — 8 x H200 /
  8 x B200 / 8 x MI300X / 2 x 8 x H100". sglang does not load the MTP module into the target
  model, so the weights a rank holds are about 671/685 of the checkpoint over TP. Its config's
  max_position_embeddings is 163,840; it has 128 attention heads (TP24 cannot split them).
- Kimi K3: a 1.56 TB checkpoint (the article); over 8 GPUs at least 1.56e12 / 8 = 195 GB
  per GPU, more than a B200's 192.27 GB usable (nvidia-smi 183,359 MiB) and less than a
  B300's 288.4 GB (275,040 MiB) or an MI355X's 309.2 GB. The article: "at TP8 the model needs
  about 191 GiB of weights per GPU" (SGLANG_AITER_K3_OPT=1: no expert padding on ROCm).
- Prices: read from ``data/prices.yaml`` through :mod:`k3lab.prices` (the article's B200 at
  $4.25/GPU-hour, so 8 × 4.25 = $34.00/hour for a node; its MI355X at $2.50, the lowest of
  its table). A price per GPU-hour and a throughput per GPU give, by hand,
  $/M output tokens = $/GPU-hour × 1e6 / (tok/s per GPU × 3600) — the GPU count cancels.
- The candidate rule (the module's docstring): per GPU 8, 16, 32 GPUs as TP = GPUs and TP8 ×
  PP2 / PP4 (5 layouts), plus TP4 on 4 GPUs where the scale-up domain exceeds 8 GPUs (GB200
  NVL72: 72); AMD GPUs under two sglang settings side by side (defaults and aiter-k3-opt).
"""

import csv
import io
import json
import math
import subprocess
import sys

import pytest

from k3lab import cli, compare, compare_answers, compare_view, data, decision, memory, prices, report_html
from k3lab.specs import GB, GiB, known_gpus, load_gpu, load_model

DS_CHECKPOINT_GB = 688.6          # FP8 weights incl. MTP (model card / safetensors listing)
DS_TARGET_FRACTION = 671 / 685    # target model without the 14B MTP module
DEFAULTS, K3_OPT = "sglang defaults", "aiter-k3-opt"
MTOK = "usd_per_million_tokens"


@pytest.fixture(scope="module", autouse=True)
def b300_priced():
    """These tests check compare's arithmetic on a priced MI355X/B300 pair; since issue 37 the
    committed fit validates no B300 decode speed (one repository measured it), so they run with a
    stand-in band (study_helpers.stand_in_band). test_serving_predict checks the committed fit."""
    from study_helpers import stand_in_band

    with stand_in_band("nvidia-blackwell"):
        yield


@pytest.fixture(scope="module")
def ds():
    return compare.compare_rows(load_model("deepseek-v3"), include_all=True)


@pytest.fixture(scope="module")
def k3():
    return compare.compare_rows(load_model("kimi-k3"), include_all=True)


@pytest.fixture(scope="module")
def k3_listed():
    """The default listing: the layouts that hold a full-context request, fewest GPUs first."""
    return compare.compare_rows(load_model("kimi-k3"))


@pytest.fixture(scope="module")
def opt():
    """Every GPU under the article's aiter-k3-opt only (NVIDIA GPUs drop the aiter-* switch):
    one sglang setting per GPU."""
    return compare.compare_rows(load_model("kimi-k3"), variants=(K3_OPT,), include_all=True)


def row(df, gpu, n, tp, pp=1, setting=DEFAULTS):
    sel = df[(df.gpu == gpu) & (df.num_gpus == n) & (df.tp == tp) & (df.pp == pp) & (df.setting == setting)]
    assert len(sel) == 1, (gpu, n, tp, pp, setting)
    return sel.iloc[0]


def _placeholder_tiers(gpu) -> set:
    """Tiers whose price of ``gpu`` is a placeholder, read straight from data/prices.yaml."""
    from k3lab import data

    raw = data.read_yaml(data.data_dir() / "prices.yaml")
    return {p["tier"] for p in raw["prices"] if p["gpu"] == gpu and p["quality"] == "placeholder"}


def _usd_per_gpu_hour(gpu) -> dict:
    """{tier: $/GPU-hour} of one GPU, every tier of data/prices.yaml that prices it (k3lab's loader)."""
    pr = prices.prices()
    return {r.tier: float(r.usd_per_gpu_hour) for r in pr[pr.gpu == gpu].itertuples()}


# --------------------------------------------------------------------------- memory fit


def test_deepseek_v3_weights_per_gpu_at_tp8_follow_from_the_published_checkpoint(ds):
    lo = DS_CHECKPOINT_GB * DS_TARGET_FRACTION / 8 * 0.985   # a pure 1/8 shard of the target model
    hi = DS_CHECKPOINT_GB / 8 * 1.05                          # plus replicated norms/router, never more
    for gpu in ("h100", "h200", "b200", "mi300x"):
        w_gb = row(ds, gpu, 8, 8).weights_gib_per_gpu * GiB / GB
        assert lo < w_gb < hi, (gpu, w_gb, lo, hi)


@pytest.mark.parametrize("gpu", ["h200", "b200", "mi300x"])
def test_deepseek_v3_fits_one_8_gpu_node_per_sglang_docs(ds, gpu):
    r = row(ds, gpu, 8, 8)
    assert r.weights_fit and r.fits and r.holds and r.full_context_requests >= 1


def test_deepseek_v3_needs_two_h100_nodes_per_sglang_docs(ds):
    assert not row(ds, "h100", 8, 8).weights_fit and not row(ds, "h100", 8, 8).holds
    assert "weights do not fit" in row(ds, "h100", 8, 8).reason
    assert row(ds, "h100", 16, 16).fits and row(ds, "h100", 16, 8, 2).fits


def test_deepseek_v3_default_listing_holds_the_documented_nodes_only():
    df = compare.compare_rows(load_model("deepseek-v3"))
    eight = set(df[(df.num_gpus == 8) & (df.tp == 8)].gpu)
    assert {"h200", "b200", "mi300x"} <= eight and "h100" not in eight
    assert df.fits.all() and df.holds.all()
    assert df.attrs["context_tokens"] == 163840  # the published config's max_position_embeddings


@pytest.mark.parametrize("gpu,fits", [("b200", False), ("mi355x", True), ("b300", True)])
def test_kimi_k3_weights_on_one_8_gpu_node(k3, gpu, fits):
    r = row(k3, gpu, 8, 8)
    assert bool(r.weights_fit) is fits
    assert r.weights_gib_per_gpu * GiB > 1.56e12 / 8   # at least a pure 1/8 of the checkpoint


def test_kimi_k3_aiter_k3_opt_gives_the_articles_191_gib_and_leaves_nvidia_alone(k3, opt):
    # AMD GPUs are compared under both settings side by side, NVIDIA GPUs under sglang's defaults
    assert set(k3[(k3.gpu == "mi355x") & (k3.num_gpus == 8) & (k3.tp == 8)].setting) == {DEFAULTS, K3_OPT}
    assert set(k3[(k3.gpu == "b300") & (k3.num_gpus == 8) & (k3.tp == 8)].setting) == {DEFAULTS}
    side = row(k3, "mi355x", 8, 8, setting=K3_OPT)
    assert side.layout == "8xmi355x tp8 [aiter-k3-opt]"
    # the article: "at TP8 the model needs about 191 GiB of weights per GPU" (no AITER expert padding)
    assert side.weights_gib_per_gpu == pytest.approx(191, rel=0.01)
    assert side.weights_gib_per_gpu < row(k3, "mi355x", 8, 8).weights_gib_per_gpu
    # asked for explicitly: the same numbers; the aiter-* switch does not touch NVIDIA GPUs
    assert row(opt, "mi355x", 8, 8, setting=K3_OPT).weights_gib_per_gpu == side.weights_gib_per_gpu
    assert row(opt, "b300", 8, 8).weights_gib_per_gpu == row(k3, "b300", 8, 8).weights_gib_per_gpu
    assert set(opt[opt.gpu == "b300"].setting) == {DEFAULTS}


def test_every_candidate_is_listed_with_all(k3):
    """--all lists every GPU × layout × setting of the candidate rule (counted here from the
    hardware facts: 5 layouts, a 6th on a >8-GPU scale-up domain, ×2 settings on AMD; 66 today)."""
    n = sum((6 if load_gpu(g).scale_up_domain_gpus > 8 else 5) * (2 if load_gpu(g).vendor == "amd" else 1)
            for g in known_gpus())
    assert k3.attrs["candidates"] == n == len(k3)   # Kimi K3 shards on every candidate
    assert k3.layout.is_unique


def test_rows_are_smallest_first(ds, k3):
    for df in (ds, k3):
        n = list(df.num_gpus)
        assert n == sorted(n)
        for _, g in df[df.shardable].groupby("num_gpus"):
            w = list(g.weights_gib_per_gpu)
            assert w == sorted(w)


def test_a_layout_the_model_cannot_shard_is_skipped_unless_all(monkeypatch):
    monkeypatch.setattr(compare, "candidate_layouts", lambda gpu: [(8, 8, 1), (24, 24, 1)])
    cfg = load_model("deepseek-v3")  # 128 heads: TP24 does not divide them
    assert 24 not in set(compare.compare_rows(cfg, tiers=["article"]).tp)
    full = compare.compare_rows(cfg, tiers=["article"], include_all=True)
    bad = full[full.tp == 24]
    assert len(bad) and not bad.shardable.any() and bad.reason.str.contains("heads").all()
    assert (bad.fits_with == "cannot shard").all() and not bad.holds.any()


# --------------------------------------------------------------------------- fits with (the state pool)


def test_fits_with_says_defaults_a_setting_or_why_not(k3):
    """8×B300 TP8 holds 990,592 tokens with sglang's default state pool, short of 1,048,576:
    the row names the state-pool setting under which one request fits; 8×MI355X (ROCm default
    padding, 227k tokens) has none, with aiter-k3-opt it fits as is (README: 1,374,958 KV
    tokens); 8×B200's weights do not load; 16×B300 TP8×PP2 fits as is."""
    b300 = row(k3, "b300", 8, 8)
    assert not b300.fits and b300.holds and b300.fits_with.startswith("--mamba-full-memory-ratio ")
    r = float(b300.fits_with.split()[-1])
    assert 0 < r < 0.9   # less than the default share goes to state, so the KV pool grows
    assert memory.plan(load_model("kimi-k3"), "b300", 8, 8, mamba_full_memory_ratio=r).fits
    # the renter's report: "full-ctx reqs 0" beside that setting; the row also says how many fit with it
    with_it = memory.plan(load_model("kimi-k3"), "b300", 8, 8, mamba_full_memory_ratio=r).max_full_context_requests
    assert b300.full_context_requests == 0 and b300.full_context_requests_with_setting == with_it >= 1
    assert compare_view._full_ctx(b300.to_dict()) == f"{with_it} (defaults 0)"
    mi = row(k3, "mi355x", 8, 8)
    assert mi.fits_with == "no setting" and not mi.holds
    assert row(k3, "mi355x", 8, 8, setting=K3_OPT).fits_with == "defaults"
    assert row(k3, "b200", 8, 8).fits_with == "weights do not fit" and not row(k3, "b200", 8, 8).holds
    assert row(k3, "b300", 16, 8, 2).fits_with == "defaults"


def test_default_listing_adds_the_layouts_that_fit_only_with_a_setting(k3, k3_listed):
    df = k3_listed
    only = df[~df.fits]
    assert len(only) and only.fits_with.str.startswith("--").all()
    assert (df[df.fits].fits_with == "defaults").all() and df.holds.all()
    assert "b300" in set(only[(only.num_gpus == 8)].gpu)
    # the listing is exactly the rows of the full comparison that hold the request
    assert set(df.layout) == set(k3[k3.holds].layout)
    text = compare_view.format_table(df)
    assert (f"{int(k3.holds.sum())} layouts hold the request (of {k3.attrs['candidates']} GPU × layout × setting "
            "candidates)") in text
    head = next(line for line in text.splitlines() if line.startswith("layout ") and "GPUs" in line)
    assert "fits with" in head
    ds = compare.compare_rows(load_model("deepseek-v3"), tiers=["article"])
    assert (ds.fits_with == "defaults").all()   # no state pool: every listed row fits as is


def test_fit_matrix_cell_names_the_setting(opt):
    """One sglang setting per GPU (the article's aiter-k3-opt on AMD, defaults on NVIDIA): one
    row per GPU × layout cell, and a cell that fits only with a state-pool setting names it."""
    html = report_html.fit_matrix_html(opt)
    b300 = row(opt, "b300", 8, 8)
    assert f"fits only with <code>{b300.fits_with}</code>" in html
    assert html.count("fits only with <code>") == int((~opt.fits & opt.fits_with.str.startswith("--")).sum())
    assert html.split("<tbody>")[1].count("<tr>") == len(set(opt.gpu))   # one matrix row per GPU


# --------------------------------------------------------------------------- prices and throughput


def test_price_per_hour_and_cost_per_token_by_hand():
    df = compare.compare_rows(load_model("kimi-k3"), tiers=["article"], overrides={"mi300x": 1.5},
                              include_all=True)
    article = {g: prices.price(g, "article") for g in ("b200", "b300")}
    b200 = row(df, "b200", 8, 8)
    assert b200["usd_per_hour[article]"] == pytest.approx(8 * 4.25) == 8 * article["b200"]
    assert math.isnan(b200["usd_per_hour[override]"])
    assert row(df, "mi300x", 8, 8)["usd_per_hour[override]"] == pytest.approx(8 * 1.5)
    # a row priced on the serving model: $/M = $/hour × 1e6 / (tok/s × 3600), the band inverted
    b300 = row(df, "b300", 8, 8)
    assert b300.priced_by == "model" and b300.priced_tok_s == b300.model_tok_s > 0
    assert b300.model_tok_s_low <= b300.model_tok_s <= b300.model_tok_s_high
    usd_h = 8 * article["b300"]
    assert b300["usd_per_hour[article]"] == pytest.approx(usd_h)
    assert b300[f"{MTOK}[article]"] == pytest.approx(usd_h * 1e6 / (b300.model_tok_s * 3600))
    assert b300[f"{MTOK}_low[article]"] == pytest.approx(usd_h * 1e6 / (b300.model_tok_s_high * 3600))
    assert b300[f"{MTOK}_high[article]"] == pytest.approx(usd_h * 1e6 / (b300.model_tok_s_low * 3600))
    assert 1 <= b300.model_concurrency and math.isnan(b300.user_tok_s)
    # the roofline stays a column: an upper bound on every modelled throughput
    both = df[df.model_tok_s.notna() & df.roofline_bound_tok_s.notna()]
    assert len(both) and (both.model_tok_s <= both.roofline_bound_tok_s).all()
    # no throughput, no $/M: DeepSeek-V3 has no calibrated serving model
    ds = compare.compare_rows(load_model("deepseek-v3"), tiers=["article"])
    assert ds.model_tok_s.isna().all() and ds[f"{MTOK}[article]"].isna().all() and (ds.priced_by == "—").all()


@pytest.fixture(scope="module")
def k3_tok_s(capsys_module):
    """``python -m k3lab compare --tok-s b300=200 --json``: B300 priced on the user's 200 tok/s per GPU."""
    rc, out, err = capsys_module("--tok-s", "b300=200", "--json")
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def capsys_module():
    """Run ``python -m k3lab compare ARGS`` in-process (the entry function); (rc, stdout, stderr)."""
    def run(*argv):
        o, e = io.StringIO(), io.StringIO()
        old = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = o, e
        try:
            rc = cli.main(["compare", *argv])
        except SystemExit as x:
            rc = x.code
        finally:
            sys.stdout, sys.stderr = old
        return rc, o.getvalue(), e.getvalue()
    return run


def test_your_tok_s_per_gpu_prices_the_gpus_rows_by_hand(k3_tok_s):
    per_gpu = 200.0
    usd = _usd_per_gpu_hour("b300")
    tier = "rental_index"                       # an independent market price (data/prices.yaml)
    assert usd[tier] == prices.price("b300", tier)
    b300 = [r for r in k3_tok_s["rows"] if r["gpu"] == "b300"]
    assert b300 and k3_tok_s["asked"]["tok_s"] == {"b300": per_gpu}
    for r in b300:
        assert r["priced_by"] == "your --tok-s"
        assert r["user_tok_s"] == r["priced_tok_s"] == pytest.approx(per_gpu * r["num_gpus"])
        # $/M = $/GPU-hour × 1e6 / (tok/s per GPU × 3600): the same for every B300 layout
        assert r[MTOK][tier] == pytest.approx(usd[tier] * 1e6 / (per_gpu * 3600))
        assert set(r[MTOK]) == set(usd)          # every source that prices a B300
        for t, p in usd.items():
            assert r["usd_per_hour"][t] == pytest.approx(r["num_gpus"] * p)
            assert r[MTOK][t] == pytest.approx(p * 1e6 / (per_gpu * 3600))
            lo, hi = prices.price_range("b300", t)
            # your figure has no band; a price given as a range spans its ends (audit 2: Ornn's 5.00-7.25)
            assert r[MTOK + "_low"][t] == pytest.approx(lo * 1e6 / (per_gpu * 3600))
            assert r[MTOK + "_high"][t] == pytest.approx(hi * 1e6 / (per_gpu * 3600))
            assert (lo == hi) == (r[MTOK + "_low"][t] == r[MTOK + "_high"][t] == r[MTOK][t])
    # the other GPUs keep the serving model's throughput
    mi = next(r for r in k3_tok_s["rows"] if r["layout"] == "8xmi355x tp8 [aiter-k3-opt]")
    assert mi["priced_by"] == "model" and mi["user_tok_s"] is None


def test_your_tok_s_in_the_answers_and_the_text(capsys_module):
    """A B300 figure far above the model's makes B300 the cheapest under every source that
    prices it; at a per-GPU rate every B300 layout costs the same per token, so the answer is
    the one cheapest per hour: the fewest GPUs, 8xb300 tp8 (which holds with a state-pool setting)."""
    per_gpu = 10_000.0
    df = compare.compare_rows("kimi-k3", tok_s={"B300": per_gpu})
    ans = {a["tier"]: a for a in compare_answers.answers(df)}
    placeholders = _placeholder_tiers("b300")
    for tier, p in _usd_per_gpu_hour("b300").items():
        a = ans[tier]
        if tier in placeholders:  # a placeholder price is never evidence: no answer rests on it
            assert not a["layout"].startswith(("8xb300", "16xb300", "32xb300")) and "b300" in a["not_priced"], tier
            assert "B300 priced only by a placeholder" in compare_view.answer_line(a, df.attrs["context_tokens"])
            continue
        assert a["layout"] == "8xb300 tp8" and a["priced_by"] == "your --tok-s", tier
        assert a["usd_per_million_tokens"] == pytest.approx(p * 1e6 / (per_gpu * 3600))
        assert a["usd_per_hour"] == pytest.approx(8 * p)
        line = compare_view.answer_line(a, df.attrs["context_tokens"])
        assert "your --tok-s" in line and "band" not in line and "with --mamba-full-memory-ratio" in line
    rc, out, _ = capsys_module("--tok-s", "b300=10000")
    assert rc == 0
    text = " ".join(out.split())
    assert "your --tok-s (output tok/s per GPU) prices: B300 10,000;" in text  # as typed, never 10,000.0
    assert all(compare_view.answer_line(a, df.attrs["context_tokens"]) in out for a in ans.values())


# --------------------------------------------------------------------------- answers, --sort, --top


def _hand_answers(df) -> dict:
    """Per tier: (lowest $/M among the rows that hold the request and have a $/M there — a model
    prediction inside its validated domain, or the user's figure, before one outside — and the
    layouts that reach it); (None, ()) when no such row."""
    out = {}
    for t in df.attrs["tiers"]:
        col = f"{MTOK}[{t}]"
        cand = df[df.holds & df[col].notna()]
        cand = cand[~cand.gpu.apply(lambda g: t in _placeholder_tiers(g))]  # never priced by a placeholder
        trusted = cand[(cand.priced_by != "model") | cand.model_in_domain.astype(bool)]
        pool = trusted if len(trusted) else cand
        best = pool[col].min() if len(pool) else None
        out[t] = (best, () if best is None else tuple(pool[pool[col] == best].layout))
    return out


def test_answers_are_the_cheapest_holding_layout_per_tier_in_domain_first(k3, k3_listed):
    for df in (k3, k3_listed):
        ans = compare_answers.answers(df)
        assert [a["tier"] for a in ans] == df.attrs["tiers"] == prices.tiers()
        hand = _hand_answers(df)
        priced = 0
        for a in ans:
            best, layouts = hand[a["tier"]]
            if best is None:
                assert a["layout"] is None, a
                continue
            priced += 1
            assert a["layout"] in layouts and a["usd_per_million_tokens"] == pytest.approx(best), a
            r = df[df.layout == a["layout"]].iloc[0]
            assert r.holds and a["fits_with"] == r.fits_with and a["setting"] == r.setting
            assert a["usd_per_hour"] == pytest.approx(r[f"usd_per_hour[{a['tier']}]"])
            assert a["usd_per_million_tokens_low"] <= a["usd_per_million_tokens"] <= a["usd_per_million_tokens_high"]
        assert priced >= 2   # the article's own tier and independent ones price a holding layout
    # a cheaper row outside the validated domain does not win while an in-domain one holds it
    art = f"{MTOK}[article]"
    out = k3_listed[(k3_listed.priced_by == "model") & ~k3_listed.model_in_domain.astype(bool)]
    best = {a["tier"]: a for a in compare_answers.answers(k3_listed)}["article"]
    assert best["model_in_domain"] and out[art].min() < best["usd_per_million_tokens"]


def test_top_shortens_the_listing_not_the_answers(k3_listed):
    one = compare.compare_rows("kimi-k3", top=1)
    assert len(one) == 1 and one.layout.iloc[0] == k3_listed.layout.iloc[0]
    assert compare_answers.answers(one) == compare_answers.answers(k3_listed)
    cheap = compare.compare_rows("kimi-k3", top=1, sort="cost")
    assert compare_answers.answers(cheap) == compare_answers.answers(k3_listed)
    text = compare_view.format_table(one)
    assert "; first 1" in text and f"{len(k3_listed)} layouts hold the request" in text
    assert all("  " + compare_view.answer_line(a, 1048576) in text.splitlines() for a in compare_answers.answers(k3_listed))


def _first_priced(r, tiers):
    return next((r[f"{MTOK}[{t}]"] for t in tiers if r[f"{MTOK}[{t}]"] == r[f"{MTOK}[{t}]"]), math.nan)


@pytest.fixture(scope="module")
def k3_cost():
    return compare.compare_rows("kimi-k3", sort="cost")


def test_sort_cost_orders_by_dollars_per_million_tokens(k3_listed, k3_cost):
    df = k3_cost
    assert sorted(df.layout) == sorted(k3_listed.layout)            # the same rows, another order
    key = [_first_priced(r, df.attrs["tiers"]) for r in df.to_dict("records")]
    priced = [k for k in key if k == k]
    assert priced and key[:len(priced)] == priced == sorted(priced)   # cheapest first, unpriced last
    assert all(k != k for k in key[len(priced):])
    one = compare.compare_rows("kimi-k3", tiers=["rental_index"], sort="cost")
    v = list(one[f"{MTOK}[rental_index]"])
    n = sum(x == x for x in v)
    assert v[:n] == sorted(v[:n]) and all(x != x for x in v[n:])
    assert "sorted by cost" in compare_view.format_table(one)


def test_cli_sort_cost_top_json(capsys_module, k3_listed, k3_cost):
    rc, out, _ = capsys_module("--sort", "cost", "--top", "3", "--json")
    doc = json.loads(out)
    assert rc == 0 and len(doc["rows"]) == 3
    assert [r["layout"] for r in doc["rows"]] == list(k3_cost.layout[:3])
    assert doc["answers"] == compare_answers.answers(k3_listed)


# --------------------------------------------------------------------------- the decision agrees


@pytest.mark.parametrize("kw", [{}, {"context_tokens": 262144, "kv_dtype": "fp8", "overrides": {"mi355x": 2.0},
                                     "tok_s": {"b300": 300.0}}])
def test_the_decision_and_compare_name_the_same_cheapest_layouts(kw):
    kw = dict(kw)
    ctx = kw.pop("context_tokens", None)
    d = decision.decide("kimi-k3", ctx, **kw)
    df = compare.compare_rows("kimi-k3", ctx, **kw)
    assert d.answers == compare_answers.answers(df)
    hand = _hand_answers(df)
    cheapest = {a["tier"]: a for a in d.answers if a["layout"]}
    assert cheapest and {a["tier"] for a in d.answers} == set(hand)
    for t, a in cheapest.items():
        assert a["layout"] in hand[t][1] and a["usd_per_million_tokens"] == pytest.approx(hand[t][0]), t
    if kw:   # the user's price is a source of its own, and the user's B300 figure prices B300 rows
        assert "override" in cheapest
        assert (df[df.gpu == "b300"].priced_by == "your --tok-s").all()
    # the decision's sentences are compare's answer lines
    lines = decision.answer_lines(d)
    assert all(compare_view.answer_line(a, d.context_tokens) in lines for a in compare_answers.answers(df))


# --------------------------------------------------------------------------- bad input


def test_bad_inputs_raise_one_line_value_errors():
    cfg = load_model("deepseek-v3")
    for kw, says in (({"context_tokens": 0}, "context"), ({"context_tokens": 10**9}, "context"),
                     ({"kv_dtype": "fp4"}, "kv_dtype"), ({"mem_fraction": 1.5}, "mem_fraction"),
                     ({"variants": ("nope",)}, "nope"), ({"variants": ("aiter-k3-opt", "aiter-moe-pad")}, ""),
                     ({"tiers": ["nope"]}, "tier"), ({"overrides": {"tpu": 1.0}}, "tpu"),
                     ({"overrides": {"h100": -1.0}}, "h100"), ({"input_len": 0}, "input_len"),
                     ({"output_len": 1.5}, "output_len"), ({"sort": "price"}, "sort"), ({"top": 0}, "top"),
                     ({"gpus": ["tpu"]}, "tpu"), ({"tok_s": {"tpu": 100.0}}, "tpu"),
                     ({"tok_s": {"b300": -1.0}}, "b300"), ({"tok_s": {"b300": 0}}, "b300"),
                     ({"tok_s": {"b300": math.nan}}, "b300"), ({"tok_s": {"b300": "200"}}, "b300")):
        with pytest.raises(ValueError) as e:
            compare.compare_rows(cfg, **kw)
        assert "\n" not in str(e.value) and says in str(e.value), kw
    with pytest.raises(ValueError, match="unknown model"):
        compare.compare_rows("nope")


def _cli(capsys, *argv):
    try:
        rc = compare_view.cli_main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv", [
    ["--model", "nope"], ["--usd-per-gpu-hour", "tpu=3"], ["--usd-per-gpu-hour", "h100=-2"],
    ["--usd-per-gpu-hour", "h100=abc"], ["--usd-per-gpu-hour", "h100"], ["--price-tier", "nope"],
    ["--context", "0"], ["--kv-dtype", "fp4"], ["--bogus"], ["--mem-fraction", "nan"],
    ["--sort", "price"], ["--top", "0"], ["--input-len", "0"], ["--output-len", "-3"],
])
def test_cli_bad_input_exits_2_with_one_line(capsys, argv):
    rc, out, err = _cli(capsys, *argv)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("k3lab compare: error: "), err


@pytest.mark.parametrize("value,says", [
    ("tpu=100", "tpu"),          # an unknown GPU
    ("b300=fast", "fast"),       # not a number
    ("b300=-5", "-5"),           # negative
    ("b300=0", "b300=0"),        # zero
    ("b300=nan", "nan"),
    ("b300=inf", "inf"),
    ("b300", "GPU=VALUE"),       # no value
    ("=200", "GPU=VALUE"),       # no GPU
])
def test_bad_tok_s_is_one_line_and_exit_2_through_python_m_k3lab(capsys_module, value, says):
    rc, out, err = capsys_module("--tok-s", value)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("k3lab compare: error: --tok-s"), err
    assert says in err


def _strict_json(text: str):
    """JSON as any strict reader takes it: NaN and Infinity are not JSON."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("argv,says", [
    # issue 35: answered "$inf/M" and --json wrote Infinity
    (["--tok-s", "mi355x=1e-308", "--price-tier", "quoted_rates"], "--tok-s"),
    (["--tok-s", "mi355x=1e-308", "--price-tier", "quoted_rates", "--json"], "must be 0.01 to"),
    # issue 35: a 10,000,000-token request priced at $513,513,585/M
    (["--input-len", "10000000", "--output-len", "1"],
     "--input-len 10,000,000 + --output-len 1 = 10,000,001 tokens per request exceeds kimi-k3's maximum of 1,048,576"),
    (["--input-len", "1048576", "--output-len", "1", "--json"], "exceeds kimi-k3's maximum of 1,048,576"),
])
def test_nothing_impossible_is_priced(capsys_module, argv, says):
    rc, out, err = capsys_module(*argv)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (rc, out[:200], err)
    assert err.startswith("k3lab compare: error: ") and says in err, err


def test_the_slowest_tok_s_allowed_prices_finite_dollars_in_strict_json(capsys_module):
    rc, out, err = capsys_module("--tok-s", "mi355x=0.01", "--price-tier", "quoted_rates", "--json", "--top", "2")
    assert rc == 0, err
    answer = _strict_json(out)["answers"][0]
    # 8 GPUs × $2.95 per GPU-hour over 8 × 0.01 tok/s × 3,600 s per hour, per million tokens
    assert answer["priced_by"] == "your --tok-s" and answer["usd_per_hour"] == 8 * 2.95
    assert math.isclose(answer["usd_per_million_tokens"], 2.95 / (0.01 * 3600) * 1e6, rel_tol=1e-9)


def test_a_stale_fit_is_refused_not_priced_on_a_roofline(data_copy, capsys_module):
    """Issue 35: with a stale fit compare exited 0, every row without a model, priced on nothing."""
    f = data_copy / "public_measurements.yaml"  # a value fixed (a comment alone leaves the fit current)
    f.write_text(f.read_text(encoding="utf-8").replace("title: '", "title: 'a typo fixed, say: ", 1), encoding="utf-8")
    data.clear_cache()
    rc, out, err = capsys_module("--top", "1")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (rc, err)
    assert "data/serving_fit.yaml: stale, data/public_measurements.yaml changed" in err


def test_bad_tok_s_given_twice_and_through_a_real_process(capsys_module):
    rc, out, err = capsys_module("--tok-s", "b300=1", "--tok-s", "B300=2")
    assert rc == 2 and out == "" and "given twice" in err and len(err.strip().splitlines()) == 1
    p = subprocess.run([sys.executable, "-m", "k3lab", "compare", "--tok-s", "b300=-5"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and "--tok-s 'b300=-5'" in p.stderr


# --------------------------------------------------------------------------- output formats


def _strict(c):
    raise AssertionError(f"not JSON: {c}")


def test_cli_json_asked_answers_rows(capsys):
    rc, out, _ = _cli(capsys, "--model", "deepseek-v3", "--json", "--price-tier", "article")
    doc = json.loads(out, parse_constant=_strict)     # NaN / Infinity are not JSON
    assert rc == 0 and set(doc) == {"asked", "answers", "your_prices", "rows"} and doc["your_prices"] is None
    assert doc["asked"]["model"] == "deepseek-v3" and doc["asked"]["context_tokens"] == 163840
    assert doc["asked"]["tiers"] == ["article"]
    rows = doc["rows"]
    assert rows and all(r["holds"] for r in rows)
    for r in rows:
        assert {"layout", "setting", "gpu", "num_gpus", "tp", "pp", "weights_fit", "max_kv_tokens", "fits_with",
                "holds", "model_tok_s", "priced_by", "roofline_bound_tok_s", "usd_per_hour", MTOK} <= set(r)
        assert isinstance(r["usd_per_hour"], dict) and r[MTOK] == {}   # no serving model for DeepSeek-V3
        assert not any(k.startswith("_") for k in r)
    b200 = next(r for r in rows if r["gpu"] == "b200" and r["num_gpus"] == 8)
    assert b200["usd_per_hour"] == {"article": pytest.approx(34.0)}
    # nothing to price per token: the answer names the cheapest holding layout per hour,
    # MI355X ($2.50, the article's lowest) on 8 GPUs, the fewest that hold it
    (a,) = doc["answers"]
    assert a["tier"] == "article" and a["layout"] is None
    assert a["unpriced"]["layout"].startswith("8xmi355x tp8")
    assert a["unpriced"]["usd_per_hour"] == pytest.approx(8 * prices.price("mi355x", "article")) == 20.0


def test_cli_csv(capsys, ds):
    rc, out, _ = _cli(capsys, "--model", "deepseek-v3", "--csv", "--price-tier", "article")
    rows = list(csv.DictReader(io.StringIO(out)))
    header = set(rows[0])
    assert rc == 0 and {"layout", "setting", "gpu", "num_gpus", "tp", "pp", "holds", "fits_with", "model_tok_s",
                        "model_tok_s_low", "model_tok_s_high", "model_concurrency", "model_in_domain", "user_tok_s",
                        "priced_tok_s", "priced_by", "roofline_bound_tok_s", "usd_per_hour[article]",
                        "usd_per_million_tokens[article]", "usd_per_million_tokens_low[article]",
                        "usd_per_million_tokens_high[article]"} <= header
    assert not any(c.startswith("_") for c in header)
    assert len(rows) == int(ds.holds.sum())
    b200 = next(r for r in rows if r["layout"] == "8xb200 tp8")
    assert float(b200["usd_per_hour[article]"]) == pytest.approx(34.0)


def test_default_table_through_python_m_labels_the_model_and_the_bound():
    p = subprocess.run([sys.executable, "-m", "k3lab", "compare"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    head = p.stdout.splitlines()[0]
    assert "kimi-k3" in head and "1,048,576" in head and "bf16" in head
    assert "roofline ≤ tok/s" in p.stdout and "model tok/s" in p.stdout
    text = " ".join(p.stdout.split())
    assert "roofline: an upper bound, never a throughput" in text and "Nothing here was measured on a GPU" in text
    assert "answer: per price source, the layout that holds the request at the lowest $/M output tokens" in text


# --------------------------------------------------------------------------- fixes found by the tests above


def test_fit_matrix_has_a_row_per_gpu_and_setting(k3):
    """Both sglang settings of an AMD GPU get their own matrix row (none overwrites the other)."""
    html = report_html.fit_matrix_html(k3)
    body = html.split("<tbody>")[1]
    assert body.count("<tr>") == len({(r.gpu, r.setting) for r in k3.itertuples()})
    assert "<th>MI355X</th>" in body and f"<th>MI355X [{K3_OPT}]</th>" in body
    assert "<th>B300</th>" in body and "<th>B300 [" not in body


def test_answers_of_a_slice_are_its_own(k3_listed):
    """compare_rows' answers travel with its frame (and survive --top), not with a user's slice."""
    b300 = k3_listed[k3_listed.gpu == "b300"]
    got = {a["tier"]: a["layout"] for a in compare_answers.answers(b300) if a["layout"]}
    assert got and all(lay.startswith(("8xb300", "16xb300", "32xb300")) for lay in got.values()), got


def test_a_row_holding_only_with_a_setting_is_priced_within_what_that_setting_admits(k3_listed):
    """8×B300 TP8 holds a 1M-token request only with a state-pool setting, which leaves fewer
    running requests than sglang's defaults: the model's concurrency stays within it."""
    from k3lab import memory
    from k3lab.specs import load_model

    r = row(k3_listed, "b300", 8, 8)
    assert r.fits_with.startswith("--")
    p = memory.plan(load_model("kimi-k3"), "b300", 8, 8, 0.9, "bf16", context_tokens=k3_listed.attrs["context_tokens"])
    assert p.verdict == "fits only with a setting"
    assert r.model_concurrency <= p.best_option.max_running_requests < p.max_running_requests


def test_the_k3_switch_is_offered_for_kimi_k3_only(ds, k3):
    """SGLANG_AITER_K3_OPT is a switch of sglang's Kimi K3 path: another model is compared under
    sglang's defaults alone, and its header does not name the switch."""
    assert set(ds.setting) == {DEFAULTS}
    assert set(k3[k3.gpu == "mi355x"].setting) == {DEFAULTS, K3_OPT}
    assert "AITER_K3_OPT" not in "\n".join(compare_view.header_lines(ds))


# --------------------------------------------------------------------------- your prices, judged (issue 31)


@pytest.fixture(scope="module")
def yours():
    """The renter's question: MI355X at $3.00 and B300 at $5.50 per GPU-hour, only their prices."""
    return compare.compare_rows(load_model("kimi-k3"), tiers=["override"], overrides={"mi355x": 3.0, "b300": 5.5},
                                input_len=1000, output_len=400)


def test_breakeven_is_the_rows_tok_s_per_gpu_ratio_by_hand(yours):
    """a's $/GPU-hour ÷ b's at equal $/M = a's tok/s per GPU ÷ b's; the band pairs a's low with b's
    high (and the reverse), read off the comparison's own rows."""
    a, b = "8xmi355x tp8 [aiter-k3-opt]", "8xb300 tp8"
    ra, rb = (yours.set_index("layout").loc[x] for x in (a, b))
    be = compare_answers.breakeven(yours, a, b)
    assert be["ratio"] == pytest.approx((ra["model_tok_s"] / 8) / (rb["model_tok_s"] / 8))
    assert be["low"] == pytest.approx(ra["model_tok_s_low"] / rb["model_tok_s_high"])
    assert be["high"] == pytest.approx(ra["model_tok_s_high"] / rb["model_tok_s_low"])
    assert be["low"] < be["ratio"] < be["high"] and be["priced_by"] == "model"
    assert compare_answers.breakeven(yours, a, "no such layout") is None


def test_a_price_ratio_reads_against_the_band():
    be = {"a": "A", "b": "B", "ratio": 1.0, "low": 0.5, "high": 2.0}
    assert compare_answers.reading(0.4, be) == "A cheaper per token"
    assert compare_answers.reading(2.5, be) == "B cheaper per token"
    assert compare_answers.reading(0.545, be).startswith("too close to call")
    # no band: the ratio, said as the model's centre (attack 5: "A cheaper per token" reads as past the bands)
    assert compare_answers.reading(0.9, dict(be, low=None, high=None)) == ("A cheaper per token at the model's values "
                                                                          "(no band: not validated)")


def test_a_range_of_price_ratios_reads_one_side_only_when_all_of_it_does():
    """Audit 2: a pair priced as a range (Ornn's B300 5.00-7.25) is a range of ratios; mirrored ranges
    read mirrored, and a range across the band's edge turns on where the price sits in it."""
    be = {"a": "A", "b": "B", "ratio": 1.0, "low": 0.5, "high": 2.0}
    assert compare_answers.reading(0.3, be, 0.45) == "A cheaper per token"
    assert compare_answers.reading(2.2, be, 3.0) == "B cheaper per token"
    assert compare_answers.reading(0.6, be, 1.8).startswith("too close to call")
    assert compare_answers.reading(0.4, be, 0.9) == ("turns on where the price sits in its range: A cheaper at a "
                                                     "ratio of 0.40, too close to call at 0.90")
    assert compare_answers.reading(1.5, be, 2.5) == ("turns on where the price sits in its range: too close to call "
                                                     "at a ratio of 1.50, B cheaper at 2.50")
    assert compare_answers.reading(0.4, be, 2.5).endswith("A cheaper at a ratio of 0.40, B cheaper at 2.50")


def test_your_prices_are_judged_against_the_break_even(yours):
    u = compare_answers.user_verdict(yours)
    assert (u["first"], u["second"]) == ("8xmi355x tp8 [aiter-k3-opt]", "8xb300 tp8")
    assert u["price_ratio"] == pytest.approx(3.0 / 5.5)
    be = compare_answers.breakeven(yours, u["first"], u["second"])
    assert u["breakeven"] == be and u["reading"] == compare_answers.reading(3.0 / 5.5, be)
    second = yours.set_index("layout").loc["8xb300 tp8"]
    assert u["second_usd_per_million_tokens"] == pytest.approx(
        (second["usd_per_million_tokens[override]"], second["usd_per_million_tokens_low[override]"],
         second["usd_per_million_tokens_high[override]"]))
    # the CLI prints the same: the ratio, the break-even band, the verdict and the runner-up's band
    lines = compare_view.verdict_lines(u)
    text = compare_view.format_table(yours)
    assert all(x in text for x in lines if x)
    assert f"a price ratio of {3 / 5.5:.3f}" in lines[1] and u["reading"] in lines[1]
    assert f"runner-up 8xb300 tp8: ${u['second_usd_per_million_tokens'][0]:,.2f}/M (band $" in lines[2]


def test_a_clear_price_gap_names_the_cheaper_gpu():
    df = compare.compare_rows(load_model("kimi-k3"), tiers=["override"], overrides={"mi355x": 1.0, "b300": 9.0})
    u = compare_answers.user_verdict(df)
    assert u["price_ratio"] < u["breakeven"]["low"] and u["reading"] == f"{u['first']} cheaper per token"


def test_no_verdict_without_your_prices_on_two_gpus():
    assert compare_answers.user_verdict(compare.compare_rows(load_model("kimi-k3"), tiers=["article"])) is None
    one = compare.compare_rows(load_model("kimi-k3"), tiers=["override"], overrides={"mi355x": 3.0})
    assert compare_answers.user_verdict(one) is None and "your prices:" not in compare_view.format_table(one)


def test_price_tier_override_is_accepted_with_prices_and_refused_without(capsys_module):
    _run = capsys_module
    rc, out, err = _run("--usd-per-gpu-hour", "mi355x=3", "--usd-per-gpu-hour", "b300=5.5", "--price-tier",
                        "override", "--top", "1", "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["your_prices"]["first"] == "8xmi355x tp8 [aiter-k3-opt]" and [a["tier"] for a in got["answers"]] == ["override"]
    rc, out, err = _run("--price-tier", "override")
    assert rc == 2 and out == "" and err.strip() == ("k3lab compare: error: price tier 'override' is your own prices: "
                                                     "give them with --usd-per-gpu-hour GPU=PRICE")


def test_the_decision_breaks_even_on_the_layouts_compare_lists():
    """The decision's MI355X/B300 break-even is compare.breakeven on the comparison's own rows:
    one layout, one number (issue 31: the break-even was on 8×B300 TP8+DCP8, which compare never listed)."""
    d = decision.decide("kimi-k3", input_len=1024, output_len=400)
    df = d.comparison
    be = compare_answers.breakeven(df, "8xmi355x tp8 [aiter-k3-opt]", "8xb300 tp8")
    assert (d.breakeven.model, d.breakeven.model_low, d.breakeven.model_high) == pytest.approx(
        (be["ratio"], be["low"], be["high"]))
    assert {"8xmi355x tp8 [aiter-k3-opt]", "8xb300 tp8"} <= set(df["layout"])
    assert d.breakeven.workload == "1,024 in / 400 out, each at its peak"   # and the latency it was priced at


def test_the_decision_breaks_even_at_matched_latency_as_t21_does():
    """Audit 3 (#7): beside the peaks' break-even (each node at its own TPOT), the decision states the
    break-even with both nodes at the same TPOT: at each limit, compare.breakeven on compare's own rows
    under that TPOT limit (the rows T21 reads), and the headline leads with them. Under a latency target
    the break-even is at one TPOT already: nothing matched is added."""
    from k3lab.serving.slo import SLO

    d = decision.decide("kimi-k3", input_len=1024, output_len=400)
    assert len(d.matched) >= 2
    for ms, be in (d.matched[0], d.matched[-1]):
        df = compare.compare_rows("kimi-k3", gpus=["mi355x", "b300"], input_len=1024, output_len=400,
                                  slo=SLO(max_tpot_ms=ms))
        hand = compare_answers.breakeven(df, "8xmi355x tp8 [aiter-k3-opt]", "8xb300 tp8")
        assert (be["ratio"], be["low"], be["high"]) == pytest.approx((hand["ratio"], hand["low"], hand["high"]))
    # the pair at the same TPOT, slower limits cheaper for the MI355X: the break-even rises with the limit
    ratios = [be["ratio"] for _, be in d.matched]
    assert ratios == sorted(ratios)
    line = next(x for x in decision.headline(d) if x.startswith("The MI355X wins perf/$"))
    first, last = d.matched[0], d.matched[-1]
    assert (f"with both nodes at the same TPOT {first[1]['ratio']:.2f}x ({first[1]['low']:.2f}-{first[1]['high']:.2f}) "
            f"at {first[0]:g} ms to {last[1]['ratio']:.2f}x") in line
    assert line.index("same TPOT") < line.index("each node at its own peak")
    slo = decision.decide("kimi-k3", input_len=1024, output_len=400, slo=SLO(max_tpot_ms=40))
    assert slo.matched == [] and "same TPOT" not in " ".join(decision.headline(slo))


def test_a_what_if_workload_and_your_prices_reach_the_decision():
    d = decision.decide("kimi-k3", input_len=1000, output_len=400, overrides={"mi355x": 3.0, "b300": 5.5})
    assert d.breakeven.workload == "1,000 in / 400 out, each at its peak"
    mine = d.breakeven.sources[0]
    assert mine["label"] == "your prices" and mine["ratio"] == pytest.approx(3.0 / 5.5)
    assert any(line.startswith("  your prices: $3.00 / $5.50 = 0.55x") for line in decision.answer_lines(d))


def test_a_source_that_prices_one_of_the_gpus_names_no_winner(k3):
    """Issue 36: a source that leaves out a GPU the others price (and whose holding layouts have a
    throughput) names no winner; a placeholder price counts as none."""
    from k3lab import data

    raw = data.read_yaml(data.data_dir() / "prices.yaml")
    evidence = {}
    for p in raw["prices"]:
        if p["quality"] != "placeholder":
            evidence.setdefault(p["tier"], set()).add(p["gpu"])
    held = k3[k3.holds & k3.priced_tok_s.notna()]
    contenders = {g for g in held.gpu if any(g in v for v in evidence.values())}
    assert {"mi355x", "b300"} <= contenders
    for a in compare_answers.answers(k3):
        missing = sorted(contenders - evidence.get(a["tier"], set()))
        assert a["not_priced"] == missing, a["tier"]
        line = compare_view.answer_line(a, k3.attrs["context_tokens"])
        assert ("no winner" in line) == bool(missing), line
    ans = {a["tier"]: compare_view.answer_line(a, k3.attrs["context_tokens"]) for a in compare_answers.answers(k3)}
    assert "MI355X not priced by this source" in ans["neocloud_on_demand"]
    assert "B300" in ans["quoted_rates"].split("not priced by this source")[0].split("no winner (")[1]
    assert "B300 priced only by a placeholder, never evidence" in ans["inferencex_neocloud"]
    assert "not a rental price" in ans["inferencex_neocloud"] and "no winner" not in ans["hyperscaler_on_demand"]


def test_one_dollar_per_million_per_question_on_every_surface():
    """Issue 31: $3.74 / $3.75 / $3.78 for one question on three surfaces. The CLI (compare), notebook
    04's "your GPUs and layouts" section (its own calls, with its default parameters) and the
    decision box price 8×MI355X TP8 with K3_OPT under each price source at one $/M."""
    from k3lab import nbparams
    from k3lab.findings import field as field_claims
    from k3lab.paths import NOTEBOOKS_DIR
    from k3lab.specs import parse_layout

    p = nbparams.declared([nbparams.notebook_parameters_cell("04_throughput_perf_per_dollar")])[0]
    deps = [parse_layout(x) for x in p["layouts"]]
    peaks = field_claims.model_peaks(deps, p["input_len"], p["output_len"], mem_fraction=p["mem_fraction"])
    nb = field_claims.model_perf_per_dollar(peaks, p["usd_per_gpu_hour"])
    nb = nb[nb["layout"] == "8×MI355X TP8"].set_index("tier")["usd_per_million_tokens"]
    cli = compare.compare_rows(load_model("kimi-k3"), input_len=p["input_len"], output_len=p["output_len"],
                               mem_fraction=p["mem_fraction"])
    row = cli.set_index("layout").loc["8xmi355x tp8 [aiter-k3-opt]"]
    d = decision.decide("kimi-k3", input_len=p["input_len"], output_len=p["output_len"], mem_fraction=p["mem_fraction"])
    box = {a["tier"]: a["usd_per_million_tokens"] for a in d.answers if a.get("layout") == "8xmi355x tp8 [aiter-k3-opt]"}
    assert len(nb) >= 5 and box
    for tier, v in nb.items():
        assert round(row[f"usd_per_million_tokens[{tier}]"], 2) == round(v, 2), tier
        if tier in box:
            assert round(box[tier], 2) == round(v, 2), tier
    # the notebook makes exactly this call (no fp8 KV, no electricity in this section unless the run changes them),
    # and it prices the same as the calls above
    from k3lab.findings import serving_prices

    src = (NOTEBOOKS_DIR / "04_throughput_perf_per_dollar.ipynb").read_text(encoding="utf-8")
    assert "serving_prices.at_latency(deps, P)" in src
    assert field_claims.user_serving_settings({}, "fp8", 0.10) == ("bf16", 0.0)          # the CLI's defaults
    assert field_claims.user_serving_settings({"kv_dtype": "fp8"}, "fp8", 0.10) == ("fp8", 0.0)
    t = serving_prices.at_latency(deps, nbparams.Params(p, p)).table
    got = t[t["layout"] == "8×MI355X TP8"].set_index("tier")["usd_per_million_tokens"]
    assert got.round(2).to_dict() == nb.round(2).to_dict()


def test_two_rows_the_setting_does_not_change_say_why():
    """The renter's 'other': 16xmi355x tp16 with and without [aiter-k3-opt] print the same. K3's expert intermediate
    (3,072, the model's config) split 16 ways is 192 per GPU; padded to a multiple of 256 (the ROCm default) or of
    128 (SGLANG_AITER_K3_OPT=1) it is 256 either way, so nothing moves. At TP32 (96) the two differ (256 against
    128): no such note there."""
    inter = load_model("kimi-k3").moe_intermediate_size
    pad = lambda x, a: -(-x // a) * a  # noqa: E731
    assert pad(inter // 16, 256) == pad(inter // 16, 128) == 256 and pad(inter // 32, 256) != pad(inter // 32, 128)
    df = compare.compare_rows("kimi-k3", gpus=["mi355x"])
    notes = compare_view.same_setting_notes(df)
    assert notes == [f"16xmi355x tp16 [aiter-k3-opt] and 16xmi355x tp16 are the same row twice: at TP16 each GPU holds "
                     f"{inter // 16} of an expert's intermediate, which sglang pads to 256 with and without "
                     "SGLANG_AITER_K3_OPT=1, so the setting changes nothing there"]
    out = " ".join(compare_view.format_table(df).split())
    r = subprocess.run([sys.executable, "-m", "k3lab", "compare", "--gpu", "mi355x"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and notes[0] in " ".join(r.stdout.split())
    assert notes[0] in out


def test_a_concurrency_admission_caps_under_a_latency_target_is_marked():
    """Q2 (b) on compare: at TPOT <= 50 ms the 8xB300 row's setting with prefix caching admits fewer requests
    than the target allows, so it is priced with the radix cache off (marked § beside its fits-with setting, a
    footnote says both); a row whose pools cap it with no setting to admit more (plain 8xMI355X, --all) keeps ‡."""
    cfg = load_model("kimi-k3")
    plan = memory.plan(cfg, "b300", 8, 8, context_tokens=cfg.max_position_embeddings)
    r = subprocess.run([sys.executable, "-m", "k3lab", "compare", "--gpu", "b300", "--gpu", "mi355x", "--max-tpot",
                        "50", "--all"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0
    row = next(x for x in r.stdout.splitlines() if x.startswith("8xb300 tp8 "))
    # the row shows the setting it is priced with, the answer line's (newcomer 10: the fits-with column named the
    # prefix-cache setting while the answer above priced the radix-off one)
    assert "--disable-radix-cache --max-running-requests " in row and "§" in row and "‡" not in row
    text = " ".join(x.strip() for x in r.stdout.splitlines())
    assert ("§ 8xb300 tp8: no prefix caching with --disable-radix-cache --max-running-requests" in text and
            f"with prefix caching, {plan.best_option.flags} admits c{plan.best_option.max_running_requests} " in text)
    plain = next(x for x in r.stdout.splitlines() if x.startswith("8xmi355x tp8 ") and "[" not in x)
    assert "‡" in plain
    assert ("‡ at c: every request the pools admit (with the row's fits-with setting, or its § one), below your "
            "latency target") in r.stdout


def test_attack_5_the_answer_line_names_the_setting_a_row_is_priced_with():
    """Attack 5 (C2): a row whose fits-with is sglang's defaults but which is priced past its prefix cache (§) lost
    its setting on the answer line; and (M8) --tok-s prices are said as the user's, not the model's."""
    from k3lab import compare_view

    a = {"kind": "override", "tier": "override", "date": "", "layout": "8xmi355x tp8 [aiter-k3-opt]",
         "fits_with": "defaults", "priced_with": "--disable-radix-cache --max-running-requests 342", "priced_by": "model",
         "usd_per_million_tokens": 2.0, "usd_per_million_tokens_low": 1.5, "usd_per_million_tokens_high": 2.5,
         "usd_per_hour": 24.0, "model_in_domain": True}
    line = compare_view.answer_line(a, 1_048_576)
    assert "(with --disable-radix-cache --max-running-requests 342: no prefix caching" in line
    u = {"first": "8xmi355x tp8 [aiter-k3-opt]", "second": "8xb300 tp8", "first_usd_per_gpu_hour": 3.0,
         "second_usd_per_gpu_hour": 5.5, "price_ratio": 0.545,
         "breakeven": {"ratio": 1.0, "low": None, "high": None, "priced_by": "your --tok-s"}}
    said = compare_view.sensitivity(u)
    assert "the model" not in said and "the tok/s it is priced at overrate the MI355X" in said
    assert said.endswith("your --tok-s carry no band: the answer holds as far as they do.")


def test_a_row_that_holds_with_a_setting_says_so_in_its_reason():
    """Newcomer 26: `compare --gpu b300 --all` at 8,192 / 1,024 printed 'no 1,048,576-token request fits: the KV pool
    holds 990,592 tokens' as the reason of the 8xb300 row whose 'fits with' column names --mamba-full-memory-ratio
    0.795. The reason says the defaults do not hold it and the setting does."""
    from k3lab import memory, specs

    cfg = specs.load_model("kimi-k3")
    p = memory.plan(cfg, "b300", 8, 8, 0.9, "bf16", context_tokens=1_048_576)
    assert p.verdict == "fits only with a setting" and not p.fits
    df = compare.compare_rows(cfg, gpus=["b300"], input_len=8192, output_len=1024).set_index("layout")
    assert df.loc["8xb300 tp8", "reason"] == (
        f"at sglang's defaults no 1,048,576-token request fits (the KV pool holds {p.max_kv_tokens:,} tokens); the "
        "setting under 'fits with' holds it")
