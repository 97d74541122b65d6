"""k3lab.prices: prices by tier and kind, like-with-like checks, overrides, power.

Expected values come from data/prices.yaml read directly as YAML here (a second, plain
reading of the file, not the loader under test) and from arithmetic written out inline."""

import copy
import math

import pytest

from k3lab import data
from k3lab import prices as P
from k3lab import throughput as t


@pytest.fixture(scope="module")
def raw():
    return data.read_yaml(data.data_dir() / "prices.yaml")


def _ends(v):
    """(low, high) of a YAML price: a figure, or a [low, high] range."""
    return (v[0], v[1]) if isinstance(v, list) else (v, v)


def _independent(raw, gpu, kinds):
    """Independent prices of ``kinds`` for ``gpu`` that are not placeholders, straight from the YAML,
    as (low, high)."""
    tiers = raw["tiers"]
    return [_ends(p["usd_per_gpu_hour"]) for p in raw["prices"]
            if p["gpu"] == gpu and tiers[p["tier"]]["independent"] and tiers[p["tier"]]["kind"] in kinds
            and p["quality"] != "placeholder"]


def test_every_price_has_a_tier_kind_and_dated_source(raw):
    df = P.prices()
    assert len(df) == len(raw["prices"])
    assert (df["source_date"].str.len() >= 4).all()
    assert set(df["kind"]) <= {"article", "on_demand", "reserved", "market", "cost_model"}
    assert P.tiers() == list(raw["tiers"])
    assert P.price("mi355x", "article") == 2.50 and P.price("b300", "inferencex_neocloud") == 2.81
    with pytest.raises(ValueError, match="has no price for GPU 'mi355x'"):
        P.price("mi355x", "rental_index")
    with pytest.raises(ValueError, match="unknown price tier 'spot'"):
        P.price("mi355x", "spot")


def test_overrides_appear_as_their_own_tier():
    df = P.prices({"mi355x": 2.0, "b300": 5})
    over = df[df["tier"] == "override"]
    assert list(over["gpu"]) == ["b300", "mi355x"] and list(over["usd_per_gpu_hour"]) == [5.0, 2.0]
    assert set(over["kind"]) == {"override"} and not over["independent"].any()
    assert list(df["tier"])[-2:] == ["override", "override"]  # after every data tier
    # the data tiers are untouched
    assert P.price("mi355x", "article") == 2.50
    by = P.perf_per_dollar_by_tier({"mi355x": 2.0})
    row = by[(by["tier"] == "override") & (by["gpu"] == "mi355x")].iloc[0]
    assert row["tok_s_per_dollar_hour"] == pytest.approx(952 / (8 * 2.0))


@pytest.mark.parametrize("over, match", [
    ({"a100": 2.0}, "price override for unknown GPU 'a100'"),
    ({"mi355x": 0}, r"usd_per_gpu_hour\[mi355x\] must be 0.01 to 1,000 \$/GPU-hour"),
    ({"mi355x": -1.0}, "must be 0.01 to 1,000"),
    ({"mi355x": 1e-320}, r"must be 0.01 to 1,000 \$/GPU-hour .*got 1e-320"),   # a price of nothing
    ({"mi355x": float("nan")}, "must be a finite number"),
    ({"mi355x": "2.0"}, "must be a number"),
    ({"mi355x": 1e308}, r"0.01 to 1,000 \$/GPU-hour .*got 1e\+308"),   # the issue's $inf/M
])
def test_bad_overrides(over, match):
    with pytest.raises(ValueError, match=match):
        P.prices(over)


