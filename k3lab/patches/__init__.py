"""Patches a user applies to a real, installed sglang (ROCm top-k renorm, AITER head pad).

``apply()`` runs every registered patch against the installed sglang and returns a list of
what it patched (``"module.attribute"`` strings); ``revert()`` restores the original
bindings. Both are idempotent. A patch refuses an sglang version it does not know with
:class:`UnsupportedSglangVersion` unless ``force=True``.

A patch module defines one object with this shape (see :class:`Patch`) and is listed in
:data:`_PATCH_MODULES`; modules are imported lazily so ``import k3lab.patches`` does not
import sglang.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Protocol

_PATCH_MODULES = (
    "k3lab.patches.topk_renorm",
    "k3lab.patches.aiter_head_pad",
)


class UnsupportedSglangVersion(RuntimeError):
    """The installed sglang is not one a patch was written and tested against."""


class Patch(Protocol):
    name: str
    known_versions: frozenset[str]

    def apply(self, version: str, force: bool = False) -> list[str]: ...

    def revert(self) -> list[str]: ...


def sglang_version() -> str:
    """The installed sglang's version; RuntimeError if sglang is not installed."""
    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError as e:
        raise RuntimeError("sglang is not installed in this environment "
                           "(the compatibility environment is `make sglang-env`)") from e


def check_version(patch: "Patch", version: str, force: bool) -> None:
    """Raise UnsupportedSglangVersion for a version the patch does not know (unless forced)."""
    if version not in patch.known_versions and not force:
        raise UnsupportedSglangVersion(
            f"k3lab patch {patch.name!r} does not know sglang {version}; it was written for "
            f"{', '.join(sorted(patch.known_versions))}. Read what it replaces before using "
            f"force=True.")


def _patches() -> list["Patch"]:
    return [importlib.import_module(m).PATCH for m in _PATCH_MODULES]


def apply(force: bool = False) -> list[str]:
    """Apply every patch to the installed sglang → list of what was patched."""
    version = sglang_version()
    done: list[str] = []
    for p in _patches():
        done += p.apply(version, force=force)
    return done


def revert() -> list[str]:
    """Undo :func:`apply` → list of what was restored."""
    restored: list[str] = []
    for p in reversed(_patches()):
        restored += p.revert()
    return restored
