"""sglang general plugin: re-applies the k3lab patches in every sglang process.

sglang starts its scheduler and workers with the ``spawn`` start method
(``sglang/srt/entrypoints/engine.py``, 0.5.16), so a patch applied in the launching
process is gone in the scheduler, where the verifier runs. Every sglang process calls
``sglang.srt.plugins.load_plugins()`` early (``managers/scheduler.py``,
``run_scheduler_process``), which runs the entry points of the group
``sglang.srt.plugins``; k3lab-patches registers :func:`sglang_plugin` there under the name
``k3lab`` (``patches/pyproject.toml``; a ``SGLANG_PLUGINS`` allow-list must name it).

It does nothing unless ``K3LAB_PATCHES=1`` is in the environment (``python -m k3lab_patches
serve`` and the study's ``python -m k3lab serve`` set it, and spawned children inherit it), so
installing k3lab-patches next to sglang never changes sglang by surprise.
``K3LAB_PATCHES_FORCE=1`` passes ``force=True``. sglang logs a plugin's exception and goes on
(``load_plugins``, 0.5.16): a refused patch leaves that process unpatched, with
``Failed to execute general plugin: k3lab`` in its log — ``serve`` refuses up front instead.
"""

from __future__ import annotations

import os

ENV_ENABLE = "K3LAB_PATCHES"
ENV_FORCE = "K3LAB_PATCHES_FORCE"


def sglang_plugin() -> list[str]:
    """Apply every k3lab patch if ``K3LAB_PATCHES=1`` → what was newly patched."""
    if os.environ.get(ENV_ENABLE) != "1":
        return []
    from . import apply  # the package imports this module: resolved at call time

    return apply(force=os.environ.get(ENV_FORCE) == "1")