def test_price_check_compares_like_with_like(raw):
    pc = P.price_check().set_index("gpu")
    assert set(pc.index) == {"mi355x", "b300", "b200"}  # the article's three GPUs
    for gpu, row in pc.iterrows():
        other = _independent(raw, gpu, ("on_demand", "reserved", "market"))
        assert (row["other_min"], row["other_max"], row["n_prices"]) == (min(lo for lo, _ in other),
                                                                          max(hi for _, hi in other), len(other))
        assert row["within_range"] == (min(lo for lo, _ in other) <= row["article_usd_per_gpu_hour"]
                                       <= max(hi for _, hi in other))
    # MI355X: the on-demand / reserved / market figures are 2.95 (TensorWave quote) and 8.60 (OCI):
    # the article's 2.50 is below them. The InferenceX cost-model tiers (1.48-2.10) and the article's
    # own Vultr "rate check" (2.59) never enter.
    assert (pc.loc["mi355x", "other_min"], pc.loc["mi355x", "other_max"]) == (2.95, 8.60)
    assert not pc.loc["mi355x", "within_range"]
    assert pc.loc["b300", "within_range"]  # 6.00 lies in [5.00 (Ornn), 15.00 (OCI)]
    # B300: Hyperstack 7.40, OCI 15.00, DigitalOcean 12-month 7.94, Ornn 5.00 — four rental prices,
    # the count T5 and the decision box give; no committed-term discount widens the range
    assert (pc.loc["b300", "n_prices"], pc.loc["b300", "other_min"]) == (4, 5.00)
    assert not pc.loc["b200", "within_range"] and pc.loc["b200", "other_min"] == 4.50  # 4.25 below Ornn's 4.50


def test_one_rule_says_which_prices_meet_a_rental_rate(raw):
    """Issue 36: a price meets a rental rate by what it is (its quality), never by what tier it sits in:
    a placeholder is never evidence, a cost model is no rental price, the article's own are what is checked."""
    for q in ("provider_list", "committed_term", "market_index", "second_hand_quote"):
        assert P.is_rental_evidence(q) and not P.is_rental_evidence(q, independent=False)
    for q in ("cost_model", "placeholder", "article", "override"):
        assert not P.is_rental_evidence(q)
    df = P.prices()
    # the InferenceX B300 rows carry their own code comment 'temporary - using 1.2x B200 pricing'
    ix_b300 = df[(df["source"] == "inferencex_2026_04") & (df["gpu"] == "b300")]
    assert len(ix_b300) == 3 and set(ix_b300["quality"]) == {"placeholder"} and not ix_b300["rental"].any()
    for tier in ix_b300["tier"]:
        b200 = next(p["usd_per_gpu_hour"] for p in raw["prices"] if p["tier"] == tier and p["gpu"] == "b200")
        assert P.price("b300", tier) == pytest.approx(1.2 * b200, abs=0.005)
    # every rental row, and only those, is what T5 / T18 count
    yaml_rental = [(p["tier"], p["gpu"]) for p in raw["prices"] if raw["tiers"][p["tier"]]["independent"]
                   and p["quality"] in ("provider_list", "committed_term", "market_index", "second_hand_quote")]
    assert sorted(zip(df[df["rental"]]["tier"], df[df["rental"]]["gpu"])) == sorted(yaml_rental)
    mi = P.rental_prices("mi355x")
    assert list(mi["usd_per_gpu_hour"]) == [2.95, 8.60] and mi.iloc[0]["quality"] == "second_hand_quote"


def test_a_quality_must_fit_its_tier_kind(raw):
    doc = copy.deepcopy(raw)
    i = next(i for i, p in enumerate(doc["prices"]) if p["tier"] == "hyperscaler_on_demand")
    doc["prices"][i]["quality"] = "market_index"
    with pytest.raises(data.DataError, match=rf"prices\.{i}\.quality: 'market_index' in a on_demand tier"):
        data.validate("prices", doc)
    doc["prices"][i]["quality"] = "placeholder"          # a placeholder may sit in any independent tier
    data.validate("prices", doc)
    art = next(i for i, p in enumerate(doc["prices"]) if p["tier"] == "article")
    doc["prices"][art]["quality"] = "placeholder"        # never in the article's
    with pytest.raises(data.DataError, match=rf"prices\.{art}\.quality"):
        data.validate("prices", doc)


