"""Figures of finding 2: the verify call per request mix and binding state, the renorm
benchmark (DSpark's speed-up: :func:`k3lab.figures.field.speedup_figure`)."""

from __future__ import annotations

from . import plain_log_ticks

OUTCOME_COLORS = {"ok": "#4caf50", "TypeError": "#ff9800", "NameError": "#e53935"}


def blast_figure(blast, states, state_labels):
    """Request mix × binding state, coloured by what the real verify call did (a cell with no
    result reads "not run", in grey). The binding states head the columns, wrapped to their
    width so no two labels overprint."""
    import textwrap

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10.5, 0.42 * len(blast) + 1.9))
    for i, r in blast.reset_index(drop=True).iterrows():
        for j, s in enumerate(states):
            v = r[s]
            v = "not run" if v is None or v != v or not str(v).strip() else str(v)
            ax.add_patch(plt.Rectangle((j, i), 0.96, 0.9, color=OUTCOME_COLORS.get(v.split()[0], "#9e9e9e")))
            ax.text(j + 0.48, i + 0.45, v, ha="center", va="center", fontsize=9, color="white", weight="bold")
    ax.set_xlim(0, len(states))
    ax.set_ylim(len(blast), 0)
    ax.xaxis.tick_top()
    ax.set_xticks([j + 0.48 for j in range(len(states))],
                  [textwrap.fill(state_labels[s], 24) for s in states], fontsize=8.5)
    ax.set_yticks([i + 0.45 for i in range(len(blast))],
                  [f"{m}  [{p}]" for m, p in zip(blast["request mix"], blast["path"])], fontsize=9)
    ax.tick_params(length=0)
    for sp in ax.spines.values():
        sp.set_visible(False)
    ax.set_title("Real sglang verify call, by request mix [path taken] (rows) and binding state (columns)",
                 fontsize=10.5, pad=8)
    fig.tight_layout()
    return fig


def renorm_bench_figure(bench):
    """Seconds per call of the top-k renorms on this CPU (log scale), one group per k."""
    import matplotlib.pyplot as plt

    series = [(c, lab) for c, lab in (("sort_fix_s", "article's fix (full sort, masked_fill, divide)"),
                                      ("rank_mask_s", "sglang 0.5.23 fallback (rank mask)"),
                                      ("k3lab_s", "k3lab (chunk maxima → pivot, ties kept)"),
                                      ("topk_s", "one torch.topk over whole rows (reference)"),
                                      ("zeros_like_s", "allocating the output alone (the floor)")) if c in bench]
    fig, ax = plt.subplots(figsize=(8.5, 3.8))
    w = 0.8 / len(series)
    x = range(len(bench))
    for n, (col, lab) in enumerate(series):
        ax.bar([i + (n - (len(series) - 1) / 2) * w for i in x], bench[col], w, label=lab)
    ax.set_xticks(list(x), [f"k = {k}".replace(" mixed with unrestricted", "\n+ unrestricted") for k in bench["k"]])
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_ylabel("seconds per call (median, log scale)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    ax.set_title(f"Top-k renorm, {bench['rows'].iloc[0]} rows × {bench['vocab'].iloc[0]:,} {bench['dtype'].iloc[0]}, this CPU")
    fig.tight_layout()
    return fig
