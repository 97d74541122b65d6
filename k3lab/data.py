"""The one loader of ``data/*.yaml``: every file parsed once, validated by one schema each.

``load("hardware")`` → the validated document of ``data/hardware.yaml`` (a frozen pydantic
model). Every file goes through the same steps, and a mistake in any of them raises
:class:`DataError` with one line naming the file and the field:

1. read as UTF-8 and parse as YAML (``data/hardware.yaml: not valid YAML (line 12: ...)``);
2. validate against the file's schema below: finite numbers, positive where physical,
   units in the field names or checked against a fixed unit, no unknown keys
   (``data/hardware.yaml: gpus.mi355x.hbm_bw_tb_s.value: must be a finite number > 0``);
3. check that every ``source:`` names an entry of the file's ``sources`` with a date.

Facts are stored once. Where two files must agree (the article's numbers as claims in
``claims.yaml`` and as model inputs in ``article_table.yaml``), :func:`cross_checks` says
so in one place; :func:`load` runs it for every file that takes part.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .paths import REPO_ROOT, data_dir


class DataError(ValueError):
    """A data file that cannot be used as it is; the message names the file and the field."""


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


class TableConfig(_Doc):
    """One row of the article's table; throughput in ``tok_s_unit``, price from prices.yaml."""

    id: Text
    label: Text
    gpu: Text
    num_gpus: PositiveInt
    gpus_per_node: PositiveInt
    tp: PositiveInt
    pp: PositiveInt
    dcp: PositiveInt
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


class ExtraDeployment(_Doc):
    label: Text
    gpu: Text
    num_gpus: PositiveInt
    gpus_per_node: PositiveInt
    tp: PositiveInt
    pp: PositiveInt
    dcp: PositiveInt
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


# --------------------------------------------------------------------------- loading

SCHEMAS: dict[str, tuple[str, type[BaseModel]]] = {
    "hardware": ("hardware.yaml", Hardware),
    "prices": ("prices.yaml", Prices),
    "article_table": ("article_table.yaml", ArticleTable),
    "article_prefill": ("article_prefill.yaml", ArticlePrefill),
    "claims": ("claims.yaml", Claims),
    "serving_model": ("serving_model.yaml", ServingModel),
}


