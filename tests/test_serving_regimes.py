"""The engine and the harness as inputs of the serving model (k3lab.serving.engines, .regimes):
which regime an engine and a harness give, each engine's admission defaults as read from its code,
and the three regimes' equations checked on the model's own plans — the steady-state identities
(Little's law, the decode share left by prefills, the token budget) written out here, not taken
from the code under test."""

import math

import pytest

from k3lab import memory
from k3lab.serving import engines as E
from k3lab.serving import model as M
from k3lab.serving import regimes as R
from k3lab.specs import Deployment, load_model

CFG = load_model("kimi-k3")
MI355X = Deployment("mi355x", 8, 8)
P = M.FamilyParams("test", hbm_efficiency=0.6, flop_efficiency=0.3, layer_overhead_us=40.0, kv_efficiency=0.5,
                   prefill_attention_efficiency=0.3, fallback_attention_efficiency=0.05, request_overhead_ms=30.0,
                   token_us=0.5, verify_row_us=2.0)


# --------------------------------------------------------------------------- engines and regimes


@pytest.mark.parametrize("engine, harness, regime", [
    ("sglang", E.Harness(), "cohort"),                              # bench_serving over fixed lengths
    ("sglang", E.Harness("closed_loop", "uniform", 0.8), "staggered"),
    ("sglang", E.Harness("rate"), "staggered"),
    ("sglang", E.Harness("ramped"), "staggered"),
    ("atom", E.Harness(), "cohort"),                                # ATOM runs prefill first too
    ("tokenspeed", E.Harness("rate"), "staggered"),
    ("vllm", E.Harness(), "mixed"),                                 # vLLM mixes prefill into decode steps
    ("vllm", E.Harness("rate", "uniform", 0.5), "mixed"),
])
def test_the_regime_of_an_engine_and_a_harness(engine, harness, regime):
    assert E.regime(E.Engine(engine), harness) == regime


def test_engine_defaults_as_their_code_sets_them():
    """Written out from the code each entry cites: vLLM's get_batch_defaults (>= 70 GiB GPUs: 8,192
    batched tokens, 1,024 sequences), ATOM's Config (16,384, 512), TokenSpeed's ServerArgs (8,192;
    160 sequences, 80 with a draft; memory 0.81 at 8 GPUs), sglang's chunk by GPU memory."""
    g = MI355X.gpu_spec
    assert (E.Engine("vllm").batched_tokens(g), E.Engine("vllm").running_limit(False)) == (8192, 1024)
    assert (E.Engine("atom").batched_tokens(g), E.Engine("atom").running_limit(False)) == (16384, 512)
    ts = E.Engine("tokenspeed")
    assert (ts.batched_tokens(g), ts.running_limit(False), ts.running_limit(True), ts.memory_fraction()) == (
        8192, 160, 80, 0.81)
    assert E.Engine().batched_tokens(g) == M.chunk_tokens(g) == 16384 and E.Engine().running_limit(False) is None
    stated = E.Engine("vllm", max_running_requests=128, max_batched_tokens=4096, mem_fraction=0.95)
    assert (stated.batched_tokens(g), stated.running_limit(False), stated.memory_fraction()) == (4096, 128, 0.95)


def test_bad_engine_and_harness_are_one_clear_error():
    with pytest.raises(ValueError, match=r"unknown engine 'trtllm'; the serving model knows: sglang, vllm, atom, tokenspeed"):
        E.Engine("trtllm")
    with pytest.raises(ValueError, match=r"unknown arrival 'poisson'"):
        E.Harness("poisson")
    with pytest.raises(ValueError, match=r"range_ratio must be in \(0, 1\)"):
        E.Harness("closed_loop", "uniform", 1.5)


def test_uniform_lengths_average_the_middle_of_their_range():
    # sglang's and ATOM's --random-range-ratio r: lengths uniform over [r·L, L], mean (1 + r)/2 · L
    assert E.mean_lengths(8192, 1024, E.Harness("closed_loop", "uniform", 0.8)) == (7373, 922)
    assert E.mean_lengths(8192, 1024, E.Harness()) == (8192, 1024)


