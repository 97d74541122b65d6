"""k3lab.specs: model configs, the GPU table, the one Deployment type and parse_layout.

Expected values are written out by hand from the published configs (the numbers quoted in
each comment) and from the driver readings and vendor labels named in data/hardware.yaml,
never taken from the code under test."""

import copy
import json
import math

import pytest

from k3lab import data, specs
from k3lab.paths import data_path

# --------------------------------------------------------------------------- models


def test_kimi_k3_config_fields():
    m = specs.load_model("kimi-k3")
    # published moonshotai/Kimi-K3 text_config: 896 experts top-16, 93 layers, 1M context
    assert (m.num_experts, m.num_experts_per_token, m.num_hidden_layers, m.max_position_embeddings) == \
        (896, 16, 93, 1048576)
    # every 4th layer is MLA (4, 8, ..., 92) plus the last one (93): 24 MLA, 69 KDA
    assert m.num_mla_layers == 24 and m.num_kda_layers == 69 and m.num_moe_layers == 92
    assert m.full_attn_layers[:2] == (4, 8) and m.full_attn_layers[-2:] == (92, 93)
    assert m.qk_head_dim == 128 + 64 and m.v_head_dim == 128
    assert m.num_nextn_predict_layers == 0
    assert m.has_kda and m.has_latent_moe and m.routed_expert_hidden_size == 3584
    assert (m.linear_attn_num_heads, m.linear_attn_head_dim, m.short_conv_kernel_size) == (96, 128, 4)
    assert m.mla_use_output_gate and m.attn_res and not m.tie_word_embeddings
    assert "moonshotai/Kimi-K3" in m.provenance


def test_kimi_k2_and_deepseek_v3_fields():
    # Kimi K2 README "Model Summary": 61 layers incl. 1 dense, 384 experts, 8 selected,
    # 1 shared, 64 heads, vocab 160K (163840), context 128K; no KDA, no latent MoE, no MTP
    k2 = specs.load_model("kimi-k2")
    assert (k2.num_hidden_layers, k2.first_k_dense_replace, k2.num_experts, k2.num_experts_per_token,
            k2.num_shared_experts, k2.num_attention_heads, k2.vocab_size, k2.max_position_embeddings) == \
        (61, 1, 384, 8, 1, 64, 163840, 131072)
    assert not k2.has_kda and k2.kda_layers == () and k2.num_mla_layers == 61
    assert not k2.has_latent_moe and k2.num_nextn_predict_layers == 0
    assert (k2.linear_attn_num_heads, k2.linear_attn_head_dim) == (0, 0)
    # DeepSeek-V3 config.json: 61 layers, first 3 dense, n_routed_experts 256 (an alias of
    # num_experts), top-8, 128 heads, vocab 129280, one MTP layer
    ds = specs.load_model("deepseek-v3")
    assert (ds.num_hidden_layers, ds.first_k_dense_replace, ds.num_experts, ds.num_experts_per_token,
            ds.num_attention_heads, ds.vocab_size, ds.num_nextn_predict_layers) == \
        (61, 3, 256, 8, 128, 129280, 1)
    assert ds.num_moe_layers == 58 and not ds.has_kda


def test_model_names_are_case_insensitive_and_unknown_lists_known():
    assert specs.load_model("Kimi-K3") == specs.load_model("kimi-k3")
    assert specs.load_model("Kimi-K3").name == "kimi-k3"
    assert specs.known_models() == ["deepseek-v3", "kimi-k2", "kimi-k3"]
    with pytest.raises(ValueError, match="unknown model 'gpt-5'; known models: deepseek-v3, kimi-k2, kimi-k3"):
        specs.load_model("gpt-5")


def _raw():
    with open(data_path("model", "kimi_k3_config.json"), encoding="utf-8") as f:
        return json.load(f)


def test_model_validation_catches_bad_layer_lists():
    bad = _raw()
    bad["text_config"]["linear_attn_config"]["kda_layers"].append(4)  # 4 is also MLA
    with pytest.raises(ValueError, match="partition layers 1..93"):
        specs.model_from_dict(bad)


@pytest.mark.parametrize("key, val, msg", [
    ("hidden_size", -1, "'hidden_size' must be positive"),
    ("num_experts", 8.5, "'num_experts' must be an integer"),
    ("num_attention_heads", True, "'num_attention_heads' must be an integer"),
    ("num_experts_per_token", 1000, "exceeds num_experts"),
    ("num_key_value_heads", 7, "num_key_value_heads must divide num_attention_heads"),
    ("first_k_dense_replace", 94, "first_k_dense_replace exceeds num_hidden_layers"),
    ("quantization_config", [1], "'quantization_config' must be an object"),
])
def test_model_validation_catches_bad_numbers(key, val, msg):
    bad = _raw()
    bad["text_config"][key] = val
    with pytest.raises(ValueError, match=msg):
        specs.model_from_dict(bad, where="data/model/x.json")


