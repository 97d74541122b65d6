"""Finding 4, the B200 against the network: claims T23 and T27, judged by public two-node B200
runs on a faster scale-out link than the article's (method ``cited``).

The article puts its 2×8 B200 at 498 tok/s over RoCE v2 at ~195 Gb/s and blames the split:
"the B200 loses tokens to the network purely because the model does not fit on one box" (T23),
and "the MI355X [...] about 7x better than the stranded B200 config" (T27). Public runs of the
same two-node split on a faster link (``data/public_measurements.yaml``, with the link its source
states in ``data/public_links.yaml``) show what the split costs when the
network does not: the B200's tokens per GPU against the article's MI355X, and the 7× at the
public peak. Units: output tok/s per deployment (and per GPU where named), Gb/s, $/GPU-hour.
"""

from __future__ import annotations

from .. import claims, data, roofline
from ..specs import scale_out_link
from ..throughput import article_table, article_workload

#: a public run's prompt may differ from the article's 1,024 tokens by this factor at most
PROMPT_FACTOR = 2.0
#: the concurrencies a throughput peak is read at (the article's MI355X peaked at c64): below, a
#: deployment is latency-bound and says nothing of what the link costs at load
LOADED_CONCURRENCY = 32


def links() -> dict[str, float]:
    """Public measurement source → the Gb/s per node between its two nodes (``data/public_links.yaml``)."""
    return {k: v.gbit_s_per_node.value for k, v in data.load("public_links").links.items()}


def public_runs() -> list:
    """Public two-node 16×B200 throughput runs whose link is known (:func:`links`): output
    tok/s of the whole deployment, no speculative decoding, current and used, prompts within
    :data:`PROMPT_FACTOR` of the article's → measurements of ``data/public_measurements.yaml``,
    highest throughput first."""
    w = article_workload()
    lo, hi = w["input_len_tokens"] / PROMPT_FACTOR, w["input_len_tokens"] * PROMPT_FACTOR
    doc, known = data.load("public_measurements"), links()
    runs = [m for m in doc.measurements
            if m.source in known and m.gpu == "b200" and m.num_gpus == 16 and m.nodes == 2
            and m.metric == "output_tok_s" and m.scope == "deployment" and m.spec.algorithm == "none"
            and m.status == "current" and m.use and m.input_len and lo <= m.input_len <= hi]
    return sorted(runs, key=lambda m: -m.value)


def _layout(m) -> str:
    return f"TP{m.tp}" + (f"×PP{m.pp}" if (m.pp or 1) > 1 else "")


