"""The answer for someone choosing hardware: one computation that the report's decision box,
``python -m k3lab compare`` and the README state alike.

:func:`decide` answers, for one model and one request length (default Kimi K3 at its 1,048,576
tokens), with the sglang settings of :func:`k3lab.compare.settings_for` (sglang's defaults, and on
AMD GPUs sglang's MI35x recipe setting SGLANG_AITER_K3_OPT=1, which the article's 191 GiB implies, beside
them):

1. which single nodes hold the request, with sglang's defaults or only with a state-pool setting;
2. per price source, the layout that holds it at the lowest $/M output tokens
   (:func:`k3lab.compare_answers.answers`, on the serving model's throughput);
3. the break-even price ratio between the MI355X and the B300: the MI355X wins perf/$ while its
   $/GPU-hour is below that fraction of the B300's — on the article's own throughput (952 / 1,568)
   and on the serving model's (validated on public measurements, with its band) — and where each
   pair of independent rental prices (:func:`k3lab.prices.price_pairs`: one source and date where
   one exists, else labelled cross-source; a price given as a range pairs as a range of ratios,
   never one end of it) falls against it, with what each pair's prices cost per million tokens;
4. the article's prices against the independent rental prices of the same GPU;
5. your own prices judged against the break-even, with how far the model may be off before the
   answer turns (:func:`sensitivity`);
6. what this study measured, and what it did not.

Every price is quoted at a latency: each layout at its peak, or under a service-level objective
(``slo``, :class:`k3lab.serving.slo.SLO`) at the highest concurrency that meets it, with its
TPOT and TTFT. :func:`question` is what a run asked (notebook 04 writes it beside its results as
:data:`QUESTION_FILE`, and the report's decision box asks the same: one number per question).

Units: $/GPU-hour, $/hour, $/M output tokens, tok/s per GPU; ratios are MI355X ÷ B300.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import json
from pathlib import Path

from . import compare, compare_answers, compare_view, prices
from .serving.slo import SLO
from .throughput import article_table, usd_per_million_tokens

#: the two GPUs the article's perf/$ argument is between, as rows of its table
PAIR = ("mi355x_tp8", "b300_tp8_dcp")
MEASURED = ("This study measured no GPU throughput: every tok/s here is the article's own (self-reported) or the "
            "serving model's, fitted on third-party public measurements (data/public_measurements.yaml). What ran "
            "here ran on a 2-core CPU: sglang's real Kimi K3 module built on the meta device, its real scheduler "
            "code, AITER's release files, kernels timed on the CPU.")


@dataclass
class Breakeven:
    """MI355X ÷ B300 $/GPU-hour at which their perf/$ is equal, by the article's throughput and by
    the model's (``model_low``/``model_high``: the two families' bands combined)."""

    article: float
    model: float
    model_low: float
    model_high: float
    model_setting: str
    workload: str
    #: :func:`k3lab.prices.price_pairs` (your prices first), each with ``reading`` (who is cheaper per
    #: token on the model, over the pair's whole range of ratios), ``usd_per_mtok`` ((MI355X, B300) $/M
    #: output tokens on the model's rows at the prices' middles) and ``usd_per_mtok_range`` (each side's
    #: (low, high) $/M at its price's ends: the same twice for a single figure)
    sources: list = field(default_factory=list)


@dataclass
class Decision:
    """Everything the decision box says (see the module docstring)."""

    model: str
    context_tokens: int
    comparison: object
    holding_nodes: list
    answers: list
    breakeven: Breakeven | None
    article_prices: list
    measured: str = MEASURED

    @property
    def slo(self) -> SLO:
        return SLO(**self.comparison.attrs.get("slo", {}))

    @property
    def yours(self) -> dict | None:
        """Your own prices judged (:func:`k3lab.compare_answers.user_verdict`), or None."""
        return compare_answers.user_verdict(self.comparison)

    @cached_property
    def matched(self) -> list[tuple[float, dict]]:
        """The MI355X/B300 break-even with both nodes at the same TPOT, across the range both reach:
        [(TPOT limit ms, :func:`k3lab.compare_answers.breakeven`)], the computation T21 reads
        (:func:`k3lab.findings.interactivity.matched`); empty without a break-even, and under a latency
        target (the break-even is then at one TPOT already). Computed when first asked (seconds)."""
        if self.breakeven is None or self.slo.active:
            return []
        from .findings import interactivity

        a = self.comparison.attrs
        return interactivity.matched(a["input_len"], a["output_len"], a["kv_dtype"], context_tokens=a["context_tokens"],
                                     mem_fraction=a["mem_fraction"], variants=tuple(a["variants"]))

    def peak_tpots(self) -> tuple[float, float] | None:
        """(MI355X, B300) TPOT ms of the pair's rows as the comparison priced them (each at its peak
        without a latency target), or None without the pair."""
        pair = compare.pair_layouts(self.comparison)
        if pair is None:
            return None
        rows = self.comparison.set_index("layout")
        return tuple(float(rows.loc[lay, "model_tpot_ms"]) for lay in pair)


#: what notebook 04 asked the decision, beside its results (the report reads it back)
QUESTION_FILE = "decision_question.json"
#: the keyword arguments of :func:`decide` a question holds
QUESTION_KEYS = ("model", "context_tokens", "variants", "kv_dtype", "mem_fraction", "overrides", "gpus",
                 "input_len", "output_len", "slo")


def question(model: str = "kimi-k3", context_tokens: int | None = None, variants=(), slo: SLO | None = None,
             **kw) -> dict:
    """The arguments of :func:`decide` as a JSON-ready dict (``slo`` as its fields; keys of
    :data:`QUESTION_KEYS`); ``decide(**question(...))`` asks the same."""
    unknown = sorted(set(kw) - set(QUESTION_KEYS))
    if unknown:
        raise ValueError(f"unknown decision argument(s) {unknown}; known: {', '.join(QUESTION_KEYS)}")
    q = {"model": model, "context_tokens": context_tokens, "variants": list(variants),
         "slo": (slo or SLO()).as_dict(), **kw}
    if q.get("overrides"):
        q["overrides"] = {str(g): float(v) for g, v in q["overrides"].items()}
    return q


def read_question(path: Path) -> dict | None:
    """The question a run's notebook wrote (:data:`QUESTION_FILE`), or None when there is none;
    ValueError naming the file when it is not one."""
    from .readers import read_json

    if not Path(path).exists():
        return None
    q = read_json(path, str(path))
    if not isinstance(q, dict) or set(q) - set(QUESTION_KEYS) or "model" not in q:
        raise ValueError(f"{path}: not a decision question (keys {', '.join(QUESTION_KEYS)})")
    return q


def write_question(path: Path, q: dict) -> Path:
    """Write :func:`question`'s dict (sorted keys, one file)."""
    from .io import write_text

    return write_text(path, json.dumps(q, indent=1, sort_keys=True) + "\n")


