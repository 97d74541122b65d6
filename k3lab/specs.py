"""Load and validate the model config and the hardware table from ``data/``.

``load_model("kimi-k3")`` → :class:`ModelConfig` (the published ``text_config`` with the
fields k3lab uses, validated). ``load_gpu("mi355x")`` → :class:`GPU` with explicit units
in every field name and the source of each value in ``.provenance``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from .paths import data_path

GB = 10**9
GiB = 2**30

_MODEL_FILES = {"kimi-k3": ("model", "kimi_k3_config.json")}

_INT_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "max_position_embeddings", "intermediate_size",
    "first_k_dense_replace", "num_experts", "num_experts_per_token", "num_shared_experts",
    "moe_intermediate_size", "routed_expert_hidden_size", "num_nextn_predict_layers",
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
)


@dataclass(frozen=True)
class ModelConfig:
    """The text config of a model, validated. Layer indices are 1-based, as published."""

    name: str
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    intermediate_size: int
    first_k_dense_replace: int
    num_experts: int
    num_experts_per_token: int
    num_shared_experts: int
    moe_intermediate_size: int
    routed_expert_hidden_size: int
    num_nextn_predict_layers: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    mla_use_output_gate: bool
    mla_use_nope: bool
    latent_moe_use_norm: bool
    tie_word_embeddings: bool
    linear_attn_num_heads: int
    linear_attn_head_dim: int
    short_conv_kernel_size: int
    full_attn_layers: tuple[int, ...]
    kda_layers: tuple[int, ...]
    quantization: dict = field(default_factory=dict, compare=False, repr=False)
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    provenance: str = field(default="", compare=False, repr=False)

    @property
    def num_mla_layers(self) -> int:
        """Layers with full (MLA) attention and a per-token KV cache."""
        return len(self.full_attn_layers)

    @property
    def num_kda_layers(self) -> int:
        """Layers with KDA linear attention (a fixed-size recurrent state per request)."""
        return len(self.kda_layers)

    @property
    def num_moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (all but the first ``first_k_dense_replace``)."""
        return self.num_hidden_layers - self.first_k_dense_replace

    @property
    def qk_head_dim(self) -> int:
        """q/k head dimension in MHA (prefill) form: nope + rope slot."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim


def _require_positive_int(d: dict, key: str, where: str) -> int:
    if key not in d:
        raise ValueError(f"{where}: missing required field {key!r}")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{where}: field {key!r} must be an integer, got {v!r}")
    if v < 0 or (v == 0 and key not in ("num_nextn_predict_layers",)):
        raise ValueError(f"{where}: field {key!r} must be positive, got {v}")
    return v


def model_from_dict(raw: dict, name: str = "model") -> ModelConfig:
    """Validate a published HF config dict (with or without ``text_config``)."""
    tc = raw.get("text_config", raw)
    where = f"model config {name!r}"
    ints = {k: _require_positive_int(tc, k, where) for k in _INT_FIELDS}
    lac = tc.get("linear_attn_config")
    if not isinstance(lac, dict):
        raise ValueError(f"{where}: missing 'linear_attn_config'")
    full = tuple(int(i) for i in lac.get("full_attn_layers", ()))
    kda = tuple(int(i) for i in lac.get("kda_layers", ()))
    n = ints["num_hidden_layers"]
    if sorted(full + kda) != list(range(1, n + 1)):
        raise ValueError(
            f"{where}: full_attn_layers ({len(full)}) and kda_layers ({len(kda)}) must "
            f"partition layers 1..{n} exactly once each")
    if ints["num_attention_heads"] % ints["num_key_value_heads"]:
        raise ValueError(f"{where}: num_key_value_heads must divide num_attention_heads")
    if ints["num_experts_per_token"] > ints["num_experts"]:
        raise ValueError(f"{where}: num_experts_per_token exceeds num_experts")
    if ints["first_k_dense_replace"] > n:
        raise ValueError(f"{where}: first_k_dense_replace exceeds num_hidden_layers")
    return ModelConfig(
        name=name,
        **ints,
        mla_use_output_gate=bool(tc.get("mla_use_output_gate", False)),
        mla_use_nope=bool(tc.get("mla_use_nope", False)),
        latent_moe_use_norm=bool(tc.get("latent_moe_use_norm", False)),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", tc.get("tie_word_embeddings", False))),
        linear_attn_num_heads=_require_positive_int(lac, "num_heads", where + " linear_attn_config"),
        linear_attn_head_dim=_require_positive_int(lac, "head_dim", where + " linear_attn_config"),
        short_conv_kernel_size=_require_positive_int(lac, "short_conv_kernel_size", where + " linear_attn_config"),
        full_attn_layers=full,
        kda_layers=kda,
        quantization=dict(tc.get("quantization_config") or {}),
        raw=raw,
        provenance=str(raw.get("_provenance", "")),
    )


@functools.lru_cache(maxsize=None)
def load_model(name: str = "kimi-k3") -> ModelConfig:
    """Load a model config from ``data/model``. Known names: ``kimi-k3``."""
    key = name.lower()
    if key not in _MODEL_FILES:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(_MODEL_FILES))}")
    with open(data_path(*_MODEL_FILES[key]), encoding="utf-8") as f:
        raw = json.load(f)
    return model_from_dict(raw, name=key)


# --------------------------------------------------------------------------- GPUs

_GPU_NUMERIC = (
    "hbm_gb", "usable_hbm_gb", "hbm_bw_tb_s", "dense_fp4_tflops", "dense_fp8_tflops",
    "dense_bf16_tflops", "board_power_w", "scale_up_links", "scale_up_gb_s_per_direction",
)


@dataclass(frozen=True)
class GPU:
    """One GPU's facts. Units are in the field names (GB = 1e9 B, TB/s = 1e12 B/s)."""

    key: str
    name: str
    vendor: str
    hbm_gb: float
    usable_hbm_gb: float
    hbm_bw_tb_s: float
    dense_fp4_tflops: float
    dense_fp8_tflops: float
    dense_bf16_tflops: float
    board_power_w: float
    scale_up: str
    scale_up_links: float
    scale_up_gb_s_per_direction: float
    provenance: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def usable_hbm_bytes(self) -> int:
        """Usable HBM in bytes (what an allocator can hand out)."""
        return int(round(self.usable_hbm_gb * GB))

    @property
    def hbm_gib(self) -> float:
        """Physical HBM in GiB (2**30 bytes)."""
        return self.hbm_gb * GB / GiB

    def with_hbm_gb(self, gb: float, label: str | None = None) -> "GPU":
        """A copy with a different usable capacity (e.g. the article's 192 GB B200)."""
        if not gb > 0:
            raise ValueError(f"HBM capacity must be positive, got {gb!r} GB")
        return dataclasses.replace(self, key=label or f"{self.key}@{gb:g}GB",
                                   usable_hbm_gb=float(gb))


