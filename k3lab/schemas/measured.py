"""Schemas of the measurements under ``data/measured/<machine>/``: the CSV tables, sglang's
``bench_serving`` JSONL and the ``*.meta.json`` beside every measurement.

The sglang transcripts (JSON documents written by ``benchmarks/sglang_*.py``) are in
:mod:`.transcripts`. A live run's fresh files are checked by the same schemas.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from .files import JsonFile, Lines, Table, closed, not_above

PosInt = Annotated[int, Field(strict=True, gt=0)]
NonNegInt = Annotated[int, Field(strict=True, ge=0)]
Pos = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
NonNeg = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
Share = Annotated[float, Field(strict=True, ge=0, le=1, allow_inf_nan=False)]
Text = Annotated[str, Field(strict=True, min_length=1)]
DATE = r"^\d{4}-\d{2}-\d{2}$"
UTC = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
Date = Annotated[str, Field(strict=True, pattern=DATE)]
Utc = Annotated[str, Field(strict=True, pattern=UTC)]
LoadAverage = Annotated[list[NonNeg], Field(min_length=3, max_length=3)]
Rounds = Annotated[str, Field(strict=True, pattern=r"^\d+/\d+$")]


# --------------------------------------------------------------------------- *.meta.json


@closed
class MachineInfo(TypedDict):
    cores: PosInt
    cpu: Text
    kind: Text
    platform: Text


@closed
class MetaDoc(TypedDict, total=False):
    """What every benchmark writes beside its measurement (each writes a subset): the
    command (required), a date (``date`` or ``date_utc``), the machine, versions, load."""

    command: Text
    date: Date
    date_utc: Utc
    started_utc: Utc
    what: Text
    note: Text
    notes: Text
    machine: Text | MachineInfo
    cpu: Text
    cpu_count: PosInt
    cpus: PosInt
    threads: PosInt
    torch_threads: PosInt
    device: Text
    gpu: Text
    cuda: Text
    platform: Text
    python: Text
    torch: Text
    transformers: Text
    sglang: Text
    sglang_in_parent: Text
    sglang_on_path: Text | None
    sglang_releases: list[Text]
    environment: Text
    versions: dict[str, Text]
    model: Text
    bench_command: Text
    quantization_config: Text
    outputs: list[Text]
    builds: PosInt
    load_average_at_start: LoadAverage
    load_average_at_end: LoadAverage
    load_average_after_timing: LoadAverage
    wall_time_s: Pos
    wall_time_s_added_layout: Pos
    wall_seconds_per_release: dict[str, Pos]
    wall_seconds_total: Pos


class Meta(JsonFile):
    """A ``*.meta.json``: machine, versions, date and the command that produced the data."""

    schema = MetaDoc

    @classmethod
    def check(cls, doc):
        if "command" not in doc:
            raise ValueError("command: required (the command that produced the measurement)")
        if "date" not in doc and "date_utc" not in doc:
            raise ValueError("date: required (date or date_utc)")

    @classmethod
    def required(cls):
        return ["command"]


# --------------------------------------------------------------------------- attention_heads.csv


class AttentionHeadsRow(TypedDict):
    seq_len: PosInt
    heads_real: PosInt
    heads_padded: PosInt
    repeats: PosInt
    t_real_median_s: Pos
    t_padded_median_s: Pos
    t_real_min_s: Pos
    t_padded_min_s: Pos
    t_pad_copy_median_s: NonNeg
    ratio_measured: Pos
    ratio_min: Pos
    ratio_flops: Pos
    ratio_flops_plus_copy: Pos
    gflop_s_real: Pos
    gflop_s_padded_useful: Pos
    device: Text
    dtype: Text


class AttentionHeads(Table):
    """``benchmarks/attention_heads.py`` (:mod:`k3lab.live.kernel_timing`): one row per
    sequence length, ascending; padded heads >= real heads; a minimum never above its median."""

    row = AttentionHeadsRow

    @classmethod
    def check(cls, rows):
        last = 0
        for n, r in rows:
            if r["seq_len"] <= last:
                raise ValueError(f"line {n}: seq_len: {r['seq_len']} after {last}: lengths must ascend, each once")
            last = r["seq_len"]
            if r["heads_padded"] < r["heads_real"]:
                raise ValueError(f"line {n}: heads_padded: {r['heads_padded']} < heads_real {r['heads_real']}")
            not_above(n, r, ("t_real_min_s", "t_real_median_s"), ("t_padded_min_s", "t_padded_median_s"))


# --------------------------------------------------------------------------- topk_renorm*.csv

#: the k cases of ``benchmarks/topk_renorm.py``, in its order (finding 2 reads the first four
#: as k = 1, 20, 50, 1024)
TOPK_K_CASES = ("1", "20", "50", "1024", "20 mixed with unrestricted")


class TopkRenormRow(TypedDict):
    k: Text
    rows: PosInt
    vocab: PosInt
    dtype: Text
    repeats: PosInt
    k3lab_s: Pos
    sort_fix_s: Pos
    rank_mask_s: Pos
    speedup_vs_sort_fix: Pos
    speedup_vs_rank_mask: Pos
    same_kept_set_as_sort_fix: bool
    max_abs_diff_vs_sort_fix: NonNeg
    rows_differing_from_rank_mask: NonNegInt
    impl: Text
    topk_s: Pos
    zeros_like_s: Pos
    k3lab_over_rank_mask: Pos
    k3lab_over_sort_fix: Pos
    topk_over_k3lab: Pos
    zeros_like_over_k3lab: Pos
    rounds_k3lab_faster_than_rank_mask: Rounds
    rounds_k3lab_faster_than_sort_fix: Rounds
    k3lab_plan: Text
    load_1min_before: NonNeg
    load_1min_after: NonNeg
    other_jobs_cores: NonNeg


def _rounds_ok(s: str) -> bool:
    won, of = map(int, s.split("/"))
    return 0 <= won <= of and of > 0


class TopkRenorm(Table):
    """``benchmarks/topk_renorm.py``: one row per k case, exactly :data:`TOPK_K_CASES` in order."""

    row = TopkRenormRow

    @classmethod
    def check(cls, rows):
        ks = tuple(r["k"] for _, r in rows)
        if ks != TOPK_K_CASES:
            n = next((n for (n, r), want in zip(rows, TOPK_K_CASES) if r["k"] != want), rows[-1][0])
            raise ValueError(f"line {n}: k: the cases must be {list(TOPK_K_CASES)} in this order, got {list(ks)}")
        for n, r in rows:
            not_above(n, r, ("rows_differing_from_rank_mask", "rows"))
            for c in ("rounds_k3lab_faster_than_rank_mask", "rounds_k3lab_faster_than_sort_fix"):
                if not _rounds_ok(r[c]):
                    raise ValueError(f"line {n}: {c}: {r[c]!r} is not 'won/of' with 0 <= won <= of, of > 0")


class TopkTiesRow(TypedDict):
    input: Text
    logit_std: Pos
    k: PosInt
    rows: PosInt
    vocab: PosInt
    share_rows_differ: Share
    rows_differ_observed: NonNegInt
    mean_extra_tokens_kept: NonNeg
    max_extra_tokens_kept: NonNegInt
    mean_total_variation: Share
    max_total_variation: Share


class TopkTies(Table):
    """The tie study of ``benchmarks/topk_renorm.py``: shares in [0, 1] that agree with their
    counts (``share_rows_differ`` = ``rows_differ_observed`` / ``rows``), means <= maxima."""

    row = TopkTiesRow

    @classmethod
    def check(cls, rows):
        for n, r in rows:
            not_above(n, r, ("rows_differ_observed", "rows"))
            if not math.isclose(r["share_rows_differ"], r["rows_differ_observed"] / r["rows"], rel_tol=1e-4, abs_tol=1e-6):
                raise ValueError(f"line {n}: share_rows_differ: {r['share_rows_differ']!r} != rows_differ_observed / rows "
                                 f"({r['rows_differ_observed']} / {r['rows']})")
            not_above(n, r, ("mean_extra_tokens_kept", "max_extra_tokens_kept"),
                      ("mean_total_variation", "max_total_variation"), rel=1e-9)


# --------------------------------------------------------------------------- bench_serving JSONL
# ``python -m sglang.bench_serving … --output-file F`` appends one JSON object per run (sglang
# 0.5.16 ``sglang/benchmark/serving.py``, the ``result`` dict written in ``benchmark``).

#: key → (python types, unit, minimum). Units: ms, s, tok/s, req/s, tokens, requests.
REQUIRED_KEYS: dict[str, tuple[tuple[type, ...], str, float]] = {
    "completed": ((int,), "requests", 0),
    "duration": ((int, float), "s", 0),
    "total_input_tokens": ((int,), "tokens", 0),
    "total_output_tokens": ((int,), "tokens", 0),
    "request_throughput": ((int, float), "req/s", 0),
    "input_throughput": ((int, float), "tok/s", 0),
    "output_throughput": ((int, float), "tok/s", 0),
    "total_throughput": ((int, float), "tok/s", 0),
    "mean_e2e_latency_ms": ((int, float), "ms", 0),
    "median_e2e_latency_ms": ((int, float), "ms", 0),
    "mean_ttft_ms": ((int, float), "ms", 0),
    "median_ttft_ms": ((int, float), "ms", 0),
    "p99_ttft_ms": ((int, float), "ms", 0),
    "mean_itl_ms": ((int, float), "ms", 0),
    "median_itl_ms": ((int, float), "ms", 0),
    "mean_tpot_ms": ((int, float), "ms", 0),
    "random_input_len": ((int,), "tokens", 0),
    "random_output_len": ((int,), "tokens", 0),
}
#: may be null (no --max-concurrency; no speculative decoding)
OPTIONAL_KEYS: dict[str, tuple[tuple[type, ...], str, float]] = {
    "max_concurrency": ((int,), "requests", 1),
    "concurrency": ((int, float), "requests", 0),
    "accept_length": ((int, float), "tokens/step", 0),
    "random_range_ratio": ((int, float), "ratio", 0),
}
#: relative tolerance of the unit cross-checks (bench_serving rounds nothing, but
#: ``duration`` is measured separately from the token counts)
UNIT_REL_TOL = 0.02


def _check_number(where: str, key: str, v, types, minimum) -> None:
    if isinstance(v, bool) or not isinstance(v, types):
        want = "an integer" if types == (int,) else "a number"
        raise ValueError(f"{where}: {key!r} must be {want}, got {v!r}")
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        raise ValueError(f"{where}: {key!r} must be finite, got {v!r}")
    if v < minimum:
        raise ValueError(f"{where}: {key!r} must be >= {minimum}, got {v!r}")


def validate_bench_record(rec, where: str = "record") -> dict:
    """Check one bench_serving result object; returns it unchanged (ValueError otherwise)."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in rec]
    if missing:
        raise ValueError(f"{where}: missing key(s) {missing} (not a bench_serving result line?)")
    for k, (types, _unit, lo) in REQUIRED_KEYS.items():
        _check_number(where, k, rec[k], types, lo)
    for k, (types, _unit, lo) in OPTIONAL_KEYS.items():
        if rec.get(k) is not None:
            _check_number(where, k, rec[k], types, lo)
    rate = rec.get("request_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0):
        raise ValueError(f"{where}: 'request_rate' must be a positive number or Infinity, got {rate!r}")
    if rec["completed"] == 0:
        raise ValueError(f"{where}: no request completed (completed = 0): the run failed")
    dur = rec["duration"]
    if dur <= 0:
        raise ValueError(f"{where}: 'duration' must be positive seconds, got {dur!r}")
    # units must agree: tok/s = tokens / s, req/s = requests / s
    for key, num in (("output_throughput", "total_output_tokens"),
                     ("input_throughput", "total_input_tokens"),
                     ("request_throughput", "completed")):
        expect = rec[num] / dur
        if not math.isclose(rec[key], expect, rel_tol=UNIT_REL_TOL, abs_tol=1e-9):
            raise ValueError(f"{where}: units do not match: {key!r} = {rec[key]!r} but "
                             f"{num!r} / 'duration' = {expect:.6g} per second")
    tot = rec["output_throughput"] + rec["input_throughput"]
    if not math.isclose(rec["total_throughput"], tot, rel_tol=UNIT_REL_TOL, abs_tol=1e-9):
        raise ValueError(f"{where}: units do not match: 'total_throughput' {rec['total_throughput']!r} "
                         f"!= input + output throughput {tot:.6g} tok/s")
    # ms vs s: a request cannot take longer than the run, nor its first token longer than it
    if rec["mean_e2e_latency_ms"] > dur * 1000 * (1 + UNIT_REL_TOL):
        raise ValueError(f"{where}: units do not match: mean_e2e_latency_ms "
                         f"{rec['mean_e2e_latency_ms']!r} ms exceeds the run's duration "
                         f"{dur!r} s (a latency in seconds, or a duration in ms?)")
    if rec["mean_ttft_ms"] > rec["mean_e2e_latency_ms"] * (1 + UNIT_REL_TOL):
        raise ValueError(f"{where}: units do not match: mean_ttft_ms exceeds mean_e2e_latency_ms")
    if rec["p99_ttft_ms"] > dur * 1000 * (1 + UNIT_REL_TOL):
        raise ValueError(f"{where}: units do not match: p99_ttft_ms {rec['p99_ttft_ms']!r} ms exceeds "
                         f"the run's duration {dur!r} s")
    if rec["median_ttft_ms"] > rec["p99_ttft_ms"] * (1 + UNIT_REL_TOL):
        raise ValueError(f"{where}: median_ttft_ms {rec['median_ttft_ms']!r} exceeds p99_ttft_ms "
                         f"{rec['p99_ttft_ms']!r}: not one run's percentiles")
    # the random datasets (random, random-ids) draw each output length at most random_output_len
    cap = rec["completed"] * rec["random_output_len"]
    if str(rec.get("dataset_name", "")).startswith("random") and rec["total_output_tokens"] > cap * (1 + UNIT_REL_TOL):
        raise ValueError(f"{where}: total_output_tokens {rec['total_output_tokens']:,} exceeds completed × "
                         f"random_output_len = {cap:,}: the counts are not from this run")
    return rec


class BenchServing(Lines):
    """sglang's ``bench_serving --output-file`` JSONL: the keys k3lab reads
    (:data:`REQUIRED_KEYS`, :data:`OPTIONAL_KEYS`) typed, signed and cross-checked for units.

    Two deliberate allowances, both sglang's own: ``request_rate`` may be ``Infinity`` (its
    default ``--request-rate inf``, which Python's ``json.dumps`` writes as the non-standard
    token ``Infinity``; only +Infinity, only that key), and keys k3lab does not read are
    kept (bench_serving adds keys between releases: std/p90/p95 percentiles, server info),
    checked only for finite numbers; they never reach a result."""

    allow_infinity = ("request_rate",)
    empty = "no bench_serving result lines"

    @classmethod
    def check_record(cls, rec, where: str) -> dict:
        return validate_bench_record(rec, where)

    @classmethod
    def required(cls):
        return list(REQUIRED_KEYS)
