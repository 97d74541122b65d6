"""Figures of finding 4: throughput models against the article's points, perf per dollar by
price source, and what electricity does to the MI355X's lead."""

from __future__ import annotations

from .. import prices, roofline
from ..throughput import article_table


#: line style of each model in the throughput figure: (label, linestyle, linewidth, marker)
MODEL_STYLES = {
    "serving": ("serving model", "-", 2.6, None),
    "roofline": ("k3lab decode roofline (upper bound)", (0, (6, 2)), 1.2, None),
    "roofline_spec": ("roofline with speculative verification (all rows accepted)", ":", 1.2, None),
    "silicon": ("aiconfigurator silicon (measured kernels)", "-.", 1.0, "."),
    "sol": ("aiconfigurator speed-of-light (datasheets)", (0, (1, 1, 1, 1, 4, 1)), 1.0, "x"),
}
#: a text label's backing, so it reads over the curves
LABEL_BOX = {"facecolor": "white", "alpha": 0.6, "lw": 0, "pad": 1}
#: the serving model's line where its band is not validated for the family (no shading)
SERVING_UNVALIDATED = (0, (3, 1.5))


def _aic_label(gpu: str, n: int, tp: int, pp: int) -> str:
    """k3lab's label of an aiconfigurator configuration (``16×B200 TP8×PP2``; it models no DCP)."""
    return f"{n}×{gpu.upper()} TP{tp}" + (f"×PP{pp}" if pp > 1 else "")


def _draw_aic(ax, aic) -> set:
    """aiconfigurator's curves, coloured by deployment; where one deployment was swept at several
    inter-node bandwidths the curve's end says which (Gb/s per GPU). → labels drawn."""
    from . import deployment_color

    drawn = set()
    nets = aic.groupby(["gpu", "num_gpus", "tp", "pp", "mode"])["scale_out_gbit_s_per_gpu"].nunique()
    for key, g in aic.groupby(["gpu", "num_gpus", "tp", "pp", "scale_out_gbit_s_per_gpu", "mode"], sort=False):
        gpu, n, tp, pp, net, mode = key
        label = _aic_label(gpu, n, tp, pp)
        _, ls, lw, mk = MODEL_STYLES["silicon" if mode == "silicon" else "sol"]
        g = g.sort_values("concurrency")
        ax.plot(g["concurrency"], g["tok_s"], linestyle=ls, lw=lw, marker=mk, ms=4, color=deployment_color(label))
        if nets[(gpu, n, tp, pp, mode)] > 1:
            ax.annotate(f"{net:g} Gb/s/GPU", (g["concurrency"].iloc[-1], g["tok_s"].iloc[-1]), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=6.5, color=deployment_color(label), bbox=LABEL_BOX)
        drawn.add(label)
    return drawn


def _draw_serving(ax, serving) -> tuple[list, list, bool]:
    """The serving model's curves: thick, solid and shaded by the validated band; thick dashed
    without a band where the family's decode speed is not validated; a bar at the admission
    limit. A second model label (e.g. with DSpark) gets round markers. → (deployment labels,
    distinct model labels, whether a curve was not validated)."""
    from . import deployment_color

    deps, names, unvalidated = [], [], False
    for label, dep, pts in serving:
        pts = sorted(pts)
        col = deployment_color(dep)
        names += [label] if label not in names else []
        xs, ys = [q[0] for q in pts], [q[1] for q in pts]
        lo, hi = [q[2] for q in pts], [q[3] for q in pts]
        validated = all(v == v for v in lo + hi)
        unvalidated |= not validated
        ax.plot(xs, ys, linestyle="-" if validated else SERVING_UNVALIDATED, lw=MODEL_STYLES["serving"][2], color=col,
                marker=(None, "o", "s")[min(names.index(label), 2)], ms=4, alpha=0.9, zorder=3)
        ax.plot(xs[-1:], ys[-1:], "|", color=col, ms=12, mew=2, zorder=3)
        if validated:
            ax.fill_between(xs, lo, hi, color=col, alpha=0.16, lw=0, zorder=2)
        deps += [] if dep in deps else [dep]
    return deps, names, unvalidated


