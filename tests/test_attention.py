"""k3lab.attention (head-count rules, the zero-pad wrapper) and k3lab.mla_kernels (the
reference MLA prefill, torch SDPA, the strict AITER stand-in).

Expected values are written by hand from the rules' statements (sglang 0.5.16 … 0.5.22
aiter_backend.py ``AiterAttnBackend.__init__``; the installed amd-aiter 0.1.7.post2.dev18,
read by hand: ``aiter_meta/csrc/kernels/mla/reduce.cu`` 476-516 ``MLA_MERGE_ROUTER`` compiles
mla_reduce_v1 for (heads, v head dim) = (8, 128), (16, 128), (128, 128), (16, 512), (128, 512);
``aiter_meta/csrc/py_itfs_cu/asm_mla.cu`` 408 ``TORCH_CHECK(gqa_ratio == 16 || gqa_ratio == 128)``;
``aiter_meta/hsa/gfx950/fmha_v3_fwd/fwd_hd192_hd128_bf16*.co`` shipped, none under gfx942) or
computed by a second, naive implementation in this file.
"""

import math

import pytest
import torch

from k3lab import aiter_release
from k3lab import attention as A
from k3lab import mla_kernels as K

# --------------------------------------------------------------------------- rules

SGLANG_OK_BY_HAND = {4, 8, 16, 32, 48, 64, 80, 96, 112, 128}


def test_is_supported_heads_matches_the_rule_written_out():
    got = {n for n in range(1, 161) if A.is_supported_heads(n)}
    assert got == SGLANG_OK_BY_HAND


@pytest.mark.parametrize("n, expected", [(1, 4), (3, 4), (4, 4), (5, 8), (6, 8), (8, 8), (9, 16),
                                         (12, 16), (16, 16), (17, 32), (24, 32), (40, 48),
                                         (96, 96), (100, 112), (128, 128)])
def test_padded_heads_by_hand(n, expected):
    assert A.padded_heads(n) == expected


@pytest.mark.parametrize("bad", [0, -12, 129, 1.5, True, "12", None])
def test_padded_heads_rejects_bad_counts(bad):
    with pytest.raises(ValueError):
        A.padded_heads(bad)


def test_kernel_heads_repeat_small_counts_to_16():
    assert [A.kernel_heads(n) for n in (3, 4, 6, 8, 12, 24, 96)] == [16, 16, 16, 16, 16, 32, 96]


# AITER, read by hand from the installed release (see the module docstring)
REDUCE_DV128 = {8, 16, 128}
ABSORBED_PREFILL = {16, 128}


def test_aiter_rules_come_from_the_installed_release():
    reduce = aiter_release.rule("mla_reduce_v1_dv128", "gfx950")
    assert {n for n in range(1, 161) if reduce.accepts(n)} == REDUCE_DV128
    absorbed = aiter_release.rule("mla_prefill_asm", "gfx950")
    assert {n for n in range(1, 161) if absorbed.accepts(n)} == ABSORBED_PREFILL
    # the two rules disagree with sglang's: 80 passes sglang's start-up check but no AITER
    # reduction; 12 passes neither
    assert A.is_supported_heads(80) and not reduce.accepts(80)
    assert not A.is_supported_heads(12) and not reduce.accepts(12) and reduce.padded(12) == 16
    assert reduce.padded(24) == 128 and reduce.padded(129) is None


