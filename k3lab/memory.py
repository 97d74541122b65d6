"""Finding 1: does a model fit a GPU configuration, and how much KV cache is left?

The public API of the study (names other code and notebooks rely on):

- :func:`count_params` → ``.total``, ``.active``, per-component breakdown;
  :func:`checkpoint_bytes` (from :mod:`k3lab.model.inventory`);
- :func:`weights_bytes_per_gpu` (the heaviest rank, replicated tensors included;
  :mod:`k3lab.model.sharding`); :func:`kv_bytes_per_token` (:mod:`k3lab.model.capacity`);
- :func:`plan` / :func:`fit` → :class:`Plan`: weights per GPU, and the KV pool as sglang
  0.5.23 sizes it at start-up (:mod:`k3lab.model.pool_sizing`): ``max_kv_tokens`` is the
  ``max_total_num_tokens`` a server would log;
- :func:`cli_main`: ``python -m k3lab fit``.

Units: bytes unless a name says otherwise (GB = 1e9 B, GiB = 2**30 B); tokens; requests.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field

from . import data
from .model import pool_sizing as ps
from .model import resident
from .model.capacity import KV_DTYPES, STATE_DTYPES, check_dtype, kda_state_bytes_per_request, kv_bytes_per_token
from .model.inventory import COMPONENTS, checkpoint_bytes, count_params, inventory, routed_expert_bytes
from .model._checks import check_size
from .model.sharding import (VARIANTS, pp_stages, rank_rows, setting_for, shard_table,
                             stage_weights_bytes)
from .model.sharding import weights_bytes_per_gpu as _weights
from .specs import GB, GiB, GPU, Deployment, ModelConfig, known_gpus, known_models, load_gpu, load_model

__all__ = ["COMPONENTS", "count_params", "checkpoint_bytes", "routed_expert_bytes", "inventory",
           "weights_bytes_per_gpu", "kv_bytes_per_token", "kda_state_bytes_per_request", "shard_table",
           "pp_stages", "VARIANTS", "FIT_VARIANTS", "Plan", "plan", "fit", "cli_main"]

#: sglang 0.5.23 defaults that enter the pool sizing (each cited in k3lab.model.pool_sizing)
SLOTS_PER_REQUEST = ps.mamba_slots_per_request()  # extra_buffer with the radix cache: 5
#: DSPARK sets --max-running-requests 48 when none is given (speculative_hook._handle_dspark)
DSPARK_MAX_RUNNING_REQUESTS = 48

#: what ``--variant`` takes: sglang's layout switches, and the article's speculative draft
FIT_VARIANTS = {**VARIANTS,
                "dspark": "--speculative-algorithm DSPARK with RadixArk/Kimi-K3-DSpark: the draft's weights "
                          "(data/model/kimi_k3_dspark_draft.yaml) and its own KV beside the target's; "
                          "max_running_requests 48 (sglang 0.5.23 speculative_hook._handle_dspark)"}


def dspark_draft():
    """The DSpark draft's geometry (``data/model/kimi_k3_dspark_draft.yaml``, validated)."""
    return data.load("dspark_draft")


def draft_bytes_per_rank(cfg: ModelConfig, tp: int) -> int:
    """Resident bytes of the DSpark draft on one rank at TP=``tp`` (bf16; shares the target's
    embedding and lm_head; :func:`k3lab.model.resident.dflash_draft_weight_bytes_per_rank`)."""
    d = dspark_draft()
    return resident.dflash_draft_weight_bytes_per_rank(
        hidden_size=d.hidden_size, num_layers=d.num_layers, num_heads=d.num_heads,
        num_kv_heads=d.num_kv_heads, head_dim=d.head_dim, intermediate_size=d.intermediate_size,
        num_context_features=d.num_context_features, tp_size=tp, vocab_size=cfg.vocab_size,
        markov_rank=d.markov_rank, confidence_head=d.confidence_head)


def draft_kv_bytes_per_token(tp: int, kv_dtype: str) -> int:
    """The DSpark draft's own KV per token per rank (its GQA heads, not an MLA latent)."""
    d = dspark_draft()
    return ps.dflash_draft_cell_bytes_per_token(
        num_kv_heads=d.num_kv_heads, head_dim=d.head_dim, v_head_dim=d.head_dim,
        num_layers=d.num_layers, attn_tp_size=tp, kv_dtype_bytes=2 if kv_dtype == "bf16" else 1)


