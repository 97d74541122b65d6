"""Finding 4: a decode roofline and communication model → an upper bound on tok/s.

For one decode step of a deployment at concurrency ``c`` (``c`` requests, each adding
one token, or ``accept_len`` tokens with speculative decoding), per GPU of the slowest
pipeline stage:

- **bytes read** (HBM): the stage's non-expert weights per rank as stored (BF16;
  ``k3lab.model.sharding.shard_table``, without the embedding table, of which a step reads only
  ``c`` rows), the routed experts touched (expected distinct experts of
  ``tokens × top_k`` picks out of ``num_experts`` per MoE layer, each expert split over
  the ``tp`` ranks; ``k3lab.model.inventory.routed_expert_bytes``), the MLA latent KV of every
  request's context (``k3lab.model.capacity.kv_bytes_per_token``, divided by ``dcp`` under
  decode context parallelism) and the KDA recurrent state, read and written once per
  request (``k3lab.model.capacity.kda_state_bytes_per_request``);
- **FLOPs**: 2 × active parameters per token / (tp·pp) per token, plus absorbed-MLA
  attention over the context, at the GPU's fastest dense peak;
- **communication**: two all-reduces per layer of the stage (after attention and
  after the MLP) of a ``tokens × hidden`` BF16 tensor, ring model with latency +
  bandwidth: ``2(p−1)`` steps, ``2(nodes−1)`` of them over the network (NCCL's cost
  model, ``data/roofline.yaml``), bus bandwidth = scale-up link per GPU, or the
  node's scale-out bandwidth when the ring leaves the node; plus, with PP, one
  activation send per stage over the network.

Step time = max(memory, compute) + communication (TP all-reduces sit on the critical
path of decode; ``overlap=True`` gives the looser max of the three). Throughput bound =
tokens emitted per step / step time, for the whole deployment (tok/s per deployment).

Every choice the facts leave open is taken in the favourable direction (fp8 KV, bf16
KDA state, uniform routing, the fastest dense peak, one NIC per GPU, NCCL's lowest
latency protocol at full link bandwidth, no kernel launch or scheduler overhead), so the
result bounds a real run from above. Units: bytes, FLOP, seconds, tok/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import data
from .model.sharding import Setting
from .model.step import decode_terms, expected_distinct_experts, microbatches, rank_read_bytes  # noqa: F401
from .specs import GB, Deployment, ModelConfig, load_model, scale_out_link
from .throughput import article_table, article_workload, measured_points


# --------------------------------------------------------------------------- deployments


def deployments() -> dict[str, Deployment]:
    """The article's table rows (``data/article_table.yaml``) plus ``extra_deployments`` of
    ``data/serving_model.yaml`` (B200 TP8×PP2), as :class:`~k3lab.specs.Deployment`."""
    out = {k: r.deployment for k, r in article_table().items()}
    for key, d in data.load("serving_model").extra_deployments.items():
        out[key] = Deployment(d.gpu, d.num_gpus, d.tp, d.pp, dcp=d.dcp, gpus_per_node=d.gpus_per_node,
                              id=key, label=d.label)
    return out


def ring_all_reduce_s(nbytes: float, ranks: int, ranks_per_node: int, intra_bytes_s: float,
                      intra_latency_s: float, inter_bytes_s_per_node: float = 0.0,
                      inter_latency_s: float = 0.0) -> float:
    """Ring all-reduce time of ``nbytes`` over ``ranks`` ranks (NCCL's ring cost model).

    ``2(p−1)`` steps each move ``nbytes/p`` per link; ``2(nodes−1)`` of the steps cross
    the network (latency ``inter_latency_s``), the others stay in the node
    (``intra_latency_s``). Bus bandwidth: the scale-up link per GPU in one node; across
    nodes, the smaller of that and the node's total scale-out bandwidth (a multi-channel
    ring uses every NIC of the node at once). Returns seconds.
    """
    if ranks <= 0 or ranks_per_node <= 0:
        raise ValueError(f"ranks and ranks_per_node must be positive, got {ranks}, {ranks_per_node}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    if ranks == 1:
        return 0.0
    nodes = -(-ranks // ranks_per_node)
    if nodes > 1 and inter_bytes_s_per_node <= 0:
        raise ValueError("a ring across nodes needs a positive scale-out bandwidth")
    if intra_bytes_s <= 0:
        raise ValueError("intra-node bandwidth must be positive")
    steps = 2 * (ranks - 1)
    inter_steps = 2 * (nodes - 1)
    bus = intra_bytes_s if nodes == 1 else min(intra_bytes_s, inter_bytes_s_per_node)
    return ((steps - inter_steps) * intra_latency_s + inter_steps * inter_latency_s
            + steps / ranks * nbytes / bus)


def collective_s(cfg: ModelConfig, dep: Deployment, terms, nics_per_node: int | None = None) -> tuple[float, float]:
    """(all-reduce seconds, pipeline-send seconds) of a step's collectives, on the critical path.

    ``terms``: :class:`k3lab.model.step.StepTerms`. Every layer execution all-reduces the
    hidden states of ``terms.comm_tokens`` tokens ``all_reduces_per_layer`` times
    (``data/serving_model.yaml``: after attention and after the MLP, ``activation_dtype_bytes``
    each), ring model over the TP group (:func:`ring_all_reduce_s`: NCCL's per-step latencies,
    the scale-up link per GPU in a node, ``nics_per_node`` × the article's RoCE link across
    nodes); with PP each send pays the network latency and the message over the node's NICs."""
    inp = data.load("serving_model")
    gpu = dep.gpu_spec
    link = scale_out_link()
    nics = inp.scale_out_nics_per_node.value if nics_per_node is None else nics_per_node
    lat_up = inp.link_latency_us_scale_up.value * 1e-6
    lat_out = inp.link_latency_us_scale_out.value * 1e-6
    msg = terms.comm_tokens * cfg.hidden_size * inp.activation_dtype_bytes.value
    one = ring_all_reduce_s(msg, dep.tp, min(dep.tp, dep.gpus_per_node), gpu.scale_up_gb_s_per_direction * GB,
                            lat_up, nics * link["gbyte_s"] * GB, lat_out)
    t_ar = inp.all_reduces_per_layer.value * terms.layer_passes * one
    t_send = terms.pp_sends * (lat_out + msg / (nics * link["gbyte_s"] * GB)) if dep.pp > 1 else 0.0
    return t_ar, t_send


