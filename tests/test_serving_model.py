"""The serving model's terms and equations on hand-computed cases (k3lab.model.step,
k3lab.serving.model). Expected values are written out from Kimi K3's published config and the
formulas in the modules' docstrings, not taken from the code under test."""

import math

import pytest

from k3lab import data, roofline
from k3lab.model.sharding import Setting, setting_for
from k3lab.model.step import decode_terms, draft_terms, prefill_terms
from k3lab.serving import model as M
from k3lab.specs import Deployment, load_model

CFG = load_model("kimi-k3")
# Kimi K3 by hand (data/model/kimi_k3_config.json): 93 layers = 24 MLA + 69 KDA, layer 0 dense,
# 896 experts top-16, latent MoE 3584 wide with expert intermediate 3072, hidden 7168.
N_LAYERS, N_MLA, N_KDA, N_MOE = 93, 24, 69, 92
EXPERT_BYTES = 3 * 3072 * 3584 * 17 // 32  # gate, up, down in MXFP4: 17 bytes per 32 values
B300 = Deployment("b300", 8, 8)
MI355X = Deployment("mi355x", 8, 8)


def test_one_expert_is_three_mxfp4_matrices():
    from k3lab.model.inventory import routed_expert_bytes

    assert routed_expert_bytes(CFG) == EXPERT_BYTES == 17_547_264


def test_decode_terms_single_request_by_hand():
    t = decode_terms(CFG, B300, 1, 1224, experts_as="checkpoint")
    assert t.kind == "decode" and t.tokens == 1 and t.layers == N_LAYERS and t.passes == 1
    assert t.experts_touched_per_layer == pytest.approx(16)
    assert t.bytes_experts == pytest.approx(N_MOE * 16 * EXPERT_BYTES / 8)
    assert t.bytes_kv == pytest.approx(1224 * N_MLA * 576 * 2)            # bf16 latent, not split by TP
    slot = N_KDA * (12 * 128 * 128 * 4 + 3 * 3 * 12 * 128 * 2)            # fp32 state + bf16 conv, 12 heads/rank
    assert t.bytes_state == pytest.approx(2 * slot)                        # read and written once
    assert t.comm_tokens == 1 and t.pp_sends == 0 and t.layer_passes == N_LAYERS


def test_decode_terms_flops_split_experts_from_the_rest():
    t = decode_terms(CFG, B300, 4, 1000)
    from k3lab.model.inventory import count_params

    p = count_params(CFG)
    experts = p.active_breakdown["routed_experts"]
    assert t.flops_experts == pytest.approx(4 * 2 * experts / 8)
    attn = N_MLA * 12 * 2 * 1000 * (2 * 512 + 64)                         # absorbed MLA, per query row
    assert t.flops_dense == pytest.approx(4 * (2 * (p.active - experts) / 8 + attn))


def test_rocm_padding_makes_each_expert_a_third_heavier_to_read():
    # sglang 0.5.23 on ROCm aligns the per-rank expert intermediate 384 -> 512 (gate/up/down
    # weights and their scales grow by 512/384); SGLANG_AITER_K3_OPT=1 keeps 384.
    pad = decode_terms(CFG, MI355X, 1, 1000, setting=setting_for("amd", []))
    opt = decode_terms(CFG, MI355X, 1, 1000, setting=setting_for("amd", ["aiter-k3-opt"]))
    assert pad.bytes_experts / opt.bytes_experts == pytest.approx(512 / 384, rel=2e-3)
    assert pad.bytes_weights == opt.bytes_weights


def test_dcp_and_dp_attention_divide_the_kv_read():
    plain = decode_terms(CFG, B300, 64, 2000)
    dcp = decode_terms(CFG, Deployment("b300", 8, 8, dcp=8), 64, 2000)
    dpa = decode_terms(CFG, B300, 64, 2000, setting=Setting(platform="cuda", dp_attention=True))
    assert dcp.bytes_kv == pytest.approx(plain.bytes_kv / 8)
    assert dpa.bytes_kv == pytest.approx(plain.bytes_kv / 8)


def test_verify_step_runs_the_draft_block_plus_one_rows():
    t = decode_terms(CFG, B300, 3, 500, rows_per_request=8)
    assert t.kind == "verify" and t.tokens == 24 and t.comm_tokens == 24
    assert t.experts_touched_per_layer == pytest.approx(896 * (1 - (1 - 16 / 896) ** 24))


