"""How a comparison reads (:mod:`k3lab.compare` computes it): the answer sentences, the fixed-width
text ``python -m k3lab compare`` prints, JSON records, your own prices judged against the
break-even, and the command line itself.

Units as :mod:`k3lab.compare`: GiB per GPU, tokens, requests, $/GPU-hour, $/hour per deployment,
tok/s of output per deployment unless named per GPU, $ per million output tokens.
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap

from . import io, limits, prices
from .cli_parser import OneLineParser
from .compare import HOUR_PREFIX, MODEL_NOTE, MTOK_PREFIX, SORTS, check_context_holds, compare_rows, tier_columns
from .compare_answers import LATENCY_UNKNOWN, USER_TOK_S, answers, user_verdict
from .model.capacity import KV_DTYPES
from .model.sharding import VARIANTS
from .serving import slo
from .specs import known_models, load_model


def answer_line(a: dict, context_tokens: int) -> str:
    """One answer of :func:`answers` as a sentence (the CLI's and the report's wording). A source
    that leaves a contender unpriced names no winner ("MI355X not priced by this source"); a cost
    model's tier says it is not a rental price; a placeholder price is named as such."""
    kind = a["kind"] + ("" if a.get("rental", True) or a["kind"] in ("article", "override") else ", not a rental price")
    yours = a["kind"] == "override"
    head = ("your prices (--usd-per-gpu-hour)" if yours
            else f"{a['tier']} ({kind}{', ' + a['date'] if a['date'] else ''})")
    gaps = a.get("not_priced") or []
    ph = a.get("placeholder") or []
    absent = [g for g in gaps if g not in ph]
    caveat = "; ".join(([f"{', '.join(g.upper() for g in absent)} not priced by {'you' if yours else 'this source'}"] if absent else [])
                       + [f"{g.upper()} priced only by a placeholder, never evidence" for g in ph if g in gaps])
    if a["layout"] is None:
        u = a.get("unpriced")
        return (f"{head}: prices no layout that holds a {context_tokens:,}-token request"
                + ("" if u is None else f" with a throughput to price (cheapest to hold: {u['layout']} at "
                                        f"${u['usd_per_hour']:,.2f}/hour; {u['why']})")
                + (f"; {caveat}" if caveat else ""))
    how = (f" (with {a['priced_with']}: no prefix caching, so that your target's concurrency runs)" if a.get("priced_with")
           else "" if a["fits_with"] == "defaults" else f" (with {a['fits_with']})")
    band = (f", band ${a['usd_per_million_tokens_low']:,.2f}-${a['usd_per_million_tokens_high']:,.2f}"
            + ("" if a.get("model_in_domain", True) else ", outside the model's validated domain")
            if a["priced_by"] == "model" else "")
    if a["priced_by"] == "model" and has_edges(a):   # under a target, the quote's band first (newcomer 57: two bands)
        band = (f", band at your target ${a['usd_per_million_tokens_fast']:,.2f}-${a['usd_per_million_tokens_slow']:,.2f}"
                f", c{a['fast_concurrency']} to c{a['slow_concurrency']}; at c{a['concurrency']} itself"
                f" ${a['usd_per_million_tokens_low']:,.2f}-${a['usd_per_million_tokens_high']:,.2f}")
    priced = (f"{a['layout']}{how}, ${a['usd_per_million_tokens']:,.2f}/M output tokens "
              f"({a['priced_by']}{band}) at ${a['usd_per_hour']:,.2f}/hour" + latency_text(a))
    if gaps and yours:  # the verdict on the user's own pair follows (compare's "your prices:" block)
        return f"{head}: cheapest of the GPUs you priced: {priced}"
    if yours and a["priced_by"] == "model":  # the cheapest at the model's centre: how sure, the band (and the verdict)
        o = a.get("cheaper_outside")
        if o:  # the cheapest inside the validated domain, and the cheaper one outside it, named
            return (f"{head}, cheapest inside the model's validated domain: {priced}; {o['layout']} is cheaper at the "
                    f"model's centre (${o['usd_per_million_tokens']:,.2f}/M) but outside that domain (no band)")
        return f"{head}, cheapest at the model's centre: {priced}"
    if gaps:
        return f"{head}: no winner ({caveat}); cheapest of what it prices: {priced}"
    return f"{head}: {priced}"


