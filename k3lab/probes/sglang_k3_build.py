"""Per-rank weight bytes from sglang 0.5.23's real Kimi K3 module, built on the meta device.

Runs in ``.venv-sglang`` with the second sglang (0.5.23, ``make sglang-env``) first on
``PYTHONPATH``, one child process per rank (:func:`run_probe` launches it). The child
instantiates ``sglang.srt.models.kimi_k3.KimiK3LinearForCausalLM`` under
``torch.device("meta")`` exactly as sglang's loader would for one rank of a layout, then
lists every parameter and buffer the rank holds (name, shape, dtype, numel, bytes as
stored: packed MXFP4 ``uint8`` weights and E8M0 ``uint8`` scales count one byte per
element). It also runs the model's own ``post_load_weights`` on the meta tensors and
reports what that adds (the MLA ``w_kc`` / ``w_vc`` copies) and the resident bytes with
shared storages counted once.

What it relies on in sglang 0.5.23 (read, not copied):

* ``srt/runtime_context.py``: ``publish(ServerArgs, role, ranks=SpawnRanks(world_rank))``
  derives the TP/PP/attention/MoE ranks (``derive_spawn_ranks``); group handles are
  supplied with ``get_parallel().override_permanently(...)`` (stand-in objects, as sglang's
  ``initialize_model_parallel`` would publish them; ``moe_tp_group`` / ``moe_ep_group`` are
  the very ``tp_group`` object when they span it); ``override_platform`` says which machine
  this is.
* the scheduler's start-up order (``distributed/bootstrap.py`` ``_init_parallel_groups``
  and ``init_layer_runtime``; ``weight_cache/daemon.py`` ``load``): ``initialize_moe_config``
  (``layers/moe/utils.py``: MoE runner / a2a backends), ``initialize_dp_attention``
  (``layers/dp_attention.py``: sets ``flags.dp.enabled``, which
  ``is_dp_attention_enabled()`` reads while the embedding is built),
  ``init_dp_gathered_buffer`` and ``initialize_layernorm_sp``.
* ``srt/arg_groups/model_overrides/kimi_k3.py`` ``_kimi_k3_moe_runner_overrides``: on
  SM100/103/107 with an ``mxfp4-pack-quantized`` checkpoint ``--moe-runner-backend auto``
  resolves to ``flashinfer_mxfp4``. On ROCm it stays ``auto`` and ``Mxfp4MoEMethod`` takes
  its AITER branch when ``SGLANG_USE_AITER=1``.
* ``srt/configs/model_config.py`` ``ModelConfig.from_server_args`` and
  ``srt/model_loader/loader.py`` ``_get_quantization_config``: the published
  compressed-tensors config becomes ``CompressedTensorsConfig`` (quant_format
  ``mxfp4-pack-quantized``); ``srt/models/kimi_k3.py`` ``KimiK3MoE.__init__`` swaps in
  ``Mxfp4Config(is_checkpoint_mxfp4_serialized=True)`` for the routed experts and builds
  the latent projections with ``quant_config=None`` unless the config declares
  ``supports_kimi_k3_quantized_latent_projections`` (only ``ExpertPackConfig``, GGUF, does).
* ``srt/layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights``: per-rank expert
  intermediate rounded up to 128 (SM100 + flashinfer_mxfp4) or to 256 / 128 (AITER, with
  ``SGLANG_AITER_K3_OPT`` unset / set); zero bf16 expert biases unless ``_is_hip``.
* ``srt/models/kimi_k3.py`` ``KimiK3LinearForCausalLM.post_load_weights``: ``w_kc`` /
  ``w_vc`` contiguous copies of each MLA layer's ``kv_b_proj`` (which stays resident);
  ``_merge_front_weights`` / ``_merge_bfa_weights`` re-point weights at merged buffers.

Platforms (a CPU box emulates them; see :data:`PLATFORMS`):

* ``cuda-sm100``: ``override_platform(is_cuda=True, is_sm100=True, device_sm=100, ...)``,
  and the module-level ``_is_cuda`` flags of the loaded ``sglang.*`` modules set True;
  ``torch.cuda.Stream`` is stubbed because ``KimiK3LinearModel.__init__`` creates three
  side streams off ROCm.
* ``rocm-aiter``: ``SGLANG_USE_AITER=1``, ``SGLANG_AITER_K3_OPT`` as asked; after import
  the module-level ``_is_hip`` / ``_use_aiter`` / ``_is_gfx95*`` / ``_aiter_k3_opt`` flags of
  every loaded ``sglang.*`` module are set as a gfx950 (MI355X) build computes them (the
  names flipped are reported), ``deepseek_v2._hip_moe`` is bound to
  ``deepseek_common/amd/deepseek_v2_hip_moe`` (``MoEGate`` reads it on HIP), and
  ``override_platform(is_hip=True, is_cuda=False)`` is installed.

Expert-parallel layouts: the dispatchers' communication libraries (DeepEP, MoRI) are not
installed here; :func:`_stub_a2a_libraries` lets the dispatcher objects be constructed (they
hold no weights) and reports what it stubbed. On SM100 the K3 default runner
(``flashinfer_mxfp4``) cannot run under DeepEP in 0.5.23, so that layout uses
``--moe-runner-backend deep_gemm`` (:data:`EP_RUNNER`); the failure itself is recorded.

Not covered (a meta build cannot show them): the quant method's
``process_weights_after_loading`` (FlashInfer permutes / AITER shuffles, small fp32
per-expert SiTU parameters), ROCm post-load merges in ``kimi_k3_rocm_quant.py``, and any
transient copies made while loading.

CLI (in ``.venv-sglang``, 0.5.23 first on ``PYTHONPATH``)::

    python -m k3lab.probes.sglang_k3_build --tp 8 --pp 1 --rank 0 --platform rocm-aiter --aiter-k3-opt 1 --json
    python -m k3lab.probes.sglang_k3_build --tp 8 --ep-size 8 --moe-a2a-backend mori --platform rocm-aiter --json
    python -m k3lab.probes.sglang_k3_build --tp 8 --dp-size 8 --enable-dp-attention --platform cuda-sm100 --json

Parent side: :func:`run_probe` (one rank), :data:`LAYOUTS`, :func:`compact` (the grouped,
committed form), :func:`k3lab_name` (sglang name → k3lab inventory name) and
:func:`compare` (per k3lab tensor: k3lab's rank bytes vs sglang's, through
:func:`k3lab_rows`, which calls ``k3lab.model.sharding.rank_rows`` or, on the
pre-refactor k3lab, ``k3lab.memory._rank_rows`` with ``memory.layout_variant``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

RELEASE = "0.5.23"

#: The published compressed-tensors quantization config of moonshotai/Kimi-K3
#: (``text_config.quantization_config``), as shipped in the PyPI package
#: ``aiconfigurator-core`` 0.12.0, file
#: ``aiconfigurator_core/model_configs/moonshotai--Kimi-K3_config.json`` (read 2026-12-02).
#: ``data/model/kimi_k3_config.json`` is trimmed and lacks ``config_groups`` / ``ignore``.
PUBLISHED_QUANTIZATION_CONFIG = {
    "config_groups": {
        "group_0": {
            "format": "mxfp4-pack-quantized",
            "input_activations": None,
            "output_activations": None,
            "targets": ["Linear"],
            "weights": {
                "actorder": None, "block_structure": None, "dynamic": False,
                "group_size": 32, "num_bits": 4, "observer": "minmax",
                "observer_kwargs": {}, "scale_dtype": "torch.uint8", "strategy": "group",
                "symmetric": True, "type": "float", "zp_dtype": None,
            },
        }
    },
    "format": "mxfp4-pack-quantized",
    "global_compression_ratio": None,
    "ignore": [
        "re:.*self_attn.*",
        "re:.*shared_experts.*",
        "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
        "re:.*lm_head.*",
        "re:.*vision_tower.*",
        "re:.*mm_projector.*",
    ],
    "kv_cache_scheme": None,
    "quant_method": "compressed-tensors",
    "quantization_status": "compressed",
}
QUANT_CONFIG_SOURCE = ("PyPI aiconfigurator-core 0.12.0, aiconfigurator_core/model_configs/"
                       "moonshotai--Kimi-K3_config.json (text_config.quantization_config)")

#: Emulated platforms: the ``override_platform`` facts and the environment of each.
PLATFORMS = {
    "cuda-sm100": {
        "label": "CUDA Blackwell (SM100, e.g. B200/B300)",
        "facts": {"is_cuda": True, "is_hip": False, "is_sm90": False, "is_sm100": True,
                  "is_sm100_or_sm110": True, "is_sm110": False, "is_sm120": False,
                  "is_blackwell": True, "device_sm": 100, "device_capability": (10, 0)},
        "env": {},
    },
    "rocm-aiter": {
        "label": "ROCm gfx950 (MI355X) with AITER",
        "facts": {"is_cuda": False, "is_hip": True, "is_sm90": False, "is_sm100": False,
                  "is_sm100_or_sm110": False, "is_sm110": False, "is_sm120": False,
                  "is_blackwell": False, "device_sm": 0},
        "env": {"SGLANG_USE_AITER": "1"},
    },
}
#: Environment that keeps construction free of communication probes (kimi_k3.py reads
#: ``k3_sp_collective.enabled()`` / ``k3_ar_fusion`` at build time).
BASE_ENV = {"SGLANG_K3_SP_COLLECTIVE": "0", "SGLANG_K3_AR_FUSION": "0"}
#: The MoE all-to-all backend used for the expert-parallel layouts on each platform
#: (kimi_k3.py ``_uses_ep_a2a`` counts deepep and mori, not ``flashinfer``).
A2A_BACKEND = {"cuda-sm100": "deepep", "rocm-aiter": "mori"}
#: ``--moe-runner-backend`` for an a2a layout where ``auto`` cannot build: on SM100 the
#: K3 override resolves auto to ``flashinfer_mxfp4``, which registers a fused func only
#: for a2a ``none`` (``moe_runner/flashinfer_cutlass.py``), so ``MoeRunner.__init__``
#: raises NotImplementedError with deepep; DeepGEMM's W4A8 MXFP4 runner is the one that
#: takes DeepEP's dispatch (``Mxfp4MoEMethod``: no padding on that path).
EP_RUNNER = {("cuda-sm100", "deepep"): "deep_gemm"}

#: Modules whose flipped flags the compact record lists by name (the rest are counted).
_FLAG_MODULES_SHOWN = ("sglang.srt.models.kimi_k3.", "sglang.srt.models.deepseek_v2.",
                       "sglang.srt.layers.quantization.mxfp4.",
                       "sglang.srt.layers.quantization.compressed_tensors.compressed_tensors.",
                       "sglang.srt.layers.moe.fused_moe_triton.layer.",
                       "sglang.srt.layers.moe.ep_moe.layer.", "sglang.srt.layers.linear.",
                       "sglang.srt.layers.layernorm.", "sglang.srt.layers.quantization.unquant.")

# Module-level platform flags and the value a gfx950 build gives them (ROCm emulation).
_CUDA_FLAGS = {"_is_cuda": True, "_IS_CUDA": True, "_is_cuda_alike": True}
_HIP_FLAGS = {"_is_hip": True, "_IS_HIP": True, "_is_cuda": False, "_IS_CUDA": False,
              "_use_aiter": True, "_is_gfx95_supported": True, "_is_gfx95": True,
              "_IS_GFX95": True, "_is_shuffle_moe_mxfp4": True}


# --------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class Layout:
    """One sglang parallel layout, as server arguments.

    ``ep``/``a2a``: ``--ep-size`` / ``--moe-a2a-backend`` (``a2a="platform"`` picks
    :data:`A2A_BACKEND`); ``dp`` with ``dp_attention``: ``--dp-size N
    --enable-dp-attention`` (0.5.23 resolves it to ``attn_dp_size = N``, ``dp_size = 1``).
    """

    name: str
    tp: int
    pp: int = 1
    ep: int = 1
    a2a: str = "none"
    dp: int = 1
    dp_attention: bool = False
    note: str = ""

    def a2a_for(self, platform: str) -> str:
        return A2A_BACKEND[platform] if self.a2a == "platform" else self.a2a

    def runner_for(self, platform: str) -> str:
        """``--moe-runner-backend``: ``auto`` except where auto cannot build (see
        :data:`EP_RUNNER`)."""
        a2a = self.a2a_for(platform)
        return EP_RUNNER.get((platform, a2a), "auto")

    def probe_ranks(self) -> list[int]:
        """World ranks probed: TP rank 0 of each pipeline stage (all TP ranks of a stage
        hold the same bytes when every split is exact; :func:`rank_totals` checks it)."""
        return [stage * self.tp for stage in range(self.pp)]

    def server_args(self, platform: str) -> dict:
        out = {"tp_size": self.tp, "pp_size": self.pp}
        if self.ep > 1:
            out["ep_size"] = self.ep
        a2a = self.a2a_for(platform)
        if a2a != "none":
            out["moe_a2a_backend"] = a2a
        if self.dp > 1:
            out["dp_size"] = self.dp
        if self.dp_attention:
            out["enable_dp_attention"] = True
        return out


LAYOUTS = {
    "tp8": Layout("tp8", 8, note="one 8-GPU node, plain TP"),
    "tp16": Layout("tp16", 16, note="two 8-GPU nodes, plain TP (the article's B200 layout)"),
    "tp8-pp2": Layout("tp8-pp2", 8, pp=2, note="two nodes, TP8 x PP2 (both stages probed)"),
    "tp8-ep8-a2a": Layout("tp8-ep8-a2a", 8, ep=8, a2a="platform",
                          note="expert parallel over the 8 TP ranks, all-to-all backend "
                               "(deepep on CUDA, mori on ROCm); attention stays TP8"),
    "tp8-dpattn8": Layout("tp8-dpattn8", 8, dp=8, dp_attention=True,
                          note="DP attention: --dp-size 8 --enable-dp-attention (attn_tp = 1), "
                               "FFN/MoE stays TP8"),
    "tp8-dpattn8-ep8-a2a": Layout("tp8-dpattn8-ep8-a2a", 8, ep=8, a2a="platform", dp=8,
                                  dp_attention=True,
                                  note="DP attention + expert parallel with all-to-all "
                                       "(the usual large-scale EP deployment)"),
}

#: (platform, SGLANG_AITER_K3_OPT) cases the benchmark runs: None = unset.
PLATFORM_CASES = (("cuda-sm100", None), ("rocm-aiter", None), ("rocm-aiter", "1"))


def case_key(layout: str, platform: str, aiter_k3_opt: str | None = None, stage: int = 0) -> str:
    """The key of one probed rank in the committed JSON, e.g. ``tp8|rocm-aiter+k3opt|stage0``."""
    plat = platform + ("+k3opt" if aiter_k3_opt not in (None, "", "0") else "")
    return f"{layout}|{plat}|stage{stage}"


# --------------------------------------------------------------------------- child side


def _published_config(text_config: dict) -> dict:
    """A ``config.json`` for ``KimiK3ForConditionalGeneration`` from the project's text
    config with the published quantization config put back."""
    tc = {k: v for k, v in text_config.items() if not k.startswith("_")}
    tc["quantization_config"] = PUBLISHED_QUANTIZATION_CONFIG
    tc.setdefault("tie_word_embeddings", False)
    return {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
            "tie_word_embeddings": False, "text_config": tc}


def _project_text_config() -> dict:
    here = Path(__file__).resolve().parents[2]
    raw = json.loads((here / "data" / "model" / "kimi_k3_config.json").read_text(encoding="utf-8"))
    return raw.get("text_config", raw)


class _Group:
    """Stand-in for a ``GroupCoordinator`` (the attributes construction reads)."""

    def __init__(self, name: str, rank: int, size: int):
        self.unique_name = name
        self.rank_in_group = self.local_rank = self.rank = rank
        self.world_size = size
        self.ranks = list(range(size))
        self.first_rank, self.last_rank = 0, size - 1
        self.is_first_rank, self.is_last_rank = rank == 0, rank == size - 1
        self.ca_comm = self.cpu_group = self.device_group = None

    def __repr__(self):
        return f"_Group({self.unique_name}, {self.rank_in_group}/{self.world_size})"


def _flip_flags(flags: dict, aiter_k3_opt: bool | None = None) -> list[str]:
    """Set module-level platform flags of every loaded ``sglang.*`` module as the emulated
    build computes them at import; returns ``module.flag`` for each one changed."""
    changed = []
    for name, mod in sorted(sys.modules.items()):
        if mod is None or not name.startswith("sglang"):
            continue
        d = vars(mod)
        for attr, val in flags.items():
            if isinstance(d.get(attr), bool) and d[attr] != val:
                d[attr] = val
                changed.append(f"{name}.{attr}")
        if aiter_k3_opt is not None and isinstance(d.get("_aiter_k3_opt"), bool) \
                and d["_aiter_k3_opt"] != aiter_k3_opt:
            d["_aiter_k3_opt"] = aiter_k3_opt
            changed.append(f"{name}._aiter_k3_opt")
    return changed


def _stub_a2a_libraries(a2a: str) -> list[str]:
    """Let an a2a dispatcher be constructed without its communication library (none is
    installed on a CPU box). Dispatchers hold no weights; their buffers and ops are made
    lazily at first use (``token_dispatcher/deepep.py`` ``_DeepEPDispatcherImplBase``,
    ``token_dispatcher/moriep.py`` ``mori_op``). Returns what was stubbed."""
    import importlib
    import types

    done = []
    if a2a == "deepep":
        mod = importlib.import_module("sglang.srt.layers.moe.token_dispatcher.deepep")
        if not mod.use_deepep:
            mod.use_deepep = True
            done.append("token_dispatcher.deepep.use_deepep=True (deep_ep not installed)")
        # ep_moe/layer.py DeepEPMoE.__init__ asserts DeepGEMM for low-latency DeepEP
        dgw = importlib.import_module("sglang.srt.layers.deep_gemm_wrapper")
        if not dgw.ENABLE_JIT_DEEPGEMM:
            dgw.ENABLE_JIT_DEEPGEMM = True
            done.append("deep_gemm_wrapper.ENABLE_JIT_DEEPGEMM=True (deep_gemm not installed)")
    elif a2a == "mori":
        mod = importlib.import_module("sglang.srt.layers.moe.token_dispatcher.moriep")
        try:
            import mori  # noqa: F401
        except ImportError:
            sys.modules["mori"] = types.ModuleType("mori")
            done.append("sys.modules['mori'] = empty module (mori not installed)")
        if "get_hip_quant" not in vars(mod):  # bound at import only when _use_aiter
            mod.QuantType = types.SimpleNamespace(per_1x128="per_1x128", per_1x32="per_1x32")
            mod.get_hip_quant = lambda *a, **k: None
            done.append("token_dispatcher.moriep.QuantType/get_hip_quant placeholders (aiter not installed)")
    return done


def _tensor_row(name: str, t, kind: str) -> dict:
    numel = int(t.numel())
    return {"name": name, "shape": [int(s) for s in t.shape], "dtype": str(t.dtype).replace("torch.", ""),
            "numel": numel, "bytes": numel * int(t.element_size()), "kind": kind}


def _quant_methods(model) -> dict:
    """Quant method class of every module that has one → count (sorted)."""
    out: dict[str, int] = {}
    for _, mod in model.named_modules():
        qm = getattr(mod, "quant_method", None)
        if qm is not None:
            k = f"{type(mod).__name__}:{type(qm).__name__}"
            out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def build_rank(tp: int, pp: int = 1, rank: int = 0, platform: str = "cuda-sm100",
               aiter_k3_opt: str | None = None, ep: int = 1, a2a: str = "none", dp: int = 1,
               dp_attention: bool = False, moe_runner_backend: str = "auto",
               post_load: bool = True) -> dict:
    """Build one rank in THIS process (must be a fresh interpreter with sglang 0.5.23
    importable) and return the per-tensor record. Sets environment variables first."""
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; known: {', '.join(PLATFORMS)}")
    env = dict(BASE_ENV, **PLATFORMS[platform]["env"])
    if platform.startswith("rocm") and aiter_k3_opt is not None:
        env["SGLANG_AITER_K3_OPT"] = str(aiter_k3_opt)
    for k in ("SGLANG_AITER_K3_OPT", "SGLANG_USE_AITER"):
        if k not in env:
            os.environ.pop(k, None)
    os.environ.update(env)

    import torch

    torch.set_default_dtype(torch.bfloat16)
    from importlib.metadata import version

    import sglang.srt.layers.quantization.mxfp4  # noqa: F401  (flags read at import)
    import sglang.srt.models.deepseek_v2 as deepseek_v2
    import sglang.srt.models.kimi_k3 as kimi_k3
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.layers.dp_attention import (
        init_dp_gathered_buffer, initialize_dp_attention, is_dp_attention_enabled)
    from sglang.srt.layers.layernorm_sp import initialize_layernorm_sp
    from sglang.srt.layers.moe.utils import (
        get_moe_a2a_backend, get_moe_runner_backend, initialize_moe_config)
    from sglang.srt.model_loader.loader import _get_quantization_config
    from sglang.srt.runtime_context import (
        SpawnRanks, get_parallel, override_platform, publish)
    from sglang.srt.server_args import ServerArgs
    from sglang.srt.utils.common import get_bool_env_var

    flipped: list[str] = []
    if platform.startswith("rocm"):
        from sglang.srt.models.deepseek_common.amd import deepseek_v2_hip_moe

        deepseek_v2._hip_moe = deepseek_v2_hip_moe
        flipped = _flip_flags(_HIP_FLAGS, get_bool_env_var("SGLANG_AITER_K3_OPT"))
    else:
        flipped = _flip_flags(_CUDA_FLAGS)
    override_platform(**PLATFORMS[platform]["facts"]).install()
    stubs = _stub_a2a_libraries(a2a)

    sa_kwargs = {"tp_size": tp, "pp_size": pp, "device": "cuda",
                 "moe_runner_backend": moe_runner_backend}
    if ep > 1:
        sa_kwargs["ep_size"] = ep
    if a2a != "none":
        sa_kwargs["moe_a2a_backend"] = a2a
    if dp > 1:
        sa_kwargs["dp_size"] = dp
    if dp_attention:
        sa_kwargs["enable_dp_attention"] = True

    with tempfile.TemporaryDirectory(prefix="k3lab-k3cfg-") as tmp:
        (Path(tmp) / "config.json").write_text(
            json.dumps(_published_config(_project_text_config())), encoding="utf-8")
        sa = ServerArgs(model_path=tmp, **sa_kwargs)
        publish(sa, role="scheduler", ranks=SpawnRanks(world_rank=rank))
        p = get_parallel()
        tp_g = _Group("tp", p.tp_rank, p.tp_size)

        def group(name, rank_, size):
            return tp_g if size == p.tp_size else _Group(name, rank_, size)

        p.override_permanently(
            tp_group=tp_g, pp_group=_Group("pp", p.pp_rank, p.pp_size),
            attn_tp_group=group("attn_tp", p.attn_tp_rank, p.attn_tp_size),
            attn_cp_group=group("attn_cp", p.attn_cp_rank, p.attn_cp_size),
            moe_tp_group=group("moe_tp", p.moe_tp_rank, p.moe_tp_size),
            moe_ep_group=group("moe_ep", p.moe_ep_rank, p.moe_ep_size),
            moe_dp_group=group("moe_dp", p.moe_dp_rank, p.moe_dp_size))
        # the scheduler's order (distributed/bootstrap.py _init_parallel_groups, then its
        # init_layer_runtime, whose two calls are made here because bootstrap.py imports
        # fastapi; weight_cache/daemon.py load does the same): DP-attention flags after the
        # groups (is_dp_attention_enabled() reads flags.dp.enabled, set here)
        initialize_moe_config()
        initialize_dp_attention(sa)
        mc = ModelConfig.from_server_args(sa)
        init_dp_gathered_buffer(mc)
        initialize_layernorm_sp(model_config=mc)
        qc = _get_quantization_config(mc, LoadConfig())
        text_cfg = mc.hf_config.text_config

    real_stream = torch.cuda.Stream

    class _Stream:  # KimiK3LinearModel.__init__ makes 3 side streams off ROCm
        def __init__(self, *a, **k):
            pass

    real_current_device = torch.cuda.current_device
    torch.cuda.Stream = _Stream
    if a2a == "mori":
        # moriep.py MoriEPDispatcher.__init__ builds a [num_experts] int32 expert mask on
        # torch.cuda.current_device(); the experts module keeps it as expert_mask_gpu (a
        # plain attribute: it shows up as a 'runtime' tensor after post_load_weights)
        torch.cuda.current_device = lambda: torch.device("meta")
        stubs.append("torch.cuda.current_device -> meta during construction (MoriEPDispatcher expert_mask)")
    try:
        with torch.device("meta"):
            model = kimi_k3.KimiK3LinearForCausalLM(text_cfg, qc)
    finally:
        torch.cuda.Stream = real_stream
        torch.cuda.current_device = real_current_device

    rows = [_tensor_row(n, t, "parameter") for n, t in model.named_parameters()]
    rows += [_tensor_row(n, t, "buffer") for n, t in model.named_buffers()]
    rows.sort(key=lambda r: r["name"])

    experts = None
    for _, mod in model.named_modules():
        qm = getattr(mod, "quant_method", None)
        if type(mod).__name__ in ("FusedMoE", "DeepEPMoE", "EPMoE") or hasattr(mod, "num_local_experts"):
            experts = {
                "module_class": type(mod).__name__,
                "quant_method": type(qm).__name__ if qm is not None else None,
                "num_local_experts": int(getattr(mod, "num_local_experts", 0)),
                "intermediate_size_per_partition": int(getattr(mod, "intermediate_size_per_partition", 0)),
                "intermediate_size_per_partition_after_pad":
                    int(getattr(qm, "intermediate_size_per_partition", 0) or 0),
                "hidden_size": int(getattr(qm, "hidden_size", 0) or getattr(mod, "hidden_size", 0)),
                "with_bias": bool(getattr(qm, "with_bias", False)),
            }
            break

    post = {"ran": False}
    process = {"ran": False, "why": "not asked"}
    if post_load:
        post = _post_load(model, torch)
        process = _process_one_moe_layer(model, torch)

    par = get_parallel()
    return {
        "sglang_version": version("sglang"),
        "torch_version": torch.__version__,
        "platform": platform,
        "platform_label": PLATFORMS[platform]["label"],
        "platform_facts": {k: list(v) if isinstance(v, tuple) else v
                           for k, v in PLATFORMS[platform]["facts"].items()},
        "env": dict(sorted(env.items())),
        "server_args": dict(sorted({k: v for k, v in sa_kwargs.items() if k != "device"}.items())),
        "world_rank": rank,
        "resolved": {
            "tp_rank": par.tp_rank, "tp_size": par.tp_size, "pp_rank": par.pp_rank,
            "pp_size": par.pp_size, "attn_tp_size": par.attn_tp_size,
            "attn_tp_rank": par.attn_tp_rank, "attn_dp_size": par.attn_dp_size,
            "moe_ep_size": par.moe_ep_size, "moe_ep_rank": par.moe_ep_rank,
            "moe_tp_size": par.moe_tp_size, "moe_dp_size": par.moe_dp_size,
            "moe_runner_backend": get_moe_runner_backend().value,
            "moe_a2a_backend": get_moe_a2a_backend().value,
            "dp_attention_enabled": bool(is_dp_attention_enabled()),
            "start_layer": int(model.model.start_layer), "end_layer": int(model.model.end_layer),
            "quant_config": type(qc).__name__ if qc is not None else None,
            "quant_format": getattr(qc, "quant_format", None),
            "supports_kimi_k3_quantized_latent_projections":
                bool(getattr(qc, "supports_kimi_k3_quantized_latent_projections", False)),
            "experts": experts,
            "quant_methods": _quant_methods(model),
        },
        "flipped_flags": flipped,
        "stubs": stubs,
        "tensors": rows,
        "totals": {"bytes": sum(r["bytes"] for r in rows),
                   "parameter_bytes": sum(r["bytes"] for r in rows if r["kind"] == "parameter"),
                   "buffer_bytes": sum(r["bytes"] for r in rows if r["kind"] == "buffer"),
                   "tensors": len(rows)},
        "post_load": post,
        "process_weights_after_loading": process,
    }


def _post_load(model, torch) -> dict:
    """Run the model's own ``post_load_weights`` on the meta tensors; report the tensors
    it leaves as plain module attributes that own storage no parameter/buffer shares
    (``kind: runtime``), and the resident bytes with each storage counted once."""
    def storage_id(t):
        return t.untyped_storage()._cdata

    try:
        model.post_load_weights()
    except Exception as e:  # report, do not hide: the build itself is still valid
        return {"ran": False, "error": f"{type(e).__name__}: {e}"}
    storages: dict[int, int] = {}
    owned = set()
    for _, t in list(model.named_parameters()) + list(model.named_buffers()):
        storages[storage_id(t)] = t.untyped_storage().nbytes()
        owned.add(storage_id(t))
    extra = []
    for mname, mod in model.named_modules():
        for k, v in sorted(vars(mod).items()):
            if not isinstance(v, torch.Tensor) or k in ("_parameters", "_buffers"):
                continue
            sid = storage_id(v)
            if sid not in storages:
                storages[sid] = v.untyped_storage().nbytes()
            if sid not in owned:
                extra.append(_tensor_row(f"{mname}.{k}" if mname else k, v, "runtime"))
    extra.sort(key=lambda r: r["name"])
    return {"ran": True, "runtime_tensors": extra,
            "runtime_bytes": sum(r["bytes"] for r in extra),
            "resident_bytes": sum(storages.values())}


def _process_one_moe_layer(model, torch) -> dict:
    """Run the experts' ``quant_method.process_weights_after_loading`` on ONE MoE layer of
    the meta model where that is faithful without the GPU libraries, and report its
    parameters before and after (all MoE layers of a rank are identical).

    Done for SM100 + ``flashinfer_mxfp4`` (``mxfp4.py`` ``Mxfp4MoEMethod.
    process_weights_after_loading``, ``use_flashinfer`` branch): the only FlashInfer calls
    there are the row-permutation helper (``get_w2_permute_indices_with_cache``, stubbed
    with the identity permutation: same length) and ``nvfp4_block_scale_interleave``
    (stubbed with the identity: sglang reshapes its result back to the scale's shape, so
    the element count is fixed); ``.cuda()`` of the per-expert SiTU parameters is a no-op
    here. The dtypes and shapes after are sglang's own code. Not done for AITER (its
    shuffles need ``aiter``) nor DeepGEMM (``deep_gemm.transform_sf_into_required_layout``).
    """
    from sglang.srt.layers.moe.utils import get_moe_runner_backend
    from sglang.srt.runtime_context import get_platform

    import sglang.srt.layers.quantization.mxfp4 as mx

    layers = [(n, m) for n, m in model.named_modules()
              if type(getattr(m, "quant_method", None)).__name__ == "Mxfp4MoEMethod"]
    if not layers:
        return {"ran": False, "why": "no Mxfp4MoEMethod layer on this rank"}
    runner = get_moe_runner_backend()
    if not (runner.is_flashinfer_mxfp4() and get_platform().is_sm100):
        why = {"deep_gemm": "DeepGEMM scale re-layout needs deep_gemm (not installed)"}.get(
            runner.value, "AITER weight/scale shuffles need aiter (not installed)")
        return {"ran": False, "why": why, "moe_layers_on_rank": len(layers)}
    name, layer = layers[0]

    def snap():
        return [_tensor_row(f"{name}.{n}", p, "parameter")
                for n, p in sorted(layer.named_parameters(recurse=False))]

    before = snap()
    stubs = []
    if not hasattr(mx, "get_w2_permute_indices_with_cache"):
        mx.get_w2_permute_indices_with_cache = lambda cache, x, tile, **kw: torch.arange(x.shape[0])
        stubs.append("mxfp4.get_w2_permute_indices_with_cache -> identity permutation (flashinfer not installed)")
    if not hasattr(mx, "nvfp4_block_scale_interleave"):
        mx.nvfp4_block_scale_interleave = lambda x: x
        stubs.append("mxfp4.nvfp4_block_scale_interleave -> identity (flashinfer not installed)")
    real_cuda = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self
    stubs.append("torch.Tensor.cuda -> no-op (CPU box)")
    try:
        layer.quant_method.process_weights_after_loading(layer)
    except Exception as e:
        return {"ran": False, "why": f"{type(e).__name__}: {e}", "moe_layers_on_rank": len(layers)}
    finally:
        torch.Tensor.cuda = real_cuda
    after = snap()
    return {"ran": True, "layer": name, "moe_layers_on_rank": len(layers), "stubs": stubs,
            "before": before, "after": after,
            "delta_bytes_per_layer": sum(r["bytes"] for r in after) - sum(r["bytes"] for r in before)}


def _child_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lab.probes.sglang_k3_build",
                                 description="One rank of sglang 0.5.23's Kimi K3 on the meta device.")
    ap.add_argument("--tp", type=int, required=True)
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--rank", type=int, default=0, help="world rank (tp_size * pp_rank + tp_rank)")
    ap.add_argument("--platform", choices=sorted(PLATFORMS), default="cuda-sm100")
    ap.add_argument("--aiter-k3-opt", default=None, help="SGLANG_AITER_K3_OPT value (ROCm; unset by default)")
    ap.add_argument("--ep-size", type=int, default=1)
    ap.add_argument("--moe-a2a-backend", default="none")
    ap.add_argument("--dp-size", type=int, default=1)
    ap.add_argument("--enable-dp-attention", action="store_true")
    ap.add_argument("--moe-runner-backend", default="auto")
    ap.add_argument("--no-post-load", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the record as JSON on stdout")
    ap.add_argument("--out", type=Path, default=None, help="write the record as JSON to this file")
    a = ap.parse_args(argv)
    doc = build_rank(a.tp, a.pp, a.rank, a.platform, a.aiter_k3_opt, a.ep_size, a.moe_a2a_backend,
                     a.dp_size, a.enable_dp_attention, a.moe_runner_backend,
                     post_load=not a.no_post_load)
    text = json.dumps(doc, sort_keys=True)
    if a.out is not None:
        a.out.write_text(text, encoding="utf-8")
    if a.json or a.out is None:
        print(text)
    return 0


# --------------------------------------------------------------------------- parent side


def default_python() -> str:
    """``.venv-sglang``'s interpreter (the current one when already inside it)."""
    from ..paths import REPO_ROOT

    cand = REPO_ROOT / ".venv-sglang" / "bin" / "python"
    if Path(sys.prefix).resolve() == (REPO_ROOT / ".venv-sglang").resolve() or not cand.exists():
        return sys.executable
    return str(cand)


