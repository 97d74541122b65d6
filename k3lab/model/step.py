"""Bytes and experts one forward step touches: what decode and verify steps read.

One step over ``tokens`` tokens (a batch, or a batch × verify rows) reads every non-expert
weight once and the routed experts the tokens pick. With uniform, independent routing
(each token's top-k a uniform k-subset of N) the expected number of distinct experts per
MoE layer is ``N · (1 − (1 − k/N)^tokens)``; skewed routing touches fewer, so this is the
upper end. All sizes come from the one inventory (:mod:`k3lab.model.inventory`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..specs import ModelConfig
from .inventory import checkpoint_bytes, count_params, routed_expert_bytes
from .sharding import heaviest_stage, pp_stages, shard_table

ROUTING_MODELS = ("uniform", "min")


def expected_distinct_experts(tokens: float, num_experts: int, top_k: int, routing: str = "uniform") -> float:
    """Expected distinct experts touched by ``tokens`` tokens, each picking ``top_k`` of
    ``num_experts`` (one MoE layer). ``uniform``: ``N(1 − (1 − k/N)^tokens)``; ``min``: the
    floor, every token picking the same k. ``tokens = 0`` touches none."""
    if routing not in ROUTING_MODELS:
        raise ValueError(f"routing must be one of {ROUTING_MODELS}, got {routing!r}")
    if isinstance(tokens, bool) or not tokens >= 0:
        raise ValueError(f"tokens must be >= 0, got {tokens!r}")
    if not 0 < top_k <= num_experts:
        raise ValueError(f"need 0 < top_k <= num_experts, got top_k={top_k}, num_experts={num_experts}")
    if tokens == 0:
        return 0.0
    if routing == "min":
        return float(top_k)
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** tokens)


@dataclass(frozen=True)
class StepBytes:
    """Weight bytes one forward step reads, whole model (all ranks together), as stored.

    ``non_expert_bytes``: every checkpoint tensor but the routed experts, the input
    embedding (a step reads only its rows) and an MTP module. ``expert_bytes``: one routed
    expert of every MoE layer — what each distinct expert chosen costs.
    """

    non_expert_bytes: float
    expert_bytes: float
    num_experts: int
    experts_per_token: int
    routing: str = "uniform"

    def step_bytes(self, tokens: float) -> float:
        """Bytes read by a step over ``tokens`` tokens (batch × positions)."""
        return self.non_expert_bytes + self.expert_bytes * expected_distinct_experts(
            tokens, self.num_experts, self.experts_per_token, self.routing)


def step_bytes(cfg: ModelConfig, routing: str = "uniform") -> StepBytes:
    """:class:`StepBytes` of ``cfg`` from its inventory."""
    ck = checkpoint_bytes(cfg, by_component=True)
    non_expert = sum(v for c, v in ck.items() if c not in ("routed_experts", "embed_tokens", "mtp"))
    return StepBytes(float(non_expert), float(routed_expert_bytes(cfg) * cfg.num_moe_layers),
                     cfg.num_experts, cfg.num_experts_per_token, routing)


# --------------------------------------------------------------------------- per GPU of a deployment
#
# The same bytes and experts, per GPU of the heaviest pipeline stage of a Deployment, plus the
# FLOPs and the collectives of the step. These are the physical terms that both the decode
# roofline (k3lab.roofline: ideal hardware, an upper bound) and the serving model
# (k3lab.serving: achieved fractions and a per-layer cost fitted on public measurements)
# turn into seconds. Units: bytes, FLOP, tokens; counts per step.


@dataclass(frozen=True)
class StepTerms:
    """What one forward step (or one prompt's prefill) does on one GPU of the heaviest stage.

    ``kind``: ``decode`` (one new token per request), ``verify`` (the draft block + 1 rows per
    request), ``prefill`` (prompts packed into chunks) or ``draft`` (a DSpark draft pass).
    ``requests``: requests in the step's microbatch (per replica). ``tokens``: tokens the step
    runs through the layers (per microbatch). ``passes``: forward passes the terms add up
    (1 for a step; the number of chunks for a prefill), each paying the per-layer fixed cost
    once per layer of ``layers``. Bytes are HBM reads; ``flops_dense`` runs at the GPU's
    BF16 peak (non-expert matmuls, attention, KDA state), ``flops_experts`` (routed-expert
    matmuls, MXFP4 weights) at its FP8 peak. Collectives: every layer execution of
    ``layer_passes`` all-reduces hidden states of ``comm_tokens`` tokens (how many per layer
    and in which dtype is ``data/serving_model.yaml``'s, :func:`k3lab.roofline.collective_s`);
    ``pp_sends`` stage-to-stage sends of the same message."""

    kind: str
    requests: float
    tokens: float
    passes: int
    layers: int
    experts_touched_per_layer: float
    bytes_weights: float
    bytes_experts: float
    bytes_kv: float
    bytes_state: float
    flops_dense: float
    flops_experts: float
    comm_tokens: float
    pp_sends: int
    #: of ``flops_dense``, the attention's (decode: absorbed MLA over the context; prefill: causal
    #: MHA-form MLA): what runs in the attention kernel rather than a GEMM
    flops_attention: float = 0.0

    @property
    def bytes_total(self) -> float:
        return self.bytes_weights + self.bytes_experts + self.bytes_kv + self.bytes_state

    @property
    def flops_total(self) -> float:
        return self.flops_dense + self.flops_experts

    @property
    def layer_passes(self) -> int:
        """Layer executions that each pay the fixed per-layer cost (passes × layers)."""
        return self.passes * self.layers


def microbatches(concurrency: float, pp: int) -> float:
    """Microbatches in flight under pipeline parallelism: min(concurrency, pp) (1 without PP)."""
    return min(float(concurrency), float(pp))


@functools.lru_cache(maxsize=None)
def _stage(cfg: ModelConfig, tp: int, pp: int, setting) -> tuple[int, ...]:
    stage = heaviest_stage(cfg, tp, pp, setting)
    lo, hi = pp_stages(cfg, pp)[stage]
    return tuple(range(lo, hi))


@functools.lru_cache(maxsize=None)
def rank_read_bytes(cfg: ModelConfig, tp: int, pp: int, setting, experts_as: str = "held") -> tuple[float, float]:
    """(non-expert bytes, bytes of ONE routed expert per MoE layer) a rank of the heaviest
    stage reads, as sglang holds them under ``setting`` (ROCm's expert padding included;
    ``experts_as="checkpoint"``: the expert's checkpoint bytes ÷ tp instead, without padding
    or zero biases — the roofline's favourable reading).

    Non-expert: the rank's shard of every checkpoint tensor but the routed experts and the
    input embedding (a step reads only its rows). One expert: the rank's routed-expert bytes
    ÷ (MoE layers on the stage × experts), so that under TP it is 1/tp of an expert and
    under EP (whole experts on ``N/tp`` ranks) the same average. From
    :func:`k3lab.model.sharding.shard_table`."""
    t = shard_table(cfg, tp, pp, setting)
    keep = (~t["component"].isin(["routed_experts", "embed_tokens"])) & (t["checkpoint_bytes"] > 0)
    layers = _stage(cfg, tp, pp, setting)
    moe = sum(1 for i in layers if i >= cfg.first_k_dense_replace)
    ne = float(t.loc[keep, "rank_bytes"].sum())
    if experts_as == "checkpoint":
        return ne, routed_expert_bytes(cfg) / tp
    if experts_as != "held":
        raise ValueError(f"experts_as must be 'held' or 'checkpoint', got {experts_as!r}")
    routed = float(t.loc[t["component"] == "routed_experts", "rank_bytes"].sum())
    return ne, routed / max(moe * cfg.num_experts, 1)


def _active_split(cfg: ModelConfig) -> tuple[float, float]:
    """(non-expert, routed-expert) active parameters per token (lm_head in, input embedding out)."""
    p = count_params(cfg)
    experts = float(p.active_breakdown["routed_experts"])
    return float(p.active) - experts, experts


def _decode_attention_flops_per_token(cfg: ModelConfig, layers, heads: float, context: float) -> float:
    """Absorbed-form MLA decode attention FLOPs of one query row over ``context`` cached tokens:
    per MLA layer and head 2·context·(2·kv_lora_rank + rope) (QKᵀ over 576, PV over 512)."""
    mla = sum(1 for i in layers if (i + 1) in cfg.full_attn_layers)
    return mla * heads * 2 * context * (2 * cfg.kv_lora_rank + cfg.qk_rope_head_dim)


def decode_terms(cfg: ModelConfig, dep, requests: float, context_tokens: float, *,
                 rows_per_request: float = 1.0, setting=None, kv_dtype: str = "bf16",
                 state_dtype: str = "fp32", routing: str = "uniform", experts_as: str = "held") -> StepTerms:
    """:class:`StepTerms` of one decode (``rows_per_request = 1``) or verify step
    (``rows_per_request`` = the draft block + 1) over ``requests`` requests of one microbatch
    whose mean context is ``context_tokens``.

    Per GPU of the heaviest stage: non-expert weights once; the expected distinct experts of
    ``requests × rows`` tokens per MoE layer (:func:`expected_distinct_experts`); the latent
    KV of every request's context (÷ ``dep.dcp``; with DP attention a rank holds 1/tp of the
    requests); the KDA state read and written once per request. FLOPs: 2 × active
    parameters per token ÷ (tp·pp), split into routed experts and the rest, plus absorbed
    MLA attention over the context. Collectives per layer of the step's tokens, and one
    stage-to-stage send with PP."""
    from .capacity import kda_state_bytes_per_request, kv_bytes_per_token
    from .sharding import Setting

    setting = Setting() if setting is None else setting
    tp, pp = dep.tp, dep.pp
    layers = _stage(cfg, tp, pp, setting)
    tokens = requests * rows_per_request
    moe = sum(1 for i in layers if i >= cfg.first_k_dense_replace)
    experts = expected_distinct_experts(tokens, cfg.num_experts, cfg.num_experts_per_token, routing)
    b_ne, b_one = rank_read_bytes(cfg, tp, pp, setting, experts_as)
    attn_ranks = tp if setting.dp_attention else 1  # DP attention: each rank serves 1/tp of the requests
    attn_tp = 1 if setting.dp_attention else tp
    b_kv = requests / attn_ranks * context_tokens * kv_bytes_per_token(cfg, kv_dtype, layers=layers) / dep.dcp
    b_state = 2 * requests / attn_ranks * kda_state_bytes_per_request(cfg, attn_tp, state_dtype, layers=layers)
    ne, ex = _active_split(cfg)
    heads = cfg.num_attention_heads / tp
    attn = _decode_attention_flops_per_token(cfg, layers, heads, context_tokens / dep.dcp)
    return StepTerms(kind="decode" if rows_per_request == 1 else "verify", requests=float(requests),
                     tokens=float(tokens), passes=1, layers=len(layers), experts_touched_per_layer=experts,
                     bytes_weights=b_ne, bytes_experts=moe * experts * b_one, bytes_kv=b_kv, bytes_state=b_state,
                     flops_dense=tokens * (2 * ne / (tp * pp) + attn), flops_experts=tokens * 2 * ex / (tp * pp),
                     comm_tokens=float(tokens), pp_sends=1 if pp > 1 else 0, flops_attention=tokens * attn)


def prefill_terms(cfg: ModelConfig, dep, prompts: int, prompt_tokens: int, chunk_tokens: int, *,
                  setting=None, routing: str = "uniform", segments: tuple | None = None,
                  absorbed_with_prefix: bool = False) -> StepTerms:
    """:class:`StepTerms` of prefilling ``prompts`` prompts of ``prompt_tokens`` tokens, packed
    into chunks of ``chunk_tokens`` (sglang's chunked prefill), on one GPU of the heaviest stage.

    Every chunk is one forward pass: it reads the non-expert weights and the experts its
    tokens touch. FLOPs: 2 × active parameters per token ÷ (tp·pp) for every prompt token,
    plus causal MHA-form MLA attention per prompt (q/k ``qk_head_dim``, v ``v_head_dim``,
    ``heads/tp`` heads; :func:`k3lab.attention.attention_flops`) and the KDA state products.
    Collectives: per layer per chunk, of the chunk's tokens.

    ``segments``: instead, ONE chunk holding these ``(prefix, tokens)`` pieces of prompts (a prompt
    split over chunks attends over its earlier chunks' tokens: causal pairs bottom-right aligned);
    ``prompts`` and ``prompt_tokens`` are then ignored but for the total. ``absorbed_with_prefix``:
    a chunk in which any prompt continues from a cached prefix runs attention in absorbed MLA form
    over the latent KV (per (query, key) pair and head 2·(2·kv_lora_rank + rope) FLOPs instead of
    2·(qk_head_dim + v_head_dim)): what sglang's Triton backend does (0.5.16 and 0.5.23
    ``models/deepseek_common/attention_backend_handler.py`` ``handle_attention_triton``: MHA only
    for an extend batch whose prefix lengths sum to 0), unlike AITER's, which stays in MHA form
    (``handle_attention_aiter``)."""
    from .flops import attention_flops
    from .sharding import Setting

    setting = Setting() if setting is None else setting
    tp, pp = dep.tp, dep.pp
    layers = _stage(cfg, tp, pp, setting)
    heads = cfg.num_attention_heads // tp
    mla = sum(1 for i in layers if (i + 1) in cfg.full_attn_layers)
    kda = sum(1 for i in layers if (i + 1) in cfg.kda_layers)
    if segments is None:
        total = prompts * prompt_tokens
        chunks = max(1, -(-total // chunk_tokens))
        attn = prompts * mla * attention_flops(prompt_tokens, heads, cfg.qk_head_dim, cfg.v_head_dim)
    else:
        total, chunks = sum(n for _, n in segments), 1
        qk, v = cfg.qk_head_dim, cfg.v_head_dim
        if absorbed_with_prefix and any(p > 0 for p, _ in segments):
            qk, v = cfg.kv_lora_rank + cfg.qk_rope_head_dim, cfg.kv_lora_rank
        attn = mla * sum(attention_flops(n, heads, qk, v, kv_len=p + n) for p, n in segments)
    per_chunk = total / chunks
    moe = sum(1 for i in layers if i >= cfg.first_k_dense_replace)
    experts = expected_distinct_experts(per_chunk, cfg.num_experts, cfg.num_experts_per_token, routing)
    b_ne, b_one = rank_read_bytes(cfg, tp, pp, setting)
    ne, ex = _active_split(cfg)
    kda_flops = total * kda * 2 * 2 * (cfg.linear_attn_num_heads / tp) * cfg.linear_attn_head_dim ** 2
    return StepTerms(kind="prefill", requests=float(prompts), tokens=float(total), passes=chunks,
                     layers=len(layers), experts_touched_per_layer=experts,
                     bytes_weights=chunks * b_ne, bytes_experts=chunks * moe * experts * b_one,
                     bytes_kv=0.0, bytes_state=0.0,
                     flops_dense=total * 2 * ne / (tp * pp) + attn + kda_flops,
                     flops_experts=total * 2 * ex / (tp * pp),
                     comm_tokens=float(per_chunk), pp_sends=chunks if pp > 1 else 0, flops_attention=attn)


def draft_terms(cfg: ModelConfig, dep, requests: float, block_tokens: int, context_tokens: float,
                draft) -> StepTerms:
    """:class:`StepTerms` of one DSpark/DFlash draft pass: the block-diffusion draft proposes a
    block of ``block_tokens`` per request in one forward pass of its ``draft.num_layers``
    dense layers (tensor-parallel like the target; ``draft``: the validated
    ``data/model/kimi_k3_dspark_draft.yaml``). Bytes: the draft's weights per rank
    (:func:`k3lab.model.resident.dflash_draft_weight_bytes_per_rank`, sharing the target's
    lm_head, read once more) and its own GQA KV over the context; FLOPs: 2 × its parameters
    per token ÷ tp. Collectives per draft layer, of the block's tokens (the draft's hidden
    size equals the target's for RadixArk/Kimi-K3-DSpark)."""
    from .flops import attention_flops
    from .resident import dflash_draft_weight_bytes_per_rank

    tp = dep.tp
    w = dflash_draft_weight_bytes_per_rank(
        hidden_size=draft.hidden_size, num_layers=draft.num_layers, num_heads=draft.num_heads,
        num_kv_heads=draft.num_kv_heads, head_dim=draft.head_dim, intermediate_size=draft.intermediate_size,
        num_context_features=draft.num_context_features, tp_size=tp, vocab_size=cfg.vocab_size,
        markov_rank=draft.markov_rank, confidence_head=draft.confidence_head)
    lm_head = cfg.vocab_size * cfg.hidden_size * 2 / tp
    tokens = requests * block_tokens
    kv_heads = max(1, draft.num_kv_heads // tp)
    kv = requests * context_tokens * draft.num_layers * kv_heads * 2 * draft.head_dim * 2
    heads = max(1, draft.num_heads // tp)
    attn = requests * draft.num_layers * attention_flops(block_tokens, heads, draft.head_dim, draft.head_dim,
                                                          causal=False, kv_len=int(context_tokens) + block_tokens)
    return StepTerms(kind="draft", requests=float(requests), tokens=float(tokens), passes=1,
                     layers=draft.num_layers, experts_touched_per_layer=0.0, bytes_weights=w + lm_head,
                     bytes_experts=0.0, bytes_kv=kv, bytes_state=0.0,
                     flops_dense=tokens * (w + lm_head) + attn,  # 2 FLOP per bf16 parameter (2 B)
                     flops_experts=0.0,
                     comm_tokens=float(tokens), pp_sends=0, flops_attention=attn)
