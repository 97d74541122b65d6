"""k3lab.model.pool_sizing: sglang 0.5.23's start-up pool sizing.

Every expected value is worked out by hand in this file (small round numbers, or the
Kimi K3 config numbers written out), never taken from the code under test.
"""

import math

import pytest

from k3lab.model import pool_sizing as ps

GiB = 2**30
MiB = 2**20


# --------------------------------------------------------------------------- cell and slot sizes


def test_mla_cell_small_and_k3():
    # (4 + 2) latent × 2 layers × 2 bytes
    assert ps.mla_cell_bytes_per_token(num_full_attn_layers=2, kv_lora_rank=4,
                                       qk_rope_head_dim=2, kv_dtype_bytes=2) == 24
    # Kimi K3: 24 MLA layers × (512 + 64) × 2 B (bf16) / × 1 B (fp8); not divided by TP
    assert ps.mla_cell_bytes_per_token(num_full_attn_layers=24, kv_lora_rank=512,
                                       qk_rope_head_dim=64, kv_dtype_bytes=2) == 27_648
    assert ps.mla_cell_bytes_per_token(num_full_attn_layers=24, kv_lora_rank=512,
                                       qk_rope_head_dim=64, kv_dtype_bytes=1) == 13_824


def test_draft_cell_replicates_heads_below_tp():
    # 2 KV heads over tp=4 -> each rank keeps one head: 1 × (4 + 4) × 3 layers × 2 B
    assert ps.dflash_draft_cell_bytes_per_token(num_kv_heads=2, head_dim=4, v_head_dim=4,
                                                num_layers=3, attn_tp_size=4,
                                                kv_dtype_bytes=2) == 48
    # tp=1 keeps both heads
    assert ps.dflash_draft_cell_bytes_per_token(num_kv_heads=2, head_dim=4, v_head_dim=4,
                                                num_layers=3, attn_tp_size=1,
                                                kv_dtype_bytes=2) == 96
    # RadixArk/Kimi-K3-DSpark at TP8: 16/8 = 2 heads × (64 + 64) × 5 layers × 2 B
    assert ps.dflash_draft_cell_bytes_per_token(num_kv_heads=16, head_dim=64, v_head_dim=64,
                                                num_layers=5, attn_tp_size=8,
                                                kv_dtype_bytes=2) == 2_560


def test_kda_slot_small_and_k3():
    # heads/tp = 2; recurrent 2·2·2·4 = 32; conv (3 − 1)·3·2·2·2 = 48; × 2 layers
    assert ps.kda_state_bytes_per_slot(num_linear_layers=2, num_heads=4, head_dim=2,
                                       conv_kernel_size=3, attn_tp_size=2) == 160
    # Kimi K3 at TP8: 69 × (12·128·128·4 + 3·3·12·128·2) = 69 × (786,432 + 27,648)
    assert ps.kda_state_bytes_per_slot(num_linear_layers=69, num_heads=96, head_dim=128,
                                       conv_kernel_size=4, attn_tp_size=8) == 56_171_520
    # bf16 SSM state halves the recurrent part: 69 × (393,216 + 27,648)
    assert ps.kda_state_bytes_per_slot(num_linear_layers=69, num_heads=96, head_dim=128,
                                       conv_kernel_size=4, attn_tp_size=8,
                                       ssm_dtype_bytes=2) == 29_039_616


@pytest.mark.parametrize("kwargs, slots", [
    ({}, 5),                                                   # K3 default: extra_buffer + overlap
    ({"strategy": "extra_buffer_lazy"}, 4),
    ({"strategy": "no_buffer"}, 3),
    ({"radix_cache": False}, 1),
    ({"overlap_schedule": False}, 4),
    ({"skip_decode_lock": True}, 4),
    ({"strategy": "no_buffer", "skip_decode_lock": True}, 3),
])
def test_mamba_slots_per_request(kwargs, slots):
    assert ps.mamba_slots_per_request(**kwargs) == slots