def run_probe(layout: Layout | str, platform: str = "cuda-sm100", aiter_k3_opt: str | None = None,
              rank: int | None = None, python: str | None = None, post_load: bool = True,
              moe_runner_backend: str | None = None, timeout_s: float = 900) -> dict:
    """Build one rank of ``layout`` on ``platform`` in a child process whose
    ``PYTHONPATH`` starts with the 0.5.23 folder; return the child's record (dict).

    ``rank`` defaults to the first probed rank (TP rank 0 of stage 0);
    ``moe_runner_backend`` overrides :meth:`Layout.runner_for`. RuntimeError with the
    child's last lines if it fails.
    """
    from ..paths import REPO_ROOT
    from .topk_repro import sglang_0523_dir

    lay = LAYOUTS[layout] if isinstance(layout, str) else layout
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; known: {', '.join(PLATFORMS)}")
    target = sglang_0523_dir()
    if not (target / "sglang").is_dir():
        raise RuntimeError(f"sglang {RELEASE} is not installed in {target.name} (make sglang-env)")
    rank = lay.probe_ranks()[0] if rank is None else rank
    args = ["--tp", str(lay.tp), "--pp", str(lay.pp), "--rank", str(rank), "--platform", platform,
            "--ep-size", str(lay.ep), "--moe-a2a-backend", lay.a2a_for(platform),
            "--dp-size", str(lay.dp), "--moe-runner-backend", moe_runner_backend or lay.runner_for(platform)]
    if lay.dp_attention:
        args.append("--enable-dp-attention")
    if aiter_k3_opt is not None:
        args += ["--aiter-k3-opt", str(aiter_k3_opt)]
    if not post_load:
        args.append("--no-post-load")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(target), str(REPO_ROOT)])
    with tempfile.TemporaryDirectory(prefix="k3lab-k3probe-") as tmp:
        out = Path(tmp) / "rank.json"
        proc = subprocess.run([python or default_python(), "-m", "k3lab.probes.sglang_k3_build",
                               *args, "--out", str(out)], capture_output=True, text=True,
                              env=env, cwd=tmp, timeout=timeout_s)
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-15:])
            raise RuntimeError(f"sglang {RELEASE} K3 build failed for {lay.name} on {platform} "
                               f"rank {rank} (exit {proc.returncode}):\n{tail}")
        return json.loads(out.read_text(encoding="utf-8"))


