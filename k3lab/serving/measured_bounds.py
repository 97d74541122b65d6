"""Latency bounds a question takes from public runs on its own layout and lengths: measured, not modelled.

With every request running (none waiting for a slot), one more request in flight adds its prefill
ahead of the next first token and its tokens to every decode batch: neither TTFT nor TPOT falls as
concurrency rises, and a DSpark step that accepts more tokens makes TPOT no longer. So a public run
on the question's GPU, layout, engine, benchmark regime, prompt and output lengths, kernels, KV dtype,
variants and DSpark block, at a concurrency at or below the question's (and for TPOT under DSpark an
acceptance at or above it), measured a **floor** for the question — on that run's build.

Nor does latency grow faster than the number of requests: c requests bring c prompts to prefill ahead
of a first token, and a decode step over c requests streams the same weights as over fewer (newcomers
37, 38: "≥ 3.94 s" with no upper figure cannot be held against a TTFT target). So the same run, scaled by
the question's concurrency over its own and by the most any committed pair on one setup outgrew that
proportion (:func:`slack`: x1.12 for TTFT, where a run with a smaller prefill chunk at c128 stood against
one at c96; none for TPOT), is a **ceiling**; a run at the question's concurrency or above one unscaled
(a DSpark TPOT only from a run accepting as many tokens or fewer). Only while the question's own requests
all run: where some wait for a slot, their wait has no such bound.

Both rules are checked on the committed public series (``tests/test_measured_bounds.py``). This is what a
renter holds a metric with no validated band against (NVIDIA TTFT, DSpark at natural-text acceptance);
where the model's value sits outside the bounds, it is off. Units: ms.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from . import committed
from .predict import Prediction

#: the metrics a bound is taken for, and how a sentence names each
KINDS = {"tpot_ms": "TPOT", "ttft_ms": "TTFT"}


@dataclass(frozen=True)
class Bound:
    """A ``side`` ("floor" / "ceiling") of the question's ``kind`` (``ttft_ms`` / ``tpot_ms``) at ``value`` ms:
    the public figure ``measured`` (ms) of run ``id`` of ``source`` on ``build``, at ``concurrency`` with
    ``accept_len`` (None without DSpark), times ``scale`` (a ceiling from fewer requests: the question's
    concurrency over the run's, times :func:`slack`; else 1)."""

    kind: str
    side: str
    value: float
    measured: float
    scale: float
    concurrency: int
    accept_len: float | None
    id: str
    source: str
    build: str


def _setup(o) -> tuple:
    """What makes two committed observations one setup (the grouping both rules are checked on)."""
    return (o.gpu, o.layout, o.engine, o.regime, tuple(o.variants), o.kv_dtype, o.prefill_attention,
            o.input_len, o.output_len, o.spec != "none", o.block if o.spec != "none" else None)


def _same_setup(o, p: Prediction, kernel: str, kv_dtype: str, block: int | None) -> bool:
    """Run ``o`` (a committed fit observation) was measured on ``p``'s setup — the grouping :func:`pairs` checks
    the rules on (:func:`_setup`) — with every request running."""
    return o.admitted >= o.concurrency and _setup(o) == (
        p.gpu, p.layout, p.engine, p.regime, tuple(p.variants), kv_dtype, kernel, p.input_len, p.output_len,
        p.spec_on, block if p.spec_on else None)


def pairs(kind: str) -> list[tuple]:
    """Every (fewer, more) pair of committed public ``kind`` runs on one setup (:func:`_setup`), each with every
    request running, the second at higher concurrency (a DSpark TPOT pair: the second accepting as many tokens
    or more, as a ceiling is used). The evidence both rules rest on."""
    series = defaultdict(list)
    for o in committed.fitted_observations():
        if o.kind == kind and o.admitted >= o.concurrency:
            series[_setup(o)].append(o)
    out = []
    for runs in series.values():
        for lo in runs:
            for hi in runs:
                if hi.concurrency > lo.concurrency and not (
                        kind == "tpot_ms" and lo.spec != "none" and hi.accept_len < lo.accept_len):
                    out.append((lo, hi))
    return sorted(out, key=lambda x: (x[0].id, x[1].id))


@lru_cache(maxsize=None)
def slack(kind: str) -> float:
    """The most a committed pair (:func:`pairs`) outgrew its concurrency: max over pairs of (more's ``kind`` /
    fewer's) / (more's concurrency / fewer's), at least 1. A ceiling from fewer requests carries it."""
    return max([1.0] + [(hi.value / lo.value) / (hi.concurrency / lo.concurrency) for lo, hi in pairs(kind)])


def _asked(p: Prediction, kind: str) -> int:
    """The concurrency a bound on ``kind`` is against: TTFT the clients asked (a request waiting for a slot
    waits in its TTFT too), TPOT the requests running."""
    return p.concurrency_asked if kind == "ttft_ms" else p.concurrency


def _bound(o, kind: str, side: str, scale: float) -> Bound:
    return Bound(kind, side, o.value * scale, o.value, scale, o.concurrency,
                 o.accept_len if o.spec != "none" else None, o.id, o.source, o.build)


def floors(p: Prediction, kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> dict[str, Bound]:
    """Per kind of :data:`KINDS`, the floor :class:`Bound` for prediction ``p`` (asked with prefill kernel
    ``kernel``, ``kv_dtype`` and, under DSpark, draft ``block``: ignored without it): the highest public figure
    on its setup at a concurrency at or below the question's; none for a kind no public run bounds."""
    out = {}
    for o in committed.fitted_observations():
        if o.kind not in KINDS or not _same_setup(o, p, kernel, kv_dtype, block):
            continue
        if o.concurrency > _asked(p, o.kind) or (o.kind == "tpot_ms" and p.spec_on and o.accept_len < p.accept_len):
            continue
        best = out.get(o.kind)
        if best is None or (o.value, -o.concurrency, o.id) > (best.value, -best.concurrency, best.id):
            out[o.kind] = _bound(o, o.kind, "floor", 1.0)
    return out


def ceilings(p: Prediction, kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> dict[str, Bound]:
    """Per kind of :data:`KINDS`, the ceiling :class:`Bound` for ``p`` (arguments as :func:`floors`): the lowest of
    each public figure on its setup — from fewer requests scaled by the question's concurrency over the run's
    and by :func:`slack`, from as many or more as measured (a DSpark TPOT only from a run accepting as many
    tokens or fewer). None for a kind no run bounds, nor at all where some of the question's requests queue."""
    if p.concurrency < p.concurrency_asked:
        return {}
    out = {}
    for o in committed.fitted_observations():
        if o.kind not in KINDS or not _same_setup(o, p, kernel, kv_dtype, block):
            continue
        if o.kind == "tpot_ms" and p.spec_on and o.accept_len > p.accept_len:
            continue
        c = _asked(p, o.kind)
        b = _bound(o, o.kind, "ceiling", c / o.concurrency * slack(o.kind) if o.concurrency < c else 1.0)
        best = out.get(o.kind)
        if best is None or (b.value, -o.concurrency, o.id) < (best.value, -best.concurrency, best.id):
            out[o.kind] = b
    return out


def bounded(v: float, iv, floor: float | None, ceiling: float | None) -> tuple[str, tuple]:
    """The one rule the bounds apply to a latency ``v`` (ms) with range ``iv`` ((low, high) ms, or None): (where
    ``v`` sits against the measured bounds — "under" the floor, "over" the ceiling, or "" —, the range to plan
    on (low, high): ``iv`` narrowed to [floor, ceiling], either end None where nothing bounds it; where the
    range and the bounds do not meet, the bounds). Used by :func:`sentence` and ``predict``'s DSpark table
    (:func:`k3lab.serving.dspark_answer.summary`)."""
    side = ("under" if floor is not None and v < floor else "over" if ceiling is not None and v > ceiling else "")
    lo, hi = (None, None) if iv is None else iv
    lo = floor if lo is None else lo if floor is None else max(lo, floor)
    hi = ceiling if hi is None else hi if ceiling is None else min(hi, ceiling)
    if lo is not None and hi is not None and lo > hi:
        lo, hi = (floor if floor is not None else lo), (ceiling if ceiling is not None else hi)
        if lo > hi:   # (the two measured bounds themselves crossed: keep the floor, a published figure)
            hi = None
    return side, (lo, hi)


def span_text(lo: float | None, hi: float | None, fmt) -> str:
    """A range (ms) as written: "a-b", "≥a", "≤b" (``fmt`` writes one value)."""
    return (f"{fmt(lo)}-{fmt(hi)}" if lo is not None and hi is not None else
            f"≥{fmt(lo)}" if lo is not None else f"≤{fmt(hi)}" if hi is not None else "")


def _ms(kind: str, v: float) -> str:
    return f"{v / 1000:,.2f} s" if kind == "ttft_ms" else f"{v:,.1f} ms"


def _range(kind: str, v: float, iv, fl: Bound | None, ce: Bound | None, what: str, on: str = "") -> str:
    """One latency to plan on: the model's value ``v`` (ms) with its range ``iv`` ((low, high) ms: a band, or
    ``what`` says which range; None: none holds) narrowed to the floor ``fl`` and ceiling ``ce``; where the
    model's value sits outside them, the measured range alone, the model's value named after it; ``on`` says
    which runs measured it where that differs from the question's other row (e.g. " on DSpark runs, ...")."""
    name = KINDS[kind]
    side, (lo, hi) = bounded(v, iv, None if fl is None else fl.value, None if ce is None else ce.value)
    unit = _ms(kind, v).split()[-1]
    num = (lambda x: f"{x / 1000:,.2f}") if kind == "ttft_ms" else (lambda x: f"{x:,.1f}")
    span = span_text(lo, hi, num).replace("≥", "≥ ").replace("≤", "≤ ")
    if side:
        return (f"{name} {span} {unit} (measured bounds{on}; the model's {num(v)} {unit} is "
                f"{'under' if side == 'under' else 'over'} them)")
    if iv is None:
        return f"{name} {num(v)} {unit} (no band" + (f"; {span} {unit} measured)" if span else ")")
    # which range the brackets hold (newcomer 60: a band, bounds and an acceptance range in the same brackets)
    narrowed = "" if what or (lo, hi) == tuple(iv) else ": band within the measured bounds"
    return f"{name} {num(v)} {unit} ({span}{what}{narrowed})"


def _found(rows: list[tuple], kernel: str, kv_dtype: str, block: int | None) -> list[tuple]:
    """Per row of ``rows`` (see :func:`texts`): (label, prediction, (tpot_range, what), (floors, ceilings))."""
    return [(label, p, (more + [None, ""])[:2],
             (floors(p, kernel, kv_dtype, block), ceilings(p, kernel, kv_dtype, block))) for label, p, *more in rows]


def texts(rows: list[tuple], kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> list[str]:
    """Per row of ``rows`` ((label, prediction[, tpot_range, what]): label "" for a single row, else e.g.
    "with DSpark at 2"; ``tpot_range`` (low, high) ms where the TPOT band does not hold but another range
    does, ``what`` naming it, e.g. " across its acceptance"), the latency to expect, without its label: TPOT
    and TTFT, each with its band narrowed to the floor and ceiling public runs on the same setup give
    (:func:`floors`, :func:`ceilings`: :func:`bounded`), or the model's value alone where nothing bounds it."""
    out = []
    for _label, p, (tpot_iv, what), (fl, ce) in _found(rows, kernel, kv_dtype, block):
        said = []
        for kind in KINDS:
            if kind == "tpot_ms" and not p.decodes:
                continue
            iv = p.interval(kind) if p.band_holds(kind) else (tpot_iv if kind == "tpot_ms" else None)
            # (newcomer 52: DSpark's TTFT bounds above the plain ones "with no stated reason"): whose runs, and why
            on = (" on DSpark runs, whose prefill includes the draft's" if kind == "ttft_ms" and p.spec_on and
                  len(rows) > 1 else "")
            said.append(_range(kind, getattr(p, kind), iv, fl.get(kind), ce.get(kind),
                               "" if p.band_holds(kind) or kind != "tpot_ms" else what, on))
        out.append(", ".join(said))
    return out


def source(rows: list[tuple], kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> str:
    """Where :func:`texts`' bounds come from and why they bound, in two sentences a renter can check (newcomer
    40: "latency rises with more requests (floors; ...) but no faster than their number; ceilings: those
    figures x32/16" was "nearly unparseable"): the runs, their build and concurrencies; the floor rule; the
    ceiling rule with its scale and :func:`slack`. "" where no public run bounds any row."""
    found = _found(rows, kernel, kv_dtype, block)
    every = [b for *_, bs in found for d in bs for b in d.values()]
    if not every:
        return ""
    cs = sorted({b.concurrency for b in every})
    runs = {b.source: b.build for b in every}
    src = "; ".join(f"{s} ({'' if b.startswith('sglang') else 'sglang '}{b})" for s, b in runs.items())
    dspark = any(p.spec_on for _, p, *_ in found)
    scaled = sorted({(round(b.scale / slack(b.kind) * b.concurrency), b.concurrency)
                     for b in every if b.side == "ceiling" and b.scale != 1})
    more = sorted({b.kind for b in every if b.side == "ceiling" and b.scale != 1 and slack(b.kind) > 1})
    grow = ("" if not scaled else
            "; nor does it grow faster than their number, so a figure at fewer requests times "
            + " or ".join(f"{c}/{r}" for c, r in scaled) + " is a ceiling too"
            + "".join(f" ({KINDS[k]} x{slack(k):.2f} more: the most any of {len(pairs(k))} public pairs on one setup "
                      "outgrew it)" for k in more))
    both = len({b.accept_len is None for b in every}) == 2   # (newcomer 60: which run the DSpark TTFT bounds are)
    return (f"Where the ranges come from: {src} measured your layout and lengths at c{'/'.join(map(str, cs))}"
            + (", with and without DSpark" if both else "") + f", every "
            f"request running. Latency does not fall as requests are added, so a figure at fewer requests is a floor"
            + (" (for DSpark's TPOT, only from a run accepting at least as many tokens a step)" if dspark else "")
            + f" and one at more a ceiling{grow}.")


def parts(rows: list[tuple], kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> tuple[str, str]:
    """(answer, source) over ``rows`` (see :func:`texts`): the answer one sentence, "latency at cN: " then
    each row's label and :func:`texts`; the source :func:`source`. ("", "") where no public run bounds any
    row (the table's bands say it all)."""
    src = source(rows, kernel, kv_dtype, block)
    if not src:
        return "", ""
    said = [(f"{label} " if label else "") + t for (label, *_), t in zip(rows, texts(rows, kernel, kv_dtype, block))]
    return f"latency at c{max(p.concurrency_asked for _, p, *_ in rows):,}: {'; '.join(said)}.", src


def sentence(rows: list[tuple], kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> str:
    """:func:`parts` as one paragraph, answer then source; "" where no public run bounds any row."""
    return " ".join(x for x in parts(rows, kernel, kv_dtype, block) if x)


def throughput(p: Prediction, latency: dict) -> tuple[float, float] | None:
    """(floor, ceiling) output tok/s per deployment that the latency bounds ``latency`` (``{"ttft_ms": (floor,
    ceiling), "tpot_ms": ...}``, ms) imply for ``p`` where all four are given and every request runs at once: a
    closed loop of ``c`` requests of ``O`` output tokens, each ``TTFT + (O − 1) · TPOT`` long (bench_serving's
    TPOT), serves ``c · O / (TTFT + (O − 1) · TPOT)`` (the model's own rate, :func:`k3lab.serving.model.benchmark`);
    the floor from both ceilings, the ceiling from both floors (newcomer 51: "969 (515-1,822)" beside latencies
    narrowed to 19.5-38.9 ms and 3.5-8.0 s, which allow 686-1,394). None otherwise (requests queueing, one output
    token, a bound missing)."""
    (tf, tc), (pf, pc) = latency.get("ttft_ms", (None, None)), latency.get("tpot_ms", (None, None))
    if None in (tf, tc, pf, pc) or p.concurrency != p.concurrency_asked or p.output_len < 2:
        return None
    c, o = p.concurrency, p.output_len
    return c * o / ((tc + (o - 1) * pc) / 1e3), c * o / ((tf + (o - 1) * pf) / 1e3)


def as_dict(p: Prediction, kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> dict:
    """:func:`floors` and :func:`ceilings` JSON-ready: per kind and side the bound's ms, the run's measured ms,
    the scale, its concurrency, acceptance, id, source and build, and where the model's value sits."""
    out: dict = {}
    for side, found in (("floor", floors(p, kernel, kv_dtype, block)), ("ceiling", ceilings(p, kernel, kv_dtype, block))):
        for k, b in found.items():
            v = getattr(p, k)
            out.setdefault(k, {"model_ms": v})[side] = {
                "ms": b.value, "measured_ms": b.measured, "scale": b.scale, "concurrency": b.concurrency,
                "accept_len": b.accept_len, "id": b.id, "source": b.source, "build": b.build,
                "model_outside": v < b.value if side == "floor" else v > b.value}
    return out
