"""Figures, one module per finding; each function returns a matplotlib Figure.

One palette for every figure: a GPU keeps its hue (:data:`GPU_COLORS`) and each deployment
its own fixed shade of it (:data:`DEPLOYMENT_COLORS`, :func:`deployment_color`), so
``8×B300 TP8+DCP8`` is the same green in the throughput, perf/$, latency and power figures.
"""

from __future__ import annotations

import re

#: one hue per GPU (AMD reds and orange, NVIDIA greens, blues and purple)
GPU_COLORS = {"mi355x": "#c62828", "mi350x": "#ef6c00", "b300": "#2e7d32", "b200": "#1565c0", "gb200": "#6a1b9a"}
#: fixed colours of the deployments the study draws (k3lab's label notation,
#: :attr:`k3lab.specs.Deployment.label`); the article's three rows take their GPU's hue
DEPLOYMENT_COLORS = {
    "8×MI355X TP8": GPU_COLORS["mi355x"],
    "8×MI350X TP8": GPU_COLORS["mi350x"],
    "8×B300 TP8+DCP8": GPU_COLORS["b300"],
    "8×B300 TP8": "#9ccc65",
    "16×B200 TP16": GPU_COLORS["b200"],
    "16×B200 TP8×PP2": "#4fc3f7",
    "8×B200 TP8": "#5c6bc0",
    "16×GB200 TP16": GPU_COLORS["gb200"],
}
_GPU_IN_LABEL = re.compile(r"×\s*([A-Za-z]+\d+[A-Za-z]*)")


def deployment_color(label: str) -> str:
    """The colour of a deployment ``label`` (``"8×MI355X TP8"``): its fixed colour, else its
    GPU's hue (the GPU read from the label), else grey."""
    if label in DEPLOYMENT_COLORS:
        return DEPLOYMENT_COLORS[label]
    m = _GPU_IN_LABEL.search(label)
    return GPU_COLORS.get(m.group(1).lower(), "#757575") if m else "#757575"


def plain_log_ticks(axis) -> None:
    """Plain tick labels on a log axis (``0.1``, ``2``, ``20``, ``1,000``; never ``2×10¹``): a
    label at 1, 2 and 5 of each decade, none on the other minor ticks."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def label(v, _):
        return f"{v:,.0f}" if v >= 1 else f"{v:.6f}".rstrip("0").rstrip(".")

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())


def concurrency_axis(ax, concurrencies) -> None:
    """A log2 concurrency axis labelled 1, 2, 4, … (never 2^n) over the span of ``concurrencies``."""
    cs = sorted(concurrencies)
    ax.set_xscale("log", base=2)
    ticks = [c for c in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if cs and cs[0] <= c < cs[-1] * 2]
    ax.set_xticks(ticks, [str(c) for c in ticks])
    ax.minorticks_off()