def test_head_table_for_k3():
    t = A.head_table(96).set_index("tp")
    assert list(t.index) == [1, 2, 4, 8, 16, 32]
    assert list(t.heads_per_rank) == [96, 48, 24, 12, 6, 3]
    assert list(t.sglang_supported) == [True, True, False, False, False, False]
    assert list(t.sglang_padded_heads) == [96, 48, 32, 16, 8, 4]
    assert list(t.kernel_heads) == [96, 48, 32, 16, 16, 16]  # 8 and 4 are repeated up to 16
    # 12 -> 16, 24 -> 32, 6 -> 8 and 3 -> 4 all waste a third of the real heads' FLOPs
    assert t.loc[8, "extra_attention_flops_pct"] == pytest.approx(100 / 3, abs=1e-3)
    assert t.loc[1, "extra_attention_flops_pct"] == 0
    # AITER's own columns, against the hand-read sets: smallest accepted count >= n
    smallest = lambda ok, n: min((m for m in ok if m >= n), default=None)  # noqa: E731
    col = "mla_reduce_v1_dv128@gfx950"
    assert list(t[col]) == [n in REDUCE_DV128 for n in t.heads_per_rank]
    assert list(t[col + "_padded"]) == [smallest(REDUCE_DV128, n) for n in t.heads_per_rank]
    assert list(t["mla_prefill_asm@gfx950_padded"]) == [smallest(ABSORBED_PREFILL, n) for n in t.heads_per_rank]
    # the ASM flash-attention fwd takes any head count for q/k 192, v 128 on gfx950 only
    assert t["fmha_v3_fwd@gfx950"].all() and not t["fmha_v3_fwd@gfx942"].any()
    with pytest.raises(ValueError, match="does not divide"):
        A.head_table(96, tps=(5,))
    with pytest.raises(ValueError, match="total heads"):
        A.head_table(0)


# --------------------------------------------------------------------------- FLOPs

def _pairs_brute(q_len, kv_len):
    i = torch.arange(q_len).unsqueeze(1)
    j = torch.arange(kv_len).unsqueeze(0)
    return int((j <= i + (kv_len - q_len)).sum())


@pytest.mark.parametrize("q_len, kv_len", [(1, 1), (4, 4), (7, 7), (2, 5), (3, 10), (0, 4)])
def test_causal_pairs_against_mask_count(q_len, kv_len):
    assert A.causal_pairs(q_len, kv_len) == _pairs_brute(q_len, kv_len)


def test_attention_flops_by_hand():
    # S = 4, 1 head: 10 kept pairs x (192 + 128) MACs x 2 FLOPs
    assert A.attention_flops(4, 1) == 2 * 320 * 10
    assert A.attention_flops(4, 12, causal=False) == 2 * 12 * 320 * 16
    assert A.attention_flops(1000, 16) / A.attention_flops(1000, 12) == pytest.approx(16 / 12)
    with pytest.raises(ValueError):
        A.attention_flops(5, 12, kv_len=4)


# --------------------------------------------------------------------------- reference

def _naive(q, k, v, cu_q, cu_k, scale, causal):
    """Token-by-token, head-by-head attention in float64 with math.exp: the second implementation."""
    out = torch.zeros(q.shape[0], q.shape[1], v.shape[2], dtype=torch.float64)
    cu_q, cu_k = cu_q.tolist(), cu_k.tolist()
    for b in range(len(cu_q) - 1):
        lq, lk = cu_q[b + 1] - cu_q[b], cu_k[b + 1] - cu_k[b]
        for i in range(lq):
            for h in range(q.shape[1]):
                qi = q[cu_q[b] + i, h].double()
                js = [j for j in range(lk) if not causal or j <= i + lk - lq]
                s = [float(qi @ k[cu_k[b] + j, h].double()) * scale for j in js]
                mx = max(s)
                w = [math.exp(x - mx) for x in s]
                z = sum(w)
                for wj, j in zip(w, js):
                    out[cu_q[b] + i, h] += (wj / z) * v[cu_k[b] + j, h].double()
    return out


def test_reference_matches_naive_varlen_causal():
    q, k, v, cu = K.make_varlen_batch([3, 1, 6], heads=2, qk_head_dim=8, v_head_dim=4,
                                      dtype=torch.float64, seed=3)
    got = K.mla_prefill_reference(q, k, v, cu, softmax_scale=0.3)
    assert torch.allclose(got, _naive(q, k, v, cu, cu, 0.3, True), atol=1e-12)