def test_price_pairs_pair_one_source_where_one_exists_and_label_the_rest():
    """MI355X / B300: OCI lists both on one day (paired); no market source prices both, so the
    TensorWave quote meets the Ornn index as a labelled cross-source pair; no reserved MI355X price,
    no pair; the cost models' B300 is a placeholder, no pair."""
    pairs = P.price_pairs("mi355x", "b300")
    assert [(p["kind"], p["paired"], p["a_tier"], p["b_tier"]) for p in pairs] == [
        ("on_demand", True, "hyperscaler_on_demand", "hyperscaler_on_demand"),
        ("market", False, "quoted_rates", "rental_index")]
    assert pairs[0]["ratio"] == pytest.approx(8.60 / 15.00) and not pairs[0]["is_range"]
    assert pairs[0]["ratio_low"] == pairs[0]["ratio_high"] == pairs[0]["ratio"]
    # issue 36, audit 2: Ornn gives the B300 as a range, 5.00-7.25: the pair is a range of ratios, never
    # the quote against the index's low end alone
    m = pairs[1]
    assert m["is_range"] and (m["b_low"], m["b_high"]) == (5.00, 7.25) and m["a_low"] == m["a_high"] == 2.95
    assert (m["ratio_low"], m["ratio_high"]) == (pytest.approx(2.95 / 7.25), pytest.approx(2.95 / 5.00))
    assert m["ratio"] == pytest.approx(2.95 / ((5.00 + 7.25) / 2))       # the range's middle, for one-figure tables
    assert "one source" in pairs[0]["label"] and "cross-source" in m["label"] and "$5.00-$7.25" in m["label"]
    # the neocloud B300 list price (7.40) is not paired with the OCI MI355X: a pair of one source exists
    assert all(p["b_usd"] != 7.40 for p in pairs)
    # your own prices come first
    mine = P.price_pairs("mi355x", "b300", {"mi355x": 3.0, "b300": 6.0})
    assert mine[0]["kind"] == "override" and mine[0]["ratio"] == pytest.approx(0.5) and mine[1:] == pairs


def test_a_range_is_kept_as_a_range(raw):
    """A source that gives only a range has both ends in every view: the rental range a rate is placed
    in, the price_range, the one-figure middle, and a range's low end never above its high end."""
    ornn = next(p for p in raw["prices"] if p["tier"] == "rental_index" and p["gpu"] == "b300")
    assert ornn["usd_per_gpu_hour"] == [5.00, 7.25]
    assert P.price_range("b300", "rental_index") == (5.00, 7.25) and P.price("b300", "rental_index") == 6.125
    assert P.price_range("b200", "rental_index") == (4.50, 4.50)
    row = P.prices().query("tier == 'rental_index' and gpu == 'b300'").iloc[0]
    assert (row["usd_low"], row["usd_high"], row["is_range"]) == (5.00, 7.25, True)
    doc = copy.deepcopy(raw)
    i = raw["prices"].index(ornn)
    doc["prices"][i]["usd_per_gpu_hour"] = [7.25, 5.00]
    with pytest.raises(data.DataError, match=rf"prices\.{i}.*low < high"):
        data.validate("prices", doc)
    art = next(i for i, p in enumerate(raw["prices"]) if p["tier"] == "article")
    doc = copy.deepcopy(raw)
    doc["prices"][art]["usd_per_gpu_hour"] = [2.0, 3.0]
    with pytest.raises(data.DataError, match=rf"prices\.{art}\.usd_per_gpu_hour: the article's prices are single"):
        data.validate("prices", doc)


def test_committed_discounts_pair_a_provider_with_itself():
    d = P.committed_discounts().set_index(["gpu", "provider"])["discount"]
    assert d[("b200", "Hyperstack")] == pytest.approx(1 - 5.10 / 6.00)
    assert d[("mi300x", "DigitalOcean")] == pytest.approx(1 - 1.91 / 2.59)
    assert ("b300", "DigitalOcean") not in d.index      # DigitalOcean lists no on-demand B300