def weights_bytes_per_gpu(cfg: ModelConfig, tp: int = 8, pp: int = 1, variants=(), gpu: str = "b300",
                          runtime: bool = True) -> int:
    """Weight bytes on the heaviest rank at TP=``tp`` (× PP=``pp``) under sglang 0.5.23, on
    ``gpu``'s platform (default an NVIDIA GPU; MI355X gets ROCm's layout) with ``variants``."""
    return _weights(cfg, tp, pp, setting_for(load_gpu(gpu).vendor, variants, load_gpu(gpu).arch), runtime)


def vision_tower_bytes(cfg: ModelConfig) -> int:
    """Bytes of the vision tower + projector a multimodal checkpoint loads on EVERY rank
    (sglang 0.5.23 runs Kimi K3's MoonViT replicated); 0 for a text-only config."""
    v = cfg.raw.get("vision_config")
    if not v:
        return 0
    try:
        return resident.moonvit_weight_bytes(
            num_layers=v["vt_num_hidden_layers"], hidden_size=v["vt_hidden_size"],
            qkv_hidden_size=v["qkv_hidden_size"], intermediate_size=v["vt_intermediate_size"],
            patch_size=v["patch_size"], pos_emb_height=v["init_pos_emb_height"],
            pos_emb_width=v["init_pos_emb_width"], merge_kernel=tuple(v["merge_kernel_size"]),
            text_hidden_size=v["text_hidden_size"])
    except KeyError as e:
        raise ValueError(f"model config {cfg.name!r}: vision_config lacks {e}") from None


@dataclass(frozen=True)
class Plan:
    """The memory fit of one deployment, per GPU (bytes unless named otherwise).

    Weights: the heaviest rank's bytes (:mod:`k3lab.model.sharding`) plus what a
    multimodal checkpoint loads replicated (``other_resident_bytes``: the vision tower).
    The pools are sized as sglang 0.5.23 sizes them (:func:`k3lab.model.pool_sizing.size_pools`):
    ``rest = free after load − (1 − mem_fraction) × free before load − multimodal reserve``;
    a hybrid model carves its KDA state pool out of ``rest`` first (share r/(1+r), r = 0.9);
    the MLA latent cache gets the remainder. ``max_kv_tokens`` is the ``max_total_num_tokens``
    a server would log, ``max_running_requests`` likewise. ``max_full_context_requests``:
    concurrent requests of ``context_tokens`` the pools hold. ``fits``: the weights load and
    at least one full-context request fits. With PP the stage that runs out first binds.
    """

    label: str
    gpu: str
    platform: str
    variants: tuple
    num_gpus: int
    tp: int
    pp: int
    replicas: int
    mem_fraction: float
    kv_dtype: str
    state_dtype: str
    capacity_bytes_per_gpu: int
    weights_bytes_per_gpu: int
    other_resident_bytes_per_gpu: int
    reserve_bytes_per_gpu: int
    state_pool_bytes_per_gpu: int
    kv_pool_bytes_per_gpu: int
    kv_bytes_per_token: int
    kda_state_bytes_per_request: int
    page_size: int
    context_tokens: int
    max_kv_tokens: int
    max_running_requests: int
    max_full_context_requests: int
    weights_fit: bool
    fits: bool
    stage_weights_bytes: tuple = ()
    weights_by_component: dict = field(default_factory=dict)

    @property
    def free_bytes_per_gpu(self) -> int:
        """Capacity left after weights, reserve and both pools (≥ 0 when the weights fit)."""
        return (self.capacity_bytes_per_gpu - self.weights_bytes_per_gpu - self.other_resident_bytes_per_gpu
                - self.reserve_bytes_per_gpu - self.state_pool_bytes_per_gpu - self.kv_pool_bytes_per_gpu)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["stage_weights_bytes"] = list(self.stage_weights_bytes)
        d["variants"] = list(self.variants)
        d["free_bytes_per_gpu"] = self.free_bytes_per_gpu
        return d


def _page_size(gpu: GPU, cfg: ModelConfig) -> int:
    # Kimi K3 auto-selects trtllm_mla on SM100/SM103 (page 64; sglang 0.5.23
    # arg_groups/overrides.py _mla_backend_page_constraints); page 1 elsewhere
    return 64 if gpu.arch in ("sm100", "sm103") and cfg.has_kda else 1


