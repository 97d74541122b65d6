"""k3lab.throughput: perf/$ and $/M-token formulas, the article's table, its ratios.

Expected values are worked out by hand from the article's numbers (shown inline: its table
gives 952 / 1,568 / 498 tok/s and 2.50 / 6.00 / 4.25 $/GPU-hour, tok/s/$ 48 / 33 / 7)."""

import copy

import pytest

from k3lab import claims, data, specs
from k3lab import throughput as t


def test_tok_s_per_dollar_hour_by_hand():
    # 952 tok/s / (8 GPUs × 2.50 $/GPU-h = 20 $/h) = 47.6
    assert t.tok_s_per_dollar_hour(952, 8, 2.50) == pytest.approx(47.6)
    # B300: 1568 / (8 × 6.00 = 48) = 32.67
    assert t.tok_s_per_dollar_hour(1568, 8, 6.00) == pytest.approx(1568 / 48)
    # B200: 498 tok/s across 16 GPUs at 4.25 → 498 / 68 = 7.32
    assert t.tok_s_per_dollar_hour(498, 16, 4.25) == pytest.approx(498 / 68)
    assert t.deployment_usd_per_hour(16, 4.25) == 68.0
    assert t.tok_s_per_gpu(952, 8) == 119.0


def test_usd_per_million_tokens_matches_inferencex_definition():
    # $/M = $/GPU-h × 1e6 / (tok/s/GPU × 3600); 952/8 = 119 tok/s/GPU
    assert t.usd_per_million_tokens(952, 8, 2.50) == pytest.approx(2.50 * 1e6 / (119 * 3600))
    # and it is the inverse of tokens per dollar, scaled to a million
    assert t.usd_per_million_tokens(1568, 8, 6.0) == pytest.approx(1e6 / t.tokens_per_dollar(1568, 8, 6.0))


def test_tokens_per_dollar():
    # 1568 tok/s for 48 $/h → 1568 × 3600 / 48 tokens per dollar
    assert t.tokens_per_dollar(1568, 8, 6.0) == pytest.approx(1568 * 3600 / 48)


@pytest.mark.parametrize("args, word", [
    ((0, 8, 2.5), "tok_s"), ((-1, 8, 2.5), "tok_s"), ((952, 0, 2.5), "num_gpus"),
    ((952, -8, 2.5), "num_gpus"), ((952, 8.0, 2.5), "num_gpus"), ((952, 8, 0), "usd_per_gpu_hour"),
    ((952, 8, -2.5), "usd_per_gpu_hour"), ((float("nan"), 8, 2.5), "tok_s"), ((952, True, 2.5), "num_gpus"),
    ((float("inf"), 8, 2.5), "tok_s"), ((952, 8, "2.5"), "usd_per_gpu_hour"),
])
def test_bad_inputs_raise_naming_the_problem(args, word):
    with pytest.raises(ValueError, match=word):
        t.tok_s_per_dollar_hour(*args)
    with pytest.raises(ValueError, match=word):
        t.usd_per_million_tokens(*args)


def test_unit_conversion_and_unknown_unit():
    assert t.to_deployment_tok_s(249, "tok/s per node", 16, 8) == 498
    assert t.to_deployment_tok_s(31.125, "tok/s per GPU", 16, 8) == pytest.approx(498)
    assert t.to_deployment_tok_s(498, "tok/s per deployment", 16, 8) == 498
    with pytest.raises(ValueError, match="unknown throughput unit"):
        t.to_deployment_tok_s(498, "tok/ms per node", 16, 8)
    with pytest.raises(ValueError, match="whole number"):
        t.to_deployment_tok_s(498, "tok/s per node", 12, 8)


# --------------------------------------------------------------------------- the article's table


def test_article_table_rows_hold_deployments():
    tab = t.article_table()
    assert list(tab) == ["mi355x_tp8", "b300_tp8_dcp", "b200_tp16"]
    m, b3, b2 = tab["mi355x_tp8"], tab["b300_tp8_dcp"], tab["b200_tp16"]
    assert isinstance(m.deployment, specs.Deployment)
    assert (m.deployment.gpu, m.deployment.num_gpus, m.deployment.tp) == ("mi355x", 8, 8)
    assert (b3.deployment.tp, b3.deployment.dcp) == (8, 8)       # "TP8+DCP" (size assumed 8)
    assert (b2.deployment.num_gpus, b2.deployment.tp, b2.deployment.num_nodes) == (16, 16, 2)
    assert (m.label, b3.label, b2.label) == ("8×MI355X TP8", "8×B300 TP8+DCP8", "16×B200 TP16")
    from k3lab.specs import parse_layout  # one notation: the article's rows' labels parse back to them
    assert all(parse_layout(r.label) == r.deployment.__class__(**{**r.deployment.__dict__, "id": parse_layout(r.label).id})
               for r in (m, b3, b2))
    # prices come from data/prices.yaml's article tier: 2.50 / 6.00 / 4.25
    assert (m.usd_per_gpu_hour, b3.usd_per_gpu_hour, b2.usd_per_gpu_hour) == (2.50, 6.00, 4.25)
    assert (m.tok_s_per_dollar_hour_claimed, b3.tok_s_per_dollar_hour_claimed, b2.tok_s_per_dollar_hour_claimed) == \
        (48, 33, 7)
    assert m.concurrency == 64 and b3.concurrency is None


