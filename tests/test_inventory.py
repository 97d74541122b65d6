"""k3lab.model.inventory and k3lab.model.quant: parameters and checkpoint bytes of the model
family (Kimi K3, Kimi K2, DeepSeek-V3) from their published configs.

Expected values: a second implementation written here from the config numbers (quoted in
the comments), and the published totals with their sources. Kimi K3's own hand count lives
in tests/test_memory.py."""

import copy
import json
import math

import pytest

from k3lab import data, memory, specs
from k3lab.model import inventory as inv
from k3lab.model import quant
from k3lab.paths import data_path

K3 = specs.load_model("kimi-k3")
K2 = specs.load_model("kimi-k2")
DS = specs.load_model("deepseek-v3")


def _cdiv(a, b):
    return -(-a // b)


class MlaMoe:
    """A DeepSeek-V3-style MLA + MoE model written out from its config numbers: its
    parameters, active parameters and FP8 checkpoint bytes (e4m3 Linear weights with one
    fp32 scale per 128×128 block; embeddings, norms and the router in bf16; the router's
    e_score_correction_bias in fp32, as the public per-tensor listings show)."""

    def __init__(self, H, V, L, dense, I, E, k, shared, moe_I, heads, q_lora, kv_lora, nope, rope, vdim, mtp):
        self.__dict__.update(locals())
        self.mla_linears = [(q_lora, H), (kv_lora + rope, H), (heads * (nope + rope), q_lora),
                            (heads * (nope + vdim), kv_lora), (H, heads * vdim)]
        self.mla_other = q_lora + kv_lora  # q_a / kv_a layernorms
        self.dense_linears = [(I, H), (I, H), (H, I)]
        self.shared_linears = [(moe_I * shared, H), (moe_I * shared, H), (H, moe_I * shared)]
        self.expert_linears = [(moe_I, H), (moe_I, H), (H, moe_I)]

    @staticmethod
    def numel(linears):
        return sum(o * i for o, i in linears)

    @staticmethod
    def fp8_bytes(linears):
        return sum(o * i + 4 * _cdiv(o, 128) * _cdiv(i, 128) for o, i in linears)

    def moe_layer_params(self):
        return (self.E * self.H + self.E + self.numel(self.shared_linears)
                + self.E * self.numel(self.expert_linears))

    def mla_params(self):
        return self.numel(self.mla_linears) + self.mla_other

    def main_params(self):
        H, L = self.H, self.L
        return (2 * self.V * H + L * (self.mla_params() + 2 * H) + self.dense * self.numel(self.dense_linears)
                + (L - self.dense) * self.moe_layer_params() + H)

    def mtp_params(self):
        # per MTP module: embed_tokens and shared_head.head copies, eh_proj [H, 2H], enorm,
        # hnorm, shared_head.norm, and one MLA + MoE layer with its two norms
        H = self.H
        return self.mtp * (2 * self.V * H + 2 * H * H + 3 * H + self.mla_params() + self.moe_layer_params() + 2 * H)

    def active(self):
        routed = (self.L - self.dense) * self.E * self.numel(self.expert_linears)
        return self.main_params() - routed + routed * self.k // self.E - self.V * self.H

    def checkpoint(self):
        H, V, L, E = self.H, self.V, self.L, self.E
        moe = (2 * E * H + 4 * E + self.fp8_bytes(self.shared_linears) + E * self.fp8_bytes(self.expert_linears))
        mla = self.fp8_bytes(self.mla_linears) + 2 * self.mla_other
        main = (2 * 2 * V * H + L * (mla + 2 * 2 * H) + self.dense * self.fp8_bytes(self.dense_linears)
                + (L - self.dense) * moe + 2 * H)
        mtp = self.mtp * (2 * (2 * V * H + 2 * H * H + 3 * H + 2 * H) + mla + moe)  # eh_proj bf16
        return main + mtp


# DeepSeek-V3 config.json: hidden 7168, vocab 129280, 61 layers (3 dense, FFN 18432), 256
# routed experts top-8 + 1 shared (2048 each), 128 heads, q_lora 1536, kv_lora 512,
# nope 128, rope 64, v 128, one MTP module
DS_HAND = MlaMoe(H=7168, V=129280, L=61, dense=3, I=18432, E=256, k=8, shared=1, moe_I=2048, heads=128,
                 q_lora=1536, kv_lora=512, nope=128, rope=64, vdim=128, mtp=1)
# Kimi-K2-Instruct config.json: hidden 7168, vocab 163840, 61 layers (1 dense, FFN 18432),
# 384 routed experts top-8 + 1 shared (2048 each), 64 heads, same MLA ranks, no MTP
K2_HAND = MlaMoe(H=7168, V=163840, L=61, dense=1, I=18432, E=384, k=8, shared=1, moe_I=2048, heads=64,
                 q_lora=1536, kv_lora=512, nope=128, rope=64, vdim=128, mtp=0)


# --------------------------------------------------------------------------- parameters


def test_deepseek_v3_params_by_hand_and_published():
    pc = memory.count_params(DS)
    assert pc.total_without_mtp == DS_HAND.main_params()
    assert pc.total == DS_HAND.main_params() + DS_HAND.mtp_params()
    assert pc.breakdown["mtp"] == DS_HAND.mtp_params()
    # deepseek-ai/DeepSeek-V3 README: "671B total parameters ... 685B, which includes 671B of
    # the Main Model weights and 14B of the Multi-Token Prediction (MTP) Module weights"
    assert pc.total_without_mtp == pytest.approx(671e9, rel=0.01)
    assert pc.total == pytest.approx(685e9, rel=0.01)
    assert 13e9 < pc.total - pc.total_without_mtp < 15e9
    assert round(pc.total_without_mtp / 1e9, 2) == 671.03 and round(pc.total / 1e9, 2) == 684.49


def test_deepseek_v3_active_params():
    pc = memory.count_params(DS)
    assert pc.active == DS_HAND.active()
    # README: "with 37B activated for each token": agrees at the figure's own precision
    # (36.63B rounds to 37; within 1% it would not be: 1.0% off)
    assert round(pc.active / 1e9) == 37
    assert pc.active_with_embedding == pc.active + 129280 * 7168


def test_kimi_k2_params_by_hand_and_published():
    pc = memory.count_params(K2)
    # public per-tensor listing of Kimi-K2-Instruct (61 shards), parameters excluding the
    # weight_scale_inv tensors: 1,026,408,232,448
    assert pc.total == K2_HAND.main_params() == 1_026_408_232_448
    assert pc.total == pytest.approx(1.026e12, rel=0.01)
    assert pc.total_without_mtp == pc.total and pc.breakdown["mtp"] == 0
    # Kimi K2 README: "32 billion activated parameters and 1 trillion total parameters"
    assert pc.active == K2_HAND.active()
    assert round(pc.active / 1e9) == 32  # the README's figure at its own precision (31.69B)


def test_breakdown_sums_and_zero_components():
    for cfg in (K2, DS):
        pc = memory.count_params(cfg)
        assert sum(pc.breakdown.values()) == pc.total
        assert pc.breakdown["kda_attention"] == 0 and pc.breakdown["latent_projections"] == 0
        assert set(pc.breakdown) == set(inv.COMPONENTS)
    # DeepSeek-V3's first 3 layers are dense: 3 × 3 × 7168 × 18432
    assert memory.count_params(DS).breakdown["dense_mlp"] == 3 * 3 * 7168 * 18432
    assert memory.count_params(DS).breakdown["routed_experts"] == 58 * 256 * 3 * 7168 * 2048


# --------------------------------------------------------------------------- checkpoint bytes

# Public per-tensor listings (the checkpoint as stored, scales included):
K2_LISTING_BYTES = 1_029_173_256_720
DS_LISTING_BYTES = 688_574_839_360


def test_deepseek_v3_checkpoint_bytes():
    assert DS_HAND.checkpoint() == DS_LISTING_BYTES  # the second implementation reproduces the listing
    ck = memory.checkpoint_bytes(DS)
    assert ck == pytest.approx(DS_LISTING_BYTES, rel=0.01)
    # the only difference tolerated: the router bias width (fp32 in the listing), 59 MoE layers × 256
    assert 0 <= DS_LISTING_BYTES - ck <= 59 * 256 * 2


def test_kimi_k2_checkpoint_bytes():
    ck = memory.checkpoint_bytes(K2)
    assert ck == pytest.approx(K2_LISTING_BYTES, rel=0.01)
    assert ck == pytest.approx(K2_HAND.checkpoint(), abs=60 * 384 * 2)


def test_fp8_block_scales_follow_their_weight():
    t = {x.name: x for x in inv.inventory(DS)}
    # q_b_proj [128·192, 1536] -> scales [ceil(24576/128), ceil(1536/128)] = [192, 12]
    assert t["mla.q_b_proj.weight_scale_inv"].shape == (192, 12)
    assert t["mla.q_b_proj.weight_scale_inv"].kind == "scale" and t["mla.q_b_proj"].dtype == "fp8"
    # kv_a_proj_with_mqa [576, 7168] -> a partial last block: [5, 56]
    assert t["mla.kv_a_proj_with_mqa.weight_scale_inv"].shape == (5, 56)
    # scales are checkpoint bytes, not parameters
    assert all(not x.is_param and x.in_checkpoint for x in t.values() if x.kind == "scale")


def test_routed_expert_bytes_by_format():
    # K3: MXFP4 gate + up [3072, 3584] and down [3584, 3072]: 3 × 3584 × 3072 × 17/32 bytes
    assert memory.routed_expert_bytes(K3) == 3 * 3584 * 3072 * 17 // 32 == 17_547_264
    # K2: FP8 [2·2048, 7168] + [7168, 2048] + fp32 scales (32 × 56 + 56 × 16 blocks)
    assert memory.routed_expert_bytes(K2) == 3 * 2048 * 7168 + 4 * (32 * 56 + 56 * 16)


# --------------------------------------------------------------------------- quantisation section


def test_schemes_come_from_the_config():
    assert quant.scheme(K3)["name"] == "mxfp4" and quant.scheme(K3)["targets"] == ["Linear"]
    for cfg in (K2, DS):
        s = quant.scheme(cfg)
        assert s["name"] == "fp8_block" and s["block"] == (128, 128)


def test_k3_dtypes_per_tensor_group():
    t = {x.name: x.dtype for x in inv.inventory(K3)}
    # compressed-tensors MXFP4 on every Linear except the ignore list (self_attn, shared_experts,
    # dense mlp, lm_head): only the routed experts stay MXFP4 ...
    assert t["moe.experts.w13 (gate+up)"] == t["moe.experts.w2 (down)"] == "mxfp4"
    for name in ("mla.q_b_proj", "kda.q_k_v_g_proj", "moe.shared_experts.down_proj", "dense_mlp.down_proj",
                 "lm_head", "embed_tokens"):
        assert t[name] == "bf16", name
    # ... and the latent projections, which the ignore list does not match, are BF16 by the
    # storage override (data/model/storage_overrides.yaml: the checkpoint's shard payload)
    assert t["moe.routed_expert_down_proj"] == t["moe.routed_expert_up_proj"] == "bf16"
    assert t["kda.qkv_conv1d"] == t["kda.A_log"] == "fp32"


def test_storage_overrides_make_the_latent_projections_bf16():
    over = quant.storage_overrides()
    assert over["kimi-k3"] == {"moe.routed_expert_down_proj": "bf16", "moe.routed_expert_up_proj": "bf16"}
    assert over["deepseek-v3"] == {"mtp0.eh_proj": "bf16"}
    # the config read literally (a model of another name gets no overrides): MXFP4 latent projections
    literal = specs.model_from_dict(_raw("kimi_k3_config.json"), name="k3-literal-reading")
    t = {x.name: x.dtype for x in inv.inventory(literal)}
    assert t["moe.routed_expert_down_proj"] == t["moe.routed_expert_up_proj"] == "mxfp4"
    # 92 MoE layers × 2 × [3584 × 7168], bf16 (2 B) vs MXFP4 (17/32 B)
    latent = 92 * 2 * 3584 * 7168
    assert memory.checkpoint_bytes(K3) - memory.checkpoint_bytes(literal) == latent * 2 - latent * 17 // 32
    assert 1.552e12 < memory.checkpoint_bytes(literal) < 1.554e12  # "MXFP4 latent projections would give ~1.553 TB"


def test_unknown_override_tensor_is_an_error(monkeypatch):
    monkeypatch.setattr(quant, "storage_overrides", lambda: {"kimi-k3": {"moe.no_such_tensor": "bf16"}})
    with pytest.raises(data.DataError, match=r"storage_overrides.yaml: kimi-k3: no such tensor\(s\) \['moe.no_such_tensor'\]"):
        quant.apply(K3, [])


def _raw(fname):
    with open(data_path("model", fname), encoding="utf-8") as f:
        return json.load(f)


def _with_quant(fname, q, name):
    raw = copy.deepcopy(_raw(fname))
    tc = raw.get("text_config", raw)
    if "quantization_config" in tc:
        tc["quantization_config"] = q
    else:
        raw["quantization_config"] = q
    return specs.model_from_dict(raw, name=name)


@pytest.mark.parametrize("fname, q, field", [
    ("deepseek_v3_config.json", {"quant_method": "gptq", "bits": 4}, "quantization_config.quant_method"),
    ("deepseek_v3_config.json", {"quant_method": "fp8"}, "quantization_config.weight_block_size"),
    ("deepseek_v3_config.json", {"quant_method": "fp8", "weight_block_size": [128]},
     "quantization_config.weight_block_size"),
    ("deepseek_v3_config.json", {"quant_method": "fp8", "weight_block_size": [0, 128]},
     "quantization_config.weight_block_size"),
    ("kimi_k3_config.json", {"quant_method": "compressed-tensors",
                             "config_groups": {"g": {"format": "int-quantized", "targets": ["Linear"],
                                                     "weights": {"num_bits": 8, "type": "int", "group_size": 128}}}},
     "quantization_config.config_groups"),
    ("kimi_k3_config.json", {"quant_method": "compressed-tensors", "config_groups": {"a": {}, "b": {}}},
     "quantization_config.config_groups"),
])
def test_quantisation_not_understood_names_the_field(fname, q, field, request):
    cfg = _with_quant(fname, q, name=f"bad-quant-{request.node.callspec.id}")
    with pytest.raises(ValueError, match=f"model config 'bad-quant-.*': {field.replace('.', '[.]')}"):
        quant.scheme(cfg)
    with pytest.raises(ValueError, match=field.replace(".", "[.]")):
        memory.count_params(cfg)


def test_quantisation_is_read_from_the_config_not_the_name():
    """The same sizes with a different quantisation section must give a different checkpoint
    (or a ValueError), whatever configs were inventoried before. The inventory cache is keyed
    by the ModelConfig, so its equality must include ``quantization`` (``quant_key``); a second
    config that differs only there must not get the first one's inventory back."""
    raw = _raw("deepseek_v3_config.json")
    fp8 = specs.model_from_dict(raw, name="ds-cache-check")
    unquantised = copy.deepcopy(raw)
    del unquantised["quantization_config"]
    bf16 = specs.model_from_dict(unquantised, name="ds-cache-check")
    fp8_bytes = memory.checkpoint_bytes(fp8)
    # every parameter in bf16 (2 B), no scales — but the router's e_score_correction_bias, which
    # the checkpoints keep in fp32: 58 MoE layers + the MTP layer, 256 experts each, 2 B more
    router_bias_extra = 2 * (58 + 1) * 256
    assert memory.checkpoint_bytes(bf16) == 2 * memory.count_params(bf16).total + router_bias_extra != fp8_bytes
    broken = _with_quant("deepseek_v3_config.json", {"quant_method": "gptq"}, name="ds-cache-check")
    with pytest.raises(ValueError, match="quant_method"):
        memory.checkpoint_bytes(broken)


def test_no_quantisation_section_is_bf16():
    raw = copy.deepcopy(_raw("kimi_k2_config.json"))
    del raw["quantization_config"]
    cfg = specs.model_from_dict(raw, name="k2-bf16")
    assert quant.scheme(cfg) == {"name": "none"}
    # bf16 everywhere but the fp32 router bias: Kimi K2 has 60 MoE layers of 384 experts
    assert memory.checkpoint_bytes(cfg) == 2 * memory.count_params(cfg).total + 2 * 60 * 384


def test_nbytes():
    assert quant.nbytes(32, "mxfp4") == 17 and quant.nbytes(64, "mxfp4") == 34
    assert quant.nbytes(10, "fp32") == 40 and quant.nbytes(10, "fp8") == 10
    with pytest.raises(ValueError, match="not a whole number of 32-blocks"):
        quant.nbytes(33, "mxfp4")
    with pytest.raises(ValueError, match="unknown dtype 'int4'"):
        quant.nbytes(8, "int4")


def test_tensor_counts():
    t = {x.name: x for x in inv.inventory(K3)}
    w13 = t["moe.experts.w13 (gate+up)"]
    assert w13.copies == 92 * 896 and w13.numel == 92 * 896 * 2 * 3072 * 3584
    assert w13.active_fraction == (16, 896)
    assert t["embed_tokens"].copies == 1 and t["embed_tokens"].stage == "first"
    assert math.prod(t["kda.qkv_conv1d"].shape) == 3 * 12288 * 4