def iter_cases(layouts=None):
    """(layout, platform, SGLANG_AITER_K3_OPT, stage) of every probed rank, in order."""
    for name in (layouts or LAYOUTS):
        for platform, opt in PLATFORM_CASES:
            for stage in range(LAYOUTS[name].pp):
                yield name, platform, opt, stage


def probe_case(layout: str, platform: str, aiter_k3_opt: str | None = None, stage: int = 0,
               python: str | None = None) -> dict:
    """The compact record (:func:`compact`) of TP rank 0 of pipeline ``stage``."""
    lay = LAYOUTS[layout]
    return compact(run_probe(lay, platform, aiter_k3_opt, rank=stage * lay.tp, python=python))


#: Layout/platform/runner combinations that 0.5.23 refuses to build (recorded, with the
#: error, by :func:`transcript`): the default runner for K3 on SM100 under DeepEP.
EXPECTED_FAILURES = (("tp8-ep8-a2a", "cuda-sm100", None, "auto"),)
#: Layout/platform cases whose every TP rank is built to show the ranks are equal.
RANK_CHECKS = (("tp8", "cuda-sm100", None),)


def transcript(layouts=None, rank_checks=RANK_CHECKS, python: str | None = None,
               progress=None) -> dict:
    """Every probed rank of :data:`LAYOUTS` × :data:`PLATFORM_CASES` (compact), the
    heaviest rank of each layout/platform, the all-rank check and the expected failures.
    Deterministic (no times, no paths). ``progress(str)`` is called after each build."""
    say = progress or (lambda msg: None)
    cases = {}
    for name, platform, opt, stage in iter_cases(layouts):
        key = case_key(name, platform, opt, stage)
        cases[key] = probe_case(name, platform, opt, stage, python)
        say(f"{key}: {cases[key]['totals']['bytes'] / 2**30:.3f} GiB")
    heaviest = {}
    for key, c in cases.items():
        layout, plat, _ = key.split("|")
        loaded = sglang_rank_bytes(c)
        h = heaviest.get(f"{layout}|{plat}")
        if h is None or loaded > h["loaded_bytes"]:
            proc = c["process_weights_after_loading"]
            heaviest[f"{layout}|{plat}"] = {
                "case": key, "world_rank": c["world_rank"], "pp_rank": c["resolved"]["pp_rank"],
                "bytes": c["totals"]["bytes"], "GiB": round(c["totals"]["bytes"] / 2**30, 4),
                "post_load_runtime_bytes": c["post_load"]["runtime_bytes"],
                "post_load_merge_padding_bytes": c["post_load"]["merge_padding_bytes"],
                "process_weights_delta_bytes": proc.get("delta_bytes_rank", 0) if proc.get("ran") else None,
                "loaded_bytes": loaded, "loaded_GiB": round(loaded / 2**30, 4),
                "resident_after_post_load_bytes": c["post_load"]["resident_bytes"],
                "resident_after_post_load_GiB": round(c["post_load"]["resident_bytes"] / 2**30, 4)}
    checks = {}
    for name, platform, opt in rank_checks or ():
        lay = LAYOUTS[name]
        per = {}
        for r in range(lay.tp * lay.pp):
            d = run_probe(lay, platform, opt, rank=r, python=python, post_load=False)
            per[str(r)] = d["totals"]["bytes"]
        checks[case_key(name, platform, opt).rsplit("|", 1)[0]] = {
            "bytes_per_world_rank": per, "all_equal_within_stage": all(
                len({per[str(s * lay.tp + t)] for t in range(lay.tp)}) == 1 for s in range(lay.pp))}
        say(f"rank check {name} {platform}: {sorted(set(per.values()))}")
    failures = []
    for name, platform, opt, runner in EXPECTED_FAILURES:
        lay = LAYOUTS[name]
        try:
            run_probe(lay, platform, opt, python=python, post_load=False, moe_runner_backend=runner)
            err = None
        except RuntimeError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            err = lines[-1] if lines else str(e)
        failures.append({"layout": name, "platform": platform, "moe_runner_backend": runner,
                         "server_args": dict(lay.server_args(platform), moe_runner_backend=runner),
                         "error": err})
        say(f"expected failure {name} {platform} runner={runner}: {err}")
    first = next(iter(cases.values()))
    return {
        "what": ("Per-rank weight bytes of sglang 0.5.23's real Kimi K3 text model "
                 "(KimiK3LinearForCausalLM) built on the meta device, one child process per rank"),
        "sglang_version": first["sglang_version"],
        "model_class": "sglang.srt.models.kimi_k3.KimiK3LinearForCausalLM",
        "quantization_config_source": QUANT_CONFIG_SOURCE,
        "bytes_note": ("bytes as stored: packed MXFP4 uint8 weights and uint8 E8M0 scales one byte "
                       "per element; 'runtime' rows are tensors post_load_weights leaves (MLA "
                       "w_kc/w_vc); resident_bytes counts each storage once after post_load_weights; "
                       "loaded_bytes = parameters + buffers + runtime rows + the experts' "
                       "process_weights_after_loading change (run on one layer, SM100 "
                       "flashinfer_mxfp4 only)"),
        "layouts": {n: dict(asdict(LAYOUTS[n]), server_args={
            p: dict(LAYOUTS[n].server_args(p), moe_runner_backend=LAYOUTS[n].runner_for(p))
            for p in PLATFORMS}) for n in (layouts or LAYOUTS)},
        "platform_cases": [{"platform": p, "SGLANG_AITER_K3_OPT": o, "label": PLATFORMS[p]["label"]}
                           for p, o in PLATFORM_CASES],
        "cases": cases,
        "heaviest": dict(sorted(heaviest.items())),
        "rank_checks": checks,
        "expected_failures": failures,
    }


