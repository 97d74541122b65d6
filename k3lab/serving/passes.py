"""One forward pass's cost, the fitted parameters that price it, and the shapes of a question
(:class:`BenchmarkPlan`) and of its answer (:class:`Timing`).

:class:`PassCost` holds a pass (or a sum of passes: a prefill's chunks, pipeline stages) as seconds
at ideal efficiency per GPU of the heaviest stage, split by what each parameter of
:class:`FamilyParams` divides or multiplies (weights streamed, GEMM FLOPs, decode attention, the
extend kernel's attention, fixed costs per layer, per token, per verify row, per collective across
nodes); :meth:`PassCost.seconds` prices it under a family's parameters. Built from finding 1's
physical terms (:mod:`k3lab.model.step`) by :func:`pass_cost`. Units: seconds, µs, ms as named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data
from ..model.step import StepTerms
from ..specs import Deployment, ModelConfig

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
    outside their validated domain); ``token_us``: fixed µs per token per layer of a decode or
    verify pass (≥ 0: what scales with the tokens of a small batch beyond its bytes and FLOPs — MoE
    routing and dispatch, per-expert tile padding, activation quantisation, KDA's recurrent update);
    ``verify_row_us``: fixed µs per extra verify row (the draft block's rows beyond the first) per
    layer (≥ 0: DSpark's verify path per row — the KDA state kept per row for the rollback, the
    accept and ragged-verify kernels; families without DSpark runs: 0); ``pipeline_us``: fixed µs
    per hand-off between pipeline stages on different nodes (≥ 0: sglang's pipeline loop is not
    overlapped — each stage receives the next microbatch's requests as pickled objects over the
    CPU process group before its proxy tensors, with a synchronous receive,
    ``SchedulerPPMixin.event_loop_pp`` and ``_pp_recv_pyobj_from_prev_stage`` →
    ``point_to_point_pyobj`` over ``world_group.cpu_group``, ``managers/scheduler_pp_mixin.py``,
    sglang 0.5.16 — a host round trip over the scale-out network that a per-collective latency
    does not describe; families without a pipeline across nodes: 0)."""

    family: str
    hbm_efficiency: float
    flop_efficiency: float
    layer_overhead_us: float
    kv_efficiency: float = 1.0
    prefill_attention_efficiency: float = 1.0
    fallback_attention_efficiency: float = 1.0
    request_overhead_ms: float = 0.0
    scale_out_us: float = 0.0
    token_us: float = 0.0
    verify_row_us: float = 0.0
    pipeline_us: float = 0.0

    NAMES = ("hbm_efficiency", "flop_efficiency", "layer_overhead_us", "kv_efficiency",
             "prefill_attention_efficiency", "fallback_attention_efficiency", "request_overhead_ms",
             "scale_out_us", "token_us", "verify_row_us", "pipeline_us")

    def as_tuple(self) -> tuple[float, ...]:
        return tuple(getattr(self, k) for k in self.NAMES)


#: the roofline as a FamilyParams: ideal kernels, no fixed cost
IDEAL = FamilyParams("ideal", 1.0, 1.0, 0.0)