@dataclass(frozen=True)
class StepCost:
    """One decode step of one deployment at concurrency ``concurrency`` (per GPU of the
    slowest stage). Bytes in bytes, time in seconds, throughput in tok/s per deployment."""

    deployment: str
    concurrency: float
    tokens_per_request_step: float
    accept_len: float
    context_tokens: float
    experts_touched_per_layer: float
    bytes_non_expert: float
    bytes_experts: float
    bytes_kv: float
    bytes_state: float
    flops: float
    t_memory_s: float
    t_compute_s: float
    t_allreduce_s: float
    t_pp_send_s: float
    t_step_s: float
    tok_s_bound: float

    @property
    def bytes_total(self) -> float:
        return self.bytes_non_expert + self.bytes_experts + self.bytes_kv + self.bytes_state

    @property
    def t_comm_s(self) -> float:
        return self.t_allreduce_s + self.t_pp_send_s


@data.cached  # shards from data/sglang_sharding.yaml
def non_expert_read_bytes(cfg: ModelConfig, tp: int, pp: int = 1) -> float:
    """Non-expert weight bytes one rank of the heaviest stage reads per decode step:
    its shard of every checkpoint tensor except the routed experts and the embedding
    table (a step reads ``c`` of its rows), as sglang holds it on an NVIDIA GPU (the
    favourable side: no ROCm expert padding). :func:`k3lab.model.step.rank_read_bytes`."""
    return rank_read_bytes(cfg, tp, pp, Setting())[0]


