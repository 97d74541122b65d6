"""k3lab.model.sharding: per-rank weight bytes under sglang 0.5.23's TP / PP / EP / DP layout.

Two independent references:

* ``data/measured/cpu-2core/sglang_0523_k3_rank_bytes.json``: sglang 0.5.23's real Kimi K3
  module (``KimiK3LinearForCausalLM``) built on the meta device, one process per rank, with
  the CUDA SM100 and ROCm/AITER platform checks emulated (benchmarks/sglang_k3_rank_bytes.py).
  Its "loaded" bytes per rank = parameters + buffers + the ``post_load_weights`` copies
  (MLA w_kc / w_vc) + the change the SM100 experts' ``process_weights_after_loading`` makes;
* a second, naive implementation in this file, written from the config numbers.
"""

import json

import pytest

from k3lab import memory, specs
from k3lab.model import sharding as sh
from k3lab.model.inventory import inventory
from k3lab.paths import MEASURED_DIR

CFG = specs.load_model("kimi-k3")
GiB = 2**30

# ---- the published Kimi K3 text config, written out (data/model/kimi_k3_config.json)
H, V = 7168, 163840
N_LAYERS, N_MLA, N_KDA, N_MOE = 93, 24, 69, 92
DENSE_I = 33792
E, LAT, MOE_I, N_SHARED = 896, 3584, 3072, 2
HEADS, Q_LORA, KV_LORA, NOPE, ROPE, VDIM = 96, 1536, 512, 128, 64, 128
LIN_H, LIN_D, CONV_K = 96, 128, 4
PROJ = LIN_H * LIN_D
EMBED = V * H
DENSE = 3 * H * DENSE_I
KDA_FP32_LAYER = 3 * PROJ * CONV_K + LIN_H + PROJ  # conv1d, A_log, dt_bias (fp32)
LATENT_LAYER = 2 * H * LAT + LAT  # routed_expert_{down,up}_proj (bf16) + norm
SHARED_LAYER = 3 * H * MOE_I * N_SHARED
NORMS = N_LAYERS * 6 * H + 3 * H
# per MLA layer, the TP-split tensors: q_b, kv_b (+ its runtime w_kc/w_vc copy), o, g (output gate)
MLA_SPLIT = Q_LORA * HEADS * (NOPE + ROPE) + 2 * KV_LORA * HEADS * (NOPE + VDIM) + 2 * HEADS * VDIM * H
# per KDA layer, the TP-split bf16 tensors: fused q/k/v/g, b_proj, f_b_proj, o_proj
KDA_SPLIT = 4 * H * PROJ + H * LIN_H + LIN_D * PROJ + PROJ * H


