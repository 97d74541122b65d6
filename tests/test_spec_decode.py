"""k3lab.spec_decode: the chain verifier preserves the target; the chi-square test tells a
correct top-k renorm from a wrong one; the speed-up model's arithmetic by hand."""

import math

import pytest
import torch

from k3lab import sampling as S
from k3lab import spec_decode as SD
from k3lab import specs

# One context, vocab 10, with a three-way tie at the top-2 pivot (0.15): FlashInfer keeps
# 0.30 + 3 × 0.15 (4 tokens); a rank mask keeps 0.30 + one 0.15; no renorm keeps all 10.
PROBS = torch.tensor([0.30, 0.15, 0.15, 0.15, 0.09, 0.06, 0.04, 0.03, 0.02, 0.01], dtype=torch.float64)
K = 2
DRAFT = [3, 1, 0]  # the first draft is a tied token a rank mask drops
DRAWS = 20_000


def _target(renorm):
    return renorm(PROBS.unsqueeze(0), K)[0]


def _expected_flashinfer():
    # by hand: keep {0: .30, 1: .15, 2: .15, 3: .15}, divide by .75
    e = torch.zeros(10, dtype=torch.float64)
    e[:4] = torch.tensor([0.30, 0.15, 0.15, 0.15]) / 0.75
    return e


def test_point_mass_draft_accepted_when_target_agrees():
    tp = torch.zeros(1, 3, 4, dtype=torch.float64)
    tp[0, 0, 2] = tp[0, 1, 1] = 1.0
    tp[0, 2, 3] = 1.0
    acc, toks = SD.verify_chain(tp, torch.tensor([[2, 1]]))
    assert acc.tolist() == [2] and toks.tolist() == [[2, 1, 3]]


def test_rejected_draft_is_replaced_from_the_residual():
    tp = torch.zeros(1, 3, 4, dtype=torch.float64)
    tp[0, :, 0] = 1.0  # target never emits token 2
    acc, toks = SD.verify_chain(tp, torch.tensor([[2, 2]]))
    assert acc.tolist() == [0] and toks.tolist() == [[0, -1, -1]]


def test_patched_renorm_passes_chi_square():
    target = _target(S.top_k_renorm_prob)
    torch.testing.assert_close(target, _expected_flashinfer())
    counts = SD.first_token_counts(target, DRAFT, DRAWS, seed=7)
    _, df, p = SD.chi_square_gof(counts, _expected_flashinfer())
    assert df == 3 and p > 1e-3


@pytest.mark.parametrize("wrong", ["none", "rank-mask"])
def test_wrong_renorm_is_caught(wrong):
    renorm = {"none": lambda p, k: p / p.sum(dim=-1, keepdim=True), "rank-mask": S.top_k_rank_mask}[wrong]
    counts = SD.first_token_counts(_target(renorm), DRAFT, DRAWS, seed=7)
    _, _, p = SD.chi_square_gof(counts, _expected_flashinfer())
    assert p < 1e-6


def test_random_draft_distribution_still_preserves_target():
    # drafts sampled from a non-degenerate q (as speculative sampling requires)
    g = torch.Generator().manual_seed(3)
    q = torch.softmax(torch.randn(3, 10, generator=g, dtype=torch.float64), dim=-1)
    drafts = torch.stack([torch.multinomial(q[i], DRAWS, replacement=True, generator=g) for i in range(3)], 1)
    target = _target(S.top_k_renorm_prob).expand(DRAWS, 4, 10)
    _, toks = SD.verify_chain(target, drafts, q.expand(DRAWS, 3, 10), generator=g)
    _, _, p = SD.chi_square_gof(torch.bincount(toks[:, 0], minlength=10), _expected_flashinfer())
    assert p > 1e-3


def test_chi_square_by_hand():
    # observed [30, 70] vs expected [50, 50]: x = 400/50 + 400/50 = 16, df 1, p = erfc(sqrt(8))
    x, df, p = SD.chi_square_gof(torch.tensor([30, 70]), torch.tensor([0.5, 0.5]))
    assert (x, df) == (16.0, 1) and p == pytest.approx(math.erfc(math.sqrt(8)), rel=1e-9)
    assert SD.chi_square_gof(torch.tensor([1, 9]), torch.tensor([0.0, 1.0]))[2] == 0.0


def test_verify_chain_shape_errors():
    with pytest.raises(ValueError, match="draft_tokens"):
        SD.verify_chain(torch.ones(2, 3, 4) / 4, torch.zeros(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="target_probs"):
        SD.verify_chain(torch.ones(3, 4), torch.zeros(3, 2, dtype=torch.int64))


def test_expected_distinct_experts():
    assert SD.expected_distinct_experts(0) == 0
    assert SD.expected_distinct_experts(1) == pytest.approx(16)
    assert SD.expected_distinct_experts(2) == pytest.approx(32 - 16 * 16 / 896)  # inclusion-exclusion
    assert SD.expected_distinct_experts(10_000) == pytest.approx(896)
    with pytest.raises(ValueError):
        SD.expected_distinct_experts(1, 896, 0)


def test_step_bytes_routed_experts_by_hand():
    cfg = specs.load_model("kimi-k3")
    sb = SD.step_bytes_from_config(cfg, 17 / 32, 2)
    # 92 MoE layers × (gate + up + down) 3 × 3584 × 3072 params, MXFP4 = 17/32 byte
    assert sb.routed_expert_bytes_per_expert_all_layers == pytest.approx(92 * 3 * 3584 * 3072 * 17 / 32)
    # the whole model read once (every expert) lands near the published 1.56 TB checkpoint
    total = sb.non_expert_bytes + 896 * sb.routed_expert_bytes_per_expert_all_layers
    assert 1.50e12 < total < 1.62e12


def test_speedup_arithmetic():
    assert SD.single_stream_speedup(3.0, 1.0, 0.5) == pytest.approx(2.0)
    sb = SD.StepBytes(100.0, 1.0, 896, 16)
    assert SD.verify_cost_ratio(sb, 1, 8, 1.0) == 1.0
    # fixed_fraction 0: (100 + E[D(8)]) / (100 + 16)
    assert SD.verify_cost_ratio(sb, 1, 8, 0.0) == pytest.approx((100 + SD.expected_distinct_experts(8)) / 116)
    with pytest.raises(ValueError):
        SD.single_stream_speedup(0.5, 1.0, 0.1)
    with pytest.raises(ValueError):
        SD.verify_cost_ratio(sb, 1, 8, 1.5)
