"""k3lab.crosscheck: the adapter to NVIDIA's aiconfigurator (PyPI ``aiconfigurator-core``).

Three kinds of checks:
- the adapter against the tool itself (its public ``estimate_kv_cache``) and against
  quantities computed by hand from the published K3 config;
- regression pins of the external tool: numbers observed with aiconfigurator-core 0.12.0,
  database sglang 0.5.16 (b300_sxm, mode SILICON), and its SOL mode on GPUs described by
  k3lab's hardware numbers. They move when the tool or its database changes; that is the
  point (the pin makes such a change visible), not a check of k3lab's own arithmetic;
- clear errors for a GPU / backend / feature the tool has no data or model for.
"""

import importlib
import json
import sys

import pytest

aic = pytest.importorskip("aiconfigurator_core", reason="aiconfigurator-core is not installed")

from k3lab import crosscheck as cc  # noqa: E402
from k3lab.paths import data_path  # noqa: E402

PINNED_TOOL = "0.12.0"
pinned = pytest.mark.skipif(cc.TOOL_VERSION != PINNED_TOOL,
                            reason=f"numbers pinned for aiconfigurator-core {PINNED_TOOL}, found {cc.TOOL_VERSION}")


@pytest.fixture(scope="module")
def k3():
    with open(data_path("model", "kimi_k3_config.json"), encoding="utf-8") as f:
        return json.load(f)["text_config"]


@pytest.fixture(scope="module")
def mem_b300():
    return cc.memory_estimate("b300", 8, 8)


# ------------------------------------------------------------------ against the tool and the config


def test_memory_matches_the_tools_public_kv_estimator(mem_b300):
    est = aic.sdk.estimate_kv_cache(
        cc.AIC_MODEL, "b300_sxm", "sglang", cc.DEFAULT_BACKEND_VERSION, max_num_tokens=cc.DEFAULT_MAX_NUM_TOKENS,
        max_batch_size=1, memory_fraction_kind="of_total", memory_fraction_value=mem_b300.mem_fraction,
        tp_size=8, pp_size=1, moe_tp_size=8, moe_ep_size=1)
    assert mem_b300.kv_budget_bytes_per_gpu == est["total_kv_size_bytes"]
    assert mem_b300.max_kv_tokens == est["total_kv_size_tokens"]
    assert mem_b300.weights_bytes_per_gpu == est["memory_breakdown"]["weights_bytes"]
    assert mem_b300.activations_bytes_per_gpu == est["memory_breakdown"]["activations_bytes"]
    assert mem_b300.other_bytes_per_gpu == est["memory_breakdown"]["runtime_overhead_bytes"]
    assert mem_b300.nccl_bytes_per_gpu == est["memory_breakdown"]["comm_overhead_bytes"]


def test_kv_and_kda_state_by_hand_from_the_published_config(mem_b300, k3):
    lac = k3["linear_attn_config"]
    n_mla, n_kda = len(lac["full_attn_layers"]), len(lac["kda_layers"])
    # MLA latent cache, bf16, replicated on every TP rank
    assert mem_b300.kv_bytes_per_token == n_mla * (k3["kv_lora_rank"] + k3["qk_rope_head_dim"]) * 2
    # KDA: fp32 recurrent state (heads × d × d) + bf16 conv window of q, k, v, per TP rank,
    # times the tool's 5 radix-cache slots per request
    heads, d, conv = lac["num_heads"] // 8, lac["head_dim"], lac["short_conv_kernel_size"]
    one_slot = n_kda * (heads * d * d * 4 + (conv - 1) * 3 * heads * d * 2)
    assert mem_b300.kda_state_slots_per_request == 5
    assert mem_b300.kda_state_bytes_per_request == 5 * one_slot


def test_routed_experts_are_counted_at_4_bits_without_mxfp4_scales(mem_b300, k3):
    n_moe = k3["num_hidden_layers"] - k3["first_k_dense_replace"]
    params_per_rank = n_moe * k3["num_experts"] * 3 * k3["routed_expert_hidden_size"] * \
        k3["moe_intermediate_size"] // 8
    assert mem_b300.weights_by_op["context_moe"] == params_per_rank // 2   # 0.5 B/param, no E8M0 scales
    assert mem_b300.quant["moe"] == "w4a8_mxfp4_mxfp8"


