"""k3lab.spec_decode: the chain verifier preserves the target; the chi-square test tells a
correct top-k renorm from a wrong one; the speed-up model's arithmetic by hand."""

import math

import pytest
import torch

from k3lab import sampling as S
from k3lab import spec_decode as SD
from k3lab import memory, specs

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
    # uniform routing: N (1 − (1 − k/N)^tokens); K3: N = 896, k = 16
    assert SD.expected_distinct_experts(0, 896, 16) == 0
    assert SD.expected_distinct_experts(1, 896, 16) == pytest.approx(16)
    assert SD.expected_distinct_experts(2, 896, 16) == pytest.approx(32 - 16 * 16 / 896)  # inclusion-exclusion
    assert SD.expected_distinct_experts(10_000, 896, 16) == pytest.approx(896)
    assert SD.expected_distinct_experts(8, 896, 16, "min") == 16
    with pytest.raises(ValueError, match="top_k"):
        SD.expected_distinct_experts(1, 896, 0)
    with pytest.raises(ValueError, match="tokens"):
        SD.expected_distinct_experts(-1, 896, 16)


# K3 written out: 92 MoE layers, one expert = (gate + up + down) 3 × 3584 × 3072 values in
# MXFP4 (17/32 B each); the checkpoint 1,559,965,580,416 B (router bias fp32) and the bf16 embedding 163840 × 7168
ONE_EXPERT_ALL_LAYERS = 92 * 3 * 3584 * 3072 * 17 // 32
CHECKPOINT = 1_559_965_580_416
EMBED_BYTES = 163840 * 7168 * 2


def test_step_bytes_from_the_inventory_by_hand():
    cfg = specs.load_model("kimi-k3")
    sb = SD.step_bytes(cfg)
    assert sb.expert_bytes == ONE_EXPERT_ALL_LAYERS
    # every checkpoint byte but the routed experts and the input embedding (a step reads a few rows)
    assert sb.non_expert_bytes == CHECKPOINT - 896 * ONE_EXPERT_ALL_LAYERS - EMBED_BYTES
    assert (sb.num_experts, sb.experts_per_token, sb.routing) == (896, 16, "uniform")
    # one token reads the non-expert bytes and 16 experts of every MoE layer
    assert sb.step_bytes(1) == pytest.approx(sb.non_expert_bytes + 16 * ONE_EXPERT_ALL_LAYERS)
    # many tokens read the whole model once (all experts)
    assert sb.step_bytes(10**6) == pytest.approx(CHECKPOINT - EMBED_BYTES)


def test_step_bytes_excludes_the_mtp_module():
    ds = specs.load_model("deepseek-v3")
    by = memory.checkpoint_bytes(ds, by_component=True)
    sb = SD.step_bytes(ds)
    assert sb.non_expert_bytes == sum(by.values()) - by["routed_experts"] - by["embed_tokens"] - by["mtp"]
    assert sb.expert_bytes == 58 * memory.routed_expert_bytes(ds)