def naive_rank_bytes(tp: int, platform: str, k3opt: bool = False, sm100: bool = False,
                     dp_attention: bool = False) -> int:
    """A rank's bytes written from sglang 0.5.23's rules in a few lines: replicated tensors
    whole, the rest / tp; experts MXFP4 (17/32 B per value) with the per-rank intermediate
    aligned up (ROCm AITER 256, SGLANG_AITER_K3_OPT 128, CUDA 128); zero expert biases
    [2·I_rank] + [latent] per expert off ROCm (bf16, fp32 on SM100 plus three fp32 [E])."""
    replicated_bf16 = (N_MLA * (H * (Q_LORA + KV_LORA + ROPE) + Q_LORA + KV_LORA)
                       + N_KDA * (H * LIN_D + LIN_D) + N_MOE * (E * H + LATENT_LAYER) + NORMS)
    router_bias_fp32 = N_MOE * E * 4  # e_score_correction_bias, fp32 after loading
    split_bf16 = 2 * EMBED + DENSE + N_MLA * MLA_SPLIT + N_KDA * KDA_SPLIT + N_MOE * SHARED_LAYER
    split_fp32 = N_KDA * KDA_FP32_LAYER
    if dp_attention:  # attention-TP 1: attention weights and the input embedding whole
        moved_bf16 = EMBED + N_MLA * MLA_SPLIT + N_KDA * KDA_SPLIT
        replicated_bf16 += moved_bf16
        split_bf16 -= moved_bf16
        replicated_fp32, split_fp32 = split_fp32, 0
    else:
        replicated_fp32 = 0
    align = 256 if platform == "rocm" and not k3opt else 128
    per = -(-(MOE_I // tp) // align) * align
    experts = N_MOE * E * 3 * LAT * per * 17 // 32
    bias = 0
    if platform == "cuda":
        bias = N_MOE * E * (2 * per + LAT) * (4 if sm100 else 2) + (N_MOE * E * 3 * 4 if sm100 else 0)
    return (2 * replicated_bf16 + 4 * replicated_fp32 + router_bias_fp32 + 2 * split_bf16 // tp
            + 4 * split_fp32 // tp + experts + bias)


SETTINGS = {
    "cuda": (sh.Setting(), dict(platform="cuda")),
    "cuda-sm100": (sh.Setting(sm100=True), dict(platform="cuda", sm100=True)),
    "rocm-aiter": (sh.Setting("rocm"), dict(platform="rocm")),
    "rocm-aiter+k3opt": (sh.Setting("rocm", aiter_k3_opt=True), dict(platform="rocm", k3opt=True)),
}


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_rank_bytes_match_naive_implementation(tp, name):
    setting, kw = SETTINGS[name]
    assert sh.weights_bytes_per_gpu(CFG, tp, 1, setting) == naive_rank_bytes(tp, **kw)


@pytest.mark.parametrize("name", ["cuda-sm100", "rocm-aiter+k3opt"])
def test_dp_attention_matches_naive_implementation(name):
    setting, kw = SETTINGS[name]
    dp = sh.Setting(setting.platform, sm100=setting.sm100, aiter_k3_opt=setting.aiter_k3_opt, dp_attention=True)
    assert sh.weights_bytes_per_gpu(CFG, 8, 1, dp) == naive_rank_bytes(8, dp_attention=True, **kw)


# --------------------------------------------------------------------------- sglang 0.5.23, measured

MEASURED = MEASURED_DIR / "cpu-2core" / "sglang_0523_k3_rank_bytes.json"


@pytest.fixture(scope="module")
def measured():
    return json.loads(MEASURED.read_text(encoding="utf-8"))


def _loaded_bytes(case: dict) -> int:
    """sglang's bytes on the rank (the transcript's definition, see its bytes_note)."""
    proc = case["process_weights_after_loading"]
    return (case["totals"]["bytes"] + case["post_load"]["runtime_bytes"]
            + (proc["delta_bytes_rank"] if proc.get("ran") else 0))


# (gpu, variants, tp, pp) -> the transcript's heaviest-rank key and the GiB the brief quotes
PINNED = [
    ("b300", (), 8, 1, "tp8|cuda-sm100", 192.381),
    ("mi355x", (), 8, 1, "tp8|rocm-aiter", 247.174),
    ("mi355x", ("aiter-moe-pad",), 8, 1, "tp8|rocm-aiter", 247.174),
    ("mi355x", ("aiter-k3-opt",), 8, 1, "tp8|rocm-aiter+k3opt", 191.044),
    ("b300", (), 16, 1, "tp16|cuda-sm100", 130.200),
    ("b200", (), 16, 1, "tp16|cuda-sm100", 130.200),  # B200 (SM100) runs the same path
    ("b300", (), 8, 2, "tp8-pp2|cuda-sm100", 98.119),
    ("b300", ("dp-attention",), 8, 1, "tp8-dpattn8|cuda-sm100", 253.095),
    ("mi355x", ("aiter-k3-opt", "dp-attention"), 8, 1, "tp8-dpattn8|rocm-aiter+k3opt", 251.757),
]


@pytest.mark.parametrize("gpu, variants, tp, pp, key, gib", PINNED, ids=[p[4] + "+" + "+".join(p[1]) for p in PINNED])
def test_heaviest_rank_equals_sglang_real_module(measured, gpu, variants, tp, pp, key, gib):
    h = measured["heaviest"][key]
    w = memory.weights_bytes_per_gpu(CFG, tp=tp, pp=pp, variants=variants, gpu=gpu)
    assert w == h["loaded_bytes"]
    assert round(w / GiB, 3) == pytest.approx(gib, abs=1e-3)


_LAYOUT_VARIANTS = {"tp8": (), "tp16": (), "tp8-pp2": (), "tp8-dpattn8": ("dp-attention",),
                    "tp8-ep8": ("ep",), "tp8-ep8-a2a": ("ep-a2a",), "tp8-dpattn8-ep8-a2a": ("ep-a2a", "dp-attention")}
_PLATFORMS = {"cuda-sm100": ("nvidia", "sm100", ()), "rocm-aiter": ("amd", "gfx950", ()),
              "rocm-aiter+k3opt": ("amd", "gfx950", ("aiter-k3-opt",))}


def test_every_measured_rank_within_the_unmodelled_buffers(measured):
    """Every layout x platform x stage of the transcript. The only bytes k3lab does not model
    are ROCm mori's int32 ``expert_mask_gpu`` [E] buffer per MoE layer under EP all-to-all."""
    assert len(measured["cases"]) == 24  # 8 layout-stages x 3 platform cases
    for key, case in measured["cases"].items():
        layout, plat, stage = key.split("|")
        lay = measured["layouts"][layout]
        vendor, arch, extra = _PLATFORMS[plat]
        setting = sh.setting_for(vendor, _LAYOUT_VARIANTS[layout] + extra, arch)
        k3 = sh.stage_weights_bytes(CFG, lay["tp"], lay["pp"], setting)[int(stage.removeprefix("stage"))]
        unmodelled = sum(t["bytes"] for t in case["tensors"] if t["name"].endswith("expert_mask_gpu"))
        if "ep8-a2a" in layout and plat.startswith("rocm"):
            assert unmodelled == N_MOE * E * 4, key
        else:
            assert unmodelled == 0, key
        assert k3 == _loaded_bytes(case) - unmodelled, key


def test_rocm_has_no_zero_expert_biases(measured):
    # sglang 0.5.23 Mxfp4MoEMethod.create_weights: biases only "if with_bias or not _is_hip"
    for key, case in measured["cases"].items():
        names = {t["name"] for t in case["tensors"]}
        assert ("model.layers.{moe}.mlp.experts.w13_weight_bias" in names) == ("cuda" in key), key
    for setting, has in ((sh.Setting("rocm"), False), (sh.Setting("rocm", aiter_k3_opt=True), False),
                         (sh.Setting(), True), (sh.Setting(sm100=True), True)):
        rows = sh.rank_rows(CFG, 8, 1, 0, setting)
        assert any("zero bias" in r["tensor"] for r in rows) == has


def test_sm100_biases_fp32_and_situ_parameters():
    rows = {r["tensor"]: r for r in sh.rank_rows(CFG, 8, 1, 0, sh.Setting(sm100=True))}
    w13, w2 = rows["moe.experts.w13 (gate+up) zero bias (runtime)"], rows["moe.experts.w2 (down) zero bias (runtime)"]
    assert (w13["dtype"], w2["dtype"]) == ("fp32", "fp32")
    assert w13["rank_bytes"] == N_MOE * E * (2 * MOE_I // 8) * 4  # [E, 2·384] fp32 per layer
    assert w2["rank_bytes"] == N_MOE * E * LAT * 4                 # [E, 3584] fp32 per layer
    assert rows["moe.experts gemm1_alpha+beta+clamp_limit (runtime)"]["rank_bytes"] == N_MOE * 3 * E * 4
    plain = {r["tensor"]: r for r in sh.rank_rows(CFG, 8, 1, 0, sh.Setting())}
    assert plain["moe.experts.w2 (down) zero bias (runtime)"]["dtype"] == "bf16"
    assert "moe.experts gemm1_alpha+beta+clamp_limit (runtime)" not in plain


def test_aiter_padding_costs_a_third_more_expert_bytes():
    # 3072 / 8 = 384 per rank; AITER aligns to 256 -> 512 (sglang 0.5.23 mxfp4.py), SGLANG_AITER_K3_OPT to 128
    pad = memory.weights_bytes_per_gpu(CFG, 8, gpu="mi355x")
    opt = memory.weights_bytes_per_gpu(CFG, 8, variants=["aiter-k3-opt"], gpu="mi355x")
    assert pad - opt == N_MOE * E * 3 * LAT * (512 - 384) * 17 // 32
    experts = lambda s: sum(r["rank_bytes"] for r in sh.rank_rows(CFG, 8, 1, 0, s)  # noqa: E731
                            if r["component"] == "routed_experts")
    assert experts(sh.Setting("rocm")) == N_MOE * E * 3 * LAT * 512 * 17 // 32
    assert experts(sh.Setting("rocm")) * 3 == experts(sh.Setting("rocm", aiter_k3_opt=True)) * 4


def test_dp_attention_replicates_the_input_embedding(measured):
    rows = {r["tensor"]: r for r in sh.rank_rows(CFG, 8, 1, 0, sh.Setting(dp_attention=True))}
    assert rows["embed_tokens"]["rule"] == "replicated"
    assert rows["embed_tokens"]["rank_bytes"] == V * H * 2
    assert rows["lm_head"]["rank_bytes"] == V // 8 * H * 2  # lm_head stays vocab-parallel over TP
    plain = {r["tensor"]: r for r in sh.rank_rows(CFG, 8, 1, 0, sh.Setting())}
    assert plain["embed_tokens"]["rank_bytes"] == V // 8 * H * 2
    shapes = {t["name"]: t["shape"] for t in measured["cases"]["tp8-dpattn8|cuda-sm100|stage0"]["tensors"]}
    assert shapes["model.embed_tokens.weight"] == [V, H] and shapes["lm_head.weight"] == [V // 8, H]


def test_expert_parallel_whole_experts():
    rows = [r for r in sh.rank_rows(CFG, 8, 1, 0, sh.Setting("rocm", ep=True)) if r["component"] == "routed_experts"]
    w13 = next(r for r in rows if r["tensor"].startswith("moe.experts.w13"))
    # 896 / 8 = 112 whole experts per layer, intermediate 3072 unsplit (already 256-aligned)
    assert w13["copies_on_rank"] == N_MOE * E // 8 and w13["rank_shape"] == f"{2 * MOE_I}x{LAT}"
    # so on ROCm EP holds exactly the unpadded expert bytes, like SGLANG_AITER_K3_OPT
    assert memory.weights_bytes_per_gpu(CFG, 8, variants=["ep"], gpu="mi355x") == \
        naive_rank_bytes(8, "rocm", k3opt=True)


def test_ep_a2a_replicates_shared_experts():
    ep = memory.weights_bytes_per_gpu(CFG, 8, variants=["ep"], gpu="mi355x")
    a2a = memory.weights_bytes_per_gpu(CFG, 8, variants=["ep-a2a"], gpu="mi355x")
    assert a2a - ep == 2 * N_MOE * SHARED_LAYER * 7 // 8


def test_tp1_shard_is_the_checkpoint_without_mtp():
    for name in ("kimi-k3", "kimi-k2", "deepseek-v3"):
        cfg = specs.load_model(name)
        by = memory.checkpoint_bytes(cfg, by_component=True)
        assert sh.weights_bytes_per_gpu(cfg, 1, 1, runtime=False) == sum(by.values()) - by["mtp"], name


@pytest.mark.parametrize("tp,pp", [(1, 2), (2, 1), (4, 1), (8, 1), (16, 1), (8, 2), (4, 3)])
def test_sum_over_ranks_at_least_checkpoint(tp, pp):
    stages = sh.stage_weights_bytes(CFG, tp, pp, runtime=False)
    assert len(stages) == pp
    assert tp * sum(stages) >= memory.checkpoint_bytes(CFG)
    assert max(stages) == sh.weights_bytes_per_gpu(CFG, tp, pp, runtime=False)


def test_pp_stages_follow_sglang_split():
    # sglang get_pp_indices: the last n % pp stages get one extra layer
    assert sh.pp_stages(CFG, 1) == [(0, 93)]
    assert sh.pp_stages(CFG, 2) == [(0, 46), (46, 93)]
    assert sh.pp_stages(CFG, 4) == [(0, 23), (23, 46), (46, 69), (69, 93)]
    assert sh.pp_stages(CFG, 3) == [(0, 31), (31, 62), (62, 93)]


def test_pp2_heaviest_stage_holds_lm_head():
    s0, s1 = sh.stage_weights_bytes(CFG, 8, 2, sh.Setting(sm100=True))
    assert s1 > s0 and sh.heaviest_stage(CFG, 8, 2, sh.Setting(sm100=True)) == 1


def test_replication_is_the_largest_gap_at_tp8():
    t = sh.shard_table(CFG, 8, 1, sh.Setting("rocm", aiter_k3_opt=True))
    assert t["rank_bytes"].sum() == memory.weights_bytes_per_gpu(CFG, 8, variants=["aiter-k3-opt"], gpu="mi355x")
    by = t.groupby("component")["gap_bytes"].sum()
    # the latent projections are replicated: their gap is 7/8 of their checkpoint bytes
    assert by["latent_projections"] == pytest.approx(7 / 8 * 2 * N_MOE * LATENT_LAYER)
    assert by["latent_projections"] == by.max()
    assert 190 * GiB < t["rank_bytes"].sum() < 192 * GiB  # AMD: "about 191 GiB"


def test_every_inventory_tensor_has_a_rule():
    rules = set(sh.layout_rules().tensors)
    for name in ("kimi-k3", "kimi-k2", "deepseek-v3"):
        names = {t.scale_of or t.name for t in inventory(specs.load_model(name)) if t.stage != "mtp"}
        assert names <= rules, name


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("variants, match", [
    (["nope"], r"unknown variant\(s\) \['nope'\]"),
    (["aiter-moe-pad", "aiter-k3-opt"], "contradict"),
    (["ep", "ep-a2a"], "give one of the variants ep and ep-a2a"),
])
def test_setting_for_rejects_bad_variants(variants, match):
    with pytest.raises(ValueError, match=match):
        sh.setting_for("amd", variants, "gfx950")


@pytest.mark.parametrize("variant", ["aiter-k3-opt", "aiter-moe-pad"])
def test_aiter_variants_refused_on_nvidia(variant):
    with pytest.raises(ValueError, match="ROCm"):
        sh.setting_for("nvidia", [variant], "sm100")
    with pytest.raises(ValueError, match="ROCm"):
        memory.weights_bytes_per_gpu(CFG, 8, variants=[variant], gpu="b300")


def test_setting_validation():
    with pytest.raises(ValueError, match="platform must be 'cuda' or 'rocm'"):
        sh.Setting("tpu")
    with pytest.raises(ValueError, match="ROCm GPUs only"):
        sh.Setting("cuda", aiter_k3_opt=True)
    assert sh.setting_for("nvidia", [], "sm103").sm100 and not sh.setting_for("nvidia", [], "sm90").sm100
    assert sh.setting_for("amd", ["ep-a2a"], "gfx950").ep  # ep-a2a implies ep


@pytest.mark.parametrize("tp, pp, match", [
    (5, 1, "tp=5 does not divide the 96 attention heads"),
    (64, 1, "tp=64 does not divide the 96 attention heads"),
    (0, 1, "tp must be a positive integer"),
    (8, 0, "pp must be a positive integer"),
    (8, 94, "pp=94 exceeds the 93 layers"),
    (3, 1, "does not divide the padded vocabulary"),
])
def test_layouts_the_model_cannot_shard(tp, pp, match):
    with pytest.raises(ValueError, match=match):
        sh.weights_bytes_per_gpu(CFG, tp, pp)
