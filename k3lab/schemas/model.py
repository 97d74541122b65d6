"""Schema of the published model configs, ``data/model/*_config.json`` (Hugging Face
``config.json`` copied verbatim, with k3lab's ``_provenance``).

:func:`text_config_fields` is the one check of what k3lab reads from a config — every size
a positive integer, the layer lists a partition of the layers, a top-k within the experts,
switches true/false — used by the loader at the door (:class:`ModelConfigFile`) and by
:func:`k3lab.specs.model_from_dict` for a config built in memory. Errors name the field
(``field 'hidden_size' must be positive, got -1``); the caller prefixes the file.

A published config carries many keys k3lab does not read (token ids, dropout, rope
scaling, generation defaults, the vision tower): they are kept as published and checked
only by the readers' generic rules (finite numbers, no duplicate keys). Changing one is
valid input with no effect on any plan or claim; notebook 01's comparison with
aiconfigurator's bundled copy (``k3lab.crosscheck.config_differences``) shows it, and claim
S1 lists any key naming a draft, MTP, EAGLE or nextn part.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from .base import Fraction, Positive, Text, _Doc, _Sourced
from .files import JsonFile, open_

# Published configs name the same field differently (DeepSeek-V3 / Kimi K2 vs Kimi K3).
ALIASES = {
    "num_experts": ("num_experts", "n_routed_experts"),
    "num_experts_per_token": ("num_experts_per_token", "num_experts_per_tok"),
    "num_shared_experts": ("num_shared_experts", "n_shared_experts"),
}
INT_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "max_position_embeddings", "intermediate_size",
    "first_k_dense_replace", "num_experts", "num_experts_per_token", "num_shared_experts",
    "moe_intermediate_size", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
    "qk_rope_head_dim", "v_head_dim",
)
BOOL_FIELDS = ("mla_use_output_gate", "mla_use_nope", "latent_moe_use_norm")


def _field(tc: dict, key: str):
    for k in ALIASES.get(key, (key,)):
        if k in tc:
            return tc[k]
    raise ValueError(f"missing required field {key!r}")


def _positive_int(v, key: str, zero_ok: bool = False) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"field {key!r} must be an integer, got {v!r}")
    if v < 0 or (v == 0 and not zero_ok):
        raise ValueError(f"field {key!r} must be positive, got {v}")
    return v


def _flag(d: dict, key: str, where_key: str | None = None) -> bool:
    v = d.get(key, False)
    if not isinstance(v, bool):
        raise ValueError(f"field {where_key or key!r} must be true or false, got {v!r}")
    return v


def text_config_fields(raw) -> dict:
    """What k3lab reads from a published config (with or without ``text_config``), checked →
    {sizes..., full_attn_layers, kda_layers, linear_attn, routed_expert_hidden_size,
    num_nextn_predict_layers, switches, quantization}. ValueError naming the field."""
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object")
    tc = raw.get("text_config", raw)
    if not isinstance(tc, dict):
        raise ValueError("field 'text_config' must be an object")
    ints = {k: _positive_int(_field(tc, k), k, zero_ok=(k == "first_k_dense_replace")) for k in INT_FIELDS}
    n = ints["num_hidden_layers"]
    nextn = _positive_int(tc.get("num_nextn_predict_layers", 0), "num_nextn_predict_layers", zero_ok=True)
    lac = tc.get("linear_attn_config")
    if lac is None:
        full, kda, lin = tuple(range(1, n + 1)), (), (0, 0, 0)
    else:
        if not isinstance(lac, dict):
            raise ValueError("field 'linear_attn_config' must be an object")
        layers = {}
        for key in ("full_attn_layers", "kda_layers"):
            v = lac.get(key, [])
            if not isinstance(v, list):
                raise ValueError(f"field 'linear_attn_config.{key}' must be a list of layer numbers")
            layers[key] = tuple(_positive_int(i, f"linear_attn_config.{key}") for i in v)
        full, kda = layers["full_attn_layers"], layers["kda_layers"]
        if sorted(full + kda) != list(range(1, n + 1)):
            raise ValueError(f"linear_attn_config.full_attn_layers ({len(full)}) and "
                             f"kda_layers ({len(kda)}) must partition layers 1..{n} exactly once each")
        lin = tuple(_positive_int(lac.get(k), f"linear_attn_config.{k}")
                    for k in ("num_heads", "head_dim", "short_conv_kernel_size"))
    latent = _positive_int(tc.get("routed_expert_hidden_size", ints["hidden_size"]), "routed_expert_hidden_size")
    if ints["num_attention_heads"] % ints["num_key_value_heads"]:
        raise ValueError("num_key_value_heads must divide num_attention_heads")
    if ints["num_experts_per_token"] > ints["num_experts"]:
        raise ValueError(f"num_experts_per_token ({ints['num_experts_per_token']}) exceeds "
                         f"num_experts ({ints['num_experts']})")
    if ints["first_k_dense_replace"] > n:
        raise ValueError("first_k_dense_replace exceeds num_hidden_layers")
    quant = tc.get("quantization_config", raw.get("quantization_config")) or {}
    if not isinstance(quant, dict):
        raise ValueError("field 'quantization_config' must be an object")
    switches = {k: _flag(tc, k) for k in BOOL_FIELDS}
    tie = raw.get("tie_word_embeddings", tc.get("tie_word_embeddings", False))
    if not isinstance(tie, bool):
        raise ValueError(f"field 'tie_word_embeddings' must be true or false, got {tie!r}")
    block = tc.get("attn_res_block_size")
    if block is not None:
        _positive_int(block, "attn_res_block_size")
    return {**ints, "num_nextn_predict_layers": nextn, "full_attn_layers": full, "kda_layers": kda,
            "linear_attn": lin, "routed_expert_hidden_size": latent, "switches": switches,
            "tie_word_embeddings": tie, "attn_res": block is not None, "quantization": quant}


ModelConfigDoc = open_(TypedDict("ModelConfigDoc", {"_provenance": Annotated[str, Field(strict=True, min_length=1)]}))


class ModelConfigFile(JsonFile):
    """A published ``config.json`` with k3lab's ``_provenance`` (where it was copied from)."""

    schema = ModelConfigDoc
    check = staticmethod(text_config_fields)  # the rules are the text config's (its value is read elsewhere)


# --------------------------------------------------------------------------- data/model/published.yaml


class PublishedFigure(_Doc):
    """A figure a model is published with; a config may differ from it by ``tolerance``
    (relative: published figures are rounded)."""

    value: Positive
    tolerance: Fraction
    source: Text
    note: str | None = None


class PublishedModel(_Doc):
    total_params: PublishedFigure
    active_params: PublishedFigure
    context_tokens: PublishedFigure


class PublishedModels(_Sourced):
    """``data/model/published.yaml``: model name (as :data:`k3lab.specs.MODEL_FILES`) → figures."""

    models: dict[str, PublishedModel]
