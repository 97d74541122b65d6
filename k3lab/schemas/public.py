"""Schema of ``public_measurements.yaml``: third-party Kimi K3 serving figures, as published.

Every entry is one number from one public source (a GitHub issue, pull request, doc, config or
blog), with the verbatim quote, the date, and every setting the source states. A setting the
source does not state is ``null``; where a reading had to be chosen (or could not be), the
field's name appears under ``ambiguous`` with the readings. What the number is per
(``scope``) and what it measures (``metric``) are required: a figure without them is refused.
A figure later withdrawn or superseded stays, with ``status`` saying so and ``status_note`` why.
Start-up memory figures go to ``public_startup_logs.yaml`` (notebook 01), not here.

Whether the serving model may use a figure is decided by rules in
:mod:`k3lab.serving.observations` (layout, workload, metric and scope it can normalise),
plus ``use: false`` with ``why`` for what those rules cannot see (a prefix-reusing workload, a
disaggregated deployment, a duplicate of another entry). Every ``use: false`` names its rule
in ``why_kind`` (:data:`WHY_KINDS`); ``tests/test_public_measurements.py`` checks each kind
against the fields that can show it. An entry whose workload, metric or scope is ambiguous is
used only with a ``reading``: the one the study takes, and the evidence for it (e.g. a second
source stating the lengths).

sglang switches that change what a rank holds are recorded per entry in ``sglang_env``, read
from the source's recipe, launch command or image (never from a text match), with the
evidence in ``sglang_env_evidence``: ``"1"`` on, ``"0"`` off, ``null`` the source does not let
one tell. Only sglang entries carry it (the switches are sglang's).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from .base import DATE, PositiveInt, Text, _Doc, _Sourced

ENGINES = ("sglang", "vllm", "atom", "tokenspeed", "trtllm", "dynamo", "other")
METRICS = ("output_tok_s", "total_tok_s", "input_tok_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_s",
           "prefill_tok_s", "accept_length", "tok_s_per_user", "usd_per_million_tokens")
SCOPES = ("deployment", "per_node", "per_gpu", "per_stream")
SPEC_ALGORITHMS = ("none", "dspark", "dflash", "eagle", "eagle3", "mtp", "ngram")
STATUSES = ("current", "withdrawn", "superseded")
#: why a figure is set aside (``use: false``), one rule each:
#: ``duplicate`` the same figure as ``duplicate_of`` (restated, collected twice, or derived from it);
#: ``prefix_reuse`` prompts share a prefix the cache serves; ``trace_workload`` replayed agentic or
#: chat traces; ``variable_workload`` prompts or outputs not of fixed length (natural text,
#: datasets, ``--random-range-ratio`` below 1); ``disaggregated`` prefill/decode on separate
#: workers; ``requantised`` a checkpoint other than the official MXFP4 one; ``kernel_variant`` an
#: opt-in or emulated kernel path instead of the default; ``broken_run`` a bug, a misconfiguration,
#: a cold run or a figure its author disowns; ``harness_artifact`` what the number measures is the
#: harness (profiling overhead, a clock that is not the metric, a rescaled estimate);
#: ``offline_benchmark`` a fixed-batch run instead of online serving; ``held_out`` a figure of the repository
#: the study found last, kept out of the fit on purpose so that the model's error on a source it never saw can be
#: reported (``k3lab.serving.calibration.held_out_errors``)
WHY_KINDS = ("duplicate", "prefix_reuse", "trace_workload", "variable_workload", "disaggregated", "requantised",
             "kernel_variant", "broken_run", "harness_artifact", "offline_benchmark", "held_out")
#: the benchmark client a figure came from, as the source states it: sglang's ``python -m sglang.bench_serving``,
#: vLLM's ``vllm bench serve`` / ``benchmark_serving.py``, ATOM's ``atom.benchmarks.benchmark_serving`` (a copy of
#: vLLM's), InferenceX's harness, guidellm, evalscope, or the source's own driver (``custom``)
HARNESSES = ("sglang.bench_serving", "vllm bench serve", "atom benchmark_serving", "inferencex", "guidellm", "evalscope",
             "custom")
#: how requests arrive: ``closed_loop`` c clients started together, each sending its next request when its last
#: ends (bench_serving's ``--max-concurrency c --request-rate inf``); ``ramped`` the same clients started one by one;
#: ``rate`` an open loop at a request rate; ``burst`` every request at once, no concurrency cap
ARRIVALS = ("closed_loop", "ramped", "rate", "burst")
#: prompt and output lengths: ``fixed`` exact (``--random-range-ratio 1``); ``uniform`` random around the stated
#: lengths (``range_ratio`` below 1); ``dataset`` natural text
LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "dataset")
#: sglang environment switches ``sglang_env`` may record (those the serving model distinguishes)
SGLANG_ENV = ("SGLANG_AITER_K3_OPT",)
#: fields an ``ambiguous`` note may name
AMBIGUOUS_FIELDS = ("gpu", "num_gpus", "nodes", "tp", "ep", "dp", "pp", "dcp", "engine", "engine_version",
                    "attention_backend", "moe_backend", "spec", "input_len", "output_len", "concurrency",
                    "num_prompts", "kv_dtype", "mem_fraction", "dataset", "metric", "statistic", "scope", "value",
                    "date", "status", "model", "settings")


def _optional_date(v):
    """A date (YYYY, YYYY-MM or YYYY-MM-DD) or None, where a stored version carries none."""
    if v is not None and not DATE.match(v):
        raise ValueError(f"date must be YYYY, YYYY-MM or YYYY-MM-DD, got {v!r}")
    return v


class PublicSource(_Doc):
    """A public source: what it is, where, and the date of the version the figures come from
    (``null`` only where the stored version carries no date, said in ``title``)."""

    title: Text
    url: Text
    repo: str | None = None
    kind: Literal["issue", "pull_request", "doc", "config", "blog", "recipe", "commit"]
    date: str | None

    _date = field_validator("date")(classmethod(lambda cls, v: _optional_date(v)))

    @field_validator("url")
    @classmethod
    def _url(cls, v):
        if not v.startswith("https://"):
            raise ValueError(f"url must be an https:// address, got {v!r}")
        return v


class SpecSetting(_Doc):
    """Speculative decoding as the source states it: the algorithm (``null``: the source does not
    say whether a draft ran), draft tokens per step and the acceptance length (tokens emitted
    per verify step, ≥ 1)."""

    algorithm: Literal["none", "dspark", "dflash", "eagle", "eagle3", "mtp", "ngram"] | None
    draft_tokens: PositiveInt | None = None
    accept_length: Annotated[float, Field(strict=False, ge=1, allow_inf_nan=False)] | None = None
    #: ``simulated``: the engine was told the acceptance (SGLANG_SIMULATE_ACC_LEN, a forced
    #: length); ``measured``: what the draft achieved on the workload
    acceptance: Literal["measured", "simulated"] | None = None

    @model_validator(mode="after")
    def _none_has_no_draft(self):
        if self.algorithm == "none" and (self.draft_tokens is not None or self.accept_length is not None):
            raise ValueError("spec algorithm 'none' takes no draft_tokens or accept_length")
        return self


class Measurement(_Doc):
    """One published number and its settings (see the module docstring)."""

    id: Text
    source: Text
    date: str | None
    author: str | None = None
    quote: Annotated[str, Field(strict=True, min_length=8)]
    status: Literal["current", "withdrawn", "superseded"]
    status_note: str | None = None
    model: Text
    gpu: str | None
    num_gpus: PositiveInt | None
    nodes: PositiveInt | None = None
    tp: PositiveInt | None = None
    ep: PositiveInt | None = None
    dp: PositiveInt | None = None
    pp: PositiveInt | None = None
    dcp: PositiveInt | None = None
    engine: Literal[ENGINES] | None
    engine_version: str | None = None
    attention_backend: str | None = None
    moe_backend: str | None = None
    #: switch name → "1" (on), "0" (off) or None (the source does not let one tell)
    sglang_env: dict[Literal[SGLANG_ENV], Literal["0", "1"] | None] = {}
    sglang_env_evidence: str | None = None
    spec: SpecSetting
    input_len: PositiveInt | None = None
    output_len: PositiveInt | None = None
    concurrency: PositiveInt | None = None
    num_prompts: PositiveInt | None = None
    kv_dtype: Literal["bf16", "fp8", "fp8_e4m3", "fp4"] | None = None
    mem_fraction: Annotated[float, Field(strict=False, gt=0, le=1, allow_inf_nan=False)] | None = None
    dataset: str | None = None
    #: the harness (:data:`HARNESSES`), the arrival process (:data:`ARRIVALS`) and the length distribution
    #: (:data:`LENGTH_DISTRIBUTIONS`, with ``range_ratio`` where uniform) as the source states them; null: not stated
    harness: Literal[HARNESSES] | None = None
    arrival: Literal[ARRIVALS] | None = None
    length_distribution: Literal[LENGTH_DISTRIBUTIONS] | None = None
    range_ratio: Annotated[float, Field(strict=False, gt=0, lt=1, allow_inf_nan=False)] | None = None
    #: the engine's admission as the run set or reported it: requests in flight at most (sglang
    #: ``--max-running-requests`` or the limit its log prints; vLLM / ATOM / TokenSpeed ``--max-num-seqs``) and
    #: tokens one forward pass takes (sglang ``--chunked-prefill-size``, vLLM ``--max-num-batched-tokens``); null:
    #: the engine's default
    max_running_requests: PositiveInt | None = None
    max_batched_tokens: PositiveInt | None = None
    metric: Literal["output_tok_s", "total_tok_s", "input_tok_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_s",
                    "prefill_tok_s", "accept_length", "tok_s_per_user", "usd_per_million_tokens"]
    statistic: Literal["mean", "median", "p50", "p90", "p95", "p99", "max", "min"] | None = None
    scope: Literal["deployment", "per_node", "per_gpu", "per_stream"]
    value: Annotated[float, Field(strict=False, gt=0, allow_inf_nan=False)]
    ambiguous: dict[str, Text] = {}
    note: str | None = None
    use: bool = True
    why: str | None = None
    why_kind: Literal[WHY_KINDS] | None = None
    reading: str | None = None
    duplicate_of: str | None = None

    _date = field_validator("date")(classmethod(lambda cls, v: _optional_date(v)))

    @field_validator("model")
    @classmethod
    def _k3(cls, v):
        if not v.lower().startswith("kimi-k3"):
            raise ValueError(f"only Kimi K3 measurements belong here, got model {v!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self):
        unknown = sorted(set(self.ambiguous) - set(AMBIGUOUS_FIELDS))
        if unknown:
            raise ValueError(f"{self.id}: ambiguous names unknown field(s) {unknown}")
        if self.status != "current" and not self.status_note:
            raise ValueError(f"{self.id}: a {self.status} figure needs a status_note saying who withdrew it and why")
        if not self.use and not (self.why and self.why_kind):
            raise ValueError(f"{self.id}: use: false needs a why and a why_kind (one of {', '.join(WHY_KINDS)})")
        if self.use and (self.why or self.why_kind):
            raise ValueError(f"{self.id}: why / why_kind belong to use: false entries only")
        if self.duplicate_of is not None and self.use:
            raise ValueError(f"{self.id}: a duplicate (duplicate_of {self.duplicate_of}) must have use: false")
        if (self.duplicate_of is not None) != (self.why_kind == "duplicate"):
            raise ValueError(f"{self.id}: why_kind duplicate and duplicate_of go together")
        if self.sglang_env and self.engine != "sglang":
            raise ValueError(f"{self.id}: sglang_env is for sglang entries (engine is {self.engine})")
        if (self.length_distribution == "uniform") != (self.range_ratio is not None):
            raise ValueError(f"{self.id}: range_ratio goes with length_distribution uniform (and only with it)")
        if bool(self.sglang_env) != bool(self.sglang_env_evidence):
            raise ValueError(f"{self.id}: sglang_env and sglang_env_evidence go together")
        return self


class PublicMeasurements(_Sourced):
    """``public_measurements.yaml``: ``sources`` (:class:`PublicSource`), ``measurements``."""

    sources: dict[str, PublicSource]
    measurements: list[Measurement]

    @model_validator(mode="after")
    def _ids_and_sources(self):
        seen = set()
        for i, m in enumerate(self.measurements):
            if m.id in seen:
                raise ValueError(f"measurements.{i}.id: {m.id!r} appears twice")
            seen.add(m.id)
            if m.source not in self.sources:
                raise ValueError(f"measurements.{i}.source: unknown source {m.source!r}")
        for i, m in enumerate(self.measurements):
            if m.duplicate_of is not None and m.duplicate_of not in seen:
                raise ValueError(f"measurements.{i}.duplicate_of: unknown id {m.duplicate_of!r}")
        return self
