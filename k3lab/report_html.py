"""How the report looks: its CSS, one colour per verdict, badges, the collapsible sections and
the page around them, and the HTML of its own pieces — the decision box, the verdict summary,
the claims ledger, perf/$ of the article's configs, the costs of a what-if run's layouts.
What goes on the page, and in which order, is :func:`k3lab.report.build`'s.

Units on the page: GiB (2**30 B) per GPU, tokens, requests, $/GPU-hour, $/hour per
deployment, tok/s per deployment, $ per million output tokens.
"""

from __future__ import annotations

import html

from . import claims
from .compare import DEFAULT_SETTING, HOUR_PREFIX, MTOK_PREFIX, layout_name, tier_columns
from .prices import perf_per_dollar_by_tier
from .report_cells import inline_markdown
from .report_tables import html_table
from .throughput import article_table, article_workload

#: one distinct colour per verdict (the figure's bars and the page's badges), each a different hue so no
#: two read alike: greens and blues for what holds (darkest: shown independently; pale: capped by a
#: weaker method), brown, purple, pink and teal for the four "inconsistent with" weaker evidence,
#: yellow for what turns on the price, orange and red for corrected and wrong, grey for unchecked
VERDICT_COLORS = {"reproduced": "#1b5e20", "consistent": "#1e88e5", "consistent (rounded inputs)": "#80deea",
                  "consistent (emulated)": "#c5e1a5", "inconsistent with the emulation": "#8d6e63",
                  "inconsistent with the model": "#ab47bc", "inconsistent with public measurements": "#f06292",
                  "inconsistent with the evidence": "#00897b", "turns on the price": "#fdd835",
                  "corrected": "#fb8c00", "discrepancy": "#c62828", "not reproducible here": "#9e9e9e",
                  "": "#eeeeee"}
METHOD_MEANING = {
    "measured": "ran here, on real code or hardware", "derived": "computed from primary sources",
    "cited": "a third party's public measurement of the same setting (not made here)",
    "arithmetic": "recomputed from the article's own numbers", "emulated": "real code in a state the study built",
    "modelled": "a model (the serving model is validated on public measurements; its error is the band)", "unchecked": "nothing here could check it"}
_esc = html.escape


def text_color(background: str) -> str:
    """Black or white, whichever reads on ``background`` (``#rrggbb``; WCAG relative luminance)."""
    def linear(c):
        c = int(c, 16) / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(background[i:i + 2]) for i in (1, 3, 5))
    return "#000000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 else "#ffffff"


def badge(text: str, color: str, dark: bool = True) -> str:
    """``text`` on a ``color`` label; ``dark``: a dark colour (white text)."""
    return f'<span class="badge" style="background:{color};color:{"#fff" if dark else "#222"}">{_esc(text)}</span>'


def verdict_badge(v: str) -> str:
    """A verdict on its colour (:data:`VERDICT_COLORS`); an empty one reads "not recorded"."""
    color = VERDICT_COLORS.get(v, VERDICT_COLORS[""])
    return badge(v or "not recorded", color, text_color(color) == "#ffffff")


