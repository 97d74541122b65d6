"""The Kimi K3 config the probe builds from: ``data/model/kimi_k3_config.json``.

That file is the published ``config.json`` of moonshotai/Kimi-K3 (``text_config`` and
``vision_config``), including the checkpoint's compressed-tensors ``quantization_config``
(``config_groups``, ``ignore``), which sglang needs to pick its quant methods.
"""

from __future__ import annotations

from ... import data

#: Where the quantization config in ``data/model/kimi_k3_config.json`` comes from (the file
#: copies that config.json verbatim; see its ``_provenance``). Recorded in the transcript.
QUANT_CONFIG_SOURCE = ("PyPI aiconfigurator-core 0.12.0, aiconfigurator_core/model_configs/"
                       "moonshotai--Kimi-K3_config.json (text_config.quantization_config)")


def project_text_config() -> dict:
    """``text_config`` of ``data/model/kimi_k3_config.json`` (the whole file if it has none)."""
    raw = data.load("kimi_k3_config")
    return raw.get("text_config", raw)


def published_config(text_config: dict) -> dict:
    """A ``config.json`` for ``KimiK3ForConditionalGeneration`` from the project's text
    config, which carries the published quantization config (ValueError if it does not)."""
    tc = {k: v for k, v in text_config.items() if not k.startswith("_")}
    qc = tc.get("quantization_config")
    if not isinstance(qc, dict) or "config_groups" not in qc:
        raise ValueError("data/model/kimi_k3_config.json: text_config.quantization_config lacks the "
                         "published compressed-tensors config (config_groups), which the build needs")
    tc.setdefault("tie_word_embeddings", False)
    return {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
            "tie_word_embeddings": False, "text_config": tc}
