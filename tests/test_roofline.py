"""k3lab.roofline: decode roofline + communication model over a Deployment, checked by hand
and by a second (Monte Carlo) implementation; and the bound holds over every measured point."""

import math
import random

import pytest

from k3lab import data, roofline as r, specs, throughput

CFG = specs.load_model("kimi-k3")

# ---- Kimi K3 numbers, written out (data/model/kimi_k3_config.json)
H, V = 7168, 163840
N_LAYERS, N_MLA, N_KDA, N_MOE = 93, 24, 69, 92
DENSE_I, E, TOPK, LAT, MOE_I, N_SHARED = 33792, 896, 16, 3584, 3072, 2
HEADS, Q_LORA, KV_LORA, NOPE, ROPE, VDIM = 96, 1536, 512, 128, 64, 128
LIN_H, LIN_D, CONV_K = 96, 128, 4
PROJ = LIN_H * LIN_D


@pytest.fixture(scope="module")
def deps():
    return r.deployments()


def test_deployments_are_the_article_rows_plus_extras(deps):
    assert set(deps) == {"mi355x_tp8", "b300_tp8_dcp", "b200_tp16", "b200_tp8_pp2"}
    assert all(isinstance(d, specs.Deployment) for d in deps.values())
    assert deps["b200_tp8_pp2"] == specs.Deployment("b200", 16, 8, pp=2, gpus_per_node=8,
                                                    id="b200_tp8_pp2", label=deps["b200_tp8_pp2"].label)
    assert deps["mi355x_tp8"].label == "8×MI355X TP8"


def test_distinct_experts_closed_form_by_hand():
    assert r.expected_distinct_experts(0, 896, 16) == 0
    assert r.expected_distinct_experts(1, 896, 16) == pytest.approx(16)
    # two tokens: 32 picks minus the expected overlap 16·16/896
    assert r.expected_distinct_experts(2, 896, 16) == pytest.approx(32 - 16 * 16 / 896)
    assert r.expected_distinct_experts(10_000, 896, 16) == pytest.approx(896)
    assert r.expected_distinct_experts(64, 896, 16, routing="min") == 16


def test_distinct_experts_against_monte_carlo():
    rng = random.Random(0)
    for c in (3, 24, 64):
        trials = 400
        mean = sum(len(set().union(*(rng.sample(range(896), 16) for _ in range(c))))
                   for _ in range(trials)) / trials
        assert r.expected_distinct_experts(c, 896, 16) == pytest.approx(mean, rel=0.02)


def test_distinct_experts_bad_input():
    with pytest.raises(ValueError, match="routing"):
        r.expected_distinct_experts(4, 896, 16, routing="zipf")
    with pytest.raises(ValueError, match="tokens"):
        r.expected_distinct_experts(-1, 896, 16)
    with pytest.raises(ValueError, match="top_k"):
        r.expected_distinct_experts(4, 896, 0)
    with pytest.raises(ValueError, match="top_k"):
        r.expected_distinct_experts(4, 8, 16)


def test_ring_all_reduce_by_hand():
    n = 1e6
    # one node of 8: 14 steps of 0.47 us, 14/8 · n over 900 GB/s
    assert r.ring_all_reduce_s(n, 8, 8, 900e9, 0.47e-6) == pytest.approx(14 * 0.47e-6 + 14 / 8 * n / 900e9)
    # two nodes of 8: 30 steps, 2 over the network; bus = min(900, 195) GB/s
    got = r.ring_all_reduce_s(n, 16, 8, 900e9, 0.47e-6, 195e9, 2.7e-6)
    assert got == pytest.approx(28 * 0.47e-6 + 2 * 2.7e-6 + 30 / 16 * n / 195e9)
    assert r.ring_all_reduce_s(n, 1, 8, 900e9, 0.47e-6) == 0
    with pytest.raises(ValueError, match="scale-out"):
        r.ring_all_reduce_s(n, 16, 8, 900e9, 0.47e-6)
    with pytest.raises(ValueError, match="positive"):
        r.ring_all_reduce_s(n, 0, 8, 900e9, 0.47e-6)
    with pytest.raises(ValueError, match="nbytes"):
        r.ring_all_reduce_s(-1, 8, 8, 900e9, 0.47e-6)