def has_edges(a: dict) -> bool:
    """Whether an answer (:func:`k3lab.compare_answers.latency`'s keys) has both band edges under a target."""
    return bool(a.get("usd_per_million_tokens_slow") and a.get("usd_per_million_tokens_fast")
                and a.get("slow_concurrency") and a.get("fast_concurrency"))


def latency_text(a: dict) -> str:
    """``; c68, TPOT 50 ms, TTFT 1,481 ms`` (+ the band's slow edge under an SLO) for a priced row
    (:func:`k3lab.compare_answers.latency`'s keys); empty where no model point was priced."""
    if a.get("latency_unknown"):
        return f"; {a['latency_unknown']}"
    if not a.get("concurrency") or a.get("tpot_ms") is None:
        return ""
    ttft = f"TTFT {a['ttft_ms']:,.0f} ms" + ("" if a.get("ttft_validated") else " (not validated)")
    slow = a.get("usd_per_million_tokens_slow")
    # both band edges: the answer's band says them (answer_line); a slow edge alone, here
    edge = (f"; at the band's slow edge c{a['slow_concurrency']}: ${slow:,.2f}/M"
            if slow and a.get("slow_concurrency") and not has_edges(a) else "")
    return f"; c{a['concurrency']}, TPOT {a['tpot_ms']:,.0f} ms, {ttft}{edge}"


def fit_answer(df) -> str:
    """A comparison (``include_all=True`` for the 8-GPU part) in one sentence: which single 8-GPU
    nodes hold the weights at TP8, and the smallest layouts that also hold a full-context request."""
    a, fits = df.attrs, df[df["fits"]]
    node = df[(df["num_gpus"] == 8) & (df["tp"] == 8) & df["weights_fit"]]
    held = (f"the weights fit one 8-GPU node (TP8) of {', '.join(sorted(node['gpu'].str.upper())) or 'no GPU'}; "
            if a.get("include_all") else "")
    if fits.empty:
        return f"{a['model']}: {held}no candidate layout holds one {a['context_tokens']:,}-token request."
    small = fits[fits["num_gpus"] == fits["num_gpus"].min()]
    more = " …" if len(small) > 4 else ""
    return (f"{a['model']}: {held}the smallest layouts that hold a {a['context_tokens']:,}-token request use "
            f"{small['num_gpus'].iloc[0]} GPUs ({', '.join(small['label'].head(4))}{more}).")


PRICE_FAMILIES = (HOUR_PREFIX, MTOK_PREFIX, MTOK_PREFIX + "_low", MTOK_PREFIX + "_high")


def to_records(df) -> list[dict]:
    """Rows as JSON-ready dicts; each per-tier price family becomes a dict (tier → value; tiers
    without a price are left out)."""
    fams = {f: tier_columns(df, f) for f in PRICE_FAMILIES}
    cols = {c for m in fams.values() for c in m.values()}
    out = []
    for r in df.to_dict("records"):
        d = {k: v for k, v in r.items() if k not in cols and not k.startswith("_")}
        for k, v in d.items():
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
            elif hasattr(v, "item"):
                d[k] = v.item()
        for f, m in fams.items():
            d[f] = {t: float(r[c]) for t, c in m.items() if r[c] == r[c]}
        out.append(d)
    return out


# --------------------------------------------------------------------------- text


def fmt_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.rjust(w) if i in right else c.ljust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _usd(v) -> str:
    return "—" if not v == v else f"{v:,.2f}"


def _int(v) -> str:
    return "—" if not v == v else f"{v:,.0f}"


def header_lines(df) -> list[str]:
    """What a comparison asked, and under which sglang settings (every output starts with these)."""
    a = df.attrs
    sets = (f"sglang settings: {', '.join(a['variants'])} (aiter-* on AMD GPUs only)" if a.get("variants") else
            "sglang settings: sglang 0.5.23's defaults on every GPU; AMD GPUs also with sglang's MI35x recipe "
            "setting SGLANG_AITER_K3_OPT=1 (setting aiter-k3-opt, which the article's 191 GiB implies), side by side"
            if a["model"] == "kimi-k3" else
            "sglang settings: sglang 0.5.23's defaults on every GPU")
    return [f"compare {a['model']}: does one {a['context_tokens']:,}-token request fit (KV {a['kv_dtype']}, "
            f"--mem-fraction-static {a['mem_fraction']:g}), and what does serving cost at "
            f"{a['input_len']:,} in / {a['output_len']:,} out?", sets, slo_line(a.get("slo"))]


