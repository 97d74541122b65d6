"""sglang 0.5.23's real start-up pool sizing of Kimi K3, driven on a CPU.

Runs ``mem_cache/kv_cache_configurator.py`` ``KVCacheConfigurator._resolve_memory_pool_config``
— ``_profile_available_bytes`` → ``_handle_max_mamba_cache`` (the state pool's three
branches) → ``config_from_budget`` (``model_executor/pool_configurator.py``
``DefaultPoolConfigurator``; ``_apply_token_constraints``) → ``resolve_max_num_reqs`` — of the
release itself, for Kimi K3 (``data/model/kimi_k3_config.json``, the published config) under
the server arguments a case gives, in a child process of ``.venv-sglang`` with the 0.5.23 folder
first on ``PYTHONPATH`` (the parent's own sglang may be another release).

Real: ``ServerArgs`` (every argument hook of the release, published as a scheduler would), the
``ModelConfig`` and its ``mambaish_config`` (the state slot, ``mamba_cache_per_req``), the
configurator's methods named above and ``DefaultPoolConfigurator``. Stubbed, because they need a
GPU or a running server:

- ``get_available_gpu_memory`` (``torch.cuda.mem_get_info`` behind it): returns the free GiB
  after loading that the case gives; ``pre_model_load_memory`` is passed in as the case gives it;
- the configurator instance is made without its ``__init__`` (which needs the model runner's
  ``layer_info``, ``spec_aux_config`` and stream): its fields are set from the real server
  arguments and model config, ``layer_info`` a stand-in naming the stage's layer range;
- the world process group: a stand-in (``StandInGroup``, as the K3 build probe uses);
- the platform: CUDA SM100 emulated (``override_platform``; the module flags the K3 build
  probe flips), so the release picks what it picks on a B300 (``trtllm_mla``, 64-token pages);
- under PP, ``torch.distributed.all_reduce`` (the MIN of token capacities over stages in
  ``_apply_token_constraints``): the child first sizes every stage with the identity, then
  again with the minimum of the first pass, which is what the collective returns.

The branch each run took is read from sglang's own record of the override it wrote
(``RuntimeContext._overrides_log``: ``mamba_pool.per_dp_shard``,
``mamba_pool.from_max_running_requests``, ``mamba_pool.memory_budget``).

Used by ``tests/sglang/test_sglang_kv_configurator.py``; run by hand:
``python -m k3lab.probes.kv_configurator --cases cases.json --out out.json`` (in the child
environment).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..paths import REPO_ROOT
from .sglang_k3_build.layouts import RELEASE
from .topk_repro import sglang_0523_dir

#: sglang's override names → k3lab's branch names (k3lab.model.pool_settings.BRANCHES)
OVERRIDE_BRANCH = {"mamba_pool.per_dp_shard": "explicit",
                   "mamba_pool.from_max_running_requests": "from_max_running_requests",
                   "mamba_pool.memory_budget": "ratio", "mamba_pool.memory_budget_spec": "ratio"}


#: the ServerArgs keywords that decide the parallel topology (the process-global groups a
#: child publishes): cases that differ in them run in different children
TOPOLOGY_KEYS = ("tp_size", "pp_size", "dp_size", "enable_dp_attention")


def run_cases(cases: list[dict], python: str | None = None, timeout_s: float = 600) -> list[dict]:
    """Each case through sglang 0.5.23's configurator → one result per case, in order (one
    child process per parallel topology, :data:`TOPOLOGY_KEYS`).

    A case: ``{"server_args": {...}`` (``ServerArgs`` keywords besides the model path and
    device, e.g. ``tp_size``, ``pp_size``, ``mem_fraction_static``, ``max_mamba_cache_size``),
    ``"stages": [{"pre_model_load_gib": float, "available_gib": float}, …]`` (one per pipeline
    stage: the free GiB before loading, and after loading the weights)``}``. A result:
    ``{"stages": [{"max_total_num_tokens", "max_running_requests", "max_mamba_cache_size",
    "branch", "overrides", "own_token_capacity", "start_layer", "end_layer"}, …],
    "mamba_cache_per_req", "page_size", "disable_radix_cache", "mem_fraction_static",
    "mm_feature_transport", "max_running_requests_arg", …}``, or ``{"error": "…"}`` where the
    release refuses the case (a ValueError or RuntimeError at start-up). RuntimeError with the
    child's last lines when the child itself fails.
    """
    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(cases):
        groups.setdefault(tuple(c["server_args"].get(k) for k in TOPOLOGY_KEYS), []).append(i)
    out: list[dict] = [{}] * len(cases)
    for idx in groups.values():
        for i, r in zip(idx, _run_child([cases[i] for i in idx], python, timeout_s)):
            out[i] = r
    return out


def _run_child(cases: list[dict], python: str | None, timeout_s: float) -> list[dict]:
    target = sglang_0523_dir()
    if not (target / "sglang").is_dir():
        raise RuntimeError(f"sglang {RELEASE} is not installed in {target} (make sglang-env)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(target), str(REPO_ROOT)])
    with tempfile.TemporaryDirectory(prefix="k3lab-kvc-") as tmp:
        src, dst = Path(tmp) / "cases.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(cases), encoding="utf-8")
        proc = subprocess.run([python or sys.executable, "-m", "k3lab.probes.kv_configurator",
                               "--cases", str(src), "--out", str(dst)],
                              capture_output=True, text=True, env=env, cwd=tmp, timeout=timeout_s)
        if proc.returncode != 0 or not dst.exists():
            tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-15:])
            raise RuntimeError(f"sglang {RELEASE} KVCacheConfigurator child failed (exit {proc.returncode}):\n{tail}")
        return json.loads(dst.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the child


class _Sglang:
    """The release's modules, imported once in the child after the platform is emulated."""

    def __init__(self):
        os.environ.update({"SGLANG_K3_SP_COLLECTIVE": "0", "SGLANG_K3_AR_FUSION": "0"})
        import torch

        import sglang.srt.mem_cache.kv_cache_configurator as kvc
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.distributed.utils import get_pp_indices
        from sglang.srt.runtime_context import (SpawnRanks, get_context, get_memory, get_mm, get_parallel,
                                                get_schedule, override_platform, publish)
        from sglang.srt.server_args import ServerArgs
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        from .sglang_k3_build.emulation import CUDA_FLAGS, flip_flags
        from .sglang_k3_build.layouts import PLATFORMS

        flip_flags(CUDA_FLAGS)
        override_platform(**PLATFORMS["cuda-sm100"]["facts"]).install()
        self.torch, self.kvc, self.ModelConfig, self.get_pp_indices = torch, kvc, ModelConfig, get_pp_indices
        self.SpawnRanks, self.get_context, self.get_memory, self.get_mm = SpawnRanks, get_context, get_memory, get_mm
        self.get_parallel, self.get_schedule, self.publish, self.ServerArgs = get_parallel, get_schedule, publish, ServerArgs
        self.SpeculativeAlgorithm = SpeculativeAlgorithm


