"""Schema of ``serving_model.yaml`` (the roofline and speculative-decoding assumptions)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from .article import _DeploymentFields
from .base import Count, Num, Text, _Doc, _Sourced


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
