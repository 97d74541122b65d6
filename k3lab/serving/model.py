"""The serving model: seconds for a decode step, a prefill and a closed-loop benchmark.

Built from finding 1's physical terms (:mod:`k3lab.model.step`: bytes, experts touched, FLOPs and
collectives per GPU of a deployment) and named parameters per GPU family (:class:`FamilyParams`),
fitted on public measurements (:mod:`k3lab.serving.calibration`). A forward pass runs two kinds of
kernels one after the other, each at its own roofline::

    t_pass = layer_passes · overhead
             + max(weight bytes / (hbm_efficiency · HBM B/s), GEMM FLOPs / (flop_efficiency · peak))   GEMMs
             + attention                                                                              attention
             + collectives (NCCL ring model, k3lab.roofline.collective_s)
             + all-reduces that cross nodes · scale_out_us + pipeline hand-offs across nodes · pipeline_us

    decode / verify attention = max((KV + KDA state bytes) / (kv_efficiency · HBM B/s),
                                    attention FLOPs / (flop_efficiency · BF16 peak))
    prefill attention         = causal MLA FLOPs of each chunk / (prefill_attention_efficiency · BF16 peak)
                                (MHA form; absorbed form, 3.4× the FLOPs per pair, for a Triton-fallback
                                chunk that continues a prompt: k3lab.model.step.prefill_terms)

on the 24 MLA layers only (the KDA layers' recurrent state is linear in context and read once per
request). Decode attention reads every request's latent KV with its own kernel, far below the
GEMMs' bandwidth at long context; a verify step (DSpark) runs ``block`` query rows per request
through the target, so its GEMMs turn compute-bound once the batch grows.
``layer_overhead_us`` is the fixed cost per layer per pass (kernel launches, synchronisation);
``request_overhead_ms`` a fixed cost per request before its first token (HTTP, tokenising,
scheduling, the first token's sampling and detokenising).

**The benchmark** (since model version 3) takes the engine and the harness as inputs
(:mod:`k3lab.serving.engines`): ``c`` clients in flight per replica, each request ``I`` prompt and
``O`` output tokens (the means, for random lengths), at most ``n = min(c, admitted)`` of them
running (the rest queue: Little's law adds ``(c − n) / X`` to their TTFT, ``X`` the requests
finished per second). Three regimes (:data:`k3lab.serving.engines.REGIMES`), each in
:mod:`k3lab.serving.regimes`:

- ``cohort`` (sglang's ``bench_serving`` over fixed lengths): prefill first ("Run prefill first if
  possible": ``Scheduler.get_next_batch_to_run``, ``sglang/srt/managers/scheduler.py``, 0.5.16 and
  0.5.23), waiting prompts packed first-come-first-served into chunks of the engine's token budget
  (``PrefillAdder``, ``schedule_policy.py``), so equal requests started together finish together::

    burst    = the cohort's n prompts in chunks, one forward pass each
    TTFT_j   = request_overhead + the chunks up to the one holding request j's last prompt token
    cycle    = request_overhead + burst + (O − 1) / accept_len · t_step(n)
    TPOT_j   = (cycle − TTFT_j) / (O − 1)                      (bench_serving's definition)

- ``staggered`` (a prefill-first engine under spread-out arrivals): in steady state each request's
  prefill (``p``, alone) interrupts the decodes; with ``X = n / L`` requests a second, decode gets
  ``1 − X·p`` of the time: ``TPOT = t_step / (accept_len · (1 − X·p))``, ``TTFT = overhead + t_step / 2 +
  p`` plus the wait behind other prefills (M/D/1: ``X·p² / (2(1 − X·p))``), ``L = TTFT + (O − 1)·TPOT``;
- ``mixed`` (vLLM): a prompt's chunks ride in the decode steps inside the token budget ``B``; a step
  over ``D`` decodes and ``X·I·t`` prompt tokens takes ``t``; TTFT is the wait for the next step plus
  one step per chunk, until the budget saturates and prompts queue.

A verify step (DSpark) runs ``block + 1`` rows per request through the target; sglang runs it as an
extend batch (``ForwardMode.is_extend`` counts ``TARGET_VERIFY``, ``model_executor/forward_batch_info.py``), so its
attention runs in the prefill (extend) kernel over each request's prefix — the Triton fallback on a
run that stated ``--attention-backend triton``, where it is what makes small-batch speculation a
net loss at long context.

Every term a parameter multiplies is computed once per question (:func:`plan`, cached), so a
timing under new parameters (:func:`timing`) is arithmetic: the fit evaluates it many thousand times.
Units: seconds, tokens, tok/s (per deployment unless named per node / per GPU).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import data, limits
from ..model.sharding import Setting, setting_for
from ..model.step import decode_terms, draft_terms, microbatches, prefill_terms
from ..specs import Deployment, ModelConfig
from .engines import COHORT_HARNESS, SGLANG, Engine, Harness, mean_lengths, regime
from .passes import (IDEAL, BenchmarkPlan, FamilyParams, PassCost, Timing, pass_cost, pass_seconds,  # noqa: F401
                     scale_out_events, spans_nodes)
from .regimes import timing as regime_timing

SPEC_ALGORITHMS = ("none", "dspark")
#: MLA prefill attention kernels: ``fast`` (FlashInfer / TRT-LLM MLA on CUDA, AITER's ASM MLA
#: prefill on ROCm) or ``fallback`` (the generic Triton extend-attention sglang ran on ROCm while
#: AITER refused 12 heads per rank: finding 3)
PREFILL_ATTENTION = ("fast", "fallback")


@dataclass(frozen=True)
class Workload:
    """A benchmark workload: prompt and output lengths (tokens) and requests in flight."""

    input_len: int
    output_len: int
    concurrency: int

    def __post_init__(self):
        for k in ("input_len", "output_len", "concurrency"):
            data.check_count(k, getattr(self, k))

    @property
    def mean_context(self) -> float:
        """Mean context a decode step attends over: input + output / 2 tokens."""
        return self.input_len + self.output_len / 2


@dataclass(frozen=True)
class Spec:
    """Speculative decoding: ``algorithm`` ``none`` or ``dspark`` (block-diffusion draft of
    ``data/model/kimi_k3_dspark_draft.yaml``), with ``accept_len`` tokens emitted per verify
    step (accepted drafts + the bonus token: 1 ≤ accept_len ≤ block + 1)."""

    algorithm: str = "none"
    accept_len: float = 1.0
    #: draft tokens a step proposes (sglang ``--speculative-dspark-block-size``); None: the draft's own
    block: int | None = None

    def __post_init__(self):
        if self.algorithm not in SPEC_ALGORITHMS:
            raise ValueError(f"unknown speculative algorithm {self.algorithm!r}; known: {', '.join(SPEC_ALGORITHMS)}")
        a = data.check_finite("accept_len", self.accept_len)
        if self.algorithm == "none" and a != 1.0:
            raise ValueError(f"accept_len {a:g} needs a speculative algorithm (got 'none')")
        if self.block is not None:
            limits.check("draft_tokens", self.block, "the draft block")
            if self.algorithm == "none":
                raise ValueError("a draft block size needs a speculative algorithm (got 'none')")
        if self.algorithm != "none":
            top = self.draft_tokens + 1
            if not 1.0 <= a <= top:
                raise ValueError(f"accept_len must be in [1, {top}] (the draft block + the bonus token), got {a:g}")

    @property
    def on(self) -> bool:
        return self.algorithm != "none"

    @property
    def draft_tokens(self) -> int:
        """Draft tokens proposed per request per step: the stated block, else the draft's."""
        return int(self.block) if self.block is not None else block_tokens()


