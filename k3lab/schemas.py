"""The schema of every file under ``data/`` (pydantic models), one class per document.

Loaded and checked by :mod:`k3lab.data` (which turns a validation error into one line
naming the file and the field). Conventions: a physical quantity is ``{value, source}``
with ``value`` finite and positive; ``source`` names an entry of the file's ``sources``
(checked for every file with a ``sources`` table); units are in the field names.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# --------------------------------------------------------------------------- field types

Positive = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(strict=True, gt=0)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
Fraction = Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)]
Text = Annotated[str, Field(strict=True, min_length=1)]
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Source(_Doc):
    """Where a number comes from: a title, a date (YYYY, YYYY-MM or YYYY-MM-DD), a URL if any."""

    title: Text
    date: Text
    url: str | None = None
    kind: str | None = None
    version: str | None = None
    repo: str | None = None
    commit: str | None = None
    note: str | None = None

    @field_validator("date")
    @classmethod
    def _date(cls, v: str) -> str:
        if not DATE.match(v):
            raise ValueError(f"date must be YYYY, YYYY-MM or YYYY-MM-DD, got {v!r}")
        return v


class Num(_Doc):
    """A positive physical quantity and its source."""

    value: Positive
    source: Text
    note: str | None = None


class NumOrNone(_Doc):
    """A quantity a device may not have at all (``value: null``, e.g. FP4 on an H200)."""

    value: Positive | None
    source: Text
    note: str | None = None


class Count(_Doc):
    value: PositiveInt
    source: Text
    note: str | None = None


class Label(_Doc):
    value: Text
    source: Text
    note: str | None = None


def _sources_cited(obj: Any, path: str = ""):
    """Yield (field path, source key) for every ``source`` field below ``obj``."""
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            v = getattr(obj, name)
            if name == "source" and isinstance(v, str):
                yield path.rstrip("."), v
            else:
                yield from _sources_cited(v, f"{path}{name}.")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _sources_cited(v, f"{path}{k}.")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _sources_cited(v, f"{path}{i}.")


class _Sourced(_Doc):
    """A document with a ``sources`` table that every ``source:`` field must name."""

    sources: dict[str, Source]

    @model_validator(mode="after")
    def _known_sources(self):
        for where, key in _sources_cited({k: getattr(self, k) for k in type(self).model_fields
                                           if k != "sources"}):
            if key not in self.sources:
                raise ValueError(f"{where}: cites unknown source {key!r} "
                                 f"(known: {', '.join(sorted(self.sources))})")
        return self


# --------------------------------------------------------------------------- hardware.yaml


class GpuEntry(_Doc):
    """One GPU. Units in the names: GB = 1e9 B, TB/s = 1e12 B/s, TFLOPS dense, W board power.
    ``hbm_label_gb``: the number on the vendor's label (whose unit varies by vendor);
    ``usable_hbm_gb``: what the driver exposes, in 1e9 bytes."""

    name: Text
    vendor: Literal["amd", "nvidia"]
    arch: Text
    hbm_label_gb: Num
    usable_hbm_gb: Num
    hbm_bw_tb_s: Num
    dense_fp4_tflops: NumOrNone
    dense_fp8_tflops: Num
    dense_bf16_tflops: Num
    board_power_w: Num
    scale_up: Label
    scale_up_domain_gpus: Count
    scale_up_gb_s_per_direction: Num
    scale_out_gbit_s_per_gpu: Num


class Link(_Doc):
    description: Text
    gbit_s: Num


class Hardware(_Sourced):
    gpus: dict[str, GpuEntry]
    scale_out: dict[str, Link]


# --------------------------------------------------------------------------- prices.yaml

PRICE_UNIT = "USD/GPU-hour"
PRICE_KINDS = ("article", "on_demand", "reserved", "market", "cost_model")


class Tier(_Doc):
    """A price source of one kind (:data:`PRICE_KINDS`): the article, an on-demand list price,
    a reserved tier, a market index, a cost model (InferenceX). Only prices of the same kind
    are compared with each other."""

    source: Text
    kind: Literal["article", "on_demand", "reserved", "market", "cost_model"]
    independent: bool
    description: Text


class Price(_Doc):
    tier: Text
    gpu: Text
    usd_per_gpu_hour: Positive
    note: str | None = None


class Electricity(_Doc):
    pue: list[Annotated[float, Field(strict=True, ge=1, allow_inf_nan=False)]]
    usd_per_kwh_range: Annotated[list[NonNegative], Field(min_length=2, max_length=2)]
    usd_per_kwh_example: NonNegative


class Prices(_Sourced):
    unit: Literal["USD/GPU-hour"]
    tiers: dict[str, Tier]
    prices: list[Price]
    electricity_assumptions: Electricity

    @model_validator(mode="after")
    def _rows(self):
        seen = set()
        for i, p in enumerate(self.prices):
            if p.tier not in self.tiers:
                raise ValueError(f"prices.{i}.tier: unknown tier {p.tier!r} (known: {', '.join(self.tiers)})")
            if (p.tier, p.gpu) in seen:
                raise ValueError(f"prices.{i}: a second price for {p.gpu} in tier {p.tier}")
            seen.add((p.tier, p.gpu))
        return self


# --------------------------------------------------------------------------- article_table.yaml


class Workload(_Doc):
    input_len_tokens: PositiveInt
    output_len_tokens: PositiveInt
    metric: Text
    quote: Text


class _DeploymentFields(_Doc):
    """The fields that name a deployment (k3lab.specs.Deployment is built from them)."""

    label: Text
    gpu: Text
    num_gpus: PositiveInt
    gpus_per_node: PositiveInt
    tp: PositiveInt
    pp: PositiveInt
    dcp: PositiveInt


class TableConfig(_DeploymentFields):
    """One row of the article's table; throughput in ``tok_s_unit``, price from prices.yaml."""

    id: Text
    tok_s: Positive
    tok_s_unit: Literal["tok/s per deployment", "tok/s per node", "tok/s per GPU"]
    tok_s_per_dollar_hour: Positive
    claims: list[Text]
    concurrency: PositiveInt | None
    concurrency_note: str | None = None
    dcp_note: str | None = None
    unit_note: str | None = None