def slo_line(slo: dict | None) -> str:
    """Where each layout is priced: at the SLO (and its band's slow edge) or at its peak."""
    from .serving.slo import SLO

    s = SLO(**(slo or {}))
    if not s.active:
        return ("latency: no target, each layout at its peak (the best tok/s its pools admit), with its TPOT and "
                "TTFT; --max-tpot MS prices at a latency")
    return (f"latency: {s.label()} (model means); each layout at the highest concurrency that meets it, and at the "
            "band's slow edge (the model as slow as its band allows)")


def format_table(df) -> str:
    """The comparison as fixed-width text: what was asked, one answer line per price source, the
    layouts (fit, model throughput with its band, the roofline bound), then $/hour and $/M output
    tokens per price source, and what the throughput numbers are."""
    a = df.attrs
    hold = df[df["holds"].astype(bool)] if len(df) else df
    lines = header_lines(df)
    lines.append(f"{a.get('holding', len(hold))} layouts hold the request (of {a.get('candidates', len(df))} GPU × layout × setting "
                 "candidates)" + ("; all candidates listed" if a.get("include_all") else "; --all lists the rest with why")
                 + (f"; sorted by {a['sort']}" if a.get("sort") == "cost" else "")
                 + (f"; first {a['top']}" if a.get("top") else ""))
    lines += ["", "answer: per price source, the layout that holds the request at the lowest $/M output tokens"]
    lines += ["  " + answer_line(x, a["context_tokens"]) for x in answers(df)]
    lines += verdict_lines(user_verdict(df))
    lines.append("")
    if df.empty:
        lines.append("nothing fits: try more GPUs, --kv-dtype fp8, a shorter --context or --all")
        return "\n".join(lines)
    slo = any((a.get("slo") or {}).values())
    heads = ["layout", "GPUs", "weights GiB/GPU", "full-ctx reqs", "fits with",
             "model tok/s", "band", "at c", "TPOT ms", "TTFT ms"] + (["slow edge c", "tok/s"] if slo else []) + [
             "roofline ≤ tok/s"]
    body = []
    for r in df.to_dict("records"):
        w = "—" if not r["weights_gib_per_gpu"] == r["weights_gib_per_gpu"] else f"{r['weights_gib_per_gpu']:.1f}"
        m = r.get("model_tok_s", math.nan)
        band = "—" if not m == m else f"{_int(r['model_tok_s_low'])}-{_int(r['model_tok_s_high'])}"
        # a row priced past its prefix cache shows the setting it is priced with (the answer line's), marked §
        cells = [r["layout"], str(r["num_gpus"]), w, _full_ctx(r),
                 r["priced_with"] + "§" if r.get("priced_with") else r["fits_with"],
                 _int(m) + ("*" if m == m and not r["model_in_domain"] else ""), band, *_latency_cells(r)]
        if slo:
            cells += [str(r["slow_concurrency"]) if r["slow_concurrency"] == r["slow_concurrency"] and
                      r["slow_concurrency"] else "—", _int(r["slow_tok_s"])]
        cells.append(_int(r["roofline_bound_tok_s"]))
        if a.get("include_all"):
            cells.append(r["reason"] or "holds")
        body.append(cells)
    if a.get("include_all"):
        heads.append("reason")
    lines += fmt_table(heads, body, right=set(range(1, len(heads) - (1 if a.get("include_all") else 0))) - {4})
    lines += [textwrap.fill(x, width=110, subsequent_indent="  ") for x in same_setting_notes(df)]
    for r in df.to_dict("records"):
        if r.get("priced_with"):
            lines.append(textwrap.fill(
                f"§ {r['layout']}: no prefix caching with {r['priced_with']}, which holds the request too and "
                f"runs c{int(r['model_concurrency'])}"
                + (" (all its pools admit, ‡)" if r.get("model_capped_by") else ", your target's")
                + f"; with prefix caching, {'its defaults' if r['fits_with'] == 'defaults' else r['fits_with']} "
                  f"admits c{int(r['cache_concurrency'])} (TPOT {r['cache_tpot_ms']:,.0f} ms)", width=110,
                subsequent_indent="  "))
    if "model_capped_by" in df.columns and df["model_capped_by"].astype(bool).any():
        lines.append("‡ at c: every request the pools admit (with the row's fits-with setting, or its § one), below "
                     "your latency target")
    hour, mtok = tier_columns(df, HOUR_PREFIX), tier_columns(df, MTOK_PREFIX)
    used = [t for t in a["tiers"] if df[hour[t]].notna().any()]
    lines += ["", "$/M output tokens at the priced throughput (the model's, or your --tok-s), by price source, "
                  "beside the concurrency and latency it was priced at"]
    rows = [[r["layout"], *_latency_cells(r, priced=True), *(_usd(r[mtok[t]]) for t in used)] for r in df.to_dict("records")]
    named = [_tier_name(t) for t in used]
    lines += fmt_table(["layout", "at c", "TPOT ms", "TTFT ms", *named], rows, right=set(range(1, 4 + len(used))))
    pr_all = prices.prices(a.get("overrides"))
    gpus = list(dict.fromkeys(df["gpu"]))
    grid = {(r.tier, r.gpu): (f"{_usd(r.usd_low)}-{_usd(r.usd_high)}" if r.is_range else _usd(r.usd_per_gpu_hour))
            for r in pr_all.itertuples()}
    lines += ["", "the prices: $/GPU-hour by GPU and source (a deployment costs GPUs × this per hour; a range's $/hour "
                  "and $/M above are at its middle, the $/M band spans its ends)"]
    lines += fmt_table(["GPU", *named], [[g.upper(), *(grid.get((t, g), "—") for t in used)] for g in gpus],
                        right=set(range(1, 1 + len(used))))
    pr = pr_all
    lines += ["", *textwrap.wrap("price sources: " + "; ".join(_tier_name(t) + _tier_kind(pr, t) for t in used),
                                 width=110, subsequent_indent="  "),
              *textwrap.wrap(f"note: {MODEL_NOTE}. * = outside the model's validated domain (its band is not "
                             "validated there); † = TTFT not validated for the GPU's family.", width=110,
                             subsequent_indent="  ")]
    if a.get("tok_s"):
        lines.append("  your --tok-s (output tok/s per GPU) prices: " + ", ".join(
            f"{g.upper()} {v:,.15g}" for g, v in a["tok_s"].items()) + f"; {LATENCY_UNKNOWN}")
    return "\n".join(lines)


