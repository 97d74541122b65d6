"""Figures of finding 4: throughput models against the article's points, perf per dollar by
price source, and what electricity does to the MI355X's lead."""

from __future__ import annotations

from .. import data, prices
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
    s = data.load("serving_model").speculative
    ax.text(0.99, 0.02, f"roofline dotted: with speculative verification ({s.verify_rows_per_request.value} rows, "
            f"accept {s.accept_length_high.value:g}); models, not measurements\n"
            "circle: concurrency from the article; square: assumed c=64", transform=ax.transAxes, ha="right",
            va="bottom", fontsize=7)
    fig.tight_layout()
    return fig


def perf_per_dollar_figure(df):
    """tok/s per $/hour and $/M tokens of the article's configs under each price tier."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    tiers = list(dict.fromkeys(df["tier"]))
    configs = list(dict.fromkeys(df["config"]))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    width = 0.8 / len(configs)
    x = np.arange(len(tiers))
    for metric, ax, title in (("tok_s_per_dollar_hour", axes[0], "tok/s per $/hour (higher is better)"),
                              ("usd_per_million_tokens", axes[1], "$ per million output tokens (lower is better)")):
        for i, cfg in enumerate(configs):
            ys = [df[(df["tier"] == t) & (df["config"] == cfg)][metric] for t in tiers]
            ax.bar(x + (i - (len(configs) - 1) / 2) * width, [float(v.iloc[0]) if len(v) else np.nan for v in ys],
                   width, label=cfg)
        ax.set_xticks(x, [t.replace("_", "\n") for t in tiers], fontsize=7)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_yscale("log")
    axes[1].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes[0].legend(fontsize=8)
    fig.suptitle("The article's self-reported throughputs under each price source ($/GPU-hour, data/prices.yaml)",
                 fontsize=11)
    fig.tight_layout()
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
