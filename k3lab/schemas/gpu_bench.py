"""Schemas of the GPU benchmark's files (``benchmarks/gpu/run.py``, :mod:`k3lab.live.gpu_bench`)
in ``data/measured/<kind>/``, and where they are: one set per device kind, found, not listed.

Files: ``gpu_bench_prefill.csv`` (12 vs padded 16 heads, MLA prefill), ``gpu_bench_decode.csv``
(the same for absorbed decode), ``gpu_bench_renorm.csv`` (top-k renorm contenders),
``gpu_bench_kernels.csv`` (which kernel ran, refused or was skipped, and why) and
``gpu_bench.meta.json`` (device, driver, versions, date, the command). A quantity the device
does not have (host syncs on a CPU) or that a row cannot have (a floor compared with nothing)
is written ``n/a`` and read as None. Times in seconds, bandwidth in GB/s (10^9 bytes), memory
in GiB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from .files import JsonFile, Table, closed, not_above
from .measured import NonNeg, NonNegInt, Pos, PosInt, Text, Utc

Ratio = Pos
Version = Text | None
NotAvailable = None  # written "n/a"

META = "gpu_bench.meta.json"
SECTIONS = ("prefill", "decode", "renorm")
CSV = {"prefill": "gpu_bench_prefill.csv", "decode": "gpu_bench_decode.csv", "renorm": "gpu_bench_renorm.csv",
       "kernels": "gpu_bench_kernels.csv"}
STATUSES = ("ran", "refused", "skipped")


class PrefillRow(TypedDict):
    seq_len: PosInt
    kernel: Text
    dtype: Text
    heads_real: PosInt
    heads_padded: PosInt
    v_head_dim_run: PosInt
    repeats: PosInt
    t_12_median_s: Pos
    t_12_padded_median_s: Pos
    t_16_native_median_s: Pos
    t_pad_copies_median_s: Pos
    ratio_padded_over_12: Ratio
    ratio_native_over_12: Ratio
    ratio_flops: Ratio
    ratio_flops_plus_copies: Ratio
    copies_share_of_padded: Pos
    max_abs_diff_sliced_vs_12: NonNeg
    sliced_equals_12: bool
    tflop_s_12: Pos
    device: Text


class DecodeRow(TypedDict):
    batch: PosInt
    context: PosInt
    kernel: Text
    dtype: Text
    heads_real: PosInt
    heads_padded: PosInt
    latent_dim: PosInt
    value_dim: PosInt
    v_head_dim_run: PosInt
    repeats: PosInt
    t_12_median_s: Pos
    t_12_padded_median_s: Pos
    t_16_native_median_s: Pos
    ratio_padded_over_12: Ratio
    ratio_native_over_12: Ratio
    kv_bytes: PosInt
    kv_gb_s_12: Pos
    max_abs_diff_sliced_vs_12: NonNeg
    sliced_equals_12: bool
    device: Text


class RenormRow(TypedDict):
    k: PosInt
    dtype: Text
    rows: PosInt
    vocab: PosInt
    contender: Text
    impl: Text
    repeats: PosInt
    warmups: NonNegInt
    median_s: Pos
    min_s: Pos
    ratio_to_k3lab_patch: Ratio
    host_syncs: NonNegInt | NotAvailable
    same_kept_set_as_sort_fix: bool | NotAvailable
    max_abs_diff_vs_sort_fix: NonNeg | NotAvailable
    device: Text


class KernelRow(TypedDict):
    section: Text
    kernel: Text
    status: Text
    reason: Text
    v_head_dim_run: PosInt | NotAvailable
    max_abs_diff_vs_reference: NonNeg | NotAvailable


def _heads_and_ratios(rows) -> None:
    """Shared by prefill and decode: padded heads above the real ones, ratios that agree with
    their times (to the CSV's 6 significant digits)."""
    for n, r in rows:
        if r["heads_padded"] <= r["heads_real"]:
            raise ValueError(f"line {n}: heads_padded: {r['heads_padded']} is not above heads_real {r['heads_real']}")
        for ratio, num in (("ratio_padded_over_12", "t_12_padded_median_s"), ("ratio_native_over_12", "t_16_native_median_s")):
            want = r[num] / r["t_12_median_s"]
            if abs(r[ratio] - want) > 1e-4 * want:
                raise ValueError(f"line {n}: {ratio}: {r[ratio]!r} != {num} / t_12_median_s ({want:.6g})")
        if r["sliced_equals_12"] and r["max_abs_diff_sliced_vs_12"] != 0:
            raise ValueError(f"line {n}: sliced_equals_12: True with max_abs_diff_sliced_vs_12 "
                             f"{r['max_abs_diff_sliced_vs_12']!r}")


class GpuPrefill(Table):
    """Section a: one row per (seq_len, kernel); the FLOP ratio is padded / real heads."""

    row = PrefillRow

    @classmethod
    def check(cls, rows):
        _heads_and_ratios(rows)
        for n, r in rows:
            want = r["heads_padded"] / r["heads_real"]
            if abs(r["ratio_flops"] - want) > 1e-5 * want:
                raise ValueError(f"line {n}: ratio_flops: {r['ratio_flops']!r} != heads_padded / heads_real ({want:.6g})")


class GpuDecode(Table):
    """Section b: one row per (batch, context, kernel)."""

    row = DecodeRow
    check = staticmethod(_heads_and_ratios)  # the rules of section a's head counts, nothing more


class GpuRenorm(Table):
    """Section c: one row per (dtype, k, contender); a minimum never above its median; k below the vocabulary."""

    row = RenormRow

    @classmethod
    def check(cls, rows):
        for n, r in rows:
            not_above(n, r, ("min_s", "median_s"))
            if r["k"] >= r["vocab"]:
                raise ValueError(f"line {n}: k: {r['k']} is not below vocab {r['vocab']}")


class GpuKernels(Table):
    """Which kernel ran, refused or was skipped per section, and why; only one that ran has a
    v head dim and a difference from the reference."""

    row = KernelRow

    @classmethod
    def check(cls, rows):
        for n, r in rows:
            if r["section"] not in SECTIONS:
                raise ValueError(f"line {n}: section: {r['section']!r} is not one of {list(SECTIONS)}")
            if r["status"] not in STATUSES:
                raise ValueError(f"line {n}: status: {r['status']!r} is not one of {list(STATUSES)}")
            if r["status"] != "ran" and r["max_abs_diff_vs_reference"] is not None:
                raise ValueError(f"line {n}: max_abs_diff_vs_reference: a kernel that {r['status']} has no result")


@closed
class SweepDoc(TypedDict):
    prefill_seq_lens: list[PosInt]
    decode_batches: list[PosInt]
    decode_contexts: list[PosInt]
    renorm_rows: PosInt
    renorm_vocab: PosInt
    renorm_ks: list[PosInt]
    renorm_dtypes: list[Text]
    repeats_prefill: PosInt
    repeats_decode: PosInt
    repeats_renorm: PosInt
    warmups: NonNegInt


@closed
class GpuBenchMetaDoc(TypedDict):
    command: Text
    cpu: Text
    cpu_count: PosInt
    cuda: Version
    cudnn: Version
    date_utc: Utc
    device: Text
    driver: Version
    flashinfer: Version
    gpu: Text | None
    gpu_capability: Text | None
    gpu_kind: Annotated[str, Field(strict=True, pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]
    gpu_memory_gib: Pos | None
    hip: Version
    outputs: list[Text]
    platform: Text
    python: Text
    quick: bool
    sections: list[Text]
    seed: NonNegInt
    sweep: SweepDoc
    sync_counting: Text
    timing: Text
    torch: Text
    torch_threads: PosInt
    transfers: Text
    triton: Version
    wall_time_s: Pos
    what: Text


class GpuBenchMeta(JsonFile):
    """``gpu_bench.meta.json``: every key present (None where the device has no such thing: a
    CPU has no GPU name or driver); sections known; a GPU run names its GPU."""

    schema = GpuBenchMetaDoc

    @classmethod
    def check(cls, doc):
        unknown = [s for s in doc["sections"] if s not in SECTIONS]
        if unknown or not doc["sections"]:
            raise ValueError(f"sections: {doc['sections']!r}: expected a non-empty subset of {list(SECTIONS)}")
        if doc["device"] != "cpu" and not doc["gpu"]:
            raise ValueError(f"gpu: a {doc['device']!r} run must name its GPU")
        want = sorted([CSV[s] for s in doc["sections"]] + [CSV["kernels"]])
        if sorted(doc["outputs"]) != want:
            raise ValueError(f"outputs: {doc['outputs']!r} != the files of its sections {want}")


SCHEMA_OF = {CSV["prefill"]: GpuPrefill, CSV["decode"]: GpuDecode, CSV["renorm"]: GpuRenorm,
             CSV["kernels"]: GpuKernels, META: GpuBenchMeta}


def committed(measured: Path, prefix: str = "measured") -> dict[str, tuple[str, type]]:
    """Every GPU-benchmark file under ``measured/<kind>/`` → ``{name: (path under data/, schema)}``
    for :data:`k3lab.data.SCHEMAS` (name ``gpu_bench_<part>@<kind>``)."""
    out = {}
    for meta in sorted(Path(measured).glob(f"*/{META}")):
        kind = meta.parent.name
        for fname, schema in SCHEMA_OF.items():
            if (meta.parent / fname).exists():
                part = "meta" if fname == META else fname.removeprefix("gpu_bench_").removesuffix(".csv")
                out[f"gpu_bench_{part}@{kind}"] = (f"{prefix}/{kind}/{fname}", schema)
    return out
