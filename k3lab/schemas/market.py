"""Schemas of ``hardware.yaml`` (GPUs, links) and ``prices.yaml`` (tiers, prices, electricity)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .base import Count, Label, NonNegative, Num, NumOrNone, Positive, Text, _Doc, _Sourced


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