def _configurator(sg: _Sglang, sa, mc, start: int, end: int):
    """A ``KVCacheConfigurator`` of the real server args and model config, made without its
    ``__init__`` (see the module docstring for what stands in)."""
    from types import SimpleNamespace

    k = object.__new__(sg.kvc.KVCacheConfigurator)
    fields = dict(
        device="cuda", gpu_id=0, attn_dp_size=sg.get_parallel().attn_dp_size, pp_size=sa.pp_size, pp_group=None,
        model=None, model_config=mc, server_args=sa, kv_cache_dtype=sg.torch.bfloat16,
        model_dtype=sg.torch.bfloat16, page_size=sg.get_schedule().page_size, sliding_window_size=None,
        spec_algorithm=sg.SpeculativeAlgorithm.NONE, is_draft_worker=False, post_capture_kv_active=False,
        spec_aux_config=SimpleNamespace(draft_model_config=None, dflash_draft_num_layers=None,
                                        eagle_draft_num_layers=None),
        is_hybrid_swa=False, is_hybrid_swa_compress=False, use_mla_backend=True,
        layer_info=SimpleNamespace(start_layer=start, end_layer=end, num_effective_layers=end - start,
                                   is_hybrid_swa_mtp_draft=False, swa_attention_layer_ids=[]),
        forward_stream=None, req_to_token_pool=None, token_to_kv_pool_allocator=None, memory_pool_config=None,
        draft_parallel_layout=None, dflash_draft_cell_size_per_token=None, draft_model_idx=None,
        kv_cache_dtype_str="auto", extra_mamba_cache_bytes_per_req=0,
        mambaish_config=sg.kvc.mambaish_config(mc), hybrid_gdn_config=sg.kvc.hybrid_gdn_config(mc),
        hybrid_kda_config=sg.kvc.hybrid_kda_config(mc), kv_shard_rank=None, kv_shard_size=1,
        kv_shard_spec=None, kv_shard_group=None, is_hybrid_swa_mtp_draft=False, draft_swa_full_capacity=False)
    for name, value in fields.items():
        setattr(k, name, value)
    return k


