"""Cost at matched interactivity: the article's MI355X and B300 nodes compared where each serves a
user equally fast, not each at its own peak.

At its peak the MI355X node runs 121 requests at a TPOT of about 61 ms and the B300 node 81 at
about 43 ms (the serving model, 1,024 in / 400 out): a renter buys one latency, and at equal latency the two nodes run different batches.
InferenceX plots cost against tokens/s per user (1,000 / TPOT) for that reason. Here:

- :func:`cost_curves`: each pair layout (as ``compare`` lists it: the MI355X under sglang's MI35x
  recipe setting ``SGLANG_AITER_K3_OPT=1``, which the article's 191 GiB implies, the B300 under the state-pool setting that holds a full-context
  request) over the concurrencies a sweep tries, as (tok/s per user, $/M output tokens) with the
  model's band moving both (the figure: :func:`k3lab.figures.field.interactivity_figure`);
- :func:`matched_levels`: TPOT limits spanning the range both nodes reach;
- :func:`matched_breakevens`: at each limit, the MI355X ÷ B300 break-even price ratio on
  ``compare``'s own rows priced under that SLO (:func:`k3lab.compare_answers.breakeven`), which
  T21 meets with every independent price source that prices both GPUs;
- :func:`matched`: the two together, which T21 and the decision box
  (:attr:`k3lab.decision.Decision.matched`) both read.

Units: ms, output tok/s per user (one request) and per GPU, $/GPU-hour, $ per million output tokens.
"""

from __future__ import annotations

import math

from .. import compare, compare_answers, memory, prices
from ..serving.predict import curve
from ..serving.slo import SLO
from ..specs import load_model, parse_layout
from ..throughput import usd_per_million_tokens

PAIR_GPUS = ("mi355x", "b300")
#: how many TPOT limits T21 reads the pair at
LEVELS = 5


def pair_rows(input_len: int, output_len: int, slo: SLO | None = None, kv_dtype: str = "bf16", **kw):
    """``compare``'s rows for the two GPUs at a workload (and SLO; ``kw``: more of
    :func:`k3lab.compare.compare_rows`'s arguments) → (DataFrame, (MI355X layout, B300 layout))."""
    df = compare.compare_rows("kimi-k3", gpus=list(PAIR_GPUS), input_len=input_len, output_len=output_len, slo=slo,
                              kv_dtype=kv_dtype, **kw)
    pair = compare.pair_layouts(df)
    if pair is None:
        raise ValueError("compare lists no MI355X or no B300 node that holds a full-context request")
    return df, pair


def _setting(row) -> tuple:
    return () if row["setting"] == compare.DEFAULT_SETTING else tuple(v.strip() for v in row["setting"].split(","))


def cost_curves(input_len: int, output_len: int, usd_per_gpu_hour: dict, kv_dtype: str = "bf16") -> list[dict]:
    """Per pair layout: dicts layout, label, gpu, band (log), points [(concurrency, TPOT ms,
    tok/s per user, tok/s per GPU, $/M output tokens)] at the GPU's ``usd_per_gpu_hour``, over
    the concurrencies a sweep tries up to what the pools (and the row's state-pool setting) admit."""
    cfg = load_model("kimi-k3")
    df, pair = pair_rows(input_len, output_len, kv_dtype=kv_dtype)
    out = []
    for lay in pair:
        r = df.set_index("layout").loc[lay]
        dep, vs = parse_layout(lay.split(" [")[0]), _setting(r)
        plan = memory.plan(cfg, dep.gpu, dep.num_gpus, dep.tp, kv_dtype=kv_dtype, pp=dep.pp, variants=vs)
        pts = curve(cfg, dep, input_len, output_len, variants=vs, kv_dtype=kv_dtype,
                    max_running=compare.state_pool_cap(plan))
        price = usd_per_gpu_hour[r["gpu"]]
        out.append({"layout": lay, "label": dep.label, "gpu": r["gpu"], "band": pts[0].band,
                    "points": [(p.concurrency, p.tpot_ms, 1e3 / p.tpot_ms, p.output_tok_s / dep.num_gpus,
                                usd_per_million_tokens(p.output_tok_s, dep.num_gpus, price)) for p in pts]})
    return out