@dataclass(frozen=True)
class PassCost:
    """One forward pass (or a sum of passes) as seconds at ideal efficiency, per GPU of the
    heaviest stage: what each parameter divides or multiplies. ``gemm_mem_s``: weight bytes at
    the HBM peak; ``gemm_flop_s``: GEMM FLOPs at the BF16/FP8 peaks; ``attn_mem_s``: KV cache +
    KDA state bytes at the HBM peak; ``attn_flop_s``: decode-kernel attention FLOPs at the BF16
    peak; ``extend_flop_s``: attention FLOPs run in the prefill (extend) kernel — a prefill chunk's,
    a verify step's — at the BF16 peak; ``layer_passes``: layer executions paying the fixed cost;
    ``comm_s``: collectives (no parameter); ``scale_out_events``: collectives that cross nodes
    (each pays ``scale_out_us``); ``token_layers``: tokens × layers of a decode or verify pass (each
    pays ``token_us``); ``verify_row_layers``: extra verify rows × layers (each pays
    ``verify_row_us``); ``pp_handoffs``: stage-to-stage hand-offs across nodes (each pays
    ``pipeline_us``)."""

    gemm_mem_s: float
    gemm_flop_s: float
    attn_mem_s: float
    attn_flop_s: float
    layer_passes: float
    comm_s: float
    extend_flop_s: float = 0.0
    scale_out_events: float = 0.0
    token_layers: float = 0.0
    verify_row_layers: float = 0.0
    pp_handoffs: float = 0.0

    def seconds(self, p: FamilyParams, fallback: bool = False) -> float:
        gemm = max(self.gemm_mem_s / p.hbm_efficiency, self.gemm_flop_s / p.flop_efficiency)
        attn = max(self.attn_mem_s / p.kv_efficiency, self.attn_flop_s / p.flop_efficiency)
        if self.extend_flop_s:
            attn += self.extend_flop_s / (p.fallback_attention_efficiency if fallback else p.prefill_attention_efficiency)
        return ((self.layer_passes * p.layer_overhead_us + self.scale_out_events * p.scale_out_us
                 + self.token_layers * p.token_us + self.verify_row_layers * p.verify_row_us
                 + self.pp_handoffs * p.pipeline_us) * 1e-6
                + gemm + attn + self.comm_s)

    def plus(self, other: "PassCost", k: float = 1.0) -> "PassCost":
        """This pass with ``k`` × ``other``'s tokens riding in it (a mixed batch): the weights are
        read once (the larger read), FLOPs, attention and collectives add, one set of fixed costs."""
        return PassCost(max(self.gemm_mem_s, other.gemm_mem_s), self.gemm_flop_s + k * other.gemm_flop_s,
                        self.attn_mem_s + k * other.attn_mem_s, self.attn_flop_s + k * other.attn_flop_s,
                        max(self.layer_passes, other.layer_passes), self.comm_s + k * other.comm_s,
                        self.extend_flop_s + k * other.extend_flop_s, max(self.scale_out_events, other.scale_out_events),
                        self.token_layers + k * other.token_layers, self.verify_row_layers + k * other.verify_row_layers,
                        max(self.pp_handoffs, other.pp_handoffs))


def pass_cost(terms: StepTerms, cfg: ModelConfig, dep: Deployment, nics_per_node: int | None = None,
              prefill: bool = False) -> PassCost:
    """:class:`PassCost` of ``terms`` on ``dep`` (collectives by :func:`k3lab.roofline.collective_s`);
    ``prefill``: its attention runs in the prefill (extend) kernel — a prefill chunk or a verify step."""
    from ..roofline import collective_s

    g = dep.gpu_spec
    bw, bf16, fp8 = g.hbm_bw_tb_s * 1e12, g.dense_bf16_tflops * 1e12, g.dense_fp8_tflops * 1e12
    t_ar, t_send = collective_s(cfg, dep, terms, nics_per_node=nics_per_node)
    return PassCost(gemm_mem_s=(terms.bytes_weights + terms.bytes_experts) / bw,
                    gemm_flop_s=(terms.flops_dense - terms.flops_attention) / bf16 + terms.flops_experts / fp8,
                    attn_mem_s=(terms.bytes_kv + terms.bytes_state) / bw,
                    attn_flop_s=0.0 if prefill else terms.flops_attention / bf16,
                    extend_flop_s=terms.flops_attention / bf16 if prefill else 0.0,
                    layer_passes=float(terms.layer_passes), comm_s=t_ar + t_send,
                    scale_out_events=scale_out_events(terms, dep),
                    token_layers=0.0 if terms.kind in ("prefill", "draft") else terms.tokens * terms.layers,
                    verify_row_layers=(terms.tokens - terms.requests) * terms.layers if terms.kind == "verify" else 0.0,
                    pp_handoffs=pp_handoffs(terms, dep))


