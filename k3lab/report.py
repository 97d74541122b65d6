"""Render ``results/report.html`` from the executed notebooks and the claims ledger."""

from __future__ import annotations

import sys
from pathlib import Path

from . import io
from .paths import results_root


def build(root: Path | None = None) -> Path:
    """Concatenate every executed ``results/NN_*/NN_*.ipynb`` into one HTML page."""
    import nbformat
    from nbconvert import HTMLExporter

    root = results_root() if root is None else Path(root)
    parts = []
    exporter = HTMLExporter(template_name="lab")
    for nb_path in sorted(root.glob("[0-9][0-9]_*/[0-9][0-9]_*.ipynb")):
        body, _ = exporter.from_notebook_node(nbformat.read(nb_path, as_version=4))
        parts.append(body)
    html = "\n".join(parts) if parts else "<p>No executed notebooks under results/.</p>"
    return io.write_text(root / "report.html", html)


def main(argv: list[str] | None = None) -> int:
    print(build())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
