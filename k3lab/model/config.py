"""A published model config, validated: the one type every module that reasons about a model
takes (:class:`ModelConfig`), and :func:`model_from_dict` that builds it.

Here rather than in :mod:`k3lab.specs` (which re-exports both) so that what counts a model's
tensors (:mod:`k3lab.model.inventory`) does not import the loader of models, which checks
each config against the counts it is published with (:mod:`k3lab.model.published`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..schemas.model import INT_FIELDS, text_config_fields


@dataclass(frozen=True)
class ModelConfig:
    """A validated MLA + MoE text config. Layer indices are 1-based, as published.

    Models without KDA have ``kda_layers == ()`` and ``linear_attn_* == 0``; models without
    a latent MoE have ``routed_expert_hidden_size == hidden_size``.
    ``num_nextn_predict_layers`` counts MTP layers shipped in the checkpoint (DeepSeek-V3: 1).
    """

    name: str
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    intermediate_size: int
    first_k_dense_replace: int
    num_experts: int
    num_experts_per_token: int
    num_shared_experts: int
    moe_intermediate_size: int
    routed_expert_hidden_size: int
    num_nextn_predict_layers: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    mla_use_output_gate: bool
    mla_use_nope: bool
    latent_moe_use_norm: bool
    tie_word_embeddings: bool
    attn_res: bool
    linear_attn_num_heads: int
    linear_attn_head_dim: int
    short_conv_kernel_size: int
    full_attn_layers: tuple[int, ...]
    kda_layers: tuple[int, ...]
    quantization: dict = field(default_factory=dict, compare=False, repr=False, hash=False)
    #: the quantisation section as sorted JSON: part of equality and hashing, so caches keyed
    #: on a config (the inventory) tell apart two configs that differ only in storage
    quant_key: str = field(default="{}", repr=False)
    raw: dict = field(default_factory=dict, compare=False, repr=False, hash=False)
    provenance: str = field(default="", compare=False, repr=False)

    def check_context(self, tokens: int, what: str = "a request") -> int:
        """``tokens`` when a request that long (prompt + output) is within the model's context
        (``max_position_embeddings``); ValueError in one line naming ``what`` otherwise: nothing
        is predicted, priced or sized for a request the model cannot read."""
        if tokens > self.max_position_embeddings:
            raise ValueError(f"{what} of {tokens:,} tokens exceeds {self.name}'s maximum of "
                             f"{self.max_position_embeddings:,} (max_position_embeddings)")
        return tokens

    @property
    def num_mla_layers(self) -> int:
        """Layers with full (MLA) attention and a per-token KV cache."""
        return len(self.full_attn_layers)

    @property
    def num_kda_layers(self) -> int:
        """Layers with KDA linear attention (a fixed-size recurrent state per request)."""
        return len(self.kda_layers)

    @property
    def has_kda(self) -> bool:
        return bool(self.kda_layers)

    @property
    def has_latent_moe(self) -> bool:
        """Routed experts run in a narrower latent than the hidden size (Kimi K3)."""
        return self.routed_expert_hidden_size != self.hidden_size

    @property
    def num_moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (all but the first ``first_k_dense_replace``)."""
        return self.num_hidden_layers - self.first_k_dense_replace

    @property
    def qk_head_dim(self) -> int:
        """q/k head dimension in MHA (prefill) form: nope + rope slot."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim


def model_from_dict(raw: dict, name: str = "model", where: str | None = None) -> ModelConfig:
    """A published HF config dict (with or without ``text_config``) → :class:`ModelConfig`.

    Checked by :func:`k3lab.schemas.model.text_config_fields` (the loader runs the same
    check on ``data/model/*.json``): ValueError naming ``where`` (the file) and the field for
    anything the inventory cannot use — a missing or non-integer size, layer lists that do
    not partition the layers, a top-k above the expert count.
    """
    where = where or f"model config {name!r}"
    try:
        f = text_config_fields(raw)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    ints = {k: f[k] for k in INT_FIELDS}
    lin = f["linear_attn"]
    quant = f["quantization"]
    return ModelConfig(
        name=name, **ints, routed_expert_hidden_size=f["routed_expert_hidden_size"],
        num_nextn_predict_layers=f["num_nextn_predict_layers"], **f["switches"],
        tie_word_embeddings=f["tie_word_embeddings"], attn_res=f["attn_res"],
        linear_attn_num_heads=lin[0], linear_attn_head_dim=lin[1], short_conv_kernel_size=lin[2],
        full_attn_layers=f["full_attn_layers"], kda_layers=f["kda_layers"], quantization=dict(quant),
        quant_key=json.dumps(quant, sort_keys=True, default=str), raw=raw,
        provenance=str(raw.get("_provenance", "")),
    )
