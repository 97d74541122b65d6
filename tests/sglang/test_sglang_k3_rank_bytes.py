"""Per-rank bytes of sglang 0.5.23's real Kimi K3 module vs k3lab's memory model (issue 13).

``data/measured/cpu-2core/sglang_0523_k3_rank_bytes.json`` is written by
``benchmarks/sglang_k3_rank_bytes.py`` (meta-device builds of
``sglang.srt.models.kimi_k3.KimiK3LinearForCausalLM``, one child process per rank, with the
0.5.23 install first on ``PYTHONPATH``). Here:

* two cheap cases are rebuilt and must equal what is committed (~20 s each);
* facts of the transcript are checked against values computed by hand from the config;
* k3lab's per-tensor rank bytes must equal sglang's for every committed case: where
  k3lab's model would differ they fail with the tensor, both byte counts and the cause
  (``probe.cause``). This is what makes ``data/sglang_sharding.yaml`` and
  ``k3lab.model.sharding`` a faithful model of the release (ROCm without zero expert
  biases, the w2 bias under EP, the embedding under DP attention, expert padding per
  platform, SM100 biases turned fp32 by the experts' processing). The k3lab functions
  called are named in each test.

sglang's "loaded" bytes per rank = parameters + buffers of the meta build + the tensors
``post_load_weights`` adds (MLA w_kc / w_vc) + the change the experts'
``process_weights_after_loading`` makes where it could be run (SM100 flashinfer_mxfp4).
"""

import json

import pytest

from k3lab import memory
from k3lab.paths import MEASURED_DIR
from k3lab.probes import sglang_k3_build as probe
from k3lab.specs import load_model

COMMITTED = MEASURED_DIR / "cpu-2core" / probe.TRANSCRIPT
RERUN = "re-run: .venv-sglang/bin/python benchmarks/sglang_k3_rank_bytes.py"
GiB = 2**30


@pytest.fixture(scope="module")
def doc():
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cfg():
    return load_model("kimi-k3")


def _plat_key(key: str) -> tuple[str, str, int]:
    layout, plat, stage = key.split("|")
    return layout, plat, int(stage.removeprefix("stage"))


# --------------------------------------------------------------------------- regeneration

REGENERATED = (("tp8", "rocm-aiter", None, 0), ("tp8", "cuda-sm100", None, 0))


@pytest.mark.parametrize("layout,platform,opt,stage", REGENERATED,
                         ids=[probe.case_key(*c) for c in REGENERATED])
def test_regenerated_case_matches_committed(doc, layout, platform, opt, stage):
    fresh = json.loads(json.dumps(probe.probe_case(layout, platform, opt, stage), sort_keys=True))
    committed = doc["cases"][probe.case_key(layout, platform, opt, stage)]
    assert fresh == committed, RERUN


# --------------------------------------------------------------------------- facts (by hand)


def test_every_layout_and_platform_was_built(doc):
    want = {probe.case_key(*c) for c in probe.iter_cases()}
    assert set(doc["cases"]) == want, RERUN
    assert {c["sglang_version"] for c in doc["cases"].values()} == {"0.5.23"}


