"""k3lab.sampling: FlashInfer top-k / top-p renorm semantics, dtype policy, bad input.

Expected values come from hand-worked rows or from a naive per-row reference written
here (a Python loop with a full sort per row), never from the code under test.
"""

import math
import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from k3lab import sampling as S

#: ``make test-deep`` (K3LAB_HYPOTHESIS=deep, tests/conftest.py): ten times the CI example count
DEEP_FACTOR = 10


def examples(ci: int) -> int:
    """A property's example count: ``ci`` under ``make test`` (the same examples every run),
    :data:`DEEP_FACTOR` × ``ci`` drawn afresh under ``make test-deep``."""
    return ci * DEEP_FACTOR if os.environ.get("K3LAB_HYPOTHESIS") == "deep" else ci


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


def test_k_far_past_any_int64_means_the_whole_row():
    probs = torch.tensor([[0.5, 0.3, 0.2]])
    assert torch.equal(S.top_k_renorm_prob(probs, 1 << 70), probs)
    assert torch.equal(S.top_k_renorm_prob(probs, -1), probs)


def test_per_row_k():
    p = torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    got = S.top_k_renorm_prob(p, torch.tensor([1, 2, 3], dtype=torch.int32))
    want = torch.tensor([[1.0, 0, 0, 0], [0, 0, 3 / 7, 4 / 7], [0.25, 0.25, 0.25, 0.25]])
    torch.testing.assert_close(got, want)


def test_normaliser_floor_is_1e_minus_8():
    p = torch.tensor([[1e-10, 0.0, 0.0]], dtype=torch.float64)
    got = S.top_k_renorm_prob(p, 1)
    assert got[0, 0].item() == pytest.approx(1e-10 / 1e-8)


@settings(max_examples=examples(60))
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


@settings(max_examples=examples(40))
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
    # finite entries whose row sum overflows float32 would otherwise renormalise to zeros
    (torch.full((2, 4), 3e38), r"row\(s\) 0, 1 sum past the torch.float32 range"),
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
                                    (torch.tensor([0.5]), "1 entries but probs has 2 rows"),
                                    (torch.tensor([True, True]), "real numbers"),
                                    (torch.tensor([0.5 + 0j, 0.5 + 0j]), "real numbers")])
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


# --- top_k_renorm_prob against a slow, obviously correct reference, on every plan ---------

def ref_top_k(probs, ks):
    """Per row, in float64 (an exact up-cast: ties stay ties): pivot = the row sorted
    descending at [k-1]; keep entries >= pivot (k == -1 or k >= vocab: keep all); divide
    by max(kept sum, 1e-8); round once to probs' dtype."""
    x = probs.double()
    out = torch.zeros_like(x)
    for r, k in enumerate(int(k) for k in ks):
        row = x[r]
        if k == -1 or k >= row.numel():
            kept = row
        else:
            pivot = torch.sort(row, descending=True).values[k - 1]
            kept = torch.where(row >= pivot, row, 0.0)
        out[r] = kept / max(float(kept.sum()), 1e-8)
    return out.to(probs.dtype)


# k3lab divides in float32 for 16-bit inputs and then rounds: at most a unit in the last
# place away from the reference's single rounding; float32 also carries the kept sum's rounding
RTOL = {torch.float32: 1e-5, torch.bfloat16: 2 ** -7, torch.float16: 2 ** -10, torch.float64: 1e-12}
ATOL = {torch.float32: 1e-12, torch.bfloat16: 1e-12, torch.float16: 1e-7, torch.float64: 1e-15}


def assert_matches_reference(got, probs, ks):
    want = ref_top_k(probs, ks)
    assert got.dtype == probs.dtype
    assert torch.equal(got != 0, want != 0), "kept sets differ"
    torch.testing.assert_close(got, want, rtol=RTOL[probs.dtype], atol=ATOL[probs.dtype])


def make_probs(kind, rows, vocab, dtype, seed):
    """'random': softmax of N(0, 3²) logits; 'bf16': the same rounded to bf16 values (ties
    at every scale, then held in ``dtype``); 'levels': a few integer levels (ties everywhere)."""
    g = torch.Generator().manual_seed(seed)
    if kind == "levels":
        p = torch.randint(0, 4, (rows, vocab), generator=g).double()
        p[:, 0] += 1
    else:
        p = torch.softmax(torch.randn(rows, vocab, generator=g, dtype=torch.float64) * 3.0, dim=-1)
        if kind == "bf16":
            p = p.to(torch.bfloat16).double()
    return p.to(dtype)


