"""Figures of the article against the field: public Kimi K3 measurements, the serving model
validated on them, and the article's own points (finding 4, and the speed-ups of 2 and 3)."""

from __future__ import annotations

import math

from ..serving.predict import band_words
from . import GPU_COLORS, concurrency_axis

KIND_MARKERS = {"output_tok_s": ("o", "output tok/s"), "tpot_ms": ("s", "TPOT"), "itl_ms": ("D", "median ITL"),
                "ttft_ms": ("^", "TTFT")}


METRIC_TITLES = {"decode": "decode speed (TPOT, ITL, tok/s), no DSpark", "ttft": "time to first token",
                 "dspark": "speed with DSpark (TPOT, tok/s)"}
SPLIT_MARKS = {"leave_one_repository_out": ("o", "left out with its repository"),
               "leave_one_engine_out": ("s", "left out with its engine"),
               "leave_one_harness_out": ("^", "left out with its harness"),
               "time_split": ("x", "later than the fit's figures")}
#: the splits the validation figure draws (filled, hollow); the coverage figure has every split
DRAWN_SPLITS = ("leave_one_repository_out", "time_split")
#: a prediction extrapolated across nodes (recorded, never in a band): drawn apart from any GPU's colour
EXTRAPOLATED_COLOR = "#9e9e9e"


#: the ratio axis's ticks (a factor and its inverse read alike on a log axis)
RATIO_TICKS = (0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5)


def speed_ratio(kind: str, predicted: float, published: float) -> float:
    """The model's speed ÷ the published one for a figure of ``kind``: model ÷ published for a
    throughput (tok/s), published ÷ model for a time (TPOT, ITL, TTFT: ms, where less is faster).
    Above 1 the model is optimistic (it predicts faster than was measured)."""
    return predicted / published if kind == "output_tok_s" else published / predicted