def fit(cfg: ModelConfig, dep: Deployment, mem_fraction: float = 0.9, kv_dtype: str = "bf16",
        state_dtype: str = "fp32", context_tokens: int | None = None, variants=(),
        init_overhead_bytes: int = 0, slots_per_request: int = SLOTS_PER_REQUEST,
        max_running_requests: int | None = None) -> Plan:
    """The memory fit of ``cfg`` on a :class:`~k3lab.specs.Deployment` → :class:`Plan`.

    ``mem_fraction``: sglang's ``--mem-fraction-static`` in (0, 1]. ``variants``: names of
    :data:`VARIANTS` (``ep`` / ``dp-attention`` may also come from the deployment).
    ``init_overhead_bytes``: what the runtime holds before the weights load (CUDA/HIP context,
    collectives; not derivable from a config, 0 by default: an upper bound on the pool).
    ``slots_per_request``: state slots per running request (5 with sglang's default
    ``extra_buffer`` radix-cache strategy, 4 with ``extra_buffer_lazy``, 1 without the cache).
    ``max_running_requests``: sglang's ``--max-running-requests`` (None: sglang's default; 48
    with the DSpark draft, as the article's launch sets it). With ``dp-attention`` the state
    pool is shared by ``tp`` attention-DP ranks (``--dp-size`` = TP), as sglang divides it.
    """
    unknown = sorted(set(variants or ()) - set(FIT_VARIANTS))
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; known: {', '.join(FIT_VARIANTS)}")
    draft = "dspark" in (variants or ())
    if draft and not cfg.has_kda:
        raise ValueError(f"the dspark variant is Kimi K3's draft; {cfg.name} has no DSpark draft in data/model/")
    data.check_finite("mem_fraction", mem_fraction)
    if not 0 < mem_fraction <= 1:
        raise ValueError(f"mem_fraction must be in (0, 1], got {mem_fraction!r}")
    check_dtype("kv_dtype", kv_dtype, KV_DTYPES)
    check_dtype("state_dtype", state_dtype, STATE_DTYPES)
    ctx = cfg.max_position_embeddings if context_tokens is None else context_tokens
    data.check_count("context_tokens", ctx)
    if max_running_requests is not None:
        data.check_count("max_running_requests", max_running_requests)
    check_size("init_overhead_bytes", init_overhead_bytes)
    g = dep.gpu_spec
    variants = tuple(sorted(set(variants) | ({"ep"} if dep.ep else set()) | ({"dp-attention"} if dep.dp_attention else set())))
    setting = setting_for(g.vendor, [v for v in variants if v in VARIANTS], g.arch)
    tp, pp = dep.tp, dep.pp
    cap = g.usable_hbm_bytes
    weights = stage_weights_bytes(cfg, tp, pp, setting)  # checks tp and pp against the model first
    heavy = max(range(pp), key=lambda s: (weights[s], -s))
    other = vision_tower_bytes(cfg) + (draft_bytes_per_rank(cfg, tp) if draft else 0)
    mm_gib = ps.multimodal_reserve_gib(is_multimodal=other > 0)
    page = _page_size(g, cfg)
    attn_tp = 1 if setting.dp_attention else tp
    stages, weights_fit = [], True
    for s, (lo, hi) in enumerate(pp_stages(cfg, pp)):
        layers = range(lo, hi)
        cell = kv_bytes_per_token(cfg, kv_dtype, layers=layers) + (draft_kv_bytes_per_token(tp, kv_dtype) if draft else 0)
        slot = kda_state_bytes_per_request(cfg, attn_tp, state_dtype, layers=layers) if cfg.has_kda else 0
        try:
            pre, post = ps.free_memory_before_and_after_load(
                capacity_bytes=cap, init_overhead_bytes=init_overhead_bytes,
                weights_bytes=weights[s], other_resident_bytes=other)
            sized = ps.size_pools(pre_model_load_free_bytes=pre, post_load_free_bytes=post,
                                  mem_fraction_static=float(mem_fraction), cell_bytes_per_token=cell,
                                  context_len=ctx, state_bytes_per_slot=slot or None, page_size=page,
                                  slots_per_request=slots_per_request, mm_reserve_gib=mm_gib,
                                  max_running_requests=max_running_requests if max_running_requests is not None
                                  else (DSPARK_MAX_RUNNING_REQUESTS if draft else None),
                                  attn_dp_size=tp if setting.dp_attention else 1,
                                  speculative_num_draft_tokens=dspark_draft().block_size_tokens + 1 if draft else None)
        except ps.InsufficientMemoryError:
            weights_fit = False
            stages.append(None)
            continue
        stages.append((sized, cell, slot))
    by_comp = dict.fromkeys(COMPONENTS, 0)
    for r in rank_rows(cfg, tp, pp, heavy, setting):
        by_comp[r["component"]] += r["rank_bytes"]
    ok = [x for x in stages if x is not None]
    if weights_fit and ok:
        sized, cell, slot = min(ok, key=lambda x: x[0].max_total_num_tokens)
        tokens, reqs = sized.max_total_num_tokens, sized.max_running_requests
        kv_pool, state_pool = min(x[0].kv_pool_bytes for x in ok), max(x[0].state_pool_bytes for x in ok)
        full = min(tokens // ctx, reqs)
    else:
        cell = kv_bytes_per_token(cfg, kv_dtype)
        slot = kda_state_bytes_per_request(cfg, attn_tp, state_dtype) if cfg.has_kda else 0
        tokens = reqs = kv_pool = state_pool = full = 0
    return Plan(
        label=dep.label, gpu=g.key, platform=setting.platform, variants=variants, num_gpus=dep.num_gpus,
        tp=tp, pp=pp, replicas=dep.replicas, mem_fraction=float(mem_fraction), kv_dtype=kv_dtype,
        state_dtype=state_dtype, capacity_bytes_per_gpu=cap, weights_bytes_per_gpu=weights[heavy],
        other_resident_bytes_per_gpu=other, reserve_bytes_per_gpu=int(round((1 - mem_fraction) * (cap - init_overhead_bytes))),
        state_pool_bytes_per_gpu=state_pool, kv_pool_bytes_per_gpu=kv_pool, kv_bytes_per_token=cell,
        kda_state_bytes_per_request=slot, page_size=page, context_tokens=ctx, max_kv_tokens=tokens,
        max_running_requests=reqs, max_full_context_requests=full, weights_fit=weights_fit,
        fits=bool(weights_fit and full >= 1), stage_weights_bytes=tuple(weights), weights_by_component=by_comp)


def plan(cfg: ModelConfig, gpu, num_gpus: int, tp: int, mem_fraction: float = 0.9, kv_dtype: str = "bf16",
         pp: int = 1, state_dtype: str = "fp32", context_tokens: int | None = None, variants=(),
         hbm_gb: float | None = None, init_overhead_bytes: int = 0,
         max_running_requests: int | None = None) -> Plan:
    """Fit ``cfg`` on ``num_gpus`` × ``gpu`` (a name or a :class:`~k3lab.specs.GPU`) at
    TP=``tp`` × PP=``pp`` (``num_gpus`` a multiple of tp·pp; the rest are replicas).

    ValueError for an unknown GPU or variant, non-positive counts, a TP that does not
    divide the heads, or a ``mem_fraction`` outside (0, 1].
    """
    key = gpu.base if isinstance(gpu, GPU) else gpu
    if isinstance(gpu, GPU) and hbm_gb is None and gpu.usable_hbm_gb != load_gpu(key).usable_hbm_gb:
        hbm_gb = gpu.usable_hbm_gb
    dep = Deployment(key, num_gpus, tp, pp, ep="ep" in (variants or ()),
                     dp_attention="dp-attention" in (variants or ()), hbm_gb=hbm_gb)
    return fit(cfg, dep, mem_fraction, kv_dtype, state_dtype, context_tokens, variants,
               init_overhead_bytes=init_overhead_bytes, max_running_requests=max_running_requests)


# --------------------------------------------------------------------------- CLI


def format_plan(p: Plan, model: str) -> str:
    """A plan as the few lines a person reads (GiB with GB beside it)."""
    gib = lambda b: f"{b / GiB:8.1f} GiB ({b / GB:7.1f} GB)"  # noqa: E731
    var = f"; variants: {', '.join(p.variants)}" if p.variants else ""
    lines = [
        f"{model} on {p.label}  ({p.platform}{var})",
        f"  capacity per GPU      {gib(p.capacity_bytes_per_gpu)}",
        f"  weights per GPU       {gib(p.weights_bytes_per_gpu)}  (heaviest rank)",
        f"  other resident        {gib(p.other_resident_bytes_per_gpu)}  (vision tower, replicated; draft)",
        f"  reserve per GPU       {gib(p.reserve_bytes_per_gpu)}  (1 - mem_fraction {p.mem_fraction:g})",
        f"  KDA state pool        {gib(p.state_pool_bytes_per_gpu)}",
        f"  KV pool per GPU       {gib(p.kv_pool_bytes_per_gpu)}",
        f"  KV per token per GPU  {p.kv_bytes_per_token:,} B ({p.kv_dtype}, MLA layers on the rank)",
        f"  state per request     {p.kda_state_bytes_per_request:,} B ({p.state_dtype} recurrent + bf16 conv, per slot)",
        f"  max KV tokens         {p.max_kv_tokens:,}  (sglang's max_total_num_tokens)",
        f"  max running requests  {p.max_running_requests:,}",
        f"  {p.context_tokens:,}-token requests  {p.max_full_context_requests:,}",
        f"  weights fit: {'yes' if p.weights_fit else 'no'};  fits with a full-context request: "
        f"{'yes' if p.fits else 'no'}",
    ]
    return "\n".join(lines)


def _parser(gpus: list[str]) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m k3lab fit",
                                 description="Memory fit of a model on a GPU configuration under sglang 0.5.23.")
    ap.add_argument("--model", default="kimi-k3", help=f"one of: {', '.join(known_models())} (default kimi-k3)")
    ap.add_argument("--gpu", required=True, help=f"one of: {', '.join(gpus)}")
    ap.add_argument("--gpus", type=int, required=True, help="number of GPUs")
    ap.add_argument("--tp", type=int, required=True, help="tensor-parallel size")
    ap.add_argument("--pp", type=int, default=1, help="pipeline-parallel size (default 1)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME",
                    help="an sglang switch, repeatable: " + "; ".join(f"{k}: {v}" for k, v in FIT_VARIANTS.items()))
    ap.add_argument("--mem-fraction", type=float, default=0.9, help="sglang --mem-fraction-static (default 0.9)")
    ap.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES)
    ap.add_argument("--state-dtype", default="fp32", choices=STATE_DTYPES)
    ap.add_argument("--context", type=int, default=None, help="context length in tokens (default: the model's maximum)")
    ap.add_argument("--hbm-gb", type=float, default=None, help="override usable HBM per GPU in GB (1e9 B)")
    ap.add_argument("--max-running-requests", type=int, default=None,
                    help="sglang --max-running-requests (default: sglang's own; 48 with the dspark variant)")
    ap.add_argument("--init-overhead-gib", type=float, default=0.0,
                    help="GiB the runtime holds before the weights load (CUDA/HIP context, NCCL/RCCL "
                         "buffers; default 0, so the pools are an upper bound)")
    ap.add_argument("--json", action="store_true", help="print the plan as JSON")
    return ap


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab fit --gpu mi355x --gpus 8 --tp 8 [--model M] [--variant V …] [--json]``."""
    try:
        gpus = known_gpus()
    except data.DataError as e:
        print(f"k3lab fit: error: {e}", file=sys.stderr)
        return 2
    args = _parser(gpus).parse_args(argv)
    try:
        cfg = load_model(args.model)
        data.check_finite("--init-overhead-gib", args.init_overhead_gib, positive=False)
        if args.init_overhead_gib < 0:
            raise ValueError(f"--init-overhead-gib must be >= 0, got {args.init_overhead_gib!r}")
        p = plan(cfg, args.gpu, args.gpus, args.tp, args.mem_fraction, args.kv_dtype, pp=args.pp,
                 state_dtype=args.state_dtype, context_tokens=args.context, variants=args.variant,
                 hbm_gb=args.hbm_gb, init_overhead_bytes=int(args.init_overhead_gib * GiB),
                 max_running_requests=args.max_running_requests)
    except ValueError as e:
        print(f"k3lab fit: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(p.as_dict(), indent=2, sort_keys=True) if args.json else format_plan(p, cfg.name))
    return 0
