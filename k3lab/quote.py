"""``python -m k3lab quote``: a renter's answer on one screen (at most :data:`MAX_LINES` lines).

For each GPU asked about (default: the ones you priced, else the article's three): the layout
that serves a full-context request cheapest on it (the most output tok/s per GPU among the
layouts that hold it — per GPU the $/GPU-hour is the same for every layout, so that is the
cheapest under any price), the setting it needs, the concurrency it runs at under your latency
target (or its peak), TPOT and TTFT there, and $/M output tokens with the model's band and the
band's slow edge — at your price, or over the independent rental prices of the GPU. Then the
verdict on your prices with its sensitivity (how far the model may be off before it turns), or
the break-even price ratio without them; a setting that changes the answer more than x1.5
(:mod:`k3lab.setting_traps`); and the command that shows the rest.

It is :func:`k3lab.decision.decide` printed short: the same rows as ``compare``, the report's
decision box and notebook 04 (one number per question). Units: $/GPU-hour, $ per million output
tokens, tok/s of output per GPU, ms.
"""

from __future__ import annotations

import math
import sys
import textwrap

from . import compare, compare_answers, compare_view, decision, limits, prices, setting_traps
from .cli_parser import OneLineParser
from .model.capacity import KV_DTYPES
from .serving import slo as slo_mod
from .specs import known_gpus, load_model, parse_layout
from .throughput import usd_per_million_tokens

#: the screen a quote fits in
MAX_LINES = 15
#: ... of at most this many characters
WIDTH = 118
#: the GPUs of the article's table, quoted when you price none
ARTICLE_GPUS = ("mi355x", "b300", "b200")


def best_rows(df, gpus) -> dict:
    """Per GPU of ``gpus``: the row of ``df`` (:func:`k3lab.compare.compare_rows`) that holds the
    request with the most model output tok/s per GPU (a prediction inside the model's validated
    domain first, then the fewest GPUs), or None when no holding row of that GPU has one."""
    out = {}
    for g in gpus:
        sub = df[(df["gpu"] == g) & df["holds"].astype(bool) & df["model_tok_s"].notna()]
        if sub.empty:
            out[g] = None
            continue
        sub = sub.assign(_per=sub["model_tok_s"] / sub["num_gpus"], _out=~sub["model_in_domain"].astype(bool))
        out[g] = sub.sort_values(["_out", "_per", "num_gpus", "layout"], ascending=[True, False, True, True],
                                 kind="stable").iloc[0]
    return out