def decode_step(dep: Deployment, concurrency: float, context_tokens: float | None = None,
                tokens_per_request_step: float = 1.0, accept_len: float = 1.0,
                routing: str | None = None, overlap: bool = False,
                nics_per_node: int | None = None, cfg: ModelConfig | None = None,
                kv_dtype: str = "fp8", state_dtype: str = "bf16") -> StepCost:
    """Cost of one decode step at ``concurrency`` requests → :class:`StepCost`.

    ``context_tokens``: mean context per request during decode (default: the article's
    workload, input + output/2 = 1024 + 200). ``tokens_per_request_step``: tokens the
    target processes per request per step (1, or the verify rows when verifying: the draft
    block + 1); ``accept_len``: tokens each request emits per step (≤ tokens_per_request_step:
    at most every draft plus the bonus token of the last row). ``kv_dtype`` / ``state_dtype``:
    fp8 KV and bf16 KDA state by default, the favourable (fewest bytes) reading.
    """
    cfg = load_model() if cfg is None else cfg
    inp = data.load("serving_model")
    if isinstance(concurrency, bool) or not isinstance(concurrency, (int, float)) or not concurrency > 0:
        raise ValueError(f"concurrency must be positive, got {concurrency!r}")
    if not tokens_per_request_step >= 1:
        raise ValueError(f"tokens_per_request_step must be >= 1, got {tokens_per_request_step}")
    if not 0 < accept_len <= tokens_per_request_step:
        raise ValueError(f"accept_len must be in (0, tokens_per_request_step], got {accept_len}")
    if context_tokens is None:
        w = article_workload()
        context_tokens = w["input_len_tokens"] + w["output_len_tokens"] / 2
    if not context_tokens >= 0:
        raise ValueError(f"context_tokens must be >= 0, got {context_tokens}")
    routing = routing or inp.routing
    gpu = dep.gpu_spec
    nics = inp.scale_out_nics_per_node.value if nics_per_node is None else data.check_count("nics_per_node", nics_per_node)

    micro = microbatches(concurrency, dep.pp)
    req = concurrency / micro  # requests per microbatch
    # the physical terms of the step (k3lab.model.step), read the favourable way: experts at
    # their checkpoint bytes, every FLOP at the fastest dense peak
    terms = decode_terms(cfg, dep, req, context_tokens, rows_per_request=tokens_per_request_step,
                         kv_dtype=kv_dtype, state_dtype=state_dtype, routing=routing, experts_as="checkpoint")
    tokens, experts = terms.tokens, terms.experts_touched_per_layer
    b_ne, b_exp, b_kv, b_state = terms.bytes_weights, terms.bytes_experts, terms.bytes_kv, terms.bytes_state
    t_mem = terms.bytes_total / (gpu.hbm_bw_tb_s * 1e12)
    flops = terms.flops_total
    t_flop = flops / gpu.peak_dense_flops

    t_ar, t_send = collective_s(cfg, dep, terms, nics_per_node=nics)
    t_comm = t_ar + t_send
    t_step = max(t_mem, t_flop, t_comm) if overlap else max(t_mem, t_flop) + t_comm
    # a request needs pp stage-steps per token; `micro` microbatches share that cycle
    cycle = max(float(dep.pp), micro) * t_step
    tok_s = concurrency * accept_len / cycle
    return StepCost(deployment=dep.id, concurrency=float(concurrency),
                    tokens_per_request_step=float(tokens_per_request_step),
                    accept_len=float(accept_len), context_tokens=float(context_tokens),
                    experts_touched_per_layer=experts, bytes_non_expert=b_ne, bytes_experts=b_exp,
                    bytes_kv=b_kv, bytes_state=b_state, flops=flops, t_memory_s=t_mem,
                    t_compute_s=t_flop, t_allreduce_s=t_ar, t_pp_send_s=t_send,
                    t_step_s=t_step, tok_s_bound=tok_s)


