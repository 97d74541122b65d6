"""k3lab-patches: what an operator applies to a running sglang (ROCm top-k renorm, AITER head pad).

The ``k3lab-patches`` distribution (``patches/`` of the k3lab study) depends on torch only and
installs with ``pip install --no-deps`` into an sglang environment of any Python from 3.10
(see docs/operators.md of the study). The study re-exports :func:`apply` and :func:`revert`
as ``k3lab.patches``.

Which releases need which patch is not a hand-kept list: it is what the study's release
matrix measured, shipped as :mod:`k3lab_patches.releases` (``release_verdicts.json``). For
the installed release, :func:`status` says per patch:

- ``needed``: the matrix shows the bug, and the patch was written and tested for this
  release (``known_versions``);
- ``needed, untested``: the matrix shows the bug, but the patch was not written for this
  release — it applies only with ``force=True``. A *build* (``0.5.17.dev12+g1a2b3c4``, what
  sglang installed from a git checkout reports: a branch image) is judged by the newest
  measured release at or below it, and is never a release a patch was tested on;
- ``fixed in X``: the matrix shows the release no longer has the bug (X = the first
  release without it); the patch refuses;
- ``unknown``: the matrix has never seen this version (a release it did not measure, or a
  build below every measured release, such as the late-July K3 branch images that report
  ``0.5.15.post1.dev20260723+g…``); nothing is inferred from the version: the patch refuses
  unless forced, and forced it applies only if the code it replaces is there as it expects
  (each patch's own check, :mod:`k3lab_patches.preconditions`), else it refuses naming what is
  missing.

:func:`apply` is all-or-nothing over the patches the release needs: either each of them is
applied, or — if one refuses or fails midway — every binding already changed is restored
and the error is raised. Patches for bugs the release already fixed are skipped; if none is
needed, :func:`apply` raises :class:`UpstreamFixed` naming the releases that fixed them.
:func:`revert` always restores what :func:`apply` replaced, patch by patch, even if one of
them fails (the errors are raised together after every patch was tried). Modules are
imported lazily so ``import k3lab_patches`` imports neither sglang nor torch.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Protocol

from . import releases as rm

_PATCH_MODULES = (
    "k3lab_patches.topk_renorm",
    "k3lab_patches.aiter_head_pad",
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
        raise RuntimeError("sglang is not installed in this environment (k3lab-patches "
                           "patches a running sglang; the study's is `make sglang-env`)") from e


def status(patch: "Patch", version: str) -> str:
    """``needed`` / ``needed, untested`` / ``fixed in X`` / ``unknown`` (see the module doc)."""
    doc = rm.load()
    row = rm.lookup(version, doc)
    if row.get("status") == "unknown":
        return "unknown"
    if patch.broken(row):
        return "needed" if version in patch.known_versions else "needed, untested"
    later = [r["sglang"] for r in doc["rows"] if rm.version_key(r["sglang"]) <= rm.version_key(row["sglang"])
             and not patch.broken(r)]
    return f"fixed in {later[0] if later else row['sglang']}"


def upstream_fix(patch: "Patch", version: str) -> str | None:
    """The first measured release after ``version`` without the bug ``patch`` fixes (the way out
    without the patch), or None when the matrix shows none. For an unknown version (not a
    version at all → None) it is still a measured release, so upgrading to it is known to help."""
    doc = rm.load()
    row = rm.lookup(version, doc)
    try:
        key = rm.version_key(version if row.get("status") == "unknown" else row["sglang"])
    except ValueError:
        return None
    later = [r["sglang"] for r in doc["rows"] if rm.version_key(r["sglang"]) > key and not patch.broken(r)]
    return later[0] if later else None


def newest_measured_fixed(patch: "Patch", version: str) -> str | None:
    """The newest measured release when ``version`` is a release after it (not a build judged by a
    measured base: :func:`status` reads those) and that release has the fix ``patch`` carries: the
    bug is most likely gone there too, though nothing was measured. None otherwise (an unparsable
    version included)."""
    doc = rm.load()
    newest = doc["rows"][-1]
    try:
        after = rm.version_key(version) > rm.version_key(newest["sglang"])
    except ValueError:
        return None
    return newest["sglang"] if after and not patch.broken(newest) else None


def release_facts(version: str) -> list[str]:
    """What an operator of Kimi K3 needs to know of ``version`` beyond the patches, from the
    shipped matrix: whether it can run Kimi K3 (and, when not, the first release that can), and
    the attention backend it picks on HIP for Kimi K3's 12 heads per rank."""
    doc = rm.load()
    row = rm.lookup(version, doc)
    if row.get("status") == "unknown" and rm.is_build(version) and rm.built_on(version, doc) is None:
        return [f"a build older than sglang {doc['rows'][0]['sglang']}, the oldest measured: the matrix says nothing "
                "of its Kimi K3 module or attention backend (a K3 branch image brings its own Kimi K3 module)"]
    if row.get("status") == "unknown" or "kimi_k3_module" not in row:
        return []
    first = next((r["sglang"] for r in doc["rows"] if r.get("kimi_k3_module")), None)
    if row.get("built_on"):
        out = [f"a build on sglang {row['sglang']}" + (" (which ships Kimi K3's model module)" if row["kimi_k3_module"]
                                                       else f" (no Kimi K3 module before sglang {first}: a K3 branch "
                                                            "image adds its own)")]
    elif row["kimi_k3_module"]:
        out = [f"sglang {row['sglang']} ships Kimi K3's model module"]
    else:
        out = [f"sglang {row['sglang']} has no Kimi K3 model module" + (f" (first in sglang {first})" if first else "")
               + ": Kimi K3 runs on a later release or a K3 branch build"]
    backend = row.get("hip_default_attention_k3_tp8")
    if backend and backend != "aiter":
        out.append(f"on ROCm it picks the {backend} attention backend for Kimi K3 at TP8 (12 heads per rank); "
                   "AITER's fast MLA prefill needs --attention-backend aiter")
    return out