def load_transcript(path: Path | None = None) -> dict:
    """The committed transcript (``data/measured/cpu-2core/sglang_0523_k3_rank_bytes.json``)."""
    from ..paths import data_path

    p = Path(path) if path is not None else data_path("measured", "cpu-2core", TRANSCRIPT)
    return json.loads(Path(p).read_text(encoding="utf-8"))


TRANSCRIPT = "sglang_0523_k3_rank_bytes.json"


# --------------------------------------------------------------------------- compact form

_LAYER = re.compile(r"^model\.layers\.(\d+)\.")


def _ranges(ix: list[int]) -> str:
    """[1, 2, 3, 5] → '1-3,5'."""
    out, i = [], 0
    ix = sorted(ix)
    while i < len(ix):
        j = i
        while j + 1 < len(ix) and ix[j + 1] == ix[j] + 1:
            j += 1
        out.append(str(ix[i]) if i == j else f"{ix[i]}-{ix[j]}")
        i = j + 1
    return ",".join(out)


def layer_kinds(text_config: dict | None = None) -> dict[int, dict]:
    """0-based layer index → {'attn': 'mla'|'kda', 'ffn': 'dense'|'moe'} from the config."""
    tc = text_config or _project_text_config()
    lac = tc["linear_attn_config"]
    full = {i - 1 for i in lac["full_attn_layers"]}
    dense = int(tc.get("first_k_dense_replace", 0))
    return {i: {"attn": "mla" if i in full else "kda", "ffn": "dense" if i < dense else "moe"}
            for i in range(int(tc["num_hidden_layers"]))}


