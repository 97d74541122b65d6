"""Figures of finding 4: throughput models against the article's points, perf per dollar by
price source, and what electricity does to the MI355X's lead."""

from __future__ import annotations

from .. import prices, roofline
from ..throughput import article_table


#: each model of the throughput figure: (label, colour, linestyle, linewidth, marker); the serving
#: model takes its deployment's colour instead (None)
MODEL_STYLES = {
    "serving": ("serving model", None, "-", 2.6, None),
    "roofline": ("k3lab decode roofline (upper bound)", "#212121", (0, (6, 2)), 1.2, None),
    "roofline_spec": ("roofline with speculative verification (all rows accepted)", "#757575", ":", 1.4, None),
    "silicon": ("aiconfigurator silicon (measured kernels)", "#6a1b9a", "-.", 1.1, "."),
    "sol": ("aiconfigurator speed-of-light (datasheets)", "#8d6e63", (0, (1, 1, 1, 1, 4, 1)), 1.1, "x"),
}
#: a text label's backing, so it reads over the curves
LABEL_BOX = {"facecolor": "white", "alpha": 0.6, "lw": 0, "pad": 1}
#: the serving model's line where its band is not validated for the family (no shading)
SERVING_UNVALIDATED = (0, (3, 1.5))


def _aic_label(gpu: str, n: int, tp: int, pp: int) -> str:
    """k3lab's label of an aiconfigurator configuration (``16×B200 TP8×PP2``; it models no DCP)."""
    return f"{n}×{gpu.upper()} TP{tp}" + (f"×PP{pp}" if pp > 1 else "")


def _by_gpu(labels: list) -> list:
    """Deployment labels grouped by GPU in the palette's order (first appearance within a GPU)."""
    from . import GPU_COLORS

    order = list(GPU_COLORS)

    def gpu_rank(label):
        g = next((g for g in order if f"×{g.upper()} " in f"{label} "), None)
        return order.index(g) if g else len(order)

    return sorted(labels, key=lambda lab: (gpu_rank(lab), labels.index(lab)))


def _panels(curves, measured, aic, serving) -> list[str]:
    """Every deployment any input draws (k3lab's labels), grouped by GPU."""
    deps = list(dict.fromkeys(curves["label"])) if len(curves) else []
    if aic is not None and len(aic):
        deps += [_aic_label(g, n, tp, pp) for g, n, tp, pp in aic[["gpu", "num_gpus", "tp", "pp"]].itertuples(index=False)]
    deps += [d for _, d, _ in serving or []]
    deps += list(measured[measured["point"] == measured["config"]]["label"])
    return _by_gpu(list(dict.fromkeys(deps)))


def _model_line(ax, key: str, xs, ys, color=None, **kw):
    _, col, ls, lw, mk = MODEL_STYLES[key]
    return ax.plot(xs, ys, linestyle=ls, lw=lw, marker=mk, ms=4, color=color or col, **kw)


def _draw_panel(ax, dep, curves, measured, aic, serving) -> tuple[set, list, bool]:
    """Every model of one deployment ``dep`` and the article's row for it. → (model keys drawn,
    serving-model labels, whether a serving curve is not validated)."""
    from . import deployment_color

    used, names, unvalidated = set(), [], False
    g = curves[curves["label"] == dep] if len(curves) else curves
    if len(g):
        _model_line(ax, "roofline", g["concurrency"], g["tok_s_bound_plain"])
        _model_line(ax, "roofline_spec", g["concurrency"], g["tok_s_bound_spec"])
        used |= {"roofline", "roofline_spec"}
    if aic is not None and len(aic):
        lab = aic.apply(lambda r: _aic_label(r["gpu"], r["num_gpus"], r["tp"], r["pp"]), axis=1)
        mine = aic[lab == dep]
        for (mode, net), m in mine.groupby(["mode", "scale_out_gbit_s_per_gpu"], sort=False):
            key = "silicon" if mode == "silicon" else "sol"
            m = m.sort_values("concurrency")
            _model_line(ax, key, m["concurrency"], m["tok_s"])
            used.add(key)
            if mine[mine["mode"] == mode]["scale_out_gbit_s_per_gpu"].nunique() > 1:
                ax.annotate(f"{net:g} Gb/s/GPU", (m["concurrency"].iloc[-1], m["tok_s"].iloc[-1]), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=6.5, color=MODEL_STYLES[key][1],
                            bbox=LABEL_BOX)
    col = deployment_color(dep)
    for label, d, pts in serving or []:
        if d != dep:
            continue
        pts = sorted(pts)
        names += [label] if label not in names else []
        xs, ys = [q[0] for q in pts], [q[1] for q in pts]
        lo, hi = [q[2] for q in pts], [q[3] for q in pts]
        validated = all(v == v for v in lo + hi)
        unvalidated |= not validated
        ax.plot(xs, ys, linestyle="-" if validated else SERVING_UNVALIDATED, lw=MODEL_STYLES["serving"][3], color=col,
                marker=(None, "o", "s")[min(names.index(label), 2)], ms=4, zorder=3)
        ax.plot(xs[-1:], ys[-1:], "|", color=col, ms=12, mew=2, zorder=3)
        if validated:
            ax.fill_between(xs, lo, hi, color=col, alpha=0.18, lw=0, zorder=2)
    for _, m in measured[(measured["point"] == measured["config"]) & (measured["label"] == dep)].iterrows():
        ax.plot(m["concurrency"], m["tok_s"], "*", ms=16, mec="k", mew=0.8, zorder=6, color=col)
        ax.annotate(f"{m['tok_s']:,.0f} (article" + (", c not stated)" if m["concurrency_assumed"] else ")"),
                    (m["concurrency"], m["tok_s"]), textcoords="offset points", xytext=(-10, 0), fontsize=7.5,
                    ha="right", va="center", zorder=6, bbox=LABEL_BOX)
    return used, names, unvalidated