def _where(path: Path) -> str:
    """How errors name a data file: ``data/<name>`` (also for a copy under K3LAB_DATA)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return f"data/{Path(path).name}"


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; DataError naming the file for missing, non-UTF-8 or bad YAML."""
    where = _where(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DataError(f"{where}: file missing") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{where}: not UTF-8 text (byte {e.start})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise DataError(f"{where}: not valid YAML ({line}{getattr(e, 'problem', None) or e})") from None


def _first_error(where: str, e: ValidationError) -> DataError:
    errs = e.errors(include_url=False)
    err = errs[0]
    loc = ".".join(str(x) for x in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] in ("greater_than", "finite_number", "float_type", "int_type", "float_parsing"):
        msg = f"{msg} (got {err.get('input')!r})"
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    return DataError(f"{where}: {loc + ': ' if loc else ''}{msg}{more}")


def validate(name: str, doc: Any, where: str | None = None) -> BaseModel:
    """Validate an already-parsed document against the schema of ``name`` (see :data:`SCHEMAS`)."""
    if name not in SCHEMAS:
        raise DataError(f"unknown data file {name!r}; known: {', '.join(SCHEMAS)}")
    fname, schema = SCHEMAS[name]
    where = where or f"data/{fname}"
    if not isinstance(doc, dict):
        raise DataError(f"{where}: expected a mapping at the top level, got {type(doc).__name__}")
    try:
        return schema.model_validate(doc)
    except ValidationError as e:
        raise _first_error(where, e) from None


@functools.lru_cache(maxsize=None)
def _load_one(name: str) -> BaseModel:
    if name not in SCHEMAS:
        raise DataError(f"unknown data file {name!r}; known: {', '.join(SCHEMAS)}")
    path = data_dir() / SCHEMAS[name][0]
    return validate(name, read_yaml(path), _where(path))


#: Files whose facts are used by other files (see :func:`cross_checks`).
CROSS_CHECKED = ("hardware", "prices", "article_table", "claims")


@functools.lru_cache(maxsize=None)
def _cross_checked() -> bool:
    cross_checks(**{n: _load_one(n) for n in CROSS_CHECKED})
    return True


def load(name: str) -> BaseModel:
    """The validated document of ``data/<file>`` for ``name`` (cached; see :data:`SCHEMAS`)."""
    doc = _load_one(name)
    if name in CROSS_CHECKED:
        _cross_checked()
    return doc


def cross_checks(**given) -> None:
    """Facts that live in one file and are used by another must agree.

    - every GPU named in prices.yaml, article_table.yaml and serving_model.yaml exists in
      hardware.yaml;
    - the article's numbers that are claims (claims.yaml) and model inputs
      (article_table.yaml: tok/s per node, tok/s per $/hour; prices.yaml: $/GPU-hour) agree,
      so editing one without the other fails here.
    ``given`` holds documents being validated (so a file is not loaded while loading itself).
    """
    def get(n):
        return given[n] if n in given else _load_one(n)

    gpus = set(get("hardware").gpus)
    pr = get("prices")
    for i, p in enumerate(pr.prices):
        if p.gpu not in gpus:
            raise DataError(f"data/prices.yaml: prices.{i}.gpu: unknown GPU {p.gpu!r} "
                            f"(known in data/hardware.yaml: {', '.join(sorted(gpus))})")
    table = get("article_table")
    if table.price_tier not in pr.tiers:
        raise DataError(f"data/article_table.yaml: price_tier: {table.price_tier!r} is not a tier "
                        f"of data/prices.yaml")
    for i, c in enumerate(table.configs):
        if c.gpu not in gpus:
            raise DataError(f"data/article_table.yaml: configs.{i}.gpu: unknown GPU {c.gpu!r}")
        if not any(p.tier == table.price_tier and p.gpu == c.gpu for p in pr.prices):
            raise DataError(f"data/prices.yaml: tier {table.price_tier!r} has no price for "
                            f"{c.gpu}, which data/article_table.yaml needs")
    reg = {c.id: c for c in get("claims").claims}
    # The article's table appears twice: T1-T3 (throughput) and T6 (tok/s per $/hour).
    by_id = {c.id: c for c in table.configs}
    for cfg_id, cid in (("mi355x_tp8", "T1"), ("b300_tp8_dcp", "T2"), ("b200_tp16", "T3")):
        if cfg_id in by_id and cid in reg and float(reg[cid].claimed) != by_id[cfg_id].tok_s:
            raise DataError(f"data/claims.yaml: {cid}.claimed ({reg[cid].claimed}) disagrees with "
                            f"data/article_table.yaml configs.{cfg_id}.tok_s ({by_id[cfg_id].tok_s:g})")
    if "T6" in reg:
        want = " / ".join(f"{by_id[k].tok_s_per_dollar_hour:g}" for k in ("mi355x_tp8", "b300_tp8_dcp", "b200_tp16"))
        if str(reg["T6"].claimed) != want:
            raise DataError(f"data/claims.yaml: T6.claimed ({reg['T6'].claimed}) disagrees with "
                            f"data/article_table.yaml tok_s_per_dollar_hour ({want})")
    if "T5" in reg:
        art = {p.gpu: p.usd_per_gpu_hour for p in pr.prices if p.tier == table.price_tier}
        want = " / ".join(f"{art[g]:.2f}" for g in ("mi355x", "b300", "b200") if g in art)
        if str(reg["T5"].claimed) != want:
            raise DataError(f"data/claims.yaml: T5.claimed ({reg['T5'].claimed}) disagrees with "
                            f"data/prices.yaml tier {table.price_tier!r} ({want})")


def clear_cache() -> None:
    """Forget every loaded file (tests that edit data files call this)."""
    _load_one.cache_clear()
    _cross_checked.cache_clear()


def check_finite(name: str, v, positive: bool = True) -> float:
    """A user-given number: finite (and > 0 unless ``positive=False``) → float, else ValueError."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{name} must be positive, got {v!r}")
    return float(v)


def check_count(name: str, v) -> int:
    """A user-given count: a positive int (not a bool) → int, else ValueError."""
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return v