def pattern_of(name: str, kinds: dict[int, dict]) -> tuple[str, int | None]:
    """'model.layers.7.self_attn.o_proj.weight' → ('model.layers.{mla}.self_attn.o_proj.weight', 7):
    the layer index becomes the layer's kind where it matters (attention / FFN type)."""
    m = _LAYER.match(name)
    if not m:
        return name, None
    i = int(m.group(1))
    rest = name[m.end():]
    if rest.startswith("self_attn."):
        tag = kinds[i]["attn"]
    elif rest.startswith("mlp."):
        tag = kinds[i]["ffn"]
    else:
        tag = "*"
    return f"model.layers.{{{tag}}}.{rest}", i


def compact(doc: dict) -> dict:
    """A probe record grouped per tensor pattern (layer index → layer kind): each row
    has the pattern, layers (ranges), shape, dtype, kind, copies, bytes per copy and in
    total. Deterministic; what the benchmark commits."""
    kinds = layer_kinds()
    groups: dict[tuple, dict] = {}

    def add(rows):
        for r in rows:
            pat, i = pattern_of(r["name"], kinds)
            key = (pat, tuple(r["shape"]), r["dtype"], r["kind"])
            g = groups.setdefault(key, {"name": pat, "shape": list(r["shape"]), "dtype": r["dtype"],
                                        "kind": r["kind"], "numel": r["numel"],
                                        "bytes_each": r["bytes"], "layers": [], "copies": 0,
                                        "bytes": 0})
            g["copies"] += 1
            g["bytes"] += r["bytes"]
            if i is not None:
                g["layers"].append(i)

    add(doc["tensors"])
    post = doc.get("post_load", {})
    add(post.get("runtime_tensors", []))
    rows = []
    for key in sorted(groups):
        g = groups[key]
        g["layers"] = _ranges(g["layers"])
        g["k3lab_tensor"] = k3lab_name(g["name"])
        rows.append(g)
    keep = ("sglang_version", "platform", "platform_label", "env", "server_args", "world_rank",
            "resolved", "flipped_flags", "stubs")
    out = {k: doc.get(k) for k in keep}
    # the ROCm flag flips, shortened to the modules that build the model's weights
    flips = doc.get("flipped_flags") or []
    out["flipped_flags"] = [f for f in flips if any(m in f for m in _FLAG_MODULES_SHOWN)]
    out["flipped_flags_total"] = len(flips)
    out["tensors"] = rows
    out["totals"] = dict(doc["totals"])
    out["post_load"] = {k: v for k, v in post.items() if k != "runtime_tensors"}
    proc = doc.get("process_weights_after_loading") or {"ran": False}
    out["process_weights_after_loading"] = _compact_process(proc, kinds)
    if post.get("ran"):
        # storage that post_load_weights' merges add beyond the merged weights (the
        # KDA [f_a | b] buffer is padded to a multiple of 8 rows: kimi_k3.py
        # _merge_weights_as_views(pad_rows_to=8) from _merge_bfa_weights)
        out["post_load"]["merge_padding_bytes"] = (
            post["resident_bytes"] - doc["totals"]["bytes"] - post["runtime_bytes"])
    return out


