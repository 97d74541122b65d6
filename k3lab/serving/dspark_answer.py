"""What a DSpark answer needs beside its prediction, so that it can be read: the same question
without DSpark, the acceptance length at which DSpark breaks even with it, and the acceptance the
field measured, in groups by the prompts it ran (:func:`k3lab.serving.field.accept_groups`).

DSpark pays only when a verify step emits enough tokens to cover what the draft pass and the
wider verify step cost; below that acceptance it is slower than no speculation. An answer equal to
the no-DSpark one to the digit is that break-even, not a bug, and the output says so.
Units: tokens per verify step (acceptance), output tok/s per deployment, ms.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from ..specs import Deployment, ModelConfig
from ..throughput import usd_per_million_tokens
from . import committed, dspark_checks, field, measured_bounds
from .engines import SGLANG, Engine, Harness
from .model import NO_SPEC, Spec, Workload
from .predict import Prediction, differences, predict

#: the bisection stops when the bracket is this narrow (tokens per verify step)
TOLERANCE = 0.005
#: ... and a DSpark tok/s within this share of no DSpark's is read as equal (the print's rounding)
EQUAL = 0.005


@dataclass(frozen=True)
class DSparkAnswer:
    """``plain``: the question without DSpark (same clients, lengths, engine); ``breakeven``: the
    acceptance at which DSpark's output tok/s equals it (None: not even at a full block; 1.0:
    always faster); ``groups``: :func:`k3lab.serving.field.accept_groups`; ``speed_fit``: the
    distinct acceptance lengths of the DSpark runs the speed fit saw in the family, lowest first
    (empty without any); ``at_groups``: the same question at each group's median acceptance
    (:class:`Prediction`, one per group, in the groups' order): the answer at either kind of prompt;
    ``span``: (group, Prediction at its low end, Prediction at its high end) for the group the
    question's acceptance lies in (capped at what the block allows), () outside every group;
    ``checks``: where the question's acceptance lies outside the speed fit, what the public
    natural-text runs the fit leaves out measured against the model
    (:func:`k3lab.serving.dspark_checks.check_line`, "" without any)."""

    plain: Prediction
    breakeven: float | None
    groups: tuple
    speed_fit: tuple
    at_groups: tuple = ()
    checks: str = ""
    span: tuple = ()

    def as_dict(self) -> dict:
        return {"without_dspark": {"output_tok_s": self.plain.output_tok_s, "tpot_ms": self.plain.tpot_ms,
                                   "ttft_ms": self.plain.ttft_ms, "concurrency": self.plain.concurrency},
                "accept_len_breakeven": self.breakeven,
                "accept_len_groups": [{**g, "at_median": {"output_tok_s": q.output_tok_s, "tpot_ms": q.tpot_ms}}
                                      for g, q in zip(self.groups, self.at_groups)],
                "accept_len_speed_fit": list(self.speed_fit),
                "natural_text_checks": [{"dspark_id": c.dspark.id, "without_dspark_id": c.plain.id,
                                         "accept_len": c.dspark.spec.accept_len,
                                         "concurrency": c.dspark.workload.concurrency,
                                         "measured_gain": round(c.measured_gain, 4), "model_gain": round(c.model_gain, 4)}
                                        for c in (dspark_checks.gain_checks(self.plain.family) if self.checks else ())]}


def answer(cfg: ModelConfig, dep: Deployment, work: Workload, spec: Spec, variants=(), kv_dtype: str = "bf16",
           mem_fraction: float | None = None, prefill_attention: str = "fast", engine: Engine = SGLANG,
           harness: Harness | None = None) -> DSparkAnswer:
    """The :class:`DSparkAnswer` of a DSpark question (``spec`` on)."""
    kw = dict(variants=variants, kv_dtype=kv_dtype, mem_fraction=mem_fraction, prefill_attention=prefill_attention,
              engine=engine, harness=harness)
    plain = predict(cfg, dep, work, NO_SPEC, **kw)

    def at(a: float) -> Prediction:
        return predict(cfg, dep, work, Spec(spec.algorithm, a, spec.block), **kw)

    def tok_s(a: float) -> float:
        return at(a).output_tok_s

    top = float(spec.draft_tokens + 1)   # a verify step emits at most the block + 1 tokens
    lo, hi = 1.0, top
    if tok_s(lo) >= plain.output_tok_s:
        even = 1.0
    elif tok_s(hi) < plain.output_tok_s:
        even = None
    else:  # DSpark's tok/s rises with the acceptance: bisect to where it meets no DSpark's
        while hi - lo > TOLERANCE:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tok_s(mid) < plain.output_tok_s else (lo, mid)
        even = round((lo + hi) / 2, 2)
    seen = sorted({o.accept_len for o in committed.fitted_observations()
                   if o.family == plain.family and o.metric == "dspark"})
    groups = tuple(field.accept_groups(plain.family))
    outside = bool(seen) and not seen[0] <= spec.accept_len <= seen[-1]
    acc = dspark_checks.check_accept(plain.family) if outside else None
    yours = None if acc is None or acc > top else tok_s(acc) / plain.output_tok_s
    shares = (dspark_checks.fixed_shares(cfg, plain.family, dep, plain.concurrency,
                                         work.input_len + work.output_len / 2, kv_dtype) if yours is not None else None)
    checks = dspark_checks.check_line(plain.family, plain.gpu, plain.layout, yours, shares) if outside else ""
    # each group's median, capped at what the block allows (a step emits at most block + 1 tokens: a block of 2-5
    # cannot reach the repetitive prompts' 6.4)
    mine = next((g for g in groups if g["low"] <= spec.accept_len <= g["high"] and g["low"] < g["high"]), None)
    span = () if mine is None else (mine, at(min(mine["low"], top)), at(min(mine["high"], top)))
    return DSparkAnswer(plain, even, groups, tuple(seen), tuple(at(min(g["median"], top)) for g in groups), checks,
                        span)


def _prompts(g: dict) -> str:
    """What a group's runs prompted with (their sources are in ``--json``'s ``accept_len_groups``)."""
    return "; ".join(g["prompts"])


def plan_on(p: Prediction, a: DSparkAnswer) -> str:
    """Where DSpark's speed at ``p``'s acceptance is the model's extrapolation (outside the
    acceptances its speed fit saw), the figures to plan on in one sentence: the same question
    without DSpark with its validated band (output tok/s, TPOT), what the extrapolation moves them
    by, and TTFT, which the model prices alike with and without DSpark (its prefill is the target
    model's; the draft's own pass over the prompt is not in it). "" where DSpark's figures have a
    band of their own, or the question without DSpark has none either."""
    pl = a.plain
    tok, tpot = pl.interval("output_tok_s"), pl.interval("tpot_ms")
    # DSpark's own figures with a band of their own need no stand-in; without one (an acceptance the speed fit
    # never saw, or a family whose DSpark is not validated at all) the question without DSpark is what holds
    if p.band_holds() or not pl.band_holds() or tok is None or tpot is None or not pl.decodes:
        return ""
    how = ("extrapolates" if a.speed_fit and not a.speed_fit[0] <= p.accept_len <= a.speed_fit[-1] else "says")
    same = abs(p.ttft_ms - pl.ttft_ms) <= EQUAL * pl.ttft_ms
    notes = (["not validated"] if not pl.validated("ttft_ms") else []) + (
        ["the model prices the prefill without the draft's own pass over the prompt"] if same else [])
    ttft = (f"TTFT {pl.ttft_ms / 1000:,.1f} s " + ("either way" if same else f"(with DSpark {p.ttft_ms / 1000:,.1f} s)")
            + (f" ({'; '.join(notes)})" if notes else ""))
    return (f"plan on: {pl.output_tok_s:,.0f} output tok/s ({tok[0]:,.0f}-{tok[1]:,.0f}) and TPOT {pl.tpot_ms:,.1f} ms "
            f"({tpot[0]:,.1f}-{tpot[1]:,.1f}), the question without DSpark, whose band is validated; DSpark at "
            f"{p.accept_len:g} tokens per step moves them by x{p.output_tok_s / pl.output_tok_s:.2f} if it behaves as "
            f"the model {how} (no band); {ttft}.")


def _pays(p: Prediction, a: DSparkAnswer) -> tuple[float, str]:
    """(DSpark's output tok/s over the question without it, "pays" / "does not pay" / "breaks even")."""
    ratio = p.output_tok_s / a.plain.output_tok_s
    return ratio, ("breaks even" if abs(ratio - 1) < EQUAL else "pays" if ratio > 1 else "does not pay")


def _group_of(p: Prediction, a: DSparkAnswer):
    """The acceptance group of ``a`` that holds the acceptance ``p`` asks, or None."""
    return next((g for g in a.groups if g["low"] <= p.accept_len <= g["high"]), None)


def _breakeven(a: DSparkAnswer, step: str = "tokens per step (the break-even)") -> str:
    """'; it pays above 2.22 tokens per step (the break-even)': where DSpark starts to pay, ``step`` naming the
    unit after the acceptance; or that it never pays, or pays at any acceptance."""
    if a.breakeven is None:
        return "; it never pays here, not even at a full block"
    return "; it pays at any acceptance here" if a.breakeven <= 1.0 else f"; it pays above {a.breakeven:g} {step}"


def verdict(p: Prediction, a: DSparkAnswer) -> str:
    """Does DSpark help ``p``'s question, in one sentence: DSpark against no DSpark at the same
    clients, the break-even acceptance, and (with two acceptance groups) the answer at the other
    group's median."""
    pl = a.plain
    ratio = p.output_tok_s / pl.output_tok_s
    word = "no difference (the break-even, not a bug)" if abs(ratio - 1) < EQUAL else ("yes" if ratio > 1 else "no")
    caveat = ""
    if a.speed_fit and not a.speed_fit[0] <= p.accept_len <= a.speed_fit[-1]:  # the caveat where the answer is
        caveat = (f" By the model's extrapolation (no band: its DSpark runs accepted {a.speed_fit[0]:g}-"
                  f"{a.speed_fit[-1]:g}, not {p.accept_len:g}" + ("; checked on natural text: below)." if a.checks
                                                                  else ")."))
    elif p.band_of("output_tok_s") is None:  # DSpark not validated on this family at all
        caveat = f" By the model alone (no band: DSpark is not validated on {p.family})."
    same = (f"at the same {pl.concurrency:,} requests" if p.concurrency == pl.concurrency else
            f"of your {p.concurrency_asked:,} clients (DSpark runs {p.concurrency:,} at once, its draft's memory and "
            f"request cap; no DSpark {pl.concurrency:,})")
    s = (f"does DSpark help here? {word}: x{ratio:.2f} against no DSpark {same} "
         f"({p.output_tok_s:,.0f} vs {pl.output_tok_s:,.0f} tok/s, TPOT {p.tpot_ms:,.1f} vs {pl.tpot_ms:,.1f} ms) at "
         f"{p.accept_len:g} tokens per step")
    if a.span and len(a.groups) > 1:  # the acceptance your prompts get is a range: the answer across it
        g, lo, hi = a.span
        x0, x1 = lo.output_tok_s / pl.output_tok_s, hi.output_tok_s / pl.output_tok_s
        how = ("slower across it" if x1 < 1 else "faster across it" if x0 > 1 else
               f"from {1 - x0:.0%} slower to {x1 - 1:.0%} faster")
        s += (f", x{x0:.2f}-{x1:.2f} across the {'lower' if g is a.groups[0] else 'higher'} group's "
              f"{lo.accept_len:g}-{hi.accept_len:g} ({how})")
    s += _breakeven(a)
    others = [(g, q) for g, q in zip(a.groups, a.at_groups) if not g["low"] <= p.accept_len <= g["high"]]
    if len(a.groups) > 1 and others:
        s += "; " + "; ".join(f"at the {'higher' if g is a.groups[-1] else 'lower'} group's {g['median']:g}"
                              + (f" ({q.accept_len:g} at most with this block)" if q.accept_len < g["median"] else "")
                              + f": x{q.output_tok_s / pl.output_tok_s:.2f} ({q.output_tok_s:,.0f} tok/s, TPOT "
                              f"{q.tpot_ms:,.1f} ms)" for g, q in others)
    return s + "." + caveat


#: how nearest_dspark_run names a measured quantity (the kinds of k3lab.serving.observations)
_SEEN = {"output_tok_s": ("{:,.0f} output tok/s", 1.0), "tpot_ms": ("TPOT {:,.1f} ms", 1.0),
         "ttft_ms": ("TTFT {:,.2f} s", 1e-3)}


def _dspark_runs(p: Prediction) -> list[dict]:
    """The public DSpark runs nearest to ``p``'s question, nearest first: those ``p.nearest`` lists,
    else the nearest of the family's fitted DSpark runs (:func:`k3lab.serving.predict.nearest`
    over more of them: three non-DSpark runs may sit closer)."""
    from .model import Spec, Workload
    from .predict import nearest

    runs = [n for n in p.nearest if n.get("accept_len") is not None]
    if runs:
        return runs
    spec = Spec("dspark", p.accept_len if p.spec != "none" else 2.0)
    more = nearest(p.gpu, Workload(p.input_len, p.output_len, p.concurrency_asked), spec, k=24, engine=p.engine)
    return [n for n in more if n.get("accept_len") is not None]


def named_runs(p: Prediction) -> set[str]:
    """Ids of the public figures :func:`nearest_dspark_run` states (the nearest DSpark run's, all
    its kinds): the nearest-measurements list need not repeat them."""
    runs = _dspark_runs(p)
    if not runs:
        return set()
    first = runs[0]
    return {n["id"] for n in runs if (n["layout"], n["workload"]) == (first["layout"], first["workload"])
            and n["kind"] in _SEEN}


def same_setup_gain(p: Prediction, a: DSparkAnswer, kernel: str = "fast", kv_dtype: str = "bf16") -> str:
    """One sentence: what public runs on the question's own setup (the grouping the measured bounds use,
    :func:`k3lab.serving.measured_bounds._setup`, with the prefill ``kernel`` and ``kv_dtype`` asked, DSpark aside)
    measured with and without DSpark at one concurrency (the pair nearest the question's), the gain in output tok/s
    per deployment and TPOT, and the gain the model fitted on them gives there and on the question (``a.plain``: it
    without DSpark; newcomer 63: the c16 runs that bound the TTFT "never show their speed"). In sample, so a
    reading, not a check; "" where no such pair is committed."""
    want = (p.gpu, p.layout, p.engine, p.regime, tuple(p.variants), kv_dtype, kernel, p.input_len, p.output_len)
    obs = [o for o in committed.fitted_observations()
           if measured_bounds._setup(o)[:-2] == want and o.admitted >= o.concurrency]
    pairs = {}
    for o in obs:
        pairs.setdefault((o.source, o.concurrency), {}).setdefault((o.kind, o.spec != "none"), o)
    full = [(k, v) for k, v in pairs.items()
            if all((m, d) in v for m in ("output_tok_s", "tpot_ms") for d in (False, True))]
    if not full:
        return ""
    (src, c), v = min(full, key=lambda kv: (abs(kv[0][1] - p.concurrency_asked), kv[0][1], kv[0][0]))
    tok, tpot = ((v[(m, False)], v[(m, True)]) for m in ("output_tok_s", "tpot_ms"))   # (without, with) DSpark
    return (f"measured on your layout and lengths at c{c} ({src}): DSpark accepting {tok[1].accept_len:g} tokens a "
            f"step served {tok[1].value:,.0f} output tok/s against {tok[0].value:,.0f} without "
            f"(x{tok[1].value / tok[0].value:.2f}; "
            f"TPOT {tpot[1].value:.1f} against {tpot[0].value:.1f} ms); the model, fitted on these runs, gives "
            f"x{tok[1].fitted / tok[0].fitted:.2f} there and x{p.output_tok_s / a.plain.output_tok_s:.2f} at your "
            f"{p.accept_len:g} (c{p.concurrency_asked:,}).")


def nearest_dspark_run(p: Prediction) -> str:
    """One sentence: what the public DSpark run nearest to the question measured (:func:`_dspark_runs`'
    first, all its figures listed), what the model puts that same run at, and which way that leans
    (the model faster or slower than measured past x1.10, on throughput where the run gives it, else
    on TPOT) — the measurement a renter can hold the extrapolation against; "" when the family has
    no DSpark run."""
    runs = _dspark_runs(p)
    if not runs:
        return ""
    first = runs[0]
    same = [n for n in runs if (n["layout"], n["workload"]) == (first["layout"], first["workload"])
            and n["kind"] in _SEEN]
    seen = ", ".join(_SEEN[n["kind"]][0].format(n["value"] * _SEEN[n["kind"]][1]) for n in same)
    # each figure with its own ratio (newcomer 34: "x1.37 too fast" on tok/s beside a TPOT 1.8x off and a TTFT
    # off the other way, unsaid)
    fit = ", ".join(_SEEN[n["kind"]][0].format(n["fitted"] * _SEEN[n["kind"]][1])
                    + (f" (x{n['fitted'] / n['value']:.2f})" if n["value"] > 0 else "") for n in same)
    tok = next((n for n in same if n["kind"] == "output_tok_s"), None)
    tpot = next((n for n in same if n["kind"] == "tpot_ms"), None)
    # how much faster the model runs than the measurement: tok/s fit over measured, or TPOT measured over fit
    fast = (tok["fitted"] / tok["value"] if tok else tpot["value"] / tpot["fitted"] if tpot else None)
    # a lean seen at another acceptance is that acceptance's (the natural-text checks can lean the other way)
    at = (f" at {first['accept_len']:g} tokens a step" if p.spec_on and abs(first["accept_len"] - p.accept_len) > 0.05
          else "")
    lean = "" if fast is None else (
        f": the model runs x{fast:.2f} too fast there, so read its DSpark figures{at} as high" if fast > 1.1 else
        f": the model runs x{1 / fast:.2f} too slow there, so read its DSpark figures{at} as low" if fast < 1 / 1.1
        else ": the model agrees there within x1.10")
    # how that run differs from the question (its layout is named already)
    apart = [x for x in differences(first, p) if not x.startswith("its layout")]
    return (f"measured: the nearest public DSpark run, {first['gpu'].upper()} {first['layout']} at {first['workload']} "
            f"({first['source']}{'; ' + ', '.join(apart) if apart else ''}), served {seen}; the model puts that run "
            f"at {fit}{lean}")


def summary(p: Prediction, a: DSparkAnswer, usd: float | None = None, target=None, bounds_of=None) -> list[str]:
    """The answer as a small table before its reasons (newcomers 21-24: the answer took 25-40 lines
    to assemble; "one small table: tok/s, TPOT, TTFT without DSpark, with it at 2 and at 6.4"): a
    head line saying whether DSpark pays here and which row to plan on — the question without
    DSpark where DSpark's speed here is an extrapolation (:func:`plan_on`), else DSpark's — then one
    row without DSpark, one at the acceptance asked, the ends of its group, and each other group's
    median; each with output tok/s, TPOT, TTFT and its factor against no DSpark, a band where one
    holds for that row (lines, unindented); ``usd`` ($/GPU-hour): a $/M output column too. The row
    to plan on: DSpark's where it is the only one that meets the latency ``target``
    (:class:`k3lab.serving.slo.SLO`) at this concurrency; else the one without DSpark where DSpark's
    speed is an extrapolation or DSpark is slower (attack 7: "plan on ... with DSpark; DSpark does not
    pay"); else DSpark's. ``bounds_of``: a function of a row's prediction giving the measured bounds on its
    setup, ``{"tpot_ms": (floor, ceiling), "ttft_ms": ...}`` ms, either None (:mod:`k3lab.serving.measured_bounds`;
    a kind without any left out): a band narrowed to them, and where the model's value sits outside them or has
    no band the cell gives the measured range (newcomer 36: "3.3†" in the table over "TTFT ≥ 3.94 s" under it;
    newcomers 37-38: a floor with no ceiling)."""
    pl = a.plain
    ratio, pays = _pays(p, a)
    extra = plan_on(p, a) != ""
    grouped = len(a.groups) > 1

    def kind(g):
        return ("" if not grouped else " (natural text)" if g is a.groups[0] else " (repetitive prompts)")

    def bounds(q, k):   # (floor, ceiling) ms, either None
        return (bounds_of(q) if bounds_of is not None else {}).get(k, (None, None))

    def cell(q, k, fmt):
        v = getattr(q, k)
        iv = q.interval(k) if q.band_holds(k) else None
        side, (lo, hi) = measured_bounds.bounded(v, iv, *bounds(q, k))   # the latency line's rule, cell by cell
        span = measured_bounds.span_text(lo, hi, fmt.format)
        return span if side else fmt.format(v) + (f" ({span})" if span and iv is not None else "")

    mine = _group_of(p, a)
    rows = [("without DSpark", pl, "")]
    rows.append((f"DSpark at {p.accept_len:g}{kind(mine) if mine is not None else ''}", p, f"x{ratio:.2f}"))
    if a.span:
        g, lo, hi = a.span
        # (newcomer 30: a range beside "no validated band" read as the band: it spans the acceptance, not the error)
        rows.append((f"  acceptance {lo.accept_len:g}-{hi.accept_len:g}, not a band", None,
                     f"x{lo.output_tok_s / pl.output_tok_s:.2f}-{hi.output_tok_s / pl.output_tok_s:.2f}", lo, hi))
    for g, q in zip(a.groups, a.at_groups):
        if g is not mine and grouped:
            rows.append((f"DSpark at {q.accept_len:g}{kind(g)}", q, f"x{q.output_tok_s / pl.output_tok_s:.2f}"))
    def cost(q):
        return usd_per_million_tokens(q.output_tok_s, q.num_gpus, usd)

    table, floored, daggered, rated = [], False, False, False
    for r in rows:
        name, q, x = r[0], r[1], r[2]
        if q is None:
            lo, hi = r[3], r[4]
            tok = f"{lo.output_tok_s:,.0f}-{hi.output_tok_s:,.0f}"
            tpot = f"{hi.tpot_ms:,.1f}-{lo.tpot_ms:,.1f}"
            ttft = ""
            usd_m = f"${cost(hi):,.2f}-${cost(lo):,.2f}" if usd is not None else ""
        else:
            tok, tpot = cell(q, "output_tok_s", "{:,.0f}"), cell(q, "tpot_ms", "{:,.1f}")
            # † where no TTFT band holds (newcomer 34: "3.3" beside banded tok/s and TPOT read as settled); the
            # measured bounds in its place where public runs give both or the model sits outside them (newcomer 36:
            # "3.3†" over "TTFT ≥ 3.94 s": two TTFTs; newcomers 37-38: a floor with no ceiling)
            b = bounds(q, "ttft_ms")
            side, (lo, hi) = measured_bounds.bounded(q.ttft_ms, None, *b)
            s = (lambda x: f"{x / 1000:,.1f}")
            ttft = (measured_bounds.span_text(lo, hi, s) if side or (lo is not None and hi is not None) else
                    s(q.ttft_ms) + ("" if q.band_holds("ttft_ms") else "†"))
            floored = floored or any(x is not None for x in (*b, *bounds(q, "tpot_ms")))
            rated = rated or any(x is not None for x in bounds(q, "output_tok_s"))
            daggered = daggered or ttft.endswith("†")
            usd_m = f"${cost(q):,.2f}" if usd is not None else ""
        table.append((f"    {name:<36}{tok:>17}  {tpot:>17}  {ttft:>7}  {x:>10}"
                      + (f"  {usd_m:>13}" if usd is not None else "")).rstrip())
    aimed = target is not None and target.active
    only = aimed and bool(target.misses(pl)) and not target.misses(p)   # only DSpark meets the target here
    # why no band, where the table's reader sees it (newcomers 48, 52: "outside the measured 4.5-6.41" only in the
    # full output)
    fit = a.speed_fit   # the acceptances the speed fit saw (the domain's own reason, said as the range)
    outside = bool(fit) and not fit[0] <= p.accept_len <= fit[-1]
    # (newcomers 52-54: "an extrapolation" with its natural-text check only in the full output): the check, briefly
    seen = dspark_checks.check_brief(p.family) if outside and a.checks else ""
    nob = ("" if not extra else f" (DSpark at {p.accept_len:g}: no band, fitted on {fit[0]:g}-{fit[-1]:g}"
           + (f"; {seen}" if seen else "") + ")" if outside
           else f" (DSpark at {p.accept_len:g} has no validated band)")
    if only:
        plan = (f"DSpark at {p.accept_len:g}, the only row that meets your {target.label()} at this concurrency"
                + ("; it has no validated band" if extra else ""))
    elif extra or ratio < 1 - EQUAL:
        plan = "the first row, without it" + nob
    else:
        plan = f"DSpark at {p.accept_len:g}"
    head = f"in short: DSpark {pays} here; plan on {plan}:"
    cols = (f"    {'':<36}{'output tok/s':>17}  {'TPOT ms':>17}  {'TTFT s':>7}  {'vs without':>10}"
            + (f"  {f'$/M at ${usd:,.2f}':>13}" if usd is not None else ""))
    fog = [r[1] for r in rows if r[1] is not None and not r[1].band_holds("ttft_ms")]
    legend = ([f"    † TTFT: no band ({fog[0].not_validated('ttft_ms')[0]})"] if daggered else [])
    legend += (["    TPOT and TTFT narrowed to the bounds public runs on this setup measured (below)"
                + (", tok/s to what they allow" if rated else "")
                + ("; TTFT: no band here" if fog and not daggered else "")] if floored else [])
    return [head, cols, *table, *legend]


def head(p: Prediction, a: DSparkAnswer, said: list[str]) -> list[str]:
    """The answer in three sentences (newcomer 40: "open with a three-line answer: the TPOT to plan on, the TTFT
    range, and whether DSpark pays; measure with k3lab bench"): the latency to expect with DSpark at the
    acceptance asked, ``said[0]``; without it, ``said[1]``, with whether DSpark pays here and the break-even
    acceptance; and the benchmark that measures both (:func:`k3lab.serving.measured_bounds.texts` gives
    ``said``: each latency narrowed to what public runs on the same setup bound)."""
    ratio, pays = _pays(p, a)
    mine = _group_of(p, a)
    kind = ("" if len(a.groups) < 2 or mine is None else
            ", natural text" if mine is a.groups[0] else ", repetitive prompts")
    be = _breakeven(a, "tokens a step")
    return [f"latency at c{p.concurrency_asked:,} with DSpark ({p.accept_len:g} tokens a step{kind}): expect {said[0]}.",
            f"without DSpark: {said[1]}; DSpark {pays} here (x{ratio:.2f}){be}.",
            # (newcomer 41: "nothing helps me estimate my acceptance"; bench's random-ids prompts are DSpark's best
            # case, k3lab.live.bench_serving.dspark_note; sglang 0.5.23 logs the acceptance it serves at in
            # srt/managers/scheduler_components/metrics_reporter.py, SchedulerMetricsReporter.report_decode_stats)
            f"measure: python -m k3lab bench --base-url URL --input-len {p.input_len} --output-len {p.output_len} "
            f"--concurrency {p.concurrency_asked}; with DSpark, bench's random prompts accept far more draft tokens than "
            "real traffic: your traffic's acceptance is the 'accept len' sglang logs in its 'Decode batch' lines "
            "(--accept-len X prices it)."]


def lines(p: Prediction, a: DSparkAnswer, width: int = 118, usd: float | None = None, target=None,
          latency: tuple[list[str], str] = ([], ""), bounds_of=None, brief: bool = False, kernel: str = "fast",
          kv_dtype: str = "bf16") -> list[str]:
    """What the DSpark answer ``p`` means, in sentences wrapped at ``width``: the answer in three sentences
    first (:func:`head` over ``latency``'s texts, :func:`k3lab.serving.measured_bounds.texts`), the summary
    table (its cells bounded by ``bounds_of``, :func:`summary`), right under it ``latency``'s source (where
    the bounds come from: :func:`k3lab.serving.measured_bounds.source`), whether DSpark helps
    (:func:`verdict`), what the nearest public DSpark run measured (:func:`nearest_dspark_run`), then the
    natural-text check (``a.checks``): the answer, under the question (the acceptance groups behind it,
    :func:`acceptance_lines`, come after the table: newcomer 15 found the headline buried). ``brief``: up to
    the source, then the nearest public DSpark run (``predict --brief``). ``kernel``, ``kv_dtype``: the question's prefill
    kernel and KV dtype, for the runs on its own setup (:func:`same_setup_gain`)."""
    said, source = latency
    first, *rest = summary(p, a, usd, target, bounds_of)
    out = [x for s in (head(p, a, said) if said else []) for x in
           textwrap.wrap(s, width=width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)]
    out += textwrap.wrap(first, width=width, initial_indent="  ", subsequent_indent="    ") + rest
    # where the bounds come from, right under the table whose cells they bound
    out += textwrap.wrap(source, width=width, initial_indent="  ", subsequent_indent="    ") if source else []
    # what those runs measured with and without DSpark, beside the model fitted on them (newcomer 63)
    gain = same_setup_gain(p, a, kernel, kv_dtype)
    out += textwrap.wrap(gain, width=width, initial_indent="  ", subsequent_indent="    ") if gain else []
    if brief:   # the answer ends here, with the measurement nearest it (newcomers 42-43: "only the full output admits
        # the model ran x1.37 too fast on the nearest measured DSpark run"); what follows is why (``predict --brief``)
        seen = nearest_dspark_run(p)
        return out + (textwrap.wrap(seen, width=width, initial_indent="  ", subsequent_indent="    ") if seen else [])
    out += textwrap.wrap(verdict(p, a), width=width, initial_indent="  ", subsequent_indent="    ")
    # (the "plan on:" sentence is the table's first row now: newcomer 24 found "plan on 969" three times; it stays
    # in --json and plan_on() for a program)
    # the measurement before the check (newcomer 29: "the useful real number is buried" under the check's six lines)
    seen = nearest_dspark_run(p)
    if seen:
        out += textwrap.wrap(seen, width=width, initial_indent="  ", subsequent_indent="    ")
    if a.checks:
        out += textwrap.wrap(a.checks, width=width, initial_indent="  ", subsequent_indent="    ")
    return out


def acceptance_lines(p: Prediction, a: DSparkAnswer, width: int = 118) -> list[str]:
    """The field's acceptance groups behind the answer ``p``, which to plan on, and where the speed
    fit's runs lie, wrapped at ``width`` (empty when there is nothing to say)."""
    out = []
    gs = a.groups
    n = sum(g["runs"] for g in gs)
    if len(gs) > 1:
        lo, hi = gs[0], gs[-1]
        both = sorted({x for v in lo["prompts"].values() for x in v} & {x for v in hi["prompts"].values() for x in v})
        where = next((i for i, g in enumerate(gs) if g["low"] <= p.accept_len <= g["high"]), None)
        text = (f"DSpark acceptance: the {n} public runs of {p.family} fall in {len(gs)} groups by their prompts: "
                + " and ".join(f"{g['low']:g}-{g['high']:g} (median {g['median']:g}, {g['runs']} runs; {_prompts(g)})"
                               for g in gs) + "."
                + (f" {', '.join(both)} ran both on one engine: the prompts, not the GPU, set it." if both else "")
                + " A draft guesses a repetitive output far better than natural text: plan real traffic (chat, code, "
                  f"agents) on the lower group (--accept-len {lo['median']:g}), and use the higher only to match a "
                  "benchmark that prompted the same way."
                + (f" {p.accept_len:g} sits in the {'lower' if where == 0 else 'higher'} group." if where in (0, len(gs) - 1)
                   else f" {p.accept_len:g} sits between the groups."))
    elif gs:
        g = gs[0]
        text = (f"DSpark acceptance: the {n} public runs of {p.family} span {g['low']:g}-{g['high']:g} (median "
                f"{g['median']:g}), one group; their prompts: {_prompts(g)}.")
    else:
        text = ""
    if a.speed_fit and not a.speed_fit[0] <= p.accept_len <= a.speed_fit[-1]:
        text += (f" The speed fit saw DSpark runs at {', '.join(f'{v:g}' for v in a.speed_fit)} tokens per step only: "
                 f"at {p.accept_len:g} DSpark's speed is the model's extrapolation, outside the validated domain.")
    if text:
        out += textwrap.wrap(text.strip(), width=width, initial_indent="  ", subsequent_indent="    ")
    return out