def _model_legend(fig, used: set, names: list, unvalidated: bool, assumed_c, spare=None) -> None:
    """One legend of what each line style and colour is (the panel says the deployment): in the
    ``spare`` axes' place when a panel slot is empty, else below the panels."""
    from matplotlib.lines import Line2D

    rows = int(roofline.spec_params()["tokens_per_request_step"])
    styles = {**MODEL_STYLES, "roofline_spec": (f"roofline with speculative verification ({rows} rows, all accepted)",
                                                *MODEL_STYLES["roofline_spec"][1:])}
    width = MODEL_STYLES["serving"][3]
    handles = [Line2D([], [], color="0.25", lw=width, marker=(None, "o", "s")[min(i, 2)],
                      label=f"{n} (the panel's colour); shaded: validated band") for i, n in enumerate(names)]
    if unvalidated:
        handles.append(Line2D([], [], color="0.25", lw=width, linestyle=SERVING_UNVALIDATED,
                              label="serving model where not validated for the GPU (no band)"))
    handles += [Line2D([], [], color=col, linestyle=ls, lw=lw, marker=mk, label=lab)
                for k, (lab, col, ls, lw, mk) in styles.items() if k in used]
    handles.append(Line2D([], [], marker="*", ls="", ms=12, color="0.5", mec="k", label="the article's table"
                          + (f" (at c{assumed_c} where it states no concurrency)" if assumed_c else "")))
    if spare is not None:
        spare.axis("off")
        spare.legend(handles=handles, loc="center", fontsize=8, frameon=False, title="model (line style)",
                     title_fontsize=8.5)
    else:
        fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False,
                   title="model (line style)", title_fontsize=8.5)


