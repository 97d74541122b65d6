"""k3lab.memory: parameter counts, checkpoint bytes, weights per GPU, fit plans and the CLI.

Every expected value is recomputed here by hand from the config numbers (the published
Kimi K3 text config), from sglang 0.5.23's real module (the measured transcript) or from
sglang's pool-sizing arithmetic written out in this file, never taken from the code under
test. Sharding details are in tests/test_sharding.py, the other models in test_inventory.py."""

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from k3lab import fit_cli, memory, specs
from k3lab.paths import MEASURED_DIR, REPO_ROOT

CFG = specs.load_model("kimi-k3")

# ---- the config numbers, written out once (from data/model/kimi_k3_config.json)
H, V = 7168, 163840
N_LAYERS, N_MLA, N_KDA, N_MOE = 93, 24, 69, 92
DENSE_I = 33792
E, TOPK, LAT, MOE_I, N_SHARED = 896, 16, 3584, 3072, 2
HEADS, Q_LORA, KV_LORA, NOPE, ROPE, VDIM = 96, 1536, 512, 128, 64, 128
LIN_H, LIN_D, CONV_K = 96, 128, 4
PROJ = LIN_H * LIN_D  # 12288

EMBED = V * H
DENSE = 3 * H * DENSE_I
MLA_LAYER = (H * Q_LORA + H * (KV_LORA + ROPE) + Q_LORA + KV_LORA
             + Q_LORA * HEADS * (NOPE + ROPE) + KV_LORA * HEADS * (NOPE + VDIM)
             + HEADS * VDIM * H  # o_proj
             + H * HEADS * VDIM)  # output gate g_proj
KDA_FP32_LAYER = 3 * PROJ * CONV_K + LIN_H + PROJ  # conv1d, A_log, dt_bias
KDA_LAYER = (4 * H * PROJ + H * LIN_H + H * LIN_D + LIN_D * PROJ + PROJ * H
             + KDA_FP32_LAYER + LIN_D)
ROUTER_LAYER = E * H + E
LATENT_LAYER = 2 * H * LAT + LAT
SHARED_LAYER = 3 * H * MOE_I * N_SHARED
ROUTED = N_MOE * E * 3 * LAT * MOE_I  # MoE layers × experts × 3 × latent × intermediate
NORMS = N_LAYERS * 6 * H + 3 * H  # 2 layernorms + 2 attn-res norms + 2 H→1 projs; final 3
TOTAL = (2 * EMBED + DENSE + N_MLA * MLA_LAYER + N_KDA * KDA_LAYER
         + N_MOE * (ROUTER_LAYER + LATENT_LAYER + SHARED_LAYER) + ROUTED + NORMS)


def test_config_numbers_are_the_published_ones():
    assert (CFG.hidden_size, CFG.vocab_size, CFG.num_hidden_layers) == (H, V, N_LAYERS)
    assert (CFG.num_mla_layers, CFG.num_kda_layers, CFG.num_moe_layers) == (N_MLA, N_KDA, N_MOE)
    assert (CFG.num_experts, CFG.num_experts_per_token) == (E, TOPK)


def test_total_and_breakdown_by_hand():
    pc = memory.count_params(CFG)
    assert pc.total == TOTAL == 2_779_484_476_000
    assert pc.total_without_mtp == TOTAL  # K3 ships no MTP module
    b = pc.breakdown
    assert b["routed_experts"] == ROUTED
    assert b["embed_tokens"] == b["lm_head"] == EMBED
    assert b["dense_mlp"] == DENSE
    assert b["mla_attention"] == N_MLA * MLA_LAYER
    assert b["kda_attention"] == N_KDA * KDA_LAYER
    assert b["router"] == N_MOE * ROUTER_LAYER
    assert b["latent_projections"] == N_MOE * LATENT_LAYER
    assert b["shared_experts"] == N_MOE * SHARED_LAYER
    assert b["norms_and_attn_res"] == NORMS
    assert b["mtp"] == 0
    assert sum(b.values()) == pc.total
    assert set(b) == set(memory.COMPONENTS)
    assert 2.77e12 < pc.total < 2.79e12  # the article: "roughly 2.78T"


