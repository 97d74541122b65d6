"""Bytes and experts one forward step touches: what decode and verify steps read.

One step over ``tokens`` tokens (a batch, or a batch × verify rows) reads every non-expert
weight once and the routed experts the tokens pick. With uniform, independent routing
(each token's top-k a uniform k-subset of N) the expected number of distinct experts per
MoE layer is ``N · (1 − (1 − k/N)^tokens)``; skewed routing touches fewer, so this is the
upper end. All sizes come from the one inventory (:mod:`k3lab.model.inventory`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..specs import ModelConfig
from .inventory import checkpoint_bytes, routed_expert_bytes

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
