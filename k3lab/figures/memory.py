"""Figures of finding 1: per-GPU memory of each layout (weights by group, reserve, pools), and
NVIDIA aiconfigurator's memory picture beside k3lab's."""

from __future__ import annotations

from ..specs import GiB

#: How the figure groups the components of the weights.
WEIGHT_GROUPS = {
    "routed experts": ("routed_experts",),
    "attention (KDA + MLA)": ("kda_attention", "mla_attention"),
    "shared experts, router, latent proj.": ("shared_experts", "router", "latent_projections"),
    "embeddings + lm_head": ("embed_tokens", "lm_head"),
    "dense MLP, norms": ("dense_mlp", "norms_and_attn_res"),
}
COLORS = ["#1f4e79", "#2e86c1", "#85c1e9", "#7d3c98", "#bbbbbb"]


def fit_figure(plans, model: str = "Kimi K3", settings=None):
    """Stacked bars of per-GPU memory (GiB): weights by group, other resident (vision tower,
    draft), reserve, KDA state pool, KV pool, free; a black tick marks each GPU's usable
    capacity; the label says what fits. ``plans``: k3lab.memory.Plan objects; ``settings``: the
    sglang setting each was sized under, one label per plan under its tick (default: its
    variants) — :func:`k3lab.findings.f1_memory.figure_plans` gives both, each GPU as shipped and
    as it must be set."""
    import matplotlib.pyplot as plt

    settings = settings or [", ".join(p.variants) for p in plans]
    fig, ax = plt.subplots(figsize=(max(11, 1.45 * len(plans) + 1.5), 5.9))
    x = range(len(plans))
    bottoms = [0.0] * len(plans)

    def stack(vals, **kw):
        ax.bar(x, vals, bottom=bottoms, width=0.62, edgecolor="white", linewidth=0.5, **kw)
        for i, v in enumerate(vals):
            bottoms[i] += v

    for (name, comps), col in zip(WEIGHT_GROUPS.items(), COLORS):
        stack([sum(p.weights_by_component.get(c, 0) for c in comps) / GiB for p in plans], color=col, label=name)
    stack([p.other_resident_bytes_per_gpu / GiB for p in plans], color="#5d6d7e", label="vision tower / draft")
    stack([p.reserve_bytes_per_gpu / GiB if p.weights_fit else 0 for p in plans], color="#f5b041",
          label="reserve (1 − mem_fraction)")
    stack([p.state_pool_bytes_per_gpu / GiB for p in plans], color="#a9dfbf", label="KDA state pool")
    stack([p.kv_pool_bytes_per_gpu / GiB for p in plans], color="#27ae60", label="KV pool (MLA latent)")
    for i, p in enumerate(plans):
        cap = p.capacity_bytes_per_gpu / GiB
        ax.plot([i - 0.38, i + 0.38], [cap, cap], color="black", linewidth=2.2)
        if p.fits:
            txt, col = f"fits: {p.max_kv_tokens / 1e6:.2f}M tok\n{p.max_full_context_requests}× full context", "#1e8449"
        elif p.weights_fit:
            txt, col = f"weights fit,\n{p.max_kv_tokens / 1e6:.2f}M tok < context", "#b9770e"
        else:
            txt, col = f"weights alone\n{p.weights_bytes_per_gpu / GiB:.0f} > {cap:.0f} GiB", "#c0392b"
        ax.text(i, max(cap, bottoms[i]) + 4, txt, ha="center", va="bottom", fontsize=8.5, color=col)
    ax.set_xticks(list(x))
    ax.set_xticklabels([p.label + (f"\n{_wrap_setting(s)}" if s else "") for p, s in zip(plans, settings)], fontsize=8)
    ax.set_ylabel("memory per GPU (GiB = 2³⁰ B)")
    ax.set_ylim(0, max(max(bottoms), max(p.capacity_bytes_per_gpu / GiB for p in plans)) * 1.25)
    ax.set_title(f"{model} per GPU under sglang 0.5.23 (mem_fraction {plans[0].mem_fraction:g}, "
                 f"{plans[0].kv_dtype} KV; black tick = usable HBM): each layout at sglang's defaults, and beside it "
                 "the setting under which it holds a full-context request", fontsize=9.5)
    ax.legend(fontsize=8, loc="upper right", ncol=2, framealpha=0.95)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _wrap_setting(text: str) -> str:
    """A setting label on lines short enough for one bar (flags break at their spaces)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, 18, break_on_hyphens=False, break_long_words=False))


#: the usable-HBM line: dashed with diamond ends, so it reads apart from a bar top it meets
USABLE_STYLE = (0, (4, 2))


def _usable_line(ax, i: int, cap: float) -> None:
    """The usable HBM (GiB) across layout ``i``'s bars: dashed, white-edged, diamonds at both
    ends (its value goes in the layout's tick label)."""
    import matplotlib.patheffects as pe

    ax.plot([i - 0.42, i + 0.42], [cap, cap], color="black", linewidth=1.8, linestyle=USABLE_STYLE, marker="D", ms=4,
            zorder=4, path_effects=[pe.Stroke(linewidth=3.6, foreground="white"), pe.Normal()])


def aiconfigurator_figure(df, mem_fraction: float | None = None):
    """Two panels per layout, aiconfigurator beside k3lab: weights per GPU (GiB, with the
    usable HBM as a dashed line, its value under the layout) and the MLA tokens the KV pool holds
    (millions, with one 1,048,576-token request as a line). Each panel has its legend below it
    (it covers no bar); a zero is labelled "0" (with why, where the weights do not load), a
    missing estimate "no estimate" — never an empty slot; a line says why no AMD GPU appears
    (aiconfigurator has none). ``df``: ``f1_memory.aiconfigurator_memory_table``;
    ``mem_fraction``: named in the title when given."""
    import math

    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.9))
    x = list(range(len(df)))
    w = 0.38
    tools = (("aic", "#76b900", "aiconfigurator 0.12"), ("k3lab", "#1f4e79", "k3lab (sglang 0.5.23 layout)"))
    panels = ((a1, "weights_GiB", 1.0, "weights per GPU (GiB = 2³⁰ B)"),
              (a2, "max_kv_tokens", 1e-6, "MLA tokens the KV pool holds (millions)"))
    for ax, col, scale, ylabel in panels:
        top = max([v * scale for t, _, _ in tools for v in df[f"{t}_{col}"] if v == v] + [1e-9])
        for k, (tool, color, label) in enumerate(tools):
            xs = [i + (k - 0.5) * w for i in x]
            vals = [float(v) * scale if v == v else math.nan for v in df[f"{tool}_{col}"]]
            ax.bar(xs, [0 if math.isnan(v) else v for v in vals], w, color=color, label=label)
            for xi, v in zip(xs, vals):
                if math.isnan(v):
                    ax.text(xi, top * 0.02, "no\nestimate", ha="center", va="bottom", fontsize=7, color="#555")
                elif v == 0:
                    ax.text(xi, top * 0.01, "0", ha="center", va="bottom", fontsize=8, color="#c0392b")
        ax.set_xticks(x)
        ax.set_xticklabels(df["layout"], fontsize=8.5)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, top * 1.12)
        ax.grid(axis="y", alpha=0.3)
    for i, cap in enumerate(df["usable_GiB"]):
        _usable_line(a1, i, cap)
    a1.set_xticklabels([f"{lay}\nusable {cap:.0f} GiB" for lay, cap in zip(df["layout"], df["usable_GiB"])],
                       fontsize=8.5)
    a1.set_ylim(0, max(a1.get_ylim()[1], float(df["usable_GiB"].max()) * 1.12))
    for i, (wa, wk, cap) in enumerate(zip(df["aic_weights_GiB"], df["k3lab_weights_GiB"], df["usable_GiB"])):
        if min(wa, wk) > cap:
            a2.text(i, a2.get_ylim()[1] * 0.08, "weights do\nnot load", ha="center", va="bottom", fontsize=8,
                    color="#c0392b")
    a2.axhline(2**20 * 1e-6, color="#c0392b", linestyle="--", linewidth=1)
    a1.set_title("weights per GPU", fontsize=10)
    a2.set_title("KV pool" + (f" at mem_fraction {mem_fraction:g}" if mem_fraction is not None else "")
                 + " (same usable HBM for both)", fontsize=10)
    handles, labels = a1.get_legend_handles_labels()
    tick = Line2D([], [], color="black", linewidth=1.8, linestyle=USABLE_STYLE, marker="D", ms=4,
                  label="usable HBM per GPU (GiB)")
    line = Line2D([], [], color="#c0392b", linestyle="--", linewidth=1, label="one 1,048,576-token request")
    for ax, extra, below in ((a1, tick, -0.16), (a2, line, -0.1)):  # a1's tick labels take two lines
        ax.legend([*handles, extra], [*labels, extra.get_label()], fontsize=8, ncol=2, frameon=False,
                  loc="upper center", bbox_to_anchor=(0.5, below))
    fig.text(0.5, 0.01, "No MI355X here: aiconfigurator 0.12 models NVIDIA GPUs only (no AMD kernel data or systems); "
             "k3lab's MI355X layouts are in fit_per_gpu.png.", ha="center", fontsize=8, color="#444")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig
