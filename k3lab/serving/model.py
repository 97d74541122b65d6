"""The serving model: seconds for a decode step, a prefill and a benchmark cycle.

Built from finding 1's physical terms (:mod:`k3lab.model.step`: bytes, experts touched, FLOPs
and collectives per GPU of a deployment) and three named parameters per GPU family
(:class:`FamilyParams`), fitted on public measurements (:mod:`k3lab.serving.calibration`)::

    t_pass = layer_passes · layer_overhead_s
             + max(bytes / (hbm_efficiency · HBM B/s),
                   flops_dense / (flop_efficiency · BF16 peak) + flops_experts / (flop_efficiency · FP8 peak))
             + collectives (NCCL ring model, k3lab.roofline.collective_s)

With ``hbm_efficiency = flop_efficiency = 1`` and ``layer_overhead_s = 0`` a decode step is
k3lab's roofline at the deployment's real settings (bf16 KV, fp32 KDA state, expert padding as
sglang holds it); the parameters say how far real kernels are from it. The fixed per-layer
cost stands for kernel launches, synchronisation and collective start-up (single-stream
decode is dominated by it).

A benchmark is ``sglang.bench_serving``'s closed loop over a fixed-length random workload
(``--random-range-ratio 1``): ``c`` requests in flight, each of ``input_len`` prompt and
``output_len`` output tokens. Because every request has the same lengths, requests that start
together finish together: the benchmark runs in *cohorts*. Per replica, one cycle is the
cohort's ``c`` prefills (packed into sglang's ``chunked_prefill_size`` chunks, run one after
another: sglang schedules a waiting prefill before the next decode step) and then
``output_len / accept_len`` decode (or verify + draft) steps over the whole batch::

    cycle = t_prefill(c prompts) + (output_len / accept_len) · t_step(c)
    output tok/s (deployment) = replicas · c · output_len / cycle
    TTFT (mean) = t_prefill(c prompts) · (n + 1) / (2n)      n = chunks the cohort needs
    TPOT = (cycle − TTFT) / (output_len − 1)                   (bench_serving's definition)

so TTFT grows with concurrency (a request waits for the chunks ahead of it) and TPOT carries
the rest of its cohort's prefills. A workload whose requests drift apart (varied lengths,
variable acceptance) has less queueing than this. Units: seconds, tokens, tok/s (per deployment unless named per node / per GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data
from ..model.sharding import Setting, setting_for
from ..model.step import StepTerms, decode_terms, draft_terms, microbatches, prefill_terms
from ..specs import Deployment, ModelConfig

SPEC_ALGORITHMS = ("none", "dspark")


@dataclass(frozen=True)
class FamilyParams:
    """The fitted parameters of one GPU family (every GPU of the family shares them).

    ``hbm_efficiency``: achieved fraction of HBM bandwidth (0, 1]; ``flop_efficiency``:
    achieved fraction of the dense BF16 / FP8 peaks (0, 1]; ``layer_overhead_us``: fixed
    microseconds per decoder layer per forward pass (≥ 0)."""

    family: str
    hbm_efficiency: float
    flop_efficiency: float
    layer_overhead_us: float

    NAMES = ("hbm_efficiency", "flop_efficiency", "layer_overhead_us")

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.hbm_efficiency, self.flop_efficiency, self.layer_overhead_us)


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


def pass_seconds(terms: StepTerms, cfg: ModelConfig, dep: Deployment, params: FamilyParams,
                 nics_per_node: int | None = None) -> float:
    """Seconds of the forward pass(es) ``terms`` describe on ``dep`` under ``params`` (see the
    module docstring). ``nics_per_node``: scale-out NICs a node's collectives use (default
    ``data/serving_model.yaml``'s; matters only for a deployment that spans nodes)."""
    from ..roofline import collective_s

    g = dep.gpu_spec
    t_mem = terms.bytes_total / (params.hbm_efficiency * g.hbm_bw_tb_s * 1e12)
    t_flop = (terms.flops_dense / (g.dense_bf16_tflops * 1e12)
              + terms.flops_experts / (g.dense_fp8_tflops * 1e12)) / params.flop_efficiency
    t_ar, t_send = collective_s(cfg, dep, terms, nics_per_node=nics_per_node)
    return terms.layer_passes * params.layer_overhead_us * 1e-6 + max(t_mem, t_flop) + t_ar + t_send