def test_model_validation_names_file_and_missing_field():
    bad = _raw()
    del bad["text_config"]["vocab_size"]
    with pytest.raises(ValueError, match=r"^data/model/x.json: missing required field 'vocab_size'"):
        specs.model_from_dict(bad, where="data/model/x.json")
    with pytest.raises(ValueError, match="expected a JSON object"):
        specs.model_from_dict([1, 2])


def test_config_without_text_config_and_aliases():
    # a DeepSeek-style flat config names its experts n_routed_experts / num_experts_per_tok
    tc = copy.deepcopy(_raw()["text_config"])
    tc.pop("linear_attn_config")
    tc["n_routed_experts"] = tc.pop("num_experts")
    tc["num_experts_per_tok"] = tc.pop("num_experts_per_token")
    m = specs.model_from_dict(tc, name="flat")
    assert (m.num_experts, m.num_experts_per_token) == (896, 16)
    assert m.full_attn_layers == tuple(range(1, 94)) and not m.has_kda


# --------------------------------------------------------------------------- GPUs

MiB = 2**20


def test_gpu_table_units_and_provenance():
    assert specs.known_gpus() == ["b200", "b300", "gb200", "h100", "h200", "mi300x", "mi325x", "mi350x", "mi355x"]
    for name in specs.known_gpus():
        g = specs.load_gpu(name)
        assert g.hbm_label_gb > 0 and g.usable_hbm_gb > 0 and g.hbm_bw_tb_s > 0
        assert g.vendor in ("amd", "nvidia")
        assert set(g.provenance) >= {"hbm_label_gb", "usable_hbm_gb", "hbm_bw_tb_s", "board_power_w"}
        assert all(isinstance(t, str) and t for t in g.provenance.values()), name


def test_usable_hbm_is_the_driver_reading():
    # driver readings quoted in data/hardware.yaml's source "driver_readings":
    # rocm-smi / torch total_memory: MI355X 309,220,868,096 B, MI300X 206,141,652,992 B;
    # nvidia-smi: H100 81,559 MiB, H200 143,771 MiB, B200 183,359 MiB, B300 275,040 MiB
    expected = {"mi355x": 309_220_868_096, "mi300x": 206_141_652_992, "h100": 81_559 * MiB,
                "h200": 143_771 * MiB, "b200": 183_359 * MiB, "b300": 275_040 * MiB}
    for name, b in expected.items():
        assert specs.load_gpu(name).usable_hbm_bytes == b, name
    mi = specs.load_gpu("MI355X")
    # AMD labels the MI355X "288 GB", which is 288 GiB; the driver shows 287.98 GiB of it
    assert mi.hbm_label_gb == 288 and mi.usable_hbm_gib == pytest.approx(309_220_868_096 / 2**30)
    assert 287.9 < mi.usable_hbm_gib < 288.0
    # the B300's "288 GB" label is decimal: 275,040 MiB = 268.6 GiB
    b300 = specs.load_gpu("b300")
    assert b300.hbm_label_gb == 288 and b300.usable_hbm_gib == pytest.approx(275_040 / 1024)


def test_gpu_derived_properties():
    mi = specs.load_gpu("mi355x")
    assert mi.short == "MI355X" and mi.arch == "gfx950" and mi.vendor == "amd"
    # MI355X data sheet: MXFP4 10.1 PF dense is its fastest dense peak
    assert mi.peak_dense_flops == pytest.approx(10_100e12)
    # H200 has no FP4 (value null -> 0); FP8 1,979 TFLOPS dense (3,958 with sparsity, halved)
    h200 = specs.load_gpu("h200")
    assert h200.dense_fp4_tflops == 0 and h200.peak_dense_flops == pytest.approx(1_979e12)
    assert specs.load_gpu("gb200").scale_up_domain_gpus == 72


def test_capacity_override():
    b200 = specs.load_gpu("b200")
    art = b200.with_hbm_gb(192)  # the article's "192GB" B200
    assert art.usable_hbm_bytes == 192 * 10**9 and art.key == "b200@192GB"
    assert art.hbm_bw_tb_s == b200.hbm_bw_tb_s
    for bad in (0, -1, float("nan"), float("inf"), "192", True):
        with pytest.raises(ValueError, match="HBM capacity"):
            b200.with_hbm_gb(bad)


