"""Schemas of the article's own numbers: ``article_table.yaml``, ``claims.yaml``, ``article_prefill.yaml``."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

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
    """How close counts as agreement: ``rel`` (a fraction of the claimed value, in (0, 1)) or
    ``abs`` (in the claim's unit, finite and >= 0: 0 means exactly), or ``digits`` (the one rule
    for "about N": half a unit in the last significant digit N was written with,
    :func:`k3lab.claims.same_as_stated`). ``why`` says why this tolerance (for ``digits``, the
    article's wording)."""

    rel: Annotated[float, Field(strict=True, gt=0, lt=1, allow_inf_nan=False)] | None = None
    abs: NonNegative | None = None
    digits: bool = False
    why: Text

    @model_validator(mode="after")
    def _one(self):
        if sum(x is not None and x is not False for x in (self.rel, self.abs, self.digits or None)) != 1:
            raise ValueError("give exactly one of rel, abs or digits: true")
        return self


#: rules that compare the claimed number(s) themselves (``Claim.claimed_numbers``), and those
#: that do when the claim states plain numbers (otherwise the finding hands the number over)
NUMBER_RULES = ("within_tolerance", "rounding", "self_contradiction", "magnitude")
NUMBER_IF_NUMERIC_RULES = ("in_range", "plausible_range", "validated_model", "matches", "bound")
#: rules that need a numeric tolerance (k3lab.claims.rules.agrees)
TOLERANCE_RULES = ("within_tolerance", "self_contradiction", "magnitude")


def claimed_numbers(claimed) -> list[float] | None:
    """A claimed value as numbers — ``2.78`` → [2.78], ``"48 / 33 / 7"`` → [48, 33, 7] —
    or None when it is words (``"4-7k"``, ``"falls back to Triton"``) or a yes/no."""
    if isinstance(claimed, bool):
        return None
    if isinstance(claimed, (int, float)):
        return [float(claimed)]
    try:
        return [float(x) for x in str(claimed).split(" / ")]
    except ValueError:
        return None


class ClaimEntry(_Doc):
    """One claim. A claimed number must be finite and positive (0 only where it is compared
    exactly: an ``abs`` tolerance or the ``matches`` rule); a rule that compares the claimed
    number needs one, and the rules that need a tolerance need one."""

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

    @model_validator(mode="after")
    def _claimed_number(self):
        nums = claimed_numbers(self.claimed)
        if isinstance(self.claimed, str) and not self.claimed.strip():
            raise ValueError(f"claim {self.id}: claimed: must not be empty")
        if nums is None:
            if self.rule in NUMBER_RULES:
                raise ValueError(f"claim {self.id}: claimed: rule {self.rule!r} compares the claimed number, "
                                 f"so it must be a number (or numbers separated by ' / '), got {self.claimed!r}")
        elif self.rule in NUMBER_RULES + NUMBER_IF_NUMERIC_RULES:
            zero_ok = self.rule == "matches" or (self.tolerance is not None and self.tolerance.abs is not None)
            for x in nums:
                if not math.isfinite(x) or x < 0 or (x == 0 and not zero_ok):
                    raise ValueError(f"claim {self.id}: claimed: must be a finite number > 0"
                                     f"{' (or 0)' if zero_ok else ''}, got {self.claimed!r}")
        if self.rule in TOLERANCE_RULES and self.tolerance is None:
            raise ValueError(f"claim {self.id}: tolerance: rule {self.rule!r} needs one (rel, abs or digits)")
        return self


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
        # a claim lost from the ledger (a file cut short, a block deleted) must not pass: every
        # finding keeps its claims, numbered from 1 without a gap, under the finding's letter
        for finding, letter in CLAIM_LETTERS.items():
            nums = []
            for i, c in enumerate(self.claims):
                if c.finding != finding:
                    continue
                if not (c.id[:1] == letter and c.id[1:].isdigit()):
                    raise ValueError(f"claims.{i}.id: a {finding} claim is numbered {letter}1, {letter}2, ... "
                                     f"(got {c.id!r})")
                nums.append(int(c.id[1:]))
            if not nums:
                raise ValueError(f"claims: no {finding} claim (every finding's notebook judges claims; "
                                 "is the file cut short?)")
            missing = sorted(set(range(1, max(nums) + 1)) - set(nums))
            if missing:
                raise ValueError(f"claims: {finding} claim(s) {', '.join(f'{letter}{n}' for n in missing)} missing "
                                 f"(ids run {letter}1..{letter}{max(nums)} without a gap)")
        return self


#: the letter each finding's claim ids carry (M1, S1, P1, T1)
CLAIM_LETTERS = {"memory": "M", "spec_decode": "S", "prefill": "P", "throughput": "T"}


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