def force_plan(monkeypatch, plan, chunk):
    """Make top_k_renorm_prob use ``plan`` (with ``chunk``) wherever it is feasible."""
    def planner(vocab, kmax):
        if plan == "topk" or -(-vocab // chunk) < kmax + 1:
            return "topk", 0
        return plan, chunk
    monkeypatch.setattr(S, "_top_k_plan", planner)


K3_VOCAB = 163_840


@pytest.mark.parametrize("k, plan", [(1, "gather"), (20, "gather"), (50, "gather"), (1024, "floor"),
                                     (K3_VOCAB - 1, "topk")])
def test_plan_chosen_at_k3_vocabulary(k, plan):
    assert S._top_k_plan(K3_VOCAB, k)[0] == plan


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind", ["random", "bf16", "levels"])
@pytest.mark.parametrize("vocab", [K3_VOCAB, 50_257])  # 50,257: the last chunk is short
def test_top_k_equals_reference_at_large_vocabulary(vocab, kind, dtype):
    p = make_probs(kind, 4, vocab, dtype, seed=vocab + len(kind))
    for ks in ([1] * 4, [20] * 4, [50] * 4, [1024] * 4, [vocab - 1] * 4, [vocab] * 4, [vocab + 7] * 4,
               [1, 20, 50, 1024], [20, -1, 1024, S.TOP_K_ALL]):
        got = S.top_k_renorm_prob(p, torch.tensor(ks) if len(set(ks)) > 1 else ks[0])
        assert_matches_reference(got, p, ks)


@settings(max_examples=examples(80))
@given(rows=st.integers(1, 5), vocab=st.integers(1, 70), kind=st.sampled_from(["random", "bf16", "levels"]),
       seed=st.integers(0, 10_000), dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]),
       uniform=st.booleans())
def test_every_plan_gives_the_reference_and_the_same_bits(rows, vocab, kind, seed, dtype, uniform):
    p = make_probs(kind, rows, vocab, dtype, seed)
    g = torch.Generator().manual_seed(seed)
    ks = torch.randint(1, vocab + 2, (rows,), generator=g)
    if not uniform and rows > 1:
        ks[-1] = -1
    top_k = int(ks[0]) if uniform else ks
    ks_list = [int(ks[0])] * rows if uniform else ks.tolist()
    outs = {}
    with pytest.MonkeyPatch.context() as mp:
        for plan, chunk in [("topk", 0), ("gather", 1), ("gather", 2), ("gather", 3), ("gather", 7),
                            ("floor", 1), ("floor", 2), ("floor", 5)]:
            force_plan(mp, plan, chunk)
            outs[plan, chunk] = S.top_k_renorm_prob(p, top_k)
            assert_matches_reference(outs[plan, chunk], p, ks_list)
    first = outs["topk", 0]
    for key, got in outs.items():
        assert torch.equal(got, first), key


def test_k_one_vocab_and_beyond_on_tiny_rows():
    p = torch.tensor([[0.2, 0.5, 0.3], [0.3, 0.3, 0.4]], dtype=torch.bfloat16)
    for k in (1, 2, 3, 4, S.TOP_K_ALL, -1):
        assert_matches_reference(S.top_k_renorm_prob(p, k), p, [k, k])
    assert S.kept_counts(S.top_k_renorm_prob(p, 1)).tolist() == [1, 1]
    assert S.kept_counts(S.top_k_renorm_prob(p, 2)).tolist() == [2, 3]  # row 1: tie at the pivot


@pytest.mark.parametrize("k", [20, 1024])  # the gather and the floor plan at K3's vocabulary
@pytest.mark.parametrize("bad, msg", [("nan", "NaN in row"), ("neg", "negative entries in row"),
                                      ("zero", r"all-zero row\(s\) 2"), ("inf", "inf in row")])
def test_validation_on_the_fast_plans(k, bad, msg):
    p = make_probs("random", 3, K3_VOCAB, torch.float32, seed=5)
    if bad == "zero":
        p[2] = 0.0
    else:
        p[1, 777] = {"nan": float("nan"), "neg": -1e-3, "inf": float("inf")}[bad]
    with pytest.raises(ValueError, match=msg):
        S.top_k_renorm_prob(p, k)


def test_bad_probs_reported_before_bad_k():
    with pytest.raises(ValueError, match="NaN"):
        S.top_k_renorm_prob(torch.tensor([[0.5, float("nan")]]), 0)


@pytest.mark.gpu
def test_runs_on_cuda_device():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here; the CPU tests above are its twin")
    p = torch.tensor([[0.1, 0.3, 0.2, 0.2, 0.2]], device="cuda")
    got = S.top_k_renorm_prob(p, 2)
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), torch.tensor([[0.0, 0.3, 0.2, 0.2, 0.2]]) / 0.9)


# --- any stride, and k / p checked before any arithmetic (issue 28) ----------------------

