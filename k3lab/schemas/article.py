"""Schemas of the article's own numbers: ``article_table.yaml``, ``claims.yaml``, ``article_prefill.yaml``."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from .base import NonNegative, Positive, PositiveInt, Source, Text, _Doc, named_twice


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
        dup = named_twice(ids)
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

METHODS = ("measured", "derived", "cited", "arithmetic", "emulated", "modelled", "unchecked")


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
    method: Literal["measured", "derived", "cited", "arithmetic", "emulated", "modelled", "unchecked"]
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