def _full_ctx(r) -> str:
    """Full-context requests the row holds under the setting its "fits with" names, and with the
    defaults beside it when that setting is needed (``1 (defaults 0)``)."""
    n, d = r.get("full_context_requests_with_setting", r["full_context_requests"]), r["full_context_requests"]
    return f"{n:,}" if n == d else f"{n:,} (defaults {d:,})"


def same_setting_notes(df) -> list[str]:
    """Why two rows of one layout, with and without the article's AMD setting, print the same: at
    that TP each GPU's slice of an expert's intermediate pads to the same width under both
    alignments, so the weights, pools and speed do not move. One sentence per such pair."""
    out = []
    if "moe_intermediate_padded_per_gpu" not in df.columns:
        return out
    rows = {r["layout"]: r for r in df.to_dict("records")}
    tag = f" [{compare_setting()}]"
    for lay, r in rows.items():
        plain = rows.get(lay.removesuffix(tag)) if lay.endswith(tag) else None
        if plain is None or not r.get("moe_intermediate_per_gpu", 0) > 0:  # NaN (cannot shard) or 0 (not MXFP4)
            continue
        if r["moe_intermediate_padded_per_gpu"] == plain["moe_intermediate_padded_per_gpu"]:
            out.append(f"{lay} and {plain['layout']} are the same row twice: at TP{r['tp']} each GPU holds "
                       f"{int(r['moe_intermediate_per_gpu']):,} of an expert's intermediate, which sglang pads to "
                       f"{int(r['moe_intermediate_padded_per_gpu']):,} with and without {compare_setting(how=True)}, "
                       "so the setting changes nothing there")
    return out


def compare_setting(how: bool = False) -> str:
    """The article's AMD setting: its name in a layout's brackets, or (``how``) how a person sets it."""
    from .setting_traps import K3_OPT, K3_OPT_HOW

    return K3_OPT_HOW if how else K3_OPT


def _latency_cells(r, priced: bool = False) -> list[str]:
    """A row's concurrency, TPOT and TTFT (ms; ``†``: TTFT not validated) where the model priced it;
    ``priced``: where it was priced, so none at the user's --tok-s (the model's point is another rate's)."""
    c = r.get("model_concurrency")
    if (priced and r.get("priced_by") == USER_TOK_S) or not c or c != c or not r.get("model_tpot_ms") == r.get("model_tpot_ms"):
        return ["—", "—", "—"]
    return [str(int(c)) + ("‡" if r.get("model_capped_by") else ""), f"{r['model_tpot_ms']:,.1f}",
            _int(r["model_ttft_ms"]) + (" " if r.get("model_ttft_validated") else "†")]


