"""Schemas of what k3lab read from sglang and its users: ``sglang_sharding.yaml``,
``model/storage_overrides.yaml``, ``model/kimi_k3_dspark_draft.yaml``,
``public_startup_logs.yaml``, ``sglang_upstream_changes.yaml``, ``sglang_serving_rules.yaml``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .base import NonNegativeInt, Positive, PositiveInt, Source, Text, _Doc, _Sourced, named_twice


# --------------------------------------------------------------------------- sglang_sharding.yaml


class ShardRule(_Doc):
    """How sglang holds one tensor on a rank (see the file's header for the rules)."""

    rule: Literal["column", "row", "vocab", "replicated", "moe_intermediate"]
    dim: NonNegativeInt | None = None
    parts: PositiveInt = 1
    group: Literal["tp", "embed"] = "tp"
    source: Text
    cite: Text

    @model_validator(mode="after")
    def _dim(self):
        if self.rule != "replicated" and self.dim is None:
            raise ValueError(f"a {self.rule} rule needs the dim it splits")
        return self


class ShardOptions(_Doc):
    vocab_padding: PositiveInt
    flashinfer_postload_cite: Text
    mxfp4_zero_bias_cite: Text


class Sharding(_Sourced):
    options: ShardOptions
    tensors: dict[str, ShardRule]


# --------------------------------------------------------------------------- model/storage_overrides.yaml


class Override(_Doc):
    tensor: Text
    dtype: Literal["bf16", "fp16", "fp32", "fp8", "mxfp4"]
    source: Text
    why: Text


class StorageOverrides(_Sourced):
    overrides: dict[str, list[Override]]


# --------------------------------------------------------------------------- model/kimi_k3_dspark_draft.yaml


class DraftModel(_Doc):
    """A dense DFLASH/DSpark draft: sizes in elements, the block in tokens."""

    source: Source
    hidden_size: PositiveInt
    num_layers: PositiveInt
    num_heads: PositiveInt
    num_kv_heads: PositiveInt
    head_dim: PositiveInt
    intermediate_size: PositiveInt
    num_context_features: PositiveInt
    markov_rank: PositiveInt
    confidence_head: bool
    block_size_tokens: PositiveInt
    published_parameters: PositiveInt


# --------------------------------------------------------------------------- public_startup_logs.yaml


#: what a start-up log may report, each a figure k3lab.memory.fit's Plan predicts (units in the
#: name; ``kv_bytes_per_token`` is given in KiB): sglang's logged ``max_running_requests`` and
#: ``max_total_num_tokens``; the resident weights per rank after load; one token's KV cell and
#: one request's KDA state slot; what the KV + KDA-state pools get together (the static budget
#: ``--mem-fraction-static`` leaves after the weights); the free memory once the pools are
#: allocated (sglang's ``Memory pool end. avail mem=…``)
STARTUP_QUANTITIES = ("max_running_requests", "max_total_num_tokens", "loaded_weights_gib_per_rank",
                      "kv_bytes_per_token", "kda_state_mib_per_request", "kv_state_pools_gib_per_rank",
                      "avail_mem_gib_after_pools")


class StartupLog(_Doc):
    """One public start-up figure with the settings its run states.

    ``variants``: sglang switches the run states, named as ``k3lab.memory.FIT_VARIANTS`` names
    them (``dspark``, ``aiter-k3-opt``, …); ``open_variants``: switches the source leaves open,
    predicted with and without each (one row per combination)."""

    id: Text
    source: Text
    quote: Text
    quantity: Literal[STARTUP_QUANTITIES]
    value: Positive
    layout: Text
    mem_fraction: Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)]
    kv_dtype: Literal["bf16", "fp8"]
    slots_per_request: PositiveInt
    variants: list[Text] = []
    open_variants: list[Text] = []
    unknown: Text
    predict: bool = True

    @model_validator(mode="after")
    def _variants_once(self):
        twice = named_twice(self.variants + self.open_variants)
        if twice:
            raise ValueError(f"log {self.id}: {', '.join(twice)} named twice in variants / open_variants")
        return self


class StartupLogs(_Sourced):
    logs: list[StartupLog]

    @model_validator(mode="after")
    def _unique_ids(self):
        twice = named_twice(x.id for x in self.logs)
        if twice:
            raise ValueError(f"log id(s) used twice: {', '.join(twice)}")
        return self


# --------------------------------------------------------------------------- sglang_upstream_changes.yaml


class UpstreamChange(_Doc):
    """One change between two sglang releases and the pull request behind it (``pr`` None
    when not found; ``confidence`` says how sure the link is)."""

    release: Text
    finding: Literal["spec_decode", "prefill", "memory"]
    where: Text
    change: Text
    pr: PositiveInt | None
    title: str | None = None
    opened: str | None = None
    confidence: Literal["confirmed", "likely", "not_found"]
    source: Text
    #: the pull request adds a GPU kernel of its own (its title or description says so), as opposed to
    #: binding, gating or padding around kernels that exist
    adds_kernel: bool = False

    @model_validator(mode="after")
    def _pr_and_confidence_agree(self):
        if (self.pr is None) != (self.confidence == "not_found"):
            raise ValueError(f"release {self.release}: pr is {self.pr!r} but confidence is {self.confidence!r}")
        return self


class UpstreamChanges(_Sourced):
    changes: list[UpstreamChange]


# --------------------------------------------------------------------------- sglang_serving_rules.yaml


class ServingRule(_Doc):
    """One serving rule read from released sglang code: whether ``statement`` holds in each
    release (``holds``: release → bool), where in the code it is decided, and what follows."""

    statement: Text
    where: Text
    holds: dict[str, bool]
    check: Text
    source: Text

    @model_validator(mode="after")
    def _some_release(self):
        if not self.holds:
            raise ValueError("holds: name at least one release")
        return self


class ServingRules(_Sourced):
    rules: dict[str, ServingRule]