def throughput_figure(curves, measured, aic=None, serving=None,
                      title: str = "Output tok/s per deployment against concurrency: models and the article"):
    """Output tok/s of the whole deployment against concurrency (log-log), one panel per
    deployment (titled in its colour, :func:`k3lab.figures.deployment_color`), the same axes in
    every panel; in each, one line per model (:data:`MODEL_STYLES`): the serving model
    (``serving``: list of (model label, deployment label, [(concurrency, tok/s, low, high)]) with
    low / high NaN where not validated, e.g. :func:`k3lab.findings.field.serving_curves`) thick in
    the deployment's colour with its band, k3lab's decode roofline (``curves``,
    :func:`k3lab.roofline.curve` frames: an upper bound, plain and with speculative verification)
    and aiconfigurator (``aic``, :func:`k3lab.crosscheck.sweep` frames, silicon and speed-of-light;
    several inter-node bandwidths labelled at the curve's end). The article's table rows
    (``measured``, :func:`k3lab.roofline.bounds_for_measured`) are stars, labelled "c not stated"
    where the article gives no concurrency; points it gives only relative to a row (derived,
    e.g. 952 / 1.18) are left out. One legend of the models, below the panels."""
    import math

    import matplotlib.pyplot as plt

    from . import concurrency_axis, deployment_color

    deps = _panels(curves, measured, aic, serving)
    cols = min(3, max(1, len(deps)))
    nrows = math.ceil(len(deps) / cols)
    spare = len(deps) < nrows * cols
    below = 0 if spare else 1.6  # inches for a legend under the panels
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.5 * nrows + below), squeeze=False, sharex=True,
                             sharey=True)
    used, names, unvalidated = set(), [], False
    cs = list(curves["concurrency"]) + [c for *_, pts in (serving or []) for c, *_ in pts] + [1, 128]
    for ax, dep in zip(axes.flat, deps):
        u, n, v = _draw_panel(ax, dep, curves, measured, aic, serving)
        used |= u
        names += [x for x in n if x not in names]
        unvalidated |= v
        ax.set_title(dep, fontsize=10, color=deployment_color(dep), fontweight="bold")
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
    for ax in axes.flat[len(deps):]:
        ax.set_visible(False)
    for ax in axes.flat[:len(deps)]:
        concurrency_axis(ax, cs)
        ax.xaxis.set_tick_params(labelbottom=True)  # a panel above an empty slot keeps its numbers
    for ax in axes[:, 0]:
        ax.set_ylabel("output tok/s per deployment (log)", fontsize=8.5)
    for ax in axes[-1]:
        ax.set_xlabel("concurrency (requests in flight)", fontsize=8.5)
    table = measured[measured["point"] == measured["config"]]
    assumed = table[table["concurrency_assumed"].astype(bool)]["concurrency"]
    last = axes.flat[-1]
    if spare:
        last.set_visible(True)
    _model_legend(fig, used, names, unvalidated, int(assumed.iloc[0]) if len(assumed) else None,
                  last if spare else None)
    fig.suptitle(f"{title}, one panel per deployment\nModels, not measurements; a bar ends a serving-model curve where "
                 "sglang's pools stop admitting; aiconfigurator models no DCP (its B300 is TP8 alone)", fontsize=9.5)
    fig.tight_layout(rect=(0, below * 0.8 / (3.5 * nrows + below), 1, 1))
    return fig


def _no_price(ax, y: float, h: float) -> None:
    """A hatched "no price" marker at the left of row ``y`` (``h`` its height in data units)."""
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import blended_transform_factory

    at = blended_transform_factory(ax.transAxes, ax.transData)
    ax.add_patch(Rectangle((0, y - h / 2), 0.025, h, transform=at, hatch="////", facecolor="white",
                           edgecolor="#9e9e9e", linewidth=0.6))
    ax.text(0.03, y, "no price", transform=at, va="center", fontsize=7, color="#757575", style="italic")


def _slot_text(cfg: str, art: float | None, mod, not_validated: bool) -> str:
    """The values of one (source, deployment) slot, in $/M output tokens, led by the deployment."""
    parts = [f"{cfg}: article \\${art:,.2f}" if art is not None else f"{cfg}: article —"]
    if mod is not None:
        parts.append(f"model \\${mod.usd_per_million_tokens:,.2f} (\\${mod.usd_per_million_tokens_low:,.2f}–"
                     f"\\${mod.usd_per_million_tokens_high:,.2f})" + ("" if mod.in_domain else " *"))
    elif not_validated:
        parts.append("model not validated")
    return " · ".join(parts)


def _draw_slot(ax, tx, y: float, cfg: str, col: str, art: float | None, mod, not_validated: bool,
               right: float) -> list:
    """One (source, deployment ``cfg``) slot at row ``y``: the article's $/M hollow (beyond the axis's
    ``right`` end a triangle at the edge, its value beside it), the model's filled with its band, and
    the values in the text column ``tx``, in the deployment's colour. → the $/M values drawn."""
    vals = []
    if art is not None and art > right:
        ax.plot([right], [y], ">", ms=7, color=col, zorder=4, clip_on=False)
        ax.annotate(f"\\${art:,.0f} →", (right, y), xytext=(-9, 0), textcoords="offset points", ha="right",
                    va="center", fontsize=7, color=col)
    elif art is not None:
        ax.plot([art], [y], "o", ms=7, mfc="white", mec=col, mew=1.6, zorder=4)
        vals.append(art)
    if mod is not None:
        lo, mid, hi = mod.usd_per_million_tokens_low, mod.usd_per_million_tokens, mod.usd_per_million_tokens_high
        ax.errorbar([mid], [y], xerr=[[mid - lo], [hi - mid]], fmt="o", ms=7, color=col, ecolor=col, elinewidth=1.6,
                    capsize=3, zorder=5)
        vals += [lo, hi]
    tx.text(0, y, _slot_text(cfg, art, mod, not_validated), va="center", fontsize=7, color=col)
    return vals


