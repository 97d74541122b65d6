"""Figures of the article against the field: public Kimi K3 measurements, the serving model
validated on them, and the article's own points (finding 4, and the speed-ups of 2 and 3)."""

from __future__ import annotations

import math

KIND_MARKERS = {"output_tok_s": ("o", "output tok/s"), "tpot_ms": ("s", "TPOT"), "itl_ms": ("D", "median ITL"),
                "ttft_ms": ("^", "TTFT")}
GPU_COLORS = {"mi355x": "#c62828", "mi350x": "#ef9a9a", "b300": "#1565c0", "b200": "#64b5f6", "gb200": "#6a1b9a"}


def _concurrency_axis(ax, concurrencies) -> None:
    """A log2 concurrency axis labelled 1, 2, 4, … (never 2^n) over the span of ``concurrencies``."""
    cs = sorted(concurrencies)
    ax.set_xscale("log", base=2)
    ticks = [c for c in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if cs and cs[0] <= c < cs[-1] * 2]
    ax.set_xticks(ticks, [str(c) for c in ticks])
    ax.minorticks_off()


def validation_figure(validation_rows, observations, bands: dict, article=None):
    """Published ÷ the model's out-of-source prediction, against concurrency, one panel per GPU
    family: how far each public measurement sits from a model fitted without its source. The
    dashed lines are the family's band (90th percentile). ``article``: optional list of
    (family, label, claimed, low, high, concurrency): the article's figures ÷ the model at its
    workload, drawn as a star with the span of the model's readings."""
    import matplotlib.pyplot as plt

    fams = [f for f in bands if any(r.family == f for r in observations)]
    obs = {o.id: o for o in observations}
    fig, axes = plt.subplots(1, len(fams), figsize=(6.4 * len(fams), 4.8), sharey=True, squeeze=False)
    for ax, fam in zip(axes[0], fams):
        rows = [r for r in validation_rows.get(fam, [])]
        seen = set()
        for r in rows:
            o = obs[r.id]
            m, kind_label = KIND_MARKERS[r.kind]
            lab = f"{o.gpu.upper()} {kind_label}" + (" (DSpark)" if o.spec != "none" else "")
            col = GPU_COLORS.get(o.gpu, "0.4")
            ratio = math.exp(-r.log_error)  # published / predicted
            ax.scatter(o.concurrency * (1.06 if o.spec != "none" else 1.0), ratio, marker=m, s=38,
                       facecolor=col if o.spec == "none" else "white", edgecolor=col, linewidth=1.2,
                       label=None if lab in seen else lab, zorder=3)
            seen.add(lab)
        b = bands[fam]
        ax.axhline(1.0, color="k", lw=0.8)
        if b is not None:
            for y in (math.exp(b), math.exp(-b)):
                ax.axhline(y, color="k", lw=0.8, ls="--")
            ax.text(0.01, math.exp(b), f" band ±{math.expm1(b):.0%} (90th pct.)", va="bottom", fontsize=8,
                    transform=ax.get_yaxis_transform())
        for a in (article or []):
            if a[0] != fam:
                continue
            _, label, claimed, lo, hi, conc = a
            ax.errorbar([conc], [claimed / math.sqrt(lo * hi)], yerr=[[claimed / math.sqrt(lo * hi) - claimed / hi],
                        [claimed / lo - claimed / math.sqrt(lo * hi)]], fmt="*", ms=15, color="gold", mec="k",
                        ecolor="k", capsize=4, zorder=5, label=f"article: {label}")
        _concurrency_axis(ax, [obs[r.id].concurrency for r in rows] + [a[5] for a in (article or []) if a[0] == fam])
        ax.set_yscale("log")
        ax.set_yticks([0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0], ["0.25", "0.35", "0.5", "0.7", "1.0", "1.4", "2.0"])
        ax.minorticks_off()
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_title(f"{fam}: {len(rows)} public figures, each predicted without its own source", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right", ncol=2, framealpha=0.9)
    axes[0][0].set_ylabel("published ÷ model (1 = the model is right)")
    fig.suptitle("Where public Kimi K3 measurements sit against the serving model (filled: no DSpark; "
                 "open: DSpark)", fontsize=11)
    fig.tight_layout()
    return fig


def curves_figure(panels):
    """Output tok/s per GPU against concurrency, one panel per workload. ``panels``: list of
    dicts with ``title`` and ``series`` — each series a dict ``label``, ``color``, ``dashed``,
    ``points`` (list of (concurrency, value, low, high), the model's curve and band) — and
    ``marks``: (label, concurrency, value, color, marker) for measured points (public, or the
    article's own). Curves end where the pools stop admitting requests."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6.6 * len(panels), 4.9), squeeze=False)
    for ax, p in zip(axes[0], panels):
        for s in p["series"]:
            pts = sorted(s["points"])
            xs = [q[0] for q in pts]
            ax.plot(xs, [q[1] for q in pts], "--" if s.get("dashed") else "-", color=s["color"], lw=1.6,
                    label=s["label"])
            ax.fill_between(xs, [q[2] for q in pts], [q[3] for q in pts], color=s["color"], alpha=0.12, lw=0)
            ax.plot(xs[-1:], [pts[-1][1]], "|", color=s["color"], ms=14, mew=2)
        seen = set()
        for label, c, v, color, marker in p.get("marks", []):
            ax.scatter([c], [v], marker=marker, s=90 if marker == "*" else 36, color=color, edgecolor="k",
                       linewidth=0.7, zorder=5, label=None if label in seen else label)
            seen.add(label)
        _concurrency_axis(ax, [q[0] for s in p["series"] for q in s["points"]] + [m[1] for m in p.get("marks", [])])
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_ylabel("output tok/s per GPU")
        ax.set_title(p["title"], fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left", framealpha=0.9)
    fig.text(0.5, 0.005, "lines: the serving model (fitted on public measurements; shaded: its validated band); "
             "a bar ends each curve where sglang's pools stop admitting requests. Models, not measurements.",
             ha="center", fontsize=7.5)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def speedup_figure(curve, band: float, accepts, accept_range, claimed_single: float, claimed_peak: float):
    """DSpark's speed-up on 8×MI355X against its acceptance length, by the serving model: one
    request (solid) and at each side's peak (dashed), shaded by the validated band of the
    spec / no-spec ratio; the acceptance lengths public runs measured as ticks along the axis, the
    middle 80% shaded; the article's 2.2× and +18% as horizontal lines. ``curve``: rows of
    :func:`k3lab.serving.article.speedup_curve`; ``accepts``: measured acceptance lengths;
    ``accept_range``: (low, high) of :func:`k3lab.serving.article.accept_range`, the readings'."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.6, 4.8))
    t = [r["tau"] for r in curve]
    for key, style, label in (("single", "-", "one request"), ("peak", "--", "at each side's peak concurrency")):
        y = [r[key] for r in curve]
        ax.plot(t, y, style, color="#c62828", lw=1.8, label=f"model: {label}")
        ax.fill_between(t, [v * math.exp(-band) for v in y], [v * math.exp(band) for v in y], color="#c62828",
                        alpha=0.10, lw=0)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(claimed_single, color="#1565c0", lw=1.2, ls=":", label=f"article: {claimed_single:g}x single-stream")
    ax.axhline(claimed_peak, color="#6a1b9a", lw=1.2, ls="-.", label=f"article: +{(claimed_peak - 1) * 100:.0f}% peak")
    a = sorted(accepts)
    lo, hi = accept_range
    ax.axvspan(lo, hi, color="0.85", alpha=0.5, lw=0,
               label=f"middle 80% of {len(a)} measured acceptance lengths ({lo:.2f}-{hi:.2f})")
    ax.plot(a, [0.02] * len(a), "|", color="0.25", ms=12, transform=ax.get_xaxis_transform())
    ax.set_ylim(bottom=0)
    ax.set_xlabel("DSpark acceptance length (tokens emitted per verify step)")
    ax.set_ylabel("DSpark ÷ no DSpark (output tok/s)")
    ax.set_title("DSpark on 8×MI355X TP8 (K3_OPT), 1,024 in / 400 out: the speed-up hangs on the acceptance",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    return fig