def test_provenance_names_tool_database_and_mode(mem_b300):
    p = mem_b300.provenance
    assert p["tool"] == "aiconfigurator-core" and p["version"] == cc.TOOL_VERSION
    assert p["database"] == {"system": "b300_sxm", "backend": "sglang", "backend_version": "0.5.16",
                             "mode": "silicon"}


def test_same_inputs_same_numbers():
    a = cc.throughput("b300", 8, 8, 1, 4)
    b = cc.throughput("b300", 8, 8, 1, 4)
    assert a == b and a.as_row() == b.as_row()


def test_pp_throughput_counts_the_requests_in_flight():
    r = cc.throughput("b200", 16, 8, 2, 1)          # one request: one micro-batch, not pp of them
    assert r.micro_batch == 1
    assert r.tok_s == pytest.approx(1 * 400 / r.request_latency_ms * 1000)
    r2 = cc.throughput("b200", 16, 8, 2, 8)
    assert r2.micro_batch == 4 and r2.tok_s == pytest.approx(8 * 400 / r2.request_latency_ms * 1000)


def test_a_slower_network_slows_tp16_across_nodes_only():
    tp16 = cc.throughput("b200", 16, 16, 1, 8)
    tp16_roce = cc.throughput("b200", 16, 16, 1, 8, scale_out_gbit_s_per_gpu=195.0)
    tp8 = cc.throughput("b300", 8, 8, 1, 8)
    tp8_roce = cc.throughput("b300", 8, 8, 1, 8, scale_out_gbit_s_per_gpu=195.0)
    assert tp16_roce.tok_s < tp16.tok_s
    assert tp8_roce.tok_s == pytest.approx(tp8.tok_s, rel=1e-12)
    assert tp16_roce.provenance["scale_out_gbit_s_per_gpu"] == 195.0


def test_described_gpu_has_the_memory_of_the_builtin_system_with_the_same_numbers(mem_b300):
    hw = cc.HardwareSpec(name="aic_b300", hbm_bytes=288400343040, hbm_bw_bytes_s=7.75e12,
                         dense_bf16_flops=2.25e15, dense_fp8_flops=4.5e15, dense_fp4_flops=14e15,
                         scale_up_bytes_s=900e9, scale_out_bytes_s=100e9)
    m = cc.memory_estimate("aic_b300", 8, 8, hardware=hw)
    for f in ("capacity_bytes_per_gpu", "weights_bytes_per_gpu", "non_kv_bytes_per_gpu",
              "kv_budget_bytes_per_gpu", "max_kv_tokens"):
        assert getattr(m, f) == getattr(mem_b300, f), f


def test_sweep_columns_and_timing_kept_out_of_the_numbers():
    df = cc.sweep([("b300", 8, 8, 1)], concurrencies=(1, 2))
    for col in ("gpu", "num_gpus", "tp", "pp", "concurrency", "tok_s", "tok_s_per_gpu", "mode",
                "tool_version", "database"):
        assert col in df.columns
    assert list(df["concurrency"]) == [1, 2] and (df["database"] == "b300_sxm/sglang/0.5.16").all()
    assert "elapsed_s" not in df.columns and df.attrs["elapsed_s"] > 0
    pk = cc.peaks(df)
    assert len(pk) == 1 and pk.loc[0, "peak_concurrency"] == int(df.loc[df["tok_s"].idxmax(), "concurrency"])


def test_config_differences_are_only_the_quantization_block():
    diffs = cc.config_differences()
    assert {d[0] for d in diffs} <= {"quantization_config"}  # architecture fields all agree


# ------------------------------------------------------------------ regression pins of the tool


