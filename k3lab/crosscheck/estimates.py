"""aiconfigurator's estimates of Kimi K3: per-GPU memory, serving throughput, sweeps and peaks.

:func:`memory_estimate` and :func:`throughput` build aiconfigurator's K3 model for one
TP×PP layout on a target from :mod:`k3lab.crosscheck.systems` and return
:class:`~k3lab.crosscheck.results.AicMemory` / :class:`~k3lab.crosscheck.results.AicThroughput`
with provenance (tool, version, database, quantisation); :func:`sweep` runs
:func:`throughput` over layouts × concurrencies and :func:`peaks` picks each layout's best
concurrency. The modes, the scheduling model and what is not modelled are in the
package docstring (:mod:`k3lab.crosscheck`).
"""

from __future__ import annotations

import math
import time
from collections import Counter

import pandas as pd

from ._aic import (TOOL, TOOL_VERSION, _aic_build_model_config, _aic_common, _aic_get_backend, _aic_get_model,
               _aic_k3_moe_mode, _aic_kv_cache_budget_bytes, _aic_sglang_mem_fraction, _AicRuntimeConfig)
from .results import AicMemory, AicThroughput
from .systems import HardwareSpec, Target, database_view, resolve_target

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

SCHEDULERS = ("static", "agg")
KV_DTYPES = ("bfloat16", "fp8")

#: The study's layouts (gpu, num_gpus, tp, pp) and concurrencies (``--max-concurrency``).
STUDY_CONFIGS = (("b300", 8, 8, 1), ("b200", 16, 16, 1), ("b200", 16, 8, 2), ("mi355x", 8, 8, 1))
STUDY_CONCURRENCIES = (1, 4, 8, 16, 24, 32, 64, 128)

_GiB = 1 << 30


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


def _model(t: Target, tp, pp, moe_ep, moe_quant, kv_dtype, nextn):
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


def _provenance(t: Target, db, quant) -> dict:
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
    t = resolve_target(gpu, "sol" if hardware is not None else "silicon", hardware, backend, backend_version, None)
    db = database_view(t)
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
    t = resolve_target(gpu, mode, hardware, backend, backend_version, scale_out_gbit_s_per_gpu)
    db = database_view(t)
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
