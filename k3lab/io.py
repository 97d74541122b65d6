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
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left as it was. The
file gets the usual permissions (0644 under umask 022), not mkstemp's 0600.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, _file_mode())  # mkstemp creates 0600; results are for others to read
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` newlines) atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")
    return Path(path)


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as sorted, indented JSON atomically."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


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