# --------------------------------------------------------------------------- mem_fraction_static


def test_default_mem_fraction_b300_k3():
    # reserve = 512 + 1.5·16384 + 8/8·1024 + 2·512 (decode graphs) = 27,136 MiB
    # (275,040 − 27,136) / 275,040 = 0.90134 → 0.901
    assert ps.default_mem_fraction_static(gpu_memory_mib=275_040, tp_size=8) == 0.901
    # K3 vision tower 27 × 1024: ratio 27/24 = 1.125 → 0.95 × (1 − 0.0125) = 0.938125
    got = ps.default_mem_fraction_static(gpu_memory_mib=275_040, tp_size=8,
                                         vision_num_layers=27, vision_hidden_size=1024)
    assert got == pytest.approx(0.901 * 0.938125, abs=1e-12)


def test_default_mem_fraction_branches():
    # T4-class 16 GiB, tp1: chunk 2048, max_bs 8 → 512 + 3072 + 128 + 16 = 3,728 MiB
    assert ps.default_mem_fraction_static(gpu_memory_mib=16_384, tp_size=1) == 0.772
    # H100 80 GB, tp1, no graphs: 512 + 12288 + 128 = 12,928 → 0.84149 → 0.841
    assert ps.default_mem_fraction_static(gpu_memory_mib=81_559, tp_size=1,
                                          decode_cuda_graph=False) == 0.841
    # a small chunk hits the 10 GiB floor on a > 60 GiB GPU: (81,559 − 10,240)/81,559
    assert ps.default_mem_fraction_static(gpu_memory_mib=81_559, tp_size=1,
                                          chunked_prefill_size=2048,
                                          decode_cuda_graph=False) == 0.874
    # --max-running-requests 48 caps the default decode max_bs: 512 + 24576 + 1024 + 96
    assert ps.default_mem_fraction_static(gpu_memory_mib=275_040, tp_size=8,
                                          max_running_requests=48) == 0.905
    # an MLA prefill graph adds 1.5 GiB: 27,136 + 1,536 = 28,672 → 0.89575 → 0.896
    assert ps.default_mem_fraction_static(gpu_memory_mib=275_040, tp_size=8,
                                          prefill_cuda_graph=True) == 0.896


def test_effective_mem_fraction_aiter_long_context():
    assert ps.effective_mem_fraction_static(0.9, attention_backend="aiter",
                                            context_len=1_048_576) == pytest.approx(0.765)
    assert ps.effective_mem_fraction_static(0.9, attention_backend="aiter",
                                            context_len=8192) == 0.9
    assert ps.effective_mem_fraction_static(0.9, attention_backend="triton",
                                            context_len=1_048_576) == 0.9
    assert ps.effective_mem_fraction_static(0.9, attention_backend="aiter",
                                            context_len=1_048_576, honor_explicit=True) == 0.9


# --------------------------------------------------------------------------- budget, state pool, tokens


def test_profile_rest_memory():
    # 30 GiB free after load, minus 100 GiB × (1 − 0.9) slack
    assert ps.profile_rest_memory_gib(pre_model_load_free_bytes=100 * GiB,
                                      post_load_free_bytes=30 * GiB,
                                      mem_fraction_static=0.9) == pytest.approx(20.0)
    assert ps.profile_rest_memory_gib(pre_model_load_free_bytes=100 * GiB,
                                      post_load_free_bytes=30 * GiB, mem_fraction_static=0.9,
                                      mm_reserve_gib=0.5) == pytest.approx(19.5)


def test_multimodal_reserve():
    assert ps.multimodal_reserve_gib(is_multimodal=False) == 0.0
    assert ps.multimodal_reserve_gib(is_multimodal=True) == 100 / 1024
    assert ps.multimodal_reserve_gib(is_multimodal=True,
                                     mm_feature_transport="cuda_ipc") == (100 + 1024) / 1024