def test_active_params_and_embedding_convention():
    pc = memory.count_params(CFG)
    routed_active = ROUTED * TOPK // E
    non_routed = TOTAL - ROUTED
    assert pc.active_with_embedding == non_routed + routed_active
    assert pc.active == non_routed + routed_active - EMBED  # input embedding excluded
    assert pc.active_excluding_embeddings == pc.active - EMBED  # lm_head dropped too
    assert pc.active_breakdown["routed_experts"] == routed_active
    assert pc.active_breakdown["embed_tokens"] == EMBED  # listed, but not in .active
    assert pc.active < pc.active_with_embedding < pc.total
    assert pc.active == pytest.approx(103e9, rel=0.02)  # the article: "about 103B active"


def test_checkpoint_bytes_mxfp4_experts_bf16_rest():
    fp32 = N_KDA * KDA_FP32_LAYER + N_MOE * E  # KDA conv / A_log / dt_bias, and the router bias
    expected = ROUTED * 17 // 32 + 2 * (TOTAL - ROUTED - fp32) + 4 * fp32
    assert memory.checkpoint_bytes(CFG) == expected == 1_559_965_580_416
    by = memory.checkpoint_bytes(CFG, by_component=True)
    assert by["routed_experts"] == ROUTED * 17 // 32
    assert by["latent_projections"] == 2 * N_MOE * LATENT_LAYER  # BF16 (storage override)
    assert sum(by.values()) == expected
    assert 1.55e12 < expected < 1.57e12  # the article: "about 1.56TB"


def test_one_routed_expert_bytes():
    assert memory.routed_expert_bytes(CFG) == 3 * LAT * MOE_I * 17 // 32 == 17_547_264


def test_tp1_shard_is_the_whole_checkpoint():
    assert memory.weights_bytes_per_gpu(CFG, tp=1, runtime=False) == memory.checkpoint_bytes(CFG)


# --------------------------------------------------------------------------- weights per GPU

RANK_BYTES = json.loads((MEASURED_DIR / "cpu-2core" / "sglang_0523_k3_rank_bytes.json").read_text("utf-8"))


def _sglang(key):
    """Heaviest-rank bytes of sglang 0.5.23's real Kimi K3 module (measured on the meta device)."""
    return RANK_BYTES["heaviest"][key]["loaded_bytes"]


@pytest.mark.parametrize("gpu, variants, key", [
    ("b300", (), "tp8|cuda-sm100"),                    # 192.381 GiB
    ("mi355x", (), "tp8|rocm-aiter"),                  # 247.174 GiB: AITER pads 384 -> 512
    ("mi355x", ("aiter-k3-opt",), "tp8|rocm-aiter+k3opt"),  # 191.044 GiB: the article's "191 GiB"
])
def test_weights_per_gpu_tp8_equal_sglang(gpu, variants, key):
    assert memory.weights_bytes_per_gpu(CFG, 8, variants=variants, gpu=gpu) == _sglang(key)


def test_default_weights_are_the_nvidia_blackwell_layout():
    assert memory.weights_bytes_per_gpu(CFG, 8) == _sglang("tp8|cuda-sm100")
    assert memory.weights_bytes_per_gpu(CFG, 16) == _sglang("tp16|cuda-sm100")
    assert memory.weights_bytes_per_gpu(CFG, 8, pp=2) == _sglang("tp8-pp2|cuda-sm100")


def test_tp_must_divide_heads_for_weights_too():
    with pytest.raises(ValueError, match="does not divide the 96 attention heads"):
        memory.weights_bytes_per_gpu(CFG, tp=5)


def test_kv_and_state_re_exported():
    assert memory.kv_bytes_per_token(CFG, "bf16") == N_MLA * (KV_LORA + ROPE) * 2 == 27_648
    assert memory.kda_state_bytes_per_request(CFG, 8) == N_KDA * (12 * 128 * 128 * 4 + 3 * 4608 * 2) == 56_171_520


# --------------------------------------------------------------------------- plans (sglang 0.5.23 pool sizing)

