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
KINDS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT"}


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
    ``kv_dtype`` and, under DSpark, draft ``block``), or none for a kind no public run bounds. TTFT against the
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


def _ms(kind: str, v: float) -> str:
    return f"{v / 1000:,.2f} s" if kind == "ttft_ms" else f"{v:,.1f} ms"


def sentence(rows: list[tuple[str, Prediction]], kernel: str, kv_dtype: str = "bf16",
             block: int | None = None) -> str:
    """One sentence over ``rows`` ((label, prediction) pairs: "" for a single row, else e.g. "without DSpark"):
    the floors each row's public runs set (:func:`floors`), where and at which concurrency they were measured,
    and which of the model's values sit under one ("read it as low"); "" where no public run bounds any row."""
    found = [(label, p, floors(p, kernel, kv_dtype, block if p.spec_on else None)) for label, p in rows]
    found = [x for x in found if x[2]]
    if not found:
        return ""
    every = [f for _, _, fl in found for f in fl.values()]
    cs = {f.concurrency for f in every}
    said, under = [], []
    for label, p, fl in found:
        parts = []
        for kind, f in fl.items():
            at = ([] if len(cs) == 1 else [f"c{f.concurrency}"]) + (
                [f"at {f.accept_len:g} a step"] if kind == "tpot_ms" and f.accept_len else [])
            parts.append(f"{KINDS[kind]} {_ms(kind, f.value)}" + (f" ({', '.join(at)})" if at else ""))
            if getattr(p, kind) < f.value:
                under.append((KINDS[kind], _ms(kind, getattr(p, kind)), label))
        said.append((f"{label} " if label else "") + ", ".join(parts))
    runs = {f.source: f.build for f in every}
    src = "; ".join(f"{s} on {'' if b.startswith('sglang') else 'sglang '}{b}" for s, b in runs.items())
    at = f"at c{next(iter(cs))} " if len(cs) == 1 else ""
    if not under:
        verdict = " The model's values sit above them."
    elif len({(k, v) for k, v, _ in under}) == 1:   # one value under (the same figure on several rows said once)
        verdict = f" The model's {under[0][0]}, {under[0][1]}, is under {'it' if len(under) == 1 else 'them'}: read it as low."
    else:
        verdict = (" The model's " + " and ".join(f"{k}{' ' + lab if lab else ''} ({v})" for k, v, lab in under)
                   + " are under theirs: read them as low.")
    return (f"measured floors for c{max(p.concurrency_asked for _, p in rows):,} ({src}, {at}on your layout and "
            "lengths with every request running; latency only rises with more requests, TPOT also with fewer "
            f"tokens accepted): {'; '.join(said)}." + verdict)


def as_dict(p: Prediction, kernel: str, kv_dtype: str = "bf16", block: int | None = None) -> dict:
    """:func:`floors` JSON-ready: per kind the floor's ms, concurrency, acceptance, run id, source and build."""
    return {k: {"ms": f.value, "concurrency": f.concurrency, "accept_len": f.accept_len, "id": f.id,
                "source": f.source, "build": f.build, "model_ms": getattr(p, k), "model_under": getattr(p, k) < f.value}
            for k, f in floors(p, kernel, kv_dtype, block).items()}
