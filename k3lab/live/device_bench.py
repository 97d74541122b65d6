"""The primitives of a benchmark on one device: find it, name it, time calls on it, count the
host syncs a call costs, describe it, and record which kernels ran.

Used by :mod:`k3lab.live.gpu_bench` (``benchmarks/gpu/run.py``). Timing: CUDA events on a GPU
(``torch.cuda.Event``; the interval includes any time the GPU waits for the host, so a call
that syncs pays for it), ``time.perf_counter`` on a CPU. Calls run in rounds, each round
starting one contender later, after warm-ups; medians are reported. Host syncs: one extra,
untimed call under ``torch.cuda.set_sync_debug_mode("warn")``, its warnings counted; a CPU has
no host-device boundary, so there the count is ``None`` (written ``n/a``).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shutil
import statistics
import subprocess
import time
import warnings
from importlib.metadata import PackageNotFoundError, version

import torch

#: how a CSV writes a quantity that does not exist on this device (read back as None)
NOT_AVAILABLE = "n/a"
STATUSES = ("ran", "refused", "skipped")
SYNC_METHOD = ("torch.cuda.set_sync_debug_mode('warn') over one untimed call after the warm-ups; the "
               "warnings counted are the syncs torch instruments (.item(), bool()/int() of a tensor, "
               "nonzero, device-to-host copies, explicit synchronize)")


class DeviceUnavailable(ValueError):
    """The device asked for is not here (one line, said to the user)."""


def resolve(name: str) -> torch.device:
    """``"cpu"`` or ``"cuda"`` → a torch.device; DeviceUnavailable when torch sees no such device."""
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailable(f"--device cuda: torch {torch.__version__} sees no CUDA device on this machine "
                                    "(run with --device cpu, or on a machine with a GPU)")
        return torch.device("cuda", torch.cuda.current_device())
    raise DeviceUnavailable(f"--device {name!r}: expected 'cpu' or 'cuda'")


def slug(text: str) -> str:
    """``"NVIDIA H200"`` → ``"nvidia-h200"``: lower case, runs of other characters → one ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def kind(device: torch.device) -> str:
    """The folder under ``data/measured/`` for this device: the GPU's name as a slug
    (``nvidia-h200``), or ``cpu-<cores>core`` as the CPU benchmarks name theirs."""
    if device.type == "cuda":
        return slug(torch.cuda.get_device_name(device))
    return f"cpu-{os.cpu_count()}core"


def _package(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _driver() -> str | None:
    """The NVIDIA driver version from ``nvidia-smi`` (ROCm: the HIP runtime version), or None."""
    if torch.version.hip:
        return f"hip {torch.version.hip}"
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def describe(device: torch.device) -> dict:
    """The device and software versions (keys of :class:`k3lab.schemas.gpu_bench.GpuBenchMetaDoc`)."""
    gpu = device.type == "cuda"
    props = torch.cuda.get_device_properties(device) if gpu else None
    cudnn = torch.backends.cudnn.version() if gpu and torch.backends.cudnn.is_available() else None
    return {"device": device.type, "gpu_kind": kind(device),
            "gpu": torch.cuda.get_device_name(device) if gpu else None,
            "gpu_memory_gib": round(props.total_memory / 2**30, 2) if gpu else None,
            "gpu_capability": f"{props.major}.{props.minor}" if gpu else None,
            "driver": _driver() if gpu else None, "cuda": torch.version.cuda if gpu else None,
            "hip": torch.version.hip if gpu else None, "cudnn": str(cudnn) if cudnn else None,
            "torch": torch.__version__, "triton": _package("triton"), "flashinfer": _package("flashinfer-python")
            or _package("flashinfer"), "python": platform.python_version(), "platform": platform.platform(),
            "cpu": cpu_model(), "cpu_count": os.cpu_count() or 1, "torch_threads": torch.get_num_threads(),
            "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "timing": "CUDA events (torch.cuda.Event), medians" if gpu else "time.perf_counter, medians",
            "sync_counting": SYNC_METHOD if gpu else f"{NOT_AVAILABLE}: a CPU has no host-device boundary"}


class Clock:
    """Seconds one call takes on ``device``: CUDA events on a GPU, ``perf_counter`` on a CPU."""

    def __init__(self, device: torch.device):
        self.device = device
        self.gpu = device.type == "cuda"

    def sync(self) -> None:
        if self.gpu:
            torch.cuda.synchronize(self.device)

    def seconds(self, fn) -> float:
        if not self.gpu:
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0
        self.sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3  # ms → s


def rounds(fns: dict, clock: Clock, repeats: int, warmups: int) -> dict[str, list[float]]:
    """Seconds per call of each of ``fns`` (name → no-argument callable): ``warmups`` untimed
    calls each, then ``repeats`` rounds in which every fn runs once, each round starting one
    fn later (A,B,C then B,C,A …) so drift hits all alike → name → list of seconds."""
    if repeats < 1 or warmups < 0:
        raise ValueError(f"repeats must be >= 1 and warmups >= 0, got {repeats}, {warmups}")
    names = list(fns)
    for _ in range(warmups):
        for n in names:
            fns[n]()
    clock.sync()
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for n in names[r % len(names):] + names[: r % len(names)]:
            out[n].append(clock.seconds(fns[n]))
    return out


def medians(times: dict[str, list[float]]) -> dict[str, float]:
    return {n: statistics.median(v) for n, v in times.items()}


def host_syncs(fn, device: torch.device) -> int | None:
    """Host syncs one call of ``fn`` costs (see :data:`SYNC_METHOD`); None on a CPU."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    before = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(before)
    return sum("synchroniz" in str(w.message) for w in caught)


def kernel_row(section: str, kernel: str, status: str, reason: str, v_head_dim: int | None = None,
               max_abs_diff: float | None = None) -> dict:
    """One row of ``gpu_bench_kernels.csv``: whether a kernel ran here, and why not."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    return {"section": section, "kernel": kernel, "status": status, "reason": one_line(reason),
            "v_head_dim_run": NOT_AVAILABLE if v_head_dim is None else int(v_head_dim),
            "max_abs_diff_vs_reference": NOT_AVAILABLE if max_abs_diff is None else float(max_abs_diff)}


def add_notes(rows: list[dict], notes: dict[str, list[str]]) -> None:
    """Append what happened to a kernel during the sweep (lengths skipped, failures) to its row's reason."""
    for row in rows:
        if notes.get(row["kernel"]):
            row["reason"] = one_line(row["reason"] + "; " + "; ".join(notes[row["kernel"]]), 600)


def one_line(text: str, limit: int = 300) -> str:
    """The first line of a message, without torch's "(Triggered internally at <build path>)"."""
    line = re.sub(r"\s*\(Triggered internally at [^)]*\)\.?", "", str(text)).strip().splitlines()
    line = line[0].strip() if line else ""
    return (line[: limit - 1] + "…") if len(line) > limit else (line or "no message")


def seeded_normal(shape, device: torch.device, dtype: torch.dtype, seed: int, scale: float = 1.0) -> torch.Tensor:
    """Standard normal × ``scale`` drawn on ``device`` from a generator seeded with ``seed``
    (made there: a 10 GB KV cache is not drawn on the host and copied)."""
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(tuple(shape), generator=g, device=device, dtype=dtype)
    return x.mul_(scale) if scale != 1.0 else x
