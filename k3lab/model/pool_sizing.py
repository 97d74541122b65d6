"""sglang 0.5.23's start-up memory-pool sizing, as pure functions of plain numbers.

What a 0.5.23 server logs at start-up (``max_total_num_tokens=…, max_running_requests=…``
from ``managers/scheduler.py``; ``Mamba Cache is allocated. max_mamba_cache_size: …`` from
``mem_cache/memory_pool.py``) is predicted here for a hybrid MLA + linear-attention model
such as Kimi K3, from: the free GPU memory before and after the weights load, the
``--mem-fraction-static`` in effect, the per-token KV cell and the per-request state slot.

Read from sglang 0.5.23 (PyPI wheel ``sglang-0.5.23``); every function names the sglang
function it mirrors. No sglang code is copied; the arithmetic is re-derived and written
out here, in the same order of operations where sglang's float rounding matters.

The flow (``mem_cache/kv_cache_configurator.py``
``KVCacheConfigurator._resolve_memory_pool_config``):

1. ``pre_model_load_memory`` = free GPU memory after the distributed init, before any
   weight (``distributed/bootstrap.py`` ``measure_pre_model_load_memory``; the minimum
   over all ranks).
2. Target weights load, then the draft worker's weights (``managers/scheduler.py``
   ``Scheduler.init_model_worker``: ``init_tp_model_worker`` → ``maybe_init_draft_worker``
   → ``init_memory_pools``), so draft weights are charged against the KV budget.
3. ``rest = free_after_load − pre_model_load × (1 − mem_fraction_static) − mm_reserve``
   (:func:`profile_rest_memory_gib`, ``_profile_available_bytes``).
4. A hybrid model carves its recurrent-state pool out of ``rest`` first
   (:func:`split_state_pool`, ``_handle_max_mamba_cache``); by default a share
   ``r / (1 + r)`` with ``r = --mamba-full-memory-ratio`` (default 0.9).
5. What is left is divided by the per-token cell (target MLA latent + the DFLASH/DSPARK
   draft's own KV) and floored to the page size (:func:`max_total_num_tokens_from_budget`,
   ``DefaultPoolConfigurator.calculate_pool_sizes``).
6. ``max_running_requests`` follows from the token count and the state pool
   (:func:`resolve_max_running_requests`, ``KVCacheConfigurator.resolve_max_num_reqs``).

Units: bytes are ``int`` bytes; ``GiB`` = 2**30 bytes (sglang's "GB" in its logs is 2**30);
``MiB`` = 2**20 bytes (what ``nvidia-smi`` and sglang's ``get_device_memory_capacity``
report); tokens are tokens; a "slot" is one request's recurrent + conv state. "Per rank" =
per GPU. Everything is per rank unless a name says otherwise.

Not modelled (they are paid out of the ``(1 − mem_fraction_static)`` slack, after sizing):
activations, CUDA/HIP graphs, the ``req_to_token`` table (see :func:`req_to_token_bytes`),
the MLA pool's ``page_size`` padding rows, sampling buffers. The post-capture KV resize
(``model_runner_components/kv_pool_runtime.py``) is off for MLA models
(``arg_groups/overrides.py`` ``post_capture_kv_sizing_planned`` returns False when
``use_mla_backend``), so it does not apply to Kimi K3.

Here: the flow (steps 3–6, :func:`size_pools`) and the free memory it starts from
(:func:`free_memory_before_and_after_load`). The state-pool flags as one object, every pipeline
stage sized under them, and the search for the flags that make a request fit:
:mod:`k3lab.model.pool_settings`. Its inputs live beside it and are re-exported
here: the cells and slots in :mod:`k3lab.model.capacity`, the mem fraction, slots per
request and multimodal reserve in :mod:`k3lab.model.pool_inputs`, the draft and vision
weights and the load-time peak in :mod:`k3lab.model.resident`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..data import check_count, check_finite
from ._checks import check_fraction, check_non_negative, check_optional_count, check_size
from .capacity import (  # noqa: F401  (re-exported: the cell and slot the pools divide by)
    dflash_draft_cell_bytes_per_token, kda_state_bytes_per_slot, mla_cell_bytes_per_token)
from .pool_inputs import (  # noqa: F401  (re-exported: the sizing's inputs)
    AITER_LONG_CONTEXT_SCALE, AITER_LONG_CONTEXT_THRESHOLD, MAMBA_BASE_SLOTS_PER_REQUEST,
    MAMBA_RADIX_STRATEGIES, MM_FEATURE_CACHE_MIB, VLM_CACHE_RESERVE_MIB, InsufficientMemoryError,
    default_mem_fraction_static, effective_mem_fraction_static, mamba_slots_per_request,
    multimodal_reserve_gib)
from .resident import (  # noqa: F401  (re-exported: weights outside the inventory, load peak)
    MXFP4_BLOCK, dflash_draft_weight_bytes_per_rank, load_peak_bytes, moonvit_weight_bytes,
    mxfp4_moe_layer_bytes, mxfp4_post_load_transient_bytes)

GiB = 2**30
MiB = 2**20

#: ``arg_groups/fields/schedule.py`` ``mamba_full_memory_ratio`` fallback.
DEFAULT_MAMBA_FULL_MEMORY_RATIO = 0.9


# --------------------------------------------------------------------------- the budget


def profile_rest_memory_gib(*, pre_model_load_free_bytes: int, post_load_free_bytes: int,
                            mem_fraction_static: float, mm_reserve_gib: float = 0.0) -> float:
    """GiB left for the KV + state pools, before the state pool is carved out.

    Mirrors 0.5.23 ``mem_cache/kv_cache_configurator.py``
    ``KVCacheConfigurator._profile_available_bytes`` up to ``_handle_max_mamba_cache``:
    ``free_after_load/2^30 − pre_model_load/2^30 × (1 − mem_fraction_static) − mm_reserve``.
    Both free figures are what ``torch.cuda.mem_get_info`` reports (the minimum over ranks):
    ``pre_model_load_free_bytes`` after the distributed init and before any weight;
    ``post_load_free_bytes`` after the target AND draft weights (and whatever else was left
    resident) are loaded. For MLA models the post-capture branch that raises the slack to
    ``pre_capture_activation_reserve_mb`` is off, so it is not modelled. Units: GiB.
    Raises :class:`InsufficientMemoryError` (a ValueError) when nothing is left, naming the
    smallest viable fraction as sglang does.
    """
    pre = check_count("pre_model_load_free_bytes", pre_model_load_free_bytes)
    post = check_size("post_load_free_bytes", post_load_free_bytes)
    mf = check_fraction("mem_fraction_static", mem_fraction_static)
    mm = check_non_negative("mm_reserve_gib", mm_reserve_gib)
    if post > pre:
        raise ValueError(f"post_load_free_bytes ({post}) exceeds pre_model_load_free_bytes "
                         f"({pre}): the weights cannot free memory")
    available = post / (1 << 30)
    pre_gib = pre / (1 << 30)
    rest = available - pre_gib * (1 - mf) - mm
    if rest <= 0:
        minimum = 1 - available / pre_gib
        raise InsufficientMemoryError(
            f"loaded weights leave no GPU memory for the KV cache at mem_fraction_static="
            f"{mf:g}: {available:.2f} GiB free of {pre_gib:.2f} GiB; raise it above "
            f"{math.ceil(minimum * 1000) / 1000:.3f}")
    return rest


def pp_state_bytes_per_slot(per_request_bytes: int, *, stage_linear_layers) -> int:
    """The state-slot bytes every pipeline stage charges its budget (bytes per slot).

    Mirrors 0.5.23 ``mem_cache/kv_cache_configurator.py``
    ``KVCacheConfigurator._handle_max_mamba_cache`` (its PP scaling): ``per_request_bytes`` is
    the slot over all linear-attention layers (``mamba2_cache_params.mamba_cache_per_req``),
    and every rank charges the share of the stage with the MOST such layers,
    ``int(per_request × (max_stage_layers / all_layers))`` (float product, as sglang writes
    it), "so every rank derives the same pool without a collective" — a stage with fewer
    linear layers is charged more than it allocates. ``stage_linear_layers``: the number of
    linear-attention layers on each stage (``get_pp_indices`` ranges); one stage → the whole
    slot. Units: bytes.
    """
    per_req = check_size("per_request_bytes", per_request_bytes)
    counts = [check_size("stage_linear_layers", n) for n in stage_linear_layers]
    if not counts:
        raise ValueError("stage_linear_layers must name at least one stage")
    total = sum(counts)
    if total == 0:
        return 0
    return int(per_req * (max(counts) / total))


@dataclass(frozen=True)
class StatePoolSplit:
    """What :func:`split_state_pool` decides (per rank)."""

    max_mamba_cache_size: int      # state slots (sglang logs ``max_mamba_cache_size``)
    state_pool_bytes: int          # (slots + 1 padding slot) × slot bytes
    spec_intermediate_bytes: int   # per-draft-token state reserved for verify (0 without spec)
    rest_after_gib: float          # GiB left for the KV pool(s)
    branch: str                    # "explicit", "from_max_running_requests" or "ratio"


def split_state_pool(rest_gib: float, *, state_bytes_per_slot: int,
                     mamba_full_memory_ratio: float = DEFAULT_MAMBA_FULL_MEMORY_RATIO,
                     slots_per_request: int = 5, max_mamba_cache_size: int | None = None,
                     max_running_requests: int | None = None, radix_cache: bool = True,
                     speculative_num_draft_tokens: int | None = None,
                     attn_dp_size: int = 1) -> StatePoolSplit:
    """Carve the recurrent-state (mamba) pool out of ``rest_gib``.

    Mirrors sglang 0.5.23 ``mem_cache/kv_cache_configurator.py``
    ``KVCacheConfigurator._handle_max_mamba_cache`` (no ReplaySSM, no unified pool; under PP
    pass the slot every stage charges, :func:`pp_state_bytes_per_slot`). Three branches, in
    sglang's order (the name each writes into its runtime context in brackets):

    - ``"explicit"`` (``mamba_pool.per_dp_shard``): ``--max-mamba-cache-size`` given: that
      many slots (÷ attn DP); with speculation,
      ``slot × (min(max_running, slots // ratio) + 1) × D`` is reserved for verify states.
    - ``"from_max_running_requests"`` (``mamba_pool.from_max_running_requests``): radix cache
      disabled (``--disable-radix-cache``) and ``--max-running-requests`` given: slots =
      ``max(1, max_running // attn DP)``; verify reserve ``slot × (slots + 1) × D``. The radix
      cache disabled WITHOUT ``--max-running-requests`` falls through to the ratio branch.
    - ``"ratio"`` (``mamba_pool.memory_budget``, ``…_spec``): otherwise (the Kimi K3 default):
      a budget ``rest × r/(1 + r)`` with ``r = --mamba-full-memory-ratio`` (fallback 0.9,
      ``arg_groups/fields/schedule.py``; 0.9 → 47.4 %) gives ``K = int((budget − slot) // slot)``;
      with speculation (``D`` = ``--speculative-num-draft-tokens``; DSPARK: block + 1 = 8)
      ``K = int((budget − slot·(1 + D)) // (slot·(1 + D/ratio)))`` and the verify reserve is
      ``slot × (min(max_running, K // ratio) + 1) × D``.

    Then ``(K + 1) × slot`` (one padding slot) leaves the budget. Units: ``rest_gib`` and
    ``rest_after_gib`` in GiB, bytes elsewhere, slots for ``max_mamba_cache_size``.
    """
    rest = check_finite("rest_gib", rest_gib, positive=False)
    slot = check_count("state_bytes_per_slot", state_bytes_per_slot)
    r = check_finite("mamba_full_memory_ratio", mamba_full_memory_ratio)
    ratio = check_count("slots_per_request", slots_per_request)
    check_optional_count("max_mamba_cache_size", max_mamba_cache_size)
    check_optional_count("max_running_requests", max_running_requests)
    check_count("attn_dp_size", attn_dp_size)
    d = check_optional_count("speculative_num_draft_tokens", speculative_num_draft_tokens)
    if d is not None and max_running_requests is None:
        raise ValueError("speculative decoding needs max_running_requests (sglang asserts it; "
                         "DSPARK/DFLASH set 48 when --max-running-requests is not given)")
    inter = 0.0
    if max_mamba_cache_size is not None:
        branch = "explicit"
        k = max_mamba_cache_size // attn_dp_size
        if d is not None:
            capped = min(max(1, max_running_requests // attn_dp_size), k // ratio)
            inter = slot * (capped + 1) * d
            rest = rest - inter / (1 << 30)
    elif not radix_cache and max_running_requests is not None:
        branch = "from_max_running_requests"
        k = max(1, max_running_requests // attn_dp_size)
        if d is not None:
            inter = slot * (k + 1) * d
            rest = rest - inter / (1 << 30)
    else:
        branch = "ratio"
        budget_bytes = rest * r / (1 + r) * (1 << 30)
        if d is not None:
            k = int((budget_bytes - slot * (1 + d)) // (slot * (1 + d / ratio)))
            capped = min(max(1, max_running_requests // attn_dp_size), k // ratio)
            inter = slot * (capped + 1) * d
            rest = rest - inter / (1 << 30)
        else:
            k = int((budget_bytes - slot) // slot)
    if k <= 0 and branch == "ratio" and rest_gib * (1 << 30) >= 2 * slot * (1 + (d or 0)):
        # the memory is there: the ratio is what leaves the state pool too small
        raise InsufficientMemoryError(
            f"--mamba-full-memory-ratio {r:g} leaves the hybrid state pool {budget_bytes / MiB:,.2f} MiB of the "
            f"{rest_gib:.2f} GiB left, less than one request's state ({slot / MiB:.2f} MiB per slot): raise it "
            f"(sglang's default {DEFAULT_MAMBA_FULL_MEMORY_RATIO:g})")
    if k <= 0:
        raise InsufficientMemoryError(
            f"not enough GPU memory for the hybrid state pool: max_mamba_cache_size={k} "
            f"(rest {rest_gib:.2f} GiB, {slot / MiB:.2f} MiB per slot)")
    state = (k + 1) * slot
    rest_after = rest - state / (1 << 30)
    return StatePoolSplit(max_mamba_cache_size=k, state_pool_bytes=state,
                          spec_intermediate_bytes=int(inter), rest_after_gib=rest_after,
                          branch=branch)


def max_total_num_tokens_from_budget(budget_bytes: int, *, cell_bytes_per_token: int,
                                     page_size: int = 1,
                                     max_total_tokens: int | None = None) -> int:
    """Tokens the KV pool holds: ``budget // cell``, floored to a whole page.

    Mirrors 0.5.23 ``model_executor/pool_configurator.py``
    ``DefaultPoolConfigurator.calculate_pool_sizes`` (no KV-shard scratch) and
    ``mem_cache/kv_cache_configurator.py`` ``KVCacheConfigurator._apply_token_constraints``
    (a ``--max-total-tokens`` only lowers it; the result is re-floored to the page by
    ``calculate_pool_sizes_from_max_tokens``). ``cell_bytes_per_token`` is the target cell
    plus, under DFLASH/DSPARK, the draft's (``DefaultPoolConfigurator.__init__`` via
    ``dflash_utils.scale_kv_cell_size_per_token_for_dflash``). Page size: 1 by default
    (``overrides._page_size_default``); 64 when ``trtllm_mla`` is the MLA backend (Kimi K3's
    default on SM100/SM103, ``overrides._mla_backend_page_constraints``). Units: bytes in,
    tokens out. Raises :class:`InsufficientMemoryError` when it comes to zero tokens.
    """
    b = check_size("budget_bytes", budget_bytes)
    cell = check_count("cell_bytes_per_token", cell_bytes_per_token)
    page = check_count("page_size", page_size)
    cap = check_optional_count("max_total_tokens", max_total_tokens)
    tokens = b // cell // page * page
    if cap is not None and cap < tokens:
        tokens = cap // page * page
    if tokens <= 0:
        raise InsufficientMemoryError("not enough memory for one KV page: increase "
                                      "--mem-fraction-static")
    return tokens


def resolve_max_running_requests(token_capacity: int, *, context_len: int,
                                  max_running_requests: int | None = None,
                                  max_mamba_cache_size: int | None = None,
                                  slots_per_request: int | None = None,
                                  attn_dp_size: int = 1) -> int:
    """``max_running_requests`` per attention-DP worker, as the server logs it.

    Mirrors 0.5.23 ``mem_cache/kv_cache_configurator.py``
    ``KVCacheConfigurator.resolve_max_num_reqs``: without a user value,
    ``clamp(int(tokens / context_len × 512), 2048, 4096)`` capped at ``tokens // 2``; with
    one, ``min(max(1, value // dp), tokens // 2)``; a hybrid model then caps it at
    ``max_mamba_cache_size // slots_per_request``. Units: requests.
    """
    tokens = check_count("token_capacity", token_capacity)
    ctx = check_count("context_len", context_len)
    check_optional_count("max_running_requests", max_running_requests)
    check_count("attn_dp_size", attn_dp_size)
    if (max_mamba_cache_size is None) != (slots_per_request is None):
        raise ValueError("give both max_mamba_cache_size and slots_per_request for a hybrid "
                         "model, or neither")
    estimated = max(min(int(tokens / ctx * 512), 4096), 2048)
    if max_running_requests is not None:
        n = min(max(1, max_running_requests // attn_dp_size), tokens // 2)
    else:
        n = min(estimated, tokens // 2)
    if max_mamba_cache_size is not None:
        check_count("max_mamba_cache_size", max_mamba_cache_size)
        check_count("slots_per_request", slots_per_request)
        n = min(n, max_mamba_cache_size // slots_per_request)
    if n <= 0:
        why = (f": {max_mamba_cache_size:,} state slots, {slots_per_request} a request"
               if max_mamba_cache_size is not None and max_mamba_cache_size < slots_per_request else "")
        raise InsufficientMemoryError(f"the pools admit no request (max_running_requests={n}{why})")
    return n


# --------------------------------------------------------------------------- end to end


@dataclass(frozen=True)
class PoolSizing:
    """One rank's pools as a 0.5.23 server sizes them at start-up (bytes unless named)."""

    mem_fraction_static: float
    rest_gib: float                 # after the slack and mm reserve, before the state pool
    max_mamba_cache_size: int       # state slots (0 for a model without linear attention)
    state_pool_bytes: int
    spec_intermediate_bytes: int
    kv_budget_bytes: int            # what the KV cell divides
    cell_bytes_per_token: int       # target (+ draft) bytes per token
    page_size: int
    max_total_num_tokens: int       # the logged ``max_total_num_tokens``
    max_running_requests: int       # the logged ``max_running_requests``
    kv_pool_bytes: int              # (tokens + page) × cell, what the pools allocate
    state_branch: str

    @property
    def kv_pool_gib(self) -> float:
        return self.kv_pool_bytes / GiB

    @property
    def state_pool_gib(self) -> float:
        return self.state_pool_bytes / GiB


def size_pools(*, pre_model_load_free_bytes: int, post_load_free_bytes: int,
               mem_fraction_static: float, cell_bytes_per_token: int, context_len: int,
               state_bytes_per_slot: int | None = None, page_size: int = 1,
               mamba_full_memory_ratio: float = DEFAULT_MAMBA_FULL_MEMORY_RATIO,
               slots_per_request: int = 5, max_mamba_cache_size: int | None = None,
               max_running_requests: int | None = None, max_total_tokens: int | None = None,
               radix_cache: bool = True, speculative_num_draft_tokens: int | None = None,
               mm_reserve_gib: float = 0.0, attn_dp_size: int = 1) -> PoolSizing:
    """The whole start-up sizing of one rank: state slots, KV tokens, running requests.

    Mirrors 0.5.23 ``mem_cache/kv_cache_configurator.py``
    ``KVCacheConfigurator._resolve_memory_pool_config`` → ``_profile_available_bytes``
    (:func:`profile_rest_memory_gib`, :func:`split_state_pool`) → ``config_from_budget``
    (:func:`max_total_num_tokens_from_budget`) → ``resolve_max_num_reqs``
    (:func:`resolve_max_running_requests`). ``mem_fraction_static`` is the effective one
    (see :func:`effective_mem_fraction_static`). ``state_bytes_per_slot=None`` sizes a model
    without linear attention (no state pool). Units: bytes / tokens / requests / GiB as named.
    """
    mf = check_fraction("mem_fraction_static", mem_fraction_static)
    rest = profile_rest_memory_gib(pre_model_load_free_bytes=pre_model_load_free_bytes,
                                   post_load_free_bytes=post_load_free_bytes,
                                   mem_fraction_static=mf, mm_reserve_gib=mm_reserve_gib)
    if state_bytes_per_slot is not None:
        split = split_state_pool(rest, state_bytes_per_slot=state_bytes_per_slot,
                                 mamba_full_memory_ratio=mamba_full_memory_ratio,
                                 slots_per_request=slots_per_request,
                                 max_mamba_cache_size=max_mamba_cache_size,
                                 max_running_requests=max_running_requests,
                                 radix_cache=radix_cache,
                                 speculative_num_draft_tokens=speculative_num_draft_tokens,
                                 attn_dp_size=attn_dp_size)
        rest_after, k = split.rest_after_gib, split.max_mamba_cache_size
        state, inter, branch = split.state_pool_bytes, split.spec_intermediate_bytes, split.branch
    else:
        rest_after, k, state, inter, branch = rest, 0, 0, 0, "none"
    if rest_after <= 0:  # say what was asked against what is there, never the negative remainder
        flag = (f" (--max-mamba-cache-size {max_mamba_cache_size:,})" if branch == "explicit" else
                f" (--max-running-requests {max_running_requests:,})" if branch == "from_max_running_requests" else "")
        raise InsufficientMemoryError(
            f"the state pool's {k:,} slots{flag} need {(state + inter) / GiB:,.1f} GiB per GPU against "
            f"{rest:,.1f} GiB free for the pools, leaving none for the KV pool")
    budget = int(rest_after * (1 << 30))
    tokens = max_total_num_tokens_from_budget(budget, cell_bytes_per_token=cell_bytes_per_token,
                                              page_size=page_size,
                                              max_total_tokens=max_total_tokens)
    reqs = resolve_max_running_requests(
        tokens, context_len=context_len, max_running_requests=max_running_requests,
        max_mamba_cache_size=k if state_bytes_per_slot is not None else None,
        slots_per_request=slots_per_request if state_bytes_per_slot is not None else None,
        attn_dp_size=attn_dp_size)
    return PoolSizing(mem_fraction_static=mf, rest_gib=rest, max_mamba_cache_size=k,
                      state_pool_bytes=state, spec_intermediate_bytes=inter,
                      kv_budget_bytes=budget, cell_bytes_per_token=cell_bytes_per_token,
                      page_size=page_size, max_total_num_tokens=tokens,
                      max_running_requests=reqs,
                      kv_pool_bytes=(tokens + page_size) * cell_bytes_per_token,
                      state_branch=branch)


def free_memory_before_and_after_load(*, capacity_bytes: int, init_overhead_bytes: int,
                                      weights_bytes: int, draft_weights_bytes: int = 0,
                                      other_resident_bytes: int = 0) -> tuple[int, int]:
    """``(pre_model_load_free_bytes, post_load_free_bytes)`` for :func:`size_pools`.

    Capacity is what ``torch.cuda.mem_get_info`` calls total (MI355X 287.98 GiB, B300
    267.69 GiB as publicly logged; less than the marketing 288 GB/GiB);
    ``init_overhead_bytes`` is what the CUDA/HIP context, NCCL/RCCL and custom all-reduce
    buffers take before ``distributed/bootstrap.py`` ``measure_pre_model_load_memory``
    (sglang logs it as ``Memory baseline taken. mem usage=…``; not derivable from the
    config); ``weights_bytes`` and ``draft_weights_bytes`` are the resident weights after
    post-load processing; ``other_resident_bytes`` anything else model init leaves allocated
    (workspaces). Units: bytes.
    """
    cap = check_count("capacity_bytes", capacity_bytes)
    ovh = check_size("init_overhead_bytes", init_overhead_bytes)
    w = check_size("weights_bytes", weights_bytes)
    dw = check_size("draft_weights_bytes", draft_weights_bytes)
    other = check_size("other_resident_bytes", other_resident_bytes)
    pre = cap - ovh
    if pre <= 0:
        raise ValueError(f"init_overhead_bytes ({ovh}) is not below capacity_bytes ({cap})")
    post = pre - w - dw - other
    if post < 0:
        raise InsufficientMemoryError(
            f"weights ({(w + dw + other) / GiB:.2f} GiB) exceed the {pre / GiB:.2f} GiB free "
            "before loading")
    return pre, post


def req_to_token_bytes(*, max_running_requests: int, context_len: int,
                       extra_context_len: int = 4) -> int:
    """Bytes of the ``req_to_token`` table (int32), allocated after sizing, out of the slack.

    Mirrors 0.5.23 ``mem_cache/memory_pool.py`` ``ReqToTokenPool.__init__``
    (``(size + 1) × max_context_len`` int32) with ``max_context_len = context_len +
    extra`` (``mem_cache/allocation_sizing.py`` ``get_req_to_token_extra_context_len``:
    ``4 + num_draft_tokens``, more with pages under speculation). Not part of the KV
    budget: at a 1,048,576-token context every running-request slot costs 4 MiB.
    Units: bytes.
    """
    n = check_count("max_running_requests", max_running_requests)
    ctx = check_count("context_len", context_len)
    extra = check_size("extra_context_len", extra_context_len)
    return (n + 1) * (ctx + extra) * 4
