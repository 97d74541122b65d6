"""Latency floors a question takes from public runs on its own layout and lengths: measured, not modelled.

With every request running (none waiting for a slot), one more request in flight adds its prefill
ahead of the next first token and its tokens to every decode batch: neither TTFT nor TPOT falls as
concurrency rises, and a DSpark step that accepts more tokens makes TPOT no longer. So a public run
on the question's GPU, layout, engine, benchmark regime, prompt and output lengths, kernels, KV dtype,
variants and DSpark block, at a concurrency at or below the question's (and for TPOT under DSpark an
acceptance at or above it), measured a floor for the question — on that run's build. Checked on the
committed public series (``tests/test_measured_floors.py``: no later point of a series falls below an
earlier one). Only floors: a run at higher concurrency would bound from above only for a mean against a
mean, and some public TTFTs are medians.

This is what a renter holds a metric with no validated band against (NVIDIA TTFT, DSpark at natural-text
acceptance): where the model's value sits under a floor, it is low. Units: ms.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import committed
from .predict import Prediction

#: the metrics a floor is taken for, and how a sentence names each
KINDS = {"tpot_ms": "TPOT", "ttft_ms": "TTFT"}


@dataclass(frozen=True)
class Floor:
    """The highest public ``kind`` (``ttft_ms`` / ``tpot_ms``) value, in ms, measured on the question's setup
    at ``concurrency`` ≤ the question's (a DSpark run's ``accept_len`` ≥ the question's for TPOT), by run ``id``
    of ``source`` on ``build``."""

    kind: str
    value: float
    concurrency: int
    accept_len: float | None
    id: str
    source: str
    build: str


def _same_setup(o, p: Prediction, kernel: str, kv_dtype: str, block: int | None) -> bool:
    """Run ``o`` (a committed fit observation) was measured on ``p``'s setup with every request running."""
    return (o.gpu == p.gpu and o.layout == p.layout and o.engine == p.engine and o.regime == p.regime
            and tuple(o.variants) == tuple(p.variants) and o.kv_dtype == kv_dtype and o.prefill_attention == kernel
            and (o.input_len, o.output_len) == (p.input_len, p.output_len)
            and (o.spec != "none") == p.spec_on and (not p.spec_on or o.block == block)
            and o.admitted >= o.concurrency)


