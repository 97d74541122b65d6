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
    edited = set(changed(target, man))
    out = []
    for rel in sorted(listed):
        if rel in REBUILDABLE:
            continue
        if not (target / rel).is_file():
            out.append(f"{rel}: missing (listed by run {man.get('run_id')})")
        elif rel in edited:
            out.append(f"{rel}: changed since run {man.get('run_id')} wrote it")
    out += [f"{rel}: not written by run {man.get('run_id')}" for rel in unlisted(target, listed)]
    return out


def changed(target: Path, man: dict | None = None) -> list[str]:
    """Files of ``target`` its manifest lists that are there but no longer what the run wrote
    (sha256 differs; :data:`REBUILDABLE` aside): a hand edit, or a notebook run by hand since.
    Empty without a manifest."""
    target = Path(target)
    if man is None:
        if not (target / MANIFEST).exists():
            return []
        man = read_manifest(target)
    listed = man.get("files", {})
    return [rel for rel, digest in sorted(listed.items()) if rel not in REBUILDABLE
            and (target / rel).is_file() and sha256(target / rel) != digest]


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
    """Files and empty folders (``name/``) in the run-owned entries of ``target``
    (:func:`_managed`) that its manifest does not list (all of them without a manifest), except
    the manifest itself and :data:`REBUILDABLE` (unless a symlink or not a plain file stands in
    their place): what k3lab did not write, or cannot show it did. A run never leaves an empty
    folder (:func:`k3lab.pipeline.prune_empty_folders`), so one is a user's."""
    target = Path(target)
    listed = set(listed_files(target) if listed is None else listed)
    out = []
    for entry in _managed(target):
        for q in _leaves(entry):
            rel = str(q.relative_to(target)) + ("/" if q.is_dir() and not q.is_symlink() else "")
            if rel not in listed and (rel not in (MANIFEST, *REBUILDABLE) or q.is_symlink() or not q.is_file()):
                out.append(rel)
    return out


def _empty_folder(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink() and not any(p.iterdir())


def _leaves(entry: Path) -> list[Path]:
    """``entry`` itself (a file, a link, an empty folder), or what lies under it that is not a
    folder with something in it."""
    if not entry.is_dir() or entry.is_symlink() or _empty_folder(entry):
        return [entry]
    return sorted(q for q in entry.rglob("*") if not q.is_dir() or q.is_symlink() or _empty_folder(q))