def test_reference_with_prefix_and_non_causal():
    g = torch.Generator().manual_seed(5)
    q = torch.randn(5, 3, 8, generator=g, dtype=torch.float64)
    k = torch.randn(9, 3, 8, generator=g, dtype=torch.float64)
    v = torch.randn(9, 3, 4, generator=g, dtype=torch.float64)
    cu_q = torch.tensor([0, 2, 5])
    cu_k = torch.tensor([0, 4, 9])   # sequence 0: 2 new tokens over a 2-token prefix, 1: 3 over 2
    scale = 1 / math.sqrt(8)
    for causal in (True, False):
        got = K.mla_prefill_reference(q, k, v, cu_q, cu_k, causal=causal)
        assert torch.allclose(got, _naive(q, k, v, cu_q, cu_k, scale, causal), atol=1e-12)


def test_sdpa_prefill_matches_reference_fp32():
    q, k, v, cu = K.make_varlen_batch([17, 1, 40], heads=12, seed=2)
    assert torch.allclose(K.sdpa_prefill(q, k, v, cu), K.mla_prefill_reference(q, k, v, cu),
                          atol=2e-5, rtol=1e-5)


# --------------------------------------------------------------------------- exactness

LENS = [5, 17, 0, 1, 33, 64]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kernel", [K.mla_prefill_reference, K.sdpa_prefill], ids=["reference", "sdpa"])
def test_padding_is_bitwise_exact(kernel, dtype):
    # Heads are independent and both kernels compute each head with the same code whatever
    # the head count, so the 12 real heads come out bit-identical.
    q, k, v, cu = K.make_varlen_batch(LENS, heads=12, dtype=dtype, seed=11)
    plain = kernel(q, k, v, cu)
    padded = A.with_head_padding(kernel)(q, k, v, cu)
    assert padded.shape == plain.shape == (sum(LENS), 12, 128)
    assert padded.dtype == dtype
    assert torch.equal(padded, plain)


def test_padded_kernel_sees_16_zero_heads():
    seen = {}

    def spy(q, k, v, cu):
        seen["shapes"] = (tuple(q.shape), tuple(k.shape), tuple(v.shape))
        seen["pad_zero"] = all(bool((t[:, 12:] == 0).all()) for t in (q, k, v))
        return K.mla_prefill_reference(q, k, v, cu)

    q, k, v, cu = K.make_varlen_batch([4, 6], heads=12, seed=1)
    A.with_head_padding(spy)(q, k, v, cu)
    assert seen["shapes"] == ((10, 16, 192), (10, 16, 192), (10, 16, 128))
    assert seen["pad_zero"]


def test_supported_count_passes_through_untouched():
    got = {}

    def spy(q, k, v, cu):
        got["q"] = q
        return torch.zeros(q.shape[0], q.shape[1], v.shape[2])

    q, k, v, cu = K.make_varlen_batch([3], heads=16)
    A.with_head_padding(spy)(q, k, v, cu)
    assert got["q"] is q


def test_tuple_outputs_have_lse_sliced():
    def kern(q, k, v, cu):
        return K.mla_prefill_reference(q, k, v, cu), torch.ones(q.shape[0], q.shape[1]), "meta"

    q, k, v, cu = K.make_varlen_batch([3, 2], heads=12)
    o, lse, meta = A.with_head_padding(kern)(q, k, v, cu)
    assert o.shape == (5, 12, 128) and lse.shape == (5, 12) and meta == "meta"


def test_lse_in_heads_first_layout_is_sliced_and_ambiguity_refused():
    def kern(q, k, v, cu):
        o = K.mla_prefill_reference(q, k, v, cu)
        lse = torch.arange(q.shape[1], dtype=torch.float32).unsqueeze(1).expand(q.shape[1], q.shape[0])
        return o, lse.contiguous()

    q, k, v, cu = K.make_varlen_batch([3, 2], heads=12)
    _, lse = A.with_head_padding(kern)(q, k, v, cu)
    assert lse.shape == (12, 5) and torch.equal(lse[:, 0], torch.arange(12, dtype=torch.float32))
    # 16 tokens and 16 padded heads: [16, 16] could be either layout
    q, k, v, cu = K.make_varlen_batch([16], heads=12)
    with pytest.raises(ValueError, match="ambiguous"):
        A.with_head_padding(lambda q, k, v, cu: (K.mla_prefill_reference(q, k, v, cu),
                                                 torch.zeros(16, 16)))(q, k, v, cu)