@pinned
def test_pinned_memory_b300_tp8(mem_b300):
    # aiconfigurator-core 0.12.0, database b300_sxm / sglang 0.5.16
    assert mem_b300.capacity_bytes_per_gpu == 288_400_343_040
    assert mem_b300.mem_fraction == 0.901
    assert mem_b300.weights_bytes_per_gpu == 194_489_286_656
    assert mem_b300.kv_budget_bytes_per_gpu == 56_958_546_083
    assert mem_b300.max_kv_tokens == 2_049_974


@pinned
def test_pinned_throughput_b300_tp8_c8_silicon():
    # aiconfigurator-core 0.12.0, database b300_sxm / sglang 0.5.16, mode SILICON, static batch
    r = cc.throughput("b300", 8, 8, 1, 8)
    assert r.ttft_ms == pytest.approx(391.763, rel=1e-9)
    assert r.tpot_ms == pytest.approx(19.927, rel=1e-9)
    assert r.tok_s == pytest.approx(383.5718111158152, rel=1e-9)
    assert r.tok_s_per_gpu == pytest.approx(r.tok_s / 8)
    assert r.sources == {"prefill": {"empirical": 10, "silicon": 28}, "decode": {"empirical": 10, "silicon": 29}}


@pinned
def test_pinned_sol_mi355x_and_b300_described_by_k3lab_hardware():
    # aiconfigurator-core 0.12.0, mode SOL, GPUs described from data/hardware.yaml numbers
    # (MI355X 8 TB/s, 5 PFLOPS FP8, 537.6 GB/s xGMI; B300 8 TB/s, 4.5 PFLOPS FP8, 900 GB/s NVLink)
    hw = {g: cc.HardwareSpec(name=g, hbm_bytes=288_000_000_000, hbm_bw_bytes_s=8e12, dense_bf16_flops=bf16,
                             dense_fp8_flops=fp8, dense_fp4_flops=fp4, scale_up_bytes_s=up,
                             scale_out_bytes_s=195e9 / 8)
          for g, bf16, fp8, fp4, up in (("mi355x", 2.5e15, 5e15, 10e15, 537.6e9),
                                        ("b300", 2.25e15, 4.5e15, 15e15, 900e9))}
    mi = cc.throughput("mi355x", 8, 8, 1, 8, mode="sol", hardware=hw["mi355x"])
    b3 = cc.throughput("b300", 8, 8, 1, 8, mode="sol", hardware=hw["b300"])
    assert mi.tok_s == pytest.approx(1170.4517980517098, rel=1e-9)
    assert b3.tok_s == pytest.approx(1184.0546322807334, rel=1e-9)
    assert mi.provenance["database"]["mode"] == "sol" and mi.system == "k3lab_mi355x"


# ------------------------------------------------------------------ clear errors


def test_gpu_without_measured_data_fails_clearly():
    with pytest.raises(ValueError, match=r"no measured data for GPU 'mi355x'.*mode='sol'"):
        cc.throughput("mi355x", 8, 8, 1, 8)
    with pytest.raises(ValueError, match="no measured data"):
        cc.memory_estimate("mi355x", 8, 8)


def test_backend_version_without_data_fails_clearly():
    with pytest.raises(ValueError, match=r"no trtllm '0\.5\.16' database for system 'b300_sxm'; available"):
        cc.throughput("b300", 8, 8, 1, 8, backend="trtllm")
    with pytest.raises(ValueError, match=r"no sglang '0\.4\.0' database.*0\.5\.14, 0\.5\.16"):
        cc.throughput("b300", 8, 8, 1, 8, backend_version="0.4.0")


def test_described_gpu_outside_sol_fails_clearly():
    hw = cc.hardware_from_gpu("mi355x", scale_out_gbit_s_per_gpu=195.0)
    with pytest.raises(ValueError, match="needs measured kernel data.*mode='sol'"):
        cc.throughput("mi355x", 8, 8, 1, 8, mode="empirical", hardware=hw)


