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
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "k3lab (.venv)", "language": "python"}
    nb.metadata.pop("papermill", None)
    with tempfile.TemporaryDirectory(prefix="k3lab-refresh-") as scratch:
        old = os.environ.get("K3LAB_RESULTS")
        os.environ["K3LAB_RESULTS"] = scratch
        try:
            NotebookClient(nb, kernel_name=kernel_name, timeout=timeout, record_timing=False,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        finally:
            if old is None:
                os.environ.pop("K3LAB_RESULTS", None)
            else:
                os.environ["K3LAB_RESULTS"] = old
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    io.write_text(path, nbformat.writes(nb) + "\n")


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print("usage: python -m k3lab.refresh NOTEBOOK.ipynb ...", file=sys.stderr)
        return 2
    for p in paths:
        print(f"[k3lab] refreshing {p}", flush=True)
        refresh(p.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