def verdict_lines(u: dict | None) -> list[str]:
    """:func:`k3lab.compare_answers.user_verdict` as sentences (none without your prices on two GPUs)."""
    if u is None:
        return []
    be = u["breakeven"]
    band = "" if be["low"] is None else f" ({be['low']:.2f}-{be['high']:.2f})"
    f, s = u["first_usd_per_million_tokens"], u["second_usd_per_million_tokens"]
    def m(x, inside=True):  # a row outside the validated domain has no band (attack 6: a band beside "no band")
        if not inside:
            return f"${x[0]:,.2f}/M (no band: outside the validated domain)"
        return f"${x[0]:,.2f}/M" + ("" if not x[1] == x[1] or x[1] == x[2] else f" (band ${x[1]:,.2f}-${x[2]:,.2f})")
    return ["", f"your prices: {u['first']} at ${u['first_usd_per_gpu_hour']:,.2f} against {u['second']} at "
                f"${u['second_usd_per_gpu_hour']:,.2f} per GPU-hour: a price ratio of {u['price_ratio']:.3f}; they "
                f"cost the same per token at a price ratio of {be['ratio']:.2f}{band} → {_read(u)}",
            f"  {u['first']}: {m(f, u.get('first_in_domain', True))}; runner-up {u['second']}: "
            f"{m(s, u.get('second_in_domain', True))} (priced by {'the ' if be['priced_by'] == 'model' else ''}{be['priced_by']})",
            f"  {sensitivity(u)}"]


def gpu_name(layout: str) -> str:
    """``8xmi355x tp8 [aiter-k3-opt]`` → ``MI355X``."""
    from .specs import parse_layout

    return parse_layout(layout.split(" [")[0]).gpu.upper()


def sensitivity(u: dict, name_bands: bool = True) -> str:
    """How far the model may be off before :func:`~k3lab.compare_answers.user_verdict`'s cheaper
    layout is not, against how far off it is known to be, and what that means for your prices, in
    plain words. The first layout is cheaper per token while its speed per GPU relative to the
    runner-up's stays above your price ratio, so the answer flips when the model's ratio of the two
    speeds is too high by break-even ÷ price ratio (a factor; −1 as a percentage) or more. The two
    bands together (the first's low end against the runner-up's high end: 90% of the public runs
    each family's fit never saw) allow break-even ÷ its low end, the product of the two GPUs' own
    factors (``a_band`` × ``b_band``), named so that the number can be checked (``name_bands``; the
    quote's band line names them right above). The runner-up's
    $/GPU-hour above which the first stays cheaper even at the bands' worst is your first price ÷
    that low end. ``fitted_lean`` (where given) says in brackets which GPU the fit favours on their own
    public runs and by how much (the quote's words and number): how much of that margin is already spent."""
    be, r = u["breakeven"], u["price_ratio"]
    a, b = gpu_name(u["first"]), gpu_name(u["second"])
    if r >= be["ratio"]:
        return f"At the model's values {u['second']} is as cheap or cheaper: your price ratio is at or above the break-even."
    need = be["ratio"] / r
    who = "the model overrates" if be.get("priced_by", "model") == "model" else "the tok/s it is priced at overrate"
    # the flip is a speed ratio; the same margin in cost is 1 - 1/flip (what quote says: "15% cheaper")
    lean = u.get("fitted_lean")
    said = [f"the {a} is {1 - 1 / need:.0%} cheaper at the centre"]
    if lean is not None:  # which way the centre already leans, named as the quote names it (one number)
        said.append(favours(lean, a, b))
    out = f"The {b} wins instead if {who} the {a} against it by {need - 1:.0%} or more ({'; '.join(said)})"
    if be["low"] is None and be.get("priced_by", "model") != "model":
        return out + "; your --tok-s carry no band: the answer holds as far as they do."
    if be["low"] is None:
        return out + "; how wrong it is for this pair is not validated (no band): measure before you commit."
    allow = be["ratio"] / be["low"]
    parts = (f" ({a} x{be['a_band']:.2f} × {b} x{be['b_band']:.2f})"
             if name_bands and be.get("a_band") and be.get("b_band") else "")
    worst = u["first_usd_per_gpu_hour"] / be["low"]
    yours = u["second_usd_per_gpu_hour"]
    if need <= allow:
        # newcomer 20: "at the bands' worst the MI355X is cheaper only while..." beside quote's "the lower-risk pick:
        # the MI355X" read as opposite: the two put the GPUs at opposite edges and at the same edge; each says which
        return (out + f"; the bands together allow x{allow:.2f}{parts}: measure both. With the {a} as slow as its band "
                f"allows and the {b} as fast, the {a} stays cheaper only while the {b} costs over ${worst:,.2f}/GPU-h."
                + slow_edges(u))
    out = out.replace(" or more (", f" or more (x{need:.2f}; ", 1)   # the factor beside the bands' own
    return (out + f", more than the x{allow:.2f} the bands together allow{parts}: at your "
            f"${yours:,.2f} the answer holds (the {a} wins even then while the {b} costs over ${worst:,.2f}/GPU-h).")