def test_price_ratio_by_tier(raw):
    r = P.price_ratio_by_tier().set_index("tier")["ratio"]
    assert r["article"] == pytest.approx(6.00 / 2.50)
    assert r["inferencex_hyperscaler"] == pytest.approx(2.34 / 1.48)
    both = {p["tier"] for p in raw["prices"] if p["gpu"] == "b300"} & \
        {p["tier"] for p in raw["prices"] if p["gpu"] == "mi355x"}
    assert set(r.index) == both


def test_perf_per_dollar_by_tier_uses_only_the_article_throughputs():
    df = P.perf_per_dollar_by_tier()
    row = df[(df["tier"] == "inferencex_hyperscaler") & (df["gpu"] == "b300")].iloc[0]
    assert row["tok_s_per_dollar_hour"] == pytest.approx(1568 / (8 * 2.34))
    assert row["usd_per_million_tokens"] == pytest.approx(2.34 * 1e6 / (196 * 3600))
    assert set(df["config"]) == {"8×MI355X TP8", "8×B300 TP8+DCP8", "16×B200 TP16"}


# --------------------------------------------------------------------------- power


def test_electricity_by_hand():
    # 1400 W × PUE 1.3 = 1.82 kW → at 0.10 $/kWh: 0.182 $/GPU-h
    assert P.electricity_usd_per_gpu_hour(1400, 1.3, 0.10) == pytest.approx(0.182)
    assert P.electricity_usd_per_gpu_hour(1400, 1.3, 0.0) == 0.0
    for args, match in (((1400, 0.9, 0.1), "pue must be >= 1"), ((1400, 1.3, -0.1), "usd_per_kwh must be >= 0"),
                        ((0, 1.3, 0.1), "board_power_w"), ((1400, float("nan"), 0.1), "pue")):
        with pytest.raises(ValueError, match=match):
            P.electricity_usd_per_gpu_hour(*args)


def test_breakeven_by_hand():
    a = {"tok_s": 952, "num_gpus": 8, "usd_per_gpu_hour": 2.5, "board_power_w": 1400}
    b = {"tok_s": 1568, "num_gpus": 8, "usd_per_gpu_hour": 6.0, "board_power_w": 1400}
    # equal power e $/GPU-h on both: 952 (6 + e) = 1568 (2.5 + e) → e = 1792 / 616 $/GPU-h
    e = 1792 / 616
    k = P.breakeven_usd_per_kwh(a, b, pue=1.3)
    assert k == pytest.approx(e / (1.4 * 1.3))
    # at that price the two perf/$ are equal
    pa = t.tok_s_per_dollar_hour(952, 8, 2.5 + P.electricity_usd_per_gpu_hour(1400, 1.3, k))
    pb = t.tok_s_per_dollar_hour(1568, 8, 6.0 + P.electricity_usd_per_gpu_hour(1400, 1.3, k))
    assert pa == pytest.approx(pb)
    # a lead that power can only widen never crosses
    assert P.breakeven_usd_per_kwh(dict(a, board_power_w=700), dict(b, tok_s=900), 1.3) is None
    # equal throughput per GPU and equal power: the price gap never closes
    assert P.breakeven_usd_per_kwh(a, dict(a, usd_per_gpu_hour=3.0), 1.3) is None
    with pytest.raises(ValueError, match="a.num_gpus"):
        P.breakeven_usd_per_kwh(dict(a, num_gpus=0), b, 1.3)


def test_breakeven_rejects_a_pue_below_one():
    # PUE = facility power / IT power >= 1, as electricity_usd_per_gpu_hour enforces
    a = {"tok_s": 952, "num_gpus": 8, "usd_per_gpu_hour": 2.5, "board_power_w": 1400}
    b = {"tok_s": 1568, "num_gpus": 8, "usd_per_gpu_hour": 6.0, "board_power_w": 1100}
    with pytest.raises(ValueError, match="pue"):
        P.breakeven_usd_per_kwh(a, b, pue=0.5)


