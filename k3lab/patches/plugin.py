"""sglang general plugin: re-applies the k3lab patches in every sglang process.

sglang starts its scheduler and workers with the ``spawn`` start method
(``sglang/srt/entrypoints/engine.py``, 0.5.16), so a patch applied in the launching
process is gone in the scheduler, where the verifier runs. Every sglang process calls
``sglang.srt.plugins.load_plugins()`` early (``managers/scheduler.py``,
``run_scheduler_process``), which runs the entry points of the group
``sglang.srt.plugins``; k3lab registers :func:`sglang_plugin` there (pyproject.toml).

It does nothing unless ``K3LAB_PATCHES=1`` is in the environment (``python -m k3lab
serve`` sets it, and spawned children inherit it), so installing k3lab next to sglang
never changes sglang by surprise. ``K3LAB_PATCHES_FORCE=1`` passes ``force=True``.
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
