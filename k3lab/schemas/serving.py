"""Schemas of ``serving_model.yaml`` (the roofline's and the serving model's assumptions) and ``serving_fit.yaml`` (the committed fit)."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from .article import _DeploymentFields
from .base import Count, Finite, Fraction, NonNegative, NonNegativeInt, Num, Positive, PositiveInt, Text, _Doc, _Sourced


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


class UsualHarness(_Doc):
    """How an engine's own benchmark recipes load it (the reading of a figure that states none)."""

    arrival: Literal["closed_loop", "ramped", "rate", "burst"]
    lengths: Literal["fixed", "uniform", "dataset"]
    range_ratio: Fraction | None
    source: Text
    note: str | None = None


class EngineFacts(_Doc):
    """One serving engine's scheduler and admission defaults (``serving_model.yaml`` ``engines``)."""

    scheduler: Literal["prefill_first", "mixed"]
    max_batched_tokens: PositiveInt | None
    max_running_requests: PositiveInt | None
    max_running_requests_spec: PositiveInt | None
    mem_fraction: Fraction
    source: Text
    usual_harness: UsualHarness


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
    engines: dict[str, EngineFacts]
    refused_gpus: dict[str, Text] = {}

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

#: the validation splits (k3lab.serving.calibration.SPLITS)
SPLITS = ("leave_one_repository_out", "leave_one_engine_out", "leave_one_harness_out", "time_split")
#: a share of points, 0 to 1
Share = Annotated[float, Field(strict=True, ge=0, le=1, allow_inf_nan=False)]


class FitParams(_Doc):
    """One family's fitted parameters (:class:`k3lab.serving.model.FamilyParams`): fractions of
    peak HBM bandwidth and FLOP/s kernels achieve, and fixed costs (µs per layer per pass, ms
    per request)."""

    hbm_efficiency: Fraction
    flop_efficiency: Fraction
    layer_overhead_us: NonNegative
    kv_efficiency: Fraction
    prefill_attention_efficiency: Fraction
    fallback_attention_efficiency: Fraction
    request_overhead_ms: NonNegative
    scale_out_us: NonNegative
    token_us: NonNegative
    verify_row_us: NonNegative
    pipeline_us: NonNegative


class _OutOfSample(_Doc):
    """A public figure the fit did not see: what it is, its value and the model's log error."""

    id: Text
    kind: Literal["output_tok_s", "tpot_ms", "itl_ms", "ttft_ms"]
    metric: Literal["decode", "ttft", "dspark"]
    published: Positive
    log_error: Finite


class FitValidationRow(_OutOfSample):
    source: Text
    gpu: Text
    split: Literal[SPLITS]
    predicted_out_of_sample: Positive
    #: the refit lacked a cross-node cost the figure needs (k3lab.serving.calibration.cross_node_gaps):
    #: recorded, never part of a band
    extrapolated: bool


class FitBand(_Doc):
    """One metric's band: the log factor covering 90% of out-of-sample points on each split
    (None without enough points), whether it is validated, why not, and per split the points
    and the share inside."""

    band_log: NonNegative | None
    validated: bool
    why_not: str
    points: dict[Literal[SPLITS], NonNegativeInt]
    coverage: dict[Literal[SPLITS], Share | None]

    @model_validator(mode="after")
    def _validated_has_band(self):
        if self.validated and self.band_log is None:
            raise ValueError("a validated metric needs a band_log")
        if not self.validated and not self.why_not:
            raise ValueError("a metric that is not validated needs why_not")
        return self


class FitFamily(_Doc):
    params: FitParams
    fitted_parameters: list[Text]
    sources: PositiveInt
    calibration_points: PositiveInt
    time_split_date: str | None
    bands: dict[Literal["decode", "ttft", "dspark"], FitBand]


class FitObservation(_Doc):
    id: Text
    source: Text
    origin: Text
    date: str | None
    family: Text
    gpu: Text
    engine: Text
    harness: Text
    regime: Literal["cohort", "staggered", "mixed"]
    admitted: PositiveInt
    kv_dtype: Literal["bf16", "fp8"]
    tp: PositiveInt
    pp: PositiveInt
    dcp: PositiveInt
    ep: bool
    block: PositiveInt | None
    build: str
    layout: Text
    variants: list[Text]
    prefill_attention: Literal["fast", "fallback"]
    input_len: PositiveInt
    output_len: PositiveInt
    concurrency: PositiveInt
    spec: Text
    accept_len: Annotated[float, Field(strict=True, ge=1, allow_inf_nan=False)]
    kind: Text
    metric: Literal["decode", "ttft", "dspark"]
    value: Positive
    fitted: Positive
    normalisation: str
    spans_nodes: bool


class FitAicRow(_Doc):
    id: Text
    kind: Text
    published: Positive
    k3lab: Positive
    aiconfigurator: Positive | None
    note: str


class FitAcceptLength(_Doc):
    id: Text
    family: str | None
    value: Annotated[float, Field(strict=True, ge=1, allow_inf_nan=False)]


#: the key of ``generated`` that holds :func:`fit_digest` of the document
FIT_DIGEST = "content_sha256"