def perf_html(overrides=None) -> tuple[str, str]:
    """(HTML table, one-line answer): perf/$ of the article's configs under every price source.
    Throughput is the ARTICLE's (self-reported); a price is the article's or one the STUDY collected."""

    t, table = perf_per_dollar_by_tier(overrides), article_table()
    configs = [r.label for r in table.values()]
    art, model = badge("ARTICLE · self-reported", "#6a1b9a"), badge("MODEL", "#455a64")
    from .findings.field import model_peaks

    w = article_workload()
    peaks = {d.label: p for d, p, _ in model_peaks([r.deployment for r in table.values()],
                                                   w["input_len_tokens"], w["output_len_tokens"])}

    def model_txt(r):
        p = peaks.get(r.label)
        return ("no calibrated model" if p is None else
                f"{p.output_tok_s:,.0f} ({'%s-%s' % tuple(f'{x:,.0f}' for x in p.interval('output_tok_s'))}) tok/s at "
                f"c{p.concurrency}, TPOT {p.tpot_ms:,.0f} ms, TTFT {p.ttft_ms:,.0f} ms"
                + ("" if p.in_domain else ", outside its validated domain"))

    heads = ["price source (kind, date)"] + [
        f"{_esc(r.label)}<br><small>{r.tok_s:,.0f} tok/s {art}<br>serving model "
        f"{_esc(model_txt(r))} {model}</small>" for r in table.values()]
    rows, wins, full = [], {}, 0
    for tier, g in t.groupby("tier", sort=False):
        by, kind = g.set_index("config"), g["kind"].iloc[0]
        tag = badge("ARTICLE price", "#6a1b9a") if kind == "article" else badge("STUDY price", "#1565c0")
        rows.append([f"{_esc(tier)} ({_esc(kind)}, {_esc(str(g['source_date'].iloc[0]))}) {tag}"] + [
            _perf_cell(by.loc[c]) if c in by.index else "—" for c in configs])
        # like with like: only sources whose prices of every config are rental prices (k3lab.prices)
        if set(configs) <= set(by.index) and bool(by["rental"].all()):
            full += 1
            best = by["tok_s_per_dollar_hour"].idxmax()
            wins[best] = wins.get(best, 0) + 1
    won = ", ".join(f"{c} in {k}" for c, k in sorted(wins.items(), key=lambda kv: -kv[1]))
    answer = (f"Best perf/$ on the article's self-reported throughput, over the {full} source(s) of rental prices "
              f"that price all {len(configs)} configs: {won}.") if full else ""
    legend = ("<p>tok/s per $/hour = deployment tok/s ÷ (GPUs × $/GPU-hour); $/M tokens as InferenceX defines it. "
              f"Every throughput is the article's {art}: under an ARTICLE price the number is wholly the article's, "
              "under a STUDY price it is the article's throughput at a price the study collected.</p>")
    return legend + html_table(heads, rows, cls="grid perf"), answer


def _perf_cell(r) -> str:
    """One perf/$ cell: tok/s per $/hour and $/M at the price, a range's ends beside its middle."""
    ends = r["usd_high"] / r["usd_per_gpu_hour"], r["usd_low"] / r["usd_per_gpu_hour"]
    if r["is_range"]:  # perf/$ falls as the price rises: the range's high end gives its low perf/$
        head = (f"{r['tok_s_per_dollar_hour'] / ends[0]:.1f}-{r['tok_s_per_dollar_hour'] / ends[1]:.1f} tok/s per $/h"
                f"<br><small>${r['usd_per_million_tokens'] * ends[1]:.2f}-${r['usd_per_million_tokens'] * ends[0]:.2f}/M "
                f"tok at ${r['usd_low']:.2f}-${r['usd_high']:.2f}/GPU-h (a range)")
    else:
        head = (f"{r['tok_s_per_dollar_hour']:.1f} tok/s per $/h<br><small>${r['usd_per_million_tokens']:.2f}/M tok at "
                f"${r['usd_per_gpu_hour']:.2f}/GPU-h")
    return head + (" · a placeholder, never evidence" if r["quality"] == "placeholder" else "") + "</small>"


def verdict_summary_html(df) -> str:
    """Counts by verdict (badges), the negative verdicts by kind of correction, the
    verdicts-by-method line and the plain-language answer."""
    counts = df["verdict"].value_counts()
    badges = " ".join(f"{verdict_badge(v)} {counts.get(v, 0)}" for v in claims.VERDICTS)
    kinds = claims.corrections_by_kind(df)
    by_kind = (f"<p><b>Negative verdicts by kind of correction</b> — {_esc(', '.join(f'{n} {k}' for k, n in kinds.items()))}"
               " (substantive: a reader acting on the claim would decide wrongly; precision: the point stands, a "
               "number or its scope is off; literal: the words are wrong, the meaning holds). Each carries the "
               "author's strongest reply in the ledger.</p>") if kinds else ""
    return (f"<p>{badges}</p>{by_kind}<p><b>By method</b> — {_esc(claims.verdicts_by_method(df))}</p>"
            f'<p class="answer">{_esc(claims.plain_answer(df))}</p>')


#: the ledger's columns and their share of the page width (the table never scrolls the page)
LEDGER_HEADS = {"id": 4, "claim": 15, "claimed": 9, "method": 9, "reproduced": 9, "bound": 8, "verdict": 8,
                "evidence": 24, "author's best reply": 14}


