"""The article's conclusion on perf/$, judged (finding 4): "the direction is hard to argue with" (the
MI355X ahead of the B300 on perf/$) and its size, T20, T21, T22 and T26, under each pair of
independent rental prices (:func:`k3lab.prices.price_pairs`):

- T20: the direction at the article's own throughput, with how thin each pair's margin is (the error
  in the article's self-reported throughput ratio that would reverse its least favourable reading);
- T21: the direction on the serving model at matched interactivity (each node at the same TPOT, across
  the range both reach, :mod:`k3lab.findings.interactivity`), on ``compare``'s own rows through
  :func:`k3lab.decision.decide`, read by latency (:func:`latency_segments`): a refit flows through;
- T26: the ~45%, judged apart from the direction;
- T22: the outlet that "could not independently re-verify" the numbers (a claim about a source).

Split from :mod:`k3lab.findings.conclusions` (audit 3). Units: tok/s per GPU, $/GPU-hour, TPOT ms;
a lead is a fraction.
"""

from __future__ import annotations

import math

from .. import claims, compare, data, decision, prices
from ..throughput import article_table, article_workload
from . import interactivity


def article_per_gpu() -> float:
    """MI355X ÷ B300 tok/s per GPU in the article's table (:data:`k3lab.decision.PAIR`): the price
    ratio below which the MI355X wins perf/$ at the article's own throughput (its break-even)."""
    t = article_table()
    a, b = (t[k] for k in decision.PAIR)
    return (a.tok_s / a.num_gpus) / (b.tok_s / b.num_gpus)


def article_leads() -> list[dict]:
    """At the article's own throughput, the MI355X's perf/$ lead over the B300 under each pair of
    independent rental prices (:func:`k3lab.prices.price_pairs`; no model): the pair with ``lead``
    (a fraction, at the prices' middles) and ``lead_low``, ``lead_high`` (over a range's ends; the
    lead three times for single figures) added."""
    be = article_per_gpu()
    return [{**p, "lead": be / p["ratio"] - 1, "lead_low": be / p["ratio_high"] - 1, "lead_high": be / p["ratio_low"] - 1}
            for p in prices.price_pairs("mi355x", "b300")]


def _pair_text(p: dict, digits: int = 1) -> str:
    """'label $8.60 / $15.00 = 0.573: +5.9%', a range as '$2.95 / $5.00-$7.25 = 0.407-0.590: +2.9% to +49.2%'."""
    usd = lambda lo, hi: f"${lo:.2f}" if lo == hi else f"${lo:.2f}-${hi:.2f}"  # noqa: E731
    r = f"{p['ratio']:.3f}" if not p["is_range"] else f"{p['ratio_low']:.3f}-{p['ratio_high']:.3f}"
    return (f"{p['label']} {usd(p['a_low'], p['a_high'])} / {usd(p['b_low'], p['b_high'])} = {r}: "
            f"{_span([p['lead_low'], p['lead_high']], digits)}")


def _margins(rows: list[dict], per_gpu: float) -> str:
    """How thin T20's readings are: per pair of :func:`article_leads`, the error in the article's own
    MI355X ÷ B300 throughput ratio (``per_gpu``; self-reported, T1 and T2 not checkable here) that
    turns its least favourable reading (a range at the end that favours the B300) → words (no ';'
    inside: the opening cuts a row's sentence at the first one)."""
    def one(p) -> str:
        at = (f", the B300 at ${p['b_low']:.2f}" if p["b_low"] < p["b_high"] else
              f", the MI355X at ${p['a_high']:.2f}" if p["a_low"] < p["a_high"] else "")
        e = 1 - p["ratio_high"] / per_gpu
        return f"{e:.1%} ({p['name']}{at})" if e > 0 else f"none ({p['name']}{at}: already behind)"
    return ("an error in the article's self-reported throughput ratio (its 1.65x) of " + " or ".join(map(one, rows))
            + " reverses the thinnest reading of each pair")