def _breakeven(cmp_df) -> Breakeven | None:
    """The MI355X/B300 break-even on the comparison's own rows (:func:`k3lab.compare_answers.breakeven`:
    the same layouts and throughputs ``compare`` prints), the article's on its own table, and
    where each pair of rental prices (:func:`k3lab.prices.price_pairs`, your own prices first)
    falls against it, with the two layouts' $/M output tokens at that pair's prices."""
    pair = compare.pair_layouts(cmp_df)
    be = compare_answers.breakeven(cmp_df, *pair) if pair else None
    if be is None or be["low"] is None:
        return None
    table = article_table()
    a, b = (table[k] for k in PAIR)
    art = (a.tok_s / a.num_gpus) / (b.tok_s / b.num_gpus)
    rows = cmp_df.set_index("layout")
    ra, rb = rows.loc[pair[0]], rows.loc[pair[1]]
    srcs = []
    for p in prices.price_pairs("mi355x", "b300", cmp_df.attrs.get("overrides")):
        read = compare_answers.reading(p["ratio_low"], be, p["ratio_high"]).replace(pair[0], "MI355X").replace(
            pair[1], "B300")
        mtok = lambda r, usd: usd_per_million_tokens(float(r["priced_tok_s"]), int(r["num_gpus"]), usd)  # noqa: E731
        cost = (mtok(ra, p["a_usd"]), mtok(rb, p["b_usd"]))
        ends = ((mtok(ra, p["a_low"]), mtok(ra, p["a_high"])), (mtok(rb, p["b_low"]), mtok(rb, p["b_high"])))
        srcs.append({**p, "reading": read, "usd_per_mtok": cost, "usd_per_mtok_range": ends})
    at = cmp_df.attrs
    target = SLO(**at.get("slo", {}))
    at_latency = f", {target.label()}" if target.active else ", each at its peak"
    return Breakeven(art, be["ratio"], be["low"], be["high"], f"{pair[0]} vs {pair[1]}, as compare lists them, no DSpark",
                     f"{at['input_len']:,} in / {at['output_len']:,} out{at_latency}", srcs)