NO_SPEC = Spec()


def block_tokens() -> int:
    """Tokens the DSpark draft proposes per request per step (``data/model/kimi_k3_dspark_draft.yaml``)."""
    return int(data.load("dspark_draft").block_size_tokens)


def chunk_tokens(gpu) -> int:
    """sglang 0.5.23's default ``--chunked-prefill-size`` for a GPU of this capacity
    (``data/serving_model.yaml`` ``chunked_prefill``: ``arg_groups/memory_hook.py``
    ``handle_gpu_memory_settings``: 16,384 from 160 GiB up, 8,192 below)."""
    return SGLANG.batched_tokens(gpu)


def setting_of(dep: Deployment, variants=()) -> Setting:
    """The sglang layout setting of a deployment (:func:`k3lab.model.sharding.setting_for`);
    ``ep`` / ``dp_attention`` also come from the deployment itself."""
    g = dep.gpu_spec
    v = set(variants or ()) | ({"ep"} if dep.ep and "ep-a2a" not in (variants or ()) else set())
    v |= {"dp-attention"} if dep.dp_attention else set()
    return setting_for(g.vendor, sorted(v), g.arch)


def chunk_layout(prompts: int, prompt_tokens: int, chunk: int) -> tuple[list[list[tuple[int, int]]], list[int]]:
    """How sglang's chunked prefill packs ``prompts`` equal prompts arriving together: first come
    first served, at most ``chunk`` tokens a batch, the prompt that does not fit split.
    → (per chunk the (prefix, tokens) segments of the prompts in it, per prompt the index of the
    chunk holding its last token)."""
    chunks: list[list[tuple[int, int]]] = [[]]
    room, last = chunk, []
    for _ in range(prompts):
        done = 0
        while done < prompt_tokens:
            if room == 0:
                chunks.append([])
                room = chunk
            take = min(room, prompt_tokens - done)
            chunks[-1].append((done, take))
            done += take
            room -= take
        last.append(len(chunks) - 1)
    return chunks, last