def test_power_breakevens_table_uses_hardware_power():
    df = P.power_breakevens()
    # article tier, PUE 1.3: MI355X 1400 W, B300 1100 W (data/hardware.yaml board power);
    # per GPU 119 and 196 tok/s: 119 (6 + 1.1 u) = 196 (2.5 + 1.4 u) → u = (714 − 490) / (274.4 − 130.9) $/kWh
    art = df[(df["tier"] == "article") & (df["pue"] == 1.3)].iloc[0]
    u_kw = (119 * 6 - 196 * 2.5) / (196 * 1.4 - 119 * 1.1)  # $/kWh of board energy
    assert art["breakeven_usd_per_kwh"] == pytest.approx(u_kw / 1.3)
    assert art["lead_at_zero_power"] == pytest.approx(47.6 / (1568 / 48) - 1)
    # InferenceX hyperscaler: 952/(8×1.48) = 80.4 < 1568/(8×2.34) = 83.8: B300 already leads
    hyp = df[df["tier"] == "inferencex_hyperscaler"].iloc[0]
    assert hyp["lead_at_zero_power"] == pytest.approx((952 / 11.84) / (1568 / 18.72) - 1)
    assert math.isnan(hyp["breakeven_usd_per_kwh"])
    assert set(df["pue"]) == {1.1, 1.3, 1.5}  # the electricity sweep of data/prices.yaml
    with pytest.raises(ValueError, match="unknown config 'nope'"):
        P.power_breakevens("nope")


def test_perf_per_dollar_with_power():
    got = P.perf_per_dollar_with_power("mi355x_tp8", 2.5, 1.3, [0.0, 0.1])
    assert got[0] == pytest.approx(47.6)
    assert got[1] == pytest.approx(952 / (8 * (2.5 + 1.4 * 1.3 * 0.1)))


def test_joules_per_token():
    assert P.joules_per_token(952, 8, 1400) == pytest.approx(8 * 1400 / 952)
    with pytest.raises(ValueError, match="tok_s"):
        P.joules_per_token(0, 8, 1400)


# --------------------------------------------------------------------------- the prices file, validated


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.update(unit="USD/node-hour"), r"^data/prices\.yaml: unit: "),
    (lambda d: d["prices"][0].update(usd_per_gpu_hour=0), r"^data/prices\.yaml: prices\.0\.usd_per_gpu_hour"),
    (lambda d: d["prices"][0].update(tier="spot"), r"prices\.0\.tier: unknown tier 'spot'"),
    (lambda d: d["prices"].append(dict(d["prices"][0])), "a second price for mi355x in tier article"),
    (lambda d: d["prices"][0].update(unit="EUR"), r"prices\.0\.unit: Extra inputs are not permitted"),
    (lambda d: d["tiers"]["article"].update(kind="list"), r"tiers\.article\.kind"),
    (lambda d: d["tiers"]["article"].update(source="nowhere"), "cites unknown source 'nowhere'"),
    (lambda d: d["sources"]["article"].update(date="Nov 2026"), r"sources\.article\.date"),
])
def test_prices_file_errors_name_file_and_field(raw, edit, match):
    doc = copy.deepcopy(raw)
    edit(doc)
    with pytest.raises(data.DataError, match=match):
        data.validate("prices", doc)


def test_prices_file_gpu_must_exist_in_hardware(raw):
    doc = copy.deepcopy(raw)
    doc["prices"].append({"tier": "rental_index", "gpu": "tpu", "usd_per_gpu_hour": 1.0, "quality": "market_index",
                          "evidence": "a test"})
    with pytest.raises(data.DataError, match=r"data/prices\.yaml: prices\.\d+\.gpu: unknown GPU 'tpu'"):
        data.cross_checks(prices=data.validate("prices", doc))