def test_expert_padding_and_biases_by_platform(doc, cfg):
    inter = cfg.moe_intermediate_size  # 3072
    rnd = lambda n, a: -(-n // a) * a  # noqa: E731
    want_pad = {  # Mxfp4MoEMethod.create_weights: SM100 flashinfer 128; AITER 256, or 128 with K3 opt
        "cuda-sm100": 128, "rocm-aiter": 256, "rocm-aiter+k3opt": 128}
    for key, c in doc["cases"].items():
        layout, plat, _ = _plat_key(key)
        e = c["resolved"]["experts"]
        ep = probe.LAYOUTS[layout].ep
        moe_tp = probe.LAYOUTS[layout].tp // ep
        assert e["intermediate_size_per_partition"] == inter // moe_tp, key
        assert e["num_local_experts"] == cfg.num_experts // ep, key
        # under EP the full 3072 is already a multiple of 256; DeepGEMM (CUDA EP) pads nothing
        want = inter // moe_tp if (ep > 1) else rnd(inter // moe_tp, want_pad[plat])
        assert e["intermediate_size_per_partition_after_pad"] == want, key
        names = {t["name"] for t in c["tensors"]}
        has_bias = "model.layers.{moe}.mlp.experts.w13_weight_bias" in names
        assert has_bias == plat.startswith("cuda"), key  # zero biases unless _is_hip
    assert want_pad["rocm-aiter"] * 2 == 512  # 384 -> 512 at TP8 (+33% expert bytes)


def test_quantisation_mapping(doc):
    for key, c in doc["cases"].items():
        r = c["resolved"]
        assert r["quant_config"] == "CompressedTensorsConfig", key
        assert r["quant_format"] == "mxfp4-pack-quantized", key
        assert r["experts"]["quant_method"] == "Mxfp4MoEMethod", key
        assert r["supports_kimi_k3_quantized_latent_projections"] is False, key
        lat = [t for t in c["tensors"] if "routed_expert_" in t["name"] and "_proj" in t["name"]]
        assert lat and all(t["dtype"] == "bfloat16" for t in lat), key  # latent projections unquantised
        packed = [t for t in c["tensors"] if t["name"].endswith(("w13_weight", "w2_weight",
                                                                  "w13_weight_scale", "w2_weight_scale"))]
        assert packed and all(t["dtype"] == "uint8" for t in packed), key


def test_moe_runner_resolution(doc):
    for key, c in doc["cases"].items():
        layout, plat, _ = _plat_key(key)
        r = c["resolved"]
        a2a = probe.LAYOUTS[layout].a2a_for(c["platform"])
        assert r["moe_a2a_backend"] == a2a, key
        if plat == "cuda-sm100":
            assert r["moe_runner_backend"] == ("deep_gemm" if a2a == "deepep" else "flashinfer_mxfp4"), key
        else:
            assert r["moe_runner_backend"] == "auto", key
    (fail,) = doc["expected_failures"]
    assert "requires a fused func for a2a backend deepep" in fail["error"]


def test_dp_attention_shapes(doc, cfg):
    h, v = cfg.hidden_size, cfg.vocab_size
    for key, c in doc["cases"].items():
        layout, _, _ = _plat_key(key)
        lay = probe.LAYOUTS[layout]
        rows = {t["name"]: t for t in c["tensors"]}
        attn_tp = 1 if lay.dp_attention else lay.tp
        assert c["resolved"]["attn_tp_size"] == attn_tp, key
        if c["resolved"]["pp_rank"] == 0:
            # input embedding: vocab split over the attention-TP group (whole table at attn_tp=1)
            assert rows["model.embed_tokens.weight"]["shape"] == [v // attn_tp, h], key
        if c["resolved"]["pp_rank"] == lay.pp - 1:
            assert rows["lm_head.weight"]["shape"] == [v // lay.tp, h], key  # full TP group
        q_b = rows["model.layers.{mla}.self_attn.q_b_proj.weight"]
        assert q_b["shape"][0] == cfg.num_attention_heads * cfg.qk_head_dim // attn_tp, key


def test_pipeline_stages_split_like_k3lab(doc, cfg):
    stages = memory.pp_stages(cfg, 2)
    for plat in ("cuda-sm100", "rocm-aiter", "rocm-aiter+k3opt"):
        for s, (lo, hi) in enumerate(stages):
            r = doc["cases"][f"tp8-pp2|{plat}|stage{s}"]["resolved"]
            assert (r["start_layer"], r["end_layer"]) == (lo, hi)


def test_post_load_adds_w_kc_w_vc_and_kda_merge_padding(doc, cfg):
    for key, c in doc["cases"].items():
        layout, _, stage = _plat_key(key)
        lay = probe.LAYOUTS[layout]
        lo, hi = memory.pp_stages(cfg, lay.pp)[stage]
        mla = [i for i in range(lo, hi) if i + 1 in cfg.full_attn_layers]
        kda = [i for i in range(lo, hi) if i + 1 not in cfg.full_attn_layers]
        attn_tp = 1 if lay.dp_attention else lay.tp
        heads = cfg.num_attention_heads // attn_tp
        # w_kc [heads, 128, 512] + w_vc [heads, 512, 128], bf16, per MLA layer
        want = len(mla) * heads * (cfg.qk_nope_head_dim + cfg.v_head_dim) * cfg.kv_lora_rank * 2
        assert c["post_load"]["ran"] and c["post_load"]["runtime_bytes"] == want, key
        # [f_a (128) | b (96/attn_tp)] rows padded up to a multiple of 8, x hidden, bf16
        rows = cfg.linear_attn_head_dim + cfg.linear_attn_num_heads // attn_tp
        pad = (-rows) % 8
        assert c["post_load"]["merge_padding_bytes"] == len(kda) * pad * cfg.hidden_size * 2, key


def test_all_tp_ranks_equal(doc):
    for key, chk in doc["rank_checks"].items():
        assert chk["all_equal_within_stage"], key
        assert len(chk["bytes_per_world_rank"]) == 8


def test_sm100_processing_turns_zero_biases_fp32(doc, cfg):
    """flashinfer_mxfp4's process_weights_after_loading (run on one layer of the meta
    model): the zero biases become fp32 and three [E_local] fp32 SiTU parameters appear.
    It runs wherever the MoE runner is flashinfer_mxfp4: SM100 without an all-to-all backend
    (plain TP, or --ep-size without one); DeepEP layouts run DeepGEMM instead."""
    for key, c in doc["cases"].items():
        layout, plat, _ = _plat_key(key)
        lay = probe.LAYOUTS[layout]
        e = cfg.num_experts // lay.ep
        proc = c["process_weights_after_loading"]
        runs = plat == "cuda-sm100" and lay.a2a_for(plat) == "none"
        assert proc["ran"] == runs, key
        if not runs:
            continue
        before = {r["name"].rsplit(".", 1)[-1]: r for r in proc["before"]}
        after = {r["name"].rsplit(".", 1)[-1]: r for r in proc["after"]}
        for b in ("w13_weight_bias", "w2_weight_bias"):
            assert (before[b]["dtype"], after[b]["dtype"]) == ("bfloat16", "float32"), key
            assert after[b]["shape"] == before[b]["shape"], key
        for w in ("w13_weight", "w2_weight", "w13_weight_scale", "w2_weight_scale"):
            assert after[w]["bytes"] == before[w]["bytes"], key
        situ = 3 * e * 4
        bias_bf16 = before["w13_weight_bias"]["bytes"] + before["w2_weight_bias"]["bytes"]
        assert proc["delta_bytes_per_layer"] == bias_bf16 + situ, key


# --------------------------------------------------------------------------- k3lab vs sglang


def _mismatch_message(key, rows):
    layout, plat, _ = _plat_key(key)
    lines = [f"{key}: k3lab ({rows[0]['k3lab_call']}) differs from sglang 0.5.23 "
             "(k3lab SHOULD produce the sglang bytes):"]
    for r in rows:
        lines.append(f"  {r['tensor']}: k3lab {r['k3lab_bytes']:,} B vs sglang {r['sglang_bytes']:,} B "
                     f"({r['diff_bytes'] / GiB:+.4f} GiB) -- {probe.cause(r['tensor'], layout, plat)}")
    return "\n".join(lines)


CASES = sorted({probe.case_key(*c) for c in probe.iter_cases()})


@pytest.mark.parametrize("key", CASES)
def test_k3lab_rank_bytes_per_tensor_match_sglang(doc, cfg, key):
    """Per k3lab inventory tensor on this rank, through ``probe.compare``: k3lab's side is
    ``k3lab.model.sharding.rank_rows(cfg, tp, pp, stage, Setting(**probe.k3lab_setting(...)))``; sglang's is
    the meta build + post_load_weights copies + the SM100 experts' processing."""
    layout, plat, _ = _plat_key(key)
    rows = probe.compare(doc["cases"][key], layout, plat, cfg)
    other = [r for r in rows if r["tensor"].startswith("sglang-only:")]
    bad = [r for r in rows if r["diff_bytes"] and r not in other]
    assert not bad, _mismatch_message(key, bad)
    # tensors k3lab does not model must stay negligible (SM100 SiTU [E] fp32 parameters,
    # ROCm mori's int32 expert mask)
    assert sum(r["sglang_bytes"] for r in other) < 2**20, other


@pytest.mark.parametrize("key", CASES)
def test_k3lab_stage_total_matches_sglang(doc, cfg, key):
    """``k3lab.model.sharding.stage_weights_bytes(cfg, tp, pp, Setting(...))[stage]``
    (pre-refactor: ``memory.stage_weights_bytes(cfg, tp, pp, layout)``) must equal sglang's
    loaded bytes on that rank (``probe.sglang_rank_bytes``), up to the tensors k3lab does not
    model (< 1 MiB, see the per-tensor test)."""
    layout, plat, stage = _plat_key(key)
    lay, c = probe.LAYOUTS[layout], doc["cases"][key]
    k3 = probe.k3lab_stage_bytes(lay.tp, lay.pp, probe.k3lab_setting(layout, plat), cfg)[stage]
    other = sum(r["sglang_bytes"] for r in probe.compare(c, layout, plat, cfg)
                if r["tensor"].startswith("sglang-only:"))
    sglang = probe.sglang_rank_bytes(c) - other
    assert k3 == sglang, (
        f"{key}: k3lab {k3 / GiB:.4f} GiB vs sglang {sglang / GiB:.4f} GiB "
        f"(meta build {c['totals']['bytes'] / GiB:.4f} GiB + post_load "
        f"{c['post_load']['runtime_bytes'] / GiB:.4f} GiB + experts' processing)")


@pytest.mark.parametrize("tp,pp", [(8, 1), (16, 1), (8, 2)])
def test_k3lab_default_weights_per_gpu_match_sglang_blackwell(doc, cfg, tp, pp):
    """``k3lab.memory.weights_bytes_per_gpu(cfg, tp=tp, pp=pp)`` with its defaults is what
    notebook 01 uses for the B300 / B200 configurations; the truth is sglang on SM100
    (flashinfer_mxfp4: expert intermediate rounded up to 128, so 192 -> 256 at TP16; zero
    biases, fp32 after processing)."""
    layout = {(8, 1): "tp8", (16, 1): "tp16", (8, 2): "tp8-pp2"}[(tp, pp)]
    h = doc["heaviest"][f"{layout}|cuda-sm100"]
    c = doc["cases"][h["case"]]
    other = sum(r["sglang_bytes"] for r in probe.compare(c, layout, "cuda-sm100", cfg)
                if r["tensor"].startswith("sglang-only:"))
    sglang = probe.sglang_rank_bytes(c) - other
    k3 = memory.weights_bytes_per_gpu(cfg, tp=tp, pp=pp)
    assert k3 == sglang, f"TP{tp}xPP{pp}: k3lab default {k3 / GiB:.4f} GiB vs sglang SM100 {sglang / GiB:.4f} GiB"