def test_split_state_pool_ratio_branch():
    # r = 1 → half of 20 GiB = 10 GiB; slot 3 GiB → K = (10 − 3) // 3 = 2;
    # state = (2 + 1) × 3 = 9 GiB; 20 − 9 = 11 GiB left
    s = ps.split_state_pool(20.0, state_bytes_per_slot=3 * GiB, mamba_full_memory_ratio=1.0)
    assert (s.max_mamba_cache_size, s.state_pool_bytes, s.branch) == (2, 9 * GiB, "ratio")
    assert s.rest_after_gib == pytest.approx(11.0)
    assert s.spec_intermediate_bytes == 0
    # r = 3 → 3/4 of 16 GiB = 12 GiB; slot 1 GiB → K = 11; state 12 GiB; 4 left
    s = ps.split_state_pool(16.0, state_bytes_per_slot=GiB, mamba_full_memory_ratio=3.0)
    assert s.max_mamba_cache_size == 11 and s.rest_after_gib == pytest.approx(4.0)


def test_split_state_pool_with_speculation():
    # budget 20 GiB (r = 1 of 40), slot 1 GiB, D = 3, ratio 2:
    # K = (20 − 1·4) // (1·(1 + 3/2)) = 16 // 2.5 = 6
    # capped = min(10, 6 // 2) = 3 → verify reserve 1 × (3 + 1) × 3 = 12 GiB
    # rest 40 − 12 − (6 + 1) = 21 GiB
    s = ps.split_state_pool(40.0, state_bytes_per_slot=GiB, mamba_full_memory_ratio=1.0,
                            slots_per_request=2, max_running_requests=10,
                            speculative_num_draft_tokens=3)
    assert s.max_mamba_cache_size == 6
    assert s.spec_intermediate_bytes == 12 * GiB
    assert s.rest_after_gib == pytest.approx(21.0)


def test_split_state_pool_explicit_and_no_radix_branches():
    # explicit 10 slots, D = 2, ratio 5, max_running 4: capped = min(4, 10 // 5) = 2
    # reserve 1 × 3 × 2 = 6 GiB; state 11 GiB; 30 − 6 − 11 = 13
    s = ps.split_state_pool(30.0, state_bytes_per_slot=GiB, max_mamba_cache_size=10,
                            max_running_requests=4, speculative_num_draft_tokens=2)
    assert (s.max_mamba_cache_size, s.branch) == (10, "explicit")
    assert s.spec_intermediate_bytes == 6 * GiB and s.rest_after_gib == pytest.approx(13.0)
    # radix cache off + --max-running-requests 7: 7 slots, reserve 1 × 8 × 2 = 16 GiB
    s = ps.split_state_pool(30.0, state_bytes_per_slot=GiB, radix_cache=False,
                            slots_per_request=1, max_running_requests=7,
                            speculative_num_draft_tokens=2)
    assert (s.max_mamba_cache_size, s.branch) == (7, "from_max_running_requests")
    assert s.spec_intermediate_bytes == 16 * GiB
    assert s.rest_after_gib == pytest.approx(30 - 16 - 8)
    # radix cache off but no --max-running-requests: back to the ratio branch
    s = ps.split_state_pool(20.0, state_bytes_per_slot=GiB, mamba_full_memory_ratio=1.0,
                            radix_cache=False, slots_per_request=1)
    assert (s.max_mamba_cache_size, s.branch) == (9, "ratio")


def test_tokens_floor_to_page_and_cap():
    assert ps.max_total_num_tokens_from_budget(1000, cell_bytes_per_token=7) == 142
    assert ps.max_total_num_tokens_from_budget(1000, cell_bytes_per_token=7, page_size=4) == 140
    assert ps.max_total_num_tokens_from_budget(1000, cell_bytes_per_token=7, page_size=4,
                                               max_total_tokens=99) == 96
    assert ps.max_total_num_tokens_from_budget(1000, cell_bytes_per_token=7, page_size=4,
                                               max_total_tokens=500) == 140


