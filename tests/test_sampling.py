"""k3lab.sampling: FlashInfer top-k / top-p renorm semantics, dtype policy, bad input.

Expected values come from hand-worked rows or from a naive per-row reference written
here (a Python loop with a full sort per row), never from the code under test.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from k3lab import sampling as S


def naive_top_k(probs, ks):
    """Per row: pivot = k-th largest (sorted list), keep >= pivot, divide by max(sum, 1e-8)."""
    out = []
    for row, k in zip(probs.double().tolist(), ks):
        v = len(row)
        if k == -1 or k >= v:
            keep = row
        else:
            pivot = sorted(row, reverse=True)[k - 1]
            keep = [x if x >= pivot else 0.0 for x in row]
        s = max(sum(keep), 1e-8)
        out.append([x / s for x in keep])
    return torch.tensor(out, dtype=torch.float64)


def naive_top_p(probs, ps):
    out = []
    for row, p in zip(probs.double().tolist(), ps):
        tot = sum(row)
        srt = sorted(row, reverse=True)
        acc, pivot = 0.0, srt[-1]
        for x in srt:
            acc += x
            if acc >= p * tot - 1e-12:
                pivot = x
                break
        keep = [x if x >= pivot else 0.0 for x in row] if p < 1 else row
        s = max(sum(keep), 1e-8)
        out.append([x / s for x in keep])
    return torch.tensor(out, dtype=torch.float64)


def test_ties_at_pivot_are_kept():
    p = torch.tensor([[0.1, 0.3, 0.2, 0.2, 0.2]])
    # k=2: pivot is 0.2 (2nd largest), three entries tie at it: 4 kept, sum 0.9
    got = S.top_k_renorm_prob(p, 2)
    want = torch.tensor([[0.0, 0.3, 0.2, 0.2, 0.2]]) / 0.9
    torch.testing.assert_close(got, want)
    assert int(S.kept_counts(got)[0]) == 4


def test_k_at_or_above_vocab_and_minus_one_only_renormalise():
    p = torch.tensor([[1.0, 2.0, 1.0], [3.0, 1.0, 0.0]])
    want = torch.tensor([[0.25, 0.5, 0.25], [0.75, 0.25, 0.0]])
    for k in (3, 4, -1, S.TOP_K_ALL):
        torch.testing.assert_close(S.top_k_renorm_prob(p, k), want)


def test_per_row_k():
    p = torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    got = S.top_k_renorm_prob(p, torch.tensor([1, 2, 3], dtype=torch.int32))
    want = torch.tensor([[1.0, 0, 0, 0], [0, 0, 3 / 7, 4 / 7], [0.25, 0.25, 0.25, 0.25]])
    torch.testing.assert_close(got, want)


def test_normaliser_floor_is_1e_minus_8():
    p = torch.tensor([[1e-10, 0.0, 0.0]], dtype=torch.float64)
    got = S.top_k_renorm_prob(p, 1)
    assert got[0, 0].item() == pytest.approx(1e-10 / 1e-8)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), vocab=st.integers(1, 40), levels=st.integers(1, 6),
       seed=st.integers(0, 10_000), dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]))
def test_top_k_matches_naive_reference_with_many_ties(rows, vocab, levels, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    # few distinct levels → ties everywhere; at least one positive entry per row
    p = torch.randint(0, levels + 1, (rows, vocab), generator=g).to(dtype)
    p[:, 0] += 1
    ks = torch.randint(1, vocab + 2, (rows,), generator=g)
    ks[0] = -1 if rows > 1 else ks[0]
    got = S.top_k_renorm_prob(p, ks)
    assert got.dtype == dtype
    want = naive_top_k(p, ks.tolist())
    assert torch.equal(got != 0, want != 0)
    torch.testing.assert_close(got.double(), want, atol=1e-2 if dtype != torch.float32 else 1e-6, rtol=1e-2)
    torch.testing.assert_close(S.top_k_sort_fix(p, ks).double(), want,
                               atol=1e-2 if dtype != torch.float32 else 1e-6, rtol=1e-2)


def test_rank_mask_drops_ties_where_they_straddle_the_pivot():
    p = torch.tensor([[0.1, 0.3, 0.2, 0.2, 0.2], [0.5, 0.3, 0.1, 0.06, 0.04]])
    rank = S.top_k_rank_mask(p, 2)
    assert S.kept_counts(rank).tolist() == [2, 2]
    assert S.kept_counts(S.top_k_renorm_prob(p, 2)).tolist() == [4, 2]
    assert S.tie_straddles(p, 2).tolist() == [True, False]
    torch.testing.assert_close(rank[1], S.top_k_renorm_prob(p, 2)[1])


def test_bf16_ties_survive_dtype_policy():
    # 0.3335 and 0.3337 round to the same bf16 value (0.333984375): they tie at the pivot
    p = torch.tensor([[0.4, 0.3335, 0.3337, 0.01]], dtype=torch.bfloat16)
    assert p[0, 1] == p[0, 2]
    got = S.top_k_renorm_prob(p, 2)
    assert got.dtype == torch.bfloat16
    assert S.kept_counts(got).item() == 3


def test_top_p_hand_example_and_ties():
    p = torch.tensor([[0.5, 0.2, 0.2, 0.1]])
    # p=0.6: 0.5 alone is short, 0.5+0.2 reaches it → pivot 0.2, both 0.2s kept (tie)
    torch.testing.assert_close(S.top_p_renorm_prob(p, 0.6), torch.tensor([[0.5, 0.2, 0.2, 0.0]]) / 0.9)
    torch.testing.assert_close(S.top_p_renorm_prob(p, 0.5), torch.tensor([[1.0, 0, 0, 0]]))
    torch.testing.assert_close(S.top_p_renorm_prob(p, 1.0), p)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 5), vocab=st.integers(2, 30), seed=st.integers(0, 10_000))
def test_top_p_matches_naive_reference(rows, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(rows, vocab, generator=g, dtype=torch.float64) + 0.01
    ps = (torch.rand(rows, generator=g, dtype=torch.float64) * 0.98 + 0.01)
    got = S.top_p_renorm_prob(p, ps)
    want = naive_top_p(p, ps.tolist())
    torch.testing.assert_close(got, want, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("bad, msg", [
    (torch.tensor([[0.5, float("nan")]]), "NaN"),
    (torch.tensor([[0.5, float("inf")]]), "inf"),
    (torch.tensor([[0.5, float("-inf")]]), "inf"),
    (torch.tensor([[0.5, -0.1]]), "negative"),
    (torch.tensor([[0.5, 0.5], [0.0, 0.0]]), r"all-zero row\(s\) 1"),
    (torch.zeros((0, 4)), "empty batch"),
    (torch.tensor([0.5, 0.5]), "2-D"),
    (torch.tensor([[1, 2]]), "float"),
])
def test_bad_probs_raise(bad, msg):
    with pytest.raises(ValueError, match=msg):
        S.top_k_renorm_prob(bad, 1)
    with pytest.raises(ValueError, match=msg):
        S.top_p_renorm_prob(bad, 0.9)


@pytest.mark.parametrize("k, msg", [
    (0, ">= 1 or -1"), (-2, ">= 1 or -1"), (torch.tensor([1, 0]), ">= 1 or -1"),
    (torch.tensor([1, 2, 3]), "3 entries but probs has 2 rows"),
    (torch.tensor([1.0, 2.0]), "integers"), (torch.tensor([[1], [2]]), "1-D"), (1.5, "int"), (True, "int"),
])
def test_bad_k_raise(k, msg):
    with pytest.raises(ValueError, match=msg):
        S.top_k_renorm_prob(torch.tensor([[0.5, 0.5], [0.2, 0.8]]), k)


@pytest.mark.parametrize("p, msg", [(0.0, r"\(0, 1\]"), (1.5, r"\(0, 1\]"), (math.nan, r"\(0, 1\]"),
                                    (torch.tensor([0.5]), "1 entries but probs has 2 rows")])
def test_bad_p_raise(p, msg):
    with pytest.raises(ValueError, match=msg):
        S.top_p_renorm_prob(torch.tensor([[0.5, 0.5], [0.2, 0.8]]), p)


def test_large_vocab_mixed_batch_equals_sort_fix():
    g = torch.Generator().manual_seed(1)
    p = torch.softmax(torch.randn(16, 163_840, generator=g), dim=-1).to(torch.bfloat16)
    ks = torch.tensor([1, 20, 50, 1024, -1, 20, S.TOP_K_ALL, 7] * 2)
    a, b = S.top_k_renorm_prob(p, ks), S.top_k_sort_fix(p, ks)
    assert torch.equal(a != 0, b != 0)
    torch.testing.assert_close(a.float(), b.float(), atol=1e-3, rtol=1e-2)


@pytest.mark.gpu
def test_runs_on_cuda_device():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here; the CPU tests above are its twin")
    p = torch.tensor([[0.1, 0.3, 0.2, 0.2, 0.2]], device="cuda")
    got = S.top_k_renorm_prob(p, 2)
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), torch.tensor([[0.0, 0.3, 0.2, 0.2, 0.2]]) / 0.9)
