"""Patches a user applies to a real, installed sglang (ROCm top-k renorm, AITER head pad).

Which releases need which patch is not a hand-kept list: it is what the release matrix
measured (``data/measured/cpu-2core/sglang_release_matrix.json``, built by
:mod:`k3lab.probes.release_matrix` from every sglang release on PyPI; read through
:mod:`k3lab.release_status`, never the probes). For the installed release, :func:`status`
says per patch:

- ``needed``: the matrix shows the bug, and the patch was written and tested for this
  release (``known_versions``);
- ``needed, untested``: the matrix shows the bug, but the patch was not written for this
  release — it applies only with ``force=True``;
- ``fixed in X``: the matrix shows the release no longer has the bug (X = the first
  release without it); the patch refuses;
- ``unknown``: the matrix has never seen this release; nothing is inferred, the patch refuses.

:func:`apply` is all-or-nothing over the patches the release needs: either each of them is
applied, or — if one refuses or fails midway — every binding already changed is restored
and the error is raised. Patches for bugs the release already fixed are skipped; if none is
needed, :func:`apply` raises :class:`UpstreamFixed` naming the releases that fixed them.
:func:`revert` always restores what :func:`apply` replaced, patch by patch, even if one of
them fails (the errors are raised together after every patch was tried). Modules are
imported lazily so ``import k3lab.patches`` does not import sglang.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Protocol

from .. import release_status as rm

_PATCH_MODULES = (
    "k3lab.patches.topk_renorm",
    "k3lab.patches.aiter_head_pad",
)


class UnsupportedSglangVersion(RuntimeError):
    """The installed sglang is not one a patch can be applied to as asked."""


class UpstreamFixed(UnsupportedSglangVersion):
    """The installed sglang already fixes what the patch fixes."""


class Patch(Protocol):
    name: str
    known_versions: frozenset[str]
    fixed_by: str

    def broken(self, row: dict) -> bool | str: ...

    def apply(self, version: str, force: bool = False) -> list[str]: ...

    def revert(self) -> list[str]: ...


def sglang_version() -> str:
    """The installed sglang's version; RuntimeError if sglang is not installed."""
    try:
        return metadata.version("sglang")
    except metadata.PackageNotFoundError as e:
        raise RuntimeError("sglang is not installed in this environment "
                           "(the compatibility environment is `make sglang-env`)") from e


def status(patch: "Patch", version: str) -> str:
    """``needed`` / ``needed, untested`` / ``fixed in X`` / ``unknown`` (see the module doc)."""
    doc = rm.load_matrix()
    row = rm.lookup(version, doc)
    if row.get("status") == "unknown":
        return "unknown"
    if patch.broken(row):
        return "needed" if version in patch.known_versions else "needed, untested"
    later = [r["sglang"] for r in doc["rows"] if rm.version_key(r["sglang"]) <= rm.version_key(version)
             and not patch.broken(r)]
    return f"fixed in {later[0] if later else version}"


def check_version(patch: "Patch", version: str, force: bool) -> None:
    """Raise unless the matrix says ``version`` needs ``patch`` (``force`` for an untested one)."""
    s = status(patch, version)
    if s == "needed" or (s == "needed, untested" and force):
        return
    known = ", ".join(r["sglang"] for r in rm.load_matrix()["rows"])
    if s == "unknown":
        raise UnsupportedSglangVersion(
            f"k3lab patch {patch.name!r}: sglang {version} is not in the release matrix (measured: {known}); "
            f"rebuild it (benchmarks/sglang_release_matrix.py) before patching an unmeasured release")
    if s.startswith("fixed in"):
        raise UpstreamFixed(f"k3lab patch {patch.name!r} is not needed: sglang {version} has the fix "
                            f"(first in sglang {s.removeprefix('fixed in ')}, {patch.fixed_by})")
    raise UnsupportedSglangVersion(
        f"k3lab patch {patch.name!r}: sglang {version} still has the bug, but the patch was written for "
        f"{', '.join(sorted(patch.known_versions))}; read what it replaces, then use force=True")


def _patches() -> list["Patch"]:
    return [importlib.import_module(m).PATCH for m in _PATCH_MODULES]


def apply(force: bool = False) -> list[str]:
    """Apply every patch the installed sglang needs, all or nothing → list of what was patched."""
    version = sglang_version()
    todo, fixed = [], []
    for p in _patches():
        s = status(p, version)
        (fixed if s.startswith("fixed in") else todo).append(p)
    if not todo:
        raise UpstreamFixed(f"sglang {version} needs no k3lab patch: "
                            + "; ".join(f"{p.name} {status(p, version)} ({p.fixed_by})" for p in fixed))
    done: list[str] = []
    applied: list["Patch"] = []
    try:
        for p in todo:
            applied.append(p)
            done += p.apply(version, force=force)
    except BaseException:
        for p in reversed(applied):
            try:
                p.revert()
            except Exception:  # keep rolling back the others; the original error is what matters
                pass
        raise
    return done


def revert() -> list[str]:
    """Undo :func:`apply` → list of what was restored. Every patch is reverted even if one fails."""
    restored: list[str] = []
    errors: list[str] = []
    for p in reversed(_patches()):
        try:
            restored += p.revert()
        except Exception as e:
            errors.append(f"{p.name}: {type(e).__name__}: {e}")
    if errors:
        raise RuntimeError("k3lab.patches.revert: " + "; ".join(errors) + f" (restored: {restored})")
    return restored