def _batches(n: float) -> tuple:
    """Batch sizes a steady regime's steps are costed at: 1, the powers of two below ``n``, ``n``."""
    out, b = {1.0, float(n)}, 2.0
    while b < n:
        out.add(b)
        b *= 2
    return tuple(sorted(out))


@functools.lru_cache(maxsize=4096)
def plan(cfg: ModelConfig, dep: Deployment, work: Workload, spec: Spec = NO_SPEC, variants: tuple = (),
         kv_dtype: str = "bf16", nics_per_node: int | None = None, prefill_attention: str = "fast",
         engine: Engine = SGLANG, harness: Harness = COHORT_HARNESS, admitted: int | None = None) -> BenchmarkPlan:
    """The parameter-free :class:`BenchmarkPlan` of a question (cached). ``admitted``: requests the
    deployment runs at once (whole deployment; None: all of ``work.concurrency``)."""
    if prefill_attention not in PREFILL_ATTENTION:
        raise ValueError(f"prefill_attention must be one of {PREFILL_ATTENTION}, got {prefill_attention!r}")
    setting = setting_of(dep, variants)
    reps = dep.replicas
    busy = min(reps, work.concurrency)
    I, O = mean_lengths(work.input_len, work.output_len, harness)
    w = Workload(I, O, work.concurrency)
    c = work.concurrency / busy
    n = c if admitted is None else max(1.0, min(c, admitted / busy))
    reg = regime(engine, harness)
    batches = (n,) if reg == "cohort" else _batches(n)
    costs = [_step_costs(cfg, dep, b, w.mean_context, spec, setting, kv_dtype, nics_per_node) for b in batches]
    size = engine.batched_tokens(dep.gpu_spec)

    def chunk_costs(prompts):
        layout, last = chunk_layout(prompts, I, size)
        out = []
        for segs in layout:
            t = prefill_terms(cfg, dep, 1, sum(s for _, s in segs), size, setting=setting, segments=tuple(segs),
                              absorbed_with_prefix=prefill_attention == "fallback")
            out.append(_times(pass_cost(t, cfg, dep, nics_per_node, prefill=True), dep.pp))
        return tuple(out), tuple(last)

    chunks, last = chunk_costs(max(1, round(n))) if reg == "cohort" else ((), ())
    alone, _ = chunk_costs(1)
    return BenchmarkPlan(workload=w, replicas=reps, busy_replicas=busy, cohort=c, running=n, regime=reg,
                         batches=tuple(batches), steps=tuple(x[0] for x in costs),
                         drafts=tuple(x[1] for x in costs if x[1] is not None), step_repeats=costs[-1][2],
                         chunks=chunks, last_chunk=last, alone=alone, budget=size, accept_len=spec.accept_len,
                         fallback=prefill_attention == "fallback", together=harness.together)