def test_explicit_target_heads():
    q, k, v, cu = K.make_varlen_batch([3, 2], heads=12)
    calls = []

    def kern(q, k, v, cu):
        calls.append(q.shape[1])
        return K.mla_prefill_reference(q, k, v, cu)

    A.with_head_padding(kern, heads=32)(q, k, v, cu)
    A.with_head_padding(kern, heads=aiter_release.rule("mla_reduce_v1_dv128", "gfx950").padded)(q, k, v, cu)
    assert calls == [32, 16]


# --------------------------------------------------------------------------- stand-in: failure and fix

def test_standin_refuses_12_heads_like_aiter():
    q, k, v, cu = K.make_varlen_batch([8, 3], heads=12)
    with pytest.raises(K.UnsupportedHeadCount, match="#heads: 12, head dimension: 128"):
        K.StrictAsmPrefillStandIn()(q, k, v, cu, cu)


def test_standin_accepts_padded_16_and_matches_reference():
    q, k, v, cu = K.make_varlen_batch([8, 3, 20], heads=12, dtype=torch.bfloat16, seed=4)
    kern = K.StrictAsmPrefillStandIn()
    out = A.with_head_padding(kern)(q, k, v, cu, cu)
    assert kern.calls == [16]
    assert torch.equal(out, K.mla_prefill_reference(q, k, v, cu))


def test_standin_follows_aiter_not_sglang_at_tp1():
    # 96 heads pass sglang's start-up check but no mla_reduce_v1 case (8, 16, 128 at v 128):
    # padding by sglang's rule does nothing, padding by AITER's rule goes to 128
    q, k, v, cu = K.make_varlen_batch([5, 3], heads=96, seed=6)
    with pytest.raises(K.UnsupportedHeadCount, match="#heads: 96"):
        A.with_head_padding(K.StrictAsmPrefillStandIn())(q, k, v, cu, cu)
    kern = K.StrictAsmPrefillStandIn()
    rule = aiter_release.rule("mla_reduce_v1_dv128", "gfx950")
    out = A.with_head_padding(kern, heads=rule.padded)(q, k, v, cu, cu)
    assert kern.calls == [128] and torch.equal(out, K.mla_prefill_reference(q, k, v, cu))


def test_standin_refuses_wrong_head_dims():
    q, k, v, cu = K.make_varlen_batch([4], heads=16, qk_head_dim=128, v_head_dim=128)
    with pytest.raises(K.UnsupportedHeadCount, match="head dim"):
        K.StrictAsmPrefillStandIn()(q, k, v, cu, cu)


