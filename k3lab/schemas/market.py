"""Schemas of ``hardware.yaml`` (GPUs, links) and ``prices.yaml`` (tiers, prices, electricity)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..limits import CAPS
from .base import Count, Fraction, Label, NonNegative, Num, NumOrNone, Text, _Doc, _Sourced

#: a price in data/prices.yaml: positive and within the cap a price you give obeys (a typo such as
#: 1.0e+308 would make every product infinite, far from the file that held it)
UsdPerGpuHour = Annotated[float, Field(strict=True, gt=0, le=CAPS["usd_per_gpu_hour"].high, allow_inf_nan=False)]


# --------------------------------------------------------------------------- hardware.yaml


class GpuEntry(_Doc):
    """One GPU. Units in the names: GB = 1e9 B, TB/s = 1e12 B/s, TFLOPS dense, W board power.
    ``hbm_label_gb``: the number on the vendor's label, in ``hbm_label_unit`` (GiB or GB);
    ``usable_hbm_gb``: what the driver exposes, in 1e9 bytes."""

    name: Text
    vendor: Literal["amd", "nvidia"]
    arch: Text
    hbm_label_gb: Num
    hbm_label_unit: Literal["GiB", "GB"]
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


class PublicLink(_Doc):
    """The link between the nodes of a public multi-node run, as its source states it (per node)."""

    description: Text
    gbit_s_per_node: Num


class PublicLinks(_Sourced):
    """``public_links.yaml``: the scale-out links of public multi-node runs, keyed by the source of
    ``public_measurements.yaml`` their runs come from (kept apart from ``hardware.yaml``, an input
    of the serving fit, since no fit reads them)."""

    links: dict[str, PublicLink]


class ShareBand(_Doc):
    """The band a vendor's usable / label capacity (both in bytes) lies in, and its source."""

    low: Fraction
    high: Fraction
    source: Text
    note: str | None = None


LABEL_UNIT_BYTES = {"GiB": 2**30, "GB": 10**9}


class Hardware(_Sourced):
    gpus: dict[str, GpuEntry]
    usable_share: dict[Literal["amd", "nvidia"], ShareBand]
    scale_out: dict[str, Link]

    @model_validator(mode="after")
    def _usable_within_label(self):
        """usable ≤ label, and usable / label within the vendor's band: a typo in either
        capacity (28.8 for 288, 3092 for 309.2) is refused naming both fields."""
        for key, g in self.gpus.items():
            band = self.usable_share.get(g.vendor)
            if band is None:
                raise ValueError(f"usable_share: no band for vendor {g.vendor!r} (gpus.{key})")
            label = g.hbm_label_gb.value * LABEL_UNIT_BYTES[g.hbm_label_unit]
            share = g.usable_hbm_gb.value * 1e9 / label
            if not band.low <= share <= band.high:
                raise ValueError(
                    f"gpus.{key}: usable_hbm_gb {g.usable_hbm_gb.value:g} GB is {share:.1%} of hbm_label_gb "
                    f"{g.hbm_label_gb.value:g} {g.hbm_label_unit} ({label / 1e9:,.1f} GB); {g.vendor.upper()} drivers expose "
                    f"{band.low:.0%}-{band.high:.0%} of the label (usable_share.{g.vendor}): one of the two is wrong")
        return self


# --------------------------------------------------------------------------- prices.yaml

PRICE_UNIT = "USD/GPU-hour"
PRICE_KINDS = ("article", "on_demand", "reserved", "market", "cost_model")
#: what one price is (its ``quality``), and the qualities each tier kind may hold: a placeholder
#: (a figure its own source marks as a stand-in) may sit in any independent source, never in the article
PRICE_QUALITIES = ("article", "provider_list", "committed_term", "market_index", "second_hand_quote", "cost_model",
                   "placeholder")
QUALITIES_OF_KIND = {"article": ("article",), "on_demand": ("provider_list", "placeholder"),
                     "reserved": ("committed_term", "placeholder"),
                     "market": ("market_index", "second_hand_quote", "placeholder"),
                     "cost_model": ("cost_model", "placeholder")}


class Tier(_Doc):
    """A price source of one kind (:data:`PRICE_KINDS`): the article, an on-demand list price,
    a reserved tier, a market index, a cost model (InferenceX). Only prices of the same kind
    are compared with each other."""

    source: Text
    kind: Literal["article", "on_demand", "reserved", "market", "cost_model"]
    independent: bool
    description: Text


class Price(_Doc):
    """One price: its tier (source and kind), its quality (what the number is) and the evidence
    (where it was read; the provider, when one is named, for pairing a committed term with the
    same provider's list price). ``usd_per_gpu_hour``: one figure, or ``[low, high]`` where the
    source gives a range (an index's spread): both ends are kept, never one of them alone."""

    tier: Text
    gpu: Text
    usd_per_gpu_hour: UsdPerGpuHour | Annotated[list[UsdPerGpuHour], Field(min_length=2, max_length=2)]
    quality: Literal["article", "provider_list", "committed_term", "market_index", "second_hand_quote", "cost_model",
                     "placeholder"]
    evidence: Text
    provider: str | None = None

    @model_validator(mode="after")
    def _range(self):
        if isinstance(self.usd_per_gpu_hour, list) and not self.usd_per_gpu_hour[0] < self.usd_per_gpu_hour[1]:
            raise ValueError(f"usd_per_gpu_hour: a range [low, high] needs low < high, got {self.usd_per_gpu_hour}")
        return self

    @property
    def usd_range(self) -> tuple[float, float]:
        """(low, high) $/GPU-hour: both the same for a single figure."""
        v = self.usd_per_gpu_hour
        return (float(v[0]), float(v[1])) if isinstance(v, list) else (float(v), float(v))


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
            kind = self.tiers[p.tier].kind
            if kind == "article" and isinstance(p.usd_per_gpu_hour, list):
                raise ValueError(f"prices.{i}.usd_per_gpu_hour: the article's prices are single figures, got a range")
            if p.quality not in QUALITIES_OF_KIND[kind]:
                raise ValueError(f"prices.{i}.quality: {p.quality!r} in a {kind} tier ({p.tier}); a {kind} tier holds "
                                 f"{' or '.join(QUALITIES_OF_KIND[kind])}")
        return self
