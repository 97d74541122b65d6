"""Model config and hardware table: loading, validation, units, provenance."""

import copy
import json

import pytest

from k3lab import specs
from k3lab.paths import data_path


def test_model_config_fields():
    m = specs.load_model("kimi-k3")
    assert (m.num_experts, m.num_experts_per_token, m.num_hidden_layers, m.max_position_embeddings) == \
        (896, 16, 93, 1048576)
    assert m.num_mla_layers == 24 and m.num_kda_layers == 69 and m.num_moe_layers == 92
    assert m.full_attn_layers[:2] == (4, 8) and m.full_attn_layers[-2:] == (92, 93)
    assert m.qk_head_dim == 192 and m.v_head_dim == 128
    assert m.num_nextn_predict_layers == 0
    assert "f831ab66" in m.provenance


def test_unknown_model():
    with pytest.raises(ValueError, match="unknown model 'gpt-5'; known models: kimi-k3"):
        specs.load_model("gpt-5")


def _raw():
    with open(data_path("model", "kimi_k3_config.json")) as f:
        return json.load(f)


def test_model_validation_catches_bad_layer_lists():
    raw = _raw()
    bad = copy.deepcopy(raw)
    bad["text_config"]["linear_attn_config"]["kda_layers"].append(4)  # 4 is also MLA
    with pytest.raises(ValueError, match="partition layers 1..93"):
        specs.model_from_dict(bad)


def test_model_validation_catches_bad_numbers():
    raw = _raw()
    for key, val, msg in (("hidden_size", -1, "must be positive"), ("num_experts", 8.5, "must be an integer"),
                          ("num_experts_per_token", 1000, "exceeds num_experts")):
        bad = copy.deepcopy(raw)
        bad["text_config"][key] = val
        with pytest.raises(ValueError, match=msg):
            specs.model_from_dict(bad)
    bad = copy.deepcopy(raw)
    del bad["text_config"]["vocab_size"]
    with pytest.raises(ValueError, match="missing required field 'vocab_size'"):
        specs.model_from_dict(bad)


def test_gpu_table_units_and_provenance():
    for name in specs.known_gpus():
        g = specs.load_gpu(name)
        assert 0 < g.usable_hbm_gb <= g.hbm_gb
        for field_, src in g.provenance.items():
            assert src["title"] and src["date"], (name, field_)
    mi = specs.load_gpu("MI355X")
    assert mi.hbm_gb == 288 and mi.usable_hbm_bytes == 288 * 10**9
    assert mi.hbm_gib == pytest.approx(288e9 / 2**30)  # 268.2 GiB: the article's "288 GiB" is GB
    b200 = specs.load_gpu("b200")
    assert (b200.hbm_gb, b200.usable_hbm_gb) == (192, 180)
    art = b200.with_hbm_gb(192)
    assert art.usable_hbm_bytes == 192 * 10**9 and art.key == "b200@192GB"
    with pytest.raises(ValueError, match="must be positive"):
        b200.with_hbm_gb(0)


def test_unknown_gpu_lists_known():
    with pytest.raises(ValueError, match=r"unknown GPU 'a100'; known GPUs: b200, b300, h200, mi355x"):
        specs.load_gpu("a100")


def test_scale_out_link_units():
    link = specs.scale_out_link()
    assert link["gbyte_s"] == link["gbit_s"] / 8
    with pytest.raises(ValueError, match="unknown scale-out link"):
        specs.scale_out_link("carrier-pigeon")