def test_unknown_gpu_lists_known():
    with pytest.raises(ValueError, match=r"unknown GPU 'tpu7'; known GPUs: b200, b300, gb200, h100, h200, "
                                         r"mi300x, mi325x, mi350x, mi355x"):
        specs.load_gpu("tpu7")
    # a near miss names the nearest known GPU first
    with pytest.raises(ValueError, match=r"unknown GPU 'MI355' \(did you mean 'mi355x'\?\); known GPUs: b200"):
        specs.load_gpu("MI355")


def test_scale_out_link_units():
    link = specs.scale_out_link()
    assert link["gbit_s"] == 195  # the article: "RoCE v2 at ~195 Gb/s"
    assert link["gbyte_s"] == link["gbit_s"] / 8
    with pytest.raises(ValueError, match="unknown scale-out link"):
        specs.scale_out_link("carrier-pigeon")


# --------------------------------------------------------------------------- Deployment


def test_deployment_defaults_and_derived_counts():
    d = specs.Deployment("b200", 16, 16)
    assert (d.pp, d.dcp, d.ep, d.dp_attention, d.hbm_gb) == (1, 1, False, False, None)
    assert d.gpus_per_node == 8  # the B200's 8-GPU NVLink domain
    assert d.label == "16×B200 TP16" and d.id == "16xb200_tp16"
    assert (d.replicas, d.num_nodes, d.tp_nodes) == (1, 2, 2)
    r = specs.Deployment("mi355x", 16, 8)  # two TP8 replicas
    assert (r.replicas, r.num_nodes, r.tp_nodes) == (2, 2, 1)
    nvl = specs.Deployment("gb200", 16, 16)  # one NVL72 domain holds all 16
    assert (nvl.num_nodes, nvl.tp_nodes) == (1, 1)


def test_deployment_label_and_capacity_override():
    d = specs.Deployment("b200", 16, 8, pp=2, dcp=4, ep=True, dp_attention=True, hbm_gb=192)
    assert d.label == "16×B200 TP8×PP2+DCP4 EP DP-attn (192 GB)"
    assert d.gpu_spec.usable_hbm_bytes == 192 * 10**9
    assert specs.Deployment("b200", 8, 8).gpu_spec.usable_hbm_bytes == 183_359 * MiB
    named = specs.Deployment("b300", 8, 8, dcp=8, id="b300_tp8_dcp", label="8×B300 TP8+DCP")
    assert (named.id, named.label) == ("b300_tp8_dcp", "8×B300 TP8+DCP")


@pytest.mark.parametrize("args, kw, match", [
    (("a100", 8, 8), {}, "unknown GPU 'a100'"),
    (("b200", 0, 8), {}, "num_gpus must be a positive integer"),
    (("b200", 8, 0), {}, "tp must be a positive integer"),
    (("b200", 8, True), {}, "tp must be a positive integer"),
    (("b200", 8, 8.0), {}, "tp must be a positive integer"),
    (("b200", 8, 8), {"pp": -1}, "pp must be a positive integer"),
    (("b200", 12, 8), {}, "num_gpus=12 is not a multiple of tp x pp = 8"),
    (("b200", 16, 8), {"pp": 4}, "not a multiple of tp x pp = 32"),
    (("b200", 8, 8), {"dcp": 3}, "dcp=3 must divide tp=8"),
    (("b200", 8, 8), {"ep": "yes"}, "ep must be true or false"),
    (("b200", 8, 8), {"dp_attention": 1}, "dp_attention must be true or false"),
    (("b200", 8, 8), {"hbm_gb": 0}, "hbm_gb must be positive"),
    (("b200", 8, 8), {"gpus_per_node": 0}, "gpus_per_node must be a positive integer"),
])
def test_deployment_validation(args, kw, match):
    with pytest.raises(ValueError, match=match):
        specs.Deployment(*args, **kw)


# --------------------------------------------------------------------------- parse_layout


@pytest.mark.parametrize("text, want", [
    ("8xmi355x tp8", dict(gpu="mi355x", num_gpus=8, tp=8)),
    ("16xb200 tp8 pp2", dict(gpu="b200", num_gpus=16, tp=8, pp=2)),
    ("8xMI355X TP8", dict(gpu="mi355x", num_gpus=8, tp=8)),
    ("8xb300 tp8 dcp8", dict(gpu="b300", num_gpus=8, tp=8, dcp=8)),
    ("8xb200 tp8 ep dp-attention", dict(gpu="b200", num_gpus=8, tp=8, ep=True, dp_attention=True)),
    ("8xb200  tp8   hbm192", dict(gpu="b200", num_gpus=8, tp=8, hbm_gb=192.0)),
    ("8xb200 tp8 hbm179.5", dict(gpu="b200", num_gpus=8, tp=8, hbm_gb=179.5)),
    ("32xmi355x tp8 pp2", dict(gpu="mi355x", num_gpus=32, tp=8, pp=2)),
])
def test_parse_layout_grammar(text, want):
    d = specs.parse_layout(text)
    assert d == specs.Deployment(**want)
    assert isinstance(d.tp, int) and isinstance(d.num_gpus, int)