@pytest.mark.parametrize("tokens, kwargs, expected", [
    (1_000_000, {"context_len": 1_048_576}, 2048),           # 488 → clamped up to 2048
    (3_000, {"context_len": 1_048_576}, 1500),               # tokens // 2 binds
    (10_000_000, {"context_len": 1000}, 4096),               # 5,120,000 → clamped to 4096
    (1_000_000, {"context_len": 1_048_576, "max_mamba_cache_size": 609,
                 "slots_per_request": 5}, 121),              # the state pool binds
    (1_000_000, {"context_len": 1_048_576, "max_running_requests": 48}, 48),
    (1_000_000, {"context_len": 1_048_576, "max_running_requests": 48, "attn_dp_size": 2}, 24),
    (50, {"context_len": 1_048_576, "max_running_requests": 48}, 25),
])
def test_resolve_max_running_requests(tokens, kwargs, expected):
    assert ps.resolve_max_running_requests(tokens, **kwargs) == expected


def test_size_pools_end_to_end_small():
    # rest = 40 − 100·0.1 = 30 GiB; r = 1 → 15 GiB budget, slot 1 GiB → K = 14,
    # state 15 GiB; 15 GiB / 1 MiB per token = 15,360 tokens (a multiple of 64);
    # max_running = min(clamp(int(15360/4096·512)=1920 → 2048), 7680, 14 // 5 = 2) = 2
    r = ps.size_pools(pre_model_load_free_bytes=100 * GiB, post_load_free_bytes=40 * GiB,
                      mem_fraction_static=0.9, cell_bytes_per_token=MiB, context_len=4096,
                      state_bytes_per_slot=GiB, page_size=64, mamba_full_memory_ratio=1.0)
    assert r.max_mamba_cache_size == 14
    assert r.state_pool_bytes == 15 * GiB
    assert r.max_total_num_tokens == 15_360
    assert r.max_running_requests == 2
    assert r.kv_pool_bytes == (15_360 + 64) * MiB
    # the same budget without linear attention: all 30 GiB to KV;
    # max_running = int(30720 / 4096 · 512) = 3840 (inside [2048, 4096], below 15,360)
    r = ps.size_pools(pre_model_load_free_bytes=100 * GiB, post_load_free_bytes=40 * GiB,
                      mem_fraction_static=0.9, cell_bytes_per_token=MiB, context_len=4096)
    assert (r.max_total_num_tokens, r.max_mamba_cache_size) == (30_720, 0)
    assert r.max_running_requests == 3840


