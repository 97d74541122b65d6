"""What lets sglang 0.5.23 build Kimi K3 for one rank of a GPU layout on a CPU box.

Stand-in process groups (:class:`StandInGroup`), the module-level platform flags a CUDA
SM100 or ROCm gfx950 build computes at import (:data:`CUDA_FLAGS`, :data:`HIP_FLAGS`,
set by :func:`flip_flags`), and placeholders for the all-to-all libraries that are not
installed (:func:`stub_a2a_libraries`). Each returns what it changed, which the record
lists.
"""

from __future__ import annotations

import importlib
import sys
import types

# Module-level platform flags and the value each emulated build gives them.
CUDA_FLAGS = {"_is_cuda": True, "_IS_CUDA": True, "_is_cuda_alike": True}
HIP_FLAGS = {"_is_hip": True, "_IS_HIP": True, "_is_cuda": False, "_IS_CUDA": False,
             "_use_aiter": True, "_is_gfx95_supported": True, "_is_gfx95": True,
             "_IS_GFX95": True, "_is_shuffle_moe_mxfp4": True}


class StandInGroup:
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
        return f"StandInGroup({self.unique_name}, {self.rank_in_group}/{self.world_size})"


def flip_flags(flags: dict, aiter_k3_opt: bool | None = None) -> list[str]:
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


def stub_a2a_libraries(a2a: str) -> list[str]:
    """Let an a2a dispatcher be constructed without its communication library (none is
    installed on a CPU box). Dispatchers hold no weights; their buffers and ops are made
    lazily at first use (``token_dispatcher/deepep.py`` ``_DeepEPDispatcherImplBase``,
    ``token_dispatcher/moriep.py`` ``mori_op``). Returns what was stubbed."""
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
