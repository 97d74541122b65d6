"""k3lab.memory: every expected value is recomputed here by hand from the config numbers
(the published Kimi K3 text config), never taken from the code under test."""

import copy
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from k3lab import memory, specs

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
    assert pc.total == TOTAL
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
    assert sum(b.values()) == pc.total
    assert set(b) == set(memory.COMPONENTS)
    assert 2.77e12 < pc.total < 2.79e12  # "roughly 2.78T"


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


def test_checkpoint_bytes_mxfp4_experts_bf16_rest():
    fp32 = N_KDA * KDA_FP32_LAYER
    expected = ROUTED * 17 // 32 + 2 * (TOTAL - ROUTED - fp32) + 4 * fp32
    assert memory.checkpoint_bytes(CFG) == expected
    by = memory.checkpoint_bytes(CFG, by_component=True)
    assert by["routed_experts"] == ROUTED * 17 // 32
    assert sum(by.values()) == expected
    assert 1.55e12 < expected < 1.57e12  # "about 1.56TB"


def test_one_routed_expert_bytes():
    assert memory.routed_expert_bytes(CFG) == 3 * LAT * MOE_I * 17 // 32 == 17_547_264


def test_tp1_shard_is_the_whole_checkpoint():
    assert memory.weights_bytes_per_gpu(CFG, tp=1, runtime=False) == memory.checkpoint_bytes(CFG)


@pytest.mark.parametrize("tp,pp", [(1, 2), (2, 1), (4, 1), (8, 1), (16, 1), (8, 2), (4, 3)])
def test_sum_over_ranks_at_least_checkpoint(tp, pp):
    stages = memory.stage_weights_bytes(CFG, tp, pp, runtime=False)
    assert len(stages) == pp
    assert tp * sum(stages) >= memory.checkpoint_bytes(CFG)
    assert max(stages) == memory.weights_bytes_per_gpu(CFG, tp, pp, runtime=False)


