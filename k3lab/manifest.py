"""A results folder as a run left it: what a run owns, its ``manifest.json``, and whether
the folder is still exactly what the run wrote (:func:`verify`).

Shared by the pipeline (which writes the manifest last, see :mod:`k3lab.pipeline`) and the
report (which shows a folder's drift); neither imports the other for it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .paths import results_root

MANIFEST = "manifest.json"
FAILED = "failed"


class PipelineError(ValueError):
    """A profile, notebook or run that cannot go ahead as asked (one line for the user)."""


def _managed(target: Path) -> list[Path]:
    """Entries of a results folder that a run owns (never README.md, runs/, failed/, dot-files)."""
    if not target.exists():
        return []
    return sorted(p for p in target.iterdir()
                  if not p.name.startswith(".") and p.name not in ("README.md", "runs", FAILED))


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(target: Path | None = None) -> dict:
    """The manifest of the complete run in ``target`` (default ``results/``)."""
    path = (target or results_root()) / MANIFEST
    if not path.exists():
        raise PipelineError(f"{path} is missing: no complete run there (make reproduce)")
    return json.loads(path.read_text(encoding="utf-8"))


#: rebuilt on demand (``python -m k3lab.report``) from the results it shows: not checked
REBUILDABLE = ("report.html",)


def verify(target: Path | None = None) -> list[str]:
    """What in ``target`` (default ``results/``) differs from its manifest → one line each.

    A listed file that is missing or whose sha256 changed, or a file in a run-owned entry the
    run did not write (a notebook run by hand in JupyterLab writes straight into
    ``results/<nb>/``; a stray folder) — everything :func:`_managed` covers except
    ``manifest.json`` itself and :data:`REBUILDABLE`. Empty: the folder is exactly the
    run's. PipelineError when there is no manifest (no complete run there)."""
    target = Path(target or results_root())
    man = read_manifest(target)
    listed = man.get("files", {})
    out = []
    for rel, digest in sorted(listed.items()):
        p = target / rel
        if rel in REBUILDABLE:
            continue
        if not p.is_file():
            out.append(f"{rel}: missing (listed by run {man.get('run_id')})")
        elif sha256(p) != digest:
            out.append(f"{rel}: changed since run {man.get('run_id')} wrote it")
    out += [f"{rel}: not written by run {man.get('run_id')}" for rel in unlisted(target, listed)]
    return out


def listed_files(target: Path) -> list[str]:
    """The files the manifest in ``target`` lists (paths relative to it; none that could
    leave it); empty without a readable manifest."""
    try:
        files = json.loads((Path(target) / MANIFEST).read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(files, dict):
        return []
    return sorted(rel for rel in files if isinstance(rel, str) and rel and not rel.startswith("/")
                  and all(part not in ("", ".", "..") for part in rel.split("/")))


def unlisted(target: Path, listed=None) -> list[str]:
    """Files in the run-owned entries of ``target`` (:func:`_managed`) that its manifest does
    not list (all of them without a manifest), except the manifest itself and
    :data:`REBUILDABLE`: what k3lab did not write, or cannot show it did."""
    target = Path(target)
    listed = set(listed_files(target) if listed is None else listed)
    out = []
    for entry in _managed(target):
        files = [entry] if not entry.is_dir() or entry.is_symlink() else sorted(
            q for q in entry.rglob("*") if not q.is_dir() or q.is_symlink())
        out += [rel for q in files if (rel := str(q.relative_to(target))) not in listed
                and rel not in (MANIFEST, *REBUILDABLE)]
    return out
