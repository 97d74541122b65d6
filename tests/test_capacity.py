"""k3lab.model.capacity: the MLA latent KV cell and the KDA state per request, from a config.

Expected values are written out by hand from the published configs (numbers in the
comments) and checked against the plain-number functions of k3lab.model.pool_sizing,
which take those numbers directly (a second path to the same bytes)."""

import pytest

from k3lab import memory, specs
from k3lab.model import capacity as cap
from k3lab.model import pool_sizing as ps

K3 = specs.load_model("kimi-k3")
K2 = specs.load_model("kimi-k2")
DS = specs.load_model("deepseek-v3")


def test_k3_mla_cell_bf16_and_fp8():
    # Kimi K3: 24 MLA layers × (kv_lora_rank 512 + rope 64) × 2 B; the latent is not split by TP
    assert cap.kv_bytes_per_token(K3, "bf16") == 24 * 576 * 2 == 27_648
    assert cap.kv_bytes_per_token(K3, "fp8") == 24 * 576 == 13_824
    assert cap.kv_bytes_per_token(K3) == ps.mla_cell_bytes_per_token(
        num_full_attn_layers=24, kv_lora_rank=512, qk_rope_head_dim=64, kv_dtype_bytes=2)


def test_models_without_kda_cache_every_layer():
    # Kimi K2 and DeepSeek-V3: all 61 layers are MLA (512 + 64); the MTP layer is not cached
    assert cap.kv_bytes_per_token(K2, "bf16") == 61 * 576 * 2 == 70_272
    assert cap.kv_bytes_per_token(DS, "fp8") == 61 * 576
    assert cap.kda_state_bytes_per_request(K2, 8) == 0 and cap.kda_state_bytes_per_request(DS, 1) == 0


def test_kv_cell_of_a_pipeline_stage():
    # stage 1 of PP2 holds layers 47..93 (0-based 46..92): MLA layers 48, 52, ..., 92, 93 -> 13
    stage1 = range(46, 93)
    mla_in_stage = [i for i in (4 * j for j in range(1, 24)) if 47 <= i <= 93] + [93]
    assert len(mla_in_stage) == 13
    assert cap.kv_bytes_per_token(K3, "bf16", layers=stage1) == 13 * 576 * 2
    assert cap.kv_bytes_per_token(K3, "bf16", layers=range(0, 46)) == 11 * 576 * 2
    assert cap.kv_bytes_per_token(K3, "bf16", layers=[]) == 0


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16, 32])
def test_kda_state_per_request_by_hand(tp):
    # per KDA layer and rank: (96/tp) heads × 128 × 128 recurrent (fp32) + (4 − 1) × 3 × (96/tp) × 128 conv (bf16)
    h = 96 // tp
    per_layer = h * 128 * 128 * 4 + 3 * 3 * h * 128 * 2
    assert cap.kda_state_bytes_per_request(K3, tp) == 69 * per_layer
    assert cap.kda_state_bytes_per_request(K3, tp) == ps.kda_state_bytes_per_slot(
        num_linear_layers=69, num_heads=96, head_dim=128, conv_kernel_size=4, attn_tp_size=tp)


def test_kda_state_slot_at_tp8_and_dtypes():
    # 69 × (12·128·128·4 + 3·4608·2) = 56,171,520 B (53.57 MiB) per request per rank
    assert cap.kda_state_bytes_per_request(K3, 8) == 69 * (12 * 128 * 128 * 4 + 3 * 4608 * 2) == 56_171_520
    assert cap.kda_state_bytes_per_request(K3, 8, "bf16") == 69 * (12 * 128 * 128 * 2 + 3 * 4608 * 2)
    assert cap.kda_state_bytes_per_request(K3, 8, "fp32", conv_dtype="fp32") == \
        69 * (12 * 128 * 128 * 4 + 3 * 4608 * 4)
    # stage 0 of PP2 (layers 1..46): 46 layers, 11 of them MLA -> 35 KDA layers
    assert cap.kda_state_bytes_per_request(K3, 8, layers=range(0, 46)) == 35 * (12 * 128 * 128 * 4 + 3 * 4608 * 2)


@pytest.mark.parametrize("call, match", [
    (lambda: cap.kv_bytes_per_token(K3, "int3"), "kv_dtype must be one of bf16, fp8, got 'int3'"),
    (lambda: cap.kv_bytes_per_token(K3, "fp32"), "kv_dtype"),
    (lambda: cap.kda_state_bytes_per_request(K3, 8, "fp8"), "state_dtype must be one of fp32, bf16"),
    (lambda: cap.kda_state_bytes_per_request(K3, 8, conv_dtype="fp8"), "conv_dtype"),
    (lambda: cap.kda_state_bytes_per_request(K3, 5), "tp=5 does not divide the 96 KDA heads"),
    (lambda: cap.kda_state_bytes_per_request(K3, 64), "tp=64 does not divide"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- what a plan uses


def test_plan_uses_the_cell_and_slot_of_its_layout():
    p8 = memory.plan(K3, "b300", 8, 8)
    assert (p8.kv_bytes_per_token, p8.kda_state_bytes_per_request) == (27_648, 56_171_520)
    p16 = memory.plan(K3, "b200", 16, 16)
    assert p16.kda_state_bytes_per_request == 69 * (6 * 128 * 128 * 4 + 3 * 3 * 6 * 128 * 2)
    # DP attention: attention-TP 1, every rank keeps all 96 KDA heads of its own requests
    dp = memory.plan(K3, "b300", 8, 8, variants=["dp-attention"], context_tokens=131_072)
    assert dp.kda_state_bytes_per_request == 69 * (96 * 128 * 128 * 4 + 3 * 3 * 96 * 128 * 2)
    fp8 = memory.plan(K3, "mi355x", 8, 8, kv_dtype="fp8", variants=["aiter-k3-opt"])
    assert fp8.kv_bytes_per_token == 13_824


def test_plan_with_dspark_adds_the_draft_kv():
    # RadixArk/Kimi-K3-DSpark at TP8: 16/8 = 2 KV heads × (64 + 64) × 5 layers × 2 B = 2,560 B/token
    p = memory.plan(K3, "mi355x", 8, 8, variants=["aiter-k3-opt", "dspark"])
    assert p.kv_bytes_per_token == 27_648 + 2_560
    assert p.max_running_requests <= 48  # DSPARK's default --max-running-requests
    with pytest.raises(ValueError, match="no DSpark draft"):
        memory.plan(DS, "h200", 8, 8, variants=["dspark"])


def test_pipeline_plan_binds_on_the_stage_that_runs_out_first():
    p = memory.plan(K3, "b200", 16, 8, pp=2)
    assert p.fits and p.pp == 2 and len(p.stage_weights_bytes) == 2
    # stage 1 (layers 47..93) holds lm_head, 13 MLA and 34 KDA layers: more weights and a
    # larger cell than stage 0 (11 MLA, 35 KDA), so it runs out of KV first and binds
    s0, s1 = p.stage_weights_bytes
    assert s1 > s0
    assert p.kv_bytes_per_token == 13 * 576 * 2
    # but every stage charges the state slot of the stage with the MOST KDA layers (stage 0's
    # 35; sglang 0.5.23 _handle_max_mamba_cache, checked in tests/sglang/test_sglang_kv_configurator.py)
    assert p.kda_state_bytes_per_request == 35 * (12 * 128 * 128 * 4 + 3 * 4608 * 2)
    assert p.page_size == 64 and p.max_kv_tokens % 64 == 0  # B200 (SM100): trtllm_mla, 64-token pages
