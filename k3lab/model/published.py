"""A model config against the figures the model is published with: a plausible typo in
``data/model/*_config.json`` is refused with the file and the field.

- total and active parameters (:func:`k3lab.model.inventory.count_params`) and
  ``max_position_embeddings`` against ``data/model/published.yaml`` (each within its
  stated relative tolerance);
- for Kimi K3, the MLA KV cache per token (``kv_lora_rank``, ``qk_rope_head_dim`` over the
  MLA layers) against the public start-up figures of ``data/public_startup_logs.yaml``
  (sglang runs of K3), within :data:`KV_TOLERANCE`.
"""

from __future__ import annotations

from .. import data
from .config import ModelConfig
from .capacity import kv_bytes_per_token
from .inventory import count_params

#: the model data/public_startup_logs.yaml measures (its header: sglang runs of Kimi K3 only)
STARTUP_LOGS_MODEL = "kimi-k3"
#: public per-token KV figures are rounded and approximate ("about 27 KB", "26KB"): ±10%
KV_TOLERANCE = 0.10
KiB = 1024


def _off(got: float, fig) -> bool:
    return abs(got / fig.value - 1) > fig.tolerance


def check(cfg: ModelConfig, where: str) -> None:
    """ValueError naming ``where`` (the config's file) and the field, for a config that
    disagrees with what its model is published with."""
    pub = data.load("published_models").models.get(cfg.name)
    if pub is None:
        raise ValueError(f"{where}: model {cfg.name!r} has no published figures in data/model/published.yaml")
    figs = f"data/model/published.yaml models.{cfg.name}"
    if _off(cfg.max_position_embeddings, pub.context_tokens):
        raise ValueError(f"{where}: max_position_embeddings {cfg.max_position_embeddings:,} is not the "
                         f"{pub.context_tokens.value:,.0f}-token context {cfg.name} is published with "
                         f"(±{pub.context_tokens.tolerance:.0%}, {figs}.context_tokens)")
    if cfg.name == STARTUP_LOGS_MODEL:
        got = kv_bytes_per_token(cfg, "bf16")
        for log in data.load("startup_logs").logs:
            if log.quantity == "kv_bytes_per_token" and abs(got / (log.value * KiB) - 1) > KV_TOLERANCE:
                raise ValueError(
                    f"{where}: kv_lora_rank {cfg.kv_lora_rank} + qk_rope_head_dim {cfg.qk_rope_head_dim} over "
                    f"{cfg.num_mla_layers} MLA layers give {got / KiB:,.1f} KiB of bf16 KV per token; public sglang "
                    f"runs of {cfg.name} report ~{log.value:g} KiB (data/public_startup_logs.yaml {log.id})")
    pc = count_params(cfg)
    for name, got, fig in (("total", pc.total_without_mtp, pub.total_params),
                           ("active", pc.active, pub.active_params)):
        if _off(got, fig):
            raise ValueError(f"{where}: its sizes (hidden_size, kv_lora_rank, num_experts, ...) give {got / 1e9:,.2f}B "
                             f"{name} parameters; {cfg.name} is published with {fig.value / 1e9:,.0f}B "
                             f"(±{fig.tolerance:.0%}, {figs}.{name}_params)")
