"""The serving model: seconds for a decode step, a prefill and a closed-loop benchmark.

Built from finding 1's physical terms (:mod:`k3lab.model.step`: bytes, experts touched, FLOPs and
collectives per GPU of a deployment) and named parameters per GPU family (:class:`FamilyParams`),
fitted on public measurements (:mod:`k3lab.serving.calibration`). A forward pass runs two kinds of
kernels one after the other, each at its own roofline::

    t_pass = layer_passes · overhead
             + max(weight bytes / (hbm_efficiency · HBM B/s), GEMM FLOPs / (flop_efficiency · peak))   GEMMs
             + attention                                                                              attention
             + collectives (NCCL ring model, k3lab.roofline.collective_s)
             + collectives that cross nodes · scale_out_us

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

**The benchmark** is ``sglang.bench_serving``'s closed loop over a fixed-length random workload
(``--random-range-ratio 1``): ``c`` requests in flight per replica, each of ``I`` prompt and ``O``
output tokens. sglang's scheduler runs a waiting prefill before the next decode step ("Run
prefill first if possible": ``Scheduler.get_next_batch_to_run``, ``sglang/srt/managers/scheduler.py``,
0.5.16 and 0.5.23) and packs waiting prompts first-come-first-served into batches of at most
``--chunked-prefill-size`` tokens, splitting the prompt that does not fit (``PrefillAdder``,
``schedule_policy.py``; mixed prefill/decode batches are off by default, ``--enable-mixed-chunk``).
Requests with equal lengths that start together finish together, so the loop runs in *cohorts*::

    burst    = the cohort's c prompts in chunks of C tokens, one forward pass each
    TTFT_j   = request_overhead + the chunks up to the one holding request j's last prompt token
    cycle    = request_overhead + burst + (O − 1) / accept_len · t_step(c)
    output tok/s (deployment) = busy replicas · c · O / cycle
    TPOT_j   = (cycle − TTFT_j) / (O − 1)                      (bench_serving's definition)

so one long prompt's TTFT is its whole prefill, TTFT grows with concurrency (a request waits for the
chunks ahead of it), and TPOT carries the rest of its cohort's prefills. Fewer requests than replicas
leave replicas idle: ``c`` is never below one request per busy replica.

Every term a parameter multiplies is computed once per question (:func:`plan`, cached), so a
timing under new parameters (:func:`timing`) is arithmetic: the fit evaluates it many thousand times.
Units: seconds, tokens, tok/s (per deployment unless named per node / per GPU).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .. import data
from ..model.sharding import Setting, setting_for
from ..model.step import StepTerms, decode_terms, draft_terms, microbatches, prefill_terms
from ..specs import Deployment, ModelConfig

SPEC_ALGORITHMS = ("none", "dspark")
#: MLA prefill attention kernels: ``fast`` (FlashInfer / TRT-LLM MLA on CUDA, AITER's ASM MLA
#: prefill on ROCm) or ``fallback`` (the generic Triton extend-attention sglang ran on ROCm while
#: AITER refused 12 heads per rank: finding 3)
PREFILL_ATTENTION = ("fast", "fallback")


@dataclass(frozen=True)
class FamilyParams:
    """The fitted parameters of one GPU family (every GPU of the family shares them).

    ``hbm_efficiency``: achieved fraction of HBM bandwidth streaming weights (0, 1];
    ``flop_efficiency``: achieved fraction of the dense BF16 / FP8 peaks in GEMMs (0, 1];
    ``layer_overhead_us``: fixed µs per decoder layer per forward pass (≥ 0);
    ``kv_efficiency``: achieved fraction of HBM bandwidth of decode attention reading the KV
    cache and KDA state (0, 1]; ``prefill_attention_efficiency``: achieved fraction of the BF16
    peak of the MLA prefill attention kernel (0, 1]; ``fallback_attention_efficiency``: the same
    for the fallback kernel (families without one: equal to the fast kernel's);
    ``request_overhead_ms``: fixed ms per request before its first token (≥ 0);
    ``scale_out_us``: fixed µs per collective that crosses nodes (a TP group or a pipeline
    spanning nodes over RoCE / InfiniBand: the network's small-message latency, far above
    NCCL's per-hop constant; families without a run that spans nodes: 0, and the question is
    outside their validated domain)."""

    family: str
    hbm_efficiency: float
    flop_efficiency: float
    layer_overhead_us: float
    kv_efficiency: float = 1.0
    prefill_attention_efficiency: float = 1.0
    fallback_attention_efficiency: float = 1.0
    request_overhead_ms: float = 0.0
    scale_out_us: float = 0.0

    NAMES = ("hbm_efficiency", "flop_efficiency", "layer_overhead_us", "kv_efficiency",
             "prefill_attention_efficiency", "fallback_attention_efficiency", "request_overhead_ms",
             "scale_out_us")

    def as_tuple(self) -> tuple[float, ...]:
        return tuple(getattr(self, k) for k in self.NAMES)


#: the roofline as a FamilyParams: ideal kernels, no fixed cost
IDEAL = FamilyParams("ideal", 1.0, 1.0, 0.0)


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

    def __post_init__(self):
        if self.algorithm not in SPEC_ALGORITHMS:
            raise ValueError(f"unknown speculative algorithm {self.algorithm!r}; known: {', '.join(SPEC_ALGORITHMS)}")
        a = data.check_finite("accept_len", self.accept_len)
        if self.algorithm == "none" and a != 1.0:
            raise ValueError(f"accept_len {a:g} needs a speculative algorithm (got 'none')")
        if self.algorithm != "none":
            top = block_tokens() + 1
            if not 1.0 <= a <= top:
                raise ValueError(f"accept_len must be in [1, {top}] (the draft block + the bonus token), got {a:g}")

    @property
    def on(self) -> bool:
        return self.algorithm != "none"


NO_SPEC = Spec()


def block_tokens() -> int:
    """Tokens the DSpark draft proposes per request per step (``data/model/kimi_k3_dspark_draft.yaml``)."""
    return int(data.load("dspark_draft").block_size_tokens)


def chunk_tokens(gpu) -> int:
    """sglang 0.5.23's default ``--chunked-prefill-size`` for a GPU of this capacity
    (``data/serving_model.yaml`` ``chunked_prefill``: ``arg_groups/memory_hook.py``
    ``handle_gpu_memory_settings``: 16,384 from 160 GiB up, 8,192 below)."""
    c = data.load("serving_model").chunked_prefill
    return int(c.tokens_large if gpu.usable_hbm_gib >= c.large_from_gib.value else c.tokens_small)


def setting_of(dep: Deployment, variants=()) -> Setting:
    """The sglang layout setting of a deployment (:func:`k3lab.model.sharding.setting_for`);
    ``ep`` / ``dp_attention`` also come from the deployment itself."""
    g = dep.gpu_spec
    v = set(variants or ()) | ({"ep"} if dep.ep and "ep-a2a" not in (variants or ()) else set())
    v |= {"dp-attention"} if dep.dp_attention else set()
    return setting_for(g.vendor, sorted(v), g.arch)


# --------------------------------------------------------------------------- parameter-free terms


@dataclass(frozen=True)
class PassCost:
    """One forward pass (or a sum of passes) as seconds at ideal efficiency, per GPU of the
    heaviest stage: what each parameter divides or multiplies. ``gemm_mem_s``: weight bytes at
    the HBM peak; ``gemm_flop_s``: GEMM FLOPs at the BF16/FP8 peaks; ``attn_mem_s``: KV cache +
    KDA state bytes at the HBM peak; ``attn_flop_s``: attention FLOPs at the BF16 peak;
    ``layer_passes``: layer executions paying the fixed cost; ``comm_s``: collectives (no
    parameter); ``scale_out_events``: collectives that cross nodes (each pays ``scale_out_us``);
    ``prefill``: attention runs in the prefill kernel (a chunk), not the decode one."""

    gemm_mem_s: float
    gemm_flop_s: float
    attn_mem_s: float
    attn_flop_s: float
    layer_passes: float
    comm_s: float
    prefill: bool = False
    scale_out_events: float = 0.0

    def seconds(self, p: FamilyParams, fallback: bool = False) -> float:
        gemm = max(self.gemm_mem_s / p.hbm_efficiency, self.gemm_flop_s / p.flop_efficiency)
        if self.prefill:
            eff = p.fallback_attention_efficiency if fallback else p.prefill_attention_efficiency
            attn = self.attn_flop_s / eff
        else:
            attn = max(self.attn_mem_s / p.kv_efficiency, self.attn_flop_s / p.flop_efficiency)
        return ((self.layer_passes * p.layer_overhead_us + self.scale_out_events * p.scale_out_us) * 1e-6
                + gemm + attn + self.comm_s)


def pass_cost(terms: StepTerms, cfg: ModelConfig, dep: Deployment, nics_per_node: int | None = None,
              prefill: bool = False) -> PassCost:
    """:class:`PassCost` of ``terms`` on ``dep`` (collectives by :func:`k3lab.roofline.collective_s`)."""
    from ..roofline import collective_s

    g = dep.gpu_spec
    bw, bf16, fp8 = g.hbm_bw_tb_s * 1e12, g.dense_bf16_tflops * 1e12, g.dense_fp8_tflops * 1e12
    t_ar, t_send = collective_s(cfg, dep, terms, nics_per_node=nics_per_node)
    return PassCost(gemm_mem_s=(terms.bytes_weights + terms.bytes_experts) / bw,
                    gemm_flop_s=(terms.flops_dense - terms.flops_attention) / bf16 + terms.flops_experts / fp8,
                    attn_mem_s=(terms.bytes_kv + terms.bytes_state) / bw,
                    attn_flop_s=terms.flops_attention / bf16,
                    layer_passes=float(terms.layer_passes), comm_s=t_ar + t_send, prefill=prefill,
                    scale_out_events=scale_out_events(terms, dep))


def spans_nodes(dep: Deployment) -> bool:
    """One replica's TP group or pipeline crosses the scale-up domain (collectives over the network)."""
    return dep.tp_nodes > 1 or (dep.pp > 1 and dep.tp * dep.pp > dep.gpus_per_node)


def scale_out_events(terms: StepTerms, dep: Deployment) -> float:
    """Collectives of a pass that cross nodes: every all-reduce of every layer execution when the
    TP group spans nodes (``data/serving_model.yaml`` ``all_reduces_per_layer``), and the stage
    sends of a pipeline that spans nodes."""
    n = 0.0
    if dep.tp_nodes > 1:
        n += data.load("serving_model").all_reduces_per_layer.value * terms.layer_passes
    if dep.pp > 1 and spans_nodes(dep):
        n += terms.pp_sends
    return float(n)


def pass_seconds(terms: StepTerms, cfg: ModelConfig, dep: Deployment, params: FamilyParams,
                 nics_per_node: int | None = None) -> float:
    """Seconds of the forward pass(es) ``terms`` describe on ``dep`` under ``params``."""
    return pass_cost(terms, cfg, dep, nics_per_node, prefill=terms.kind == "prefill").seconds(params)


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


@dataclass(frozen=True)
class BenchmarkPlan:
    """Everything of a benchmark question that does not depend on the fitted parameters (per
    replica): the decode/verify step, the draft pass, each prefill chunk of the cohort, which
    chunk finishes each request, and the counts that turn them into a :class:`Timing`."""

    workload: Workload
    replicas: int
    busy_replicas: int
    cohort: float               # requests per busy replica
    step: PassCost
    draft: PassCost | None
    step_repeats: float         # stage-steps a decode step costs (pipeline stages / microbatches)
    chunks: tuple               # PassCost per prefill chunk (pipeline stages included)
    last_chunk: tuple           # per request of the cohort: the chunk holding its last token
    alone: tuple                # PassCost per chunk of one prompt prefilled alone
    accept_len: float
    fallback: bool


@functools.lru_cache(maxsize=4096)
def plan(cfg: ModelConfig, dep: Deployment, work: Workload, spec: Spec = NO_SPEC, variants: tuple = (),
         kv_dtype: str = "bf16", nics_per_node: int | None = None, prefill_attention: str = "fast") -> BenchmarkPlan:
    """The parameter-free :class:`BenchmarkPlan` of a question (cached)."""
    if prefill_attention not in PREFILL_ATTENTION:
        raise ValueError(f"prefill_attention must be one of {PREFILL_ATTENTION}, got {prefill_attention!r}")
    setting = setting_of(dep, variants)
    reps = dep.replicas
    busy = min(reps, work.concurrency)
    c = work.concurrency / busy
    step, draft, repeats = _step_costs(cfg, dep, c, work.mean_context, spec, setting, kv_dtype, nics_per_node)
    size = chunk_tokens(dep.gpu_spec)

    def costs(prompts):
        layout, last = chunk_layout(prompts, work.input_len, size)
        out = []
        for segs in layout:
            t = prefill_terms(cfg, dep, 1, sum(s for _, s in segs), size, setting=setting, segments=tuple(segs),
                              absorbed_with_prefix=prefill_attention == "fallback")
            out.append(_times(pass_cost(t, cfg, dep, nics_per_node, prefill=True), dep.pp))
        return tuple(out), tuple(last)

    cohort = max(1, round(c))
    chunks, last = costs(cohort)
    alone, _ = costs(1)
    return BenchmarkPlan(workload=work, replicas=reps, busy_replicas=busy, cohort=c, step=step, draft=draft,
                         step_repeats=repeats, chunks=chunks, last_chunk=last, alone=alone,
                         accept_len=spec.accept_len, fallback=prefill_attention == "fallback")


def _times(c: PassCost, k: float) -> PassCost:
    """``c`` repeated ``k`` times in sequence (pipeline stages one after another)."""
    return PassCost(c.gemm_mem_s * k, c.gemm_flop_s * k, c.attn_mem_s * k, c.attn_flop_s * k,
                    c.layer_passes * k, c.comm_s * k, c.prefill, c.scale_out_events * k)


@dataclass(frozen=True)
class Timing:
    """The model's answer for one deployment × workload × spec (per replica unless named).

    ``step_s``: one decode (or verify + draft) step over the batch; ``prefill_s``: one
    request's prefill alone (TTFT at concurrency 1 less the request overhead);
    ``prefill_per_request_s``: a request's share of its cohort's prefill chunks; ``cycle_s``:
    every slot turned over once."""

    concurrency: int
    replicas: int
    step_s: float
    prefill_s: float
    prefill_per_request_s: float
    cycle_s: float
    output_tok_s: float          # whole deployment
    tpot_s: float
    ttft_s: float
    accept_len: float
    tokens_in: int = 0

    @property
    def prefill_tok_s(self) -> float:
        """Prompt tokens per second of one replica prefilling a single request alone."""
        return math.nan if self.prefill_s <= 0 else self.tokens_in / self.prefill_s


def timing(pl: BenchmarkPlan, params: FamilyParams) -> Timing:
    """:class:`Timing` of a :class:`BenchmarkPlan` under ``params`` (see the module docstring)."""
    w = pl.workload
    step = pl.step.seconds(params) + (pl.draft.seconds(params) if pl.draft else 0.0)
    step *= pl.step_repeats
    ends, t = [], 0.0
    for ch in pl.chunks:
        t += ch.seconds(params, pl.fallback)
        ends.append(t)
    burst = t
    req = params.request_overhead_ms * 1e-3
    ttft = req + sum(ends[k] for k in pl.last_chunk) / len(pl.last_chunk)
    decode_tokens = max(1, w.output_len - 1)
    cycle = req + burst + decode_tokens / pl.accept_len * step
    alone = sum(ch.seconds(params, pl.fallback) for ch in pl.alone)
    return Timing(concurrency=w.concurrency, replicas=pl.replicas, step_s=step, prefill_s=alone,
                  prefill_per_request_s=burst / len(pl.last_chunk), cycle_s=cycle,
                  output_tok_s=pl.busy_replicas * pl.cohort * w.output_len / cycle,
                  tpot_s=(cycle - ttft) / decode_tokens, ttft_s=ttft, accept_len=pl.accept_len,
                  tokens_in=w.input_len)


def _step_costs(cfg: ModelConfig, dep: Deployment, requests: float, context_tokens: float, spec: Spec,
                setting: Setting, kv_dtype: str, nics_per_node: int | None) -> tuple[PassCost, PassCost | None, float]:
    """(the decode or verify pass, DSpark's draft pass or None, stage-steps a step costs) of a step
    over ``requests`` requests of one replica: a request needs pp stage-steps per token, and the
    microbatches in flight (:func:`microbatches`) share that cycle."""
    micro = microbatches(requests, dep.pp)
    req = requests / micro
    rows = block_tokens() + 1 if spec.on else 1
    step = pass_cost(decode_terms(cfg, dep, req, context_tokens, rows_per_request=rows, setting=setting,
                                  kv_dtype=kv_dtype), cfg, dep, nics_per_node)
    draft = None
    if spec.on:
        draft = pass_cost(draft_terms(cfg, dep, req, block_tokens(), context_tokens, data.load("dspark_draft")),
                          cfg, dep, nics_per_node)
    return step, draft, max(float(dep.pp), micro)


def decode_step_seconds(cfg: ModelConfig, dep: Deployment, requests: float, context_tokens: float,
                        params: FamilyParams, spec: Spec = NO_SPEC, setting: Setting | None = None,
                        kv_dtype: str = "bf16", nics_per_node: int | None = None) -> float:
    """One decode step (``spec`` off) or one verify step plus one draft pass (``spec`` on)
    over ``requests`` requests of one replica, seconds; pipeline stages in sequence."""
    step, draft, repeats = _step_costs(cfg, dep, requests, context_tokens, spec, setting or setting_of(dep),
                                       kv_dtype, nics_per_node)
    return repeats * (step.seconds(params) + (draft.seconds(params) if draft else 0.0))


def benchmark(cfg: ModelConfig, dep: Deployment, work: Workload, params: FamilyParams, spec: Spec = NO_SPEC,
              variants=(), kv_dtype: str = "bf16", nics_per_node: int | None = None,
              prefill_attention: str = "fast") -> Timing:
    """The cohort benchmark of the module docstring → :class:`Timing`. ``work.concurrency``
    is requests in flight over the whole deployment, split evenly over the replicas they keep
    busy (never less than one request a busy replica)."""
    return timing(plan(cfg, dep, work, spec, tuple(variants or ()), kv_dtype, nics_per_node, prefill_attention),
                  params)