def test_prefill_terms_pack_prompts_into_chunks_by_hand():
    t = prefill_terms(CFG, B300, 3, 8192, 16384)
    assert t.passes == 2 and t.tokens == 3 * 8192 and t.comm_tokens == 3 * 8192 / 2
    causal = 8192 * 8193 // 2
    attn = 3 * N_MLA * 2 * 12 * (192 + 128) * causal
    kda = 3 * 8192 * N_KDA * 2 * 2 * 12 * 128 * 128
    from k3lab.model.inventory import count_params

    p = count_params(CFG)
    experts = p.active_breakdown["routed_experts"]
    assert t.flops_dense == pytest.approx(3 * 8192 * 2 * (p.active - experts) / 8 + attn + kda)
    assert t.flops_experts == pytest.approx(3 * 8192 * 2 * experts / 8)
    # 12,288 tokens a chunk touch every expert
    assert t.experts_touched_per_layer == pytest.approx(896, rel=1e-6)


def test_draft_pass_reads_the_draft_once_per_step():
    d = data.load("dspark_draft")
    t = draft_terms(CFG, B300, 2, 7, 1000, d)
    assert t.layers == 5 and t.tokens == 14 and t.bytes_experts == 0
    # its GQA KV: 16 KV heads / 8 ranks, K and V of 64, bf16, 5 layers, per context token
    assert t.bytes_kv == pytest.approx(2 * 1000 * 5 * 2 * 2 * 64 * 2)


def _ideal_by_hand(terms, g, t_comm):
    """A decode pass under ideal kernels, written out: the GEMMs at their roofline, then the
    attention kernel at its own, then the collectives."""
    bw, bf16, fp8 = g.hbm_bw_tb_s * 1e12, g.dense_bf16_tflops * 1e12, g.dense_fp8_tflops * 1e12
    gemm = max((terms.bytes_weights + terms.bytes_experts) / bw,
               (terms.flops_dense - terms.flops_attention) / bf16 + terms.flops_experts / fp8)
    attn = max((terms.bytes_kv + terms.bytes_state) / bw, terms.flops_attention / bf16)
    return gemm + attn + t_comm


def test_ideal_params_run_gemms_and_attention_each_at_its_roofline():
    """With no fixed cost and full efficiency a decode pass is the GEMMs' roofline plus the
    attention kernel's: never faster than the roofline of all bytes and FLOPs at once (which
    stays an upper bound on throughput), and equal to it when one kernel is negligible."""
    terms = decode_terms(CFG, B300, 16, 1224, kv_dtype="fp8", state_dtype="bf16", experts_as="checkpoint")
    g = B300.gpu_spec
    t_ar, t_send = roofline.collective_s(CFG, B300, terms)
    got = M.pass_seconds(terms, CFG, B300, M.IDEAL)
    assert got == pytest.approx(_ideal_by_hand(terms, g, t_ar + t_send))
    joint = max(terms.bytes_total / (g.hbm_bw_tb_s * 1e12),
                terms.flops_dense / (g.dense_bf16_tflops * 1e12) + terms.flops_experts / (g.dense_fp8_tflops * 1e12))
    assert got >= joint + t_ar + t_send
    assert got <= joint + t_ar + t_send + (terms.bytes_kv + terms.bytes_state) / (g.hbm_bw_tb_s * 1e12) + 1e-12
    step = roofline.decode_step(B300, 16)
    assert terms.bytes_total == pytest.approx(step.bytes_total)


def test_decode_attention_flops_are_the_absorbed_mla_by_hand():
    """Of a decode step's dense FLOPs, the attention's: per MLA layer, head (96 / 8 = 12 per rank)
    and cached token, 2·(512 + 64 + 512) (QKᵀ over the 576-wide latent, PV over 512)."""
    t = decode_terms(CFG, B300, 3, 1000)
    assert t.flops_attention == pytest.approx(3 * N_MLA * 12 * 2 * 1000 * (2 * 512 + 64))
    v = decode_terms(CFG, B300, 3, 1000, rows_per_request=8)
    assert v.flops_attention == pytest.approx(8 * t.flops_attention)


