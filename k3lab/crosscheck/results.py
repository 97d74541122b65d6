"""What the aiconfigurator estimates return: one GPU's memory picture, one throughput point.

Plain frozen dataclasses with units in the field names; the timing (``elapsed_s``) is kept
out of comparisons and of :meth:`AicMemory.as_dict` / :meth:`AicThroughput.as_row`, so the
numbers are deterministic.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

#: aiconfigurator op-name stem (``context_<stem>``) → k3lab.memory.COMPONENTS name, read off
#: the ops aiconfigurator's Kimi K3 model builds (``weights_by_op`` of a memory estimate)
AIC_OP_COMPONENT = (
    ("moe", "routed_experts"), ("kda_", "kda_attention"), ("latent_", "latent_projections"),
    ("shared_", "shared_experts"), ("router", "router"), ("mla_", "mla_attention"),
    ("embedding", "embed_tokens"), ("logits", "lm_head"), ("dense_", "dense_mlp"),
)

@dataclass(frozen=True)
class AicMemory:
    """aiconfigurator's memory picture of one GPU (bytes unless named otherwise).

    KV budget (sglang, ``mem_fraction_static`` of TOTAL memory, aiconfigurator
    ``kv_cache_budget_bytes``): ``capacity × mem_fraction − (weights + activations + nccl
    + other)``. The budget is one elastic pool for the MLA latent cache (per token, every
    one of the 24 MLA layers on every GPU, PP included) and the KDA recurrent state
    (per request, ``kda_state_slots_per_request`` copies). ``weights_bytes_per_gpu`` is
    the model's total weights on a TP rank divided evenly by ``pp``. ``max_kv_tokens``:
    MLA tokens the budget holds beside one request's KDA state;
    ``max_context_requests``: concurrent requests of ``context_tokens`` each.
    """

    gpu: str
    system: str
    num_gpus: int
    tp: int
    pp: int
    capacity_bytes_per_gpu: int
    mem_fraction: float
    mem_fraction_source: str
    max_num_tokens: int
    weights_bytes_per_gpu: int
    activations_bytes_per_gpu: int
    nccl_bytes_per_gpu: int
    other_bytes_per_gpu: int
    non_kv_bytes_per_gpu: int
    kv_budget_bytes_per_gpu: int
    kv_bytes_per_token: int
    kda_state_bytes_per_request: int
    kda_state_slots_per_request: int
    max_kv_tokens: int
    context_tokens: int
    max_context_requests: int
    weights_fit: bool
    weights_by_op: dict[str, int] = field(default_factory=dict)   # op name → weight bytes per GPU
    quant: dict[str, str] = field(default_factory=dict)           # op kind → quant mode name
    provenance: dict = field(default_factory=dict)
    elapsed_s: float = field(default=0.0, compare=False)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("elapsed_s")
        return d

    def source_columns(self) -> dict:
        """Where the numbers come from, as columns: tool version, database, MoE quantisation."""
        db = self.provenance["database"]
        return {"tool_version": self.provenance["version"],
                "database": f"{db['system']}/{db['backend']}/{db['backend_version']}",
                "moe_quant": self.quant.get("moe", "")}

    def weights_by_component(self) -> dict[str, int]:
        """``weights_by_op`` summed into k3lab's component names (bytes per GPU).

        An op no stem of :data:`AIC_OP_COMPONENT` claims is kept under its own name, so a
        new aiconfigurator op shows up instead of vanishing."""
        out: dict[str, int] = {}
        for op, b in self.weights_by_op.items():
            stem = op.removeprefix("context_")
            comp = next((c for pre, c in AIC_OP_COMPONENT if stem.startswith(pre)), op)
            out[comp] = out.get(comp, 0) + b
        return out


@dataclass(frozen=True)
class AicThroughput:
    """One aiconfigurator estimate of a deployment at one client concurrency.

    ``tok_s``: output tokens/s of the whole deployment (all ``num_gpus``);
    ``tok_s_per_gpu`` = ``tok_s / num_gpus``. ``ttft_ms``: time to first token;
    ``tpot_ms``: time per output token after the first (divided by ``accept_len`` with
    speculative decoding); ``request_latency_ms`` = ``ttft + (osl − 1) × tpot``.
    ``memory_gib_per_gpu``: aiconfigurator's footprint at this batch (GiB); ``oom``: it
    exceeds the GPU; ``kv_oom``: the KV exceeds sglang's budget (both aiconfigurator's own
    flags; the static path sizes activations for all ``micro_batch × isl`` prompt tokens at
    once, so it flags large batches that sglang's chunked prefill would run).
    ``kv_fits``: ``kv_need_bytes_per_gpu`` (``micro_batch`` requests of ``isl + osl``
    tokens: MLA cache + KDA state, aiconfigurator's per-sequence bytes) ≤
    ``kv_budget_bytes_per_gpu`` (:func:`memory_estimate` with 16,384-token activations,
    sglang's chunked prefill, and the same ``mem_fraction``). ``sources``: how many
    ops were priced from measured tables ("silicon"), empirical factors or SOL, per phase.
    """

    gpu: str
    system: str
    num_gpus: int
    tp: int
    pp: int
    concurrency: int
    isl: int
    osl: int
    tok_s: float
    tok_s_per_gpu: float
    ttft_ms: float
    tpot_ms: float
    request_latency_ms: float
    micro_batch: int
    memory_gib_per_gpu: float
    oom: bool
    kv_oom: bool
    kv_need_bytes_per_gpu: int
    kv_budget_bytes_per_gpu: int
    kv_fits: bool
    mode: str
    scheduler: str
    nextn: int
    accept_len: float | None
    sources: dict[str, dict[str, int]] = field(default_factory=dict)   # phase → source → ops
    provenance: dict = field(default_factory=dict)
    elapsed_s: float = field(default=0.0, compare=False)

    def as_row(self) -> dict:
        """A flat, deterministic row (no timing) for :func:`sweep`."""
        db = self.provenance["database"]
        return {
            "gpu": self.gpu, "system": self.system, "num_gpus": self.num_gpus, "tp": self.tp, "pp": self.pp,
            "concurrency": self.concurrency, "isl": self.isl, "osl": self.osl,
            "tok_s": self.tok_s, "tok_s_per_gpu": self.tok_s_per_gpu,
            "ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "request_latency_ms": self.request_latency_ms,
            "micro_batch": self.micro_batch, "memory_gib_per_gpu": self.memory_gib_per_gpu,
            "oom": self.oom, "kv_oom": self.kv_oom, "kv_need_bytes_per_gpu": self.kv_need_bytes_per_gpu,
            "kv_budget_bytes_per_gpu": self.kv_budget_bytes_per_gpu, "kv_fits": self.kv_fits,
            "mode": self.mode, "scheduler": self.scheduler,
            "nextn": self.nextn, "accept_len": self.accept_len,
            "scale_out_gbit_s_per_gpu": self.provenance.get("scale_out_gbit_s_per_gpu"),
            "moe_quant": self.provenance["quant"]["moe"],
            "tool_version": self.provenance["version"],
            "database": f"{db['system']}/{db['backend']}/{db['backend_version']}",
            "sources": ";".join(f"{ph}:{','.join(f'{k}={v}' for k, v in sorted(c.items()))}"
                                for ph, c in sorted(self.sources.items())),
        }
