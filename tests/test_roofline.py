"""k3lab.roofline: decode roofline + communication model, checked by hand and by a
second (Monte Carlo) implementation; and the bound holds over every measured point."""

import random

import pytest

from k3lab import memory, roofline as r, specs, throughput


@pytest.fixture(scope="module")
def cfg():
    return specs.load_model("kimi-k3")


@pytest.fixture(scope="module")
def deps():
    return r.deployments()


def test_distinct_experts_closed_form_by_hand():
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
        r.expected_distinct_experts(0, 896, 16)


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


def test_non_expert_read_bytes_excludes_embedding_and_runtime_copy(cfg):
    # the rank's non-expert shard minus the embedding rows (163840/8 x 7168 bf16) and
    # the runtime w_kc/w_vc copy (24 MLA layers x 12 heads x 256 x 512 bf16)
    expect = (memory.non_expert_bytes_per_gpu(cfg, 8) - 163840 // 8 * 7168 * 2
              - 24 * 12 * 256 * 512 * 2)
    assert r.non_expert_read_bytes(cfg, 8) == pytest.approx(expect)


def test_decode_step_mi355x_c1_by_hand(cfg, deps):
    s = r.decode_step(deps["mi355x_tp8"], 1)
    expert = 3 * 3584 * 3072 * 17 / 32              # one MXFP4 expert, one layer
    assert s.bytes_experts == pytest.approx(92 * 16 * expert / 8)
    assert s.bytes_kv == pytest.approx(1224 * 24 * 576 * 1)        # fp8 latent, 1024 + 400/2 tokens
    per_layer_state = 12 * 128 * 128 * 2 + 3 * 3 * 12 * 128 * 2    # bf16 recurrent + conv
    assert s.bytes_state == pytest.approx(2 * 69 * per_layer_state)
    t_mem = (r.non_expert_read_bytes(cfg, 8) + s.bytes_experts + s.bytes_kv + s.bytes_state) / 8e12
    assert s.t_memory_s == pytest.approx(t_mem)
    ar = 14 * 0.47e-6 + 14 / 8 * 7168 * 2 / 537.6e9
    assert s.t_allreduce_s == pytest.approx(93 * 2 * ar)
    assert s.tok_s_bound == pytest.approx(1 / (max(t_mem, s.t_compute_s) + 93 * 2 * ar))


def test_pipeline_at_c1_waits_for_both_stages(deps):
    s = r.decode_step(deps["b200_tp8_pp2"], 1)
    assert s.tok_s_bound == pytest.approx(1 / (2 * s.t_step_s))
    assert s.t_pp_send_s > 0


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


def test_roofline_bounds_every_measured_point():
    df = r.bounds_for_measured()
    assert set(df["point"]) == set(throughput.measured_points()["point"])
    assert (df["tok_s"] < df["tok_s_bound"]).all(), df
    # and also under the pessimistic network reading and with plain decode alone
    for _, row in df.iterrows():
        dep = r.deployments()[row["config"]]
        plain = r.decode_step(dep, row["concurrency"], nics_per_node=1).tok_s_bound
        assert row["tok_s"] < plain


def test_bad_deployments():
    with pytest.raises(ValueError, match="unknown GPU"):
        r.Deployment(id="x", label="x", gpu="a100", num_gpus=8, gpus_per_node=8, tp=8)
    with pytest.raises(ValueError, match="tp × pp"):
        r.Deployment(id="x", label="x", gpu="b200", num_gpus=16, gpus_per_node=8, tp=8)
    with pytest.raises(ValueError, match="num_gpus"):
        r.Deployment(id="x", label="x", gpu="b200", num_gpus=0, gpus_per_node=8, tp=8)
    d = r.deployments()["mi355x_tp8"]
    with pytest.raises(ValueError, match="concurrency"):
        r.decode_step(d, 0)
    with pytest.raises(ValueError, match="accept_len"):
        r.decode_step(d, 4, tokens_per_request_step=1, accept_len=3)


def test_inputs_cite_known_sources():
    doc = r.inputs()
    assert doc["link_latency_us"]["scale_up"]["source"] in doc["sources"]
    assert specs.scale_out_link()["gbit_s"] == 195