def _rental_range(df, r) -> tuple[float, float, int] | None:
    """($/M low, $/M high, number of sources) of row ``r`` over the independent rental prices of
    its GPU (the one rental rule, :func:`k3lab.prices.is_rental_evidence`), at the model's central
    throughput; a price given as a range counts with both its ends."""
    rent = prices.rental_prices(r["gpu"]).set_index("tier")
    vals = []
    for t, c in compare.tier_columns(df, compare.MTOK_PREFIX).items():
        if t in rent.index and r[c] == r[c]:  # $/M scales with the price: the range's ends from its middle
            p = rent.loc[t]
            vals += [float(r[c]) * p["usd_low"] / p["usd_per_gpu_hour"], float(r[c]) * p["usd_high"] / p["usd_per_gpu_hour"]]
    return (min(vals), max(vals), len(vals) // 2) if vals else None


def _cells(df, r, overrides: dict) -> list[str]:
    """One GPU's table cells: GPU, layout, concurrency, TPOT, TTFT, tok/s per GPU, $/M (band) at your price or
    over the independent rental prices. Under a latency target the band runs from its fast edge to its slow edge
    (each at the concurrency that still meets the target, shown beside ``c``: "76 (41-121)")."""
    lat = compare_answers.latency(r, prices.OVERRIDE_TIER)
    ttft = "—" if lat["ttft_ms"] is None else f"{lat['ttft_ms'] / 1e3:,.1f} s" + (" " if lat["ttft_validated"] else "†")
    x = r["model_tok_s"] / r["num_gpus"]  # two figures under 10 (attack 6: "0" beside a finite price)
    per = (f"{x:,.0f}" if x >= 10 else f"{x:.2g}") + ("" if r["model_in_domain"] else "*")
    if r["gpu"] in overrides:
        t = prices.OVERRIDE_TIER
        m, lo, hi = (float(r[f"{compare.MTOK_PREFIX}{k}[{t}]"]) for k in ("", "_low", "_high"))
        slow = lat["usd_per_million_tokens_slow"]
        # under a target, a row with no slow edge misses it even at c1 there: said, not left blank (attack 5)
        slo = df.attrs.get("slo") or {}
        # ... unless the limit is on a metric with no band for this GPU (NVIDIA TTFT): then nothing can be said there
        edge = ("" if slow else
                "; slow edge: none, TTFT has no band" if compare_answers.slow_edge_unknown(slo, lat["ttft_validated"]) else
                "; slow edge: misses it" if any(slo.values()) else "")
        # under a target, the band's ends are its edges: each at the concurrency that still meets the target if the
        # model is that far off (newcomer 55: "$3.90-$6.51; c41 $9.04", a band whose top misses the target beside it)
        ends = (lat["usd_per_million_tokens_fast"], slow) if compare_view.has_edges(lat) else (lo, hi)
        band = (f"${ends[0]:,.2f}-${ends[1]:,.2f}{edge}"
                if r["model_in_domain"] else "no band*")   # outside the validated domain the band says nothing
        cost = f"${m:,.2f} ({band}) at ${overrides[r['gpu']]:,.2f}/GPU-h"
    else:
        rng = _rental_range(df, r)
        cost = ("no independent rental price: give yours" if rng is None else
                f"${rng[0]:,.2f}-${rng[1]:,.2f} at {rng[2]} rental price{'s' if rng[2] > 1 else ''}, "
                + (f"model band x{math.exp(_band(r)):.2f}" if r["model_in_domain"] else "no band*"))
    c = f"{lat['concurrency']}" + ("‡" if r.get("model_capped_by") else "") + ("§" if r.get("priced_with") else "")
    if r["gpu"] in overrides and r["model_in_domain"] and compare_view.has_edges(lat):
        c += f" ({lat['slow_concurrency']}-{lat['fast_concurrency']})"   # the band's edges' concurrencies, as its $/M
    # one output token has no decode step, so no TPOT (predict prints "—" too)
    tpot = "—" if df.attrs.get("output_len") == 1 or lat["tpot_ms"] is None else f"{lat['tpot_ms']:,.0f} ms"
    return [r["gpu"].upper(), r["layout"], c, tpot, ttft, per, cost]


def capped_note(rows: dict, target) -> str:
    """One footnote for the rows whose concurrency admission set, not the latency target (the
    ``‡`` of :func:`_cells`): what admits no more (the state-pool setting the row needs, or the
    pools with sglang's defaults) and that its TPOT is already under the target; "" when none is."""
    parts = []
    for r in rows.values():
        if r is None or not r.get("model_capped_by"):
            continue
        how = (f"with {r['priced_with']}" if r.get("priced_with") else
               f"with {r['fits_with']}" if r["model_capped_by"] == "setting" else "with sglang's defaults")
        parts.append(f"{r['gpu'].upper()} c{int(r['model_concurrency'])} is all its pools admit {how}; TPOT "
                     f"{r['model_tpot_ms']:,.0f} ms is already under your {target.label()}")
    return "‡ " + "; ".join(parts) if parts else ""


def _band(r) -> float:
    """The row's decode band as a log factor (its tok/s band's half-width)."""
    return math.log(r["model_tok_s_high"] / r["model_tok_s"])


def _reads(g: str, r: float) -> str:
    """'the MI355X 8% fast': GPU ``g``'s reading ``r`` (how the fit used here predicts its own public decode
    runs, in sample: the median fit ÷ measured of :func:`k3lab.serving.committed.own_runs_reading`) in words."""
    return f"the {g} on the mark" if abs(r - 1) < 0.005 else f"the {g} {abs(r - 1):.0%} {'fast' if r > 1 else 'slow'}"


def band_line(rows: dict) -> str:
    """What each quoted GPU's band rests on (:func:`k3lab.serving.committed.band_evidence`, decode:
    the quote has no DSpark), in words a renter reads without the glossary: its factor and how many
    repositories' runs measured it, then how the fit used here predicts each GPU's own public runs
    (:func:`_reads`: the lean the verdict corrects for). Newcomers 40-47: the refits' misses ("fits
    without a repo's runs too fast on 48 of 55", "too slow on the B300 (x1.74)") read as a lean of the
    fit used here, or as "the B300 is really 1.74x faster"; they say why a band is wide, which
    ``compare`` and docs/serving-model.md give. A row outside the validated domain has no band."""
    from .serving.committed import band_evidence, blind_reading, own_runs_reading
    from .serving.observations import family_of

    parts, readings = [], []   # readings: (GPU, its own runs' reading) for each banded GPU that has runs
    for r in rows.values():
        if r is None:
            continue
        ev = band_evidence(family_of(r["gpu"]))
        if not r["model_in_domain"]:  # the settings' legend says what * is (attack 6: lost with this line)
            continue
        g = r["gpu"].upper()
        if ev["factor"] is None:
            parts.append(f"{g} none ({ev['why_not']})")
            continue
        n = blind_reading(r["gpu"])[2] or len(ev["repositories"])  # the GPU's own runs' repositories, else its family's
        parts.append(f"{g} x{ev['factor']:.2f} ({n} repo{'' if n == 1 else 's'})")
        read = own_runs_reading(r["gpu"])[0]
        readings += [(g, read)] if read is not None else []
    if not parts:  # no GPU quoted has a modelled row: no band to speak of
        return ""
    said = [_reads(g, x) for g, x in readings]
    lean = f"; on the runs it was fitted on it predicts {', '.join(said)}" if said else ""
    # between two GPUs, the quotient compare says ("favours the MI355X by 9%"; newcomer 48: 8% here, 9% there)
    if len(readings) == 2 and abs(readings[0][1] / readings[1][1] - 1) >= 0.005:
        (g1, r1), (g2, r2) = readings
        fav, by = (g1, r1 / r2) if r1 > r2 else (g2, r2 / r1)
        # (newcomers 55-58: "9% in the MI355X's favour" read as an advantage, not the model's bias)
        lean += f" (a {by - 1:.0%} lean toward the {fav})"
    return "band (9 in 10 public runs the model was not fitted on fell inside): " + ", ".join(parts) + lean


def _row_layout(r):
    """A comparison row's deployment and its sglang settings (variant names; none at the defaults)."""
    vs = tuple(v.strip() for v in r["setting"].split(",")) if r["setting"] != compare.DEFAULT_SETTING else ()
    return parse_layout(r["layout"].split(" [")[0]), vs


def _spare(a: dict, r) -> str:
    """'960 tokens to spare …': how little room the state-pool setting the row is priced under leaves
    for the full-context request (its ``priced_with``, else :attr:`k3lab.memory.Plan.best_option`, the
    largest ratio that holds it), at no start-up overhead, k3lab's upper bound on the pools, so that
    a renter sizes it for their runtime."""
    from . import memory

    lay, vs = _row_layout(r)
    cfg, ctx = load_model(a["model"]), a["context_tokens"]
    pool = _pool(a, r)
    if pool is None:
        return ""
    tokens, held = pool
    spare = tokens - ctx * max(1, held)
    if spare >= ctx // 10:  # room for any start-up overhead worth naming: nothing to size
        return ""
    from .findings.startup_logs import implied_init_overhead
    from .specs import GiB

    # newcomer 15: what overhead is realistic? The one the public start-up logs imply, with the setting there
    seen = next((x["gib"] for x in implied_init_overhead(cfg) if x["gib"]), None)
    there = None if seen is None or r.get("priced_with") else memory.plan(
        cfg, lay.gpu, lay.num_gpus, lay.tp, a["mem_fraction"], a["kv_dtype"], pp=lay.pp, context_tokens=ctx,
        variants=vs, init_overhead_bytes=int(round(seen * GiB))).best_option
    value = None if there is None else there.flags.split()[-1] if there.flags.startswith(
        "--mamba-full-memory-ratio") else there.flags
    told = (f"; {value} at a public log's {seen:.1f} GiB" if value else
            f"; a public log implies {seen:.1f} GiB" if seen else "")
    # how little is left is the head's "yours running beside it: none" (newcomer 21); here the overhead it assumes
    return f"at 0 GiB start-up overhead{told}"


def _pool(a: dict, r) -> tuple[int, int] | None:
    """(KV tokens, full-context requests held) of a row under the setting it is priced with: its
    ``priced_with`` (the radix cache off at its --max-running-requests), else, where it needs a
    state-pool setting to hold the request, :attr:`k3lab.memory.Plan.best_option` (the largest
    ratio that holds it), else sglang's defaults (the row's own pool); None where nothing holds it."""
    from . import memory

    lay, vs = _row_layout(r)
    cfg, ctx = load_model(a["model"]), a["context_tokens"]
    if r["fits_with"] == "defaults" and not r.get("priced_with"):
        return int(r["max_kv_tokens"]), int(r["full_context_requests"])
    p = memory.plan(cfg, lay.gpu, lay.num_gpus, lay.tp, a["mem_fraction"], a["kv_dtype"], pp=lay.pp,
                    context_tokens=ctx, variants=vs)
    if r.get("priced_with"):
        m = -(-int(r["model_concurrency"]) // p.replicas)  # the --max-running-requests the row names
        f = memory.fit(cfg, lay, a["mem_fraction"], a["kv_dtype"], context_tokens=ctx, variants=vs,
                       disable_radix_cache=True, max_running_requests=m)
        return f.max_kv_tokens, f.max_full_context_requests
    if p.best_option is not None:
        return p.best_option.max_total_num_tokens, p.best_option.full_context_requests
    return None


def beside(a: dict, r) -> int | None:
    """How many of the user's requests (input + output tokens each) run beside one full-context
    request on a row's deployment under the setting it is priced with (newcomers 15, 20, 21: "holds a
    1M request" and "c121" do not happen at once): the KV tokens one full-context request leaves,
    in whole requests, and never more than the requests the row's pools admit less that one. None
    where nothing holds it."""
    from .serving.predict import admission

    lay, vs = _row_layout(r)
    if lay.num_gpus > lay.tp * lay.pp:  # several replicas: the others run yours whole; not said in one number
        return None
    pool = _pool(a, r)
    if pool is None or pool[1] < 1:
        return None
    n = a["input_len"] + a["output_len"]
    kv = max(0, (pool[0] - a["context_tokens"]) // n)
    if r["fits_with"] == "defaults" and not r.get("priced_with"):
        slots = admission(load_model(a["model"]), lay, n, variants=vs, kv_dtype=a["kv_dtype"],
                          mem_fraction=a["mem_fraction"]).requests
        kv = min(kv, max(0, slots - 1))
    elif r.get("priced_with"):  # its --max-running-requests per replica, one of them the full-context request
        kv = min(kv, max(0, int(r["priced_with"].split()[-1]) - 1))
    return int(kv)


def _with_cache(r, overrides: dict, one_token: bool = False) -> str:
    """'with prefix caching, <fits_with>: c81 at TPOT 43 ms, $7.02/M': what the setting that keeps
    the radix cache gives, for a row priced without it (:func:`k3lab.compare._past_the_cache`)."""
    if not r.get("priced_with"):
        return ""
    usd = overrides.get(r["gpu"])
    cost = ("" if usd is None else
            f", ${usd_per_million_tokens(float(r['cache_tok_s']), int(r['num_gpus']), usd):,.2f}/M")
    keep = "sglang's defaults" if r["fits_with"] == "defaults" else r["fits_with"]
    tpot = "" if not r["cache_tpot_ms"] == r["cache_tpot_ms"] or r["cache_tpot_ms"] is None or one_token else \
        f" at TPOT {r['cache_tpot_ms']:,.0f} ms"
    return f"with prefix caching, {keep}: c{int(r['cache_concurrency'])}{tpot}{cost}"


def quote_verdict(u: dict) -> str:
    """The quote's verdict on your prices (:func:`k3lab.compare_answers.user_verdict` ``u``), in the
    order a renter reads it: the reading at your $/GPU-hour ("too close to call", with its
    :func:`k3lab.compare_view.leaning`); under a latency target, which GPU holds it cheaper with both
    at their band's slow edge (the pick before measuring), with why where its band is the narrower;
    then, where the bands decide nothing, :func:`how_sure` (how much cheaper the centre's pick is:
    1 − its $/M ÷ the runner-up's = 1 − 1/flip, the flip of :func:`k3lab.compare_view.sensitivity`;
    the flip net of the fit's lean; which band allows it) and the runner-up's break-even price; where
    the bands decide, the margin and which GPU the fit favours on their own public runs. The $/M of
    each are the table's, right above; the bands' factors the band line's."""
    be, r = u["breakeven"], u["price_ratio"]
    a, b = compare_view.gpu_name(u["first"]), compare_view.gpu_name(u["second"])
    at = f"At ${u['first_usd_per_gpu_hour']:,.2f} vs ${u['second_usd_per_gpu_hour']:,.2f}/GPU-h"
    if r >= be["ratio"]:  # the runner-up (ranked after it: outside the validated domain) is the cheaper at the centre
        return (f"{at} the {b} is {1 - be['ratio'] / r:.0%} cheaper per token than the {a} at the model's centre, but "
                f"how wrong the model is for this pair is not validated (no band): measure before you commit.")
    need = be["ratio"] / r
    cheaper = 1 - 1 / need   # its $/M below the runner-up's, as a share of the runner-up's (the table's two $/M)
    lean = u.get("fitted_lean")
    # which GPU the fit favours on their own public runs, named the same way whichever is cheaper (newcomer 14:
    # "overrates it" at one workload and "underrates it" at another read as two biases); "but" where that is the
    # cheaper one (its lead is partly the lean)
    spent = ("" if lean is None or abs(lean - 1) < 0.005 else
             f"{', but' if lean > 1 else ', and'} {compare_view.favours(lean, a, b)}")
    if be["low"] is None:
        return (f"{at} the {a} is {cheaper:.0%} cheaper per token than the {b} at the model's centre{spent}; how "
                "wrong the model is for this pair is not validated (no band): measure before you commit.")
    allow = be["ratio"] / be["low"]
    if need > allow:
        out = (f"{at}: the {a}, cheaper per token even at the bands' worst ({cheaper:.0%} cheaper than the {b} at "
               f"the centre{spent}; the bands allow x{allow:.2f}).")
    else:  # newcomer 15: "15% cheaper ..., but the model favours it by 9%": is ~6% the real lead? Said: the
        # flip without that lean (how_sure), with the runner-up's price at which the centre breaks even
        lean_to = compare_view.leaning(u)
        # newcomer 20: "I can't tell you" came first and the pick last: the pick before measuring follows "measure
        # both"; then "how sure" as the question asks it (issue 38: "cheaper unless the model is X% off"); your
        # prices and the two $/M are the table's, right above (the screen's room goes to "how sure")
        out = (f"too close to call{',' + lean_to if lean_to else ''}: measure both."
               f"{compare_view.slow_edges(u, leads=True)} {how_sure(u)}.")
        return out
    out += compare_view.slow_edges(u)
    return out


def how_sure(u: dict) -> str:
    """'How sure: not very: the MI355X is 15% cheaper by the model (8% without the model's lean), a gap inside
    either band; the B300 wins at over 1.83x the MI355X's tok/s/GPU (modelled 1.55x) or costs under $4.65/GPU-h
    ($5.06 without the lean)': the centre's margin (1 − its $/M ÷ the runner-up's = 1 − 1/flip, the
    flip of :func:`k3lab.compare_view.sensitivity`: break-even ÷ your price ratio) said as what a renter
    can measure (newcomers 27-33 graded "how sure" down with nothing to act on): the runner-up's output
    tok/s per GPU over the first's at which your prices break even (your $/GPU-hour ratio inverted;
    $/GPU-hour is per GPU, so per GPU), beside the table's (the model's: the break-even ratio inverted),
    their quotient the flip; which band allows that error, said as a word a manager reads and as the gap
    against the bands ("not very", "a gap inside either band": either GPU's band alone; "somewhat": only
    the wider one's; "fairly": only the two together, their product); the margin net of the fit's lean
    on the two GPUs' own public runs (``fitted_lean``, the first's reading over the runner-up's: 1 − its
    $/M × lean ÷ the runner-up's); and the runner-up's
    $/GPU-hour at which the centre breaks even (your price ÷ the flip), and where the lean leaves the first
    ahead, the same net of it (your price ÷ the flip × lean). For a verdict inside the bands (too close to
    call); no closing full stop."""
    be = u["breakeven"]
    a, b = compare_view.gpu_name(u["first"]), compare_view.gpu_name(u["second"])
    need, allow = be["ratio"] / u["price_ratio"], be["ratio"] / be["low"]
    lean = u.get("fitted_lean")
    # the lead net of the fit's lean on the two GPUs' own public runs (newcomers 15, 30: "net of the known bias, the
    # lead is about X%" is the reading a renter wants, said, not left to them): a's $/M x lean against b's
    ratio = None if lean is None or abs(lean - 1) < 0.005 else lean / need   # a's $/M over b's, net of the lean
    # (newcomer 34: "the model's 9% optimism for it" needed docs/cli.md to decode)
    # (newcomer 39: "8% net of the 9% the model overrates it by on their runs" needed decoding: which GPU, which runs)
    # (newcomers 40-43: "8% net of the model's 9% bias toward it: x1.08/x0.99" took docs to read): the lean in words,
    # its two readings left to the band line above
    # (newcomer 47: "8% after the 9% it favours the MI355X by on fitted runs" could not be decoded): what is
    # corrected, in words; each GPU's reading is the band line's
    # (newcomer 49: the break-even price on the model's basis beside the lead on the corrected one): both bases for
    # each, "corrected" named the same way
    # (newcomers 55-58: "corrected for its fitted runs" hard to say to a manager): the band line's lean, by name
    toward = "without the model's lean"
    leans = ("" if ratio is None else f" ({1 - ratio:.0%} {toward})" if ratio < 1 else
             f" (none {toward}: the {b} leads by {1 - 1 / ratio:.0%})")
    bands = {a: be.get("a_band"), b: be.get("b_band")}
    # why "not very" (newcomers 47-49: "an error in either band" decoded by hand): the gap against the bands
    if None in bands.values():
        word, gap = "not very", f"the bands together allow x{allow:.2f}"
    elif need <= min(bands.values()):
        word, gap = "not very", "a gap inside either band"
    elif need <= max(bands.values()):
        word, gap = "somewhat", f"a gap only the {max(bands, key=bands.get)}'s band covers"
    else:
        word, gap = "fairly", f"a gap only both bands together cover, x{allow:.2f}"
    price = u["second_usd_per_gpu_hour"] / need
    fixed = f" (${price * lean:,.2f} without the lean)" if ratio is not None and ratio < 1 else ""
    # "lead": the centre's (the slow edges' pick, said before it, may be the other GPU: at 8,192/1,024 "the MI355X
    # wins instead" after "the lower-risk pick: the MI355X" read as a contradiction)
    # (newcomers 40-43: "lead ... goes if" read backwards): which GPU is cheaper, then what makes the other win
    return (f"How sure: {word}: the {a} is {1 - 1 / need:.0%} cheaper by the model{leans}, {gap}; the {b} wins at "
            f"over {1 / u['price_ratio']:.2f}x the {a}'s tok/s/GPU (modelled {1 / be['ratio']:.2f}x) or costs "
            f"under ${price:,.2f}/GPU-h{fixed}")


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def quote_lines(d: decision.Decision, gpus=None) -> list[str]:
    """The quote (module docstring) of a decision made with ``include_all`` (what
    :func:`k3lab.decision.decide` makes), at most :data:`MAX_LINES` lines of :data:`WIDTH`."""
    df, a = d.comparison, d.comparison.attrs
    overrides = a.get("overrides") or {}
    gpus = list(gpus or overrides or ARTICLE_GPUS)
    target = d.slo
    # the peak is the prefix-cached setting's (newcomer 16: a looser target came out cheaper than the "peak": a
    # target prices without the cache where it admits too few; the README's key and docs/cli.md say so)
    rows = best_rows(df, gpus)
    # newcomers 15, 20, 21: does a full-context request leave room for mine? Said per GPU beside "holds"
    # each under its row's setting: § where that is the radix-cache-off one (newcomer 23: "B300 110" here against
    # the README's "none of your requests runs beside it" at --mamba-full-memory-ratio 0.795 read as two answers)
    room = [(g, beside(a, r), "§" if r.get("priced_with") else "") for g, r in rows.items() if r is not None]
    room = ", ".join(f"{g.upper()} {'none' if n == 0 else f'{n:,}'}{mark}" for g, n, mark in room if n is not None)
    head = _wrap(f"quote {a['model']} (model, no DSpark): holds a {a['context_tokens']:,}-token request; "
                 f"{a['input_len']:,} in / {a['output_len']:,} out at "
                 # (newcomers 57-58: "cached peak" jargon): what it is, in the head
                 + (target.label() if target.active else "each layout's peak, no target"))
    # its own line, filled where the screen has room (the head stays one line: the measure line outranks it)
    # (newcomer 47: "c 76" beside "MI355X 120" read as two concurrencies with no bridge): which is which
    # (newcomers 49-50: "111§" in the table beside "B300 110§ of yours" here: one counts the held request): c is
    # without one held
    # (newcomers 55-56: "memory still runs MI355X 120 ... (c: without it)" had to be decoded)
    room = [_wrap(f"room beside one held {a['context_tokens']:,}-token request: {room} of your requests at once (c "
                  "above holds none)")] if room else []
    body = [_cells(df, r, overrides) for r in rows.values() if r is not None]
    # the slow edge only where a target sets one (newcomer 47: the header promised one the rows never printed)
    cost_head = (("$/M output (band at your target)" if target.active else "$/M output (band)") if overrides else
                 "$/M output, independent prices")
    heads = ["GPU", "cheapest layout that holds it", "c", "TPOT", "TTFT", "tok/s/GPU", cost_head]
    table = compare_view.fmt_table(heads, body, right={2, 3, 4, 5}) if body else []
    if overrides and any(len(x) > WIDTH for x in table):  # long prices: each row's "at $X/GPU-h" goes (the
        # verdict names them); without your prices there is none to move (attack 6: "at your price" unasked)
        body = [b[:-1] + [b[-1].split(" at $")[0]] for b in body]
        short = cost_head.replace("$/M output", "$/M at your price").replace("your target", "target")
        table = compare_view.fmt_table(heads[:-1] + [short], body, right={2, 3, 4, 5})
    elif any(len(x) > WIDTH for x in table):  # long rental ranges: the same words, shorter (attack 6: 123 wide)
        body = [b[:-1] + [b[-1].replace(" rental price", " price").replace(", model band ", "; band ")] for b in body]
        table = compare_view.fmt_table(heads, body, right={2, 3, 4, 5})
    notes = []   # the band line and the not-priced notes, one entry per sentence: its wrapped lines
    needs = []  # per GPU, its settings in one clause: the recipe's env, then the state-pool flags with why
    traps = []  # the settings that change a row's answer: one its env names is said there, in brief
    for r in rows.values():
        if r is None:
            continue
        lay, vs = _row_layout(r)
        found = setting_traps.traps(load_model(a["model"]), lay, a["input_len"], a["output_len"], vs, a["kv_dtype"],
                                    a["mem_fraction"], target, context_tokens=a["context_tokens"])
        env = ["SGLANG_AITER_K3_OPT=1"] if compare.ARTICLE_AMD_SETTING[0] in r["setting"] else []
        off = next((t for t in found if env and t.how.startswith(f"without {setting_traps.K3_OPT_HOW}")), None)
        if off is not None:  # the default it replaces, in a few words where the setting is named
            env = [f"{env[0]} (without it: {off.brief})"]
        if lay.gpu_spec.vendor == "amd":  # the price is AITER's fast prefill; sglang picks Triton for K3 on ROCm
            env.append("--attention-backend aiter")
        traps += [t.sentence for t in found if t is not off]
        pool = []
        if r["fits_with"] != "defaults" or r.get("priced_with"):
            why = "; ".join(x for x in (_spare(a, r), _with_cache(r, overrides, a["output_len"] == 1)) if x)
            pool = [f"{r.get('priced_with') or r['fits_with']}" + (f" ({why})" if why else "")]
        if env or pool:
            needs.append(f"{r['gpu'].upper()} " + " and ".join(env + pool))
    cap = capped_note(rows, target)
    legend = ((". † TTFT not validated" if any(r is not None and not r["model_ttft_validated"] for r in rows.values())
               else "") + ("; ‡ all its pools admit" if cap else "")
              + ("; § no prefix caching" if any(r is not None and r.get("priced_with") for r in rows.values()) else "")
              # the table's * said where it is read, not only in the band line (attack 6: dropped with it)
              + ("; * outside the model's validated domain" if any(r is not None and not r["model_in_domain"]
                                                                   for r in rows.values()) else ""))
    legend = ". " + legend.lstrip(".; ") if legend else ""
    settings = ([_wrap("settings: " + "; ".join(needs) + legend)] if needs else
                [_wrap(legend[2:])] if legend else [])
    # the ‡ row's whole sentence is the first thing to go when the screen is full (its legend above stays)
    capped = [_wrap(cap)] if cap else []
    band = band_line(rows)
    notes += [_wrap(band)] if band else []
    for g, r in rows.items():
        if r is None:
            held = df[(df["gpu"] == g) & df["holds"].astype(bool)]
            notes.append(_wrap(f"{g.upper()}: " + (f"holds it, not priced: {held['model_note'].iloc[0]}" if len(held)
                                                else "no layout holds it")))
    u = d.yours
    if u is not None:
        verdict = "verdict: " + quote_verdict(u)
        # a GPU outside the validated domain ranks after the two judged, cheaper or not: named where it is cheaper at
        # the centre (attack 6: a third price's $0.66/M left out of the verdict)
        o = next((x.get("cheaper_outside") for x in compare_answers.answers(df) if x["tier"] == prices.OVERRIDE_TIER),
                 None)
        # (not a row the verdict already judges: attack 7 met "8xb300 tp8 is cheaper still" about the B300's own row)
        if o and o["layout"] in (u["first"], u["second"]):
            o = None
        if o:  # the GPU where it is a third one, else its layout (16xmi355x beside 8xmi355x)
            name = compare_view.gpu_name(o["layout"])
            name = (f"The {name}" if name not in (compare_view.gpu_name(u["first"]), compare_view.gpu_name(u["second"]))
                    else o["layout"])
            verdict += (f" {name} is cheaper still at the model's centre (${o['usd_per_million_tokens']:,.2f}/M) but "
                        "outside its validated domain (no band).")
    elif d.breakeven is not None and {"mi355x", "b300"} <= set(gpus):  # a verdict on the GPUs quoted only
        b = d.breakeven
        at = f"at {d.slo.label()}" if d.slo.active else "each at its peak, --max-tpot MS for one latency"
        verdict = (f"verdict: the MI355X is cheaper per token while its $/GPU-hour is below {b.model:.2f}x the B300's "
                   f"(model band {b.model_low:.2f}-{b.model_high:.2f}; {at}); --usd-per-gpu-hour GPU=PRICE (twice) "
                   "judges yours")
    elif {"mi355x", "b300"} <= set(gpus) and rows.get("mi355x") is not None and rows.get("b300") is not None:
        # the pair's break-even at the model's values where one row is outside its validated domain (no band):
        # the centre only, said as such
        be = compare_answers.breakeven(df, rows["mi355x"]["layout"], rows["b300"]["layout"])
        out = [g.upper() for g in ("mi355x", "b300") if not rows[g]["model_in_domain"]]
        at = f"at {d.slo.label()}" if d.slo.active else "each at its peak"
        verdict = ("" if be is None else
                   f"verdict: at the model's centre the MI355X is cheaper per token while its $/GPU-hour is below "
                   f"{be['ratio']:.2f}x the B300's ({at}); no band: {' and '.join(out) or 'a row'} outside the model's "
                   "validated domain, measure before you commit")
    else:
        verdict = ""
    # what the user typed that looks wrong (a node's price as a GPU's) is never dropped and comes first;
    # the rest whole sentences (never cut mid-sentence), filled by importance below
    kept = [head, table, *(_wrap(f"warning: {w}") for w in prices.price_warnings(overrides))]
    trap = [_wrap(f"trap: {t}") for t in traps[:1]]
    said = [_wrap(verdict)] if verdict else []
    # "measure both": the command that measures each GPU's row on a server started with its settings (a
    # renter's next step where the model cannot decide)
    pair = set() if u is None else {parse_layout(u[k].split(" [")[0]).gpu for k in ("first", "second")}
    c = {g: int(r["model_concurrency"]) for g, r in rows.items()   # the verdict's two: "measure both"
         if r is not None and g in pair and r["model_concurrency"] > 0}
    recipe = []
    if u is not None and "measure both" in verdict and len(c) >= 2:
        # pasteable (newcomer 27: "--concurrency 76 (MI355X), 111 (B300)" is not a command): the first GPU's, the
        # other's in a shell comment
        (g1, n1), *others = c.items()
        recipe = [_wrap(f"measure: python -m k3lab bench --base-url URL --input-len {a['input_len']} --output-len "
                        f"{a['output_len']} --concurrency {n1}  # {g1.upper()}; "
                        + ", ".join(f"{g.upper()}: {n}" for g, n in others))]
    # the groups in the order a renter reads them, each kept whole or left out; filled most important first while
    # the screen has room (a short one may still fit where a longer one did not): the verdict, the settings, the
    # trap, the band line and the not-priced notes, the ‡ sentence, the measure line, then the pointer to compare
    more = [["more: python -m k3lab compare (every layout and price source, same flags); nothing here ran on a GPU"]]
    # newcomer 20: with no target the $/M is at each peak's TPOT (61 ms on the MI355X), seen only in a column
    loose = ([] if target.active else
             # (newcomer 48: "cached peak" never defined): what the peak is, here where it is used
             [_wrap("latency: none asked, so each layout runs all the requests its pools admit with prefix caching on, "
                    "at the TPOT its row shows; --max-tpot MS prices each at yours")])
    order = [*room, *settings, *notes, *capped, *said, *trap, *recipe, *loose, *more]
    groups = []
    for g in [*said, *settings, *trap, *notes, *capped, *recipe, *room, *loose, *more]:
        if sum(map(len, kept + groups)) + len(g) <= MAX_LINES:
            groups = [y for y in order if any(y is z for z in groups) or y is g]
    return [x for g in kept + groups for x in g]


def as_json(d: decision.Decision, gpus=None) -> str:
    """The quote as JSON (newcomer 16: a price sweep, scripted): ``asked`` (the comparison's question),
    ``lines`` (:func:`quote_lines`, the screen), ``rows`` (per GPU the row the screen shows, or null:
    :func:`k3lab.compare_view.to_records`) and ``your_prices`` (the verdict's numbers, null without
    your prices on two GPUs)."""
    import pandas as pd

    from . import io

    a = d.comparison.attrs
    gpus = list(gpus or a.get("overrides") or ARTICLE_GPUS)
    rows = best_rows(d.comparison, gpus)
    recs = {g: (None if r is None else compare_view.to_records(pd.DataFrame([r]))[0]) for g, r in rows.items()}
    return io.json_text({"asked": dict(a), "lines": quote_lines(d, gpus), "rows": recs, "your_prices": d.yours},
                        sort_keys=False)


def _parser() -> OneLineParser:
    ap = OneLineParser(prog="python -m k3lab quote", hints=compare_view.hints("quote"),
                       description="A renter's answer on one screen: per GPU the cheapest layout that holds a "
                                   "full-context Kimi K3 request, at your latency target, and the verdict on "
                                   "your prices (the serving MODEL's, nothing measured).")
    ap.add_argument("--usd-per-gpu-hour", action="append", default=[], metavar="GPU=PRICE",
                    help=limits.help_text("your $/GPU-hour for a GPU, repeatable", "usd_per_gpu_hour"))
    ap.add_argument("--gpu", action="append", default=[], metavar="GPU",
                    help="a GPU to quote, repeatable (default: the ones you priced, else mi355x, b300, b200)")
    ap.add_argument("--input-len", type=limits.arg("tokens", "--input-len"), default=None,
                    help=limits.help_text("prompt tokens per request (default 1024)", "tokens"))
    ap.add_argument("--output-len", type=limits.arg("tokens", "--output-len"), default=None,
                    help=limits.help_text("output tokens per request (default 400)", "tokens"))
    slo_mod.add_arguments(ap)
    ap.add_argument("--context", type=limits.arg("tokens", "--context"), default=None,
                    help=limits.help_text("the request length that must fit (default: the model's max)", "tokens"))
    ap.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES)
    ap.add_argument("--json", action="store_true",
                    help="the same answer as JSON: the question, the screen's lines, each GPU's row and the verdict")
    return ap


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab quote [--usd-per-gpu-hour GPU=PRICE …] [--max-tpot MS] …`` → 0, or 2 with one line."""
    args = _parser().parse_args(argv)
    try:
        overrides = compare_view._pairs(args.usd_per_gpu_hour, "--usd-per-gpu-hour", "usd_per_gpu_hour")
        gpus = [g.lower() for g in args.gpu]
        for g in gpus:
            if g not in known_gpus():
                from .spelling import unknown

                raise ValueError(unknown("GPU", g, known_gpus()))
        prices.check_priced_are_asked(args.usd_per_gpu_hour, gpus, "quote")
        compare.check_context_holds(args.context, args.input_len, args.output_len)
        d = decision.decide("kimi-k3", args.context, slo=slo_mod.from_args(args), kv_dtype=args.kv_dtype,
                            overrides=overrides or None, input_len=args.input_len, output_len=args.output_len)
        text = "\n".join(quote_lines(d, gpus or None)) if not args.json else as_json(d, gpus or None)
    except (ValueError, OverflowError) as e:
        print(f"k3lab quote: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    print(text)
    return 0
