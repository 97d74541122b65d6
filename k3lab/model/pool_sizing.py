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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GiB = 2**30
MiB = 2**20

#: sglang 0.5.23 ``environ.py`` ``SGLANG_VLM_CACHE_SIZE_MB`` default (MiB), reserved out of the
#: KV budget for a multimodal model (``kv_cache_configurator.mm_runtime_reservation_gb``).
VLM_CACHE_RESERVE_MIB = 100
#: ``environ.py`` ``SGLANG_MM_FEATURE_CACHE_MB`` default (MiB), added to the reserve only when
#: ``--mm-feature-transport`` is ``cuda_ipc`` or ``cuda_vmm``.
MM_FEATURE_CACHE_MIB = 1024
#: ``arg_groups/fields/schedule.py`` ``mamba_full_memory_ratio`` fallback.
DEFAULT_MAMBA_FULL_MEMORY_RATIO = 0.9
#: ``mem_cache/kv_cache_configurator.py`` ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``.
MAMBA_BASE_SLOTS_PER_REQUEST = 3
#: ``attention_hook.py`` ``_handle_attention_backend_compatibility``: aiter + context > 8192.
AITER_LONG_CONTEXT_SCALE = 0.85
AITER_LONG_CONTEXT_THRESHOLD = 8192

MAMBA_RADIX_STRATEGIES = ("no_buffer", "extra_buffer", "extra_buffer_lazy")
MXFP4_BLOCK = 32


class InsufficientMemoryError(ValueError):
    """The inputs leave no room for a pool (sglang raises ValueError/RuntimeError here)."""


# --------------------------------------------------------------------------- validation


def _pos_int(name: str, v, *, zero_ok: bool = False) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if v < 0 or (v == 0 and not zero_ok):
        raise ValueError(f"{name} must be {'>= 0' if zero_ok else '> 0'}, got {v!r}")
    return v


def _num(name: str, v, *, lo: float | None = None, hi: float | None = None,
         lo_open: bool = False, hi_open: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{name} must be {'>' if lo_open else '>='} {lo}, got {v!r}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"{name} must be {'<' if hi_open else '<='} {hi}, got {v!r}")
    return float(v)


def _opt_pos_int(name: str, v, *, zero_ok: bool = False):
    return None if v is None else _pos_int(name, v, zero_ok=zero_ok)


# --------------------------------------------------------------------------- cells and slots


def mla_cell_bytes_per_token(*, num_full_attn_layers: int, kv_lora_rank: int,
                             qk_rope_head_dim: int, kv_dtype_bytes: int) -> int:
    """Bytes per token per rank of the MLA latent KV pool (all full-attention layers).

    Mirrors 0.5.23 ``model_executor/pool_configurator.py``
    ``DefaultPoolConfigurator._compute_cell_size`` (MLA branch) with
    ``mem_cache/kv_cache_configurator.py`` ``calculate_mla_kv_cache_dim`` for a non-DSA
    model: ``(kv_lora_rank + qk_rope_head_dim) × layers × element size``. The latent is not
    split by TP (one 576-wide vector per token per layer on every rank); a hybrid model
    counts only its full-attention layers (``mambaish.full_attention_layer_ids``). No
    per-token scale buffer exists for bf16 or fp8 (only DSA indexers and FP4 KV add one).
    Units: bytes/token. Kimi K3: 24 × 576 × 2 = 27,648 (bf16), 13,824 (fp8_e4m3).
    """
    _pos_int("num_full_attn_layers", num_full_attn_layers, zero_ok=True)
    _pos_int("kv_lora_rank", kv_lora_rank)
    _pos_int("qk_rope_head_dim", qk_rope_head_dim, zero_ok=True)
    if kv_dtype_bytes not in (1, 2, 4):
        raise ValueError(f"kv_dtype_bytes must be 1 (fp8), 2 (bf16/fp16) or 4 (fp32), "
                         f"got {kv_dtype_bytes!r}")
    return (kv_lora_rank + qk_rope_head_dim) * num_full_attn_layers * kv_dtype_bytes