def _compact_process(proc: dict, kinds: dict) -> dict:
    """The one-layer ``process_weights_after_loading`` record with layer-free names and the
    bytes change per tensor pattern for the whole rank (× MoE layers on the rank)."""
    if not proc.get("ran"):
        return {k: v for k, v in proc.items()}
    n = int(proc["moe_layers_on_rank"])

    def rows(rs):
        return [{**{k: r[k] for k in ("shape", "dtype", "numel", "bytes")},
                 "name": pattern_of(r["name"], kinds)[0]} for r in rs]

    before, after = rows(proc["before"]), rows(proc["after"])
    b = {r["name"]: r["bytes"] for r in before}
    a = {r["name"]: r["bytes"] for r in after}
    delta = {k: (a.get(k, 0) - b.get(k, 0)) * n for k in sorted(set(a) | set(b))
             if a.get(k, 0) != b.get(k, 0)}
    return {"ran": True, "moe_layers_on_rank": n, "stubs": proc.get("stubs", []),
            "before": before, "after": after, "delta_bytes_per_layer": proc["delta_bytes_per_layer"],
            "delta_bytes_rank_by_tensor": delta,
            "delta_bytes_rank": proc["delta_bytes_per_layer"] * n}


# --------------------------------------------------------------------------- k3lab mapping