@pytest.mark.parametrize("kwargs, match", [
    ({"dcp": 8}, "decode context parallelism"),
    ({"nextn": 7}, "needs accept_len"),
    ({"accept_len": 2.0}, "only meaningful with nextn"),
    ({"mode": "roofline"}, "mode must be one of"),
    ({"scheduler": "fifo"}, "scheduler must be one of"),
    ({"kv_dtype": "int4"}, "kv_dtype must be one of"),
    ({"moe_quant": "mxfp6"}, "moe_quant must be one of"),
])
def test_unmodelled_or_bad_options_fail_clearly(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cc.throughput("b300", 8, 8, 1, 8, **kwargs)


@pytest.mark.parametrize("args, match", [
    ((7, 7, 1, 7), "cannot build Kimi K3 at tp=7"),
    ((12, 8, 1, 8), "not a multiple of tp×pp"),
    ((8, 8, 1, 0), "concurrency must be an integer"),
])
def test_bad_layouts_fail_clearly(args, match):
    with pytest.raises(ValueError, match=match):
        cc.throughput("b300", *args)


def test_missing_package_gives_one_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "aiconfigurator_core", None)
    monkeypatch.delitem(sys.modules, "k3lab.crosscheck")
    monkeypatch.delitem(sys.modules, "k3lab.crosscheck._aic")  # the one module that imports it
    with pytest.raises(ImportError, match=r"needs NVIDIA's aiconfigurator.*pip install aiconfigurator-core==0\.12\.0"):
        importlib.import_module("k3lab.crosscheck")


def test_weights_by_component_agree_except_what_aiconfigurator_leaves_out():
    """B300 TP8: aiconfigurator's ops, summed into k3lab's components, match sglang's layout
    component by component; the routed experts differ by exactly the MXFP4 E8M0 scales
    (1 B per 32 weights) plus the fp32 zero biases and three gemm1 constants per expert that
    sglang's flashinfer path holds (computed here from the config, not from k3lab)."""
    from k3lab.findings import f1_memory as f1
    from k3lab.specs import load_model

    cfg = load_model("kimi-k3")
    df = f1.aiconfigurator_weights_table(cfg).set_index("component")
    for comp, row in df.drop(index=["routed_experts", "total"]).iterrows():
        assert abs(row.k3lab_minus_aic_GiB) < 0.08, comp
    moe_layers = cfg.num_hidden_layers - cfg.first_k_dense_replace
    e, h, i = cfg.num_experts, cfg.routed_expert_hidden_size, cfg.moe_intermediate_size // 8
    scales = e * (2 * i * h + h * i) // 32
    fp32_extras = e * (2 * i + h) * 4 + 3 * e * 4
    want = moe_layers * (scales + fp32_extras) / 2**30
    assert df.loc["routed_experts", "k3lab_minus_aic_GiB"] == pytest.approx(want, abs=1e-6)


def test_memory_table_same_capacity_and_padding_at_tp16():
    """Both models see the same usable HBM; at TP16 sglang's 192 → 256 expert padding costs
    k3lab ~29 GiB per GPU more than aiconfigurator and every full-context request."""
    from k3lab.findings import f1_memory as f1
    from k3lab.specs import load_model

    df = f1.aiconfigurator_memory_table(load_model("kimi-k3")).set_index("layout")
    tp16 = df.loc["16×B200 TP16"]
    assert tp16.k3lab_weights_GiB - tp16.aic_weights_GiB > 29
    assert tp16.aic_1M_requests >= 1 and tp16.k3lab_1M_requests == 0
    assert df.loc["8×B200 TP8", ["aic_max_kv_tokens", "k3lab_max_kv_tokens"]].tolist() == [0, 0]
    # PP2: aiconfigurator keeps all 24 MLA layers' KV on every GPU, sglang's stages 12 each
    pp2 = df.loc["16×B200 TP8×PP2"]
    assert pp2.aic_kv_bytes_per_token == 24 * 576 * 2 and pp2.k3lab_kv_bytes_per_token < pp2.aic_kv_bytes_per_token


def test_aiconfigurator_tables_refuse_other_models():
    from k3lab.findings import f1_memory as f1
    from k3lab.specs import load_model

    with pytest.raises(ValueError, match="Kimi K3 only"):
        f1.aiconfigurator_memory_table(load_model("kimi-k2"))
    with pytest.raises(ValueError, match="MXFP4"):
        f1.load_peak_table(load_model("deepseek-v3"))