def _price_for_lead(p: dict, lead: float, per_gpu: float) -> tuple[str, float] | None:
    """Where inside a pair's range the MI355X's lead reaches ``lead`` (a fraction): (the GPU priced as
    a range, the price at which it does: the B300 at that price or more, the MI355X at that or less),
    or None when the pair is no range or its range does not reach it."""
    if not p["is_range"] or not p["lead_low"] <= lead <= p["lead_high"]:
        return None
    if p["b_low"] < p["b_high"]:  # lead = per_gpu x b / a - 1
        return "B300", p["a_low"] * (1 + lead) / per_gpu
    return "MI355X", per_gpu * p["b_low"] / (1 + lead)


def _model_leads(b: decision.Breakeven, matched) -> list[tuple]:
    """On the serving model at matched interactivity: per TPOT limit of ``matched``
    (:func:`k3lab.findings.interactivity.matched_breakevens`) and per rental pair of ``b``
    (:func:`k3lab.decision.decide`'s break-even; your own prices left out): (TPOT ms, pair, (low,
    central, high) lead of the MI355X, the two families' bands combined)."""
    return [(ms, p, (be["low"] / p["ratio_high"] - 1, be["ratio"] / p["ratio"] - 1, be["high"] / p["ratio_low"] - 1))
            for ms, be in matched for p in b.sources if p["kind"] != "override"]


#: what a stretch of TPOT limits reads, with ``n`` the number of rental pairs (T21, :func:`latency_segments`)
SEGMENT_WORDS = {"behind": "the B300 is cheaper per token beyond the model's band under {every} pairs of rental prices",
                 "ahead": "the MI355X is cheaper per token beyond the model's band under {every} pairs of rental prices",
                 "close": "too close to call (inside the band under at least one pair)"}


def _ms_span(lo: float, hi: float) -> str:
    return f"{lo:g} ms" if lo == hi else f"{lo:g}-{hi:g} ms"


def _side(be: dict, pairs: list) -> str:
    """'behind' (the MI355X wholly behind under every pair, the band and the price ranges included), 'ahead'
    (wholly ahead under every one) or 'close'."""
    leads = [(be["low"] / p["ratio_high"] - 1, be["high"] / p["ratio_low"] - 1) for p in pairs]
    return ("behind" if all(hi < 0 for _, hi in leads) else "ahead" if all(lo > 0 for lo, _ in leads)
            else "close")


def latency_segments(matched, pairs: list, input_len: int, output_len: int) -> list[tuple[float, float, str]]:
    """T21's readings by latency: [(first TPOT ms, last TPOT ms, :func:`_side`)] over the limits of
    ``matched`` (:func:`k3lab.findings.interactivity.matched`), each boundary between two limits that
    read differently found by reading every whole millisecond between them (so a stretch's ends are
    limits read, never interpolated)."""
    side = {ms: _side(be, pairs) for ms, be in matched}
    levels = sorted(side)
    for a, b in zip(levels, levels[1:]):
        if side[a] != side[b]:
            between = range(math.floor(a) + 1, math.ceil(b))
            side.update({ms: _side(be, pairs) for ms, be in
                         interactivity.matched_breakevens(between, input_len, output_len)})
    out: list[list] = []
    for ms in sorted(side):
        if out and out[-1][2] == side[ms]:
            out[-1][1] = ms
        else:
            out.append([ms, ms, side[ms]])
    return [tuple(x) for x in out]


def _count(leads, of: str = "pair{s} of rental prices") -> str:
    """'ahead under a, behind under b, too close to call under c of n pairs of rental prices' (empty
    parts left out; ``of`` names what was counted, ``{s}`` its plural)."""
    ahead = sum(lo > 0 for lo, _ in leads)
    behind = sum(hi < 0 for _, hi in leads)
    parts = [f"{w} under {n}" for w, n in (("ahead", ahead), ("behind", behind),
                                            ("too close to call", len(leads) - ahead - behind)) if n]
    return ", ".join(parts) + f" of {len(leads)} " + of.format(s="s" if len(leads) > 1 else "")