#: sglang 0.5.23 parameter pattern (see :func:`pattern_of`) → k3lab inventory tensor name
#: (``k3lab.memory.inventory(load_model('kimi-k3'))`` ``Tensor.name``). Regexes, matched in
#: order; the MXFP4 weight and its E8M0 scales map to one k3lab tensor (k3lab's 17/32 byte
#: per element includes the scale). Zero biases map to k3lab's "<name> zero bias (runtime)"
#: rows of ``memory._rank_rows``.
NAME_MAP = (
    (r"^model\.embed_tokens\.weight$", "embed_tokens"),
    (r"^lm_head\.weight$", "lm_head"),
    (r"^model\.layers\.\{dense\}\.mlp\.gate_up_proj\.weight$", "dense_mlp.gate_up_proj"),
    (r"^model\.layers\.\{dense\}\.mlp\.down_proj\.weight$", "dense_mlp.down_proj"),
    # MLA: q_a_proj and kv_a_proj_with_mqa are one fused ReplicatedLinear in sglang
    (r"^model\.layers\.\{mla\}\.self_attn\.fused_qkv_a_proj_with_mqa\.weight$",
     "mla.q_a_proj + mla.kv_a_proj_with_mqa"),
    (r"^model\.layers\.\{mla\}\.self_attn\.q_a_layernorm\.weight$", "mla.q_a_layernorm"),
    (r"^model\.layers\.\{mla\}\.self_attn\.kv_a_layernorm\.weight$", "mla.kv_a_layernorm"),
    (r"^model\.layers\.\{mla\}\.self_attn\.q_b_proj\.weight$", "mla.q_b_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.kv_b_proj\.weight$", "mla.kv_b_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.o_proj\.weight$", "mla.o_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.g_proj\.weight$", "mla.g_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.w_[kv]c$", "mla.w_kc_w_vc (runtime copy of kv_b_proj)"),
    # KDA
    (r"^model\.layers\.\{kda\}\.self_attn\.fused_qkvg_proj\.weight$", "kda.q_k_v_g_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.b_proj\.weight$", "kda.b_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.f_a_proj\.weight$", "kda.f_a_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.f_b_proj\.weight$", "kda.f_b_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.o_proj\.weight$", "kda.o_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.qkv_conv1d\.weight$", "kda.qkv_conv1d"),
    (r"^model\.layers\.\{kda\}\.self_attn\.A_log$", "kda.A_log"),
    (r"^model\.layers\.\{kda\}\.self_attn\.dt_bias$", "kda.dt_bias"),
    (r"^model\.layers\.\{kda\}\.self_attn\.o_norm\.weight$", "kda.o_norm"),
    # MoE
    (r"^model\.layers\.\{moe\}\.mlp\.gate\.weight$", "moe.gate.weight"),
    (r"^model\.layers\.\{moe\}\.mlp\.gate\.e_score_correction_bias$", "moe.gate.e_score_correction_bias"),
    (r"^model\.layers\.\{moe\}\.mlp\.routed_expert_down_proj\.weight$", "moe.routed_expert_down_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.routed_expert_up_proj\.weight$", "moe.routed_expert_up_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.routed_expert_norm\.weight$", "moe.routed_expert_norm"),
    (r"^model\.layers\.\{moe\}\.mlp\.shared_experts\.gate_up_proj\.weight$", "moe.shared_experts.gate_up_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.shared_experts\.down_proj\.weight$", "moe.shared_experts.down_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w13_weight(_scale)?$", "moe.experts.w13 (gate+up)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w2_weight(_scale)?$", "moe.experts.w2 (down)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w13_weight_bias$", "moe.experts.w13 (gate+up) zero bias (runtime)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w2_weight_bias$", "moe.experts.w2 (down) zero bias (runtime)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.gemm1_(alpha|beta|clamp_limit)$",
     "moe.experts gemm1_alpha+beta+clamp_limit (runtime)"),
    # norms and attention-residual projections
    (r"^model\.layers\.\{\*\}\.(input_layernorm|post_attention_layernorm)\.weight$",
     "layer.input_layernorm+post_attention_layernorm"),
    (r"^model\.layers\.\{\*\}\.(self_attention_res_norm|mlp_res_norm)\.weight$",
     "layer.attn_res_norms (self_attention, mlp)"),
    (r"^model\.layers\.\{\*\}\.(self_attention_res_proj|mlp_res_proj)\.weight$",
     "layer.attn_res_projs (self_attention, mlp; H→1)"),
    (r"^model\.output_attn_res_(norm|proj)\.weight$", "model.output_attn_res_norm+proj"),
    (r"^model\.norm\.weight$", "model.norm"),
)
_NAME_MAP = tuple((re.compile(p), n) for p, n in NAME_MAP)
#: Fused in sglang, separate in k3lab: compared as one group.
FUSED_GROUPS = {"mla.q_a_proj + mla.kv_a_proj_with_mqa": ("mla.q_a_proj", "mla.kv_a_proj_with_mqa")}


def k3lab_name(pattern: str) -> str | None:
    """The k3lab inventory tensor (or fused group) a sglang tensor pattern belongs to;
    None when k3lab has no counterpart."""
    for rx, name in _NAME_MAP:
        if rx.match(pattern):
            return name
    return None


# --------------------------------------------------------------------------- comparison

def k3lab_setting(layout: str, plat_key: str) -> dict:
    """The switches of one case as k3lab's sharding model takes them (API-neutral):
    ``platform`` (cuda | rocm), ``aiter_k3_opt``, ``ep``, ``ep_a2a``, ``dp_attention``."""
    lay = LAYOUTS[layout]
    return {"platform": "rocm" if plat_key.startswith("rocm") else "cuda", "sm100": plat_key.startswith("cuda-sm100"),
            "aiter_k3_opt": plat_key.endswith("+k3opt"),
            "ep": lay.ep > 1, "ep_a2a": lay.ep > 1 and lay.a2a != "none",
            "dp_attention": lay.dp_attention}


#: For the pre-refactor k3lab (``memory.layout_variant``): the variant(s) closest to a
#: setting, applied in order (``memory._rank_rows`` then takes the merged layout).
_OLD_VARIANTS = {"rocm": "moe_pad256", "ep_a2a": "ep_a2a", "dp_attention": "dp_attention"}


def _k3lab_api():
    """``('setting', k3lab.model.sharding)`` when k3lab has the Setting-based sharding
    model, else ``('layout', k3lab.memory)`` (``layout_variant`` / ``_rank_rows``)."""
    try:
        from ..model import sharding

        if hasattr(sharding, "rank_rows") and hasattr(sharding, "Setting"):
            return "setting", sharding
    except ImportError:
        pass
    from .. import memory

    return "layout", memory


def _old_layout(setting: dict) -> tuple[dict, str]:
    from .. import memory

    names = ["default"]
    # the old model splits the expert intermediate by tp even under EP (same bytes, since
    # 896 x 384 = 112 x 3072), so AITER's 256 padding applies only without EP
    if setting["platform"] == "rocm" and not setting["aiter_k3_opt"] and not setting["ep"]:
        names.append(_OLD_VARIANTS["rocm"])
    if setting["ep_a2a"]:
        names.append(_OLD_VARIANTS["ep_a2a"])
    if setting["dp_attention"]:
        names.append(_OLD_VARIANTS["dp_attention"])
    base = memory.sharding_layout()
    lay = memory.layout_variant("default")
    for v in names[1:]:
        other = memory.layout_variant(v)
        for k, spec in other["tensors"].items():
            if spec != base["tensors"][k]:
                lay["tensors"][k] = dict(spec)
        for k, val in other.get("options", {}).items():
            if val != base.get("options", {}).get(k):
                lay["options"][k] = val
    return lay, "+".join(names)