def fastest_tpot(input_len: int, output_len: int, kv_dtype: str = "bf16") -> dict[str, float]:
    """Per pair GPU, the fastest TPOT (ms) its node reaches at the workload (:func:`cost_curves`: one
    request at a time): no TPOT limit below it can be met on that GPU."""
    return {c["gpu"]: min(p[1] for p in c["points"])
            for c in cost_curves(input_len, output_len, {g: 1.0 for g in PAIR_GPUS}, kv_dtype=kv_dtype)}


def matched_levels(curves: list[dict], n: int = LEVELS) -> list[float]:
    """``n`` TPOT limits (ms, whole numbers) evenly across the range every curve reaches: from the
    slowest single-request TPOT to the fastest peak TPOT among them; empty when they do not overlap."""
    lo = math.ceil(max(min(p[1] for p in c["points"]) for c in curves))
    hi = math.floor(min(max(p[1] for p in c["points"]) for c in curves))
    if hi < lo:
        return []
    return sorted({round(lo + (hi - lo) * i / (n - 1)) for i in range(n)}) if n > 1 else [lo]


def matched_breakevens(levels, input_len: int, output_len: int, kv_dtype: str = "bf16", **kw) -> list[tuple[float, dict]]:
    """(TPOT limit ms, :func:`k3lab.compare_answers.breakeven` of the pair on ``compare``'s rows
    priced under that limit) for each limit; a limit at which either side has no throughput is left out.
    ``kw``: more of :func:`k3lab.compare.compare_rows`'s arguments (the decision's own)."""
    out = []
    for ms in levels:
        df, pair = pair_rows(input_len, output_len, SLO(max_tpot_ms=float(ms)), kv_dtype, **kw)
        be = compare_answers.breakeven(df, *pair)
        if be is not None and be["low"] is not None:
            out.append((float(ms), be))
    return out


def matched(input_len: int, output_len: int, kv_dtype: str = "bf16", n: int = LEVELS, **kw) -> list[tuple[float, dict]]:
    """The pair's break-even with both nodes at the same TPOT: :func:`matched_breakevens` at ``n``
    limits across the range both reach (:func:`matched_levels` of :func:`cost_curves`), the one
    computation T21 and the decision box (:attr:`k3lab.decision.Decision.matched`) share."""
    levels = matched_levels(cost_curves(input_len, output_len, {g: 1.0 for g in PAIR_GPUS}, kv_dtype=kv_dtype), n)
    return matched_breakevens(levels, input_len, output_len, kv_dtype, **kw)


def paired_prices(overrides: dict | None = None) -> tuple[str, dict] | None:
    """(source, {gpu: $/GPU-hour}) the figure prices both GPUs at: your own when you price both,
    else the first pair of independent rental prices of one source and date
    (:func:`k3lab.prices.price_pairs`), else the first cross-source pair; None when none does."""
    pairs = prices.price_pairs(*PAIR_GPUS, overrides)
    if not pairs:
        return None
    p = next((p for p in pairs if p["paired"]), pairs[0])
    return p["label"] + ("" if p["kind"] == "override" else " prices"), dict(zip(PAIR_GPUS, (p["a_usd"], p["b_usd"])))


def curves_table(curves: list[dict]):
    """:func:`cost_curves` as a DataFrame: layout, concurrency, tpot_ms, tok_s_per_user,
    tok_s_per_gpu, usd_per_million_tokens, band_factor (e^band; NaN where not validated)."""
    import pandas as pd

    return pd.DataFrame([{"layout": c["layout"], "concurrency": p[0], "tpot_ms": p[1], "tok_s_per_user": p[2],
                          "tok_s_per_gpu": p[3], "usd_per_million_tokens": p[4],
                          "band_factor": math.nan if c["band"] is None else math.exp(c["band"])}
                         for c in curves for p in c["points"]])
