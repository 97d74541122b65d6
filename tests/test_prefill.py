"""k3lab.prefill: the TTFT model. Expected values are worked out by hand from the K3 config
(24 MLA layers, 69 KDA layers, 96 heads, q/k 192, v 128) and the article's figures."""

import pytest

from k3lab import prefill as P
from k3lab import specs

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


def test_malformed_article_file(tmp_path, monkeypatch):
    (tmp_path / "prefill").mkdir()
    (tmp_path / "prefill" / "article_prefill.yaml").write_text("context_tokens: {value: 1}\n")
    monkeypatch.setattr(P, "data_path", lambda *parts: tmp_path.joinpath(*parts))
    P.load_article.cache_clear()
    try:
        with pytest.raises(ValueError, match="missing or malformed"):
            P.load_article()
    finally:
        P.load_article.cache_clear()