def dflash_draft_cell_bytes_per_token(*, num_kv_heads: int, head_dim: int, v_head_dim: int,
                                      num_layers: int, attn_tp_size: int,
                                      kv_dtype_bytes: int) -> int:
    """Bytes per token per rank of a DFLASH/DSPARK draft model's own (MHA/GQA) KV pool.

    Mirrors 0.5.23 ``speculative/dflash_utils.py`` ``dflash_draft_cell_size_per_token``
    with ``configs/model_config.py`` ``ModelConfig.get_num_kv_heads`` (``max(1, kv_heads //
    tp)``; a draft ignores DCP). The draft KV dtype follows ``--kv-cache-dtype`` unless
    ``--speculative-draft-kv-cache-dtype`` is set (``mem_cache/kv_cache_dtype.py``
    ``configure_kv_cache_dtype``). Units: bytes/token.
    RadixArk/Kimi-K3-DSpark (5 layers, 16 KV heads × 64) at TP8: 2 × 128 × 5 × 2 = 2,560 (bf16).
    """
    _pos_int("num_kv_heads", num_kv_heads)
    _pos_int("head_dim", head_dim)
    _pos_int("v_head_dim", v_head_dim)
    _pos_int("num_layers", num_layers, zero_ok=True)
    _pos_int("attn_tp_size", attn_tp_size)
    if kv_dtype_bytes not in (1, 2, 4):
        raise ValueError(f"kv_dtype_bytes must be 1, 2 or 4, got {kv_dtype_bytes!r}")
    heads = max(1, num_kv_heads // attn_tp_size)
    return heads * (head_dim + v_head_dim) * num_layers * kv_dtype_bytes


def kda_state_bytes_per_slot(*, num_linear_layers: int, num_heads: int, head_dim: int,
                             conv_kernel_size: int, attn_tp_size: int,
                             ssm_dtype_bytes: int = 4, conv_dtype_bytes: int = 2) -> int:
    """Bytes of ONE state slot (one request's KDA recurrent + short-conv state) per rank.

    Mirrors 0.5.23 ``configs/mamba_utils.py`` ``KimiLinearStateShape.create`` and
    ``BaseLinearStateParams.mamba_cache_per_req``, with ``configs/kimi_linear.py``
    ``KimiLinearConfig.mamba2_cache_params`` (sharded by ``attn_tp_size``):
    per layer ``heads/tp × head_dim × head_dim`` recurrent (``ssm_dtype_bytes``: fp32 = 4 by
    default; ``--mamba-ssm-dtype`` / env ``SGLANG_MAMBA_SSM_DTYPE`` / config
    ``mamba_ssm_dtype``) plus ``(kernel − 1) × 3·heads·head_dim/tp`` conv (bf16 = 2;
    env ``SGLANG_MAMBA_CONV_DTYPE``). Units: bytes/slot.
    Kimi K3 at TP8: 69 × (12·128·128·4 + 3·4608·2) = 56,171,520 (53.57 MiB).
    """
    _pos_int("num_linear_layers", num_linear_layers, zero_ok=True)
    _pos_int("num_heads", num_heads)
    _pos_int("head_dim", head_dim)
    _pos_int("conv_kernel_size", conv_kernel_size)
    _pos_int("attn_tp_size", attn_tp_size)
    for name, v in (("ssm_dtype_bytes", ssm_dtype_bytes), ("conv_dtype_bytes", conv_dtype_bytes)):
        if v not in (2, 4):
            raise ValueError(f"{name} must be 2 (bf16/fp16) or 4 (fp32), got {v!r}")
    if num_heads % attn_tp_size:
        raise ValueError(f"attn_tp_size={attn_tp_size} does not divide the {num_heads} "
                         "linear-attention heads")
    h = num_heads // attn_tp_size
    recurrent = h * head_dim * head_dim * ssm_dtype_bytes
    conv = (conv_kernel_size - 1) * 3 * h * head_dim * conv_dtype_bytes
    return num_linear_layers * (recurrent + conv)


def mamba_slots_per_request(*, radix_cache: bool = True, strategy: str = "extra_buffer",
                            overlap_schedule: bool = True,
                            skip_decode_lock: bool = False) -> int:
    """State slots the scheduler reserves per running request (sglang's "mamba ratio").

    Mirrors 0.5.23 ``mem_cache/kv_cache_configurator.py``
    ``KVCacheConfigurator._calculate_mamba_ratio`` with
    ``mem_cache/allocation_sizing.py`` ``get_mamba_tracking_slots``: 1 when the radix cache
    is disabled; otherwise base 3 (2 with ``SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK``) plus the
    tracking slots of ``--mamba-radix-cache-strategy`` (``extra_buffer``: 2 with the overlap
    scheduler, 1 without; ``extra_buffer_lazy``: 1; ``no_buffer``: 0, or 1 back under the
    skip-lock). Kimi K3 resolves ``auto`` to ``extra_buffer`` (``arg_groups/overrides.py``
    ``_mamba_radix_cache_resolution``), so the default is 5. Units: slots/request.
    """
    if strategy not in MAMBA_RADIX_STRATEGIES:
        raise ValueError(f"strategy must be one of {MAMBA_RADIX_STRATEGIES}, got {strategy!r}")
    if not radix_cache:
        return 1
    base = MAMBA_BASE_SLOTS_PER_REQUEST - (1 if skip_decode_lock else 0)
    if strategy == "extra_buffer_lazy":
        if not overlap_schedule:
            raise ValueError("extra_buffer_lazy requires the overlap scheduler "
                             "(sglang asserts it)")
        return base + 1
    if strategy == "extra_buffer":
        return base + (2 if overlap_schedule else 1)
    return base + (1 if skip_decode_lock else 0)


# --------------------------------------------------------------------------- mem_fraction_static


def _default_chunk_and_max_bs(gpu_memory_mib: float, tp_size: int) -> tuple[int, int]:
    """``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings`` capacity table."""
    if gpu_memory_mib < 20 * 1024:
        return 2048, 8
    if gpu_memory_mib < 35 * 1024:
        return 4096, (48 if tp_size < 4 else 160)
    if gpu_memory_mib < 60 * 1024:
        return 4096, (32 if tp_size < 4 else 160)
    if gpu_memory_mib < 160 * 1024:
        return 8192, (256 if tp_size < 4 else 512)
    return 16384, 512


def default_mem_fraction_static(*, gpu_memory_mib: float, tp_size: int, pp_size: int = 1,
                                chunked_prefill_size: int | None = None,
                                decode_cuda_graph_max_bs: int | None = None,
                                max_running_requests: int | None = None,
                                decode_cuda_graph: bool = True,
                                prefill_cuda_graph: bool = False,
                                use_mla_backend: bool = True,
                                prefill_cuda_graph_num_sizes: int | None = None,
                                attn_dp_size: int = 1, deepep: bool = False,
                                vision_num_layers: int | None = None,
                                vision_hidden_size: int | None = None) -> float:
    """The ``--mem-fraction-static`` sglang 0.5.23 picks when none is given (a fraction).

    Mirrors ``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings`` (non post-capture
    branch, not a PD decode server), ``reserve_for_graph_mb``, ``reserve_for_deepep_a2a_mb``
    and ``adjust_mem_fraction_for_vlm``. ``gpu_memory_mib`` is what
    ``utils/common.py`` ``get_device_memory_capacity`` returns (MiB: ``nvidia-smi
    memory.total`` on CUDA, ``rocminfo`` pool 1 size on ROCm). Reserve (MiB) =
    ``512 + 1.5·max(chunked_prefill, 2048) + tp·pp/8·1024 + graphs`` (graphs: ``2·decode
    max_bs``; MLA prefill graph 1536; DP attention extra), floored at 10,240 MiB on GPUs over
    60 GiB, + 2,048 for DeepEP; fraction = ``round((gpu − reserve)/gpu, 3)``. A multimodal
    model (pass the vision tower's layers and hidden size; Kimi K3: 27 and 1024) is then
    scaled by ``0.95 × clamp(1 − 0.1·(L·H² / (24·1024²) − 1), 0.8, 1.05)`` (not re-rounded).
    Kimi K3 disables prefill graphs (``arg_groups/cuda_graph_hook.py``
    ``disable_breakable_cudagraph_if_incompatible``: KDA hybrid), so
    ``prefill_cuda_graph`` defaults to False.

    The aiter long-context ×0.85 comes later; see :func:`effective_mem_fraction_static`.
    """
    gpu = _num("gpu_memory_mib", gpu_memory_mib, lo=0, lo_open=True)
    _pos_int("tp_size", tp_size)
    _pos_int("pp_size", pp_size)
    _pos_int("attn_dp_size", attn_dp_size)
    _opt_pos_int("chunked_prefill_size", chunked_prefill_size)
    _opt_pos_int("decode_cuda_graph_max_bs", decode_cuda_graph_max_bs)
    _opt_pos_int("max_running_requests", max_running_requests)
    if (vision_num_layers is None) != (vision_hidden_size is None):
        raise ValueError("give both vision_num_layers and vision_hidden_size, or neither")
    chunk_d, max_bs_d = _default_chunk_and_max_bs(gpu, tp_size)
    chunk = chunked_prefill_size if chunked_prefill_size is not None else chunk_d
    if decode_cuda_graph_max_bs is not None:
        max_bs = decode_cuda_graph_max_bs
    else:
        max_bs = max_bs_d
        if max_running_requests is not None and max_bs > max_running_requests:
            max_bs = max_running_requests
    reserved = 512 + max(chunk, 2048) * 1.5 + tp_size * pp_size / 8 * 1024
    graph = 0.0
    if decode_cuda_graph:
        graph += max_bs * 2
        if attn_dp_size > 1:
            graph += max_bs * attn_dp_size * 3
            if max_bs > 300:
                graph += max_bs * attn_dp_size * 1.5
    if prefill_cuda_graph:
        if use_mla_backend:
            graph += 1.5 * 1024
        else:
            if prefill_cuda_graph_num_sizes is None:
                raise ValueError("prefill_cuda_graph_num_sizes is needed for a non-MLA "
                                 "model with prefill CUDA graphs (8 MiB per captured size)")
            graph += _pos_int("prefill_cuda_graph_num_sizes", prefill_cuda_graph_num_sizes) * 8
    reserved += graph
    if gpu > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if deepep and decode_cuda_graph:
        reserved += 2 * 1024
    if reserved >= gpu:
        raise InsufficientMemoryError(f"the {reserved:.0f} MiB reserve exceeds the "
                                      f"{gpu:.0f} MiB GPU")
    frac = round((gpu - reserved) / gpu, 3)
    if vision_num_layers is not None:
        _pos_int("vision_num_layers", vision_num_layers)
        _pos_int("vision_hidden_size", vision_hidden_size)
        ratio = vision_num_layers * vision_hidden_size**2 / (24 * 1024**2)
        dyn = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
        frac = frac * (0.95 * dyn)
    return frac


def effective_mem_fraction_static(mem_fraction_static: float, *, attention_backend: str,
                                  context_len: int, honor_explicit: bool = False) -> float:
    """The fraction actually used after attention-backend resolution (a fraction).

    Mirrors 0.5.23 ``arg_groups/attention_hook.py``
    ``handle_attention_backend_compatibility``: when the resolved ``--attention-backend``
    is ``aiter`` and the context length exceeds 8,192 tokens, the fraction (given or
    default) is multiplied by 0.85, unless ``SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1``
    and the user gave one (``honor_explicit=True``). Kimi K3 on ROCm defaults to ``triton``
    (12 heads per rank at TP8 are not 16/128; ``model_override_base.get_default_attn_backend``),
    so the scaling only bites when ``--attention-backend aiter`` is passed.
    """
    mf = _num("mem_fraction_static", mem_fraction_static, lo=0, hi=1, lo_open=True)
    _pos_int("context_len", context_len)
    if not isinstance(attention_backend, str) or not attention_backend:
        raise ValueError(f"attention_backend must be a backend name, got {attention_backend!r}")
    if (attention_backend == "aiter" and context_len > AITER_LONG_CONTEXT_THRESHOLD
            and not honor_explicit):
        return mf * AITER_LONG_CONTEXT_SCALE
    return mf


# --------------------------------------------------------------------------- the budget


def multimodal_reserve_gib(*, is_multimodal: bool, mm_feature_transport: str = "cpu",
                           vlm_cache_mib: int = VLM_CACHE_RESERVE_MIB,
                           feature_cache_mib: int = MM_FEATURE_CACHE_MIB) -> float:
    """GiB reserved out of the KV budget for post-sizing multimodal allocations.

    Mirrors 0.5.23 ``mem_cache/kv_cache_configurator.py`` ``mm_runtime_reservation_gb``:
    ``SGLANG_VLM_CACHE_SIZE_MB`` (100) plus ``SGLANG_MM_FEATURE_CACHE_MB`` (1024) for the
    ``cuda_ipc``/``cuda_vmm`` transports, divided by 1024. Kimi K3
    (``KimiK3ForConditionalGeneration``) is multimodal unless ``--language-only``.
    Units: GiB (sglang's "GB").
    """
    if mm_feature_transport not in ("cpu", "cuda_ipc", "cuda_vmm"):
        raise ValueError(f"mm_feature_transport must be cpu, cuda_ipc or cuda_vmm, "
                         f"got {mm_feature_transport!r}")
    if not is_multimodal:
        return 0.0
    mib = _pos_int("vlm_cache_mib", vlm_cache_mib, zero_ok=True)
    if mm_feature_transport in ("cuda_ipc", "cuda_vmm"):
        mib += _pos_int("feature_cache_mib", feature_cache_mib, zero_ok=True)
    return mib / 1024


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
    pre = _pos_int("pre_model_load_free_bytes", pre_model_load_free_bytes)
    post = _pos_int("post_load_free_bytes", post_load_free_bytes, zero_ok=True)
    mf = _num("mem_fraction_static", mem_fraction_static, lo=0, hi=1, lo_open=True)
    mm = _num("mm_reserve_gib", mm_reserve_gib, lo=0)
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

    Mirrors 0.5.23 ``mem_cache/kv_cache_configurator.py``
    ``KVCacheConfigurator._handle_max_mamba_cache`` (no ReplaySSM, no unified pool, no PP
    scaling — pass a stage's slot bytes for PP). Three branches, in sglang's order:

    - ``--max-mamba-cache-size`` given: that many slots (÷ attn DP); with speculation,
      ``slot × (min(max_running, slots // ratio) + 1) × D`` is reserved for verify states.
    - radix cache disabled and ``--max-running-requests`` given: slots = max_running
      (÷ attn DP); verify reserve ``slot × (slots + 1) × D``.
    - otherwise (the Kimi K3 default): a budget ``rest × r/(1 + r)`` with ``r =
      --mamba-full-memory-ratio`` (0.9 → 47.4 %) gives ``K = int((budget − slot) // slot)``;
      with speculation (``D`` = ``--speculative-num-draft-tokens``; DSPARK: block + 1 = 8)
      ``K = int((budget − slot·(1 + D)) // (slot·(1 + D/ratio)))`` and the verify reserve is
      ``slot × (min(max_running, K // ratio) + 1) × D``.

    Then ``(K + 1) × slot`` (one padding slot) leaves the budget. Units: ``rest_gib`` and
    ``rest_after_gib`` in GiB, bytes elsewhere, slots for ``max_mamba_cache_size``.
    """
    rest = _num("rest_gib", rest_gib)
    slot = _pos_int("state_bytes_per_slot", state_bytes_per_slot)
    r = _num("mamba_full_memory_ratio", mamba_full_memory_ratio, lo=0, lo_open=True)
    ratio = _pos_int("slots_per_request", slots_per_request)
    _opt_pos_int("max_mamba_cache_size", max_mamba_cache_size)
    _opt_pos_int("max_running_requests", max_running_requests)
    _pos_int("attn_dp_size", attn_dp_size)
    d = _opt_pos_int("speculative_num_draft_tokens", speculative_num_draft_tokens)
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
    b = _pos_int("budget_bytes", budget_bytes, zero_ok=True)
    cell = _pos_int("cell_bytes_per_token", cell_bytes_per_token)
    page = _pos_int("page_size", page_size)
    cap = _opt_pos_int("max_total_tokens", max_total_tokens)
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
    tokens = _pos_int("token_capacity", token_capacity)
    ctx = _pos_int("context_len", context_len)
    _opt_pos_int("max_running_requests", max_running_requests)
    _pos_int("attn_dp_size", attn_dp_size)
    if (max_mamba_cache_size is None) != (slots_per_request is None):
        raise ValueError("give both max_mamba_cache_size and slots_per_request for a hybrid "
                         "model, or neither")
    estimated = max(min(int(tokens / ctx * 512), 4096), 2048)
    if max_running_requests is not None:
        n = min(max(1, max_running_requests // attn_dp_size), tokens // 2)
    else:
        n = min(estimated, tokens // 2)
    if max_mamba_cache_size is not None:
        _pos_int("max_mamba_cache_size", max_mamba_cache_size)
        _pos_int("slots_per_request", slots_per_request)
        n = min(n, max_mamba_cache_size // slots_per_request)
    if n <= 0:
        raise InsufficientMemoryError(f"the pools admit no request (max_running_requests={n})")
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
    mf = _num("mem_fraction_static", mem_fraction_static, lo=0, hi=1, lo_open=True)
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
    if rest_after <= 0:
        raise InsufficientMemoryError(f"the state pool leaves {rest_after:.3f} GiB for the "
                                      "KV pool")
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
    cap = _pos_int("capacity_bytes", capacity_bytes)
    ovh = _pos_int("init_overhead_bytes", init_overhead_bytes, zero_ok=True)
    w = _pos_int("weights_bytes", weights_bytes, zero_ok=True)
    dw = _pos_int("draft_weights_bytes", draft_weights_bytes, zero_ok=True)
    other = _pos_int("other_resident_bytes", other_resident_bytes, zero_ok=True)
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
    n = _pos_int("max_running_requests", max_running_requests)
    ctx = _pos_int("context_len", context_len)
    extra = _pos_int("extra_context_len", extra_context_len, zero_ok=True)
    return (n + 1) * (ctx + extra) * 4


# --------------------------------------------------------------------------- weights outside the inventory


def dflash_draft_weight_bytes_per_rank(*, hidden_size: int, num_layers: int, num_heads: int,
                                       num_kv_heads: int, head_dim: int, intermediate_size: int,
                                       num_context_features: int, tp_size: int,
                                       vocab_size: int = 0, markov_rank: int = 0,
                                       confidence_head: bool = False,
                                       dtype_bytes: int = 2) -> int:
    """Resident bytes per rank of a dense DFLASH/DSPARK draft (Qwen3-style GQA layers).

    Mirrors 0.5.23 ``models/dflash.py`` ``DFlashDraftModel``/``DFlashAttention``/``DFlashMLP``
    (QKV and gate/up column-parallel, o/down row-parallel, KV heads replicated when fewer
    than ranks, q/k norms per head dim, two RMSNorms per layer) plus the replicated context
    projection ``fc`` (``num_context_features·hidden → hidden``, ``hidden_norm``, final
    ``norm``) and, from ``models/dspark.py``, the replicated ``VanillaMarkov`` head
    (``nn.Embedding(vocab, rank)`` + ``nn.Linear(rank, vocab)``) and the confidence head
    (``Linear(hidden + rank, 1)`` with bias). The draft shares the target's embedding and
    lm_head. Units: bytes. RadixArk/Kimi-K3-DSpark (hidden 7168, 5 layers, 64 × 64 heads,
    16 KV heads, FFN 14336, 5 target features, rank 256): 2,249,289,601 parameters at TP1
    (matching the published checkpoint's count); 579,432,321 per rank at TP8 = 1,158,864,642 B.
    """
    for name, v in (("hidden_size", hidden_size), ("num_layers", num_layers),
                    ("num_heads", num_heads), ("num_kv_heads", num_kv_heads),
                    ("head_dim", head_dim), ("intermediate_size", intermediate_size),
                    ("num_context_features", num_context_features), ("tp_size", tp_size)):
        _pos_int(name, v)
    _pos_int("vocab_size", vocab_size, zero_ok=True)
    _pos_int("markov_rank", markov_rank, zero_ok=True)
    if dtype_bytes not in (1, 2, 4):
        raise ValueError(f"dtype_bytes must be 1, 2 or 4, got {dtype_bytes!r}")
    if num_heads % tp_size:
        raise ValueError(f"tp_size={tp_size} does not divide the draft's {num_heads} heads")
    if intermediate_size % tp_size:
        raise ValueError(f"tp_size={tp_size} does not divide the draft FFN {intermediate_size}")
    if num_kv_heads >= tp_size and num_kv_heads % tp_size:
        raise ValueError(f"tp_size={tp_size} does not divide the draft's {num_kv_heads} KV heads")
    if num_kv_heads < tp_size and tp_size % num_kv_heads:
        raise ValueError(f"{num_kv_heads} KV heads cannot be replicated over tp_size={tp_size}")
    if (markov_rank > 0) != (vocab_size > 0):
        raise ValueError("a Markov head needs both vocab_size and markov_rank")
    h = hidden_size
    q = num_heads // tp_size * head_dim
    kv = max(1, num_kv_heads // tp_size) * head_dim
    inter = intermediate_size // tp_size
    layer = h * (q + 2 * kv) + q * h + 3 * h * inter + 2 * head_dim + 2 * h
    params = num_layers * layer + num_context_features * h * h + 2 * h
    params += 2 * vocab_size * markov_rank
    if confidence_head:
        params += h + markov_rank + 1
    return params * dtype_bytes


def moonvit_weight_bytes(*, num_layers: int, hidden_size: int, qkv_hidden_size: int,
                         intermediate_size: int, patch_size: int, pos_emb_height: int,
                         pos_emb_width: int, merge_kernel: tuple[int, int],
                         text_hidden_size: int, dtype_bytes: int = 2) -> int:
    """Resident bytes of Kimi K3's vision tower + projector, on EVERY rank (replicated).

    Mirrors 0.5.23 ``models/kimi_k3.py`` ``KimiK3ForConditionalGeneration.__init__``
    (``use_data_parallel = True``: "runs replicated (per-rank full weights)") and
    ``models/kimi_k3_vl.py`` ``KimiK3VisionTower`` / ``MoonViTEncoderLayer`` /
    ``KimiK3MultiModalProjector`` for the published K3 vision config (bias-free linears and
    patch conv, RMSNorms): patch conv ``3·p²·H``, learnable pos-emb ``h·w·H``, per layer
    ``wqkv H→3·qkv`` + ``wo qkv→H`` + MLP ``H→I→H`` + 2 norms, a final norm, projector
    ``(m·H)² + m·H·text_H`` + post norm (``m`` = merge area). Non-persistent buffers
    (sin-cos time table; the 2-D RoPE table built at the first image) are left out.
    Units: bytes. Kimi K3 (27 × 1024, qkv 1536, FFN 4096, 14-px patches, 64×64 pos-emb,
    2×2 merge → 7168): 447,358,976 parameters = 894,717,952 B in bf16.
    """
    for name, v in (("num_layers", num_layers), ("hidden_size", hidden_size),
                    ("qkv_hidden_size", qkv_hidden_size), ("intermediate_size", intermediate_size),
                    ("patch_size", patch_size), ("pos_emb_height", pos_emb_height),
                    ("pos_emb_width", pos_emb_width), ("text_hidden_size", text_hidden_size)):
        _pos_int(name, v)
    if (not isinstance(merge_kernel, tuple) or len(merge_kernel) != 2
            or any(isinstance(m, bool) or not isinstance(m, int) or m <= 0 for m in merge_kernel)):
        raise ValueError(f"merge_kernel must be a pair of positive integers, got {merge_kernel!r}")
    if dtype_bytes not in (2, 4):
        raise ValueError(f"dtype_bytes must be 2 or 4, got {dtype_bytes!r}")
    h = hidden_size
    layer = h * 3 * qkv_hidden_size + qkv_hidden_size * h + 2 * h * intermediate_size + 2 * h
    merged = merge_kernel[0] * merge_kernel[1] * h
    params = (3 * patch_size * patch_size * h + pos_emb_height * pos_emb_width * h
              + num_layers * layer + h
              + merged * merged + merged * text_hidden_size + text_hidden_size)
    return params * dtype_bytes


# --------------------------------------------------------------------------- load-time peak


def mxfp4_moe_layer_bytes(*, num_local_experts: int, hidden_size: int,
                          intermediate_per_partition: int) -> dict:
    """Bytes of one MoE layer's MXFP4 expert tensors on one rank, by tensor.

    Mirrors 0.5.23 ``layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights``:
    ``w13 [E, 2I, H/2]`` and ``w2 [E, H, I/2]`` uint8 (two E2M1 per byte), scales
    ``[E, 2I, H/32]`` and ``[E, H, I/32]`` uint8 (E8M0). ``hidden_size`` / ``intermediate``
    are the padded values the method uses (Kimi K3's latent 3584 and 3072/tp; no padding at
    TP8 on SM100 FlashInfer, Marlin, or AITER with ``SGLANG_AITER_K3_OPT=1``; AITER
    without it pads 384 → 512). The zero biases (bf16 ``[E, 2I]``, ``[E, H]``, created
    when not on ROCm) are returned separately. Units: bytes.
    """
    e = _pos_int("num_local_experts", num_local_experts)
    h = _pos_int("hidden_size", hidden_size)
    i = _pos_int("intermediate_per_partition", intermediate_per_partition)
    if h % MXFP4_BLOCK or i % MXFP4_BLOCK:
        raise ValueError(f"hidden_size ({h}) and intermediate_per_partition ({i}) must be "
                         f"multiples of the {MXFP4_BLOCK}-element MXFP4 block")
    return {"w13": e * 2 * i * h // 2, "w13_scale": e * 2 * i * h // MXFP4_BLOCK,
            "w2": e * h * i // 2, "w2_scale": e * h * i // MXFP4_BLOCK,
            "w13_bias_bf16": e * 2 * i * 2, "w2_bias_bf16": e * h * 2}


def mxfp4_post_load_transient_bytes(*, backend: str, num_local_experts: int, hidden_size: int,
                                    intermediate_per_partition: int,
                                    gate_up_interleaved: bool = False) -> int:
    """Extra bytes one MoE layer holds at the worst moment of its post-load repacking.

    sglang 0.5.23 repacks each MoE layer in ``layers/quantization/mxfp4.py``
    ``Mxfp4MoEMethod.process_weights_after_loading``, one layer at a time after all weights
    are loaded (``model_loader`` post-processing), so the load-time peak is the resident
    weights plus the largest single-layer transient. Per backend (``A`` = w13, ``a`` = its
    scale, ``B`` = w2, ``b`` = its scale, from :func:`mxfp4_moe_layer_bytes`):

    - ``"flashinfer_sm100"`` (B200/B300 ``flashinfer_mxfp4``, Kimi K3's SM100/103 default):
      the non-interleaved K3 layout is first re-ordered by an index gather (new ``A + a``),
      every expert is permuted into a Python list (``A + a + B + b``), then ``torch.stack``
      builds the final ``A`` while the originals, the re-ordered copy and the lists are all
      alive: peak extra ``3A + 2a + B + b`` (plus a few MiB of fp32 biases). The layer's zero
      biases end up fp32 (twice their bf16 bytes) — a steady-state change, not a transient.
    - ``"aiter"`` (ROCm with ``SGLANG_USE_AITER=1``): ``shuffle_weight``/``shuffle_weight_a16w4``
      (aiter ``ops/shuffle.py``: ``permute(...).contiguous()``) return one new tensor
      per weight and the old one is dropped on reassignment: peak extra ``A`` (w13 is the
      larger); scale shuffles are smaller. An interleaved layout (not K3) would first
      rewrite w13 in place through one extra ``A``-sized copy, which frees before the shuffle.
    - ``"deep_gemm"``: the weights are re-viewed in place; scales are rebuilt through an
      fp32 copy (``4a`` for w13) — peak extra ``4a + a``.

    Units: bytes (per rank, per layer).
    """
    sizes = mxfp4_moe_layer_bytes(num_local_experts=num_local_experts, hidden_size=hidden_size,
                                  intermediate_per_partition=intermediate_per_partition)
    a_, sa, b_, sb = sizes["w13"], sizes["w13_scale"], sizes["w2"], sizes["w2_scale"]
    if backend == "flashinfer_sm100":
        base = 2 * a_ + sa + b_ + sb  # lists (A+a+B+b) + final stack A
        if not gate_up_interleaved:
            base += a_ + sa  # the index-gather re-ordered copy, alive until the stack returns
        return base
    if backend == "aiter":
        return a_
    if backend == "deep_gemm":
        return 5 * sa
    raise ValueError(f"backend must be 'flashinfer_sm100', 'aiter' or 'deep_gemm', got {backend!r}")


def load_peak_bytes(*, resident_weights_bytes: int, largest_layer_transient_bytes: int,
                    other_post_load_transient_bytes: int = 0) -> int:
    """Peak bytes per rank during loading: resident weights + the largest transient.

    The post-load passes of 0.5.23 run layer by layer (MoE repacking in
    ``Mxfp4MoEMethod.process_weights_after_loading``; ``models/kimi_k3.py``
    ``KimiK3LinearForCausalLM.post_load_weights``: ``kv_b_proj`` → ``w_kc``/``w_vc`` copies,
    the merged front / KDA in-proj buffers), and the caching allocator reuses a freed
    layer's blocks for the next, so transients do not add up across layers: the peak is
    ``resident + max(transients)``. Units: bytes.
    """
    r = _pos_int("resident_weights_bytes", resident_weights_bytes, zero_ok=True)
    t = _pos_int("largest_layer_transient_bytes", largest_layer_transient_bytes, zero_ok=True)
    o = _pos_int("other_post_load_transient_bytes", other_post_load_transient_bytes, zero_ok=True)
    return r + max(t, o)
