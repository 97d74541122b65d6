"""Atomic, deterministic writers for everything that lands in ``results/``.

Every writer writes to a temporary file in the destination folder and renames it over
the target, so an interrupted run never leaves a half-written file behind. CSVs are
written with a fixed float format and ``\\n`` line endings so that two runs on the same
inputs are byte-identical; PNGs are saved without timestamps in their metadata.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

FLOAT_FORMAT = "%.6g"


def _file_mode() -> int:
    """0666 minus the process umask (0644 under the usual 022), as open() would give."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, tmp_dir: str | os.PathLike | None = None,
                mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (or in ``tmp_dir``, a folder on the same file
    system); rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left as it was. The
    file gets the usual permissions (0644 under umask 022), not mkstemp's 0600, or ``mode`` (a
    user's file rewritten in place keeps its own, :func:`k3lab.report.main`). A write into
    a results folder that a run does not stage (its journal, a failed notebook, a rebuilt
    report) passes the run's staging folder as ``tmp_dir``: a kill mid-write then leaves its
    temporary inside a folder k3lab marked as its own, never a dot-file beside a user's files
    (:mod:`k3lab.transaction` removes only what it can show is its own).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=tmp_dir or path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, _file_mode() if mode is None else mode)  # mkstemp creates 0600; results are for others to read
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def write_text(path: str | os.PathLike, text: str, tmp_dir: str | os.PathLike | None = None,
               mode: int | None = None) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` newlines) atomically (:func:`atomic_path`); returns the path."""
    with atomic_path(path, tmp_dir, mode) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")
    return Path(path)


def json_text(obj: Any, indent: int | None = 2, sort_keys: bool = True) -> str:
    """``obj`` as standard JSON: ValueError (one line) for a NaN or an infinity anywhere in it,
    which Python's ``json`` would write as the non-standard ``NaN`` / ``Infinity`` that other
    readers refuse. Every JSON k3lab writes or prints goes through here."""
    try:
        return json.dumps(obj, indent=indent, sort_keys=sort_keys, default=str, allow_nan=False)
    except ValueError:
        raise ValueError("refusing to write JSON holding a NaN or an infinity (not a number any "
                         "reader accepts); this is a bug in what computed it") from None


def write_json(path: str | os.PathLike, obj: Any, tmp_dir: str | os.PathLike | None = None) -> Path:
    """Write ``obj`` as sorted, indented JSON (:func:`json_text`) atomically."""
    return write_text(path, json_text(obj) + "\n", tmp_dir)


def write_csv(df, path: str | os.PathLike, float_format: str = FLOAT_FORMAT) -> Path:
    """Write a pandas DataFrame to CSV atomically and deterministically (no index)."""
    text = df.to_csv(index=False, float_format=float_format, lineterminator="\n")
    return write_text(path, text)


def save_figure(fig, path: str | os.PathLike, dpi: int = 110) -> Path:
    """Save a matplotlib figure as PNG atomically, with no volatile metadata."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight",
                    metadata={"Software": None})
    return Path(path)
