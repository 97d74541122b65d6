"""Figures of finding 3: what padding 12 → 16 heads costs on this CPU, and the TTFT model."""

from __future__ import annotations


def padding_cost_figure(bench):
    """time(16 padded) / time(12) per sequence length, measured, against the FLOP ratio."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(bench.seq_len, bench.ratio_measured, "o-", label="measured (median)")
    ax.plot(bench.seq_len, bench.ratio_min, "s--", alpha=0.6, label="measured (fastest run)")
    ax.plot(bench.seq_len, bench.ratio_flops_plus_copy, ":", color="gray", label="16/12 + pad-copy time / 12-head time")
    ax.axhline(16 / 12, color="k", lw=1, label="FLOP count 16/12 = 1.333")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length S (tokens)")
    ax.set_ylabel("time(16 padded) / time(12)")
    ax.set_ylim(0.8, 2.2)
    ax.set_title("Zero-padding 12 -> 16 heads, one MLA layer on this CPU")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


#: a legend below its panel, so it covers no curve or line (the "~13k tok/s" line runs along the top)
BELOW = {"fontsize": 8, "loc": "upper center", "bbox_to_anchor": (0.5, -0.16), "ncol": 2, "frameon": False}


def ttft_figure(art, before, after: dict, lens):
    """TTFT (s) and average prefill tok/s (one TP8 instance) against context (k tokens) for the
    model fitted to the article (before: Triton; after: the padded ASM kernel for the article's
    speed-up range) and its points; each panel's legend below it."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import StrMethodFormatter

    lens = np.asarray(lens)
    S = art.context_tokens
    lo, hi = after[art.speedup_low], after[art.speedup_high]
    spd = f"{art.speedup_low:g}-{art.speedup_high:g}x"
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 5.4))
    a1.plot(lens / 1e3, [before.ttft_s(s) for s in lens], color="tab:red",
            label=f"before: Triton fallback (fit to {art.ttft_before_s:g} s)")
    a1.fill_between(lens / 1e3, [hi.ttft_s(s) for s in lens], [lo.ttft_s(s) for s in lens], color="tab:green",
                    alpha=0.3, label=f"after: AITER ASM on {lo.kernel_heads} heads ({spd} at {S / 1e3:g}k)")
    a1.plot(S / 1e3, art.ttft_before_s, "o", color="tab:red", label=f"article: MI355X {art.ttft_before_s:g} s")
    a1.plot(S / 1e3, art.ttft_b300_s, "D", color="tab:blue", ms=8, label=f"article: B300 {art.ttft_b300_s:g} s")
    a1.set_xlabel("context length (k tokens)")
    a1.set_ylabel("TTFT, cold prefill (s)")
    a1.set_title("Time to first token (model fitted to the article)")
    a1.grid(alpha=0.3)
    a1.legend(**BELOW)
    a2.plot(lens / 1e3, [before.tok_s(s) for s in lens], color="tab:red", label="before")
    a2.fill_between(lens / 1e3, [lo.tok_s(s) for s in lens], [hi.tok_s(s) for s in lens], color="tab:green",
                    alpha=0.3, label=f"after ({spd} fits)")
    a2.axhspan(art.tok_s_before_low, art.tok_s_before_high, color="tab:red", alpha=0.1,
               label=f"article: Triton {art.tok_s_before_low / 1e3:g}-{art.tok_s_before_high / 1e3:g}k tok/s")
    a2.axhline(art.tok_s_after, color="tab:green", ls="--", label=f"article: ~{art.tok_s_after / 1e3:g}k tok/s")
    a2.plot(S / 1e3, S / art.ttft_b300_s, "D", color="tab:blue", label=f"B300: {S / 1e3:g}k / {art.ttft_b300_s:g} s")
    a2.set_xlabel("context length (k tokens)")
    a2.set_ylabel("average prefill tok/s (one TP8 instance)")
    a2.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    a2.set_title("Prefill throughput (model fitted to the article)")
    a2.grid(alpha=0.3)
    a2.legend(**BELOW)
    fig.tight_layout()
    return fig