def spec_params() -> dict:
    """Speculative-decoding bound parameters: the target verifies the DSpark draft block + 1
    rows per request (sglang 0.5.23 ``speculative_num_draft_tokens`` = block + 1, as
    :func:`k3lab.memory.fit` sizes it) and, for a bound, every row is accepted (acceptance
    length = block + 1, the most a verify step can emit)."""
    rows = float(data.load("dspark_draft").block_size_tokens + 1)
    return {"tokens_per_request_step": rows, "accept_len": rows}


def bound(dep: Deployment, concurrency: float, **kw) -> float:
    """Upper bound on tok/s (deployment) at ``concurrency``, whether or not the run used
    speculative decoding: the larger of the plain-decode bound and the bound with
    DSpark-style verification at the highest reported acceptance length."""
    plain = decode_step(dep, concurrency, **kw).tok_s_bound
    spec = decode_step(dep, concurrency, **spec_params(), **kw).tok_s_bound
    return max(plain, spec)


def curve(dep: Deployment, concurrencies, **kw):
    """Bound vs concurrency → DataFrame with one row per concurrency (plain decode and
    with speculative verification), times in ms, bytes in GB (1e9)."""
    import pandas as pd

    rows = []
    sp = spec_params()
    for c in concurrencies:
        p = decode_step(dep, c, **kw)
        s = decode_step(dep, c, **sp, **kw)
        rows.append({"deployment": dep.id, "label": dep.label, "concurrency": float(c),
                     "experts_touched_per_layer": p.experts_touched_per_layer,
                     "gb_non_expert": p.bytes_non_expert / GB, "gb_experts": p.bytes_experts / GB,
                     "gb_kv": p.bytes_kv / GB, "gb_state": p.bytes_state / GB,
                     "t_memory_ms": p.t_memory_s * 1e3, "t_compute_ms": p.t_compute_s * 1e3,
                     "t_comm_ms": p.t_comm_s * 1e3, "t_step_ms": p.t_step_s * 1e3,
                     "tok_s_bound_plain": p.tok_s_bound, "tok_s_bound_spec": s.tok_s_bound,
                     "tok_s_bound": max(p.tok_s_bound, s.tok_s_bound)})
    return pd.DataFrame(rows)


def bounds_for_measured(default_concurrency: int = 64, **kw):
    """Each measured point of ``data/article_table.yaml`` next to its roofline bound.

    A point whose concurrency the article does not state is bounded at
    ``default_concurrency`` (64, the highest concurrency point the article mentions).
    Columns: point, config, concurrency, concurrency_assumed, tok_s, tok_s_bound,
    measured_over_bound.
    """
    import pandas as pd

    deps = deployments()
    rows = []
    for r in measured_points().to_dict("records"):
        c = r["concurrency"]
        assumed = c is pd.NA or c is None or (isinstance(c, float) and math.isnan(c))
        conc = float(default_concurrency) if assumed else float(c)
        b = bound(deps[r["config"]], conc, **kw)
        rows.append({"point": r["point"], "config": r["config"], "label": r["label"],
                     "concurrency": conc, "concurrency_assumed": bool(assumed),
                     "tok_s": r["tok_s"], "tok_s_bound": b, "measured_over_bound": r["tok_s"] / b})
    return pd.DataFrame(rows)


def comm_share(dep: Deployment, concurrency: float, **kw) -> dict:
    """How much of a deployment's bound its communication costs: the bound as modelled,
    with communication removed, and the fraction of the step spent communicating."""
    with_comm = decode_step(dep, concurrency, **kw)
    no_comm_t = max(with_comm.t_memory_s, with_comm.t_compute_s)
    cycle = max(float(dep.pp), min(float(concurrency), float(dep.pp)))
    return {"tok_s_bound": with_comm.tok_s_bound,
            "tok_s_bound_no_comm": concurrency * with_comm.accept_len / (cycle * no_comm_t),
            "comm_fraction_of_step": with_comm.t_comm_s / with_comm.t_step_s,
            "t_comm_ms": with_comm.t_comm_s * 1e3, "t_step_ms": with_comm.t_step_s * 1e3}