GiB = 2**30
MI355X_BYTES = 309_220_868_096  # rocm-smi / torch total_memory (data/hardware.yaml driver_readings)
B300_BYTES = 275_040 * 2**20    # nvidia-smi 275,040 MiB
# Kimi K3's vision tower + projector, loaded replicated on every rank (27 layers × 1024, qkv 1536,
# FFN 4096, 14-px patches, 64×64 position embedding, 2×2 merge to 4096 -> text 7168), bf16
VT_LAYER = 1024 * 3 * 1536 + 1536 * 1024 + 2 * 1024 * 4096 + 2 * 1024
VISION_BYTES = 2 * (27 * VT_LAYER + 3 * 14 * 14 * 1024 + 64 * 64 * 1024 + 1024
                    + 4096 * 4096 + 4096 * 7168 + 7168)
MM_RESERVE_GIB = 100 / 1024  # SGLANG_VLM_CACHE_SIZE_MB = 100
SLOT_TP8 = N_KDA * (12 * 128 * 128 * 4 + 3 * 3 * 12 * 128 * 2)
CELL = N_MLA * 576 * 2


def _sglang_pools(capacity, weights, other, mem_fraction, cell, slot, context, page, mm_gib):
    """The pool sizing documented in k3lab.model.pool_sizing, written out step by step:
    rest = free after load − (1 − f) × free before load − multimodal reserve (GiB);
    KDA state budget rest·r/(1+r), r = 0.9, K = int((budget − slot) // slot) slots;
    KV budget = rest − (K + 1)·slot; tokens = budget // cell, floored to the page;
    requests = min(clamp(int(tokens / context × 512), 2048, 4096), tokens // 2, K // 5)."""
    rest = (capacity - weights - other) / GiB - capacity / GiB * (1 - mem_fraction) - mm_gib
    out = {"rest_gib": rest}
    if slot:
        k = int((rest * 0.9 / 1.9 * GiB - slot) // slot)
        rest -= (k + 1) * slot / GiB
        out.update(slots=k, state_pool=(k + 1) * slot)
    tokens = int(rest * GiB) // cell // page * page
    reqs = min(max(min(int(tokens / context * 512), 4096), 2048), tokens // 2)
    if slot:
        reqs = min(reqs, out["slots"] // 5)
    out.update(tokens=tokens, requests=reqs, kv_pool=(tokens + page) * cell)
    return out


def test_plan_mi355x_tp8_aiter_k3_opt_by_hand():
    assert VISION_BYTES == 2 * 447_358_976
    p = memory.plan(CFG, "mi355x", 8, 8, mem_fraction=0.9, variants=["aiter-k3-opt"])
    w = _sglang("tp8|rocm-aiter+k3opt")
    hand = _sglang_pools(MI355X_BYTES, w, VISION_BYTES, 0.9, CELL, SLOT_TP8, 1_048_576, 1, MM_RESERVE_GIB)
    # the numbers the hand arithmetic gives (67.21 GiB rest, 607 slots, 1,374,958 tokens, 121 requests)
    assert round(hand["rest_gib"], 4) == 67.2109
    assert (hand["slots"], hand["tokens"], hand["requests"]) == (607, 1_374_958, 121)
    assert p.capacity_bytes_per_gpu == MI355X_BYTES
    assert p.weights_bytes_per_gpu == w and p.other_resident_bytes_per_gpu == VISION_BYTES
    assert p.reserve_bytes_per_gpu == round(0.1 * MI355X_BYTES)
    assert p.state_pool_bytes_per_gpu == hand["state_pool"] == 608 * SLOT_TP8
    assert p.max_kv_tokens == hand["tokens"]
    assert p.max_running_requests == hand["requests"]
    assert p.kv_pool_bytes_per_gpu == hand["kv_pool"]
    assert (p.kv_bytes_per_token, p.kda_state_bytes_per_request, p.page_size) == (CELL, SLOT_TP8, 1)
    assert p.max_full_context_requests == min(hand["tokens"] // 1_048_576, hand["requests"]) == 1
    assert p.fits and p.weights_fit and p.platform == "rocm" and p.variants == ("aiter-k3-opt",)
    # what is left is the multimodal reserve plus rounding (< 100 MiB + one cell)
    assert 0 <= p.free_bytes_per_gpu <= 100 * 2**20 + CELL


def test_init_overhead_and_max_running_requests_reach_the_pools():
    """What the runtime holds before loading lowers both free figures sglang measures, so the
    rest shrinks by mem_fraction × overhead: rest = (cap − O − w − o) − (1 − f)(cap − O) − mm."""
    o = 4 * GiB
    base = memory.plan(CFG, "mi355x", 8, 8, variants=["aiter-k3-opt"])
    p = memory.plan(CFG, "mi355x", 8, 8, variants=["aiter-k3-opt"], init_overhead_bytes=o)
    w = _sglang("tp8|rocm-aiter+k3opt")
    rest = (MI355X_BYTES - o - w - VISION_BYTES) / GiB - (MI355X_BYTES - o) / GiB * 0.1 - MM_RESERVE_GIB
    k = int((rest * 0.9 / 1.9 * GiB - SLOT_TP8) // SLOT_TP8)
    tokens = int((rest - (k + 1) * SLOT_TP8 / GiB) * GiB) // CELL
    assert p.max_kv_tokens == tokens < base.max_kv_tokens
    assert p.reserve_bytes_per_gpu == round(0.1 * (MI355X_BYTES - o))
    # a user cap on running requests is what the server logs (the state pool is sized by ratio)
    q = memory.plan(CFG, "mi355x", 8, 8, variants=["aiter-k3-opt"], max_running_requests=16)
    assert q.max_running_requests == 16 and q.max_kv_tokens == base.max_kv_tokens
    with pytest.raises(ValueError, match="max_running_requests must be a positive integer"):
        memory.plan(CFG, "mi355x", 8, 8, max_running_requests=0)
    with pytest.raises(ValueError, match="init_overhead_bytes must be a non-negative integer"):
        memory.plan(CFG, "mi355x", 8, 8, init_overhead_bytes=-1)


def _b300_rest():
    """8×B300 TP8, bf16, mem_fraction 0.9: the GiB the pools share (sglang's order of operations)."""
    w = _sglang("tp8|cuda-sm100")
    return (B300_BYTES - w - VISION_BYTES) / GiB - B300_BYTES / GiB * 0.1 - MM_RESERVE_GIB


def _tokens(rest, slots, slot=SLOT_TP8, page=64):
    """KV tokens after ``slots`` (+1 padding) state slots: budget // cell, floored to the page."""
    return int((rest - (slots + 1) * slot / GiB) * GiB) // CELL // page * page


def _requests(tokens, slots, spr, context=1_048_576, given=None):
    est = max(min(int(tokens / context * 512), 4096), 2048)
    n = min(given, tokens // 2) if given is not None else min(est, tokens // 2)
    return min(n, slots // spr)


@pytest.mark.parametrize("kwargs, branch", [
    ({}, "ratio"),
    ({"mamba_full_memory_ratio": 0.5}, "ratio"),
    ({"max_mamba_cache_size": 300}, "explicit"),
    ({"disable_radix_cache": True, "max_running_requests": 40}, "from_max_running_requests"),
    ({"disable_radix_cache": True}, "ratio"),
])
def test_plan_b300_each_state_pool_branch_by_hand(kwargs, branch):
    """sglang 0.5.23 KVCacheConfigurator._handle_max_mamba_cache, each branch written out:
    explicit N slots; radix off + M: M slots (1 per request); else K = int((rest·r/(1+r)·2^30
    − slot) // slot), r = 0.9 unless given; then resolve_max_num_reqs caps by slots // spr."""
    rest = _b300_rest()
    r = kwargs.get("mamba_full_memory_ratio", 0.9)
    radix = not kwargs.get("disable_radix_cache", False)
    if "max_mamba_cache_size" in kwargs:
        slots = kwargs["max_mamba_cache_size"]
    elif not radix and "max_running_requests" in kwargs:
        slots = kwargs["max_running_requests"]
    else:
        slots = int((rest * r / (1 + r) * GiB - SLOT_TP8) // SLOT_TP8)
    tokens = _tokens(rest, slots)
    reqs = _requests(tokens, slots, 5 if radix else 1, given=kwargs.get("max_running_requests"))
    p = memory.plan(CFG, "b300", 8, 8, **kwargs)
    assert (p.state_pool_branch, p.state_slots, p.max_kv_tokens, p.max_running_requests) == \
        (branch, slots, tokens, reqs)
    assert p.state_pool_bytes_per_gpu == (slots + 1) * SLOT_TP8
    assert p.slots_per_request == (5 if radix else 1)


def test_plan_b300_fits_only_with_a_state_pool_setting_at_the_edge():
    """Default: 990,592 tokens < 1,048,576. The largest ratio on the 0.001 grid whose KV pool
    holds 1,048,576 tokens, worked out from the formula: its neighbour above does not."""
    rest = _b300_rest()
    k = lambda r: int((rest * r / (1 + r) * GiB - SLOT_TP8) // SLOT_TP8)  # noqa: E731
    fits = lambda r: _tokens(rest, k(r)) >= 1_048_576  # noqa: E731
    r_hi = max(i / 1000 for i in range(1, 900) if fits(i / 1000))
    n_hi = max(n for n in range(5, 700) if _tokens(rest, n) >= 1_048_576)
    p = memory.plan(CFG, "b300", 8, 8)
    assert not p.fits and not p.fits_with_defaults and p.verdict == "fits only with a setting"
    opts = {o.branch: o for o in p.fit_options}
    assert opts["ratio"].settings.mamba_full_memory_ratio == r_hi and not fits(r_hi + 0.001)
    assert opts["ratio"].max_running_requests == _requests(_tokens(rest, k(r_hi)), k(r_hi), 5)
    assert opts["explicit"].settings.max_mamba_cache_size == n_hi
    assert opts["explicit"].max_running_requests == n_hi // 5
    assert opts["from_max_running_requests"].settings.max_running_requests == n_hi
    assert p.fit_setting == f"--mamba-full-memory-ratio {r_hi:g}" and p.fits_with == p.fit_setting
    # the setting k3lab names makes the plan fit
    q = memory.plan(CFG, "b300", 8, 8, mamba_full_memory_ratio=r_hi)
    assert q.fits and not q.fits_with_defaults and q.fit_setting is None
    assert q.verdict == "fits only with a setting"


def test_plan_verdicts():
    assert memory.plan(CFG, "mi355x", 8, 8, variants=["aiter-k3-opt"]).verdict == "fits with defaults"
    mi = memory.plan(CFG, "mi355x", 8, 8)  # 227k tokens: even no state pool would leave < 1M
    assert mi.verdict == "does not fit" and mi.fit_options == () and mi.fits_with == "no setting"
    b2 = memory.plan(CFG, "b200", 8, 8)
    assert b2.verdict == "weights do not fit" and b2.fits_with == "weights do not fit"
    # asked settings that do not fit where the defaults do
    tight = memory.plan(CFG, "mi355x", 8, 8, variants=["aiter-k3-opt"], max_mamba_cache_size=2000)
    assert not tight.fits and tight.fits_with_defaults and tight.verdict == "fits with defaults"
    assert tight.fit_setting is None
    # 2001 slots of 53.6 MiB (104.7 GiB) leave no KV pool at all: that, not "weights do not fit"
    assert tight.weights_fit and tight.max_kv_tokens == 0
    # said as what the slots need against what is free (issue 35, S3), never a negative remainder
    assert "2,000 slots (--max-mamba-cache-size 2,000) need 104.7 GiB per GPU against" in tight.pool_note


def test_plan_pp2_charges_the_largest_stage_slot_and_four_slots_per_request():
    """sglang 0.5.23 under PP: every stage charges the slot of the stage with the most KDA layers
    (35 of 69 on stage 0 of 93 layers split 46 + 47), and PP turns the overlap scheduler off,
    so extra_buffer tracks one slot less: 3 + 1 = 4 per request."""
    cfg = json.loads((REPO_ROOT / "data" / "model" / "kimi_k3_config.json").read_text("utf-8"))
    kda = [i - 1 for i in cfg["text_config"]["linear_attn_config"]["kda_layers"]]  # 1-based in the config
    assert len(kda) == N_KDA and sum(1 for i in kda if i < 46) == 35
    slot = int(SLOT_TP8 * (35 / 69))
    p = memory.plan(CFG, "b300", 16, 8, pp=2)
    assert p.kda_state_bytes_per_request == slot == 28_492_800 and p.slots_per_request == 4
    assert p.max_running_requests == min(p.state_slots // 4, p.max_kv_tokens // 2)


def test_state_pool_flags_on_a_model_without_one_are_refused():
    ds = specs.load_model("deepseek-v3")
    with pytest.raises(ValueError, match="no linear-attention state pool"):
        memory.plan(ds, "h200", 8, 8, max_mamba_cache_size=10)
    with pytest.raises(ValueError, match="no linear-attention state pool"):
        memory.plan(ds, "h200", 8, 8, mamba_full_memory_ratio=0.5)
    assert memory.plan(ds, "h200", 8, 8, disable_radix_cache=True).fits  # sglang takes it: no prefix cache


def test_plan_b300_tp8_128k_by_hand_with_64_token_pages():
    # B300 (SM103) auto-selects trtllm_mla: 64-token pages
    p = memory.plan(CFG, "b300", 8, 8, context_tokens=131_072)
    hand = _sglang_pools(B300_BYTES, _sglang("tp8|cuda-sm100"), VISION_BYTES, 0.9, CELL, SLOT_TP8,
                         131_072, 64, MM_RESERVE_GIB)
    assert p.page_size == 64 and p.max_kv_tokens % 64 == 0
    assert (p.max_kv_tokens, p.max_running_requests) == (hand["tokens"], hand["requests"])
    assert p.kv_pool_bytes_per_gpu == hand["kv_pool"]
    assert p.max_full_context_requests == min(hand["tokens"] // 131_072, hand["requests"])
    assert p.fits and p.platform == "cuda"


def test_plan_without_kda_deepseek_v3():
    ds = specs.load_model("deepseek-v3")
    p = memory.plan(ds, "h200", 8, 8)
    # no vision tower, no state pool; 61 MLA layers × 576 × 2 B per token
    hand = _sglang_pools(150_754_820_096, p.weights_bytes_per_gpu, 0, 0.9, 61 * 576 * 2, 0, 163_840, 1, 0.0)
    assert p.state_pool_bytes_per_gpu == 0 and p.kda_state_bytes_per_request == 0
    assert (p.max_kv_tokens, p.max_running_requests) == (hand["tokens"], hand["requests"])
    assert p.context_tokens == 163_840 and p.fits  # DeepSeek-V3 fits one 8×H200 node in FP8


def test_plan_configurations():
    assert memory.plan(CFG, "b300", 8, 8).weights_fit
    assert memory.plan(CFG, "b300", 8, 8, context_tokens=131_072).fits
    assert not memory.plan(CFG, "b200", 8, 8).weights_fit
    b200_192 = specs.load_gpu("b200").with_hbm_gb(192)  # the article's "192GB" B200
    p = memory.plan(CFG, b200_192, 8, 8)
    assert not p.fits and p.capacity_bytes_per_gpu == 192 * 10**9 and p.label.endswith("(192 GB)")
    assert (p.max_kv_tokens, p.max_running_requests, p.kv_pool_bytes_per_gpu) == (0, 0, 0)
    assert not memory.plan(CFG, "h200", 8, 8).weights_fit
    assert memory.plan(CFG, "b200", 16, 16, context_tokens=131_072).fits
    pp = memory.plan(CFG, "b200", 16, 8, pp=2, context_tokens=131_072)
    assert pp.fits and pp.kv_bytes_per_token == 13 * 576 * 2
    bf16 = memory.plan(CFG, "mi355x", 8, 8, variants=["aiter-k3-opt"])
    fp8 = memory.plan(CFG, "mi355x", 8, 8, kv_dtype="fp8", variants=["aiter-k3-opt"])
    assert fp8.max_kv_tokens > bf16.max_kv_tokens
    # the AITER default padding costs 56 GiB per GPU of KV
    pad = memory.plan(CFG, "mi355x", 8, 8)
    assert pad.weights_bytes_per_gpu - bf16.weights_bytes_per_gpu == N_MOE * E * 3 * LAT * 128 * 17 // 32
    assert pad.max_kv_tokens < bf16.max_kv_tokens


def test_plan_accepts_a_relabelled_gpu():
    """``GPU.with_hbm_gb(gb, label=...)`` is a documented way to make a capacity variant, and
    ``plan`` takes "a name or a GPU"; the label must not be mistaken for the GPU's name."""
    g = specs.load_gpu("b200").with_hbm_gb(192, label="b200-article")
    p = memory.plan(CFG, g, 8, 8)
    assert p.capacity_bytes_per_gpu == 192 * 10**9 and not p.weights_fit


def test_fit_takes_a_deployment():
    dep = specs.parse_layout("16xmi355x tp8")  # two replicas of TP8
    p = memory.fit(CFG, dep, variants=["aiter-k3-opt"])
    single = memory.plan(CFG, "mi355x", 8, 8, variants=["aiter-k3-opt"])
    assert p.replicas == 2 and p.num_gpus == 16
    assert (p.max_kv_tokens, p.weights_bytes_per_gpu) == (single.max_kv_tokens, single.weights_bytes_per_gpu)
    # EP / DP-attention switches on the deployment reach the plan as variants
    ep = memory.fit(CFG, specs.parse_layout("8xmi355x tp8 ep dp-attention"))
    assert ep.variants == ("dp-attention", "ep")
    assert ep.weights_bytes_per_gpu == memory.weights_bytes_per_gpu(CFG, 8, variants=["ep", "dp-attention"], gpu="mi355x")


def test_lower_mem_fraction_leaves_less_kv():
    a = memory.plan(CFG, "mi355x", 8, 8, mem_fraction=0.85, variants=["aiter-k3-opt"])
    b = memory.plan(CFG, "mi355x", 8, 8, mem_fraction=0.9, variants=["aiter-k3-opt"])
    assert a.max_kv_tokens < b.max_kv_tokens
    assert a.reserve_bytes_per_gpu == round(0.15 * MI355X_BYTES)


@pytest.mark.parametrize("kwargs,match", [
    (dict(gpu="a100", num_gpus=8, tp=8), "known GPUs: b200, b300, gb200, h100, h200, mi300x, mi325x, mi350x, mi355x"),
    (dict(gpu="mi355x", num_gpus=7, tp=7), "does not divide the 96 attention heads"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, mem_fraction=0.0), r"mem_fraction must be"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, mem_fraction=1.5), r"mem_fraction must be in \(0, 1\]"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, mem_fraction=float("nan")), "mem_fraction must be a finite number"),
    (dict(gpu="mi355x", num_gpus=0, tp=8), "num_gpus must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=8, tp=-8), "tp must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, pp=0), "pp must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=12, tp=8), "not a multiple of tp"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, kv_dtype="fp4"), "kv_dtype"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, state_dtype="fp8"), "state_dtype"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, context_tokens=0), "context_tokens must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, context_tokens=1.5e5), "context_tokens must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, variants=["nope"]), r"unknown variant\(s\) \['nope'\]; known: "
                                                              r"aiter-moe-pad, aiter-k3-opt, ep, ep-a2a, dp-attention, dspark"),
    (dict(gpu="b300", num_gpus=8, tp=8, variants=["aiter-k3-opt"]), "ROCm"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, variants=["aiter-moe-pad", "aiter-k3-opt"]), "contradict"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, variants=["ep", "ep-a2a"]), "give one of the variants ep and ep-a2a"),
])
def test_plan_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        memory.plan(CFG, **kwargs)


# --------------------------------------------------------------------------- CLI


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = fit_cli.main(argv)
        except SystemExit as e:  # a value past its flag's range is argparse's usage error (one line)
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def test_cli_json_keeps_the_documented_keys():
    rc, out, _ = _run(["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--variant", "aiter-k3-opt", "--json"])
    assert rc == 0
    d = json.loads(out)
    assert {"weights_bytes_per_gpu", "max_kv_tokens", "weights_fit", "fits", "variants"} <= set(d)
    assert d["weights_bytes_per_gpu"] == _sglang("tp8|rocm-aiter+k3opt")
    assert d["variants"] == ["aiter-k3-opt"] and d["weights_fit"] is True


def test_cli_model_context_and_repeatable_variants():
    rc, out, _ = _run(["--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--tp", "8",
                       "--context", "32768", "--json"])
    d = json.loads(out)
    assert rc == 0 and d["context_tokens"] == 32768 and d["kda_state_bytes_per_request"] == 0
    assert d["kv_bytes_per_token"] == 61 * 576 * 2
    rc, out, _ = _run(["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--variant", "aiter-k3-opt",
                       "--variant", "dp-attention", "--json"])
    assert rc == 0 and json.loads(out)["variants"] == ["aiter-k3-opt", "dp-attention"]


def test_cli_text():
    rc, out, _ = _run(["--gpu", "b200", "--gpus", "8", "--tp", "8", "--hbm-gb", "192"])
    assert rc == 0 and "weights fit: no" in out and "kimi-k3 on 8×B200 TP8 (192 GB)" in out


@pytest.mark.parametrize("argv, word", [
    (["--gpu", "nope", "--gpus", "8", "--tp", "8"], "known GPUs"),
    (["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--mem-fraction", "2"], "--mem-fraction: must be >0, at most 1"),
    (["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--variant", "nope"], "unknown variant"),
    (["--gpu", "b300", "--gpus", "8", "--tp", "8", "--variant", "aiter-k3-opt"], "ROCm"),
    (["--model", "gpt-5", "--gpu", "b300", "--gpus", "8", "--tp", "8"], "unknown model"),
    (["--gpu", "b300", "--gpus", "8", "--tp", "8", "--context", "-1"], "--context: must be 1 to 10,000,000 tokens"),
])
def test_cli_bad_input_exits_2_with_one_line(argv, word):
    rc, out, err = _run(argv)
    assert rc == 2 and out == ""
    assert err.startswith("k3lab fit: error: ") and word in err
    assert err.count("\n") == 1


def _python_m_k3lab(*args):
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "k3lab", *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=env, timeout=120)


VARIANT_NAMES = ("aiter-moe-pad", "aiter-k3-opt", "ep", "ep-a2a", "dp-attention", "dspark")


def test_python_m_k3lab_fit_help_is_short_with_one_variant_a_line():
    r = _python_m_k3lab("fit", "--help")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    for v in VARIANT_NAMES:  # each variant starts its own line
        assert sum(1 for ln in lines if ln.split()[:1] == [v]) == 1, v
    assert max(map(len, lines)) <= 110 and len(lines) <= 60
    for opt in ("--model", "--variant", "--context", "--json", "--mem-fraction", "--kv-dtype", "--check",
                "--mamba-full-memory-ratio", "--max-mamba-cache-size", "--disable-radix-cache", "--help-variants"):
        assert opt in r.stdout
    assert "exit status: 0" in r.stdout and "1 = it does not" in "".join(lines)


def test_python_m_k3lab_fit_help_variants_says_what_each_does():
    r = _python_m_k3lab("fit", "--help-variants")  # works without --gpu/--gpus/--tp
    assert r.returncode == 0 and r.stderr == ""
    assert [ln for ln in r.stdout.splitlines() if ln and not ln.startswith(" ")] == list(VARIANT_NAMES)
    assert "SGLANG_AITER_K3_OPT=1" in r.stdout and "Mxfp4MoEMethod.create_weights" in r.stdout


def test_python_m_k3lab_fit_bad_variant_one_line():
    r = _python_m_k3lab("fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--variant", "ep", "--variant", "ep-a2a")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "ep-a2a" in r.stderr