def _article_prices() -> list:
    """(gpu, the article's $/GPU-hour, independent rental prices of the same GPU: min, max, n), as
    :func:`k3lab.prices.price_check` counts them."""
    return [(r.gpu, float(r.article_usd_per_gpu_hour), r.other_min, r.other_max, int(r.n_prices))
            for r in prices.price_check().itertuples()]


def decide(model: str = "kimi-k3", context_tokens: int | None = None, variants=(), slo=None, **kw) -> Decision:
    """The buyer's answer (module docstring). ``slo``: a :class:`~k3lab.serving.slo.SLO` or its
    fields as a dict (:func:`question`). ``kw`` goes to :func:`k3lab.compare.compare_rows`
    (kv_dtype, mem_fraction, tiers, overrides, gpus, input_len, output_len); the comparison covers
    every candidate."""
    slo = SLO(**slo) if isinstance(slo, dict) else slo
    df = compare.compare_rows(model, context_tokens, variants=tuple(variants), include_all=True, slo=slo, **kw)
    hold = df[df["holds"].astype(bool) & (df["nodes"] == 1)]
    nodes = [(r["layout"], r["fits_with"]) for r in hold.to_dict("records")]
    k3 = df.attrs["model"] == "kimi-k3"
    return Decision(df.attrs["model"], df.attrs["context_tokens"], df, nodes, compare_answers.answers(df),
                    _breakeven(df) if k3 else None, _article_prices() if k3 else [])


def headline(d: Decision) -> list[str]:
    """Three to five sentences a renter acts on: what holds the request, what a million output
    tokens costs on the MI355X and the B300 under each pair of rental prices (side by side, at the
    latency priced), your prices' verdict, the break-even against those pairs' price ratios, and
    what was measured. The details are :func:`answer_lines`."""
    ctx = d.context_tokens
    df = d.comparison
    out = []
    node = [(lay, how) for lay, how in d.holding_nodes if lay.startswith("8x")]
    if node:
        out.append(f"A {ctx:,}-token {d.model} request fits one 8-GPU node of: "
                   + "; ".join(lay + ("" if how == "defaults" else f" with {how}") for lay, how in node) + ".")
    else:
        out.append(f"No 8-GPU node holds a {ctx:,}-token {d.model} request (the comparison lists larger layouts).")
    b = d.breakeven
    rent = [p for p in b.sources if p["kind"] != "override"] if b is not None else []
    if rent:
        out.append(f"Per million output tokens on the serving model (no speculative decoding, "
                   f"{_latency_phrase(d, d.answers)}), MI355X vs B300 under each pair of rental prices: "
                   + "; ".join(f"{p['label']}: {_mtok(p, 0)} vs {_mtok(p, 1)}" for p in rent) + ".")
    if d.yours is not None:
        out.append(compare_view.your_prices_sentence(d.yours))
    out += [f"Check your prices: {w}." for w in prices.price_warnings(df.attrs.get("overrides"))]
    if b is not None:
        ratios = "; ".join(f"{p['a_tier'] if p['paired'] else p['kind'] + ' (cross-source)'} {_ratio_text(p)}"
                           for p in b.sources)
        art = {x[0]: x[1] for x in d.article_prices}
        own = ("" if not {"mi355x", "b300"} <= set(art) else
               f"; the article's own ${art['mi355x']:.2f} / ${art['b300']:.2f} is {art['mi355x'] / art['b300']:.2f}")
        out.append(f"The MI355X wins perf/$ while its $/GPU-hour is below {b.article:.2f}x the B300's by the article's "
                   f"own throughput; by the serving model, {_model_breakevens(d, ends_only=True)}; the paired rental "
                   f"prices put it at {ratios or 'no pair'}{own}.")
    out.append(d.measured)
    return out