def validation_figure(validation_rows, observations, bands: dict, article=None):
    """The model's error on public figures it was not fitted to, one panel per GPU family (rows)
    and metric (columns: decode, TTFT, DSpark): the model's speed ÷ the published speed
    (:func:`speed_ratio`: one direction for tok/s and ms alike, above 1 the model is optimistic)
    against the run's concurrency, log-log; 1 is a perfect model, the dashed lines the metric's
    band (or "not validated"). Colour: GPU; marker shape: what was measured (tok/s, TPOT, ITL,
    TTFT); filled: predicted by a fit without the figure's own repository; hollow: by a fit on
    earlier figures only; grey: extrapolated across nodes (not in the band). ``bands``: {family: {metric: log band or None}}. ``article``: optional list of
    (family, label, claimed, low, high, concurrency): the article's figures against the model's
    span at its workload (a star with the span, on the decode panel)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from ..serving.calibration import MAX_BAND_FACTOR

    fams = [f for f in bands if any(o.family == f for o in observations)]
    metrics = list(METRIC_TITLES)
    obs = {o.id: o for o in observations}
    fig, axes = plt.subplots(len(fams), len(metrics), figsize=(5.0 * len(metrics), 3.9 * len(fams) + 0.6),
                             squeeze=False)
    kinds, gpus, stars, extrapolations = set(), set(), False, False
    for i, fam in enumerate(fams):
        for j, m in enumerate(metrics):
            ax = axes[i][j]
            # the repository and time splits; the engine and harness splits are the coverage figure's
            rows = [r for r in validation_rows.get(fam, []) if r.metric == m and r.split in DRAWN_SPLITS]
            ys, cs = [], []
            for r in rows:
                o = obs[r.id]
                y = speed_ratio(o.kind, r.predicted_out_of_sample, r.published)
                mk = KIND_MARKERS.get(o.kind, ("o", o.kind))[0]
                extrapolated = bool(getattr(r, "extrapolated", False))
                col = EXTRAPOLATED_COLOR if extrapolated else GPU_COLORS.get(o.gpu, "0.4")
                filled = r.split == DRAWN_SPLITS[0]
                ax.scatter([o.concurrency], [y], marker=mk, s=34, facecolors=col if filled else "none", edgecolors=col,
                           linewidth=1.2, alpha=0.85, zorder=2 if extrapolated else 3)
                extrapolations |= extrapolated
                ys.append(y)
                cs.append(o.concurrency)
                kinds.add(o.kind)
                gpus.add(o.gpu)
            if m == "decode":
                for a in (article or []):
                    if a[0] != fam or not a[3] == a[3]:
                        continue
                    _, label, claimed, lo, hi, c = a
                    r_lo, r_hi = lo / claimed, hi / claimed  # the article's figures are tok/s
                    mid = math.sqrt(r_lo * r_hi)
                    ax.errorbar([c], [mid], yerr=[[mid - r_lo], [r_hi - mid]], fmt="*", ms=13, color="gold", mec="k",
                                ecolor="k", capsize=3, zorder=5)
                    ax.annotate(label, (c, r_hi), xytext=(0, 4), textcoords="offset points", ha="center", fontsize=6.5)
                    ys += [r_lo, r_hi]
                    cs.append(c)
                    stars = True
            if not ys:
                ax.text(0.5, 0.5, "no public figure of this kind", ha="center", va="center", transform=ax.transAxes)
                ax.set_xticks([]), ax.set_yticks([])
            else:
                b = bands[fam].get(m)
                top = max(max(ys), 1 / min(ys), math.exp(b) if b is not None else 1) * 1.35
                ax.axhline(1.0, color="k", lw=0.9)
                if b is not None:
                    for f in (math.exp(b), math.exp(-b)):
                        ax.axhline(f, color="k", lw=0.8, ls="--")
                    note = f"band {band_words(b)}"
                else:
                    note = f"not validated (no band within ×{MAX_BAND_FACTOR:g})"
                ax.text(0.02, 0.97, note, transform=ax.transAxes, va="top", fontsize=8,
                        bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
                ax.text(0.98, 0.97, "model optimistic ↑", transform=ax.transAxes, va="top", ha="right", fontsize=7,
                        color="0.35")
                ax.text(0.98, 0.03, "model pessimistic ↓", transform=ax.transAxes, va="bottom", ha="right",
                        fontsize=7, color="0.35")
                ax.set_yscale("log")
                ax.set_ylim(1 / top, top)
                ticks = [t for t in RATIO_TICKS if 1 / top <= t <= top]
                ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
                ax.minorticks_off()
                concurrency_axis(ax, cs)
            ax.grid(alpha=0.3, which="both")
            ax.set_title(f"{fam}: {METRIC_TITLES[m]} ({len(rows)})", fontsize=9)
            ax.set_xlabel("concurrency of the public run", fontsize=8)
            ax.set_ylabel("model's speed ÷ published speed", fontsize=8)
    handles = [Line2D([], [], marker="o", ls="", color=GPU_COLORS.get(g, "0.4"), label=g.upper()) for g in sorted(gpus)]
    handles += [Line2D([], [], marker=KIND_MARKERS[k][0], ls="", color="0.3", label=KIND_MARKERS[k][1])
                for k in KIND_MARKERS if k in kinds]
    if extrapolations:
        handles.append(Line2D([], [], marker="o", ls="", color=EXTRAPOLATED_COLOR,
                              label="grey: extrapolated across nodes (a cost no fit had), not in the band"))
    handles += [Line2D([], [], marker="o", ls="", color="0.3", label="filled: fit without the figure's repository"),
                Line2D([], [], marker="o", ls="", color="0.3", mfc="white", label="hollow: fit on earlier figures only")]
    if stars:
        handles.append(Line2D([], [], marker="*", ls="", ms=11, color="gold", mec="k",
                              label="the article's figure against the model's span"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize=8, frameon=False)
    fig.suptitle("The serving model on public Kimi K3 figures it was not fitted to: its speed ÷ the published speed "
                 "(one direction for tok/s and ms: above 1 the model is optimistic; dashed: the metric's band)",
                 fontsize=10.5)
    fig.tight_layout(rect=(0, 0.5 / (3.9 * len(fams) + 0.6), 1, 1))
    return fig


def coverage_figure(summary):
    """Share of out-of-sample figures inside the band, per family and metric, on each split, beside
    the nominal 90%. ``summary``: rows with family, metric, band_factor, validated, and
    coverage_<split> / points_<split> (:func:`k3lab.serving.calibration.summary` or the committed
    fit's bands)."""
    import matplotlib.pyplot as plt

    rows = list(summary)
    fig, ax = plt.subplots(figsize=(max(6.5, 1.25 * len(rows) + 2), 4.2))
    nsplit = len(SPLIT_MARKS)
    width = 0.8 / nsplit
    for k, (split, (mk, label)) in enumerate(SPLIT_MARKS.items()):
        xs = [i + (k - (nsplit - 1) / 2) * width for i in range(len(rows))]
        ys = [r[f"coverage_{split}"] if r[f"coverage_{split}"] == r[f"coverage_{split}"] else 0 for r in rows]
        bars = ax.bar(xs, ys, width, color=("#37474f", "#607d8b", "#90a4ae", "#cfd8dc")[k], label=f"{label}")
        for x, y, r in zip(xs, ys, rows):
            n = r[f"points_{split}"]
            ax.text(x, y + 0.01, f"{y:.0%}\nn={n}" if n and r["band_factor"] == r["band_factor"] else f"n={n}",
                    ha="center", va="bottom", fontsize=6)
        del bars
    ax.axhline(0.9, color="#c62828", lw=1, ls="--", label="nominal 90%")
    ax.set_xticks(range(len(rows)), [f"{r['family']}\n{r['metric']}\n" + (f"band ×{r['band_factor']:.2f}"
                                     if r["validated"] else "not validated") for r in rows], fontsize=7.5)
    ax.set_ylim(0, 1.18)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 0.9, 1.0], ["0", "25%", "50%", "75%", "90%", "100%"])
    ax.set_ylabel("share of out-of-sample figures inside the band")
    ax.set_title("Does the band hold on figures the fit did not see? (per family and metric)", fontsize=10)
    ax.legend(fontsize=7.5, loc="upper right", ncol=3)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def curves_figure(panels):
    """Output tok/s per GPU against concurrency, one panel per workload. ``panels``: list of
    dicts with ``title`` and ``series`` — each series a dict ``label``, ``color``, ``dashed``,
    ``points`` (list of (concurrency, value, low, high), the model's curve and band) — and
    ``marks``: (label, concurrency, value, color, marker) for measured points (public, or the
    article's own). Curves end where the pools stop admitting requests; a series without a band
    says "not validated" in the legend."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6.6 * len(panels), 4.9), squeeze=False)
    for ax, p in zip(axes[0], panels):
        for s in p["series"]:
            pts = sorted(s["points"])
            xs = [q[0] for q in pts]
            banded = any(q[2] == q[2] for q in pts)  # NaN lows: the family's metric is not validated
            ax.plot(xs, [q[1] for q in pts], "--" if s.get("dashed") else "-", color=s["color"], lw=1.6,
                    label=s["label"] + ("" if banded else " (not validated: no band)"))
            ax.fill_between(xs, [q[2] for q in pts], [q[3] for q in pts], color=s["color"], alpha=0.12, lw=0)
            ax.plot(xs[-1:], [pts[-1][1]], "|", color=s["color"], ms=14, mew=2)
        seen = set()
        for label, c, v, color, marker in p.get("marks", []):
            ax.scatter([c], [v], marker=marker, s=90 if marker == "*" else 36, color=color, edgecolor="k",
                       linewidth=0.7, zorder=5, label=None if label in seen else label)
            seen.add(label)
        concurrency_axis(ax, [q[0] for s in p["series"] for q in s["points"]] + [m[1] for m in p.get("marks", [])])
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


def speedup_figure(curve, band: float | None, accepts, accept_range, claimed_single: float, claimed_peak: float):
    """DSpark's speed-up on 8×MI355X against its acceptance length, by the serving model: one
    request (solid) and at each side's peak (dashed), shaded by the validated band of the
    spec / no-spec ratio (none, and "not validated" in the legend, where ``band`` is None); the
    acceptance lengths public runs measured as ticks along the axis, the
    middle 80% shaded; the article's 2.2× and +18% as horizontal lines. ``curve``: rows of
    :func:`k3lab.serving.article.speedup_curve`; ``accepts``: measured acceptance lengths;
    ``accept_range``: (low, high) of :func:`k3lab.serving.article.accept_range`, the readings'."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.6, 4.8))
    t = [r["tau"] for r in curve]
    for i, (key, style, label) in enumerate((("single", "-", "one request"),
                                             ("peak", "--", "at each side's peak concurrency"))):
        y = [r[key] for r in curve]
        ax.plot(t, y, style, color="#c62828", lw=1.8,
                label=f"model: {label}" + (" (not validated)" if band is None else ""))
        if band is not None:
            ax.fill_between(t, [v * math.exp(-band) for v in y], [v * math.exp(band) for v in y], color="#c62828",
                            alpha=0.10, lw=0, label=None if i else f"the model's band ({band_words(band)}, "
                                                                      "spec / no-spec ratio)")
    ax.axhline(1.0, color="k", lw=0.8, label="1x: DSpark gains nothing")
    ax.axhline(claimed_single, color="#1565c0", lw=1.2, ls=":", label=f"article: {claimed_single:g}x single-stream")
    ax.axhline(claimed_peak, color="#6a1b9a", lw=1.2, ls="-.", label=f"article: +{(claimed_peak - 1) * 100:.0f}% peak")
    a = sorted(accepts)
    lo, hi = accept_range
    ax.axvspan(lo, hi, color="0.85", alpha=0.5, lw=0,
               label=f"middle 80% of {len(a)} measured acceptance lengths ({lo:.2f}-{hi:.2f})")
    ax.plot(a, [0.02] * len(a), "|", color="0.25", ms=12, transform=ax.get_xaxis_transform(),
            label="one tick per public run's measured acceptance length")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("DSpark acceptance length (tokens emitted per verify step)")
    ax.set_ylabel("DSpark ÷ no DSpark (output tok/s)")
    ax.set_title("DSpark on 8×MI355X TP8 (K3_OPT), 1,024 in / 400 out: the speed-up hangs on the acceptance",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    return fig


#: the latency figure's panels: (row key, title, y label, log y)
LATENCY_PANELS = (("ttft_ms", "time to first token (TTFT)", "TTFT (ms, log)", True),
                  ("tpot_ms", "time per output token (TPOT)", "TPOT (ms)", False))


def _latency_panel(ax, rows, key: str) -> tuple[list, bool]:
    """One metric (``key``: ``ttft_ms`` or ``tpot_ms``) per layout against concurrency: solid and
    shaded by the band only between points inside the validated domain of a validated metric;
    dotted (no band) through points outside it, dashed for a metric the family does not validate;
    a point outside the domain hollow; a bar and the count where the pools stop admitting.
    → (legend handles, whether a point lies outside the domain)."""
    from matplotlib.lines import Line2D

    from . import deployment_color

    handles, outside = [], False
    for layout in dict.fromkeys(r["layout"] for r in rows):
        pts = sorted((r for r in rows if r["layout"] == layout), key=lambda r: r["concurrency"])
        col = deployment_color(layout)
        xs, ys = [r["concurrency"] for r in pts], [r[key] for r in pts]
        validated = all(r[f"{key}_low"] is not None for r in pts)
        inside = [bool(r[f"{key[:4]}_in_domain"]) for r in pts]
        for i in range(len(pts) - 1):  # the band holds only where both ends lie inside the domain
            held = validated and inside[i] and inside[i + 1]
            ax.plot(xs[i:i + 2], ys[i:i + 2], "-" if held else (":" if validated else "--"), color=col, lw=1.8)
        if validated:
            ax.fill_between(xs, [r[f"{key}_low"] for r in pts], [r[f"{key}_high"] for r in pts], color=col,
                            alpha=0.15, lw=0, where=inside, interpolate=False)
        for r, ok in zip(pts, inside):
            outside |= not ok
            ax.plot(r["concurrency"], r[key], "o", ms=4.5, color=col, mfc=col if ok else "white", mew=1.2, zorder=4)
        ax.plot(xs[-1:], ys[-1:], "|", color=col, ms=16, mew=2.2, zorder=4)
        handles.append(Line2D([], [], color=col, lw=1.8, linestyle="-" if validated else "--",
                              label=f"{layout}, pools admit {pts[-1]['admitted']}"
                                    + ("" if validated else ": not validated (no band)")))
    return handles, outside


def latency_figure(rows, title: str = "Latency against concurrency by the serving model: the article's layouts, "
                                      "1,024 in / 400 out, no DSpark"):
    """TTFT (left) and TPOT (right), in ms, against concurrency for each layout, by the serving
    model: shaded by the metric's validated band, a dashed line labelled "not validated" where
    the family's metric has no band, a hollow point where the question lies outside the
    validated domain, and a bar where sglang's pools stop admitting requests (the admission
    limit, whole deployment; its count in the legend). ``rows``: dicts of :func:`k3lab.findings.field.latency_rows`."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from . import plain_log_ticks

    if not rows:
        raise ValueError("latency_figure: no rows (no layout admits a request)")
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.9))
    outside = False
    for ax, (key, name, ylabel, log) in zip(axes, LATENCY_PANELS):
        handles, out = _latency_panel(ax, rows, key)
        outside |= out
        concurrency_axis(ax, [r["concurrency"] for r in rows])
        ax.legend(handles=handles, fontsize=7.5, loc="upper left", framealpha=0.92)
        if log:
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3, which="both")
    marks = [Line2D([], [], marker="o", ls="", color="0.3", label="inside the validated domain")]
    if outside:
        marks.append(Line2D([], [], marker="o", ls=":", color="0.3", mfc="white",
                            label="outside it: dotted, no band (the band says nothing there)"))
    axes[1].add_artist(axes[1].get_legend())
    axes[1].legend(handles=marks, fontsize=7.5, loc="lower right", framealpha=0.92)
    fig.suptitle(title, fontsize=10.5)
    fig.text(0.5, 0.005, "Models, not measurements: the serving model fitted on public Kimi K3 measurements; shaded: "
             "the metric's validated band (out-of-source error). A bar ends each curve where the pools stop "
             "admitting requests.", ha="center", fontsize=7.5)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def interactivity_figure(curves, prices_label: str, levels=(), workload: str = ""):
    """$ per million output tokens against output tok/s per user (1,000 / TPOT), one curve per
    layout (InferenceX's view of cost against interactivity, from the serving model): a point per
    concurrency a sweep tries, labelled at both ends; shaded between the curve the model gives when
    it is as fast as its validated band allows (x · e^band, $ · e^-band) and as slow; dotted
    verticals at the TPOT limits T21 reads the pair at (``levels``, ms). ``curves``:
    :func:`k3lab.findings.interactivity.cost_curves`; ``prices_label``: whose $/GPU-hour price it
    (``your prices``, ``<source> (<kind>) prices``);
    ``workload``: named in the title (``1,024 in / 400 out``)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    from . import deployment_color, plain_log_ticks

    fig, ax = plt.subplots(figsize=(9.6, 5.4))
    for c in curves:
        col = deployment_color(c["label"])
        pts = sorted(c["points"], key=lambda p: p[2])
        xs, ys = [p[2] for p in pts], [p[4] for p in pts]
        b = c["band"]
        if b is not None:
            fast = [(x * math.exp(b), y * math.exp(-b)) for x, y in zip(xs, ys)]
            slow = [(x * math.exp(-b), y * math.exp(b)) for x, y in zip(xs, ys)]
            ax.add_patch(Polygon(fast + slow[::-1], closed=True, color=col, alpha=0.13, lw=0))
        ax.plot(xs, ys, "-o", color=col, ms=4, lw=2, label=f"{c['layout']}" + ("" if b is not None else " (not validated)"))
        for p, ha in ((pts[0], "right"), (pts[-1], "left")):
            ax.annotate(f"c{p[0]}, TPOT {p[1]:.0f} ms", (p[2], p[4]), xytext=(-6 if ha == "right" else 6, 6),
                        textcoords="offset points", ha=ha, fontsize=7.5, color=col)
    for ms in levels:
        ax.axvline(1e3 / ms, color="0.45", lw=0.8, ls=":")
        ax.text(1e3 / ms, 0.01, f"TPOT {ms:g} ms", rotation=90, va="bottom", ha="right", fontsize=7, color="0.35",
                transform=ax.get_xaxis_transform())
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_xlim(left=0)
    ax.set_xlabel("output tok/s per user (1,000 / TPOT; right = more interactive)")
    ax.set_ylabel("$ per million output tokens (log; lower is cheaper)")
    ax.set_title(f"Cost against interactivity by the serving model{', ' + workload if workload else ''}, at "
                 f"{prices_label}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right", title="layout (as compare lists it)", title_fontsize=8)
    fig.text(0.5, 0.005, "A model, not a measurement: one point per concurrency a sweep tries, no DSpark; shaded: "
             "the curve when the model is as fast or as slow as its validated band (both axes move). Dotted: the "
             "TPOT limits T21 compares the two at.", ha="center", fontsize=7.5)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig
