"""The GPU as aiconfigurator sees it: a built-in system with measured data, or one described
by its hardware numbers.

:class:`HardwareSpec` / :func:`hardware_from_gpu` describe a GPU (from k3lab's
``data/hardware.yaml`` facts) for SOL mode; for it, and for a built-in system whose network
between nodes is replaced, a private systems folder is written (one system YAML plus
aiconfigurator's metadata YAMLs). :func:`supported_databases` lists the measured databases
aiconfigurator ships; ``resolve_target`` / ``database_view`` turn a caller's GPU, mode and
backend into the database view the estimates query.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import importlib.resources
import json
import math
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass

import yaml

from ..data import check_count
from ..specs import load_gpu
from ._aic import TOOL, TOOL_VERSION, _aic_pdb

MODES = ("silicon", "hybrid", "empirical", "sol")
BACKENDS = ("sglang", "vllm", "trtllm")

#: k3lab GPU keys → aiconfigurator built-in system names (measured data). MI355X has none.
GPU_TO_SYSTEM = {"b300": "b300_sxm", "b200": "b200_sxm", "h200": "h200_sxm",
                 "gb200": "gb200", "gb300": "gb300", "h100": "h100_sxm"}

_METADATA_YAMLS = ("query_versions.yaml", "perf_data_reuse_manifest.yaml", "attention_lane_defaults.yaml")
_LOCK = threading.Lock()
_ROOT: str | None = None


def _check_scale_out(v) -> float:
    """A network bandwidth per GPU in Gbit/s: a positive number → float, else ValueError."""
    if not (isinstance(v, (int, float)) and v > 0):
        raise ValueError(f"scale_out_gbit_s_per_gpu must be a positive number, got {v!r}")
    return float(v)


# --------------------------------------------------------------------------- hardware


@dataclass(frozen=True)
class HardwareSpec:
    """One GPU described by its hardware numbers, for aiconfigurator's SOL mode.

    Units are in the names: bytes, bytes/s (per GPU, per direction), FLOP/s (dense, no
    sparsity), W, s. ``scale_up_bytes_s`` is the GPU's bandwidth inside a node (NVLink,
    xGMI), ``scale_out_bytes_s`` its share of the network between nodes (RoCE / IB).
    ``blackwell_class=True`` writes ``sm_version: 100`` so aiconfigurator prices the K3
    routed experts in its MXFP4-weight × MXFP8-activation lane (FP8 tensor-core compute),
    as it does on B200/B300; an MI355X (CDNA 4, native MXFP4/MXFP8) is described the same
    way so that only the numbers differ. The memory-model reserves (NCCL buffers, runtime
    "other" memory) are copied from aiconfigurator's own ``b300_sxm.yaml``.
    """

    name: str
    hbm_bytes: int
    hbm_bw_bytes_s: float
    dense_bf16_flops: float
    dense_fp8_flops: float
    dense_fp4_flops: float
    scale_up_bytes_s: float
    scale_out_bytes_s: float
    gpus_per_node: int = 8
    board_power_w: float = 1000.0
    dense_int8_ops: float | None = None
    p2p_latency_s: float = 10e-6
    blackwell_class: bool = True

    def __post_init__(self):
        if not re.fullmatch(r"[a-z0-9][a-z0-9_]*", str(self.name)):
            raise ValueError(f"HardwareSpec.name must be lower-case letters, digits and '_', got {self.name!r}")
        for f_ in ("hbm_bytes", "hbm_bw_bytes_s", "dense_bf16_flops", "dense_fp8_flops", "dense_fp4_flops",
                   "scale_up_bytes_s", "scale_out_bytes_s", "board_power_w", "p2p_latency_s"):
            v = getattr(self, f_)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"HardwareSpec.{f_} must be a positive number, got {v!r}")
        check_count("HardwareSpec.gpus_per_node", self.gpus_per_node)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def hardware_from_gpu(gpu, *, scale_out_gbit_s_per_gpu: float, name: str | None = None,
                      gpus_per_node: int = 8) -> HardwareSpec:
    """A :class:`HardwareSpec` from k3lab's hardware facts.

    ``gpu``: a ``k3lab.specs.GPU``, a key of ``data/hardware.yaml`` (``"mi355x"``…), or a
    mapping with the same field names (``usable_hbm_gb``, ``hbm_bw_tb_s``,
    ``dense_bf16_tflops``, ``dense_fp8_tflops``, ``dense_fp4_tflops``,
    ``scale_up_gb_s_per_direction``, ``board_power_w``; GB = 1e9 B, TB/s = 1e12 B/s,
    TFLOPS = 1e12 FLOP/s). ``scale_out_gbit_s_per_gpu``: network bandwidth per GPU per
    direction in Gbit/s (e.g. the article's RoCE ~195 Gb/s, if each GPU had such a link,
    or 195 / 8 if one link served the node). Required: hardware.yaml has no per-GPU
    scale-out figure, and only TP > 8 or PP across nodes uses it.
    """
    if isinstance(gpu, str):
        key = gpu
        gpu = load_gpu(gpu)
    else:
        key = getattr(gpu, "key", None) or (gpu.get("key") if isinstance(gpu, dict) else None)

    def num(field_):
        v = gpu.get(field_) if isinstance(gpu, dict) else getattr(gpu, field_, None)
        if v is None:
            raise ValueError(f"hardware_from_gpu: GPU {key!r} lacks {field_!r}")
        return float(v)

    _check_scale_out(scale_out_gbit_s_per_gpu)
    label = name or re.sub(r"[^a-z0-9_]", "_", str(key or "gpu").lower())
    return HardwareSpec(
        name=label,
        hbm_bytes=int(round(num("usable_hbm_gb") * 1e9)),
        hbm_bw_bytes_s=num("hbm_bw_tb_s") * 1e12,
        dense_bf16_flops=num("dense_bf16_tflops") * 1e12,
        dense_fp8_flops=num("dense_fp8_tflops") * 1e12,
        dense_fp4_flops=num("dense_fp4_tflops") * 1e12,
        scale_up_bytes_s=num("scale_up_gb_s_per_direction") * 1e9,
        scale_out_bytes_s=float(scale_out_gbit_s_per_gpu) * 1e9 / 8,
        gpus_per_node=gpus_per_node,
        board_power_w=num("board_power_w"),
    )


# --------------------------------------------------------------------------- systems


def _package_systems_dir() -> str:
    return os.fspath(importlib.resources.files("aiconfigurator_core") / "systems")


def _root() -> str:
    """A private systems folder (per process) for described GPUs and network overrides."""
    global _ROOT
    if _ROOT is None:
        _ROOT = tempfile.mkdtemp(prefix="k3lab-aic-")
        atexit.register(shutil.rmtree, _ROOT, True)
    return _ROOT


def _builtin_spec(system: str) -> dict:
    with open(os.path.join(_package_systems_dir(), f"{system}.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def _write_root(key: str, system: str, spec: dict, data_dir: str | None) -> str:
    """A systems root holding one system YAML plus aiconfigurator's metadata YAMLs
    (version slots, reuse manifest, attention lanes: without them a copy of a built-in
    system resolves its tables differently)."""
    with _LOCK:
        root = os.path.join(_root(), key)
        if not os.path.isdir(root):
            tmp = root + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            for f_ in _METADATA_YAMLS:
                src = os.path.join(_package_systems_dir(), f_)
                if os.path.exists(src):
                    shutil.copy(src, tmp)
            if data_dir is None:  # a described GPU: an empty data folder (SOL needs none)
                os.makedirs(os.path.join(tmp, "data", system))
                spec = dict(spec, data_dir=f"data/{system}")
            else:
                spec = dict(spec, data_dir=data_dir)
            with open(os.path.join(tmp, f"{system}.yaml"), "w", encoding="utf-8") as f:
                yaml.safe_dump(spec, f, sort_keys=True)
            os.replace(tmp, root)
        return root


def _described_system(hw: HardwareSpec) -> tuple[str, str]:
    """(system name, systems root) of a GPU described by ``hw``."""
    misc = _builtin_spec("b300_sxm")["misc"]
    spec = {
        "gpu": {
            "mem_bw": int(round(hw.hbm_bw_bytes_s)),
            "mem_bw_empirical_scaling_factor": 0.8,
            "mem_empirical_constant_latency": 3e-6,
            "mem_capacity": int(hw.hbm_bytes),
            "bfloat16_tc_flops": int(round(hw.dense_bf16_flops)),
            "fp8_tc_flops": int(round(hw.dense_fp8_flops)),
            "int8_tc_flops": int(round(hw.dense_int8_ops if hw.dense_int8_ops else hw.dense_fp8_flops)),
            "fp4_tc_flops": int(round(hw.dense_fp4_flops)),
            "power": int(round(hw.board_power_w)),
            "sm_version": 100 if hw.blackwell_class else 90,
        },
        "node": {
            "num_gpus_per_node": int(hw.gpus_per_node),
            "intra_node_bw": int(round(hw.scale_up_bytes_s)),
            "inter_node_bw": int(round(hw.scale_out_bytes_s)),
            "pcie_bw": 64_000_000_000,
            "p2p_latency": float(hw.p2p_latency_s),
        },
        "misc": {"nccl_mem": dict(misc["nccl_mem"]), "other_mem": int(misc["other_mem"]),
                 "nccl_version": str(misc["nccl_version"])},
    }
    system = f"k3lab_{hw.name}"
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    return system, _write_root(f"hw_{hw.name}_{digest}", system, spec, None)


def _network_override(system: str, scale_out_gbit_s_per_gpu: float) -> str:
    """Systems root with built-in ``system`` whose inter-node bandwidth is replaced."""
    spec = _builtin_spec(system)
    node = dict(spec["node"], inter_node_bw=int(round(scale_out_gbit_s_per_gpu * 1e9 / 8)))
    spec = dict(spec, node=node)
    data_dir = os.path.join(_package_systems_dir(), spec["data_dir"])
    key = f"net_{system}_{str(float(scale_out_gbit_s_per_gpu)).replace('.', 'p')}"
    return _write_root(key, system, spec, data_dir)


_SUPPORTED: dict | None = None


def supported_databases() -> dict:
    """{system: {backend: [versions]}} of the measured databases aiconfigurator ships."""
    global _SUPPORTED
    if _SUPPORTED is None:
        raw = _aic_pdb.get_supported_databases(_package_systems_dir())
        _SUPPORTED = {s: {b: sorted(v) for b, v in bs.items()} for s, bs in sorted(raw.items())}
    return _SUPPORTED


@dataclass(frozen=True)
class Target:
    label: str          # the caller's gpu label
    system: str         # aiconfigurator system name
    root: str | None    # systems root (None: the package's)
    mode: str
    backend: str
    version: str
    gpus_per_node: int
    hardware: str | dict
    scale_out_gbit_s_per_gpu: float | None


def resolve_target(gpu, mode, hardware, backend, backend_version, scale_out_gbit_s_per_gpu) -> Target:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    label = str(gpu).lower()
    if hardware is not None:
        if not isinstance(hardware, HardwareSpec):
            raise ValueError(f"hardware must be a HardwareSpec, got {type(hardware).__name__}")
        if mode != "sol":
            raise ValueError(
                f"mode {mode!r} needs measured kernel data of the GPU itself (its empirical factors "
                f"are utilisations measured on that system); {TOOL} {TOOL_VERSION} has none for a "
                f"described GPU ({hardware.name!r}). Use mode='sol'.")
        if scale_out_gbit_s_per_gpu is not None:
            hardware = dataclasses.replace(hardware, scale_out_bytes_s=float(scale_out_gbit_s_per_gpu) * 1e9 / 8)
        system, root = _described_system(hardware)
        return Target(label, system, root, mode, backend, str(backend_version), hardware.gpus_per_node,
                       hardware.as_dict(), hardware.scale_out_bytes_s * 8 / 1e9)
    system = GPU_TO_SYSTEM.get(label, label)
    supported = supported_databases()
    if system not in supported:
        raise ValueError(
            f"{TOOL} {TOOL_VERSION} has no measured data for GPU {gpu!r} (no built-in system "
            f"{system!r}); systems with data: {', '.join(supported)}. For a GPU it has no data for, "
            f"describe it with hardware=HardwareSpec(...) (or hardware_from_gpu) and use mode='sol'.")
    versions = supported[system].get(backend)
    if not versions:
        raise ValueError(
            f"{TOOL} {TOOL_VERSION} has no {backend!r} database for system {system!r}; "
            f"backends with data there: {', '.join(sorted(supported[system]))}")
    version = str(backend_version)
    if version in ("current", "previous", "next"):
        try:
            version = _aic_pdb.resolve_query_version(system, backend, version, systems_paths=[_package_systems_dir()])
        except ValueError as exc:
            raise ValueError(f"{system}/{backend}: {exc}") from exc
    if version not in versions:
        raise ValueError(
            f"{TOOL} {TOOL_VERSION} has no {backend} {version!r} database for system {system!r}; "
            f"available versions: {', '.join(versions)}")
    spec = _builtin_spec(system)
    root = None
    if scale_out_gbit_s_per_gpu is not None:
        root = _network_override(system, _check_scale_out(scale_out_gbit_s_per_gpu))
        net = float(scale_out_gbit_s_per_gpu)
    else:
        net = spec["node"]["inter_node_bw"] * 8 / 1e9
    return Target(label, system, root, mode, backend, version, int(spec["node"]["num_gpus_per_node"]),
                   f"aiconfigurator built-in systems/{system}.yaml", net)


def database_view(t: Target):
    kwargs = {"database_mode": t.mode.upper()}
    if t.root is not None:
        kwargs["systems_paths"] = [t.root]
        kwargs["allow_unlisted_version"] = True
    if t.mode == "sol":
        kwargs["allow_missing_data"] = True
    try:
        db = _aic_pdb.get_database_view(t.system, t.backend, t.version, **kwargs)
    except ValueError as exc:
        raise ValueError(f"{TOOL}: no {t.backend} {t.version} database for {t.system} ({t.mode}): {exc}") from exc
    if db is None:
        raise ValueError(f"{TOOL}: no {t.backend} {t.version} database for {t.system} in mode {t.mode!r}")
    return db
