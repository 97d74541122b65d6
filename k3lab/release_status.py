"""Which sglang release has which bug: the committed release matrix, read as data.

``data/measured/cpu-2core/sglang_release_matrix.json`` is measured by the probe package
(:mod:`k3lab.probes.release_matrix`, ``benchmarks/sglang_release_matrix.py``) and read here,
through the loader (:mod:`k3lab.data`, schema :class:`k3lab.schemas.transcripts.ReleaseMatrix`).
The patches (:mod:`k3lab.patches`) and the notebooks ask this module whether a release is
broken; neither imports the probes. Standard library and the loader only.
"""

from __future__ import annotations

from pathlib import Path

from . import data
from .versions import version_key  # noqa: F401  (the matrix's order)

NAME = "sglang_release_matrix"
#: the file name of the committed matrix (under ``data/measured/cpu-2core/``)
MATRIX = Path(data.SCHEMAS[NAME][0]).name


def load_matrix(path: Path | None = None) -> dict:
    """The committed matrix (checked, cached), or the one at ``path`` (checked the same way)."""
    return data.load(NAME) if path is None else data.read(NAME, path)


def lookup(version: str, doc: dict | None = None) -> dict:
    """The row for ``version``; ``{"sglang": version, "status": "unknown"}`` if absent."""
    doc = load_matrix() if doc is None else doc
    for row in doc.get("rows", []):
        if row.get("sglang") == version:
            return row
    return {"sglang": version, "status": "unknown",
            "reason": "release not in the matrix (not measured); nothing is inferred for it"}


def hip_verify_crashes(row: dict) -> bool | str:
    """Does any request mix crash the verify path on HIP? ``"unknown"`` for an unknown row."""
    if row.get("status") == "unknown":
        return "unknown"
    return any(r["outcome"] != "ok" for r in row["verify"]["hip"].values())


def aiter_refuses_12_heads(row: dict) -> bool | str:
    """Does the AITER backend refuse 12 heads per rank at start-up? ``"unknown"`` if unknown."""
    if row.get("status") == "unknown":
        return "unknown"
    return not row["aiter"]["accepts_12"]