def slow_edges(u: dict, leads: bool = False) -> str:
    """' The lower-risk pick: the MI355X, cheaper at both slow edges too ($9.04 vs $20.05/M).': under
    a latency target (:func:`~k3lab.compare_answers.user_verdict` ``u`` with both GPUs' slow-edge $/M),
    which GPU holds it cheaper with both as slow as their bands allow — where the centre cannot
    decide, the renter's pick before measuring (one rule for either GPU), with why where the slow
    edges pick the one the centre did not (the other's band is wider); where only one holds the
    target at its slow edge, which. One sentence with its leading space; "" without a target or a band
    (quote and compare say the same). ``leads``: said before the centre's margin (the quote), so no
    "too" (the centre's agreement is the next sentence's), and without the two $/M (the quote's table
    has them as its bands' slow ends, and says "bands' slow ends")."""
    be, r = u["breakeven"], u["price_ratio"]
    slow = u.get("slow_usd_per_million_tokens") or (None, None)
    if r >= be["ratio"] or be["low"] is None or slow == (None, None) or list(slow) == [None, None]:
        return ""
    a, b = gpu_name(u["first"]), gpu_name(u["second"])
    need, allow = be["ratio"] / r, be["ratio"] / be["low"]
    if list(slow).count(None) == 1:  # a target is set (the other has a slow edge): one misses it even at c1 there
        w = 0 if slow[1] is None else 1
        unknown = (u.get("slow_no_band") or (False, False))[1 - w]
        return (f" At the slow edges only the {(a, b)[w]} holds your latency (${slow[w]:,.2f}/M); the "
                + (f"{(a, b)[1 - w]}'s TTFT has no band to say it there." if unknown else
                   f"{(a, b)[1 - w]} misses it even at one request there."))
    w, o = (0, 1) if slow[0] <= slow[1] else (1, 0)
    names, bands = (a, b), (be.get("a_band"), be.get("b_band"))
    # why, where the slow edges pick the one the centre did not (newcomer 11); where both agree it goes
    why = (f"; the {names[o]}'s band is wider" if None not in bands and bands[o] > bands[w]
           and (w == 1 or need > allow) else "")
    # (newcomer 16: "lower-risk pick" at one workload and "to pick before measuring" at another read as two)
    # (the quote's table ends each band at its slow edge: there, "bands' slow ends")
    ends = "bands' slow ends" if leads else "slow edges"
    lead = (f" At both slow edges the {names[w]} holds your latency cheaper" if need > allow else
            f" The lower-risk pick: the {names[w]}, cheaper at both {ends}" + (" too" if w == 0 and not leads else ""))
    if leads:  # the quote: its table's bands end at the two $/M; its screen's room goes to "how sure"
        return f"{lead}{' (' + why[2:] + ')' if why else ''}."
    return f"{lead} (${slow[w]:,.2f} vs ${slow[o]:,.2f}/M{why})."


def favours(lean: float, a: str, b: str) -> str:
    """'on their public runs the model favours the MI355X by 9%': which of GPUs ``a`` and ``b`` the
    fit reads fast against the other on their own public runs (``fitted_lean``, a's reading over b's:
    :func:`k3lab.compare_answers.fitted_lean`) and by how much, named the same way whichever is the
    cheaper ("favours neither" within half a percent)."""
    if abs(lean - 1) < 0.005:
        return "on their public runs the model favours neither"
    return f"on their public runs the model favours the {a if lean > 1 else b} by {max(lean, 1 / lean) - 1:.0%}"


