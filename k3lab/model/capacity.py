"""Per-token and per-request cache sizes: the MLA latent KV cache and the KDA state.

Units: bytes per token per rank, bytes per request per rank. ``layers``: 0-based layer
indices (e.g. one pipeline stage's); default: all layers of the model.
"""

from __future__ import annotations

from ..specs import ModelConfig
from .inventory import layer_sets
from .quant import BYTES_PER_ELEMENT

KV_DTYPES = ("bf16", "fp8")
STATE_DTYPES = ("fp32", "bf16")


def check_dtype(name: str, v: str, allowed) -> str:
    if v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {v!r}")
    return v


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str = "bf16", layers=None) -> int:
    """MLA latent cache bytes per token per rank, over the MLA layers (of ``layers``).

    Each MLA layer caches one ``kv_lora_rank + qk_rope_head_dim`` vector per token (512 +
    64 for the K3 family); it is NOT split by TP: every TP rank keeps the whole latent
    (sglang ``MLATokenToKVPool``, one head of ``kv_lora_rank + qk_rope_head_dim``). KDA
    layers keep no per-token cache.
    """
    check_dtype("kv_dtype", kv_dtype, KV_DTYPES)
    mla = set(layer_sets(cfg)[1])
    n = len(mla) if layers is None else len(mla & set(layers))
    return int(n * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) * BYTES_PER_ELEMENT[kv_dtype])


def kda_state_bytes_per_request(cfg: ModelConfig, tp: int = 8, state_dtype: str = "fp32",
                                conv_dtype: str = "bf16", layers=None) -> int:
    """KDA recurrent + short-conv state per request per rank, over the KDA layers.

    Per layer and rank (sglang 0.5.23 ``srt/configs/mamba_utils.py``, ``KimiLinearStateShape``
    / ``KimiLinearCacheParams``): the recurrent state ``heads/tp × head_dim × head_dim`` in
    ``state_dtype`` (fp32 default, env ``SGLANG_MAMBA_SSM_DTYPE``) and the conv state
    ``(kernel − 1) × 3·heads·head_dim/tp`` in ``conv_dtype`` (bf16 default,
    ``SGLANG_MAMBA_CONV_DTYPE``). 0 for a model without KDA.
    """
    check_dtype("state_dtype", state_dtype, STATE_DTYPES)
    check_dtype("conv_dtype", conv_dtype, STATE_DTYPES)
    if not cfg.has_kda:
        return 0
    if cfg.linear_attn_num_heads % tp:
        raise ValueError(f"tp={tp} does not divide the {cfg.linear_attn_num_heads} KDA heads")
    kda = set(layer_sets(cfg)[2])
    n = len(kda) if layers is None else len(kda & set(layers))
    h, d = cfg.linear_attn_num_heads // tp, cfg.linear_attn_head_dim
    recurrent = h * d * d * BYTES_PER_ELEMENT[state_dtype]
    conv = (cfg.short_conv_kernel_size - 1) * 3 * h * d * BYTES_PER_ELEMENT[conv_dtype]
    return int(n * (recurrent + conv))