def test_article_table_recomputed():
    df = t.recompute_table().set_index("gpu")
    # the B200 row's 498 is for all 16 GPUs (the article's 7 tok/s/$ only follows then)
    assert df.loc["b200", "tok_s_deployment"] == 498 and df.loc["b200", "tok_s_per_node"] == 249
    assert df.loc["b200", "tok_s_per_gpu"] == pytest.approx(498 / 16)
    assert df.loc["mi355x", "tok_s_per_dollar_hour"] == pytest.approx(47.6)
    assert df.loc["b300", "tok_s_per_dollar_hour"] == pytest.approx(1568 / 48)
    assert df.loc["b200", "usd_per_hour_deployment"] == 68
    assert df.loc["mi355x", "usd_per_million_tokens"] == pytest.approx(2.5 * 1e6 / (119 * 3600))
    # the article's rounded column is within half a unit of the exact value
    assert ((df["tok_s_per_dollar_hour"] - df["tok_s_per_dollar_hour_article"]).abs() <= 0.5).all()


def test_article_ratios_by_hand():
    r = t.article_ratios()
    assert r["b300_over_mi355x"] == pytest.approx(1568 / 952)  # 1.647 → the article's "1.65x"
    assert r["perf_per_dollar"] == pytest.approx([47.6, 1568 / 48, 498 / 68])
    assert r["perf_per_dollar_rounded"] == [48, 33, 7]
    # 47.6 / 32.667 − 1 = 45.7 % (rounds to 46); from the rounded column 48/33 − 1 = 45.45 % ("45%")
    assert r["lead_vs_b300_pct"] == pytest.approx((47.6 / (1568 / 48) - 1) * 100)
    assert r["lead_vs_b300_pct_rounded"] == pytest.approx((48 / 33 - 1) * 100)
    # 47.6 / 7.3235 = 6.4996; 48 / 7 = 6.86 ("about 7x")
    assert r["vs_b200_x"] == pytest.approx(47.6 / (498 / 68))
    assert r["vs_b200_x_rounded"] == pytest.approx(48 / 7)
    assert r["b300_price_over_mi355x"] == pytest.approx(6 / 2.5)        # "about 2.4x cheaper"
    assert r["mi355x_price_fraction_of_b300"] == pytest.approx(2.5 / 6)  # 0.417, not "a third"
    assert r["throughput_given_up_pct"] == pytest.approx((1 - 952 / 1568) * 100)
    assert r["money_saved_pct"] == pytest.approx((1 - 2.5 / 6) * 100)


def test_measured_points_derive_the_pre_fix_peak():
    df = t.measured_points().set_index("point")
    assert df.loc["mi355x_tp8_before_fix", "tok_s"] == pytest.approx(952 / 1.18)
    assert df.loc["mi355x_tp8_before_fix", "concurrency"] == 24
    assert df.loc["b200_tp16", "tok_s_per_gpu"] == pytest.approx(498 / 16)
    assert len(df) == 4


def test_article_workload():
    assert t.article_workload() == {"input_len_tokens": 1024, "output_len_tokens": 400}


def test_claimed_values_agree_with_the_table_file():
    # the table file and the claims registry must not drift apart
    tab = t.article_table()
    assert tab["mi355x_tp8"].tok_s == claims.get("T1").claimed
    assert tab["b300_tp8_dcp"].tok_s == claims.get("T2").claimed
    assert tab["b200_tp16"].tok_s == claims.get("T3").claimed


# --------------------------------------------------------------------------- the table file, validated


def _table_doc():
    return data.read_yaml(data.data_dir() / "article_table.yaml")


@pytest.mark.parametrize("path, value, match", [
    (("configs", 0, "tok_s_unit"), "tok/s/node", r"configs\.0\.tok_s_unit"),
    (("configs", 0, "tok_s"), 0, r"configs\.0\.tok_s: .*greater than 0"),
    (("configs", 0, "num_gpus"), 0, r"configs\.0\.num_gpus"),
    (("configs", 0, "tp"), 4, r"tp x pp = 4 != num_gpus 8"),
    (("configs", 0, "gpus_per_node"), 3, "not whole 3-GPU nodes"),
    (("configs", 1, "id"), "mi355x_tp8", r"duplicate id\(s\) \['mi355x_tp8'\]"),
    (("configs", 0, "usd_per_gpu_hour"), 2.5, r"configs\.0\.usd_per_gpu_hour: Extra inputs are not permitted"),
    (("derived_points", 0, "base"), "nope", r"derived_points\.0\.base: unknown config 'nope'"),
])
def test_table_file_errors_name_file_and_field(path, value, match):
    doc = copy.deepcopy(_table_doc())
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(data.DataError, match=r"^data/article_table\.yaml: .*" + match):
        data.validate("article_table", doc)


def test_table_gpu_must_exist_in_hardware():
    doc = data.validate("article_table", {**_table_doc(), "configs": [
        {**_table_doc()["configs"][0], "gpu": "a100"}]})
    with pytest.raises(data.DataError, match=r"data/article_table\.yaml: configs\.0\.gpu: unknown GPU 'a100'"):
        data.cross_checks(article_table=doc)