def test_admission_of_another_engine_is_its_limit_capped_by_the_kv_pool():
    """vLLM admits min(max_num_seqs, what the KV pool holds at its memory fraction): the pool is
    k3lab's sizing of the same memory (memory.fit), not sglang's request slots."""
    ctx = 9216
    plan = memory.fit(CFG, MI355X, 0.9, "bf16", context_tokens=ctx, variants=("aiter-k3-opt",))
    kv = plan.max_kv_tokens // ctx
    a = E.admission(CFG, MI355X, ctx, variants=("aiter-k3-opt",), engine=E.Engine("vllm"))
    assert a.requests == min(1024, kv) and a.engine == "vllm"
    small = E.admission(CFG, MI355X, ctx, variants=("aiter-k3-opt",), engine=E.Engine("vllm", max_running_requests=16))
    assert small.requests == 16 and small.why(ctx).startswith("vllm's request limit binds: 16 per replica")
    sg = E.admission(CFG, MI355X, ctx, variants=("aiter-k3-opt",))
    assert sg.requests == min(plan.max_running_requests, kv)


# --------------------------------------------------------------------------- the regimes' equations


def _plan(work, engine=E.SGLANG, harness=E.COHORT_HARNESS, admitted=None, spec=M.NO_SPEC):
    return M.plan(CFG, MI355X, work, spec, ("aiter-k3-opt",), "bf16", None, "fast", engine, harness, admitted)


def test_one_staggered_request_is_its_prefill_then_its_steps():
    """Alone, a request waits for nothing: TTFT = overhead + its prefill, TPOT = one step."""
    pl = _plan(M.Workload(8192, 1024, 1), harness=E.Harness("rate"))
    t = M.timing(pl, P)
    prefill = sum(c.seconds(P) for c in pl.alone)
    step = pl.step_repeats * pl.steps[-1].seconds(P)
    assert t.regime == "staggered"
    assert t.ttft_s == pytest.approx(0.030 + prefill)
    assert t.tpot_s == pytest.approx(step)
    assert t.cycle_s == pytest.approx(t.ttft_s + 1023 * t.tpot_s)


def test_staggered_steady_state_identities():
    """n requests in steady state: Little's law (output = n·O / life), the other requests' prefills
    take f = X·p·(n − 1)/n of the decode time (TPOT = step / (1 − f)), and a request's TTFT is
    never shorter than its own prefill; the cohort's TTFT (the whole burst ahead) is longer."""
    w = M.Workload(8192, 1024, 32)
    pl = _plan(w, harness=E.Harness("rate"))
    t = M.timing(pl, P)
    prefill = sum(c.seconds(P) for c in pl.alone)
    x = 32 / t.cycle_s
    f = x * prefill * 31 / 32
    assert t.output_tok_s == pytest.approx(x * 1024)
    assert t.tpot_s == pytest.approx(t.step_s / (1 - f), rel=1e-4)   # to the fixed point's tolerance
    assert t.cycle_s == pytest.approx(t.ttft_s + 1023 * t.tpot_s)
    assert t.ttft_s > 0.030 + prefill
    cohort = M.timing(_plan(w), P)
    assert cohort.ttft_s > 3 * t.ttft_s                                  # the cohort waits for 31 prompts ahead


def test_mixed_steady_state_identities():
    """vLLM: n = X·(overhead + K·t) with t = T0 / (1 − k·X) (the prompts' chunks riding in each
    step), TPOT = t; a prompt inside the budget takes one chunk."""
    w = M.Workload(1024, 128, 8)
    pl = _plan(w, engine=E.Engine("vllm"), harness=E.Harness("rate"))
    t = M.timing(pl, P)
    assert t.regime == "mixed" and t.tpot_s == pytest.approx(t.step_s)
    x = t.output_tok_s / 128
    assert t.cycle_s == pytest.approx(8 / x)
    assert t.ttft_s == pytest.approx(0.030 + 1.5 * t.step_s, rel=0.02)  # half a step's wait, one chunk
    assert t.cycle_s == pytest.approx(t.ttft_s + 127 * t.tpot_s, rel=0.02)