def k3lab_rows(tp: int, pp: int, stage: int, setting: dict, cfg=None) -> tuple[list[dict], str]:
    """k3lab's per-tensor rows on one rank of ``stage`` (runtime rows included) and a label
    of what was called: ``k3lab.model.sharding.rank_rows(cfg, tp, pp, stage,
    Setting(**setting))``, or on the pre-refactor k3lab ``k3lab.memory._rank_rows`` with
    ``memory.layout_variant`` layouts."""
    from ..specs import load_model

    cfg = load_model("kimi-k3") if cfg is None else cfg
    kind, mod = _k3lab_api()
    if kind == "setting":
        st = mod.Setting(**setting)
        return mod.rank_rows(cfg, tp, pp, stage, st), f"model.sharding.rank_rows({st})"
    lay, label = _old_layout(setting)
    return mod._rank_rows(cfg, tp, pp, stage, lay), f"memory._rank_rows(layout_variant {label})"


def k3lab_rank_bytes(tp: int, pp: int, stage: int, setting: dict, cfg=None) -> tuple[dict, str]:
    """k3lab's bytes per inventory tensor on one rank (fused groups of :data:`FUSED_GROUPS`
    summed) and the label of the k3lab call (see :func:`k3lab_rows`)."""
    rows, label = k3lab_rows(tp, pp, stage, setting, cfg)
    out: dict[str, int] = {}
    for r in rows:
        out[r["tensor"]] = out.get(r["tensor"], 0) + int(r["rank_bytes"])
    for group, parts in FUSED_GROUPS.items():
        out[group] = sum(out.pop(p, 0) for p in parts)
    return out, label


def k3lab_stage_bytes(tp: int, pp: int, setting: dict, cfg=None) -> list[int]:
    """k3lab's weight bytes per rank of each stage: ``k3lab.model.sharding.
    stage_weights_bytes(cfg, tp, pp, Setting(**setting))`` (pre-refactor:
    ``memory.stage_weights_bytes(cfg, tp, pp, layout)``)."""
    from ..specs import load_model

    cfg = load_model("kimi-k3") if cfg is None else cfg
    kind, mod = _k3lab_api()
    if kind == "setting":
        return list(mod.stage_weights_bytes(cfg, tp, pp, mod.Setting(**setting)))
    from .. import memory

    return list(memory.stage_weights_bytes(cfg, tp, pp, layout=_old_layout(setting)[0]))


def sglang_group_bytes(case: dict) -> dict:
    """Compact case → bytes per k3lab tensor name (sglang's side); unmapped patterns are
    kept under their own pattern prefixed ``sglang-only:``."""
    out: dict[str, int] = {}
    for r in case["tensors"]:
        key = r.get("k3lab_tensor") or k3lab_name(r["name"]) or f"sglang-only: {r['name']}"
        out[key] = out.get(key, 0) + int(r["bytes"])
    proc = case.get("process_weights_after_loading") or {}
    if proc.get("ran"):  # SM100 flashinfer_mxfp4: biases become fp32, SiTU params appear
        for name, d in proc["delta_bytes_rank_by_tensor"].items():
            key = k3lab_name(name) or f"sglang-only: {name}"
            out[key] = out.get(key, 0) + int(d)
    return out


def sglang_rank_bytes(case: dict) -> int:
    """sglang's weight bytes on the rank once loaded: parameters + buffers of the meta
    build, the tensors ``post_load_weights`` adds (w_kc / w_vc) and the change made by the
    experts' ``process_weights_after_loading`` where it could be run (SM100)."""
    proc = case.get("process_weights_after_loading") or {}
    return (case["totals"]["bytes"] + case["post_load"]["runtime_bytes"]
            + (proc.get("delta_bytes_rank", 0) if proc.get("ran") else 0))


def compare(case: dict, layout: str, plat_key: str, cfg=None) -> list[dict]:
    """Per k3lab tensor (group): sglang 0.5.23's bytes on this rank once loaded
    (:func:`sglang_group_bytes`) vs k3lab's (:func:`k3lab_rank_bytes` with
    :func:`k3lab_setting`). Rows sorted by tensor; ``diff = k3lab − sglang``."""
    lay = LAYOUTS[layout]
    stage = int(case["resolved"]["pp_rank"])
    k3, label = k3lab_rank_bytes(lay.tp, lay.pp, stage, k3lab_setting(layout, plat_key), cfg)
    sg = sglang_group_bytes(case)
    rows = []
    for name in sorted(set(k3) | set(sg)):
        a, b = k3.get(name, 0), sg.get(name, 0)
        rows.append({"tensor": name, "k3lab_bytes": a, "sglang_bytes": b, "diff_bytes": a - b,
                     "k3lab_call": label})
    return rows


def cause(tensor: str, layout: str, plat_key: str) -> str:
    """Why sglang 0.5.23 and k3lab's model differ for ``tensor`` in this case (read from the
    0.5.23 source; used in test messages and the report)."""
    lay = LAYOUTS[layout]
    if "zero bias" in tensor:
        if plat_key == "cuda-sm100" and lay.ep == 1:
            return ("SM100 flashinfer_mxfp4: mxfp4.py Mxfp4MoEMethod.process_weights_after_loading "
                    "(use_flashinfer branch) converts the zero biases to float32 before shuffling "
                    "and re-registers them, so they hold 4 B/element, not k3lab's bf16 2 B")
        if plat_key.startswith("rocm"):
            return ("mxfp4.py Mxfp4MoEMethod.create_weights allocates w13_weight_bias / "
                    "w2_weight_bias only when `with_bias or not _is_hip`; KimiK3MoE builds the "
                    "experts without biases, so ROCm holds none (k3lab adds them everywhere: "
                    "data/sglang_sharding.yaml options.mxfp4_zero_bias, cited from 0.5.16)")
        if lay.ep > 1 and "w2" in tensor:
            return ("w2_weight_bias is [num_local_experts, hidden] = [112, 3584] under EP8, not "
                    "[896, 3584]: k3lab's ep_a2a variant sizes the bias from the TP split of all "
                    "896 experts (memory._rank_rows: bias elements = shape[0] of the TP shard)")
        return "zero-bias shape differs (mxfp4.py Mxfp4MoEMethod.create_weights)"
    if tensor == "embed_tokens" and lay.dp_attention:
        return ("vocab_parallel_embedding.py get_embedding_tp_kwargs: under DP attention the "
                "input embedding is split over the attention-TP group (use_attn_tp_group=True); "
                f"attn_tp = {lay.tp // lay.dp} here, so each rank holds "
                f"1/{lay.tp // lay.dp} of the 163840x7168 table, not 1/{lay.tp} "
                "(k3lab's dp_attention variant keeps the vocab rule over tp)")
    if tensor.startswith("moe.experts.w"):
        return ("per-rank expert intermediate padding: mxfp4.py Mxfp4MoEMethod.create_weights "
                "rounds it up to 128 (SM100 flashinfer_mxfp4), 256 (AITER) or 128 (AITER with "
                "SGLANG_AITER_K3_OPT=1); k3lab's layout pads to options.moe_intermediate_pad_to")
    if tensor.startswith("sglang-only:"):
        return "a tensor k3lab does not model"
    return "see the per-tensor shapes in the committed transcript"


def rank_totals(doc: dict) -> dict:
    """Totals of a full (uncompacted) probe record: parameters + buffers, and resident
    after ``post_load_weights``."""
    post = doc.get("post_load", {})
    return {"bytes": doc["totals"]["bytes"], "resident_after_post_load_bytes": post.get("resident_bytes")}


if __name__ == "__main__":
    raise SystemExit(_child_main())