def _perf_legend(fig, configs: list, mod) -> str:
    """The legend under the figure (deployments, what each marker is, "no price"); → the notes
    the title carries (outside the validated domain, electricity)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from . import deployment_color

    handles = [Patch(color=deployment_color(c), label=c) for c in configs]
    handles += [Line2D([], [], marker="o", ls="", mfc="white", mec="0.3", mew=1.6,
                       label="at the article's self-reported tok/s")]
    if mod is not None:
        handles += [Line2D([], [], marker="o", ls="-", color="0.3", label="serving model's peak, no DSpark (bar: band)")]
    handles += [Patch(facecolor="white", edgecolor="#9e9e9e", hatch="////", label="no price from this source")]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize=8, frameon=False)
    notes = []
    if mod is not None and (~mod["in_domain"].astype(bool)).any():
        notes.append("* outside the model's validated domain")
    if mod is not None and (mod["electricity_usd_per_gpu_hour"].astype(float) > 0).any():
        notes.append("the model's \\$/M include electricity; the article's do not")
    return "; ".join(notes)


def perf_per_dollar_figure(df, model=None):
    """$ per million output tokens of each deployment under each price source (one row per
    source, a slot per deployment, log axis): a hollow marker at the article's self-reported
    throughput, a filled one with an error bar at the serving model's peak with its validated
    band; the values in a column at the right. A deployment the serving model does not validate
    says "not validated" instead of a bar; a source that does not price a GPU gets a hatched
    "no price" marker, never an empty slot. ``df``: :func:`k3lab.prices.perf_per_dollar_by_tier`
    (the ``override`` tier is the run's own prices); ``model``: optional
    :func:`k3lab.findings.field.model_perf_per_dollar` (columns layout, tier, kind,
    usd_per_million_tokens, _low, _high, in_domain, electricity_usd_per_gpu_hour)."""
    import matplotlib.pyplot as plt

    from . import deployment_color, plain_log_ticks

    if df is None or len(df) == 0:
        raise ValueError("perf_per_dollar_figure: no priced config (an empty table)")
    mod = model if model is not None and len(model) else None
    tiers = list(dict.fromkeys([*df["tier"], *([] if mod is None else mod["tier"])]))
    configs = list(dict.fromkeys([*df["config"], *([] if mod is None else mod["layout"])]))
    kinds = {**({} if mod is None else dict(zip(mod["tier"], mod["kind"]))), **dict(zip(df["tier"], df["kind"]))}
    art = {(r.tier, r.config): float(r.usd_per_million_tokens) for r in df.itertuples()}
    fit = {} if mod is None else {(r.tier, r.layout): r for r in mod.itertuples()}
    unvalidated = set() if mod is None else set(configs) - set(mod["layout"])
    slot = 0.8 / len(configs)
    fig_h = 1.9 + 0.24 * len(tiers) * len(configs)
    fig, (ax, tx) = plt.subplots(1, 2, figsize=(13, fig_h), sharey=True, gridspec_kw={"width_ratios": [2.1, 1]})
    # the axis spans what the model prices and the article's points of the same deployments; a deployment the
    # model does not validate (the B200) keeps its points inside that span and an arrow at the edge beyond it
    span = [v for (t, c), v in art.items() if c not in unvalidated] + [
        x for m in fit.values() for x in (m.usd_per_million_tokens_low, m.usd_per_million_tokens_high)]
    span = span or list(art.values())
    right = max(span) * 1.6
    vals = []
    for i, tier in enumerate(tiers):
        for j, cfg in enumerate(configs):
            y = i + (j - (len(configs) - 1) / 2) * slot
            a, m = art.get((tier, cfg)), fit.get((tier, cfg))
            if a is None and m is None:
                _no_price(ax, y, slot * 0.8)
                tx.text(0, y, f"{cfg}: no price", va="center", fontsize=7, color="#757575", style="italic")
            else:
                vals += _draw_slot(ax, tx, y, cfg, deployment_color(cfg), a, m, cfg in unvalidated, right)
    ax.set_xscale("log")
    ax.set_xlim(min(vals) / 1.5, right)
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel("\\$ per million output tokens (log scale; lower is better)", fontsize=9)
    ax.grid(axis="x", alpha=0.3, which="both")
    ax.set_yticks(range(len(tiers)), [f"{t}\n({str(kinds.get(t, '')).replace('_', ' ')})" if t != "override"
                                      else "your prices\n(the run's parameter)" for t in tiers], fontsize=8)
    for i in range(1, len(tiers)):
        ax.axhline(i - 0.5, color="#e0e0e0", lw=0.8)
    ax.set_ylim(len(tiers) - 0.5, -0.5)
    tx.axis("off")
    tx.set_title("\\$/M output tokens, per deployment: at the article's tok/s"
                 + (" · the serving model's (band)" if mod is not None else ""), fontsize=8.5, loc="left")
    notes = _perf_legend(fig, configs, mod)
    fig.suptitle("\\$ per million output tokens under each price source (\\$/GPU-hour, data/prices.yaml): the article's "
                 "self-reported throughput" + (" beside the serving model's peak at the article's workload (no latency "
                                               "target)" if mod is not None else "")
                 + (f"\n{notes}" if notes else ""), fontsize=10)
    fig.tight_layout(rect=(0, 0.75 / fig_h, 1, 1))
    return fig


def power_figure(tiers=("article", "inferencex_3yr_rental"), pue: float = 1.3,
                 a_id: str = "mi355x_tp8", b_id: str = "b300_tp8_dcp"):
    """perf/$ (tok/s per $/hour, the article's throughput) against the electricity price for two
    configs under a few price tiers, board power from data/hardware.yaml × PUE: the x axis spans the
    electricity prices data/prices.yaml assumes (the same in every panel), the y axis starts at 0 so
    a gap reads at its true size, and the MI355X's lead is written at both ends; the breakeven
    $/kWh is marked where it lies inside the range and stated where it lies beyond it. Each config
    in its deployment's colour."""
    import matplotlib.pyplot as plt
    import numpy as np

    from . import deployment_color

    lo, hi = prices.electricity_assumptions()["usd_per_kwh_range"]
    table = article_table()
    fig, axes = plt.subplots(1, len(tiers), figsize=(5.6 * len(tiers), 4.0), squeeze=False, sharey=True)
    be = prices.power_breakevens(a_id, b_id, [pue])
    ks = np.linspace(lo, hi, 101)
    for ax, tier in zip(axes[0], tiers):
        k_star = float(be[be["tier"] == tier]["breakeven_usd_per_kwh"].iloc[0])
        ys = {cid: prices.perf_per_dollar_with_power(cid, prices.price(table[cid].gpu, tier), pue, ks)
              for cid in (a_id, b_id)}
        for cid, y in ys.items():
            ax.plot(ks, y, label=table[cid].label, color=deployment_color(table[cid].label), lw=2)
        for i, ha in ((0, "left"), (-1, "right")):
            lead = ys[a_id][i] / ys[b_id][i] - 1
            ax.annotate(f"MI355X {lead:+.1%}\nat ${ks[i]:.2f}/kWh", (ks[i], max(ys[a_id][i], ys[b_id][i])),
                        xytext=(5 if ha == "left" else -5, 8), textcoords="offset points", ha=ha, va="bottom",
                        fontsize=8)
        if np.isfinite(k_star) and lo <= k_star <= hi:
            ax.axvline(k_star, color="k", ls="--", lw=1)
            ax.text(k_star, 0.06, f" the MI355X's lead vanishes at ${k_star:.2f}/kWh", ha="left", fontsize=8,
                    transform=ax.get_xaxis_transform())
        else:
            where = ("never, in this range" if not np.isfinite(k_star) else
                     f"only at ${k_star:.2f}/kWh, beyond the range shown" if k_star > hi else
                     f"below ${lo:.2f}/kWh: the B300 leads across the range")
            ax.text(0.5, 0.06, f"the MI355X's lead vanishes {where}", transform=ax.transAxes, ha="center", fontsize=8)
        ax.set_title(f"prices: {tier}, PUE {pue:g} (assumed)", fontsize=10)
        ax.set_xlabel("electricity, $/kWh (the range data/prices.yaml assumes)")
        ax.set_xlim(lo, hi)
        ax.set_ylim(0, max(float(np.max(y)) for y in ys.values()) * 1.3)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("tok/s per $/hour (the article's throughput)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8.5, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig
