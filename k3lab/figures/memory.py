"""Figures of finding 1: per-GPU memory of each layout (weights by group, reserve, pools)."""

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