def test_size_pools_k3_mi355x_second_implementation():
    """Kimi K3 on one MI355X rank, TP8, mem-fraction 0.9, bf16 KV, re-derived inline."""
    cap = int(287.98 * GiB)            # torch-reported MI355X capacity
    weights = 205_849_549_296          # k3lab weights_bytes_per_gpu(kimi-k3, 8)
    slot = 69 * (12 * 128 * 128 * 4 + 3 * 3 * 12 * 128 * 2)
    cell = 24 * 576 * 2
    # sglang's order of float operations, written out
    rest = (cap - weights) / 2**30 - cap / 2**30 * (1 - 0.9) - 100 / 1024
    k = int((rest * 0.9 / 1.9 * 2**30 - slot) // slot)
    kv_bytes = int((rest - (k + 1) * slot / 2**30) * 2**30)
    tokens = kv_bytes // cell
    reqs = min(max(min(int(tokens / 1_048_576 * 512), 4096), 2048), tokens // 2, k // 5)
    r = ps.size_pools(pre_model_load_free_bytes=cap, post_load_free_bytes=cap - weights,
                      mem_fraction_static=0.9, cell_bytes_per_token=cell,
                      context_len=1_048_576, state_bytes_per_slot=slot,
                      mm_reserve_gib=100 / 1024)
    assert (r.max_mamba_cache_size, r.max_total_num_tokens, r.max_running_requests) == \
        (k, tokens, reqs)
    assert k == 609 and reqs == 121  # fixed points of this scenario, for the report


def test_free_memory_and_req_to_token():
    pre, post = ps.free_memory_before_and_after_load(capacity_bytes=100 * GiB,
                                                     init_overhead_bytes=2 * GiB,
                                                     weights_bytes=60 * GiB,
                                                     draft_weights_bytes=GiB,
                                                     other_resident_bytes=GiB)
    assert (pre, post) == (98 * GiB, 36 * GiB)
    # (48 + 1) request rows × (1,048,576 + 12) int32
    assert ps.req_to_token_bytes(max_running_requests=48, context_len=1_048_576,
                                 extra_context_len=12) == 49 * 1_048_588 * 4


# --------------------------------------------------------------------------- weights outside k3lab's inventory


def test_dspark_draft_parameter_count_matches_checkpoint():
    # RadixArk/Kimi-K3-DSpark, TP1: 5 × (7168·6144 + 4096·7168 + 3·7168·14336 + 2·64 + 2·7168)
    # + 5·7168·7168 (fc) + 2·7168 (norms) + 2·163840·256 (Markov) + 7168 + 256 + 1 (confidence)
    per_layer = 7168 * 6144 + 4096 * 7168 + 3 * 7168 * 14336 + 2 * 64 + 2 * 7168
    params = 5 * per_layer + 5 * 7168 * 7168 + 2 * 7168 + 2 * 163840 * 256 + 7168 + 256 + 1
    assert params == 2_249_289_601     # the published checkpoint's parameter count
    kw = dict(hidden_size=7168, num_layers=5, num_heads=64, num_kv_heads=16, head_dim=64,
              intermediate_size=14336, num_context_features=5, vocab_size=163840,
              markov_rank=256, confidence_head=True)
    assert ps.dflash_draft_weight_bytes_per_rank(tp_size=1, **kw) == 2 * params
    # TP8: layers shard (768-wide QKV, 512-wide o, 1792 FFN); fc, Markov, confidence replicate
    per_layer8 = 7168 * 768 + 512 * 7168 + 3 * 7168 * 1792 + 2 * 64 + 2 * 7168
    params8 = 5 * per_layer8 + 5 * 7168 * 7168 + 2 * 7168 + 2 * 163840 * 256 + 7425
    assert ps.dflash_draft_weight_bytes_per_rank(tp_size=8, **kw) == 2 * params8 == 1_158_864_642


def test_moonvit_bytes():
    # patch 3·14·14·1024 + pos 64·64·1024 + 27 × (1024·4608 + 1536·1024 + 2·1024·4096 + 2·1024)
    # + final norm 1024 + projector 4096² + 4096·7168 + 7168
    params = (3 * 14 * 14 * 1024 + 64 * 64 * 1024
              + 27 * (1024 * 4608 + 1536 * 1024 + 2 * 1024 * 4096 + 2 * 1024)
              + 1024 + 4096 * 4096 + 4096 * 7168 + 7168)
    assert params == 447_358_976
    assert ps.moonvit_weight_bytes(num_layers=27, hidden_size=1024, qkv_hidden_size=1536,
                                   intermediate_size=4096, patch_size=14, pos_emb_height=64,
                                   pos_emb_width=64, merge_kernel=(2, 2),
                                   text_hidden_size=7168) == 2 * params


# --------------------------------------------------------------------------- load-time peak


def test_mxfp4_layer_bytes_k3_tp8():
    # 896 experts, latent 3584, intermediate 3072/8 = 384
    b = ps.mxfp4_moe_layer_bytes(num_local_experts=896, hidden_size=3584,
                                 intermediate_per_partition=384)
    assert b["w13"] == 896 * 768 * 1792 == 1_233_125_376
    assert b["w13_scale"] == 896 * 768 * 112
    assert b["w2"] == 896 * 3584 * 192
    assert b["w2_scale"] == 896 * 3584 * 12
    assert b["w13_bias_bf16"] + b["w2_bias_bf16"] == 896 * (768 + 3584) * 2


def test_mxfp4_transients():
    A, a = 896 * 768 * 1792, 896 * 768 * 112
    B, b = 896 * 3584 * 192, 896 * 3584 * 12
    kw = dict(num_local_experts=896, hidden_size=3584, intermediate_per_partition=384)
    assert ps.mxfp4_post_load_transient_bytes(backend="flashinfer_sm100", **kw) == \
        3 * A + 2 * a + B + b
    assert ps.mxfp4_post_load_transient_bytes(backend="flashinfer_sm100",
                                              gate_up_interleaved=True, **kw) == 2 * A + a + B + b
    assert ps.mxfp4_post_load_transient_bytes(backend="aiter", **kw) == A
    assert ps.load_peak_bytes(resident_weights_bytes=100, largest_layer_transient_bytes=7,
                              other_post_load_transient_bytes=3) == 107


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, match", [
    (lambda: ps.mla_cell_bytes_per_token(num_full_attn_layers=24, kv_lora_rank=512,
                                         qk_rope_head_dim=64, kv_dtype_bytes=3), "kv_dtype_bytes"),
    (lambda: ps.mla_cell_bytes_per_token(num_full_attn_layers=True, kv_lora_rank=512,
                                         qk_rope_head_dim=64, kv_dtype_bytes=2),
     "num_full_attn_layers"),
    (lambda: ps.kda_state_bytes_per_slot(num_linear_layers=69, num_heads=96, head_dim=128,
                                         conv_kernel_size=4, attn_tp_size=7), "does not divide"),
    (lambda: ps.kda_state_bytes_per_slot(num_linear_layers=69, num_heads=96, head_dim=128,
                                         conv_kernel_size=4, attn_tp_size=8,
                                         ssm_dtype_bytes=1), "ssm_dtype_bytes"),
    (lambda: ps.mamba_slots_per_request(strategy="auto"), "strategy"),
    (lambda: ps.mamba_slots_per_request(strategy="extra_buffer_lazy", overlap_schedule=False),
     "overlap"),
    (lambda: ps.default_mem_fraction_static(gpu_memory_mib=0, tp_size=8), "gpu_memory_mib"),
    (lambda: ps.default_mem_fraction_static(gpu_memory_mib=275_040, tp_size=8,
                                            vision_num_layers=27), "vision"),
    (lambda: ps.effective_mem_fraction_static(1.2, attention_backend="aiter",
                                              context_len=8192), "mem_fraction_static"),
    (lambda: ps.effective_mem_fraction_static(math.nan, attention_backend="aiter",
                                              context_len=8192), "mem_fraction_static"),
    (lambda: ps.profile_rest_memory_gib(pre_model_load_free_bytes=100 * GiB,
                                        post_load_free_bytes=120 * GiB,
                                        mem_fraction_static=0.9), "post_load_free_bytes"),
    (lambda: ps.profile_rest_memory_gib(pre_model_load_free_bytes=100 * GiB,
                                        post_load_free_bytes=30 * GiB,
                                        mem_fraction_static=0), "mem_fraction_static"),
    (lambda: ps.split_state_pool(20.0, state_bytes_per_slot=GiB, max_running_requests=None,
                                 speculative_num_draft_tokens=8), "max_running_requests"),
    (lambda: ps.split_state_pool(20.0, state_bytes_per_slot=0), "state_bytes_per_slot"),
    (lambda: ps.split_state_pool(20.0, state_bytes_per_slot=GiB,
                                 mamba_full_memory_ratio=-1), "mamba_full_memory_ratio"),
    (lambda: ps.max_total_num_tokens_from_budget(1000, cell_bytes_per_token=0),
     "cell_bytes_per_token"),
    (lambda: ps.max_total_num_tokens_from_budget(1000, cell_bytes_per_token=7, page_size=0),
     "page_size"),
    (lambda: ps.resolve_max_running_requests(1000, context_len=4096, max_mamba_cache_size=10),
     "slots_per_request"),
    (lambda: ps.free_memory_before_and_after_load(capacity_bytes=GiB, init_overhead_bytes=2 * GiB,
                                                  weights_bytes=0), "init_overhead_bytes"),
    (lambda: ps.multimodal_reserve_gib(is_multimodal=True, mm_feature_transport="nvlink"),
     "mm_feature_transport"),
    (lambda: ps.dflash_draft_weight_bytes_per_rank(hidden_size=7168, num_layers=5, num_heads=64,
                                                   num_kv_heads=16, head_dim=64,
                                                   intermediate_size=14336,
                                                   num_context_features=5, tp_size=3),
     "tp_size=3"),
    (lambda: ps.dflash_draft_weight_bytes_per_rank(hidden_size=7168, num_layers=5, num_heads=64,
                                                   num_kv_heads=16, head_dim=64,
                                                   intermediate_size=14336,
                                                   num_context_features=5, tp_size=8,
                                                   markov_rank=256), "Markov"),
    (lambda: ps.moonvit_weight_bytes(num_layers=27, hidden_size=1024, qkv_hidden_size=1536,
                                     intermediate_size=4096, patch_size=14, pos_emb_height=64,
                                     pos_emb_width=64, merge_kernel=(2,), text_hidden_size=7168),
     "merge_kernel"),
    (lambda: ps.mxfp4_moe_layer_bytes(num_local_experts=896, hidden_size=3584,
                                      intermediate_per_partition=100), "MXFP4 block"),
    (lambda: ps.mxfp4_post_load_transient_bytes(backend="marlin", num_local_experts=896,
                                                hidden_size=3584, intermediate_per_partition=384),
     "backend"),
])
def test_bad_input_names_the_problem(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_insufficient_memory_is_a_value_error():
    # 5 GiB free after load cannot cover the 10 GiB slack of 0.9 × 100 GiB
    with pytest.raises(ps.InsufficientMemoryError, match="raise it above"):
        ps.profile_rest_memory_gib(pre_model_load_free_bytes=100 * GiB,
                                   post_load_free_bytes=5 * GiB, mem_fraction_static=0.9)
    # a 0.5 GiB rest cannot hold a 1 GiB slot: the memory is short
    with pytest.raises(ps.InsufficientMemoryError, match="not enough GPU memory for the hybrid state pool"):
        ps.split_state_pool(0.5, state_bytes_per_slot=GiB)
    # issue 35: 10 GiB hold ten 1 GiB slots, but a ratio of 0.01 gives the pool 0.1 GiB: the
    # ratio is named, not the memory (10 × 0.01 / 1.01 GiB = 101.4 MiB)
    with pytest.raises(ps.InsufficientMemoryError, match=r"^--mamba-full-memory-ratio 0.01 leaves the hybrid state "
                                                         r"pool 101.39 MiB of the 10.00 GiB left.*raise it"):
        ps.split_state_pool(10.0, state_bytes_per_slot=GiB, mamba_full_memory_ratio=0.01)
    with pytest.raises(ps.InsufficientMemoryError, match="KV page"):
        ps.max_total_num_tokens_from_budget(10, cell_bytes_per_token=7, page_size=4)
    with pytest.raises(ps.InsufficientMemoryError, match="exceed"):
        ps.free_memory_before_and_after_load(capacity_bytes=10 * GiB, init_overhead_bytes=0,
                                             weights_bytes=11 * GiB)