def _read(u: dict) -> str:
    """The verdict's reading with its :func:`leaning` where it is too close to call."""
    lean = leaning(u)
    return u["reading"].replace("too close to call", "too close to call," + lean, 1) if lean else u["reading"]


def leaning(u: dict) -> str:
    """' leaning to the MI355X' where the model's answer is inside the bands but the flip needs more
    than half of what they allow on a log scale (a factor past √(a_band × b_band), the geometric mean
    of the bands' product: x1.56 for the MI355X against the B300): "too close to call" alone read the
    same for a flip at 18% and at 77% (newcomer 10). "" where the flip needs less, the answer holds
    beyond the bands, or there is no band."""
    be, r = u["breakeven"], u["price_ratio"]
    if be.get("low") is None or r >= be["ratio"]:
        return ""
    need, allow = be["ratio"] / r, be["ratio"] / be["low"]
    return f" leaning to the {gpu_name(u['first'])}" if math.sqrt(allow) <= need <= allow else ""


def your_prices_sentence(u: dict) -> str:
    """Your prices' verdict with its sensitivity (the decision box's headline: :func:`sensitivity`; the
    quote's is :func:`k3lab.quote.quote_verdict`)."""
    f, s = u["first_usd_per_million_tokens"], u["second_usd_per_million_tokens"]
    a, b = u["first"], u["second"]
    return (f"At your prices (${u['first_usd_per_gpu_hour']:,.2f} and ${u['second_usd_per_gpu_hour']:,.2f} per "
            f"GPU-hour) {a} costs ${f[0]:,.2f}/M output tokens against {b}'s ${s[0]:,.2f}/M: "
            f"{_read(u)}. {sensitivity(u)}")


def _tier_name(tier: str) -> str:
    """A price source's column name: the user's own prices are "yours" (the tier k3lab.prices keys
    them by, ``override``, is a name for code, not for a renter)."""
    return "yours" if tier == prices.OVERRIDE_TIER else tier


def _tier_kind(pr, tier: str) -> str:
    if tier == prices.OVERRIDE_TIER:
        return " (given with --usd-per-gpu-hour)"
    sub = pr[pr["tier"] == tier]
    return "" if sub.empty else f" ({sub['kind'].iloc[0]}, {sub['source_date'].iloc[0]})"


# --------------------------------------------------------------------------- CLI


def _pairs(items: list[str], flag: str, kind: str) -> dict:
    """``GPU=VALUE`` items of a repeatable flag → {gpu: float within :data:`k3lab.limits.CAPS`
    ``[kind]``}; ValueError naming the flag."""
    out = {}
    for s in items:
        gpu, sep, val = s.partition("=")
        if not sep or not gpu:
            raise ValueError(f"{flag} expects GPU=VALUE, got {s!r}")
        v = float(limits.parse(kind, val, f"{flag} {s!r}: the value"))
        if gpu.lower() in out:
            raise ValueError(f"{flag}: GPU {gpu!r} given twice")
        out[gpu.lower()] = v
    return out


def _overrides(items: list[str]) -> dict:
    return _pairs(items, "--usd-per-gpu-hour", "usd_per_gpu_hour")


#: what a user who types ``--price`` may mean (too far from either flag for "did you mean")
PRICE_HINTS = {f: "use --usd-per-gpu-hour GPU=PRICE for your own $/GPU-hour, or --price-tier TIER for a price source"
               for f in ("--price", "--prices", "--usd", "--gpu-price")}
#: what a user who asks quote or compare for speculative decoding is told: they price without it, and
#: predict answers DSpark (one layout at a time, with its acceptance and break-even)
SPEC_HINTS = {f: f"{{command}} prices without speculative decoding; for DSpark ask predict, e.g. python -m k3lab "
                 f"predict --layout '8xb300 tp8' --input-len I --output-len O --concurrency C --spec dspark"
              for f in ("--spec", "--accept-len", "--block-size", "--speculative-algorithm")}


def hints(command: str) -> dict:
    """The flag hints of ``quote`` or ``compare``: :data:`PRICE_HINTS` and :data:`SPEC_HINTS`."""
    return {**PRICE_HINTS, **{f: h.format(command=command) for f, h in SPEC_HINTS.items()}}


