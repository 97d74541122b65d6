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


def test_ideal_params_give_the_roofline_step_at_the_same_settings():
    """With no fixed cost and full efficiency, a decode step is the roofline's, read the same way."""
    cfg = CFG
    terms = decode_terms(cfg, B300, 16, 1224, kv_dtype="fp8", state_dtype="bf16", experts_as="checkpoint")
    g = B300.gpu_spec
    t_ar, t_send = roofline.collective_s(cfg, B300, terms)
    by_hand = max(terms.bytes_total / (g.hbm_bw_tb_s * 1e12),
                  terms.flops_dense / (g.dense_bf16_tflops * 1e12) + terms.flops_experts / (g.dense_fp8_tflops * 1e12)) + t_ar + t_send
    assert M.pass_seconds(terms, cfg, B300, M.IDEAL) == pytest.approx(by_hand)
    step = roofline.decode_step(B300, 16)
    assert terms.bytes_total == pytest.approx(step.bytes_total)


def test_each_parameter_moves_its_own_term():
    terms = decode_terms(CFG, B300, 1, 1224)
    t_ar, _ = roofline.collective_s(CFG, B300, terms)
    base = M.pass_seconds(terms, CFG, B300, M.FamilyParams("x", 1.0, 1.0, 0.0)) - t_ar
    half = M.pass_seconds(terms, CFG, B300, M.FamilyParams("x", 0.5, 1.0, 0.0)) - t_ar
    assert half == pytest.approx(2 * base)                                  # memory-bound at c1
    fixed = M.pass_seconds(terms, CFG, B300, M.FamilyParams("x", 1.0, 1.0, 10.0)) - t_ar
    assert fixed - base == pytest.approx(N_LAYERS * 10e-6)


def test_benchmark_cohort_equations():
    p = M.FamilyParams("x", 0.8, 0.3, 40.0)
    w = M.Workload(8192, 1024, 16)
    t = M.benchmark(CFG, B300, w, p)
    step = M.decode_step_seconds(CFG, B300, 16, 8192 + 512, p)
    burst = M.prefill_seconds(CFG, B300, 16, 8192, p)
    n = 16 * 8192 // 16384                                                   # 8 chunks
    assert t.step_s == pytest.approx(step)
    assert t.cycle_s == pytest.approx(burst + 1024 * step)
    assert t.ttft_s == pytest.approx(burst * (n + 1) / (2 * n))
    assert t.tpot_s == pytest.approx((t.cycle_s - t.ttft_s) / 1023)
    assert t.output_tok_s == pytest.approx(16 * 1024 / t.cycle_s)


def test_single_request_ttft_is_its_own_prefill():
    p = M.FamilyParams("x", 0.8, 0.3, 40.0)
    t = M.benchmark(CFG, B300, M.Workload(1024, 100, 1), p)
    assert t.ttft_s == pytest.approx(M.prefill_seconds(CFG, B300, 1, 1024, p))


def test_speculation_divides_the_steps_by_the_acceptance_length():
    p = M.FamilyParams("x", 0.8, 0.3, 40.0)
    w = M.Workload(1024, 400, 4)
    s = M.benchmark(CFG, B300, w, p, M.Spec("dspark", 4.0))
    step = M.decode_step_seconds(CFG, B300, 4, 1224, p, M.Spec("dspark", 4.0))
    assert s.cycle_s == pytest.approx(M.prefill_seconds(CFG, B300, 4, 1024, p) + 400 / 4.0 * step)


def test_replicas_share_the_concurrency():
    p = M.FamilyParams("x", 0.8, 0.3, 40.0)
    two = M.benchmark(CFG, Deployment("b300", 16, 8), M.Workload(1024, 400, 32), p)
    one = M.benchmark(CFG, B300, M.Workload(1024, 400, 16), p)
    assert two.output_tok_s == pytest.approx(2 * one.output_tok_s)


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