@functools.lru_cache(maxsize=None)
def _hardware_table() -> dict:
    with open(data_path("hardware.yaml"), encoding="utf-8") as f:
        table = yaml.safe_load(f)
    if not isinstance(table, dict) or "gpus" not in table or "sources" not in table:
        raise ValueError("data/hardware.yaml: expected top-level 'sources' and 'gpus'")
    return table


def known_gpus() -> list[str]:
    """Names accepted by :func:`load_gpu`."""
    return sorted(_hardware_table()["gpus"])


def _field(entry: dict, key: str, gpu: str, sources: dict) -> tuple[Any, dict]:
    if key not in entry:
        raise ValueError(f"data/hardware.yaml: GPU {gpu!r} lacks field {key!r}")
    cell = entry[key]
    if not isinstance(cell, dict) or "value" not in cell or "source" not in cell:
        raise ValueError(f"data/hardware.yaml: {gpu}.{key} must be {{value, source}}")
    if cell["source"] not in sources:
        raise ValueError(f"data/hardware.yaml: {gpu}.{key} cites unknown source {cell['source']!r}")
    return cell["value"], sources[cell["source"]]


def load_gpu(name: str) -> GPU:
    """Load one GPU from ``data/hardware.yaml`` (``mi355x``, ``b300``, ``b200``, ``h200``).

    Raises ValueError listing the known GPUs for an unknown name.
    """
    table = _hardware_table()
    key = str(name).lower()
    if key not in table["gpus"]:
        raise ValueError(f"unknown GPU {name!r}; known GPUs: {', '.join(known_gpus())}")
    entry, sources = table["gpus"][key], table["sources"]
    values, prov = {}, {}
    for f_ in _GPU_NUMERIC:
        v, src = _field(entry, f_, key, sources)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"data/hardware.yaml: {key}.{f_} must be a non-negative number, got {v!r}")
        values[f_], prov[f_] = float(v), src
    if values["usable_hbm_gb"] > values["hbm_gb"] or values["usable_hbm_gb"] <= 0:
        raise ValueError(f"data/hardware.yaml: {key}: usable HBM must be in (0, hbm_gb]")
    scale_up, prov["scale_up"] = _field(entry, "scale_up", key, sources)
    return GPU(key=key, name=str(entry.get("name", key)), vendor=str(entry.get("vendor", "")),
               scale_up=str(scale_up), provenance=prov, **values)


def scale_out_link(name: str = "roce_b200_article") -> dict:
    """A scale-out link from ``data/hardware.yaml`` → {gbit_s, gbyte_s, source}."""
    table = _hardware_table()
    links = table.get("scale_out", {})
    if name not in links:
        raise ValueError(f"unknown scale-out link {name!r}; known: {', '.join(sorted(links))}")
    v, src = _field(links[name], "gbit_s", name, table["sources"])
    return {"gbit_s": float(v), "gbyte_s": float(v) / 8.0, "source": src}