@pytest.mark.parametrize("text, match", [
    ("", "a layout must be a string"),
    ("   ", "a layout must be a string"),
    (8, "a layout must be a string"),
    (None, "a layout must be a string"),
    ("eightxb200 tp8", r"cannot read '<N>x<gpu>' from 'eightxb200'"),
    ("b200 tp8", r"cannot read '<N>x<gpu>' from 'b200'"),
    ("8xb200", "no tp<T>"),
    ("8xb200 pp2", "no tp<T>"),
    ("8xb200 tp8 fast", "unknown part 'fast'"),
    ("8xb200 tp", "unknown part 'tp'"),
    ("8xb200 tp8 hbm1.5.5", "unknown part 'hbm1.5.5'"),
    ("8xb200 tp-8", "unknown part 'tp-8'"),
    ("8xa100 tp8", "unknown GPU 'a100'"),
    ("12xb200 tp8", "not a multiple of tp x pp"),
    ("0xb200 tp8", "the GPU count must be 1 to 100,000 GPUs"),
    ("8xb200 tp0", "tp must be 1 to 1,024"),
    # issue 35: a layout string is no way around the caps --gpus / --tp / --hbm-gb enforce
    ("100008xmi355x tp8", "the GPU count must be 1 to 100,000 GPUs .*got 100008"),
    ("8xmi355x tp8 pp99999", "pp must be 1 to 1,024"),
    ("8xmi355x tp8 hbm99999", "hbm must be >0, at most 4,096 GB per GPU"),
    ("9" * 5000 + "xmi355x tp8", "the GPU count must be .* written with 5,000 digits"),
    ("8xb200 tp8 dcp3", "dcp=3 must divide tp=8"),
])
def test_parse_layout_errors(text, match):
    with pytest.raises(ValueError, match=match):
        specs.parse_layout(text)


def test_parse_layout_error_shows_the_grammar():
    with pytest.raises(ValueError) as e:
        specs.parse_layout("8xb200 tp8 turbo")
    assert "'<N>x<gpu> tp<T> [pp<P>] [dcp<D>] [ep] [dp-attention] [hbm<GB>]'" in str(e.value)
    assert "\n" not in str(e.value)


def test_deployments_hash_and_compare_by_value():
    a, b = specs.parse_layout("16xb200 tp8 pp2"), specs.Deployment("b200", 16, 8, pp=2)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert not math.isnan(a.gpu_spec.hbm_bw_tb_s)


def test_user_number_checks():
    assert data.check_finite("x", 2) == 2.0 and isinstance(data.check_finite("x", 2), float)
    assert data.check_finite("x", 0, positive=False) == 0.0
    assert data.check_count("n", 3) == 3
    for bad in (0, -1, float("nan"), float("inf"), True, "1", None):
        with pytest.raises(ValueError, match="^x must be"):
            data.check_finite("x", bad)
    for bad in (0, -2, 2.0, True, "2", None):
        with pytest.raises(ValueError, match="^n must be a positive integer"):
            data.check_count("n", bad)


def test_a_table_label_reads_back_as_the_same_layout():
    """One layout notation: what a table prints (``Deployment.label``) parses to the same deployment."""
    for d in (specs.Deployment("b200", 16, 8, pp=2), specs.Deployment("b300", 8, 8, dcp=8),
              specs.Deployment("mi355x", 8, 8, ep=True, dp_attention=True), specs.Deployment("b200", 8, 8, hbm_gb=192)):
        assert specs.parse_layout(d.label) == d, d.label
    assert specs.parse_layout("16×B200 TP8×PP2") == specs.parse_layout("16xb200 tp8 pp2")


def test_numpy_counts_are_counts():
    """Issue 35: NumPy scalars (what a DataFrame's rows hand over) were refused as counts."""
    import numpy as np

    from k3lab import limits

    d = specs.Deployment("mi355x", np.int64(16), np.int64(8), np.int32(2))
    assert (d.num_gpus, d.tp, d.pp) == (16, 8, 2) and type(d.num_gpus) is int and d.label == "16×MI355X TP8×PP2"
    assert data.check_count("k", np.int64(5)) == 5 and data.check_finite("x", np.float32(0.5)) == 0.5
    assert limits.check("gpus", np.int64(8), "--gpus") == 8
    for bad in (np.bool_(True), np.float64(8.0), np.int64(0)):
        with pytest.raises(ValueError):
            data.check_count("k", bad)