def _span(leads, digits: int = 1) -> str:
    """'+5.9%' or '-10.2% to +0.6%' (a lead that rounds to zero reads +0%, never -0%)."""
    lo, hi = (round(x, digits + 2) + 0.0 for x in (min(leads), max(leads)))
    return f"{lo:+.{digits}%}" if lo == hi else f"{lo:+.{digits}%} to {hi:+.{digits}%}"


def _not_rental() -> str:
    """The MI355X/B300 prices the one rental rule leaves out (cost models, placeholders), said once."""
    pr = prices.prices()
    out = pr[pr["independent"] & ~pr["rental"] & pr["gpu"].isin(("mi355x", "b300"))]
    ph = list(dict.fromkeys(out[out["quality"] == "placeholder"]["tier"]))
    tiers = list(dict.fromkeys(out["tier"]))
    return (f"left out as not rental prices (k3lab.prices.is_rental_evidence): {', '.join(tiers)}"
            + (f"; their B300 rows are placeholders ({', '.join(ph)}: 'temporary - using 1.2x B200 pricing' in "
               "InferenceX's code), never evidence" if ph else "")) if tiers else "no price left out"


def _unvalidated_pair() -> list[tuple[str, str]]:
    """(GPU, why) for each of the article's two GPUs whose serving-model decode speed is not validated."""
    from ..serving import committed
    from ..serving.observations import family_of

    out = []
    for g in ("mi355x", "b300"):
        fam = family_of(g)
        if fam not in committed.fitted_families():
            out.append((g, "no fit"))
            continue
        b = committed.fitted_bands(fam)["decode"]
        if not b.validated:
            out.append((g, f"decode speed not validated on {fam} ({b.why_not})"))
    return out