def ledger_html(df) -> str:
    """The claims ledger: id, claim, claimed, method, reproduced, bound, verdict (with its kind
    of correction), evidence, and the article's author's strongest reply to a negative verdict
    with why it stands; an emulated row is marked (row colour and an EMULATED badge); each id is
    an anchor (``#claim-<id>``) the notebooks' verdict lines link to."""
    rows = []
    for r in df.to_dict("records"):
        emu = r["method"] == "emulated"
        method = (badge("EMULATED", "#e65100") + "<br><small>real code in a state the study built</small>" if emu
                  else f'{_esc(r["method"])}<br><small>{_esc(METHOD_MEANING.get(r["method"], ""))}</small>')
        ev = inline_markdown(r["evidence"]) + (f"<br><i>{inline_markdown(r['notes'])}</i>" if r["notes"] else "")
        cid = _esc(r["claim_id"])
        kind = str(r.get("correction_kind") or "")
        cells = [f'<b id="claim-{cid}">{cid}</b>', inline_markdown(r["quote"]),
                 f"{_esc(r['claimed'])} <small>{_esc(r['unit'])}</small>", method,
                 inline_markdown(r["reproduced"]) or "—", inline_markdown(r["bound"]) or "—",
                 verdict_badge(r["verdict"]) + (f"<br><small>{_esc(kind)}</small>" if kind else ""), ev,
                 inline_markdown(str(r.get("rebuttal") or "")) or "—"]
        rows.append(f'<tr class="{"emulated" if emu else ""}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    cols = "".join(f'<col style="width:{w}%">' for w in LEDGER_HEADS.values())
    head = "".join(f"<th>{h}</th>" for h in LEDGER_HEADS)
    return (f'<div class="table-wrap"><table class="grid ledger"><colgroup>{cols}</colgroup><thead><tr>{head}'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def decision_html(d) -> str:
    """The decision box, the first thing on the page: what a reader choosing hardware can act on
    (:func:`k3lab.decision.decide` → :func:`~k3lab.decision.headline` and
    :func:`~k3lab.decision.answer_lines`, the sentences ``python -m k3lab compare`` prints). One
    function returning HTML, so it can be replaced whole (``build(decision=...)``)."""
    from .decision import answer_lines, headline

    lines = answer_lines(d)
    n_ans = len(d.answers)
    answers, rest = lines[1:1 + n_ans], lines[1 + n_ans:]
    be = [x for x in rest if x.startswith("MI355X beats") or x.startswith("  ")]
    rest = [x for x in rest if x not in be]
    items = [f"<li>{_esc(x)}</li>" for x in headline(d)]
    detail = ("<details><summary>the cheapest layout under each price source</summary><ul>"
              + "".join(f"<li>{_esc(x)}</li>" for x in answers) + "</ul></details>")
    if be:
        detail += ("<details><summary>where each pair of rental prices falls against the break-even</summary><ul>"
                   + "".join(f"<li>{_esc(x.strip())}</li>" for x in be) + "</ul></details>")
    detail += ("<details><summary>which single nodes hold the request, and the article's prices</summary><ul>"
               + "".join(f"<li>{_esc(x)}</li>" for x in [lines[0], *rest[:-1]]) + "</ul></details>")
    return (f'<div class="decision" id="decision"><h2>The decision</h2><ul class="answer">{"".join(items)}</ul>'
            f"{detail}</div>")


def _fit_cell(r) -> str:
    why = _esc(r["reason"])
    if not r["shardable"]:
        return f'<td class="na" title="{why}">cannot shard</td>'
    w = f'{r["weights_gib_per_gpu"]:.0f} GiB/GPU'
    if not r["weights_fit"]:
        return f'<td class="no" title="{why}">✗ weights ({w})</td>'
    n = r["max_kv_tokens"]
    kv = f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else f"{n:.0f}"
    only = (f'<br>fits only with <code>{_esc(r["fits_with"])}</code>'
            if not r["fits"] and r["fits_with"].startswith("--") else "")
    return (f'<td class="{"yes" if r["fits"] else "part"}">✓ weights ({w})<br>'
            f'{r["full_context_requests"]} full-context req · {kv} KV tokens{only}</td>')


def _matrix_row_label(gpu: str, setting: str) -> str:
    return gpu.upper() + ("" if setting == DEFAULT_SETTING else f" [{setting}]")


def fit_matrix_html(df) -> str:
    """An HTML GPU × layout matrix (rows GPUs, columns layouts) of a comparison made with
    ``include_all=True``; a cell: weights fit (GiB per GPU), full-context requests, max KV tokens.
    CSS classes ``yes`` / ``part`` / ``no`` / ``na`` colour it (see :mod:`k3lab.report_html`)."""
    a = df.attrs
    cols = [layout_name(n, tp, pp) for n, pp, tp in sorted({(r.num_gpus, r.pp, r.tp) for r in df.itertuples()})]
    # one row per GPU and sglang setting: AMD GPUs under the defaults and sglang's K3_OPT recipe
    cells = {((r["gpu"], r["setting"]), layout_name(r["num_gpus"], r["tp"], r["pp"])): r for r in df.to_dict("records")}
    keys = sorted({k for k, _ in cells}, key=lambda k: (k[0], k[1] != DEFAULT_SETTING, k[1]))
    body = "".join(f"<tr><th>{_esc(_matrix_row_label(*k))}</th>" + "".join(
        _fit_cell(cells[(k, c)]) if (k, c) in cells else '<td class="na">—</td>' for c in cols) + "</tr>"
        for k in keys)
    head = "".join(f"<th>{_esc(c)}</th>" for c in cols)
    tag = '<span class="badge" style="background:#37474f;color:#fff">STUDY · derived</span>'
    var = f', sglang switches {", ".join(a["variants"])} (aiter-* on AMD GPUs only)' if a.get("variants") else ""
    return (f'<p>{_esc(a["model"])}, requests of {a["context_tokens"]:,} tokens, KV {a["kv_dtype"]}, '
            f'mem_fraction {a["mem_fraction"]:g}{_esc(var)} {tag} from the published config, datasheets and '
            "sglang 0.5.23's pool sizing. Green: the weights load and a full-context request fits with sglang's default "
            "state pool; amber: the weights load but no full-context request fits with the defaults (the cell names "
            "the state-pool setting under which one does, if any); red: the weights do not fit.</p>"
            f'<table class="fit"><thead><tr><th>GPU</th>{head}</tr></thead><tbody>{body}</tbody></table>')


def costs_html(fit) -> str:
    """The smallest layouts that fit (``fit``: :func:`k3lab.compare.compare_rows`' frame; the
    first 12 that hold) with $/hour and $/M tokens at the MODEL bound, each a range over price sources."""
    ok = fit[fit["holds"].astype(bool)].head(12)
    cols = tier_columns(ok, HOUR_PREFIX), tier_columns(ok, MTOK_PREFIX)

    def span(r, c):
        v = [r[x] for x in c.values() if r[x] == r[x]]
        return f"{min(v):,.2f} – {max(v):,.2f}" if v else "—"

    def tok(r):
        v = r.get("priced_tok_s")
        return "—" if v is None or not v == v else f"{v:,.0f}" + ("" if r.get("model_in_domain") else " *")

    def lat(r):
        c, tpot, ttft = r.get("model_concurrency"), r.get("model_tpot_ms"), r.get("model_ttft_ms")
        return ("—" if not c or c != c or tpot is None or tpot != tpot else
                f"c{int(c)}, {tpot:,.0f} ms, {ttft:,.0f} ms" + ("" if r.get("model_ttft_validated") else " †"))

    rows = [[_esc(r["layout"]), span(r, cols[0]), tok(r), lat(r), span(r, cols[1])] for r in ok.to_dict("records")]
    m = badge("MODEL", "#455a64")
    if not rows:
        return '<p class="empty">No layout holds the request: nothing to price.</p>'
    return (html_table(["layout", "$/hour (range over price sources)", f"output tok/s, serving model {m}",
                        "at concurrency: TPOT, TTFT", f"$/M output tokens {m}"], rows, numeric=(1, 2, 4))
            + '<p class="table-note">Serving model fitted on public Kimi K3 measurements, no speculative decoding, '
              "at the run's latency target (the highest concurrency that meets it) or, without one, at its best "
              "admitted concurrency; * outside its validated domain; † TTFT not validated; — no calibrated "
              "model.</p>")


CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1240px;margin:1.5em auto;padding:0 1em;color:#222;"
    "line-height:1.4} h1{font-size:1.6em;margin:.2em 0} h2{font-size:1.25em} h3{font-size:1.08em}"
    "small{color:#555}"
    "img{max-width:100%} a{color:#0b5394} code{font-size:.92em;background:#f3f3f3;padding:0 2px}"
    ".decision{border:2px solid #2e7d32;border-radius:6px;padding:.2em 1.2em .6em;margin:1em 0;background:#f6fbf3}"
    ".decision h2{margin:.5em 0 .3em}"
    ".answer{font-size:1.05em} ul.answer{margin:.3em 0;padding-left:1.3em} ul.answer li{margin:.35em 0}"
    "p.answer{background:#f1f8e9;border-left:5px solid #2e7d32;padding:.5em 1em}"
    ".verdicts{border:1px solid #ccc;border-radius:6px;padding:.1em 1.2em .4em;margin:1em 0}"
    ".whatif{background:#fff8e1;border-left:5px solid #f9a825;padding:.6em 1em}"
    # a table wider than its section scrolls inside it; a shadow at the edge says there is more (pure CSS:
    # white covers that travel with the content hide the shadows at the ends it has reached)
    ".table-wrap{overflow-x:auto;max-width:100%;margin:.4em 0;background:"
    "linear-gradient(to right,#fff 30%,rgba(255,255,255,0)) left/40px 100% no-repeat local,"
    "linear-gradient(to left,#fff 30%,rgba(255,255,255,0)) right/40px 100% no-repeat local,"
    "radial-gradient(farthest-side at 0 50%,rgba(0,0,0,.3),rgba(0,0,0,0)) left/16px 100% no-repeat scroll,"
    "radial-gradient(farthest-side at 100% 50%,rgba(0,0,0,.3),rgba(0,0,0,0)) right/16px 100% no-repeat scroll}"
    ".table-wrap.wide>table{width:max-content} .table-wrap.wide td{max-width:24em}"
    "table{border-collapse:collapse;font-size:13px} table.grid{width:auto;min-width:40%}"
    "table.fit,table.perf,table.ledger{width:100%} table th{background:#f4f4f4}"
    "table td,table th{border-bottom:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left}"
    "table.grid td{max-width:32em;overflow-wrap:break-word} td.num{text-align:right;white-space:nowrap}"
    "th.num{text-align:right}"
    "table.ledger{table-layout:fixed;min-width:1000px} table.ledger td{overflow-wrap:anywhere}"
    "table.ledger .badge{white-space:normal;display:inline-block}"
    "table.fit td{font-size:12px} td.yes{background:#c8e6c9} td.part{background:#ffe0b2} td.no{background:#ffcdd2}"
    "td.na{background:#eceff1;color:#777} tr.emulated td{background:#fff3e0}"
    "tr.emulated td:first-child{border-left:5px solid #e65100}"
    ".badge{border-radius:3px;padding:1px 6px;white-space:nowrap;font-size:11px}"
    "p.table-note,p.empty,p.ledger-ref{font-size:13px;color:#444;margin:.3em 0}"
    "p.ledger-ref{background:#f4f6f8;padding:.4em .8em;border-left:4px solid #90a4ae}"
    "details{margin:.4em 0} summary{cursor:pointer;color:#555;font-size:12px}"
    "details.section{border-top:3px solid #444;margin-top:1.2em;padding-top:.3em}"
    "details.section>summary{font-size:1.2em;color:#222;padding:.3em 0}"
    "details.section>summary h2{display:inline;font-size:1em;margin:0}"
    "details.section>summary .hint{font-size:.72em;color:#666;margin-left:.8em;font-weight:normal}"
    "details.section>div.body{padding:.2em 0 1em} .md h1{font-size:1.35em}"
    "pre.stderr{background:#fdecea}"
    "pre{background:#f7f7f7;padding:6px;overflow-x:auto;font-size:12px;white-space:pre-wrap}"
    ".html-out{overflow-x:auto}")


def section_html(sid: str, title: str, body: str, hint: str = "") -> str:
    """A collapsible section below the top (closed until the reader opens it)."""
    h = f'<span class="hint">{hint}</span>' if hint else ""
    return (f'<details class="section" id="{_esc(sid)}"><summary><h2>{title}</h2>{h}</summary>'
            f'<div class="body">{body}</div></details>')


def page_html(title: str, body: str) -> str:
    """The whole page: ``title`` (HTML, also the ``<h1>``) above ``body``, the CSS inline."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title>'
            f"<style>{CSS}</style></head><body><h1>{title}</h1>{body}</body></html>\n")