def _by_gpu(labels: list) -> list:
    """Deployment labels grouped by GPU in the palette's order (first appearance within a GPU)."""
    from . import GPU_COLORS

    order = list(GPU_COLORS)

    def gpu_rank(label):
        g = next((g for g in order if f"×{g.upper()} " in f"{label} "), None)
        return order.index(g) if g else len(order)

    return sorted(labels, key=lambda lab: (gpu_rank(lab), labels.index(lab)))


def _draw_article(ax, measured) -> tuple[list, int | None]:
    """The article's table rows as stars in their deployment's colour, each labelled; a point
    derived from a row (952 / 1.18) is no measurement and is left out. → (labels, the
    concurrency drawn where the article states none, or None)."""
    from . import deployment_color

    table = measured[measured["point"] == measured["config"]]
    for _, m in table.iterrows():
        ax.plot(m["concurrency"], m["tok_s"], "*", ms=17, mec="k", mew=0.8, zorder=6,
                color=deployment_color(m["label"]))
        ax.annotate(f"{m['tok_s']:,.0f} (article" + (", c not stated)" if m["concurrency_assumed"] else ")"),
                    (m["concurrency"], m["tok_s"]), textcoords="offset points", xytext=(-11, 0), fontsize=8,
                    ha="right", va="center", zorder=6, bbox=LABEL_BOX)
    assumed = table[table["concurrency_assumed"].astype(bool)]["concurrency"]
    return list(dict.fromkeys(table["label"])), (int(assumed.iloc[0]) if len(assumed) else None)


def _legends(ax, deps: list, names: list, unvalidated: bool, used: set, assumed_c: int | None) -> None:
    """Two compact legends: the deployments (colour, upper left) and the models (line style,
    lower right), each entry once."""
    from matplotlib.lines import Line2D

    from . import deployment_color

    rows = int(roofline.spec_params()["tokens_per_request_step"])
    styles = {**MODEL_STYLES, "roofline_spec": (f"roofline with speculative verification ({rows} rows, all accepted)",
                                                *MODEL_STYLES["roofline_spec"][1:])}
    width = MODEL_STYLES["serving"][2]
    models = [Line2D([], [], color="0.25", lw=width, marker=(None, "o", "s")[min(i, 2)],
                     label=f"{n}; shaded: validated band") for i, n in enumerate(names)]
    if unvalidated:
        models.append(Line2D([], [], color="0.25", lw=width, linestyle=SERVING_UNVALIDATED,
                             label="serving model where not validated for the GPU (no band)"))
    models += [Line2D([], [], color="0.25", linestyle=ls, lw=lw, marker=mk, label=lab)
               for k, (lab, ls, lw, mk) in styles.items() if k in used]
    models.append(Line2D([], [], marker="*", ls="", ms=12, color="0.5", mec="k", label="the article's table"
                         + (f" (at c{assumed_c} where it states no concurrency)" if assumed_c else "")))
    first = ax.legend(handles=[Line2D([], [], color=deployment_color(d), lw=6, label=d) for d in _by_gpu(deps)],
                      title="deployment (colour)", fontsize=7.5, title_fontsize=8, loc="upper left", framealpha=0.92)
    ax.add_artist(first)
    ax.legend(handles=models, title="model (line style)", fontsize=7.5, title_fontsize=8, loc="lower right",
              framealpha=0.92)


