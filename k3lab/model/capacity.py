"""Per-token and per-request cache sizes: the MLA latent KV cache, a draft's KV and the KDA state.

Two forms of each size, one arithmetic: functions of plain numbers that mirror sglang
0.5.23's cell and slot sizes (:func:`mla_cell_bytes_per_token`,
:func:`dflash_draft_cell_bytes_per_token`, :func:`kda_state_bytes_per_slot`; what
:mod:`k3lab.model.pool_sizing` divides its budget by), and the same sizes read from a
:class:`~k3lab.specs.ModelConfig` (:func:`kv_bytes_per_token`,
:func:`kda_state_bytes_per_request`), which call them.

Units: bytes per token per rank, bytes per request per rank. ``layers``: 0-based layer
indices (e.g. one pipeline stage's); default: all layers of the model.
"""

from __future__ import annotations

from ..data import check_count
from .config import ModelConfig
from ._checks import check_size
from .inventory import layer_sets
from .quant import BYTES_PER_ELEMENT

KV_DTYPES = ("bf16", "fp8")
STATE_DTYPES = ("fp32", "bf16")


def check_dtype(name: str, v: str, allowed) -> str:
    if v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {v!r}")
    return v


# --------------------------------------------------------------------------- plain numbers (sglang's cells)


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
    check_size("num_full_attn_layers", num_full_attn_layers)
    check_count("kv_lora_rank", kv_lora_rank)
    check_size("qk_rope_head_dim", qk_rope_head_dim)
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
    check_count("num_kv_heads", num_kv_heads)
    check_count("head_dim", head_dim)
    check_count("v_head_dim", v_head_dim)
    check_size("num_layers", num_layers)
    check_count("attn_tp_size", attn_tp_size)
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
    check_size("num_linear_layers", num_linear_layers)
    check_count("num_heads", num_heads)
    check_count("head_dim", head_dim)
    check_count("conv_kernel_size", conv_kernel_size)
    check_count("attn_tp_size", attn_tp_size)
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


# --------------------------------------------------------------------------- from a model config


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str = "bf16", layers=None) -> int:
    """MLA latent cache bytes per token per rank, over the MLA layers (of ``layers``).

    Each MLA layer caches one ``kv_lora_rank + qk_rope_head_dim`` vector per token (512 +
    64 for the K3 family); it is NOT split by TP: every TP rank keeps the whole latent
    (sglang ``MLATokenToKVPool``, one head of ``kv_lora_rank + qk_rope_head_dim``). KDA
    layers keep no per-token cache. :func:`mla_cell_bytes_per_token` of the config.
    """
    check_dtype("kv_dtype", kv_dtype, KV_DTYPES)
    mla = set(layer_sets(cfg)[1])
    n = len(mla) if layers is None else len(mla & set(layers))
    return mla_cell_bytes_per_token(num_full_attn_layers=n, kv_lora_rank=cfg.kv_lora_rank,
                                    qk_rope_head_dim=cfg.qk_rope_head_dim,
                                    kv_dtype_bytes=int(BYTES_PER_ELEMENT[kv_dtype]))


def kda_state_bytes_per_request(cfg: ModelConfig, tp: int = 8, state_dtype: str = "fp32",
                                conv_dtype: str = "bf16", layers=None) -> int:
    """KDA recurrent + short-conv state per request per rank, over the KDA layers.

    Per layer and rank (sglang 0.5.23 ``srt/configs/mamba_utils.py``, ``KimiLinearStateShape``
    / ``KimiLinearCacheParams``): the recurrent state ``heads/tp × head_dim × head_dim`` in
    ``state_dtype`` (fp32 default, env ``SGLANG_MAMBA_SSM_DTYPE``) and the conv state
    ``(kernel − 1) × 3·heads·head_dim/tp`` in ``conv_dtype`` (bf16 default,
    ``SGLANG_MAMBA_CONV_DTYPE``). 0 for a model without KDA. :func:`kda_state_bytes_per_slot`
    of the config.
    """
    check_dtype("state_dtype", state_dtype, STATE_DTYPES)
    check_dtype("conv_dtype", conv_dtype, STATE_DTYPES)
    if not cfg.has_kda:
        return 0
    if cfg.linear_attn_num_heads % tp:
        raise ValueError(f"tp={tp} does not divide the {cfg.linear_attn_num_heads} KDA heads")
    kda = set(layer_sets(cfg)[2])
    n = len(kda) if layers is None else len(kda & set(layers))
    return kda_state_bytes_per_slot(num_linear_layers=n, num_heads=cfg.linear_attn_num_heads,
                                    head_dim=cfg.linear_attn_head_dim,
                                    conv_kernel_size=cfg.short_conv_kernel_size, attn_tp_size=tp,
                                    ssm_dtype_bytes=int(BYTES_PER_ELEMENT[state_dtype]),
                                    conv_dtype_bytes=int(BYTES_PER_ELEMENT[conv_dtype]))