def _non_expert_read_tp8() -> int:
    """A TP8 rank's non-expert checkpoint tensors as sglang holds them on an NVIDIA GPU, minus
    the input embedding: replicated ones whole, split ones / 8 (written out from the config)."""
    replicated_bf16 = (N_MLA * (H * (Q_LORA + KV_LORA + ROPE) + Q_LORA + KV_LORA)  # q_a, kv_a + norms
                       + N_KDA * (H * LIN_D + LIN_D)                                 # f_a_proj, o_norm
                       + N_MOE * (E * H + 2 * H * LAT + LAT)                         # router, latent projs
                       + N_LAYERS * 6 * H + 3 * H)                                   # norms, attn-res
    router_bias_fp32 = N_MOE * E * 4
    split_bf16 = (V * H + 3 * H * DENSE_I                                            # lm_head, dense MLP
                  + N_MLA * (Q_LORA * HEADS * (NOPE + ROPE) + KV_LORA * HEADS * (NOPE + VDIM) + 2 * HEADS * VDIM * H)
                  + N_KDA * (4 * H * PROJ + H * LIN_H + LIN_D * PROJ + PROJ * H)
                  + N_MOE * 3 * H * MOE_I * N_SHARED)
    split_fp32 = N_KDA * (3 * PROJ * CONV_K + LIN_H + PROJ)
    return 2 * replicated_bf16 + router_bias_fp32 + 2 * split_bf16 // 8 + 4 * split_fp32 // 8


def test_non_expert_read_bytes_by_hand():
    # no routed experts, no embedding table, no runtime copies (w_kc/w_vc, zero biases)
    assert r.non_expert_read_bytes(CFG, 8) == _non_expert_read_tp8()


def test_decode_step_mi355x_c1_by_hand(deps):
    s = r.decode_step(deps["mi355x_tp8"], 1)
    expert = 3 * LAT * MOE_I * 17 / 32                # one MXFP4 expert, one layer
    assert s.experts_touched_per_layer == pytest.approx(16)
    assert s.bytes_experts == pytest.approx(N_MOE * 16 * expert / 8)
    assert s.bytes_kv == pytest.approx(1224 * N_MLA * 576 * 1)      # fp8 latent, 1024 + 400/2 tokens
    per_layer_state = 12 * 128 * 128 * 2 + 3 * 3 * 12 * 128 * 2    # bf16 recurrent + conv, read + written
    assert s.bytes_state == pytest.approx(2 * N_KDA * per_layer_state)
    t_mem = (_non_expert_read_tp8() + s.bytes_experts + s.bytes_kv + s.bytes_state) / 8e12  # 8 TB/s
    assert s.t_memory_s == pytest.approx(t_mem)
    active = 104_189_612_640  # K3 active parameters per token (tests/test_memory.py, by hand)
    attn = N_MLA * 12 * 2 * 1224 * (2 * KV_LORA + ROPE)
    assert s.flops == pytest.approx(2 * active / 8 + attn)
    assert s.t_compute_s == pytest.approx(s.flops / 10_100e12)      # MXFP4 10.1 PF dense
    ar = 14 * 0.47e-6 + 14 / 8 * 7168 * 2 / 537.6e9                  # xGMI 537.6 GB/s per direction
    assert s.t_allreduce_s == pytest.approx(N_LAYERS * 2 * ar)
    assert s.t_pp_send_s == 0
    assert s.tok_s_bound == pytest.approx(1 / (max(t_mem, s.t_compute_s) + N_LAYERS * 2 * ar))
    assert s.bytes_total == pytest.approx(s.bytes_non_expert + s.bytes_experts + s.bytes_kv + s.bytes_state)


def test_dcp_shards_the_kv_reads(deps):
    b300 = deps["b300_tp8_dcp"]
    s = r.decode_step(b300, 64)
    assert s.bytes_kv == pytest.approx(64 * 1224 * N_MLA * 576 / 8)  # KV split over dcp=8 ranks
    no_dcp = specs.Deployment("b300", 8, 8)
    assert r.decode_step(no_dcp, 64).bytes_kv == pytest.approx(8 * s.bytes_kv)


def test_pipeline_at_c1_waits_for_both_stages(deps):
    s = r.decode_step(deps["b200_tp8_pp2"], 1)
    assert s.tok_s_bound == pytest.approx(1 / (2 * s.t_step_s))
    # one bf16 hidden-state send over the 195 Gb/s link, 8 NICs per node: 2.7 us + 14336 B / 195 GB/s
    assert s.t_pp_send_s == pytest.approx(2.7e-6 + 7168 * 2 / (8 * 195e9 / 8))