def test_each_parameter_moves_its_own_term():
    terms = decode_terms(CFG, B300, 1, 1224)
    t_ar, _ = roofline.collective_s(CFG, B300, terms)
    g = B300.gpu_spec
    gemm = (terms.bytes_weights + terms.bytes_experts) / (g.hbm_bw_tb_s * 1e12)   # memory-bound at c1
    kv = (terms.bytes_kv + terms.bytes_state) / (g.hbm_bw_tb_s * 1e12)
    base = M.pass_seconds(terms, CFG, B300, M.FamilyParams("x", 1.0, 1.0, 0.0)) - t_ar
    assert base == pytest.approx(gemm + kv)
    half = M.pass_seconds(terms, CFG, B300, M.FamilyParams("x", 0.5, 1.0, 0.0)) - t_ar
    assert half == pytest.approx(2 * gemm + kv)
    kv_q = M.pass_seconds(terms, CFG, B300, M.FamilyParams("x", 1.0, 1.0, 0.0, kv_efficiency=0.25)) - t_ar
    assert kv_q == pytest.approx(gemm + 4 * kv)
    fixed = M.pass_seconds(terms, CFG, B300, M.FamilyParams("x", 1.0, 1.0, 10.0)) - t_ar
    assert fixed - base == pytest.approx(N_LAYERS * 10e-6)


def test_chunk_layout_packs_prompts_first_come_first_served():
    # 3 prompts of 10 tokens in chunks of 16: [p0 0-10, p1 0-6], [p1 6-10, p2 0-10, ...]
    chunks, last = M.chunk_layout(3, 10, 16)
    assert chunks == [[(0, 10), (0, 6)], [(6, 4), (0, 10)]]
    assert last == [0, 1, 1]
    chunks, last = M.chunk_layout(1, 40, 16)                                  # one long prompt: 16 + 16 + 8
    assert chunks == [[(0, 16)], [(16, 16)], [(32, 8)]] and last == [2]