def fit_digest(doc: dict) -> str:
    """sha256 of a generated document's content — everything but the seal itself
    (``generated.content_sha256``), the ``generated`` provenance (date, command, scipy...)
    included — as sorted, compact JSON: ``make serving-fit`` records it, and any value edited by
    hand afterwards no longer matches it (a comment is no value and may change)."""
    gen = doc.get("generated")
    body = {**doc, "generated": {k: v for k, v in gen.items() if k != FIT_DIGEST}} if isinstance(gen, dict) else doc
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


class _Sealed(_Doc):
    """A document ``make serving-fit`` writes, sealed by :func:`fit_digest` of its own content
    (``generated.content_sha256``): a document edited by hand is refused in one line."""

    @model_validator(mode="wrap")
    @classmethod
    def _as_written(cls, doc, handler):
        out = handler(doc)  # a value the schema refuses is named by its own field first
        if out.generated.get(FIT_DIGEST) != fit_digest(doc):
            raise ValueError(f"generated.{FIT_DIGEST}: the {cls.WHAT} is not what `make serving-fit` wrote (edited "
                             f"by hand, or written without its seal); run `make serving-fit`")
        return out


class ServingFit(_Sealed):
    """``serving_fit.yaml``: the serving model's fitted parameters and validation, generated
    by ``make serving-fit`` from the files named in ``inputs`` (sha256 of their parsed values in a
    canonical form; ``input_bytes``: of their bytes, the fast check), sealed (:class:`_Sealed`): the
    inputs' hashes show a stale fit, the seal a fit edited by hand."""

    WHAT: ClassVar[str] = "fit"
    generated: dict[str, str]
    inputs: dict[str, str]
    input_bytes: dict[str, str]
    families: dict[str, FitFamily]
    observations: list[FitObservation]
    accept_lengths: list[FitAcceptLength]


class FitHeldOutRow(_OutOfSample):
    """The held-out repository's figure, predicted with ``params``'s fit (its family's, or a proxy)."""

    family: Text
    params: Text
    predicted: Positive


class ServingValidation(_Sealed):
    """``serving_validation.yaml``: the serving model's out-of-sample predictions per family and
    split, aiconfigurator beside it, and the held-out repository, generated with ``serving_fit.yaml``
    and sealed as it is (:class:`_Sealed`)."""

    WHAT: ClassVar[str] = "validation"

    generated: dict[str, str]
    inputs: dict[str, str]
    input_bytes: dict[str, str]
    validation: dict[str, list[FitValidationRow]]
    aiconfigurator: list[FitAicRow]
    held_out: list[FitHeldOutRow]


# --------------------------------------------------------------------------- data/predictions/*.yaml

#: model outputs a prediction on record states
PREDICTED_KINDS = ("output_tok_s", "tpot_ms", "ttft_ms")


class PredictedValue(_Doc):
    """One output of a prediction: the central value and its band (``low``/``high`` null where the
    metric was not validated), and whether the question lay inside the validated domain."""

    value: Positive
    low: Positive | None
    high: Positive | None
    in_domain: bool

    @model_validator(mode="after")
    def _band(self):
        if (self.low is None) != (self.high is None):
            raise ValueError("low and high go together (both null where the metric is not validated)")
        if self.low is not None and not self.low <= self.value <= self.high:
            raise ValueError(f"value {self.value} is outside its band [{self.low}, {self.high}]")
        return self


class PredictedQuestion(_Doc):
    """The deployment and workload a prediction answers (``predict``'s inputs)."""

    layout: Text
    variants: list[Text]
    engine: Text
    arrival: Literal["closed_loop", "ramped", "rate", "burst"]
    lengths: Literal["fixed", "uniform", "dataset"]
    input_len: PositiveInt
    output_len: PositiveInt
    concurrency: PositiveInt
    spec: Literal["none", "dspark"]
    accept_len: Annotated[float, Field(strict=True, ge=1, allow_inf_nan=False)]
    kv_dtype: Literal["bf16", "fp8"]


class Prediction(_Doc):
    id: Text
    why: Text
    question: PredictedQuestion
    values: dict[Literal[PREDICTED_KINDS], PredictedValue]
    #: public figures that already matched the question when it was recorded (none: no public run had measured it)
    matched_at_record: list[Text]


class Predictions(_Doc):
    """``data/predictions/<date>-model-v<N>.yaml``: predictions for deployments no public run had
    measured, dated and never edited (``k3lab.serving.score`` scores them against public figures
    added later; a new model writes a new file)."""

    made: dict[Literal["date", "model_version", "commit", "fit_sha256", "command"], Text]
    predictions: list[Prediction]

    @model_validator(mode="after")
    def _ids(self):
        ids = [p.id for p in self.predictions]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"prediction id(s) twice: {twice}")
        return self


#: the registry of the recordings' sha256, beside them in ``data/predictions/``
PREDICTION_SEALS = "SHA256SUMS.yaml"
_SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
_RECORDING = Annotated[str, Field(pattern=r"^[0-9A-Za-z][0-9A-Za-z._-]*\.yaml$")]


class PredictionSeals(_Doc):
    """``data/predictions/SHA256SUMS.yaml``: the sha256 of each recording's bytes as
    ``make record-predictions`` wrote it (``recorded``: file name → sha256 of its bytes): a recording edited
    since is refused (predictions on record are never edited)."""

    algorithm: Literal["sha256"]  # of the file's bytes, as ``sha256sum`` prints it
    recorded: dict[_RECORDING, _SHA256]