def strided(p, layout):
    """The same values as ``p`` laid out another way: column-major, or every other column of
    a wider tensor (no copy of ``p``'s layout survives)."""
    if layout == "column-major":
        return p.t().contiguous().t()
    wide = torch.zeros(p.shape[0], 2 * p.shape[1], dtype=p.dtype)
    wide[:, ::2] = p
    return wide[:, ::2]


@settings(max_examples=examples(80))
@given(rows=st.integers(1, 6), vocab=st.integers(1, 70), kind=st.sampled_from(["random", "bf16", "levels"]),
       seed=st.integers(0, 10_000), dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]),
       layout=st.sampled_from(["column-major", "every-other-column"]), per_row=st.booleans())
def test_any_stride_gives_the_reference_and_the_contiguous_bits(rows, vocab, kind, seed, dtype, layout, per_row):
    """The issue: a column-major input with per-row k, or a tie at the k-th value, raised
    "view size is not compatible" (18 of 421 library cases). 'levels' rows tie everywhere."""
    p = make_probs(kind, rows, vocab, dtype, seed)
    q = strided(p, layout)
    assert torch.equal(q, p) and not q.is_contiguous() or q.shape[0] == 1 or vocab == 1
    g = torch.Generator().manual_seed(seed)
    ks = torch.randint(1, vocab + 2, (rows,), generator=g)
    if rows > 1:
        ks[-1] = -1
    top_k = ks if per_row else int(ks[0])
    got = S.top_k_renorm_prob(q, top_k)
    assert_matches_reference(got, p, ks.tolist() if per_row else [int(ks[0])] * rows)
    assert torch.equal(got, S.top_k_renorm_prob(p, top_k))
    pp = torch.rand(rows, generator=g, dtype=torch.float64).clamp_min(0.05)
    assert torch.equal(S.top_p_renorm_prob(q, pp), S.top_p_renorm_prob(p, pp))
    torch.testing.assert_close(S.top_p_renorm_prob(q, pp).double(), naive_top_p(p, pp.tolist()),
                               rtol=RTOL[dtype], atol=1e-3)


def test_column_major_with_per_row_k_and_a_tie_at_the_pivot_by_hand():
    p = torch.tensor([[0.1, 0.3, 0.3, 0.3], [0.4, 0.2, 0.2, 0.2], [0.25, 0.25, 0.25, 0.25]])
    got = S.top_k_renorm_prob(p.t().contiguous().t(), torch.tensor([2, 1, -1]))
    want = torch.tensor([[0.0, 1 / 3, 1 / 3, 1 / 3], [1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("k", [-2 ** 70, -2 ** 63 - 1, -(10 ** 400)])
def test_a_k_past_int64_is_refused_before_arithmetic(k):
    with pytest.raises(ValueError, match=r"top_k must be >= 1 or -1 \(unrestricted\); got -"):
        S.top_k_renorm_prob(torch.tensor([[0.5, 0.5]]), k)


@pytest.mark.parametrize("p", [10 ** 400, -(10 ** 400), 2 ** 70])
def test_a_p_past_any_float_is_refused_before_arithmetic(p):
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\]; got "):
        S.top_p_renorm_prob(torch.tensor([[0.5, 0.5]]), p)


@pytest.mark.parametrize("call", [
    lambda: S.top_k_renorm_prob(torch.empty(2, 4, device="meta"), 2),
    lambda: S.top_k_renorm_prob(torch.empty(2, 4, device="meta"), 2, validate=False),
    lambda: S.top_p_renorm_prob(torch.empty(2, 4, device="meta"), 0.5, validate=False),
    lambda: S.top_k_renorm_prob(torch.full((2, 4), 0.25), torch.tensor([1, 2], device="meta")),
    lambda: S.top_p_renorm_prob(torch.full((2, 4), 0.25), torch.tensor([0.5, 0.5], device="meta")),
])
def test_meta_tensors_are_one_line_value_errors(call):
    """They have shapes but no values: NotImplementedError before; a ValueError naming it now."""
    with pytest.raises(ValueError, match="meta device: it holds no values"):
        call()


def test_numpy_scalars_are_a_k_and_a_p():
    """Issue 35: ``np.int64`` k (what a batch built with NumPy hands over) was refused."""
    import numpy as np

    probs = torch.tensor([[0.1, 0.4, 0.2, 0.3], [0.25, 0.25, 0.3, 0.2]])
    assert torch.equal(S.top_k_renorm_prob(probs, np.int64(2)), S.top_k_renorm_prob(probs, 2))
    assert torch.equal(S.top_p_renorm_prob(probs, np.float32(0.5)), S.top_p_renorm_prob(probs, float(np.float32(0.5))))
    assert torch.equal(S.top_p_renorm_prob(probs, np.int64(1)), S.top_p_renorm_prob(probs, 1))
    for bad in (np.int64(0), np.bool_(True)):
        with pytest.raises(ValueError, match="top_k must be"):
            S.top_k_renorm_prob(probs, bad)