def throughput_figure(curves, measured, aic=None, serving=None,
                      title: str = "Output tok/s per deployment against concurrency: models and the article"):
    """Output tok/s of the whole deployment against concurrency (log-log). Colour = deployment
    (:func:`k3lab.figures.deployment_color`), line style = model (:data:`MODEL_STYLES`): k3lab's
    decode roofline (``curves``, :func:`k3lab.roofline.curve` frames: an upper bound, plain and
    with speculative verification), aiconfigurator (``aic``, :func:`k3lab.crosscheck.sweep`
    frames, silicon and speed-of-light modes) and the serving model (``serving``: list of (model
    label, deployment label, [(concurrency, tok/s, low, high)]) with low / high NaN where not
    validated, e.g. :func:`k3lab.findings.field.serving_curves`). The article's table rows
    (``measured``, :func:`k3lab.roofline.bounds_for_measured`) are stars in their deployment's
    colour, labelled "c not stated" where the article gives no concurrency; points the article
    gives only relative to a row (derived, e.g. 952 / 1.18) are left out. Two legends:
    deployments, models."""
    import matplotlib.pyplot as plt

    from . import concurrency_axis, deployment_color

    fig, ax = plt.subplots(figsize=(10.5, 6.2))
    deps = []
    for _, g in curves.groupby("deployment", sort=False):
        label = g["label"].iloc[0]
        for key, column in (("roofline", "tok_s_bound_plain"), ("roofline_spec", "tok_s_bound_spec")):
            _, ls, lw, _ = MODEL_STYLES[key]
            ax.plot(g["concurrency"], g[column], linestyle=ls, lw=lw, color=deployment_color(label))
        deps.append(label)
    used = {"roofline", "roofline_spec"} if len(curves) else set()
    if aic is not None and len(aic):
        deps += sorted(_draw_aic(ax, aic) - set(deps))
        used |= {"silicon" if m == "silicon" else "sol" for m in set(aic["mode"])}
    names, unvalidated = [], False
    if serving:
        got, names, unvalidated = _draw_serving(ax, serving)
        deps += [d for d in got if d not in deps]
    art, assumed_c = _draw_article(ax, measured)
    deps += [d for d in art if d not in deps]
    concurrency_axis(ax, list(curves["concurrency"]) + [c for *_, pts in (serving or []) for c, *_ in pts])
    ax.set_xlim(right=ax.get_xlim()[1] * 1.45)  # room for the bandwidth labels at the curves' ends
    ax.set_yscale("log")
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel("output tok/s per deployment (log)")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3, which="both")
    _legends(ax, deps, names, unvalidated, used, assumed_c)
    fig.text(0.5, 0.005, "Models, not measurements. A bar ends a serving-model curve where sglang's pools stop "
             "admitting requests; aiconfigurator models no DCP, so its B300 is TP8 alone.", ha="center", fontsize=7.5)
    fig.tight_layout(rect=(0, 0.025, 1, 1))
    return fig


def _no_price(ax, y: float, h: float) -> None:
    """A hatched "no price" marker at the left of row ``y`` (``h`` its height in data units)."""
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import blended_transform_factory

    at = blended_transform_factory(ax.transAxes, ax.transData)
    ax.add_patch(Rectangle((0, y - h / 2), 0.025, h, transform=at, hatch="////", facecolor="white",
                           edgecolor="#9e9e9e", linewidth=0.6))
    ax.text(0.03, y, "no price", transform=at, va="center", fontsize=7, color="#757575", style="italic")


def _slot_text(art: float | None, mod, not_validated: bool) -> str:
    """The values of one (source, deployment) slot, in $/M output tokens."""
    parts = [f"article \\${art:,.2f}" if art is not None else "article —"]
    if mod is not None:
        parts.append(f"model \\${mod.usd_per_million_tokens:,.2f} (\\${mod.usd_per_million_tokens_low:,.2f}–"
                     f"\\${mod.usd_per_million_tokens_high:,.2f})" + ("" if mod.in_domain else " *"))
    elif not_validated:
        parts.append("model not validated")
    return " · ".join(parts)