def _times(c: PassCost, k: float) -> PassCost:
    """``c`` repeated ``k`` times in sequence (pipeline stages one after another)."""
    return PassCost(c.gemm_mem_s * k, c.gemm_flop_s * k, c.attn_mem_s * k, c.attn_flop_s * k,
                    c.layer_passes * k, c.comm_s * k, c.extend_flop_s * k, c.scale_out_events * k,
                    c.token_layers * k, c.verify_row_layers * k, c.pp_handoffs * k)


def timing(pl: BenchmarkPlan, params: FamilyParams) -> Timing:
    """:class:`Timing` of a :class:`BenchmarkPlan` under ``params`` (:mod:`k3lab.serving.regimes`)."""
    return regime_timing(pl, params)


def _step_costs(cfg: ModelConfig, dep: Deployment, requests: float, context_tokens: float, spec: Spec,
                setting: Setting, kv_dtype: str, nics_per_node: int | None) -> tuple[PassCost, PassCost | None, float]:
    """(the decode or verify pass, DSpark's draft pass or None, stage-steps a step costs) of a step
    over ``requests`` requests of one replica: a request needs pp stage-steps per token, and the
    microbatches in flight (:func:`microbatches`) share that cycle. A verify step's attention runs
    in the extend kernel (sglang's TARGET_VERIFY is an extend batch)."""
    micro = microbatches(requests, dep.pp)
    req = requests / micro
    rows = spec.draft_tokens + 1 if spec.on else 1
    step = pass_cost(decode_terms(cfg, dep, req, context_tokens, rows_per_request=rows, setting=setting,
                                  kv_dtype=kv_dtype), cfg, dep, nics_per_node, prefill=spec.on)
    draft = None
    if spec.on:
        draft = pass_cost(draft_terms(cfg, dep, req, spec.draft_tokens, context_tokens, data.load("dspark_draft")),
                          cfg, dep, nics_per_node)
    return step, draft, max(float(dep.pp), micro)


def decode_step_seconds(cfg: ModelConfig, dep: Deployment, requests: float, context_tokens: float,
                        params: FamilyParams, spec: Spec = NO_SPEC, setting: Setting | None = None,
                        kv_dtype: str = "bf16", nics_per_node: int | None = None, fallback: bool = False) -> float:
    """One decode step (``spec`` off) or one verify step plus one draft pass (``spec`` on)
    over ``requests`` requests of one replica, seconds; pipeline stages in sequence. ``fallback``:
    a verify step's attention runs in the Triton fallback kernel."""
    step, draft, repeats = _step_costs(cfg, dep, requests, context_tokens, spec, setting or setting_of(dep),
                                       kv_dtype, nics_per_node)
    return repeats * (step.seconds(params, fallback) + (draft.seconds(params) if draft else 0.0))


def step_fixed_share(cfg: ModelConfig, dep: Deployment, requests: float, context_tokens: float,
                     params: FamilyParams, kv_dtype: str = "bf16") -> float:
    """The share (0-1) of one plain decode step over ``requests`` requests of one replica that is
    fixed per pass — layer overhead, cross-node collectives, pipeline hand-offs — and so does not
    grow when a DSpark verify step widens the batch: where it is large, a verify step costs little
    more than a plain one and DSpark gains at a lower acceptance."""
    step, _, _ = _step_costs(cfg, dep, requests, context_tokens, NO_SPEC, setting_of(dep), kv_dtype, None)
    fixed = (step.layer_passes * params.layer_overhead_us + step.scale_out_events * params.scale_out_us
             + step.pp_handoffs * params.pipeline_us) * 1e-6
    return fixed / step.seconds(params)


def benchmark(cfg: ModelConfig, dep: Deployment, work: Workload, params: FamilyParams, spec: Spec = NO_SPEC,
              variants=(), kv_dtype: str = "bf16", nics_per_node: int | None = None,
              prefill_attention: str = "fast", engine: Engine = SGLANG, harness: Harness = COHORT_HARNESS,
              admitted: int | None = None) -> Timing:
    """The benchmark of the module docstring → :class:`Timing`. ``work.concurrency`` is clients
    in flight over the whole deployment, split evenly over the replicas they keep busy (never less
    than one request a busy replica); ``admitted`` the requests the deployment runs at once (the
    rest queue; None: all)."""
    return timing(plan(cfg, dep, work, spec, tuple(variants or ()), kv_dtype, nics_per_node, prefill_attention,
                       engine, harness, admitted), params)