def _be_text(be_ratio: float, low: float, high: float) -> str:
    return f"{be_ratio:.2f}x ({low:.2f}-{high:.2f})"


def _model_breakevens(d: Decision, ends_only: bool = False) -> str:
    """The serving model's break-even in words: with both nodes at the same TPOT (:attr:`Decision.matched`,
    at its first and last limit with ``ends_only``) first, then each node at its own peak; under a
    latency target, the one break-even at it."""
    b = d.breakeven
    if d.slo.active:
        return f"{_be_text(b.model, b.model_low, b.model_high)} at {d.slo.label()}"
    m = d.matched
    shown = [m[0], m[-1]] if ends_only and len(m) > 2 else m
    same = ("with both nodes at the same TPOT " + (" to " if ends_only else ", ").join(
        f"{_be_text(be['ratio'], be['low'], be['high'])} at {ms:g} ms" for ms, be in shown) + ", and ") if m else ""
    tp = d.peak_tpots()
    at = f" (TPOT {tp[0]:.0f} and {tp[1]:.0f} ms)" if tp else ""
    return f"{same}{_be_text(b.model, b.model_low, b.model_high)} with each node at its own peak{at}"


def _usd_text(lo: float, hi: float) -> str:
    """'$2.95' or, for a range, '$5.00-$7.25'."""
    return f"${lo:,.2f}" if lo == hi else f"${lo:,.2f}-${hi:,.2f}"


def _ratio_text(p: dict) -> str:
    """A pair's prices and their ratio: '$8.60 / $15.00 = 0.57', or with a range '$2.95 / $5.00-$7.25 = 0.41-0.59'."""
    r = f"{p['ratio']:.2f}" if not p["is_range"] else f"{p['ratio_low']:.2f}-{p['ratio_high']:.2f}"
    return f"{_usd_text(p['a_low'], p['a_high'])} / {_usd_text(p['b_low'], p['b_high'])} = {r}"


def _mtok(p: dict, side: int) -> str:
    """One side's $/M output tokens under a pair: at its price, or over its range's ends."""
    return _usd_text(*p["usd_per_mtok_range"][side])


def _latency_phrase(d: Decision, ans: list) -> str:
    """``at TPOT ≤ 50 ms`` under an SLO, else the TPOT span of the answers' peaks."""
    if d.slo.active:
        return f"at {d.slo.label()}"
    tp = [a["tpot_ms"] for a in ans if a.get("tpot_ms") is not None]
    return "each layout at its peak" + (f": TPOT {min(tp):,.0f}-{max(tp):,.0f} ms" if tp else "")


def answer_lines(d: Decision) -> list[str]:
    """The decision as plain sentences (the README and the CLI print these; the report styles them)."""
    ctx = d.context_tokens
    out = []
    if d.holding_nodes:
        out.append(f"One node holds a {ctx:,}-token {d.model} request: "
                   + "; ".join(f"{lay}" + ("" if how == "defaults" else f" (with {how})") for lay, how in d.holding_nodes)
                   + ".")
    else:
        out.append(f"No single node holds a {ctx:,}-token {d.model} request; see the comparison for multi-node layouts.")
    out += [compare_view.answer_line(a, ctx) for a in d.answers]
    b = d.breakeven
    if b is not None:
        at = d.comparison.attrs
        out.append(f"MI355X beats B300 on perf/$ while its $/GPU-hour is below {b.article:.2f}x the B300's on the "
                   f"article's own throughput, or on the serving model's ({b.model_setting}, {at['input_len']:,} in / "
                   f"{at['output_len']:,} out) below {_model_breakevens(d)}; each pair of rental prices below is read "
                   f"{'at that target' if d.slo.active else 'with each at its peak'}.")
        for p in b.sources:
            out.append(f"  {p['label']}: {_ratio_text(p)}x → {p['reading']} ({_mtok(p, 0)} vs {_mtok(p, 1)} per M "
                       "output tokens).")
    for gpu, v, lo, hi, n in d.article_prices:
        out.append(f"The article's {gpu.upper()} price ${v:.2f}/GPU-hour" +
                   (f" against {n} independent rental prices ${lo:.2f}-${hi:.2f}"
                    + (" (below all of them)" if v < lo else " (above all of them)" if v > hi else " (inside them)")
                    if n else " has no independent rental price to compare with") + ".")
    out.append(d.measured)
    return out
