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
``K3LAB_PATCHES_FORCE=1`` passes ``force=True``. Each variable takes ``1`` (on) or ``0`` / empty /
unset (off), nothing else: ``yes``, ``true`` or ``on`` are not read as on (nor as off) — any other
value (of ``K3LAB_PATCHES_FORCE`` only once ``K3LAB_PATCHES=1``) leaves the process unpatched and says so in the one UNPATCHED line below, naming the variable
and the two values, because an operator who typed ``yes`` meant something and must not be left
to guess from the server's speed which. sglang logs a plugin's exception and goes on
(``load_plugins`` in ``sglang/srt/plugins/__init__.py``, 0.5.16: ``logger.exception`` and the
next plugin): a refused patch leaves that process — and the server — unpatched, with
``Failed to execute general plugin: k3lab_patches`` and a traceback somewhere in its log. So the
plugin first prints one line of its own to stderr, ``k3lab_patches: sglang is running UNPATCHED
…: <why>``, then raises for sglang to log; ``serve`` refuses up front instead.
"""

from __future__ import annotations

import os
import sys

from .oneline import shown_value

ENV_ENABLE = "K3LAB_PATCHES"
ENV_FORCE = "K3LAB_PATCHES_FORCE"


ACCEPTED = ("1", "0", "")  # on, off, off (unset is off too)


def _unpatched(why: str) -> None:
    print(f"k3lab_patches: sglang is running UNPATCHED (pid {os.getpid()}, {ENV_ENABLE}="
          f"{os.environ.get(ENV_ENABLE, '')}): {why}", file=sys.stderr, flush=True)


def sglang_plugin() -> list[str]:
    """Apply every k3lab patch if ``K3LAB_PATCHES=1`` → what was newly patched (nothing, with
    the UNPATCHED line, for a value of either variable other than 1 / 0 / empty)."""
    for name in (ENV_ENABLE, ENV_FORCE):  # the second only matters once the first is 1
        value = os.environ.get(name, "")
        if value not in ACCEPTED:
            _unpatched(f"{name}={shown_value(value)} is not a value k3lab_patches reads: set {name}=1 to "
                       f"{'patch' if name == ENV_ENABLE else 'force'}, 0 or unset for not")
            return []
        if value != "1" and name == ENV_ENABLE:
            return []
    from . import UpstreamFixed, apply  # the package imports this module: resolved at call time

    force = os.environ.get(ENV_FORCE) == "1"
    try:
        return apply(force=force)
    except Exception as e:
        why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if isinstance(e, UpstreamFixed):
            print(f"k3lab_patches: not patched, none needed (pid {os.getpid()}): {why}", file=sys.stderr, flush=True)
        else:
            _unpatched(why + ("" if force else f"; {ENV_FORCE}=1 forces an untested release or build"))
        raise
