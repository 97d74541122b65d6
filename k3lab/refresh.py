"""Re-execute notebooks in place with their default parameters (``make notebooks``).

This is how the committed outputs that nbval checks are produced: a clean top-to-bottom
run with no parameters injected, no per-cell timing metadata, and ``K3LAB_RESULTS``
pointed at a scratch folder so a refresh never touches ``results/``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from . import io
from .pipeline import KERNEL_NAME


def refresh(path: Path, kernel_name: str = KERNEL_NAME, timeout: int = 600) -> None:
    """Execute one notebook in place; its results go wherever ``K3LAB_RESULTS`` points."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "k3lab (.venv)", "language": "python"}
    nb.metadata.pop("papermill", None)
    NotebookClient(nb, kernel_name=kernel_name, timeout=timeout, record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    io.write_text(path, nbformat.writes(nb) + "\n")


def refresh_all(paths: list[Path], kernel_name: str = KERNEL_NAME) -> None:
    """Refresh notebooks in order, sharing one scratch results folder.

    The folder is shared so that ``05_claims_ledger`` sees the claims that 01–04 just
    recorded, exactly as in ``make reproduce`` and in the nbval run of ``make test``.
    """
    with tempfile.TemporaryDirectory(prefix="k3lab-refresh-") as scratch:
        old = os.environ.get("K3LAB_RESULTS")
        os.environ["K3LAB_RESULTS"] = scratch
        try:
            for p in paths:
                print(f"[k3lab] refreshing {p}", flush=True)
                refresh(p.resolve(), kernel_name=kernel_name)
        finally:
            if old is None:
                os.environ.pop("K3LAB_RESULTS", None)
            else:
                os.environ["K3LAB_RESULTS"] = old


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print("usage: python -m k3lab.refresh NOTEBOOK.ipynb ...", file=sys.stderr)
        return 2
    refresh_all(sorted(paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
