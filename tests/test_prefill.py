"""k3lab.prefill: the TTFT model. Expected values are worked out by hand from the K3 config
(24 MLA layers, 69 KDA layers, 96 heads, q/k 192, v 128) and the article's figures."""

import pytest

from k3lab import prefill as P
from k3lab import data, specs

CFG = specs.load_model("kimi-k3")
S = 172_000


def test_article_inputs():
    a = P.load_article()
    assert (a.context_tokens, a.ttft_before_s, a.ttft_b300_s) == (172000, 51, 23)
    assert (a.tok_s_before_low, a.tok_s_before_high, a.tok_s_after) == (4000, 7000, 13000)
    assert (a.speedup_low, a.speedup_high, a.tp) == (2, 3, 8)


def test_attention_flops_per_rank_by_hand():
    # 24 layers x 2 FLOPs x 12 heads x (192 + 128) x S(S+1)/2 causal pairs
    by_hand = 24 * 2 * 12 * 320 * (S * (S + 1) // 2)
    assert P.attention_flops_per_rank(S, CFG, tp=8) == by_hand
    assert P.attention_flops_per_rank(S, CFG, tp=8, heads=16) * 12 == by_hand * 16
    assert P.heads_per_rank(CFG, 8) == 12
    with pytest.raises(ValueError, match="does not divide"):
        P.heads_per_rank(CFG, 5)


def test_rest_flops_with_explicit_active_count():
    kda = 4 * 96 * 128 * 128 * 69
    assert P.kda_flops_per_token(CFG) == kda
    assert P.rest_flops_per_token_per_rank(CFG, 8, active=100_000_000_000) == pytest.approx((2e11 + kda) / 8)
    with pytest.raises(ValueError):
        P.rest_flops_per_token_per_rank(CFG, 8, active=0)


def test_flop_share_by_hand():
    fa = 24 * 2 * 12 * 320 * (S * (S + 1) / 2)
    fr = (2 * 1e11 + 4 * 96 * 128 * 128 * 69) / 8 * S
    assert P.flop_share(S, CFG, 8, active=100_000_000_000) == pytest.approx(fa / (fa + fr))


def test_fit_before_reproduces_51_s_and_rate():
    b = P.fit_before(CFG)
    assert b.t_rest_s == pytest.approx(1 / 13000)
    assert b.ttft_s(S) == pytest.approx(51.0)
    fa = 24 * 2 * 12 * 320 * (S * (S + 1) / 2)
    assert b.attn_flop_s == pytest.approx(fa / (51 - S / 13000))
    assert b.kernel_heads == 12
    with pytest.raises(ValueError, match="no time for attention"):
        P.fit_before(CFG, t_rest_s=51 / S * 1.01)


@pytest.mark.parametrize("speedup", [2.0, 3.0])
def test_fit_after_gives_the_speedup_on_16_heads(speedup):
    b = P.fit_before(CFG)
    a = P.fit_after(b, speedup)
    assert a.kernel_heads == 16 and a.t_rest_s == b.t_rest_s
    assert a.ttft_s(S) == pytest.approx(51.0 / speedup)
    fa16 = 24 * 2 * 16 * 320 * (S * (S + 1) / 2)
    assert a.attn_flop_s == pytest.approx(fa16 / (51.0 / speedup - S / 13000))


def test_unreachable_speedup_raises():
    b = P.fit_before(CFG)
    # attention-free bound: 51 / (172000 / 13000) = 3.85x
    assert P.max_speedup(b, S) == pytest.approx(51 / (S / 13000))
    with pytest.raises(ValueError, match="out of reach"):
        P.fit_after(b, 4.0)


def test_context_at_tok_s_round_trip():
    b = P.fit_before(CFG)
    for r in (4000.0, 7000.0):
        s = b.context_at_tok_s(r)
        assert b.tok_s(s) == pytest.approx(r, rel=1e-9)
    assert b.context_at_tok_s(20000.0) is None   # faster than the rest of the model allows


def test_required_attention_share():
    assert P.required_attention_share(2) == pytest.approx(0.5)
    assert P.required_attention_share(3) == pytest.approx(2 / 3)
    assert P.required_attention_share(2, kernel_speedup=4) == pytest.approx(0.5 / 0.75)
    with pytest.raises(ValueError):
        P.required_attention_share(2, kernel_speedup=1)


def test_decode_intensity_by_hand():
    # per cached token: 576 bf16 elements read (1152 B); each head 2 x (576 + 512) FLOPs
    assert P.decode_attention_intensity(CFG, 12) == pytest.approx(12 * 2 * 1088 / 1152)
    assert P.decode_attention_intensity(CFG, 16) == pytest.approx(16 * 2 * 1088 / 1152)


def test_curves_frame():
    b = P.fit_before(CFG)
    df = P.curves([b], [1000, S])
    assert list(df.context_tokens) == [1000, S]
    assert df.ttft_s.iloc[1] == pytest.approx(51.0)


@pytest.mark.parametrize("text, match", [
    ("context_tokens: {value: 1}\n", r"^data/article_prefill\.yaml: source: Field required"),
    (": : :\n", r"^data/article_prefill\.yaml: not valid YAML"),
    ("- 1\n- 2\n", r"^data/article_prefill\.yaml: expected a mapping"),
])
def test_malformed_article_file(tmp_path, monkeypatch, text, match):
    (tmp_path / "article_prefill.yaml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("K3LAB_DATA", str(tmp_path))
    data.clear_cache()
    try:
        with pytest.raises(data.DataError, match=match):
            P.load_article()
    finally:
        monkeypatch.delenv("K3LAB_DATA")
        data.clear_cache()


def test_article_file_field_errors_name_the_field():
    doc = data.read_yaml(data.data_dir() / "article_prefill.yaml")
    bad = {**doc, "ttft_s_mi355x_before": {**doc["ttft_s_mi355x_before"], "value": -51}}
    with pytest.raises(data.DataError, match=r"ttft_s_mi355x_before\.value: .*greater than 0"):
        data.validate("article_prefill", bad)
