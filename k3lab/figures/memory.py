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


def fit_figure(plans, model: str = "Kimi K3"):
    """Stacked bars of per-GPU memory (GiB): weights by group, other resident (vision tower,
    draft), reserve, KDA state pool, KV pool, free; a black tick marks each GPU's usable
    capacity; the label says what fits. ``plans``: k3lab.memory.Plan objects."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 5.6))
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
    ax.set_xticklabels([p.label + (f"\n{', '.join(p.variants)}" if p.variants else "") for p in plans], fontsize=8.5)
    ax.set_ylabel("memory per GPU (GiB = 2³⁰ B)")
    ax.set_ylim(0, max(max(bottoms), max(p.capacity_bytes_per_gpu / GiB for p in plans)) * 1.25)
    ax.set_title(f"{model} per GPU under sglang 0.5.23 (mem_fraction {plans[0].mem_fraction:g}, "
                 f"{plans[0].kv_dtype} KV; black tick = usable HBM)", fontsize=10.5)
    ax.legend(fontsize=8, loc="upper right", ncol=2, framealpha=0.95)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def aiconfigurator_figure(df):
    """Two panels per layout, aiconfigurator beside k3lab: weights per GPU (GiB, with the
    usable HBM as a tick) and the MLA tokens the KV pool holds (millions, with the
    1,048,576-token context as a line). ``df``: ``f1_memory.aiconfigurator_memory_table``."""
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    x = range(len(df))
    w = 0.38
    for ax, (aic, ours), scale, ylabel in (
            (a1, ("aic_weights_GiB", "k3lab_weights_GiB"), 1.0, "weights per GPU (GiB)"),
            (a2, ("aic_max_kv_tokens", "k3lab_max_kv_tokens"), 1e-6, "MLA tokens in the KV pool (millions)")):
        ax.bar([i - w / 2 for i in x], df[aic] * scale, w, color="#76b900", label="aiconfigurator 0.12")
        ax.bar([i + w / 2 for i in x], df[ours] * scale, w, color="#1f4e79", label="k3lab (sglang 0.5.23 layout)")
        ax.set_xticks(list(x))
        ax.set_xticklabels(df["layout"], fontsize=8.5)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    for i, cap in enumerate(df["usable_GiB"]):
        a1.plot([i - 0.42, i + 0.42], [cap, cap], color="black", linewidth=2)
    for i, (ta, to) in enumerate(zip(df["aic_max_kv_tokens"], df["k3lab_max_kv_tokens"])):
        if ta == 0 and to == 0:
            a2.text(i, 0.05, "weights do\nnot load", ha="center", va="bottom", fontsize=8, color="#c0392b")
    a2.axhline(2**20 * 1e-6, color="#c0392b", linestyle="--", linewidth=1, label="one 1M-token request")
    a1.set_title("weights (black tick: usable HBM)", fontsize=10)
    a2.set_title("KV pool at mem_fraction 0.9", fontsize=10)
    a2.legend(fontsize=8)
    fig.tight_layout()
    return fig
