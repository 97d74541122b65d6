"""Finding 1: does a model fit a GPU configuration, and how much KV cache is left?

The public API of the study (names other code and notebooks rely on):

- :func:`count_params` → ``.total``, ``.active``, per-component breakdown;
  :func:`checkpoint_bytes` (from :mod:`k3lab.model.inventory`);
- :func:`weights_bytes_per_gpu` (the heaviest rank, replicated tensors included;
  :mod:`k3lab.model.sharding`); :func:`kv_bytes_per_token` (:mod:`k3lab.model.capacity`);
- :func:`plan` / :func:`fit` → :class:`Plan`: weights per GPU, and the KV pool as sglang
  0.5.23 sizes it at start-up (:mod:`k3lab.model.pool_sizing`): ``max_kv_tokens`` is the
  ``max_total_num_tokens`` a server would log;

Units: bytes unless a name says otherwise (GB = 1e9 B, GiB = 2**30 B); tokens; requests.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from . import data
from .model import pool_settings as pset
from .model import pool_sizing as ps
from .model import quant, resident
from .model.capacity import KV_DTYPES, STATE_DTYPES, check_dtype, kda_state_bytes_per_request, kv_bytes_per_token
from .model.inventory import COMPONENTS, checkpoint_bytes, count_params, inventory, layer_sets, routed_expert_bytes
from .model._checks import check_size
from .model.sharding import (VARIANTS, pp_stages, rank_rows, setting_for, shard_table,
                             stage_weights_bytes)
from .model.sharding import weights_bytes_per_gpu as _weights
from .specs import GiB, GPU, Deployment, ModelConfig, load_gpu

__all__ = ["COMPONENTS", "count_params", "checkpoint_bytes", "routed_expert_bytes", "inventory",
           "weights_bytes_per_gpu", "kv_bytes_per_token", "kda_state_bytes_per_request", "shard_table",
           "pp_stages", "VARIANTS", "FIT_VARIANTS", "Plan", "plan", "fit"]

#: sglang 0.5.23 defaults that enter the pool sizing (each cited in k3lab.model.pool_sizing)
SLOTS_PER_REQUEST = ps.mamba_slots_per_request()  # extra_buffer with the radix cache: 5
#: under PP sglang 0.5.23 turns the overlap scheduler off (arg_groups/overrides.py
#: _pipeline_parallel_overlap_disable), so extra_buffer tracks one slot less: 4
SLOTS_PER_REQUEST_PP = ps.mamba_slots_per_request(overlap_schedule=False)
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
    multimodal checkpoint loads replicated (``other_resident_bytes``: the vision tower, and
    the DSpark draft when that variant is asked; each also on its own). The pools are sized
    as sglang 0.5.23 sizes them (:func:`k3lab.model.pool_sizing.size_pools`, every pipeline
    stage: :func:`k3lab.model.pool_settings.size_stages`): ``rest = free after load − (1 −
    mem_fraction) × free before load − multimodal reserve``; a hybrid model carves its KDA
    state pool out of ``rest`` first, by the branch its ``state_pool_settings`` select
    (``state_pool_branch``; by default a share r/(1+r), r = 0.9); the MLA latent cache gets
    the remainder. ``max_kv_tokens``, ``max_running_requests`` and
    ``max_full_context_requests`` (concurrent requests of ``context_tokens`` the pools hold)
    are PER REPLICA (one server of tp × pp GPUs; ``replicas`` of them in the deployment, see
    the ``*_total`` properties). ``weights_fit``: the loaded weights leave the pools some
    memory; ``fits``: a full-context request fits under the settings asked;
    ``fits_with_defaults``: under sglang's default state pool; ``fit_options``: when it does
    not fit with the defaults, the state-pool settings under which it does
    (:func:`k3lab.model.pool_settings.search_settings`). With PP the stage that runs out
    first binds. ``init_overhead_bytes``: the start-up memory assumed held before the
    weights load (0 unless given: the pools are then an upper bound).
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
    init_overhead_bytes: int = 0
    vision_bytes_per_gpu: int = 0
    draft_bytes_per_gpu: int = 0
    mm_reserve_bytes_per_gpu: int = 0
    state_pool_settings: pset.StatePoolSettings = field(default_factory=pset.StatePoolSettings)
    state_pool_branch: str = "none"
    state_slots: int = 0
    slots_per_request: int = 0
    fits_with_defaults: bool = False
    fit_options: tuple = ()
    pool_note: str = ""
    moe_intermediate_per_gpu: int = 0         # an expert's MXFP4 intermediate on one GPU (0: not MXFP4)
    moe_intermediate_padded_per_gpu: int = 0  # as sglang's MXFP4 MoE method aligns it

    @property
    def free_bytes_per_gpu(self) -> int:
        """Capacity left after weights, reserve and both pools (≥ 0 when the weights fit)."""
        return (self.capacity_bytes_per_gpu - self.weights_bytes_per_gpu - self.other_resident_bytes_per_gpu
                - self.reserve_bytes_per_gpu - self.state_pool_bytes_per_gpu - self.kv_pool_bytes_per_gpu)

    @property
    def has_state_pool(self) -> bool:
        return self.kda_state_bytes_per_request > 0

    @property
    def verdict(self) -> str:
        """Over sglang's state-pool settings: ``weights do not fit``, ``fits with defaults``,
        ``fits only with a setting`` (see :attr:`fit_options`) or ``does not fit``."""
        if not self.weights_fit:
            return "weights do not fit"
        if self.fits_with_defaults:
            return "fits with defaults"
        return "fits only with a setting" if self.fit_options else "does not fit"

    @property
    def best_option(self):
        """The state-pool setting to name first (:func:`k3lab.model.pool_settings.best_option`)."""
        return pset.best_option(self.fit_options)

    @property
    def fit_setting(self) -> str | None:
        """The flags that would make the request fit, when it does not fit as asked and does
        not fit with the defaults either (None otherwise, or when no setting does)."""
        if self.fits or self.fits_with_defaults or self.best_option is None:
            return None
        return self.best_option.flags

    @property
    def fits_with(self) -> str:
        """One cell for a table: ``defaults``, the flags of :attr:`best_option`, ``no setting``
        or ``weights do not fit``."""
        v = self.verdict
        if v == "fits only with a setting":
            return self.best_option.flags
        return {"fits with defaults": "defaults", "does not fit": "no setting"}.get(v, v)

    @property
    def max_kv_tokens_total(self) -> int:
        return self.max_kv_tokens * self.replicas

    @property
    def max_running_requests_total(self) -> int:
        return self.max_running_requests * self.replicas

    @property
    def max_full_context_requests_total(self) -> int:
        return self.max_full_context_requests * self.replicas

    def as_dict(self) -> dict:
        d = asdict(self)
        d["stage_weights_bytes"] = list(self.stage_weights_bytes)
        d["variants"] = list(self.variants)
        d["free_bytes_per_gpu"] = self.free_bytes_per_gpu
        st = self.state_pool_settings
        d["state_pool_settings"] = {"mamba_full_memory_ratio": st.ratio if self.has_state_pool else None,
                                    "max_mamba_cache_size": st.max_mamba_cache_size,
                                    "disable_radix_cache": st.disable_radix_cache,
                                    "max_running_requests": st.max_running_requests, "flags": st.flags()}
        d["fit_options"] = [o.as_dict() for o in self.fit_options]
        d["init_overhead_gib"] = self.init_overhead_bytes / GiB
        d.update(verdict=self.verdict, fit_setting=self.fit_setting, fits_with=self.fits_with,
                 max_kv_tokens_total=self.max_kv_tokens_total,
                 max_running_requests_total=self.max_running_requests_total,
                 max_full_context_requests_total=self.max_full_context_requests_total)
        return d


def _page_size(gpu: GPU, cfg: ModelConfig) -> int:
    # Kimi K3 auto-selects trtllm_mla on SM100/SM103 (page 64; sglang 0.5.23
    # arg_groups/overrides.py _mla_backend_page_constraints); page 1 elsewhere
    return 64 if gpu.arch in ("sm100", "sm103") and cfg.has_kda else 1


def fit(cfg: ModelConfig, dep: Deployment, mem_fraction: float = 0.9, kv_dtype: str = "bf16",
        state_dtype: str = "fp32", context_tokens: int | None = None, variants=(),
        init_overhead_bytes: int = 0, slots_per_request: int | None = None,
        max_running_requests: int | None = None, mamba_full_memory_ratio: float | None = None,
        max_mamba_cache_size: int | None = None, disable_radix_cache: bool = False) -> Plan:
    """The memory fit of ``cfg`` on a :class:`~k3lab.specs.Deployment` → :class:`Plan`.

    ``mem_fraction``: sglang's ``--mem-fraction-static`` in (0, 1]. ``variants``: names of
    :data:`VARIANTS` (``ep`` / ``dp-attention`` may also come from the deployment).
    ``init_overhead_bytes``: what the runtime holds before the weights load (CUDA/HIP context,
    collectives; not derivable from a config, 0 by default: an upper bound on the pool).
    ``slots_per_request``: state slots per running request with the radix cache (None: as
    sglang resolves it, 5 with the default ``extra_buffer`` strategy and the overlap
    scheduler, 4 under PP, which turns the overlap scheduler off; 4 with
    ``extra_buffer_lazy``); 1 when ``disable_radix_cache``. ``max_running_requests``: sglang's ``--max-running-requests``
    (None: sglang's default; 48 with the DSpark draft, as the article's launch sets it).
    ``mamba_full_memory_ratio`` / ``max_mamba_cache_size`` / ``disable_radix_cache``: sglang's
    state-pool flags (:class:`k3lab.model.pool_settings.StatePoolSettings`; a model without
    linear attention takes none of the first two). With ``dp-attention`` the state pool is
    shared by ``tp`` attention-DP ranks (``--dp-size`` = TP), as sglang divides it.
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
    ctx = cfg.check_context(data.check_count("context_tokens", cfg.max_position_embeddings if context_tokens is None
                                             else context_tokens), "context_tokens")
    if max_running_requests is not None:
        data.check_count("max_running_requests", max_running_requests)
    check_size("init_overhead_bytes", init_overhead_bytes)
    if not cfg.has_kda:
        for flag, v in (("--mamba-full-memory-ratio", mamba_full_memory_ratio),
                        ("--max-mamba-cache-size", max_mamba_cache_size)):
            if v is not None:
                raise ValueError(f"{flag} has no effect on {cfg.name}: it has no linear-attention state pool")
    settings = pset.StatePoolSettings(
        mamba_full_memory_ratio=mamba_full_memory_ratio, max_mamba_cache_size=max_mamba_cache_size,
        disable_radix_cache=disable_radix_cache,
        max_running_requests=max_running_requests if max_running_requests is not None
        else (DSPARK_MAX_RUNNING_REQUESTS if draft else None))
    g = dep.gpu_spec
    variants = tuple(sorted(set(variants) | ({"ep"} if dep.ep else set()) | ({"dp-attention"} if dep.dp_attention else set())))
    setting = setting_for(g.vendor, [v for v in variants if v in VARIANTS], g.arch)
    tp, pp = dep.tp, dep.pp
    if slots_per_request is None:
        slots_per_request = SLOTS_PER_REQUEST_PP if pp > 1 else SLOTS_PER_REQUEST
    data.check_count("slots_per_request", slots_per_request)
    cap = g.usable_hbm_bytes
    if init_overhead_bytes >= cap:  # (the fit's flag names it: a library caller passes the same quantity)
        raise ValueError(f"--init-overhead-gib {init_overhead_bytes / GiB:g} is not below the {g.name}'s usable "
                         f"capacity, {cap / GiB:,.2f} GiB per GPU: the start-up overhead must leave room for the weights")
    weights = stage_weights_bytes(cfg, tp, pp, setting)  # checks tp and pp against the model first
    heavy = max(range(pp), key=lambda s: (weights[s], -s))
    vision = vision_tower_bytes(cfg)
    draft_w = draft_bytes_per_rank(cfg, tp) if draft else 0
    other = vision + draft_w
    mm_gib = ps.multimodal_reserve_gib(is_multimodal=other > 0)
    page = _page_size(g, cfg)
    attn_tp = 1 if setting.dp_attention else tp
    ranges = pp_stages(cfg, pp)
    if cfg.has_kda:
        kda = set(layer_sets(cfg)[2])
        slot = ps.pp_state_bytes_per_slot(kda_state_bytes_per_request(cfg, attn_tp, state_dtype),
                                          stage_linear_layers=[len(kda & set(range(lo, hi))) for lo, hi in ranges])
    else:
        slot = 0
    stages, weights_fit = [], True
    for s, (lo, hi) in enumerate(ranges):
        target_cell = kv_bytes_per_token(cfg, kv_dtype, layers=range(lo, hi))
        if target_cell == 0:  # sized as a pool of zero-byte cells it would hold "infinitely" many tokens
            raise ValueError(f"{cfg.name} over pp{pp}: pipeline stage {s} (layers {lo}-{hi - 1}) holds no "
                             f"full-attention (MLA) layer, so no KV pool; k3lab does not model such a split "
                             f"(every stage needs one of the model's {len(layer_sets(cfg)[1])} MLA layers: use a "
                             f"smaller pp)")
        cell = target_cell + (draft_kv_bytes_per_token(tp, kv_dtype) if draft else 0)
        try:
            pre, post = ps.free_memory_before_and_after_load(
                capacity_bytes=cap, init_overhead_bytes=init_overhead_bytes,
                weights_bytes=weights[s], other_resident_bytes=other)
        except ps.InsufficientMemoryError:
            weights_fit = False
            break
        stages.append(pset.StageMemory(pre, post, cell))
    problem = pset.PoolProblem(
        stages=tuple(stages), mem_fraction_static=float(mem_fraction), context_len=ctx,
        state_bytes_per_slot=slot or None, page_size=page, mm_reserve_gib=mm_gib,
        attn_dp_size=tp if setting.dp_attention else 1, slots_per_request=slots_per_request,
        speculative_num_draft_tokens=dspark_draft().block_size_tokens + 1 if draft else None)
    if weights_fit:
        try:
            problem.rest_gib()
        except ps.InsufficientMemoryError:
            weights_fit = False
    sized, note = None, ""
    if weights_fit:
        try:
            sized = pset.size_stages(problem, settings)
        except ps.InsufficientMemoryError as e:
            note = str(e)
    fits = bool(sized is not None and sized.fits)
    defaults_fit, options = fits, ()
    if weights_fit:
        if not settings.is_default:
            d = pset.sized_or_none(problem, settings.defaults())
            defaults_fit = bool(d is not None and d.fits)
        if not defaults_fit:
            options = pset.search_settings(problem, settings)
    moe = moe_pad = 0
    if quant.scheme(cfg)["name"] == "mxfp4":
        moe = cfg.moe_intermediate_size // (1 if setting.ep or setting.ep_a2a else tp)
        moe_pad = -(-moe // setting.moe_intermediate_align) * setting.moe_intermediate_align
    by_comp = dict.fromkeys(COMPONENTS, 0)
    for r in rank_rows(cfg, tp, pp, heavy, setting):
        by_comp[r["component"]] += r["rank_bytes"]
    if sized is not None:
        b = sized.binding
        cell, tokens, reqs = b.cell_bytes_per_token, b.max_total_num_tokens, b.max_running_requests
        kv_pool = min(x.kv_pool_bytes for x in sized.stages)
        state_pool = max(x.state_pool_bytes for x in sized.stages)
        full, k, branch = sized.full_context_requests, b.max_mamba_cache_size, b.state_branch
    else:
        cell = kv_bytes_per_token(cfg, kv_dtype)
        tokens = reqs = kv_pool = state_pool = full = k = 0
        branch = settings.branch if cfg.has_kda else "none"
    return Plan(
        label=dep.label, gpu=g.key, platform=setting.platform, variants=variants, num_gpus=dep.num_gpus,
        tp=tp, pp=pp, replicas=dep.replicas, mem_fraction=float(mem_fraction), kv_dtype=kv_dtype,
        state_dtype=state_dtype, capacity_bytes_per_gpu=cap, weights_bytes_per_gpu=weights[heavy],
        other_resident_bytes_per_gpu=other, reserve_bytes_per_gpu=int(round((1 - mem_fraction) * (cap - init_overhead_bytes))),
        state_pool_bytes_per_gpu=state_pool, kv_pool_bytes_per_gpu=kv_pool, kv_bytes_per_token=cell,
        kda_state_bytes_per_request=slot, page_size=page, context_tokens=ctx, max_kv_tokens=tokens,
        max_running_requests=reqs, max_full_context_requests=full, weights_fit=weights_fit,
        fits=bool(weights_fit and fits), stage_weights_bytes=tuple(weights), weights_by_component=by_comp,
        init_overhead_bytes=init_overhead_bytes, vision_bytes_per_gpu=vision, draft_bytes_per_gpu=draft_w,
        mm_reserve_bytes_per_gpu=int(round(mm_gib * GiB)), state_pool_settings=settings,
        state_pool_branch=branch, state_slots=k,
        slots_per_request=settings.slots_per_request(slots_per_request) if cfg.has_kda else 0,
        fits_with_defaults=bool(weights_fit and defaults_fit), fit_options=options, pool_note=note,
        moe_intermediate_per_gpu=moe, moe_intermediate_padded_per_gpu=moe_pad)


def radix_off_room(cfg: ModelConfig, dep: Deployment, mem_fraction: float = 0.9, kv_dtype: str = "bf16",
                   context_tokens: int | None = None, variants=()) -> int:
    """The largest ``--max-running-requests M`` per replica under sglang's radix-cache-off branch
    (``--disable-radix-cache --max-running-requests M``: M state slots, one a request) with which a
    request of ``context_tokens`` still fits (:func:`fit`), or 0 when none does. The KV pool shrinks
    as M grows, so fitting is monotone in M: doubled until it fails, then bisected. Requests."""
    def ok(m: int) -> bool:
        return fit(cfg, dep, mem_fraction, kv_dtype, context_tokens=context_tokens, variants=variants,
                   disable_radix_cache=True, max_running_requests=m).fits

    if not cfg.has_kda or not ok(1):
        return 0
    lo, hi = 1, 2
    while ok(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # lo fits, hi does not
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def plan(cfg: ModelConfig, gpu, num_gpus: int, tp: int, mem_fraction: float = 0.9, kv_dtype: str = "bf16",
         pp: int = 1, state_dtype: str = "fp32", context_tokens: int | None = None, variants=(),
         hbm_gb: float | None = None, init_overhead_bytes: int = 0,
         max_running_requests: int | None = None, mamba_full_memory_ratio: float | None = None,
         max_mamba_cache_size: int | None = None, disable_radix_cache: bool = False) -> Plan:
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
               init_overhead_bytes=init_overhead_bytes, max_running_requests=max_running_requests,
               mamba_full_memory_ratio=mamba_full_memory_ratio, max_mamba_cache_size=max_mamba_cache_size,
               disable_radix_cache=disable_radix_cache)