def test_prefill_chunk_attention_over_its_prefix_by_hand():
    """A chunk continuing a prompt attends over the prompt's earlier tokens (causal, bottom-right):
    query i of n sees prefix + i + 1 keys; MHA form 2·(192 + 128) FLOPs per pair and head; the
    Triton fallback's absorbed form 2·(576 + 512)."""
    p, n = 16384, 16384
    pairs = n * p + n * (n + 1) // 2
    t = prefill_terms(CFG, B300, 1, n, 16384, segments=((p, n),))
    assert t.flops_attention == pytest.approx(N_MLA * 12 * 2 * (192 + 128) * pairs)
    a = prefill_terms(CFG, B300, 1, n, 16384, segments=((p, n),), absorbed_with_prefix=True)
    assert a.flops_attention == pytest.approx(N_MLA * 12 * 2 * (576 + 512) * pairs)
    first = prefill_terms(CFG, B300, 1, n, 16384, segments=((0, n),), absorbed_with_prefix=True)
    assert first.flops_attention == pytest.approx(N_MLA * 12 * 2 * (192 + 128) * (n * (n + 1) // 2))


P = M.FamilyParams("x", 0.8, 0.3, 40.0, kv_efficiency=0.5, prefill_attention_efficiency=0.4,
                   fallback_attention_efficiency=0.1, request_overhead_ms=30.0)


def _chunks(prompts, tokens, dep=B300, kernel="fast"):
    """Seconds of each prefill chunk of a cohort, from prefill_terms and pass_seconds directly."""
    chunks, last = M.chunk_layout(prompts, tokens, M.chunk_tokens(dep.gpu_spec))
    secs = []
    for segs in chunks:
        t = prefill_terms(CFG, dep, 1, sum(n for _, n in segs), M.chunk_tokens(dep.gpu_spec), segments=tuple(segs),
                          absorbed_with_prefix=kernel == "fallback")
        c = M.pass_cost(t, CFG, dep, prefill=True)
        secs.append(c.seconds(P, fallback=kernel == "fallback"))
    return secs, last


def test_benchmark_cohort_equations():
    w = M.Workload(8192, 1024, 16)
    t = M.benchmark(CFG, B300, w, P)
    step = M.decode_step_seconds(CFG, B300, 16, 8192 + 512, P)
    secs, last = _chunks(16, 8192)
    assert len(secs) == 8 and last == [i // 2 for i in range(16)]              # two 8k prompts a 16k chunk
    ends = [sum(secs[:k + 1]) for k in range(8)]
    req = 30e-3
    assert t.step_s == pytest.approx(step)
    assert t.cycle_s == pytest.approx(req + sum(secs) + 1023 * step)
    assert t.ttft_s == pytest.approx(req + sum(ends[k] for k in last) / 16)
    assert t.tpot_s == pytest.approx((t.cycle_s - t.ttft_s) / 1023)
    assert t.output_tok_s == pytest.approx(16 * 1024 / t.cycle_s)


def test_one_long_prompt_waits_for_all_its_chunks_and_its_tpot_is_the_step():
    """At concurrency 1 the TTFT is the request overhead plus every chunk of the prompt, and TPOT
    is the decode step alone: no prefill leaks into it."""
    t = M.benchmark(CFG, MI355X, M.Workload(131072, 256, 1), P)
    secs, last = _chunks(1, 131072, MI355X)
    assert len(secs) == 8 and last == [7]
    assert t.ttft_s == pytest.approx(30e-3 + sum(secs))
    assert t.tpot_s == pytest.approx(t.step_s)
    assert t.prefill_s == pytest.approx(sum(secs))


def test_the_fallback_kernel_slows_long_prompts_more_than_short_ones():
    fast = M.benchmark(CFG, MI355X, M.Workload(131072, 2, 1), P)
    slow = M.benchmark(CFG, MI355X, M.Workload(131072, 2, 1), P, prefill_attention="fallback")
    secs, _ = _chunks(1, 131072, MI355X, "fallback")
    assert slow.ttft_s == pytest.approx(30e-3 + sum(secs))
    short = [M.benchmark(CFG, MI355X, M.Workload(1024, 2, 1), P, prefill_attention=k).ttft_s for k in ("fast", "fallback")]
    assert slow.ttft_s / fast.ttft_s > short[1] / short[0] > 1


def test_speculation_divides_the_steps_by_the_acceptance_length():
    w = M.Workload(1024, 400, 4)
    s = M.benchmark(CFG, B300, w, P, M.Spec("dspark", 4.0))
    step = M.decode_step_seconds(CFG, B300, 4, 1224, P, M.Spec("dspark", 4.0))
    secs, _ = _chunks(4, 1024)
    assert s.cycle_s == pytest.approx(30e-3 + sum(secs) + 399 / 4.0 * step)


def test_replicas_share_the_concurrency():
    two = M.benchmark(CFG, Deployment("b300", 16, 8), M.Workload(1024, 400, 32), P)
    one = M.benchmark(CFG, B300, M.Workload(1024, 400, 16), P)
    assert two.output_tok_s == pytest.approx(2 * one.output_tok_s)


def test_fewer_requests_than_replicas_leave_replicas_idle():
    """One request cannot run on two replicas (issue 28): 16 GPUs as two TP8 replicas serve one
    request exactly as 8 GPUs do, and 64 requests over 100 replicas never beat 64 single streams."""
    one = M.benchmark(CFG, B300, M.Workload(1024, 400, 1), P)
    two = M.benchmark(CFG, Deployment("b300", 16, 8), M.Workload(1024, 400, 1), P)
    assert two.output_tok_s == pytest.approx(one.output_tok_s)
    many = M.benchmark(CFG, Deployment("b300", 800, 8), M.Workload(1024, 400, 64), P)
    assert many.output_tok_s == pytest.approx(64 * one.output_tok_s)


def test_chunk_size_follows_sglangs_memory_rule():
    assert M.chunk_tokens(B300.gpu_spec) == 16384                          # 256 GiB
    assert M.chunk_tokens(Deployment("h200", 8, 8).gpu_spec) == 8192       # 131 GiB < 160 GiB


@pytest.mark.parametrize("kw, msg", [
    ({"algorithm": "eagle"}, "unknown speculative algorithm"),
    ({"algorithm": "dspark", "accept_len": 0.5}, r"accept_len must be in \[1, 8\]"),
    ({"algorithm": "dspark", "accept_len": 9}, r"accept_len must be in \[1, 8\]"),
    ({"algorithm": "none", "accept_len": 2.0}, "needs a speculative algorithm"),
    ({"algorithm": "dspark", "accept_len": math.nan}, "finite"),
])
def test_bad_spec_is_one_clear_error(kw, msg):
    with pytest.raises(ValueError, match=msg):
        M.Spec(**kw)


@pytest.mark.parametrize("field", ["input_len", "output_len", "concurrency"])
def test_workload_counts_must_be_positive(field):
    kw = {"input_len": 10, "output_len": 10, "concurrency": 1, field: 0}
    with pytest.raises(ValueError, match=f"{field} must be a positive integer"):
        M.Workload(**kw)