def _aiter_or_skip():
    try:
        return K.aiter_kernel()
    except ImportError as e:
        pytest.skip(f"AITER is not importable here (ROCm-only library): {e}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_real_aiter_kernel_padding_exact(dtype):
    """The same exactness check against AITER's real varlen kernel (ROCm only)."""
    kern = _aiter_or_skip()
    if not torch.cuda.is_available():
        pytest.skip("no ROCm/CUDA device visible to torch")
    q, k, v, cu = K.make_varlen_batch(LENS, heads=12, dtype=dtype, seed=11, device="cuda")
    cu = cu.to(torch.int32)
    plain = kern(q, k, v, cu, cu)
    padded = A.with_head_padding(kern)(q, k, v, cu, cu)
    ref = K.mla_prefill_reference(q.cpu(), k.cpu(), v.cpu(), cu.cpu())
    assert torch.allclose(padded.float().cpu(), ref.float(), atol=2e-2)
    assert (padded.float() - plain.float()).abs().max().item() <= 1e-2


# --------------------------------------------------------------------------- bad input

def _ok():
    return K.make_varlen_batch([3, 2], heads=12)


def test_bad_layouts_raise_value_error():
    q, k, v, cu = _ok()
    wrapped = A.with_head_padding(K.mla_prefill_reference)
    with pytest.raises(ValueError, match="3-D"):
        wrapped(q.reshape(5, -1), k, v, cu)
    with pytest.raises(ValueError, match="one k/v head per q head"):
        wrapped(q, k[:, :1], v[:, :1], cu)
    with pytest.raises(ValueError, match="dtypes differ"):
        wrapped(q, k.double(), v, cu)
    with pytest.raises(ValueError, match="head dims differ"):
        wrapped(q, k[..., :128], v, cu)
    with pytest.raises(ValueError, match="token counts differ"):
        wrapped(q, k, v[:4], cu)
    with pytest.raises(ValueError, match="floating point"):
        wrapped(q.to(torch.int32), k, v, cu)
    with pytest.raises(ValueError, match="torch.Tensor"):
        wrapped(q.numpy(), k, v, cu)


def test_too_many_heads_raise_value_error():
    q, k, v, cu = K.make_varlen_batch([2], heads=130, qk_head_dim=4, v_head_dim=4)
    with pytest.raises(ValueError, match="exceeds"):
        A.with_head_padding(K.mla_prefill_reference)(q, k, v, cu)


def test_bad_cu_seqlens_raise_value_error():
    q, k, v, _ = _ok()
    for cu, msg in ((torch.tensor([0, 3, 4]), "ends at 4"), (torch.tensor([1, 3, 5]), "start at 0"),
                    (torch.tensor([0, 4, 3, 5]), "non-decreasing"), (torch.tensor([0.0, 5.0]), "integer"),
                    (torch.tensor([5]), "1-D tensor")):
        with pytest.raises(ValueError, match=msg):
            K.mla_prefill_reference(q, k, v, cu)


def test_kernel_returning_wrong_shape_is_caught():
    q, k, v, cu = _ok()
    with pytest.raises(ValueError, match="expected"):
        A.with_head_padding(lambda q, k, v, cu: q[:, :12])(q, k, v, cu)
    with pytest.raises(ValueError, match="callable"):
        A.with_head_padding(42)
    with pytest.raises(ValueError, match=">= 12"):
        A.with_head_padding(K.mla_prefill_reference, heads=8)(q, k, v, cu)


def test_only_the_outputs_it_padded_are_sliced():
    """The issue: a pass-through cu_seqlens of 16 entries with 12 heads came back with 12
    (any 1-D extra whose length equalled the padded head count was cut)."""
    q, k, v, cu = K.make_varlen_batch([4, 4, 4, 5], heads=12)   # 17 tokens: the LSE's layout is clear
    cu16 = torch.arange(16, dtype=torch.int32)
    scale = torch.ones(16)                      # a float input handed back as it came

    def kern(q, k, v, cu, extra, scale=None):
        lse = torch.arange(q.shape[1], dtype=torch.float32).repeat(q.shape[0], 1)   # [tokens, padded heads]
        return K.mla_prefill_reference(q, k, v, cu), extra, scale, lse, extra.clone()

    o, same_cu, same_scale, lse, cu_copy = A.with_head_padding(kern)(q, k, v, cu, cu16, scale=scale)
    assert o.shape == (17, 12, 128)
    assert same_cu is cu16 and same_scale is scale
    assert torch.equal(cu_copy, cu16)           # an integer tensor the kernel made: not a head output
    assert lse.shape == (17, 12) and torch.equal(lse[0], torch.arange(12, dtype=torch.float32))


# --------------------------------------------------------------------------- issue 35: the wrapper's outputs and inputs


def _padded_kernel(extra_of):
    """A kernel that returns the reference output and ``extra_of(q)`` (q as the kernel sees it: padded)."""
    def kern(q, k, v, cu, out=None):
        o = K.mla_prefill_reference(q, k, v, cu)
        if out is not None:
            out.copy_(o)
            o = out
        return o, extra_of(q)
    return kern


def test_a_1d_float_output_as_long_as_the_padded_heads_is_refused_not_cut():
    """Issue 35: a kernel-computed 1-D float output of 16 entries (one per sequence of a batch of
    16, say) was cut to 12 as if it were per head. Which it is cannot be told: refused."""
    q, k, v, cu = K.make_varlen_batch([2] * 16, heads=12)
    with pytest.raises(ValueError, match=r"1-D of length 16, the padded head count.*cannot be told apart"):
        A.with_head_padding(_padded_kernel(lambda q: torch.ones(16)))(q, k, v, cu)
    # 1-D of another length (one per token here: 32) is no head output: untouched
    _, per_token = A.with_head_padding(_padded_kernel(lambda q: torch.ones(32)))(q, k, v, cu)
    assert per_token.shape == (32,)


def test_a_dict_of_extras_is_sliced_and_a_namedtuple_stays_one():
    """Issue 35: a dict extra kept its padded heads; a namedtuple came back as a plain tuple."""
    import collections

    Out = collections.namedtuple("Out", "o lse")
    q, k, v, cu = K.make_varlen_batch([3, 2], heads=12)
    heads_of = lambda q: torch.arange(q.shape[1], dtype=torch.float32).repeat(q.shape[0], 1)   # noqa: E731

    _, extras = A.with_head_padding(_padded_kernel(lambda q: {"lse": heads_of(q), "step": 3}))(q, k, v, cu)
    assert extras["step"] == 3 and extras["lse"].shape == (5, 12)
    assert torch.equal(extras["lse"][0], torch.arange(12, dtype=torch.float32))

    def named(q, k, v, cu):
        return Out(K.mla_prefill_reference(q, k, v, cu), heads_of(q))

    res = A.with_head_padding(named)(q, k, v, cu)
    assert type(res) is Out and res.o.shape == (5, 12, 128) and res.lse.shape == (5, 12)
    assert torch.equal(res.o, K.mla_prefill_reference(q, k, v, cu))


def test_an_out_buffer_of_the_real_heads_is_filled_and_returned():
    """Issue 35: ``with_head_padding(...)(q, k, v, out=buf)`` failed inside the kernel, which got a
    12-head buffer for 16-head inputs. The kernel now fills a padded one; ``buf`` gets the real heads."""
    q, k, v, cu = K.make_varlen_batch([3, 2], heads=12)
    buf = torch.full((5, 12, 128), float("nan"))
    o, _ = A.with_head_padding(_padded_kernel(lambda q: torch.ones(5, q.shape[1])))(q, k, v, cu, out=buf)
    assert o is buf and torch.equal(buf, K.mla_prefill_reference(q, k, v, cu))

    def fills_only(q, k, v, cu, out):
        out.copy_(K.mla_prefill_reference(q, k, v, cu))

    buf2 = torch.zeros(5, 12, 128)
    assert A.with_head_padding(fills_only)(q, k, v, cu, out=buf2) is None
    assert torch.equal(buf2, buf)
    for bad, says in ((torch.zeros(5, 16, 128), r"out= must be a tensor \[5, 12, 128\]"),
                      (torch.zeros(5, 12, 128, dtype=torch.float64), "out= is torch.float64"), ("buf", "got str")):
        with pytest.raises(ValueError, match=says):
            A.with_head_padding(fills_only)(q, k, v, cu, out=bad)


@pytest.mark.parametrize("heads, says", [("16", "padded head count must be an int, got '16'"),
                                         (10**12, "cannot pad 12 heads to 1,000,000,000,000: no AITER MLA kernel"),
                                         (8, "cannot pad 12 heads down to 8"), (16.0, "must be an int")])
def test_pad_heads_checks_its_count_before_it_allocates(heads, says):
    """Issue 35: ``pad_heads(x, "16")`` was a TypeError and ``pad_heads(x, 10**12)`` asked for 32 TB."""
    x = torch.ones(4, 12, 8)
    with pytest.raises(ValueError, match=says):
        A.pad_heads(x, heads)


def test_numpy_head_counts_are_ints():
    import numpy as np

    x = torch.ones(4, 12, 8)
    assert A.pad_heads(x, np.int64(16)).shape == (4, 16, 8)
    assert A.padded_heads(np.int32(12)) == 16 and A.is_supported_heads(np.int64(16))