def _naive_rank_bytes_tp(tp: int) -> int:
    """A second, naive implementation: replicated tensors whole, all else / tp."""
    replicated_bf16 = (N_MLA * (H * (Q_LORA + KV_LORA + ROPE) + Q_LORA + KV_LORA)
                       + N_KDA * (H * LIN_D + LIN_D)
                       + N_MOE * (E * H + LATENT_LAYER) + NORMS)
    router_bias_fp32 = N_MOE * E * 4  # converted to fp32 after loading
    sharded_bf16 = (2 * EMBED + DENSE
                    + N_MLA * (Q_LORA * HEADS * (NOPE + ROPE) + 2 * KV_LORA * HEADS * (NOPE + VDIM)
                               + 2 * HEADS * VDIM * H)  # kv_b twice: the w_kc/w_vc copy
                    + N_KDA * (4 * H * PROJ + H * LIN_H + LIN_D * PROJ + PROJ * H)
                    + N_MOE * SHARED_LAYER)
    sharded_fp32 = N_KDA * KDA_FP32_LAYER
    experts = ROUTED * 17 // 32 // tp
    zero_bias = N_MOE * E * (2 * MOE_I // tp + LAT) * 2
    return (2 * replicated_bf16 + router_bias_fp32 + 2 * sharded_bf16 // tp
            + 4 * sharded_fp32 // tp + experts + zero_bias)


@pytest.mark.parametrize("tp", [2, 4, 8, 16])
def test_per_gpu_bytes_match_naive_implementation(tp):
    assert memory.weights_bytes_per_gpu(CFG, tp) == _naive_rank_bytes_tp(tp)


def test_tp8_per_gpu_near_amd_figure_and_gap_is_replication():
    w = memory.weights_bytes_per_gpu(CFG, 8)
    assert 190 * specs.GiB < w < 193 * specs.GiB  # AMD: "about 191 GiB"
    table = memory.shard_table(CFG, 8)
    assert table["rank_bytes"].sum() == w
    by = table.groupby("component")["gap_bytes"].sum()
    # the latent projections are replicated: their gap is 7/8 of their checkpoint bytes
    assert by["latent_projections"] == pytest.approx(7 / 8 * 2 * N_MOE * LATENT_LAYER)
    assert by["latent_projections"] == by.max()


def test_non_expert_bytes():
    full = memory.weights_bytes_per_gpu(CFG, 8)
    experts = ROUTED * 17 // 32 // 8 + N_MOE * E * (2 * MOE_I // 8 + LAT) * 2
    assert memory.non_expert_bytes_per_gpu(CFG, 8) == full - experts


def test_expert_padding_option_changes_expert_bytes():
    layout = copy.deepcopy(memory.sharding_layout())
    layout["options"]["moe_intermediate_pad_to"] = 256
    layout["options"]["mxfp4_zero_bias"] = False
    padded = memory.shard_table(CFG, 8, layout=layout)
    experts = padded[padded.component == "routed_experts"]["rank_bytes"].sum()
    assert experts == ROUTED // MOE_I * 512 * 17 // 32  # 384 per rank → 512


def test_pp_stages_follow_sglang_split():
    assert memory.pp_stages(CFG, 2) == [(0, 46), (46, 93)]  # last stage gets the extra layer
    assert memory.pp_stages(CFG, 1) == [(0, 93)]


def test_kv_bytes_per_token_only_mla_layers():
    assert memory.kv_bytes_per_token(CFG, "bf16") == N_MLA * (KV_LORA + ROPE) * 2 == 27_648
    assert memory.kv_bytes_per_token(CFG, "fp8") == N_MLA * (KV_LORA + ROPE)
    assert memory.kv_bytes_per_token(CFG, "bf16", layers=range(46, 93)) == 13 * 576 * 2
    with pytest.raises(ValueError, match="kv_dtype"):
        memory.kv_bytes_per_token(CFG, "int3")


def test_kda_state_per_request():
    for tp in (8, 16):
        h = LIN_H // tp
        conv = (CONV_K - 1) * 3 * h * LIN_D * 2
        assert memory.kda_state_bytes_per_request(CFG, tp, "fp32") == N_KDA * (h * LIN_D * LIN_D * 4 + conv)
        assert memory.kda_state_bytes_per_request(CFG, tp, "bf16") == N_KDA * (h * LIN_D * LIN_D * 2 + conv)


def test_plan_mi355x_by_hand():
    p = memory.plan(CFG, "mi355x", 8, 8)
    cap = 288 * 10**9
    w = memory.weights_bytes_per_gpu(CFG, 8)
    assert p.capacity_bytes_per_gpu == cap
    assert p.reserve_bytes_per_gpu == round(0.1 * cap)
    assert p.kv_pool_bytes_per_gpu == cap - round(0.1 * cap) - w
    state = memory.kda_state_bytes_per_request(CFG, 8)
    assert p.max_kv_tokens == (p.kv_pool_bytes_per_gpu - state) // 27_648
    assert p.max_full_context_requests == p.kv_pool_bytes_per_gpu // (2**20 * 27_648 + state)
    assert p.fits and p.weights_fit
    assert p.free_bytes_per_gpu == 0


def test_plan_configurations():
    assert memory.plan(CFG, "b300", 8, 8).fits
    assert not memory.plan(CFG, "b200", 8, 8).weights_fit
    b200_192 = specs.load_gpu("b200").with_hbm_gb(192)
    assert not memory.plan(CFG, b200_192, 8, 8).fits
    assert not memory.plan(CFG, "h200", 8, 8).weights_fit
    assert memory.plan(CFG, "b200", 16, 16).fits
    pp = memory.plan(CFG, "b200", 16, 8, pp=2)
    assert pp.fits and pp.kv_bytes_per_token == 13 * 576 * 2
    fp8 = memory.plan(CFG, "mi355x", 8, 8, kv_dtype="fp8")
    assert fp8.max_kv_tokens > memory.plan(CFG, "mi355x", 8, 8).max_kv_tokens


@pytest.mark.parametrize("kwargs,match", [
    (dict(gpu="a100", num_gpus=8, tp=8), "known GPUs: b200, b300, h200, mi355x"),
    (dict(gpu="mi355x", num_gpus=7, tp=7), "does not divide the 96 attention heads"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, mem_fraction=0.0), r"mem_fraction must be in \(0, 1\]"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, mem_fraction=1.5), r"mem_fraction must be in \(0, 1\]"),
    (dict(gpu="mi355x", num_gpus=0, tp=8), "num_gpus must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=8, tp=-8), "tp must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, pp=0), "pp must be a positive integer"),
    (dict(gpu="mi355x", num_gpus=12, tp=8), "not a multiple of tp"),
    (dict(gpu="mi355x", num_gpus=8, tp=8, kv_dtype="fp4"), "kv_dtype"),
])
def test_plan_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        memory.plan(CFG, **kwargs)


def test_tp_must_divide_heads_for_weights_too():
    with pytest.raises(ValueError, match="does not divide the 96 attention heads"):
        memory.weights_bytes_per_gpu(CFG, tp=5)


def test_layout_covers_every_tensor_exactly():
    names = {t.name for t in memory.inventory(CFG)}
    assert names == set(memory.sharding_layout()["tensors"])


def test_cli_text_json_and_errors():
    out = io.StringIO()
    with redirect_stdout(out):
        assert memory.cli_main(["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--json"]) == 0
    d = json.loads(out.getvalue())
    assert d["fits"] is True and d["weights_bytes_per_gpu"] == memory.weights_bytes_per_gpu(CFG, 8)
    out = io.StringIO()
    with redirect_stdout(out):
        assert memory.cli_main(["--gpu", "b200", "--gpus", "8", "--tp", "8", "--hbm-gb", "192"]) == 0
    assert "weights fit: no" in out.getvalue()
    err = io.StringIO()
    with redirect_stderr(err):
        assert memory.cli_main(["--gpu", "nope", "--gpus", "8", "--tp", "8"]) == 2
    assert "known GPUs" in err.getvalue()
    err = io.StringIO()
    with redirect_stderr(err):
        assert memory.cli_main(["--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--mem-fraction", "2"]) == 2
    assert "mem_fraction" in err.getvalue()


def test_ep_a2a_variant_replicates_shared_experts():
    base = memory.weights_bytes_per_gpu(CFG, 8)
    ep = memory.weights_bytes_per_gpu(CFG, 8, layout=memory.layout_variant("ep_a2a"))
    assert ep - base == 2 * N_MOE * SHARED_LAYER * 7 // 8


def test_unknown_variant():
    with pytest.raises(ValueError, match="known: default"):
        memory.layout_variant("nope")