def test_a_saturated_budget_queues_the_prompts():
    """Long prompts through a small budget: the prefill tokens per step hit the budget, throughput
    stops growing with clients, and the TTFT is what Little's law leaves: life − decode."""
    eng = E.Engine("vllm", max_batched_tokens=4096)
    ts = [M.timing(_plan(M.Workload(28672, 128, c), engine=eng, harness=E.Harness("rate")), P) for c in (32, 96)]
    assert ts[1].output_tok_s == pytest.approx(ts[0].output_tok_s, rel=0.05)
    for c, t in zip((32, 96), ts):
        assert t.ttft_s == pytest.approx(t.cycle_s - 127 * t.tpot_s, rel=1e-9)
    assert ts[1].ttft_s > 2.5 * ts[0].ttft_s


def test_clients_beyond_the_admission_queue_in_the_ttft_only():
    """c clients, n admitted: the running n set the throughput and TPOT; the others wait
    (c − n) / X for their turn (Little's law), in every regime."""
    for eng, h in ((E.SGLANG, E.COHORT_HARNESS), (E.SGLANG, E.Harness("rate")), (E.Engine("vllm"), E.Harness("rate"))):
        free = M.timing(_plan(M.Workload(8192, 1024, 48), eng, h), P)
        capped = M.timing(_plan(M.Workload(8192, 1024, 64), eng, h, admitted=48), P)
        assert capped.running == 48
        assert capped.output_tok_s == pytest.approx(free.output_tok_s, rel=1e-9)
        assert capped.tpot_s == pytest.approx(free.tpot_s, rel=1e-9)
        x = free.output_tok_s / 1024
        assert capped.ttft_s == pytest.approx(free.ttft_s + 16 / x, rel=1e-9)


def test_verify_attention_runs_in_the_extend_kernel():
    """A DSpark verify step's attention is an extend batch: the prefill kernel's efficiency moves
    the verify step (the fallback's on a Triton run), never a plain decode step."""
    work = M.Workload(32768, 512, 1)
    slow = M.FamilyParams(**{**P.__dict__, "prefill_attention_efficiency": 0.03})
    spec = M.Spec("dspark", 2.0)
    base = [M.timing(_plan(work), p).step_s for p in (P, slow)]
    ver = [M.timing(_plan(work, spec=spec), p).step_s for p in (P, slow)]
    assert base[0] == pytest.approx(base[1])
    assert ver[1] > ver[0]


def test_token_and_verify_row_costs_move_their_own_terms():
    """token_us: per token per layer of a decode or verify pass; verify_row_us: per extra verify row
    per layer. At one request, 93 layers: a decode step pays 93·token_us, a verify step of the
    7-token block 8·93·token_us + 7·93·verify_row_us."""
    w = M.Workload(1024, 128, 1)
    zero = M.FamilyParams(**{**P.__dict__, "token_us": 0.0, "verify_row_us": 0.0})
    d = [M.timing(_plan(w), p).step_s for p in (zero, P)]
    assert d[1] - d[0] == pytest.approx(93 * 0.5e-6)
    spec = M.Spec("dspark", 3.0)
    v = [M.timing(_plan(w, spec=spec), p).step_s for p in (zero, P)]
    assert v[1] - v[0] == pytest.approx(8 * 93 * 0.5e-6 + 7 * 93 * 2.0e-6)
    assert M.Spec("dspark", 2.0, block=3).draft_tokens == 3
    blk = M.timing(_plan(w, spec=M.Spec("dspark", 2.0, block=3)), P).step_s - M.timing(_plan(w, spec=M.Spec("dspark", 2.0, block=3)), zero).step_s
    assert blk == pytest.approx(4 * 93 * 0.5e-6 + 3 * 93 * 2.0e-6)
    with pytest.raises(ValueError, match="needs a speculative algorithm"):
        M.Spec("none", 1.0, block=3)
    with pytest.raises(ValueError, match=r"accept_len must be in \[1, 4\]"):
        M.Spec("dspark", 4.5, block=3)


def test_interpolation_between_costed_batches_is_linear():
    assert R._interp((1.0, 2.0, 4.0), (10.0, 20.0, 60.0), 3.0) == pytest.approx(40.0)
    assert R._interp((1.0, 2.0), (10.0, 20.0), 0.5) == 10.0 and R._interp((1.0, 2.0), (10.0, 20.0), 9.0) == 20.0
    assert M._batches(10) == (1.0, 2.0, 4.0, 8.0, 10.0) and M._batches(1) == (1.0,)
    assert math.isclose(M._batches(64)[-1], 64.0)
