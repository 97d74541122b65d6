"""Finding 4 cross-check: NVIDIA's aiconfigurator as an independent model of Kimi K3 serving.

aiconfigurator (PyPI ``aiconfigurator-core``, Apache-2.0, NVIDIA) estimates LLM serving
performance from per-kernel timings measured on real GPUs ("silicon" perf databases for
sglang / vLLM / TensorRT-LLM), or from a roofline of the system's hardware numbers
("SOL", speed of light). It ships its own Kimi K3 model (``moonshotai/Kimi-K3``: 69 KDA +
24 MLA layers, LatentMoE, optional DSpark draft) and its own memory / KV-cache model. This
module is the only place in k3lab that imports it; it turns the study's questions into
its calls and back into plain numbers with provenance.

What it gives (all per GPU unless named otherwise; bytes are bytes, GiB = 2**30 B,
latencies in ms, throughputs in **output tokens/s**):

- :func:`memory_estimate` → :class:`AicMemory`: weights, activations, NCCL and runtime
  reserves, the KV budget and what it holds (MLA tokens, KDA state per request), for one
  GPU of a TP×PP layout, with aiconfigurator's sglang memory rules.
- :func:`throughput` → :class:`AicThroughput`: output tok/s of the whole deployment at a
  client concurrency (``bench_serving --max-concurrency``), TTFT, TPOT.
- :func:`sweep` → a :class:`pandas.DataFrame` over layouts × concurrencies;
  :func:`peaks` → the best concurrency of each layout.
- :class:`HardwareSpec` / :func:`hardware_from_gpu`: a GPU described by its hardware
  numbers, so that a GPU aiconfigurator has no data for (MI355X) can be estimated in SOL
  mode, and B300 / B200 described the same way, so ratios compare like with like.
- :func:`config_differences`: where aiconfigurator's bundled K3 config differs from the
  published config in ``data/model/``.

Modes (aiconfigurator's ``DatabaseMode``):

- ``"silicon"``: measured kernel tables of a built-in system (``b300_sxm``, ``b200_sxm``,
  ``h200_sxm``, ``gb200``, ``gb300``…). Even here a few small ops (norms, element-wise
  ops, and KDA kernels on databases without K3 rows) are priced "empirical" or "sol"; the
  per-op source counts are returned in ``sources``.
- ``"hybrid"`` / ``"empirical"``: built-in systems only (they need the system's own
  measured utilisation; a described GPU raises ValueError).
- ``"sol"``: roofline of the hardware numbers, no measured data; works for built-in
  systems (their YAML numbers) and for :class:`HardwareSpec` descriptions.

Things aiconfigurator-core 0.12.0 does not model, surfaced as ValueError rather than
silently ignored: decode context parallelism (``dcp > 1``; its ``KimiK3Model`` raises
for ``cp_size > 1``); speculative-decoding acceptance (it prices a DSpark verify step of
``nextn + 1`` tokens; the accepted tokens per step, ``accept_len``, must be given).

Concurrency and scheduling: ``scheduler="static"`` (default) prices waves of
``concurrency`` requests that prefill together and decode ``osl`` tokens together, which
is what ``bench_serving`` with fixed lengths (``--random-range-ratio 1.0``) and
``--max-concurrency c`` settles into; ``scheduler="agg"`` uses aiconfigurator's
continuous-batching model (``run_agg``) with a prefill chunk of ``ctx_tokens``. With PP,
a concurrency ``c`` is split into micro-batches of ``ceil(c / pp)`` requests; tok/s =
``c × osl / request latency`` (aiconfigurator's own PP scaling assumes ``pp`` full
micro-batches, which over-counts when ``c < pp``).

Outputs are deterministic: the same inputs give the same numbers (timings are kept out
of the numbers, in ``elapsed_s`` and ``DataFrame.attrs``).
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import importlib.metadata
import importlib.resources
import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd
import yaml

try:  # the one place k3lab imports aiconfigurator
    import aiconfigurator_core  # noqa: F401  (the compiled engine; imported for its version)
    from aiconfigurator_core.sdk import common as _aic_common
    from aiconfigurator_core.sdk import perf_database as _aic_pdb
    from aiconfigurator_core.sdk.backends.factory import get_backend as _aic_get_backend
    from aiconfigurator_core.sdk.backends.sglang_backend import (
        derive_sglang_mem_fraction_static as _aic_sglang_mem_fraction,
    )
    from aiconfigurator_core.sdk.config import RuntimeConfig as _AicRuntimeConfig
    from aiconfigurator_core.sdk.config_builders import build_model_config as _aic_build_model_config
    from aiconfigurator_core.sdk.memory import kv_cache_budget_bytes as _aic_kv_cache_budget_bytes
    from aiconfigurator_core.sdk.models import get_model as _aic_get_model
    from aiconfigurator_core.sdk.models.helpers import (
        resolve_kimi_k3_moe_arch_mode as _aic_k3_moe_mode,
    )
except ImportError as _exc:  # one clear error, whatever part is missing
    raise ImportError(
        "k3lab.crosscheck needs NVIDIA's aiconfigurator estimator core, the PyPI package "
        "'aiconfigurator-core' (k3lab is tested with ==0.12.0): install it with "
        "`pip install aiconfigurator-core==0.12.0` "
        f"(import failed: {type(_exc).__name__}: {_exc})"
    ) from _exc

# Its warnings (e.g. "num_layers 93 is not divisible by pp_size 2") are about its own
# rounding, which the docstrings here state once; keep them out of notebooks and logs.
for _name in ("aiconfigurator_core", "aiconfigurator"):
    logging.getLogger(_name).setLevel(logging.ERROR)

#: The distribution this module was written and pinned against.
TESTED_VERSION = "0.12.0"
#: Installed version of ``aiconfigurator-core`` (recorded in every provenance).
TOOL = "aiconfigurator-core"
TOOL_VERSION = importlib.metadata.version(TOOL)

#: aiconfigurator's name for Kimi K3 (its config ships inside the package).
AIC_MODEL = "moonshotai/Kimi-K3"
#: The sglang version whose database holds K3's own KDA kernel rows (also the sglang
#: k3lab exercises); aiconfigurator's ``current`` slot is 0.5.14 (KDA then priced SOL).
DEFAULT_BACKEND_VERSION = "0.5.16"
#: sglang's default chunked-prefill size on GPUs above 160 GiB (aiconfigurator
#: ``derive_sglang_mem_fraction_static``), used as the activation token budget.
DEFAULT_MAX_NUM_TOKENS = 16384
#: DSpark draft block (draft tokens per step) in aiconfigurator's K3 model.
DSPARK_NEXTN = 7

MODES = ("silicon", "hybrid", "empirical", "sol")
SCHEDULERS = ("static", "agg")
KV_DTYPES = ("bfloat16", "fp8")
BACKENDS = ("sglang", "vllm", "trtllm")

#: k3lab GPU keys → aiconfigurator built-in system names (measured data). MI355X has none.
GPU_TO_SYSTEM = {"b300": "b300_sxm", "b200": "b200_sxm", "h200": "h200_sxm",
                 "gb200": "gb200", "gb300": "gb300", "h100": "h100_sxm"}

#: The study's layouts (gpu, num_gpus, tp, pp) and concurrencies (``--max-concurrency``).
STUDY_CONFIGS = (("b300", 8, 8, 1), ("b200", 16, 16, 1), ("b200", 16, 8, 2), ("mi355x", 8, 8, 1))
STUDY_CONCURRENCIES = (1, 4, 8, 16, 24, 32, 64, 128)

_GiB = 1 << 30
_METADATA_YAMLS = ("query_versions.yaml", "perf_data_reuse_manifest.yaml", "attention_lane_defaults.yaml")
_LOCK = threading.Lock()
_ROOT: str | None = None


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
        if isinstance(self.gpus_per_node, bool) or not isinstance(self.gpus_per_node, int) or self.gpus_per_node <= 0:
            raise ValueError(f"HardwareSpec.gpus_per_node must be a positive integer, got {self.gpus_per_node!r}")

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
        from .specs import load_gpu  # lazy: keeps this module's coupling to k3lab small
        key = gpu
        gpu = load_gpu(gpu)
    else:
        key = getattr(gpu, "key", None) or (gpu.get("key") if isinstance(gpu, dict) else None)

    def num(field_):
        v = gpu.get(field_) if isinstance(gpu, dict) else getattr(gpu, field_, None)
        if v is None:
            raise ValueError(f"hardware_from_gpu: GPU {key!r} lacks {field_!r}")
        return float(v)

    if not (isinstance(scale_out_gbit_s_per_gpu, (int, float)) and scale_out_gbit_s_per_gpu > 0):
        raise ValueError(f"scale_out_gbit_s_per_gpu must be a positive number, got {scale_out_gbit_s_per_gpu!r}")
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


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class AicMemory:
    """aiconfigurator's memory picture of one GPU (bytes unless named otherwise).

    KV budget (sglang, ``mem_fraction_static`` of TOTAL memory, aiconfigurator
    ``kv_cache_budget_bytes``): ``capacity × mem_fraction − (weights + activations + nccl
    + other)``. The budget is one elastic pool for the MLA latent cache (per token, every
    one of the 24 MLA layers on every GPU, PP included) and the KDA recurrent state
    (per request, ``kda_state_slots_per_request`` copies). ``weights_bytes_per_gpu`` is
    the model's total weights on a TP rank divided evenly by ``pp``. ``max_kv_tokens``:
    MLA tokens the budget holds beside one request's KDA state;
    ``max_context_requests``: concurrent requests of ``context_tokens`` each.
    """

    gpu: str
    system: str
    num_gpus: int
    tp: int
    pp: int
    capacity_bytes_per_gpu: int
    mem_fraction: float
    mem_fraction_source: str
    max_num_tokens: int
    weights_bytes_per_gpu: int
    activations_bytes_per_gpu: int
    nccl_bytes_per_gpu: int
    other_bytes_per_gpu: int
    non_kv_bytes_per_gpu: int
    kv_budget_bytes_per_gpu: int
    kv_bytes_per_token: int
    kda_state_bytes_per_request: int
    kda_state_slots_per_request: int
    max_kv_tokens: int
    context_tokens: int
    max_context_requests: int
    weights_fit: bool
    weights_by_op: dict = field(default_factory=dict)
    quant: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    elapsed_s: float = field(default=0.0, compare=False)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("elapsed_s")
        return d


@dataclass(frozen=True)
class AicThroughput:
    """One aiconfigurator estimate of a deployment at one client concurrency.

    ``tok_s``: output tokens/s of the whole deployment (all ``num_gpus``);
    ``tok_s_per_gpu`` = ``tok_s / num_gpus``. ``ttft_ms``: time to first token;
    ``tpot_ms``: time per output token after the first (divided by ``accept_len`` with
    speculative decoding); ``request_latency_ms`` = ``ttft + (osl − 1) × tpot``.
    ``memory_gib_per_gpu``: aiconfigurator's footprint at this batch (GiB); ``oom``: it
    exceeds the GPU; ``kv_oom``: the KV exceeds sglang's budget (both aiconfigurator's own
    flags; the static path sizes activations for all ``micro_batch × isl`` prompt tokens at
    once, so it flags large batches that sglang's chunked prefill would run).
    ``kv_fits``: ``kv_need_bytes_per_gpu`` (``micro_batch`` requests of ``isl + osl``
    tokens: MLA cache + KDA state, aiconfigurator's per-sequence bytes) ≤
    ``kv_budget_bytes_per_gpu`` (:func:`memory_estimate` with 16,384-token activations,
    sglang's chunked prefill, and the same ``mem_fraction``). ``sources``: how many
    ops were priced from measured tables ("silicon"), empirical factors or SOL, per phase.
    """

    gpu: str
    system: str
    num_gpus: int
    tp: int
    pp: int
    concurrency: int
    isl: int
    osl: int
    tok_s: float
    tok_s_per_gpu: float
    ttft_ms: float
    tpot_ms: float
    request_latency_ms: float
    micro_batch: int
    memory_gib_per_gpu: float
    oom: bool
    kv_oom: bool
    kv_need_bytes_per_gpu: int
    kv_budget_bytes_per_gpu: int
    kv_fits: bool
    mode: str
    scheduler: str
    nextn: int
    accept_len: float | None
    sources: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    elapsed_s: float = field(default=0.0, compare=False)

    def as_row(self) -> dict:
        """A flat, deterministic row (no timing) for :func:`sweep`."""
        db = self.provenance["database"]
        return {
            "gpu": self.gpu, "system": self.system, "num_gpus": self.num_gpus, "tp": self.tp, "pp": self.pp,
            "concurrency": self.concurrency, "isl": self.isl, "osl": self.osl,
            "tok_s": self.tok_s, "tok_s_per_gpu": self.tok_s_per_gpu,
            "ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "request_latency_ms": self.request_latency_ms,
            "micro_batch": self.micro_batch, "memory_gib_per_gpu": self.memory_gib_per_gpu,
            "oom": self.oom, "kv_oom": self.kv_oom, "kv_need_bytes_per_gpu": self.kv_need_bytes_per_gpu,
            "kv_budget_bytes_per_gpu": self.kv_budget_bytes_per_gpu, "kv_fits": self.kv_fits,
            "mode": self.mode, "scheduler": self.scheduler,
            "nextn": self.nextn, "accept_len": self.accept_len,
            "scale_out_gbit_s_per_gpu": self.provenance.get("scale_out_gbit_s_per_gpu"),
            "moe_quant": self.provenance["quant"]["moe"],
            "tool_version": self.provenance["version"],
            "database": f"{db['system']}/{db['backend']}/{db['backend_version']}",
            "sources": ";".join(f"{ph}:{','.join(f'{k}={v}' for k, v in sorted(c.items()))}"
                                for ph, c in sorted(self.sources.items())),
        }


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
class _Target:
    label: str          # the caller's gpu label
    system: str         # aiconfigurator system name
    root: str | None    # systems root (None: the package's)
    mode: str
    backend: str
    version: str
    gpus_per_node: int
    hardware: str | dict
    scale_out_gbit_s_per_gpu: float | None


def _resolve_target(gpu, mode, hardware, backend, backend_version, scale_out_gbit_s_per_gpu) -> _Target:
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
        return _Target(label, system, root, mode, backend, str(backend_version), hardware.gpus_per_node,
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
        if not (isinstance(scale_out_gbit_s_per_gpu, (int, float)) and scale_out_gbit_s_per_gpu > 0):
            raise ValueError(f"scale_out_gbit_s_per_gpu must be a positive number, got {scale_out_gbit_s_per_gpu!r}")
        root = _network_override(system, float(scale_out_gbit_s_per_gpu))
        net = float(scale_out_gbit_s_per_gpu)
    else:
        net = spec["node"]["inter_node_bw"] * 8 / 1e9
    return _Target(label, system, root, mode, backend, version, int(spec["node"]["num_gpus_per_node"]),
                   f"aiconfigurator built-in systems/{system}.yaml", net)


def _database(t: _Target):
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


# --------------------------------------------------------------------------- model


def _check_int(name, v, minimum=1):
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v!r}")


def _check_layout(num_gpus, tp, pp, moe_ep, dcp):
    for n, v in (("num_gpus", num_gpus), ("tp", tp), ("pp", pp), ("moe_ep", moe_ep), ("dcp", dcp)):
        _check_int(n, v)
    if dcp != 1:
        raise ValueError(
            f"dcp={dcp}: {TOOL} {TOOL_VERSION} does not model decode context parallelism for Kimi K3 "
            "(its KimiK3Model raises NotImplementedError for cp_size > 1); estimate without DCP and say so")
    if num_gpus % (tp * pp):
        raise ValueError(f"num_gpus={num_gpus} is not a multiple of tp×pp={tp * pp}")
    if tp % moe_ep:
        raise ValueError(f"moe_ep={moe_ep} must divide tp={tp} (MoE TP × EP = attention TP)")


def _model(t: _Target, tp, pp, moe_ep, moe_quant, kv_dtype, nextn):
    if kv_dtype not in KV_DTYPES:
        raise ValueError(f"kv_dtype must be one of {KV_DTYPES}, got {kv_dtype!r}")
    if moe_quant is None:
        if t.root is not None and isinstance(t.hardware, dict):  # described GPU
            moe_quant = "w4a8_mxfp4_mxfp8" if t.hardware.get("blackwell_class", True) else None
        else:
            mode = _aic_k3_moe_mode(AIC_MODEL, t.system, t.backend)
            moe_quant = mode.name if mode is not None else None
    if moe_quant is not None and moe_quant not in _aic_common.MoEQuantMode.__members__:
        raise ValueError(f"moe_quant must be one of {sorted(_aic_common.MoEQuantMode.__members__)}, got {moe_quant!r}")
    mc = _aic_build_model_config(tp_size=tp, pp_size=pp, attention_dp_size=1, moe_tp_size=tp // moe_ep,
                                 moe_ep_size=moe_ep, kvcache_quant_mode=kv_dtype, moe_quant_mode=moe_quant)
    mc.system = t.system
    mc.num_gpus_per_node = t.gpus_per_node
    mc.nextn = int(nextn)
    try:
        model = _aic_get_model(AIC_MODEL, mc, t.backend)
    except (AssertionError, NotImplementedError, KeyError, ValueError) as exc:
        raise ValueError(f"{TOOL} cannot build Kimi K3 at tp={tp} pp={pp} moe_ep={moe_ep} on "
                         f"{t.system}/{t.backend}: {type(exc).__name__}: {exc}") from exc
    c = model.config
    quant = {k: getattr(c, f"{k}_quant_mode").name for k in ("gemm", "moe", "kvcache", "fmha", "comm")}
    return model, quant


def _provenance(t: _Target, db, quant) -> dict:
    return {
        "tool": TOOL, "version": TOOL_VERSION,
        "database": {"system": db.system, "backend": db.backend, "backend_version": db.version,
                     "mode": t.mode},
        "model": f"{AIC_MODEL} (config bundled with {TOOL})",
        "quant": quant,
        "hardware": t.hardware,
        "scale_out_gbit_s_per_gpu": t.scale_out_gbit_s_per_gpu,
    }


# --------------------------------------------------------------------------- memory


def memory_estimate(gpu, num_gpus: int, tp: int, pp: int = 1, *, hardware: HardwareSpec | None = None,
                    backend: str = "sglang", backend_version: str = DEFAULT_BACKEND_VERSION,
                    mem_fraction: float | None = None, capacity_bytes: int | None = None,
                    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS, kv_dtype: str = "bfloat16",
                    nextn: int = 0, moe_quant: str | None = None, moe_ep: int = 1,
                    context_tokens: int | None = None) -> AicMemory:
    """aiconfigurator's per-GPU memory of Kimi K3 on ``num_gpus`` × ``gpu`` at TP×PP.

    The same computation as aiconfigurator's public ``estimate_kv_cache`` (native path:
    ``BaseBackend._get_memory_usage`` with ``num_tokens = max_num_tokens``, no MTP
    activation scaling, then ``kv_cache_budget_bytes``), also for described GPUs.
    ``mem_fraction``: sglang's ``--mem-fraction-static`` (None: aiconfigurator's derivation
    of sglang's default from capacity, TP and PP). ``capacity_bytes``: replace the
    system's capacity (e.g. k3lab's usable HBM). ``max_num_tokens``: tokens per forward
    that size activations (sglang's chunked-prefill size). ``context_tokens``: request
    length for ``max_context_requests`` (None: the model's 1,048,576).
    Raises ValueError for bad input or a system/backend without data.
    """
    t0 = time.perf_counter()
    _check_layout(num_gpus, tp, pp, moe_ep, 1)
    _check_int("max_num_tokens", max_num_tokens)
    _check_int("nextn", nextn, 0)
    t = _resolve_target(gpu, "sol" if hardware is not None else "silicon", hardware, backend, backend_version, None)
    db = _database(t)
    model, quant = _model(t, tp, pp, moe_ep, moe_quant, kv_dtype, nextn)
    be = _aic_get_backend(backend)
    mem = be._get_memory_usage(model, db, batch_size=1, beam_width=1, isl=1, osl=1,
                               num_tokens=int(max_num_tokens), prefix=0, max_seq_len=1,
                               mtp_activation_scaling=False)
    cap = int(capacity_bytes) if capacity_bytes is not None else int(db.system_spec["gpu"]["mem_capacity"])
    if cap <= 0:
        raise ValueError(f"capacity_bytes must be positive, got {capacity_bytes!r}")
    if mem_fraction is None:
        if backend == "sglang":
            fraction = _aic_sglang_mem_fraction(cap, tp_size=tp, pp_size=pp, dp_size=1)
            source = "aiconfigurator derive_sglang_mem_fraction_static (sglang 0.5.16 default)"
        else:
            fraction = be.get_default_free_gpu_memory_fraction(t.version)
            source = f"aiconfigurator {backend} default"
    else:
        fraction, source = float(mem_fraction), "given"
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise ValueError(f"mem_fraction must be in (0, 1], got {fraction!r}")
    # floats as aiconfigurator keeps them; whole bytes reported the way estimate_kv_cache does
    f = {k: float(mem[k]) * _GiB for k in ("weights", "activations", "nccl", "others")}
    b = {k: int(max(v, 0.0)) for k, v in f.items()}
    non_kv_f = sum(f.values())
    non_kv = int(non_kv_f)
    budget = _aic_kv_cache_budget_bytes(capacity=cap, non_kv=non_kv_f, fraction=fraction,
                                        of_free=be.memory_fraction_of_free())
    kv_tok = int(model.config.kvcache_quant_mode.value.memory * model.get_kvcache_elements_per_token())
    kda = int(model._kda_state_bytes_per_request())
    ctx = int(context_tokens) if context_tokens is not None else int(model._context_length)
    per_req = model.get_kvcache_bytes_per_sequence(ctx)
    weights_by_op = {op._name: int(round(op.get_weights() / pp)) for op in model.context_ops if op.get_weights()}
    out = AicMemory(
        gpu=t.label, system=t.system, num_gpus=num_gpus, tp=tp, pp=pp, capacity_bytes_per_gpu=cap,
        mem_fraction=float(fraction), mem_fraction_source=source, max_num_tokens=int(max_num_tokens),
        weights_bytes_per_gpu=b["weights"], activations_bytes_per_gpu=b["activations"],
        nccl_bytes_per_gpu=b["nccl"], other_bytes_per_gpu=b["others"], non_kv_bytes_per_gpu=non_kv,
        kv_budget_bytes_per_gpu=max(0, math.floor(budget)), kv_bytes_per_token=kv_tok,
        kda_state_bytes_per_request=kda,
        kda_state_slots_per_request=int(getattr(model, "KDA_STATE_SLOTS_PER_REQUEST", 1)),
        max_kv_tokens=int(model.get_kvcache_max_tokens(budget)) if budget > 0 else 0,
        context_tokens=ctx, max_context_requests=int(budget // per_req) if budget > 0 else 0,
        weights_fit=bool(budget > 0), weights_by_op=weights_by_op, quant=quant,
        provenance=_provenance(t, db, quant), elapsed_s=time.perf_counter() - t0,
    )
    return out


# --------------------------------------------------------------------------- throughput


def _sources(summary, scheduler) -> dict:
    if scheduler == "static":
        phases = {"prefill": summary.get_context_source_dict(), "decode": summary.get_generation_source_dict()}
    else:
        per = summary.get_per_ops_source() or {}
        phases = {"mix": per.get("mix_step", {}), "decode": per.get("genonly_step", {})}
    return {ph: dict(sorted(Counter(d.values()).items())) for ph, d in phases.items() if d}


def throughput(gpu, num_gpus: int, tp: int, pp: int = 1, concurrency: int = 1, isl: int = 1024,
               osl: int = 400, *, mode: str = "silicon", hardware: HardwareSpec | None = None,
               backend: str = "sglang", backend_version: str = DEFAULT_BACKEND_VERSION,
               scheduler: str = "static", nextn: int = 0, accept_len: float | None = None,
               moe_quant: str | None = None, kv_dtype: str = "bfloat16",
               scale_out_gbit_s_per_gpu: float | None = None, moe_ep: int = 1, dcp: int = 1,
               ctx_tokens: int | None = None, mem_fraction: float | None = None) -> AicThroughput:
    """aiconfigurator's serving estimate of Kimi K3: ``isl``-in / ``osl``-out requests at
    ``concurrency`` in flight on ``num_gpus`` × ``gpu``, TP=``tp``, PP=``pp`` (``num_gpus``
    a multiple of ``tp × pp``; the rest are replicas sharing the concurrency).

    ``gpu``: a k3lab key (``"b300"``, ``"b200"``, ``"h200"``) or an aiconfigurator system
    (``"gb200"``…); with ``hardware`` given, a label for a GPU described by its numbers
    (mode ``"sol"`` only). ``scale_out_gbit_s_per_gpu``: replace the network between nodes
    (Gbit/s per GPU per direction; aiconfigurator's B200/B300 assume 800 Gbit/s).
    ``nextn``/``accept_len``: DSpark speculative decoding, ``nextn`` draft tokens per verify
    step (7 in aiconfigurator's K3) and the mean tokens accepted per step (required with
    ``nextn``, in [1, nextn + 1]; aiconfigurator prices the step, not the acceptance).
    ``moe_quant``: an aiconfigurator ``MoEQuantMode`` name (None: its choice for K3 on the
    system, ``w4a8_mxfp4_mxfp8`` on Blackwell). ``dcp`` must be 1 (not modelled).
    ``scheduler``/``ctx_tokens``: see the module docstring; ``ctx_tokens`` (agg only)
    defaults to ``min(16384, (b − 1) × isl)`` for a micro-batch of ``b > 1`` requests, else ``isl``.
    Raises ValueError for bad input, or naming what is missing when a system or backend has
    no data.
    """
    t0 = time.perf_counter()
    _check_layout(num_gpus, tp, pp, moe_ep, dcp)
    for n, v in (("concurrency", concurrency), ("isl", isl), ("osl", osl)):
        _check_int(n, v)
    _check_int("nextn", nextn, 0)
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {SCHEDULERS}, got {scheduler!r}")
    if nextn:
        if accept_len is None or not (isinstance(accept_len, (int, float)) and 1 <= accept_len <= nextn + 1):
            raise ValueError(f"nextn={nextn} needs accept_len (mean tokens accepted per verify step) in "
                             f"[1, {nextn + 1}], got {accept_len!r}: {TOOL} prices the step, not the acceptance")
    elif accept_len is not None:
        raise ValueError("accept_len is only meaningful with nextn > 0 (speculative decoding)")
    replicas = num_gpus // (tp * pp)
    if concurrency % replicas:
        raise ValueError(f"concurrency={concurrency} must split evenly over {replicas} replicas")
    t = _resolve_target(gpu, mode, hardware, backend, backend_version, scale_out_gbit_s_per_gpu)
    db = _database(t)
    model, quant = _model(t, tp, pp, moe_ep, moe_quant, kv_dtype, nextn)
    be = _aic_get_backend(backend)
    c_rep = concurrency // replicas
    b = -(-c_rep // pp)  # micro-batch: ceil(c / pp)
    rc = _AicRuntimeConfig(batch_size=b, isl=isl, osl=osl)
    try:
        if scheduler == "static":
            s = be.run_static(model, db, rc, mode="static", free_gpu_memory_fraction=mem_fraction)
            row = s.get_summary_df().iloc[0]
            ttft = float(row["ttft"])
            tpot = float(row["tpot"]) / (accept_len if nextn else 1.0)
            latency = ttft + (osl - 1) * tpot
            tok_s_rep = c_rep * osl / latency * 1000.0
            mem_gib = float(row["memory"])
        else:
            ctx = ctx_tokens if ctx_tokens is not None else (min(DEFAULT_MAX_NUM_TOKENS, (b - 1) * isl) if b > 1 else isl)
            _check_int("ctx_tokens", ctx)
            kw = {"ctx_tokens": ctx, "free_gpu_memory_fraction": mem_fraction}
            if nextn:
                kw["decode_tokens_per_iteration"] = float(accept_len)
            s = be.run_agg(model, db, rc, **kw)
            d = s.get_result_dict()
            ttft, tpot = float(d["ttft"]), float(d["tpot"])
            latency = ttft + (osl - 1) * tpot
            tok_s_rep = float(d["tokens/s"]) * c_rep / (b * pp)
            mem_gib = float(d["memory"])
    except ValueError:
        raise
    except Exception as exc:  # aiconfigurator's own errors: missing perf data, unsupported shapes
        raise ValueError(f"{TOOL} {TOOL_VERSION} could not estimate Kimi K3 on {t.system}/{t.backend} "
                         f"{t.version} ({t.mode}, tp={tp}, pp={pp}, batch={b}): {type(exc).__name__}: {exc}") from exc
    tok_s = tok_s_rep * replicas
    kv_need = int(b * model.get_kvcache_bytes_per_sequence(isl + osl))
    mem = memory_estimate(gpu, num_gpus, tp, pp, hardware=hardware, backend=backend,
                          backend_version=backend_version, mem_fraction=mem_fraction, kv_dtype=kv_dtype,
                          nextn=nextn, moe_quant=moe_quant, moe_ep=moe_ep)
    return AicThroughput(
        gpu=t.label, system=t.system, num_gpus=num_gpus, tp=tp, pp=pp, concurrency=concurrency,
        isl=isl, osl=osl, tok_s=tok_s, tok_s_per_gpu=tok_s / num_gpus, ttft_ms=ttft, tpot_ms=tpot,
        request_latency_ms=latency, micro_batch=b, memory_gib_per_gpu=mem_gib,
        oom=bool(s.check_oom()), kv_oom=bool(s.check_kv_cache_oom()), kv_need_bytes_per_gpu=kv_need,
        kv_budget_bytes_per_gpu=mem.kv_budget_bytes_per_gpu,
        kv_fits=bool(mem.weights_fit and kv_need <= mem.kv_budget_bytes_per_gpu), mode=mode, scheduler=scheduler,
        nextn=int(nextn), accept_len=None if not nextn else float(accept_len),
        sources=_sources(s, scheduler), provenance=_provenance(t, db, quant),
        elapsed_s=time.perf_counter() - t0,
    )


def sweep(configs=STUDY_CONFIGS[:3], concurrencies=STUDY_CONCURRENCIES, isl: int = 1024, osl: int = 400, *,
          mode: str = "silicon", hardware: dict | None = None, **kwargs) -> pd.DataFrame:
    """:func:`throughput` over ``configs`` × ``concurrencies`` → one row per estimate.

    ``configs``: tuples ``(gpu, num_gpus, tp, pp)`` or dicts with those keys (a dict may
    also carry per-config keyword arguments, e.g. ``scale_out_gbit_s_per_gpu``).
    ``hardware``: {gpu label: HardwareSpec} for GPUs described by their numbers (SOL).
    Other keyword arguments go to :func:`throughput`. Columns: ``gpu system num_gpus tp
    pp concurrency isl osl tok_s`` (output tok/s, whole deployment) ``tok_s_per_gpu
    ttft_ms tpot_ms request_latency_ms micro_batch memory_gib_per_gpu oom kv_oom
    kv_need_bytes_per_gpu kv_budget_bytes_per_gpu kv_fits mode scheduler nextn accept_len
    scale_out_gbit_s_per_gpu moe_quant tool_version database sources``. Timings (not in the columns, so the frame is deterministic):
    ``df.attrs["elapsed_s"]`` (total) and ``df.attrs["elapsed_s_per_row"]``.
    """
    t0 = time.perf_counter()
    rows, times = [], []
    hardware = hardware or {}
    for cfg in configs:
        if isinstance(cfg, dict):
            cfg = dict(cfg)
            gpu, num_gpus, tp, pp = (cfg.pop(k) for k in ("gpu", "num_gpus", "tp", "pp"))
            extra = cfg
        else:
            gpu, num_gpus, tp, pp = cfg
            extra = {}
        for c in concurrencies:
            r = throughput(gpu, num_gpus, tp, pp, c, isl, osl, mode=mode,
                           hardware=hardware.get(gpu), **{**kwargs, **extra})
            rows.append(r.as_row())
            times.append(r.elapsed_s)
    df = pd.DataFrame(rows)
    df.attrs["elapsed_s"] = time.perf_counter() - t0
    df.attrs["elapsed_s_per_row"] = times
    return df


def peaks(df: pd.DataFrame, fits: str = "kv_fits") -> pd.DataFrame:
    """The best concurrency of each layout in a :func:`sweep` frame, among rows whose
    ``fits`` column is true (``"kv_fits"``; ``None``: all rows): ``gpu num_gpus tp pp mode
    database scale_out_gbit_s_per_gpu nextn accept_len scheduler peak_concurrency
    peak_tok_s peak_tok_s_per_gpu``. A peak at the largest concurrency swept means the
    estimate was still rising there."""
    keys = ["gpu", "num_gpus", "tp", "pp", "mode", "database", "scale_out_gbit_s_per_gpu", "nextn",
            "accept_len", "scheduler"]
    fit = df if fits is None else df[df[fits].astype(bool)]
    out = []
    for k, g in fit.groupby(keys, sort=False, dropna=False):
        best = g.loc[g["tok_s"].idxmax()]
        out.append({**dict(zip(keys, k)), "peak_concurrency": int(best["concurrency"]),
                    "peak_tok_s": float(best["tok_s"]), "peak_tok_s_per_gpu": float(best["tok_s_per_gpu"])})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- configs


def aic_model_config() -> dict:
    """aiconfigurator's bundled K3 ``config.json`` (with its quantization config)."""
    p = importlib.resources.files("aiconfigurator_core") / "model_configs" / "moonshotai--Kimi-K3_config.json"
    return json.loads(p.read_text(encoding="utf-8"))


def config_differences(published: dict | None = None) -> list[tuple[str, object, object]]:
    """``(field, aiconfigurator value, published value)`` for every ``text_config`` field
    whose values differ, among the fields the published config carries (``published``:
    a config dict; None: ``data/model/kimi_k3_config.json``). Fields only aiconfigurator's
    copy carries (generation defaults, token ids) are left out; ``quantization_config``
    is compared whole."""
    if published is None:
        from .paths import data_path
        with open(data_path("model", "kimi_k3_config.json"), encoding="utf-8") as f:
            published = json.load(f)
    a = aic_model_config().get("text_config", {})
    p = published.get("text_config", published)
    return [(k, a.get(k, "<absent>"), v) for k, v in sorted(p.items()) if a.get(k, "<absent>") != v]
