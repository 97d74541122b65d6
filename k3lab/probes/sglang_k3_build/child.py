"""The child side of the K3 build probe: one rank of sglang 0.5.23's Kimi K3 on the meta device.

Runs in a fresh ``.venv-sglang`` interpreter with sglang 0.5.23 first on ``PYTHONPATH``
(``python -m k3lab.probes.sglang_k3_build …``, launched by
:func:`k3lab.probes.sglang_k3_build.runner.run_probe`). :func:`build_rank` sets the
platform's environment, imports torch and sglang only then (so sglang's import-time flags
see it; the parent, whose own sglang is another release, never imports them), emulates
the platform (:mod:`.emulation`), builds ``KimiK3LinearForCausalLM`` as sglang's loader
would for that rank, and returns every parameter and buffer with its bytes as stored,
plus what ``post_load_weights`` and (SM100) the experts' ``process_weights_after_loading``
add. :func:`child_main` is the command line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from importlib.metadata import version
from pathlib import Path

from .config import project_text_config, published_config
from .emulation import CUDA_FLAGS, HIP_FLAGS, StandInGroup, flip_flags, stub_a2a_libraries
from .layouts import BASE_ENV, PLATFORMS


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
        flipped = flip_flags(HIP_FLAGS, get_bool_env_var("SGLANG_AITER_K3_OPT"))
    else:
        flipped = flip_flags(CUDA_FLAGS)
    override_platform(**PLATFORMS[platform]["facts"]).install()
    stubs = stub_a2a_libraries(a2a)

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
            json.dumps(published_config(project_text_config())), encoding="utf-8")
        sa = ServerArgs(model_path=tmp, **sa_kwargs)
        publish(sa, role="scheduler", ranks=SpawnRanks(world_rank=rank))
        p = get_parallel()
        tp_g = StandInGroup("tp", p.tp_rank, p.tp_size)

        def group(name, rank_, size):
            return tp_g if size == p.tp_size else StandInGroup(name, rank_, size)

        p.override_permanently(
            tp_group=tp_g, pp_group=StandInGroup("pp", p.pp_rank, p.pp_size),
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


def child_main(argv=None) -> int:
    """``python -m k3lab.probes.sglang_k3_build``: build one rank, print or write its record."""
    ap = argparse.ArgumentParser(prog="python -m k3lab.probes.sglang_k3_build",
                                 description="One rank of sglang 0.5.23's Kimi K3 on the meta device.",
                                 allow_abbrev=False)
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