def _run_stage(sg: _Sglang, model_dir: str, server_args: dict, rank: int, stage: dict, token_min: int | None):
    from .sglang_k3_build.emulation import StandInGroup

    sa = sg.ServerArgs(model_path=model_dir, device="cuda", **server_args)
    sg.publish(sa, role="scheduler", ranks=sg.SpawnRanks(world_rank=rank * sa.tp_size))
    sg.get_parallel().override_permanently(world_group=StandInGroup("world", rank * sa.tp_size,
                                                                    sa.tp_size * sa.pp_size))
    mc = sg.ModelConfig.from_server_args(sa)
    start, end = sg.get_pp_indices(mc.num_hidden_layers, rank, sa.pp_size)
    k = _configurator(sg, sa, mc, start, end)
    sg.kvc.get_available_gpu_memory = lambda *a, **kw: float(stage["available_gib"])
    seen = {}
    real_all_reduce = sg.torch.distributed.all_reduce

    def all_reduce(tensor, op=None, group=None):  # PP's MIN over stages: see the module docstring
        seen["own"] = int(tensor.item())
        if token_min is not None:
            tensor.fill_(token_min)

    sg.torch.distributed.all_reduce = all_reduce
    log0 = len(sg.get_context()._overrides_log)
    try:
        cfg = k._resolve_memory_pool_config(float(stage["pre_model_load_gib"]))
    finally:
        sg.torch.distributed.all_reduce = real_all_reduce
    overrides = [src for src, _ in sg.get_context()._overrides_log[log0:] if src.startswith("mamba_pool.")]
    return {
        "max_total_num_tokens": int(cfg.max_total_num_tokens), "max_running_requests": int(cfg.max_running_requests),
        "max_mamba_cache_size": int(sg.get_schedule().max_mamba_cache_size),
        "branch": OVERRIDE_BRANCH.get(overrides[-1]) if overrides else None, "overrides": overrides,
        "own_token_capacity": seen.get("own"), "start_layer": start, "end_layer": end,
    }, {
        "mamba_cache_per_req": int(k.mambaish_config.mamba2_cache_params.mamba_cache_per_req),
        "page_size": int(sg.get_schedule().page_size), "disable_radix_cache": bool(sg.get_memory().disable_radix_cache),
        "mem_fraction_static": float(sg.get_schedule().mem_fraction_static),
        "mm_feature_transport": sg.get_mm().mm_feature_transport,
        "max_running_requests_arg": sg.get_schedule().max_running_requests,
        "mamba_full_memory_ratio": sg.get_schedule().mamba_full_memory_ratio,
        "is_multimodal": bool(mc.is_multimodal), "context_len": int(mc.context_len),
    }


def child_main(argv: list[str] | None = None) -> int:
    from importlib.metadata import version

    ap = argparse.ArgumentParser(prog="python -m k3lab.probes.kv_configurator", allow_abbrev=False)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if version("sglang") != RELEASE:
        raise SystemExit(f"expected sglang {RELEASE} first on PYTHONPATH, got {version('sglang')}")
    from .sglang_k3_build.config import project_text_config, published_config

    sg = _Sglang()
    cases = json.loads(Path(a.cases).read_text(encoding="utf-8"))
    out = []
    with tempfile.TemporaryDirectory(prefix="k3lab-k3cfg-") as model_dir:
        (Path(model_dir) / "config.json").write_text(json.dumps(published_config(project_text_config())),
                                                    encoding="utf-8")
        for case in cases:
            stages = case["stages"]
            try:
                first = [_run_stage(sg, model_dir, case["server_args"], r, st, None) for r, st in enumerate(stages)]
                if len(stages) > 1:  # again, with the MIN the PP collective returns
                    low = min(s["own_token_capacity"] for s, _ in first)
                    first = [_run_stage(sg, model_dir, case["server_args"], r, st, low)
                             for r, st in enumerate(stages)]
            except (ValueError, RuntimeError) as e:  # what the release refuses at start-up
                out.append({"sglang_version": version("sglang"), "error": f"{type(e).__name__}: {e}"})
                continue
            out.append({**first[0][1], "sglang_version": version("sglang"), "stages": [s for s, _ in first]})
    Path(a.out).write_text(json.dumps(out, indent=1, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(child_main())