def test_bound_properties(deps):
    d = deps["b200_tp16"]
    prev = 0
    for c in (1, 4, 16, 24, 64, 128):
        b = r.decode_step(d, c).tok_s_bound
        assert b > prev
        prev = b
    # fewer bytes (skewed routing) or overlapped comm can only raise the bound
    assert r.decode_step(d, 64, routing="min").tok_s_bound > r.decode_step(d, 64).tok_s_bound
    assert r.decode_step(d, 64, overlap=True).tok_s_bound >= r.decode_step(d, 64).tok_s_bound
    # one NIC per node is slower than eight
    assert r.decode_step(d, 64, nics_per_node=1).tok_s_bound < r.decode_step(d, 64).tok_s_bound
    # bf16 KV reads more than fp8
    assert r.decode_step(d, 64, kv_dtype="bf16").bytes_kv == pytest.approx(2 * r.decode_step(d, 64).bytes_kv)


def test_speculative_bound_parameters():
    # data/model/kimi_k3_dspark_draft.yaml: DSpark blocks of 7 drafts -> 8 verify rows; for an upper
    # bound every row is accepted (8 tokens per verify step, the most a step can emit)
    assert r.spec_params() == {"tokens_per_request_step": 8.0, "accept_len": 8.0}


def test_bound_is_the_larger_of_plain_and_speculative(deps):
    d = deps["mi355x_tp8"]
    plain = r.decode_step(d, 24).tok_s_bound
    spec = r.decode_step(d, 24, tokens_per_request_step=8, accept_len=8).tok_s_bound
    assert r.bound(d, 24) == max(plain, spec)
    c = r.curve(d, [1, 24])
    assert list(c["tok_s_bound"]) == pytest.approx([r.bound(d, 1), r.bound(d, 24)])


def test_roofline_bounds_every_measured_point():
    df = r.bounds_for_measured()
    assert set(df["point"]) == set(throughput.measured_points()["point"])
    assert (df["tok_s"] < df["tok_s_bound"]).all(), df
    # unstated concurrencies are bounded at c=64 and flagged
    assert set(df[df["concurrency_assumed"]]["config"]) == {"b300_tp8_dcp", "b200_tp16"}
    assert (df[df["concurrency_assumed"]]["concurrency"] == 64).all()
    # and also under the pessimistic network reading with plain decode alone
    for _, row in df.iterrows():
        dep = r.deployments()[row["config"]]
        plain = r.decode_step(dep, row["concurrency"], nics_per_node=1).tok_s_bound
        assert row["tok_s"] < plain


def test_comm_share(deps):
    d = deps["b200_tp16"]
    cs = r.comm_share(d, 64)
    s = r.decode_step(d, 64)
    assert cs["comm_fraction_of_step"] == pytest.approx(s.t_comm_s / s.t_step_s)
    assert cs["tok_s_bound_no_comm"] == pytest.approx(64 / max(s.t_memory_s, s.t_compute_s))
    assert 0 < cs["comm_fraction_of_step"] < 1 and cs["tok_s_bound_no_comm"] > cs["tok_s_bound"]


@pytest.mark.parametrize("kw, match", [
    (dict(concurrency=0), "concurrency must be positive"),
    (dict(concurrency=True), "concurrency must be positive"),
    (dict(concurrency=float("nan")), "concurrency must be positive"),
    (dict(concurrency=4, tokens_per_request_step=0.5), "tokens_per_request_step"),
    (dict(concurrency=4, tokens_per_request_step=1, accept_len=3), "accept_len"),
    (dict(concurrency=4, context_tokens=-1), "context_tokens"),
    (dict(concurrency=4, routing="zipf"), "routing"),
    (dict(concurrency=4, kv_dtype="int4"), "kv_dtype"),
])
def test_decode_step_bad_input(deps, kw, match):
    with pytest.raises(ValueError, match=match):
        r.decode_step(deps["mi355x_tp8"], **kw)


def test_inputs_cite_known_sources():
    doc = data.load("serving_model")
    assert doc.link_latency_us_scale_up.source in doc.sources
    assert doc.link_latency_us_scale_out.source in doc.sources
    assert specs.scale_out_link()["gbit_s"] == 195
    assert not math.isnan(doc.link_latency_us_scale_up.value)
