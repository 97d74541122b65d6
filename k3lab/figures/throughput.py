"""Figures of finding 4: throughput models against the article's points, perf per dollar by
price source, and what electricity does to the MI355X's lead."""

from __future__ import annotations

from .. import data, prices, roofline
from ..throughput import article_table


def throughput_figure(curves, measured, aic=None, title: str = "Output tok/s per deployment: models vs the article"):
    """Per deployment: k3lab's decode roofline (an upper bound; solid plain, dotted with
    speculative verification), aiconfigurator's estimates (dashed, ``aic`` frame of
    k3lab.crosscheck.sweep), and the article's measured points as markers."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.4))
    colors = {}
    for dep, g in curves.groupby("deployment", sort=False):
        line, = ax.plot(g["concurrency"], g["tok_s_bound_plain"], "-", label=f"{g['label'].iloc[0]}: roofline bound")
        colors[dep] = line.get_color()
        ax.plot(g["concurrency"], g["tok_s_bound_spec"], ":", color=line.get_color())
    if aic is not None:
        for key, g in aic.groupby(["gpu", "num_gpus", "tp", "pp", "scale_out_gbit_s_per_gpu", "mode"], sort=False):
            gpu, n, tp, pp, net, mode = key
            lab = f"aiconfigurator {mode}: {n}×{gpu.upper()} TP{tp}" + (f"×PP{pp}" if pp > 1 else "") + \
                  (f", {net:g} Gb/s/GPU" if n > 8 else "")
            ax.plot(g["concurrency"], g["tok_s"], "--", marker=".", lw=1, label=lab)
    for _, m in measured.iterrows():
        ax.plot(m["concurrency"], m["tok_s"], "o" if not m["concurrency_assumed"] else "s",
                color=colors.get(m["config"], "k"), ms=9, mec="k", zorder=5)
        ax.annotate(f"{m['tok_s']:.0f} (article)", (m["concurrency"], m["tok_s"]), textcoords="offset points",
                    xytext=(6, -12), fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel("output tok/s per deployment")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    s = roofline.spec_params()
    ax.text(0.99, 0.02, f"roofline dotted: with speculative verification ({s['tokens_per_request_step']:g} rows, "
            f"all accepted); models, not measurements\n"
            "circle: concurrency from the article; square: assumed c=64", transform=ax.transAxes, ha="right",
            va="bottom", fontsize=7)
    fig.tight_layout()
    return fig


def perf_per_dollar_figure(df):
    """tok/s per $/hour and $ per million output tokens of the article's configs under each price
    source, as horizontal bars (one row of bars per source, so labels never collide, whatever
    the number of sources or configs). A config a source does not price gets a hatched "no
    price" marker, never an empty slot that reads as zero; each bar carries its value; the $/M
    axis is logarithmic with plain tick labels. ``df``: :func:`k3lab.prices.perf_per_dollar_by_tier`
    (rows only where a price exists; the ``override`` tier is the run's own prices)."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.transforms import blended_transform_factory

    from . import plain_log_ticks

    if df is None or len(df) == 0:
        raise ValueError("perf_per_dollar_figure: no priced config (an empty table)")
    tiers = list(dict.fromkeys(df["tier"]))
    configs = list(dict.fromkeys(df["config"]))
    kinds = {t: str(df[df["tier"] == t]["kind"].iloc[0]).replace("_", " ") for t in tiers}
    colors = dict(zip(configs, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3))
    slot = 0.8 / len(configs)
    fig_h = 1.5 + 0.13 * len(tiers) * len(configs) + 0.2 * len(tiers)
    fig, axes = plt.subplots(1, 2, figsize=(13, fig_h), sharey=True)
    y = np.arange(len(tiers))
    # "\\$" is a literal dollar sign for matplotlib (two bare ones in a string start its math mode)
    panels = (("tok_s_per_dollar_hour", axes[0], "tok/s per \\$/hour (deployment tok/s ÷ deployment \\$/hour)",
               "higher is better", "{:,.1f}"),
              ("usd_per_million_tokens", axes[1], "\\$ per million output tokens (log scale)", "lower is better",
               "\\${:,.2f}"))
    for metric, ax, xlabel, better, fmt in panels:
        missing = blended_transform_factory(ax.transAxes, ax.transData)
        for i, cfg in enumerate(configs):
            ys = y + (i - (len(configs) - 1) / 2) * slot
            got = df[df["config"] == cfg].set_index("tier")[metric]
            vals = [float(got[t]) if t in got.index else np.nan for t in tiers]
            ax.barh(ys, [0 if np.isnan(v) else v for v in vals], slot * 0.92, color=colors[cfg], label=cfg)
            for yi, v in zip(ys, vals):
                if np.isnan(v):
                    ax.add_patch(Rectangle((0, yi - slot * 0.46), 0.03, slot * 0.92, transform=missing, hatch="////",
                                           facecolor="white", edgecolor="#9e9e9e", linewidth=0.6))
                    ax.text(0.035, yi, "no price", transform=missing, va="center", fontsize=7, color="#757575",
                            style="italic")
                else:
                    ax.text(v, yi, " " + fmt.format(v), va="center", fontsize=7)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_title(better, fontsize=9, color="#555")
        ax.grid(axis="x", alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    vals = df["usd_per_million_tokens"].astype(float)
    axes[1].set_xscale("log")
    axes[1].set_xlim(vals.min() / 2.2, vals.max() * 2.5)
    plain_log_ticks(axes[1].xaxis)
    axes[0].set_xlim(0, float(df["tok_s_per_dollar_hour"].max()) * 1.18)
    axes[0].set_yticks(y, [f"{t}\n({kinds[t]})" if t != "override" else "your prices\n(the run's parameter)"
                           for t in tiers], fontsize=8)
    axes[0].invert_yaxis()
    handles = [Patch(color=colors[c], label=c) for c in configs]
    if len(df) < len(tiers) * len(configs):
        handles.append(Patch(facecolor="white", edgecolor="#9e9e9e", hatch="////", label="no price from this source"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle("The article's self-reported throughputs (tok/s per deployment) under each price source "
                 "(\\$/GPU-hour, data/prices.yaml)", fontsize=10.5)
    fig.tight_layout(rect=(0, 0.35 / fig_h, 1, 1))
    return fig


def power_figure(tiers=("article", "inferencex_3yr_rental"), pue: float = 1.3,
                 a_id: str = "mi355x_tp8", b_id: str = "b300_tp8_dcp"):
    """perf/$ vs electricity price for two configs under a few price tiers (board power from
    data/hardware.yaml × PUE), with the breakeven $/kWh marked."""
    import matplotlib.pyplot as plt
    import numpy as np

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
                    label=table[cid].label)
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
