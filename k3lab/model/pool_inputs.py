"""What sglang 0.5.23 settles before it sizes the memory pools, as pure functions of plain numbers.

The inputs of :mod:`k3lab.model.pool_sizing` that come from server flags and the GPU, not
from the loaded weights: the ``--mem-fraction-static`` sglang picks when none is given
(:func:`default_mem_fraction_static`) and the aiter long-context scaling applied to it
(:func:`effective_mem_fraction_static`), the state slots reserved per running request
(:func:`mamba_slots_per_request`, sglang's "mamba ratio"), and the GiB a multimodal model
keeps out of the KV budget (:func:`multimodal_reserve_gib`). Also
:class:`InsufficientMemoryError`, which every sizing step raises when nothing is left.

Read from sglang 0.5.23 (PyPI wheel ``sglang-0.5.23``); every function names the sglang
function it mirrors. Units are in the names (MiB = 2**20 B, GiB = 2**30 B).
"""

from __future__ import annotations

from ..data import check_count, check_finite
from ._checks import check_fraction, check_optional_count, check_size

#: sglang 0.5.23 ``environ.py`` ``SGLANG_VLM_CACHE_SIZE_MB`` default (MiB), reserved out of the
#: KV budget for a multimodal model (``kv_cache_configurator.mm_runtime_reservation_gb``).
VLM_CACHE_RESERVE_MIB = 100
#: ``environ.py`` ``SGLANG_MM_FEATURE_CACHE_MB`` default (MiB), added to the reserve only when
#: ``--mm-feature-transport`` is ``cuda_ipc`` or ``cuda_vmm``.
MM_FEATURE_CACHE_MIB = 1024
#: ``mem_cache/kv_cache_configurator.py`` ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``.
MAMBA_BASE_SLOTS_PER_REQUEST = 3
#: ``attention_hook.py`` ``_handle_attention_backend_compatibility``: aiter + context > 8192.
AITER_LONG_CONTEXT_SCALE = 0.85
AITER_LONG_CONTEXT_THRESHOLD = 8192

MAMBA_RADIX_STRATEGIES = ("no_buffer", "extra_buffer", "extra_buffer_lazy")


class InsufficientMemoryError(ValueError):
    """The inputs leave no room for a pool (sglang raises ValueError/RuntimeError here)."""


# --------------------------------------------------------------------------- state slots per request


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
    gpu = check_finite("gpu_memory_mib", gpu_memory_mib)
    check_count("tp_size", tp_size)
    check_count("pp_size", pp_size)
    check_count("attn_dp_size", attn_dp_size)
    check_optional_count("chunked_prefill_size", chunked_prefill_size)
    check_optional_count("decode_cuda_graph_max_bs", decode_cuda_graph_max_bs)
    check_optional_count("max_running_requests", max_running_requests)
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
            graph += check_count("prefill_cuda_graph_num_sizes", prefill_cuda_graph_num_sizes) * 8
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
        check_count("vision_num_layers", vision_num_layers)
        check_count("vision_hidden_size", vision_hidden_size)
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
    mf = check_fraction("mem_fraction_static", mem_fraction_static)
    check_count("context_len", context_len)
    if not isinstance(attention_backend, str) or not attention_backend:
        raise ValueError(f"attention_backend must be a backend name, got {attention_backend!r}")
    if (attention_backend == "aiter" and context_len > AITER_LONG_CONTEXT_THRESHOLD
            and not honor_explicit):
        return mf * AITER_LONG_CONTEXT_SCALE
    return mf


# --------------------------------------------------------------------------- multimodal reserve


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
    mib = check_size("vlm_cache_mib", vlm_cache_mib)
    if mm_feature_transport in ("cuda_ipc", "cuda_vmm"):
        mib += check_size("feature_cache_mib", feature_cache_mib)
    return mib / 1024
