"""Schemas of ``serving_model.yaml`` (the roofline's and the serving model's assumptions) and ``serving_fit.yaml`` (the committed fit)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .article import _DeploymentFields
from .base import Count, Finite, Fraction, NonNegative, Num, Positive, PositiveInt, Text, _Doc, _Sourced


# --------------------------------------------------------------------------- serving_model.yaml


class Assumed(_Doc):
    """A modelling choice, not a fact: a value or a swept range, with why."""

    low: float | None = None
    high: float | None = None
    value: float | None = None
    source: Text
    note: Text


class ExtraDeployment(_DeploymentFields):
    """A deployment the article does not tabulate (with the source that describes it)."""

    source: Text


class ChunkedPrefill(_Doc):
    """sglang's default ``--chunked-prefill-size`` by GPU capacity (tokens)."""

    tokens_large: PositiveInt
    tokens_small: PositiveInt
    large_from_gib: Num
    source: Text


class Family(_Doc):
    """GPUs that share the serving model's fitted parameters, and why."""

    gpus: list[Text]
    note: Text


class ServingModel(_Sourced):
    link_latency_us_scale_up: Num
    link_latency_us_scale_out: Num
    scale_out_nics_per_node: Count
    scale_out_nics_per_node_pessimistic: Count
    activation_dtype_bytes: Count
    all_reduces_per_layer: Count
    routing: Literal["uniform", "min"]
    routing_source: Text
    extra_deployments: dict[str, ExtraDeployment] = {}
    chunked_prefill: ChunkedPrefill
    families: dict[str, Family]

    @model_validator(mode="after")
    def _one_family_per_gpu(self):
        seen = {}
        for name, f in self.families.items():
            for g in f.gpus:
                if g in seen:
                    raise ValueError(f"families.{name}.gpus: {g} is already in family {seen[g]}")
                seen[g] = name
        return self


# --------------------------------------------------------------------------- serving_fit.yaml


class FitParams(_Doc):
    """One family's fitted parameters: fractions of peak HBM bandwidth and dense FLOP/s a
    step achieves, and the fixed cost per layer per step (µs)."""

    hbm_efficiency: Fraction
    flop_efficiency: Fraction
    layer_overhead_us: NonNegative


class FitValidationRow(_Doc):
    id: Text
    source: Text
    gpu: Text
    kind: Text
    published: Positive
    predicted_out_of_source: Positive
    log_error: Finite


class FitFamily(_Doc):
    params: FitParams
    band_log: NonNegative | None
    sources: PositiveInt
    calibration_points: PositiveInt
    validation: list[FitValidationRow]


class FitObservation(_Doc):
    id: Text
    source: Text
    family: Text
    gpu: Text
    engine: Text
    layout: Text
    input_len: PositiveInt
    output_len: PositiveInt
    concurrency: PositiveInt
    spec: Text
    accept_len: Annotated[float, Field(strict=True, ge=1, allow_inf_nan=False)]
    kind: Text
    value: Positive
    normalisation: str
    spans_nodes: bool


class FitAicRow(_Doc):
    id: Text
    kind: Text
    published: Positive
    k3lab: Positive
    aiconfigurator: Positive | None
    note: str


class ServingFit(_Doc):
    """``serving_fit.yaml``: the serving model's fitted parameters and validation, generated
    by ``make serving-fit`` from the files named in ``inputs`` (sha256 of their bytes)."""

    generated: dict[str, str]
    inputs: dict[str, str]
    families: dict[str, FitFamily]
    observations: list[FitObservation]
    aiconfigurator: list[FitAicRow]
