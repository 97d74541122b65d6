"""Where aiconfigurator's bundled Kimi K3 config differs from the published one in ``data/model/``."""

from __future__ import annotations

import importlib.resources
import json

from .. import data


def aic_model_config() -> dict:
    """aiconfigurator's bundled K3 ``config.json`` (with its quantization config)."""
    p = importlib.resources.files("aiconfigurator_core") / "model_configs" / "moonshotai--Kimi-K3_config.json"
    return json.loads(p.read_text(encoding="utf-8"))


def config_differences(published: dict | None = None) -> list[tuple[str, object, object]]:
    """``(field, aiconfigurator value, published value)`` for every ``text_config`` field
    whose values differ, among the fields the published config carries (``published``:
    a config dict; None: ``data/model/kimi_k3_config.json``). Fields only aiconfigurator's
    copy carries (generation defaults, token ids) are left out; ``quantization_config``
    is compared whole."""
    if published is None:
        published = data.load("kimi_k3_config")
    a = aic_model_config().get("text_config", {})
    p = published.get("text_config", published)
    return [(k, a.get(k, "<absent>"), v) for k, v in sorted(p.items()) if a.get(k, "<absent>") != v]