def floors(p: Prediction, kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> dict[str, Floor]:
    """Per kind of :data:`KINDS`, the :class:`Floor` for prediction ``p`` (asked with prefill kernel ``kernel``,
    ``kv_dtype`` and, under DSpark, draft ``block``: ignored without it), or none for a kind no public run bounds. TTFT against the
    concurrency asked (a request waiting for a slot waits in its TTFT too), TPOT against the running one."""
    out = {}
    for o in committed.fitted_observations():
        if o.kind not in KINDS or not _same_setup(o, p, kernel, kv_dtype, block):
            continue
        c = p.concurrency_asked if o.kind == "ttft_ms" else p.concurrency
        if o.concurrency > c or (o.kind == "tpot_ms" and p.spec_on and o.accept_len < p.accept_len):
            continue
        best = out.get(o.kind)
        if best is None or (o.value, -o.concurrency, o.id) > (best.value, -best.concurrency, best.id):
            out[o.kind] = Floor(o.kind, o.value, o.concurrency, o.accept_len if o.spec != "none" else None,
                                o.id, o.source, o.build)
    return out


def raised(v: float, iv, floor: float | None) -> tuple[bool, float | None]:
    """The one rule a floor applies to a latency ``v`` (ms) with range ``iv`` ((low, high) ms, or None): (whether
    ``v`` or its whole range sits under ``floor``, to be said as "≥ floor" instead; the range's low edge raised to
    the floor where that is higher, None without a range). Used by :func:`sentence` and ``predict``'s DSpark
    table (:func:`k3lab.serving.dspark_answer.summary`)."""
    under = floor is not None and (v < floor or (iv is not None and iv[1] < floor))
    return under, (None if iv is None else iv[0] if floor is None else max(iv[0], floor))


def _ms(kind: str, v: float) -> str:
    return f"{v / 1000:,.2f} s" if kind == "ttft_ms" else f"{v:,.1f} ms"


def _range(kind: str, v: float, iv, f: Floor | None, what: str) -> str:
    """One latency to plan on: the model's value ``v`` (ms) with its range ``iv`` ((low, high) ms: a band, or
    ``what`` says which range; None: none holds), the low edge raised to the floor ``f`` where one is higher;
    "≥ floor" where the model's value (or its whole range) sits under the floor."""
    name = KINDS[kind]
    under, lo = raised(v, iv, None if f is None else f.value)
    if under:
        return f"{name} ≥ {_ms(kind, f.value)}"
    if iv is None:
        return f"{name} {_ms(kind, v)} (no band" + (f"; ≥ {_ms(kind, f.value)} measured)" if f else ")")
    unit = _ms(kind, v).split()[-1]
    num = (lambda x: f"{x / 1000:,.2f}") if kind == "ttft_ms" else (lambda x: f"{x:,.1f}")
    return f"{name} {num(v)} {unit} ({num(lo)}-{num(iv[1])}{what})"


def sentence(rows: list[tuple], kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> str:
    """The latency to expect, one sentence over ``rows`` ((label, prediction[, tpot_range, what]): label "" for a
    single row, else e.g. "without DSpark"; ``tpot_range`` (low, high) ms where the TPOT band does not hold but
    another range does, ``what`` naming it, e.g. " across its acceptance"): each row's TPOT and TTFT with its
    band, the low edge raised to the floor public runs on the same setup measured (:func:`floors`), a latency
    with no band or under its floor said as "≥" the floor; then where the floors come from. "" where no public
    run bounds any row (the table's bands say it all)."""
    found = []
    for label, p, *more in rows:
        fl = floors(p, kernel, kv_dtype, block)   # (a question without DSpark ignores the block)
        found.append((label, p, (more + [None, ""])[:2], fl))
    if not any(fl for *_, fl in found):
        return ""
    said, under = [], []
    for label, p, (tpot_iv, what), fl in found:
        parts = []
        for kind in KINDS:
            if kind == "tpot_ms" and not p.decodes:
                continue
            iv = p.interval(kind) if p.band_holds(kind) else (tpot_iv if kind == "tpot_ms" else None)
            parts.append(_range(kind, getattr(p, kind), iv, fl.get(kind),
                                "" if p.band_holds(kind) or kind != "tpot_ms" else what))
            if fl.get(kind) is not None and getattr(p, kind) < fl[kind].value:
                under.append((KINDS[kind], _ms(kind, getattr(p, kind))))
        said.append((f"{label} " if label else "") + ", ".join(parts))
    every = [f for *_, fl in found for f in fl.values()]
    cs = sorted({f.concurrency for f in every})
    runs = {f.source: f.build for f in every}
    src = "; ".join(f"{s} on {'' if b.startswith('sglang') else 'sglang '}{b}" for s, b in runs.items())
    low = ("" if not under else
           f"; the model's {under[0][0]}, {under[0][1]}, is under {'it' if len(under) == 1 else 'them'}"
           if len({u for u in under}) == 1 else
           "; the model's " + " and ".join(f"{k} {v}" for k, v in under) + " are under theirs")
    return (f"latency at c{max(p.concurrency_asked for _, p, *_ in rows):,}: {'; '.join(said)}. Floors: "
            f"{src}, at c{'/'.join(map(str, cs))} on your layout and lengths, every request running (latency only "
            f"rises with more requests, TPOT also with fewer tokens accepted){low}.")


def as_dict(p: Prediction, kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> dict:
    """:func:`floors` JSON-ready: per kind the floor's ms, concurrency, acceptance, run id, source and build."""
    return {k: {"ms": f.value, "concurrency": f.concurrency, "accept_len": f.accept_len, "id": f.id,
                "source": f.source, "build": f.build, "model_ms": getattr(p, k), "model_under": getattr(p, k) < f.value}
            for k, f in floors(p, kernel, kv_dtype, block).items()}