def warn(command: str, overrides: dict) -> None:
    """Print :func:`k3lab.prices.price_warnings` for your prices on stderr, one line each."""
    for w in prices.price_warnings(overrides):
        print(f"k3lab {command}: warning: {w}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog="python -m k3lab compare", hints=hints("compare"),
                       description="Every GPU x layout that holds one request of a model, what it costs per hour "
                                   "and per million output tokens by price source, and the cheapest per source. "
                                   "Throughput is the serving MODEL's (validated on public measurements), or yours.")
    ap.add_argument("--model", default="kimi-k3", help=f"one of: {', '.join(known_models())} (default kimi-k3)")
    ap.add_argument("--context", type=limits.arg("tokens", "--context"), default=None,
                    help=limits.help_text("request length in tokens (default: the model's max; at most its max)",
                                          "tokens"))
    ap.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES)
    ap.add_argument("--mem-fraction", type=limits.arg("fraction", "--mem-fraction"), default=0.9,
                    help=limits.help_text("sglang --mem-fraction-static (default 0.9)", "fraction"))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME",
                    help="an sglang switch, repeatable: " + ", ".join(VARIANTS))
    ap.add_argument("--price-tier", action="append", default=None, metavar="TIER",
                    help="a price source of data/prices.yaml, repeatable (default: all)")
    ap.add_argument("--usd-per-gpu-hour", action="append", default=[], metavar="GPU=PRICE",
                    help=limits.help_text("override a GPU's $/GPU-hour (shown as tier 'override'), repeatable",
                                          "usd_per_gpu_hour"))
    ap.add_argument("--input-len", type=limits.arg("tokens", "--input-len"), default=None,
                    help=limits.help_text("prompt tokens of the throughput workload (default 1024)", "tokens"))
    ap.add_argument("--output-len", type=limits.arg("tokens", "--output-len"), default=None,
                    help=limits.help_text("output tokens of the throughput workload (default 400)", "tokens"))
    ap.add_argument("--tok-s", action="append", default=[], metavar="GPU=TOKS",
                    help=limits.help_text("price your own measured output tok/s PER GPU for that GPU's rows, "
                                          "repeatable", "tok_s_per_gpu"))
    ap.add_argument("--sort", default="gpus", choices=SORTS, help="gpus (default: fewest first) or cost "
                                                                  "(lowest $/M output tokens first)")
    ap.add_argument("--top", type=limits.arg("rows", "--top"), default=None, metavar="N",
                    help=limits.help_text("show the first N rows only", "rows"))
    ap.add_argument("--all", action="store_true", help="also list layouts that do not hold the request, with why")
    ap.add_argument("--gpu", action="append", default=None, metavar="GPU",
                    help="only this GPU, repeatable (default: every GPU of data/hardware.yaml)")
    slo.add_arguments(ap)
    out = ap.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print a JSON list of rows")
    out.add_argument("--csv", action="store_true", help="print CSV")
    return ap


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab compare [--model M] [--context C] [--json|--csv] …`` → exit 0, or 2 with one line."""
    args = _parser().parse_args(argv)
    try:
        check_context_holds(args.context, args.input_len, args.output_len)
        overrides = _overrides(args.usd_per_gpu_hour)
        df = compare_rows(load_model(args.model), args.context, args.kv_dtype, args.mem_fraction,
                          tuple(args.variant), args.price_tier, overrides, args.all,
                          input_len=args.input_len, output_len=args.output_len,
                          tok_s=_pairs(args.tok_s, "--tok-s", "tok_s_per_gpu"), sort=args.sort,
                          top=args.top, slo=slo.from_args(args),
                          gpus=None if args.gpu is None else [g.lower() for g in args.gpu])
        # after compare_rows, which names an unknown --gpu first
        prices.check_priced_are_asked(args.usd_per_gpu_hour, None if args.gpu is None else
                                      [g.lower() for g in args.gpu], "comparison")
    except (ValueError, OverflowError) as e:
        print(f"k3lab compare: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    warn("compare", overrides)
    if args.json:
        text = io.json_text({"asked": {k: v for k, v in df.attrs.items()}, "answers": answers(df),
                             "your_prices": user_verdict(df), "rows": to_records(df)}, sort_keys=False) + "\n"
    elif args.csv:
        text = df.to_csv(index=False, float_format="%.6g", lineterminator="\n")
    else:
        text = format_table(df) + "\n"
    sys.stdout.write(text)  # a closed pipe (`| head`) is k3lab.cli.QuietStdout's
    return 0