def force_note() -> str:
    """When ``--force`` is needed, from the shipped matrix: the releases each patch was written and
    tested for, whether those can run Kimi K3, the Kimi K3 releases that still need a patch (only
    with --force), and the first release that needs none."""
    doc = rm.load()
    ps = _patches()
    tested = sorted({v for p in ps for v in p.known_versions}, key=rm.version_key)
    k3 = {r["sglang"] for r in doc["rows"] if r.get("kimi_k3_module")}
    forced = [r["sglang"] for r in doc["rows"] if r["sglang"] in k3 and any(p.broken(r) for p in ps)]
    free = next((r["sglang"] for r in doc["rows"] if not any(p.broken(r) for p in ps)), None)
    pad = next((getattr(p, "UPSTREAM", {}).get("prefill", (None,))[0] for p in ps if hasattr(p, "UPSTREAM")), None)
    can = ("which cannot run Kimi K3" if len(tested) == 1 else "none of which runs Kimi K3") if not k3 & set(tested) \
        else "some of which run Kimi K3"
    untested = (f"on a release that runs Kimi K3 and still needs one ({', '.join(forced)}) status says 'needed, "
                "untested', and ") if forced else "status says "
    return (f"the patches were written and tested for sglang {', '.join(tested)} ({can}): {untested}"
            # (newcomer 41: a branch build on a measured release, e.g. 0.5.17.dev12+g..., printed 'needed, untested'
            # above a note saying a branch image is 'unknown')
            f"on a K3 branch image 'needed, untested' where it is built on a measured release (judged by that "
            f"release's row) and 'unknown' where it is older than sglang {doc['rows'][0]['sglang']}, the oldest "
            "measured; either applies only with --force (serve --force, K3LAB_PATCHES_FORCE=1), and then only if "
            "the code it replaces is there as it expects" + (f"; from sglang {free} none is needed" if free else "")
            # (newcomer 42: "none is needed from 0.5.19" beside the README's padded fp8 prefill from 0.5.22)
            + (f" (from {pad} sglang pads 12 heads to 16 for AITER's fast fp8 prefill itself)" if free and pad else ""))


def check_version(patch: "Patch", version: str, force: bool) -> None:
    """Raise unless the matrix says ``version`` needs ``patch``, or ``force`` is given for one
    the patch was not written for: ``needed, untested`` or ``unknown`` (then the patch's own
    look at the code decides; a release that has the fix is refused, forced or not)."""
    s = status(patch, version)
    if s == "needed" or (s in ("needed, untested", "unknown") and force):
        return
    how = "force=True (serve --force, K3LAB_PATCHES_FORCE=1)"
    if s == "unknown":
        below = rm.is_build(version) and rm.built_on(version) is None
        what = (f"a build older than every measured release ({rm.measured()[0]}), as the K3 branch images are"
                if below else "not a release the matrix measured")
        raise UnsupportedSglangVersion(
            f"k3lab patch {patch.name!r}: sglang {version} is {what}, so nothing is known of its bugs; if it has "
            f"the one this patch fixes, apply with {how}: the patch then applies only if the code it replaces is "
            f"there as it expects")
    if s.startswith("fixed in"):
        raise UpstreamFixed(f"k3lab patch {patch.name!r} is not needed: sglang {version} has the fix "
                            f"(first in sglang {s.removeprefix('fixed in ')}, {patch.fixed_by})")
    base = rm.lookup(version).get("built_on")
    judged = f" (a build, judged by sglang {base}, the newest measured release at or below it)" if base else ""
    raise UnsupportedSglangVersion(
        f"k3lab patch {patch.name!r}: sglang {version}{judged} still has the bug, but the patch was written "
        f"for {', '.join(sorted(patch.known_versions))}; read what it replaces, then use {how}")


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