def records() -> list[claims.Record]:
    """T23 (the split, not the network, costs the B200 its tokens) and T27 (7× over the stranded
    B200) against :func:`public_runs`; ``not reproducible here`` without any."""
    t = article_table()
    mi, b2 = t["mi355x_tp8"], t["b200_tp16"]
    runs = public_runs()
    art_link = scale_out_link()["gbit_s"]
    if not runs:
        why = "no public two-node B200 run with a known link in data/public_measurements.yaml"
        return [claims.judge("T23", why, holds=None), claims.judge("T27", why, ceiling=float("inf"))]
    top = runs[0]
    gbit = links()
    fast = " / ".join(f"{gbit[k]:,.0f} Gb/s per node" for k in sorted({m.source for m in runs}))
    mi_gpu, top_gpu = mi.tok_s / mi.num_gpus, top.value / top.num_gpus
    share = roofline.comm_share(roofline.deployments()["b200_tp16"], 64)["comm_fraction_of_step"]
    loaded = [m for m in runs if m.concurrency >= LOADED_CONCURRENCY] or runs[:1]
    listing = "; ".join(f"{_layout(m)} c{m.concurrency} {m.value:,.0f} ({m.value / b2.tok_s:.2f}x)" for m in loaded)
    where = (f"public 16×B200 runs over {fast}, sglang, no speculative decoding, "
             f"{min(m.input_len for m in runs):,}-{max(m.input_len for m in runs):,} in / "
             f"{', '.join(sorted({f'{m.output_len:,}' for m in runs}))} out ({', '.join(sorted({m.source for m in runs}))})")
    out = [claims.judge(
        "T23", f"{where}, at c{LOADED_CONCURRENCY} and above: {listing} output tok/s, against the article's {b2.tok_s:g} over ~{art_link:g} Gb/s; at its "
               f"peak the split B200 serves {top_gpu:,.0f} tok/s per GPU against the article's MI355X {mi_gpu:,.0f} "
               f"(one node)",
        value=f"{top.value / b2.tok_s:.1f}x the article's {b2.tok_s:g} at c{top.concurrency}; {top_gpu:,.0f} vs "
              f"{mi_gpu:,.0f} tok/s per GPU",
        holds=top_gpu < mi_gpu,
        correction=f"two nodes are forced by the size (M11), the lost tokens are not: the same split over "
                   f"{fast} serves {loaded[-1].value / b2.tok_s:.1f}-{top.value / b2.tok_s:.1f}x "
                   f"the article's {b2.tok_s:g} tok/s and as much per GPU as its one-node MI355X; what cost the "
                   "article's B200 its tokens is its ~195 Gb/s link and setup",
        notes=f"not the article's workload ({article_workload()['output_len_tokens']} out) or concurrency: no public run "
              f"matches it; the study's roofline puts communication at {share:.0%} of a TP16 decode step at c64 over "
              f"195 Gb/s per GPU (T13), which a perfect link would remove (at most {1 / (1 - share):.2f}x): it explains "
              "neither the article's 3.82x per-GPU gap (M14) nor the public runs' lead; the serving model is not "
              "validated for the B200 (T3)",
        kind="substantive",
        reply=("our B200s ran over ~195 Gb/s RoCE, as the article says, and on that link it is the split that put the "
               "decode on the network; the public runs used another workload and concurrency",
               "the sentence says 'purely because the model does not fit on one box', but the same two-node split on a "
               "faster link loses nothing per GPU to the one-node MI355X: what cost the tokens is the link (and the "
               "setup), which a buyer chooses; the workloads differ, so the verdict is 'inconsistent with public "
               "measurements', not 'wrong'"))]
    mi_ppd = mi.tok_s / (mi.num_gpus * mi.usd_per_gpu_hour)
    b2_ppd = top.value / (b2.num_gpus * b2.usd_per_gpu_hour)
    ceiling = mi_ppd / b2_ppd
    out.append(claims.judge(
        "T27", f"the article's MI355X {mi.tok_s:g} tok/s at ${mi.usd_per_gpu_hour:.2f} = {mi_ppd:.1f} tok/s per $/hour; "
               f"16×B200 at the public peak ({_layout(top)} c{top.concurrency}, {top.value:,.0f} tok/s, {top.id}) at the "
               f"article's ${b2.usd_per_gpu_hour:.2f} = {b2_ppd:.1f}: the MI355X is {ceiling:.2f}x ahead at most (the "
               "public sweep stops there, so the B200's peak is at least that)",
        value=round(ceiling, 2), ceiling=ceiling,
        correction=f"against two B200 nodes on a {fast} link the article's own MI355X and prices give "
                   f"{ceiling:.1f}x, not 7x: the 7x is what the article's ~195 Gb/s link leaves, not what memory does",
        notes=f"the article's 7x (T8: 6.5x exact) prices its own 498; {where}; longer outputs than the article's 400 "
              "favour throughput somewhat, far from a factor of 5",
        kind="substantive",
        reply=("'stranded' is the word: the 7x is against the B200 as it ran on our link, which the table shows",
               "the article calls the handicap 'structural, not a software one' and puts it on memory; two B200 nodes "
               f"on a faster link leave the MI355X {ceiling:.1f}x ahead at the article's own prices, so the 7x is the "
               "network's, a choice the reader makes, not the B200's")))
    return out