def throughput_records(d: decision.Decision | None = None) -> list[claims.Record]:
    """T20 (the direction at the article's throughput), T21 (on the serving model), T22 (the outlet)
    and T26 (the ~45%, apart from the direction). ``d``: :func:`k3lab.decision.decide` for Kimi K3
    (computed when None)."""
    d = decision.decide("kimi-k3") if d is None else d
    R = claims.judge
    rows = article_leads()
    if not rows:
        raise data.DataError("data/prices.yaml: no pair of independent rental prices for the MI355X and the B300")
    leads = [(p["lead_low"], p["lead_high"]) for p in rows]
    ends = [x for pt in leads for x in pt]
    per_gpu = article_per_gpu()
    art = {x[0]: x[1] for x in d.article_prices}
    own = art["mi355x"] / art["b300"]
    t26 = claims.get("T26")
    claimed = t26.claimed_numbers[0] / 100
    t_lo = claims.tolerance_interval(t26)[0] / 100
    need = per_gpu / (1 + claimed)
    pairs = "; ".join(_pair_text(p) for p in rows)
    ratios = f"{min(p['ratio_low'] for p in rows):.3f}-{max(p['ratio_high'] for p in rows):.3f}"
    out = [R("T20", f"the article's own throughput (MI355X ÷ B300 per GPU {per_gpu:.3f}: the MI355X wins perf/$ "
                    f"below that price ratio) under each pair of independent rental prices: {pairs}",
             value=f"{_span(ends)} ({_count(leads)})", leads=leads,
             bound=f"break-even price ratio {per_gpu:.3f}: the rental pairs put it at {ratios}, the article's own "
                   f"prices at {own:.3f}; {_margins(rows, per_gpu)}",
             correction=f"at independent rental prices the article's own throughput puts the MI355X {_span(ends, 0)}",
             notes=f"the MI355X wins perf/$ while its price is below {per_gpu:.3f}x the B300's; "
                   f"{sum(p['paired'] for p in rows)} of the {len(rows)} pairs of one source and date, the rest "
                   "cross-source (a kind no source prices both GPUs in); "
                   f"{_not_rental()}; a price given as a range (Ornn's B300 index) pairs as a range of ratios, never "
                   "one end of it; the size of the lead is T26",
             kind="substantive",
             reply=("the direction was the point, and the B300 is the dearer GPU at every price anyone quotes",
                    "it is judged on the article's own throughput at the prices found; where the pairs put the "
                    "MI355X behind, the direction is not 'hard to argue with'"))]
    def reach(p) -> str:
        tol, at = _price_for_lead(p, t_lo, per_gpu), _price_for_lead(p, claimed, per_gpu)
        if tol is None:
            return ""
        side = "or more" if tol[0] == "B300" else "or less"
        return (f" (inside its tolerance with the {tol[0]} at ${tol[1]:.2f} {side}"
                + (f", ~{claimed:.0%} at ${at[1]:.2f}" if at else "") + ")")

    where = " and ".join(f"{_span([p['lead_low'], p['lead_high']], 0)} at {p['name']}{reach(p)}" for p in rows)
    out.append(R("T26", f"the MI355X's lead at the article's own throughput under each pair of rental prices (as T20): "
                        f"{pairs}; 'roughly 45%' needs a price ratio of {need:.3f} ({per_gpu:.3f} / {1 + claimed:.2f})",
                 value=f"{_span(ends)} (claimed ~{claimed:.0%})", values=[(100 * lo, 100 * hi) for lo, hi in leads],
                 undecided=f"~{claimed:.0%} (a quarter either side) needs a price ratio of {need:.3f}, the pairs give {where}: "
                           "it holds at some of the prices found and not at others, by which B300 price is paired",
                 correction=f"~{claimed:.0%} needs the MI355X at {need:.2f}x the B300's price (the article's own prices: "
                            f"{own:.2f}), below every rental pair found ({ratios}), which give {_span(ends, 0)}",
                 notes=f"the article's own prices give {per_gpu / own - 1:.1%} (T7); {_not_rental()}",
                 kind="substantive",
                 reply=("the article asks readers to treat the precise multipliers with care and the direction as solid",
                        f"the short version states 'MI355X wins perf/$ by ~45%' as its headline figure; at the prices "
                        f"found the lead is {_span(ends, 0)}, which care does not cover: the direction is judged apart "
                        "(T20)")))
    b = d.breakeven
    if b is None:  # the serving model's speed is not validated for one of the two GPUs: it decides nothing
        why = "; ".join(f"{g.upper()}: {w}" for g, w in _unvalidated_pair())
        out.append(R("T21", f"the serving model's peaks cannot price the pair: {why}",
                     bound="model: not validated for the pair", leads=[(-1.0, math.inf)],
                     notes="without a validated model on both sides the lead is unknown (recorded as the open "
                           "interval from -100% up): the direction is judged on the article's throughput (T20) only"))
        out.append(R("T22", "the article names no outlet, and none was found in any source searched (2026-12-02); what it "
                            "could not re-verify is judged here: 952 (T1), $2.50 vs $6.00 (T5), 1.65x (T4)",
                     notes="a statement about a source, like M13: live mode cannot check it either"))
        return out
    w = article_workload()
    wi, wo = w["input_len_tokens"], w["output_len_tokens"]
    at = d.comparison.attrs
    same_question = (at["input_len"], at["output_len"]) == (wi, wo) and not d.slo.active
    matched = d.matched if same_question else interactivity.matched(wi, wo)
    if not matched:
        raise data.DataError("data/serving_fit.yaml: the MI355X and B300 nodes reach no common TPOT")
    rows_by = d.comparison.set_index("layout")
    peak_tpot = " and ".join(f"{lay.split()[0].split('x', 1)[1].upper()} {rows_by.loc[lay, 'model_tpot_ms']:.0f} ms"
                             for lay in compare.pair_layouts(d.comparison))
    mrows = _model_leads(b, matched)
    mod = [(lo, hi) for *_, (lo, _, hi) in mrows]
    mid = [m for *_, (_, m, _) in mrows]
    ms = sorted({m for m, _ in matched})
    span = f"TPOT {ms[0]:g}-{ms[-1]:g} ms, {1e3 / ms[-1]:.0f}-{1e3 / ms[0]:.0f} tok/s per user"
    npairs = len({p["label"] for _, p, _ in mrows})
    rent = [p for p in b.sources if p["kind"] != "override"]
    by_latency = latency_segments(matched, rent, wi, wo)
    fastest = interactivity.fastest_tpot(wi, wo)
    slow_gpu, floor_ms = max(fastest.items(), key=lambda kv: kv[1])
    only = [g.upper() for g, t in fastest.items() if t < floor_ms]
    every = "both" if len(rent) == 2 else f"all {len(rent)}"
    said = ", and ".join(f"{SEGMENT_WORDS[c].format(every=every)} at TPOT {_ms_span(lo, hi)}" for lo, hi, c in by_latency)
    out.append(R("T21", f"the serving model at matched interactivity ({b.model_setting.replace(', no DSpark', '')}, "
                        f"{w['input_len_tokens']:,} in / {w['output_len_tokens']:,} out, no DSpark): each node at the "
                        "highest concurrency whose TPOT meets the limit, MI355X ÷ B300 per GPU (the two families' bands "
                        "combined) at "
                        + "; ".join(f"{m:g} ms {be['ratio']:.2f} ({be['low']:.2f}-{be['high']:.2f})" for m, be in matched)
                        + "; the MI355X's lead under each pair of rental prices, per limit: "
                        + "; ".join(f"{m:g} ms {p['label']} {c:+.0%} ({lo:+.0%} to {hi:+.0%})"
                                    for m, p, (lo, c, hi) in mrows),
                 bound=f"model: {_count(mod, 'reading{s} (TPOT limit x rental pair)')} at matched interactivity ({span}, "
                       f"{npairs} pairs; central {_span(mid, 0)})", leads=mod,
                 # audit 5: the peaks' reading beside the matched one, so the sentence gives both ends (above the
                 # B300's peak TPOT it has no more concurrency to give; the MI355X keeps climbing to its own peak)
                 undecided=f"it turns on the latency a renter buys: {said}"
                           + (f" (below {floor_ms:.1f} ms, the {slow_gpu.upper()} node's fastest single request, only the "
                              f"{', '.join(only)} node meets a TPOT limit at all)" if only else "")
                           + f", and with each node at its own peak (TPOT {peak_tpot}) the central break-even "
                             f"{b.model:.2f} ({b.model_low:.2f}-{b.model_high:.2f}) favours the MI355X at every rental "
                             "pair, inside the band",
                 correction="at matched interactivity the serving model puts the MI355X behind the B300 per dollar",
                 notes=f"the article's strongest reading, each side at its own peak (TPOT {peak_tpot}), breaks even at "
                       f"{b.model:.2f} ({b.model_low:.2f}-{b.model_high:.2f}); a renter buys one latency, and at equal "
                       "TPOT the MI355X node runs a smaller batch. No speculative decoding on either side; "
                       "cost_vs_interactivity.png draws the curves. The article calls decode tok/s 'fool's gold' and "
                       "time-to-first-token what a user feels, yet its perf/$ rests on decode throughput, which is what "
                       "this row matches; the serving model's TTFT is not validated for NVIDIA GPUs, so matching TTFT "
                       "is outside its domain (P10, P11 judge the TTFTs)",
                 kind="substantive",
                 reply=("each node at its own peak is how the article benchmarked, and at the peaks the model's central "
                        "estimate favours the MI355X",
                        "a renter buys one latency; at equal TPOT the readings are the model's, so it reads "
                        "'inconsistent with the model', never 'wrong'")))
    out.append(R("T22", "the article names no outlet, and none was found in any source searched (2026-12-02); what it "
                        "could not re-verify is judged here: 952 (T1), $2.50 vs $6.00 (T5), 1.65x (T4)",
                 notes="a statement about a source, like M13: live mode cannot check it either"))
    return out