def spans_nodes(dep: Deployment) -> bool:
    """One replica's TP group or pipeline crosses the scale-up domain (collectives over the network)."""
    return dep.tp_nodes > 1 or (dep.pp > 1 and dep.tp * dep.pp > dep.gpus_per_node)


def scale_out_events(terms: StepTerms, dep: Deployment) -> float:
    """Collectives of a pass that cross nodes: every all-reduce of every layer execution when the
    TP group spans nodes (``data/serving_model.yaml`` ``all_reduces_per_layer``). A pipeline's
    stage sends across nodes are hand-offs of their own (:func:`pp_handoffs`)."""
    n = 0.0
    if dep.tp_nodes > 1:
        n += data.load("serving_model").all_reduces_per_layer.value * terms.layer_passes
    return float(n)


def pp_handoffs(terms: StepTerms, dep: Deployment) -> float:
    """Stage-to-stage hand-offs of a pass that cross nodes: its pipeline sends when the pipeline
    spans nodes (each pays ``pipeline_us``), else 0."""
    return float(terms.pp_sends) if dep.pp > 1 and spans_nodes(dep) else 0.0


def pass_seconds(terms: StepTerms, cfg: ModelConfig, dep: Deployment, params: FamilyParams,
                 nics_per_node: int | None = None) -> float:
    """Seconds of the forward pass(es) ``terms`` describe on ``dep`` under ``params``."""
    return pass_cost(terms, cfg, dep, nics_per_node, prefill=terms.kind == "prefill").seconds(params)




@dataclass(frozen=True)
class BenchmarkPlan:
    """Everything of a benchmark question that does not depend on the fitted parameters (per
    replica): the regime, the requests running (``running``) and queued (``queued``), the
    decode/verify step and draft pass at each batch size of ``batches`` (the steady regimes
    interpolate between them), each prefill chunk of the cohort, which chunk finishes each
    request, one prompt's chunks prefilled alone, and the counts that turn them into a
    :class:`Timing` (:mod:`k3lab.serving.regimes`)."""

    workload: object            # the Workload (mean lengths)
    replicas: int
    busy_replicas: int
    cohort: float               # clients per busy replica
    running: float              # of them running at once (the admission), per busy replica
    regime: str
    batches: tuple              # batch sizes (requests) the steps are costed at, ascending; the last = running
    steps: tuple                # PassCost of the decode / verify step at each batch size
    drafts: tuple               # PassCost of DSpark's draft pass at each batch size (empty without)
    step_repeats: float         # stage-steps a decode step costs (pipeline stages / microbatches)
    chunks: tuple               # PassCost per prefill chunk of the cohort (pipeline stages included)
    last_chunk: tuple           # per request of the cohort: the chunk holding its last token
    alone: tuple                # PassCost per chunk of one prompt prefilled alone
    budget: int                 # tokens a forward pass takes (the engine's chunk / token budget)
    accept_len: float
    fallback: bool
    together: bool = True       # the harness starts equal requests together (a mixed engine's arrivals bunch)

    @property
    def queued(self) -> float:
        return max(0.0, self.cohort - self.running)


@dataclass(frozen=True)
class Timing:
    """The model's answer for one deployment × workload × spec (per replica unless named).

    ``step_s``: one decode (or verify + draft) step over the running batch (a median ITL);
    ``prefill_s``: one request's prefill alone (TTFT at concurrency 1 less the request overhead);
    ``prefill_per_request_s``: a request's share of the prefill work; ``cycle_s``: a request's
    life from its arrival to its last token (the cohort's cycle); ``regime``: how it was timed."""

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
    regime: str = "cohort"
    running: float = 0.0

    @property
    def prefill_tok_s(self) -> float:
        """Prompt tokens per second of one replica prefilling a single request alone."""
        return math.nan if self.prefill_s <= 0 else self.tokens_in / self.prefill_s