@dataclass(frozen=True)
class Timing:
    """The model's answer for one deployment × workload × spec (per replica unless named).

    ``step_s``: one decode (or verify + draft) step over the batch; ``prefill_s``: one
    request's prefill alone (TTFT at concurrency 1 less the step); ``prefill_per_request_s``:
    a request's share of packed prefill chunks; ``cycle_s``: every slot turned over once."""

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

    @property
    def prefill_tok_s(self) -> float:
        """Prompt tokens per second of one replica prefilling a single request alone."""
        return math.nan if self.prefill_s <= 0 else self.tokens_in / self.prefill_s

    tokens_in: int = 0


def decode_step_seconds(cfg: ModelConfig, dep: Deployment, requests: float, context_tokens: float,
                        params: FamilyParams, spec: Spec = NO_SPEC, setting: Setting | None = None,
                        kv_dtype: str = "bf16", nics_per_node: int | None = None) -> float:
    """One decode step (``spec`` off) or one verify step plus one draft pass (``spec`` on)
    over ``requests`` requests of one replica, seconds; pipeline stages in sequence."""
    setting = setting or setting_of(dep)
    micro = microbatches(requests, dep.pp)
    req = requests / micro
    rows = block_tokens() + 1 if spec.on else 1
    t = pass_seconds(decode_terms(cfg, dep, req, context_tokens, rows_per_request=rows, setting=setting,
                                  kv_dtype=kv_dtype), cfg, dep, params, nics_per_node)
    if spec.on:
        t += pass_seconds(draft_terms(cfg, dep, req, block_tokens(), context_tokens, data.load("dspark_draft")),
                          cfg, dep, params, nics_per_node)
    # a request needs pp stage-steps per token; `micro` microbatches share that cycle
    return max(float(dep.pp), micro) * t


def prefill_seconds(cfg: ModelConfig, dep: Deployment, prompts: int, prompt_tokens: int,
                    params: FamilyParams, setting: Setting | None = None, nics_per_node: int | None = None) -> float:
    """Seconds to prefill ``prompts`` prompts of ``prompt_tokens`` tokens on one replica,
    packed into sglang's default chunks (:func:`chunk_tokens`); pipeline stages in sequence."""
    setting = setting or setting_of(dep)
    t = prefill_terms(cfg, dep, prompts, prompt_tokens, chunk_tokens(dep.gpu_spec), setting=setting)
    return dep.pp * pass_seconds(t, cfg, dep, params, nics_per_node)


def benchmark(cfg: ModelConfig, dep: Deployment, work: Workload, params: FamilyParams, spec: Spec = NO_SPEC,
              variants=(), kv_dtype: str = "bf16", nics_per_node: int | None = None) -> Timing:
    """The cohort benchmark of the module docstring → :class:`Timing`. ``work.concurrency``
    is requests in flight over the whole deployment, split evenly over its replicas."""
    setting = setting_of(dep, variants)
    reps = dep.replicas
    c = max(1.0, work.concurrency / reps)
    step = decode_step_seconds(cfg, dep, c, work.mean_context, params, spec, setting, kv_dtype, nics_per_node)
    alone = prefill_seconds(cfg, dep, 1, work.input_len, params, setting, nics_per_node)
    cohort = max(1, round(c))
    burst = prefill_seconds(cfg, dep, cohort, work.input_len, params, setting, nics_per_node)
    n = max(1, -(-cohort * work.input_len // chunk_tokens(dep.gpu_spec)))
    ttft = burst * (n + 1) / (2 * n)
    cycle = burst + work.output_len / spec.accept_len * step
    return Timing(concurrency=work.concurrency, replicas=reps, step_s=step, prefill_s=alone,
                  prefill_per_request_s=burst / cohort, cycle_s=cycle,
                  output_tok_s=reps * c * work.output_len / cycle,
                  tpot_s=(cycle - ttft) / max(1, work.output_len - 1), ttft_s=ttft,
                  accept_len=spec.accept_len, tokens_in=work.input_len)