def _draw_slot(ax, tx, y: float, col: str, art: float | None, mod, not_validated: bool) -> list:
    """One (source, deployment) slot at row ``y``: the article's $/M hollow, the model's filled
    with its band, "not validated" beside the article's where the model judges nothing, and the
    values in the text column ``tx``. → the $/M values drawn."""
    vals = []
    if art is not None:
        ax.plot([art], [y], "o", ms=7, mfc="white", mec=col, mew=1.6, zorder=4)
        vals.append(art)
    if mod is not None:
        lo, mid, hi = mod.usd_per_million_tokens_low, mod.usd_per_million_tokens, mod.usd_per_million_tokens_high
        ax.errorbar([mid], [y], xerr=[[mid - lo], [hi - mid]], fmt="o", ms=7, color=col, ecolor=col, elinewidth=1.6,
                    capsize=3, zorder=5)
        vals += [lo, hi]
    if not_validated and art is not None:
        ax.annotate("serving model: not validated", (art, y), xytext=(8, 0), textcoords="offset points", va="center",
                    fontsize=7, color="#6d6d6d", style="italic")
    tx.text(0, y, _slot_text(art, mod, not_validated), va="center", fontsize=7,
            color="#6d6d6d" if not_validated else "#222")
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
    vals = []
    for i, tier in enumerate(tiers):
        for j, cfg in enumerate(configs):
            y = i + (j - (len(configs) - 1) / 2) * slot
            a, m = art.get((tier, cfg)), fit.get((tier, cfg))
            if a is None and m is None:
                _no_price(ax, y, slot * 0.8)
                tx.text(0, y, "no price", va="center", fontsize=7, color="#757575", style="italic")
            else:
                vals += _draw_slot(ax, tx, y, deployment_color(cfg), a, m, cfg in unvalidated)
    ax.set_xscale("log")
    ax.set_xlim(min(vals) / 1.5, max(vals) * (4 if unvalidated else 1.5))  # room for "not validated"
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel("\\$ per million output tokens (log scale; lower is better)", fontsize=9)
    ax.grid(axis="x", alpha=0.3, which="both")
    ax.set_yticks(range(len(tiers)), [f"{t}\n({str(kinds.get(t, '')).replace('_', ' ')})" if t != "override"
                                      else "your prices\n(the run's parameter)" for t in tiers], fontsize=8)
    for i in range(1, len(tiers)):
        ax.axhline(i - 0.5, color="#e0e0e0", lw=0.8)
    ax.set_ylim(len(tiers) - 0.5, -0.5)
    tx.axis("off")
    tx.set_title("\\$/M output tokens: article" + (" · serving model (band)" if mod is not None else ""),
                 fontsize=8.5, loc="left")
    notes = _perf_legend(fig, configs, mod)
    fig.suptitle("\\$ per million output tokens under each price source (\\$/GPU-hour, data/prices.yaml): the article's "
                 "self-reported throughput" + (" beside the serving model's" if mod is not None else "")
                 + (f"\n{notes}" if notes else ""), fontsize=10)
    fig.tight_layout(rect=(0, 0.75 / fig_h, 1, 1))
    return fig


def power_figure(tiers=("article", "inferencex_3yr_rental"), pue: float = 1.3,
                 a_id: str = "mi355x_tp8", b_id: str = "b300_tp8_dcp"):
    """perf/$ vs electricity price for two configs under a few price tiers (board power from
    data/hardware.yaml × PUE), with the breakeven $/kWh marked; each config in its deployment's
    colour."""
    import matplotlib.pyplot as plt
    import numpy as np

    from . import deployment_color

    lo, hi = prices.electricity_assumptions()["usd_per_kwh_range"]
    table = article_table()
    fig, axes = plt.subplots(1, len(tiers), figsize=(5.5 * len(tiers), 3.8), squeeze=False)
    be = prices.power_breakevens(a_id, b_id, [pue])
    for ax, tier in zip(axes[0], tiers):
        k_star = float(be[be["tier"] == tier]["breakeven_usd_per_kwh"].iloc[0])
        top = max(hi, k_star * 1.15) if np.isfinite(k_star) else hi
        ks = np.linspace(lo, top, 121)
        for cid in (a_id, b_id):
            ax.plot(ks, prices.perf_per_dollar_with_power(cid, prices.price(table[cid].gpu, tier), pue, ks),
                    label=table[cid].label, color=deployment_color(table[cid].label))
        if np.isfinite(k_star):
            ax.axvline(k_star, color="k", ls="--", lw=1)
            ax.annotate(f"MI355X lead vanishes\nat {k_star:.2f} $/kWh", (k_star, ax.get_ylim()[0]),
                        xytext=(8, 30), textcoords="offset points", ha="left", fontsize=8)
        ax.set_title(f"prices: {tier}, PUE {pue:g} (assumed)", fontsize=10)
        ax.set_xlabel("electricity, $/kWh")
        ax.set_ylabel("tok/s per $/hour")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