class DerivedPoint(_Doc):
    id: Text
    label: Text
    base: Text
    divide_by: Positive
    concurrency: PositiveInt | None
    quote: Text
    note: str | None = None


class ArticleTable(_Doc):
    source: Source
    workload: Workload
    price_tier: Text
    configs: list[TableConfig]
    derived_points: list[DerivedPoint] = []

    @model_validator(mode="after")
    def _ids(self):
        ids = [c.id for c in self.configs]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"configs: duplicate id(s) {dup}")
        for i, c in enumerate(self.configs):
            if c.tp * c.pp != c.num_gpus:
                raise ValueError(f"configs.{i} ({c.id}): tp x pp = {c.tp * c.pp} != num_gpus {c.num_gpus}")
            if c.num_gpus % c.gpus_per_node:
                raise ValueError(f"configs.{i} ({c.id}): {c.num_gpus} GPUs are not whole "
                                 f"{c.gpus_per_node}-GPU nodes")
        for i, d in enumerate(self.derived_points):
            if d.base not in ids:
                raise ValueError(f"derived_points.{i}.base: unknown config {d.base!r}")
        return self


# --------------------------------------------------------------------------- claims.yaml

METHODS = ("measured", "derived", "arithmetic", "emulated", "modelled", "unchecked")


class Tolerance(_Doc):
    """How close counts as agreement: ``rel`` (fraction of the claimed value) or ``abs`` (in
    the claim's unit), or ``digits`` (the claim's own stated precision, half a unit in its
    last digit). ``why`` says why this tolerance."""

    rel: NonNegative | None = None
    abs: NonNegative | None = None
    digits: bool = False
    why: Text

    @model_validator(mode="after")
    def _one(self):
        if sum(x is not None and x is not False for x in (self.rel, self.abs, self.digits or None)) != 1:
            raise ValueError("give exactly one of rel, abs or digits: true")
        return self


class ClaimEntry(_Doc):
    id: Text
    finding: Literal["memory", "spec_decode", "prefill", "throughput"]
    notebook: Text
    quote: Text
    claimed: str | int | float | bool
    unit: Text
    method: Literal["measured", "derived", "arithmetic", "emulated", "modelled", "unchecked"]
    rule: Text
    tolerance: Tolerance | None = None
    added: str | None = None


class Claims(_Doc):
    source: Text
    read_on: Text
    claims: list[ClaimEntry]

    @model_validator(mode="after")
    def _unique(self):
        seen = set()
        for i, c in enumerate(self.claims):
            if c.id in seen:
                raise ValueError(f"claims.{i}.id: duplicate claim id {c.id!r}")
            seen.add(c.id)
        return self


# --------------------------------------------------------------------------- article_prefill.yaml


class Quoted(_Doc):
    value: Positive
    quote: Text


class ArticlePrefill(_Doc):
    source: Source
    context_tokens: Quoted
    context_note: Text
    ttft_s_mi355x_before: Quoted
    ttft_s_b300: Quoted
    prefill_tok_s_before_low: Quoted
    prefill_tok_s_before_high: Quoted
    prefill_tok_s_after: Quoted
    prefill_tok_s_note: Text
    ttft_speedup_low: Quoted
    ttft_speedup_high: Quoted
    tp: Quoted


# --------------------------------------------------------------------------- serving_model.yaml


class Assumed(_Doc):
    """A modelling choice, not a fact: a value or a swept range, with why."""

    low: float | None = None
    high: float | None = None
    value: float | None = None
    source: Text
    note: Text


class Speculative(_Doc):
    block_size_tokens: Count
    verify_rows_per_request: Count
    accept_length_low: Num
    accept_length_high: Num
    draft_cost_ratio: Assumed
    fixed_fraction: Assumed

    @model_validator(mode="after")
    def _rows(self):
        if self.verify_rows_per_request.value != self.block_size_tokens.value + 1:
            raise ValueError(f"verify_rows_per_request ({self.verify_rows_per_request.value}) must be "
                             f"block_size_tokens + 1 ({self.block_size_tokens.value + 1})")
        if self.accept_length_low.value > self.accept_length_high.value:
            raise ValueError("accept_length_low exceeds accept_length_high")
        return self


class ExtraDeployment(_DeploymentFields):
    """A deployment the article does not tabulate (with the source that describes it)."""

    source: Text


class ServingModel(_Sourced):
    link_latency_us_scale_up: Num
    link_latency_us_scale_out: Num
    scale_out_nics_per_node: Count
    scale_out_nics_per_node_pessimistic: Count
    activation_dtype_bytes: Count
    all_reduces_per_layer: Count
    routing: Literal["uniform", "min"]
    routing_source: Text
    speculative: Speculative
    extra_deployments: dict[str, ExtraDeployment] = {}


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


class StartupLog(_Doc):
    id: Text
    source: Text
    quote: Text
    quantity: Literal["max_running_requests", "max_total_num_tokens", "loaded_weights_gib_per_rank",
                      "kv_bytes_per_token"]
    value: Positive
    layout: Text
    mem_fraction: Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)]
    kv_dtype: Literal["bf16", "fp8"]
    slots_per_request: PositiveInt
    unknown: Text
    predict: bool = True


class StartupLogs(_Sourced):
    logs: list[StartupLog]
