"""The parallel layouts and emulated platforms the K3 build probe runs, and the keys of its cases.

:data:`LAYOUTS` (TP, PP, expert parallelism without and with an all-to-all backend, DP attention) ×
:data:`PLATFORM_CASES` (SM100 CUDA; ROCm gfx950 with AITER, with and without
``SGLANG_AITER_K3_OPT``); :data:`PLATFORMS` holds what each emulated platform tells sglang.
Plain data, no sglang import: the parent and the child both read it.
"""

from __future__ import annotations

from dataclasses import dataclass

RELEASE = "0.5.23"

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
    "tp8-ep8": Layout("tp8-ep8", 8, ep=8,
                      note="expert parallel over the 8 TP ranks without an all-to-all backend "
                           "(--ep-size 8; whole experts per rank, all-reduce combine); attention stays TP8"),
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


def iter_cases(layouts=None):
    """(layout, platform, SGLANG_AITER_K3_OPT, stage) of every probed rank, in order."""
    for name in (layouts or LAYOUTS):
        for platform, opt in PLATFORM_CASES:
            for stage in range(LAYOUTS[name].pp):
                yield name, platform, opt, stage
