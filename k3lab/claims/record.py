"""Judging one claim (:func:`judge` → :class:`Record`) and one notebook's records (:class:`Recorder`)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import io
from ..paths import results_dir
from .registry import RECORD_COLUMNS, get, registry
from .rules import CORRECTION_KINDS, RULES, TURNS, base_verdict, cap, format_value as _fmt, is_negative


def verdict(claim_id: str, **inputs) -> str:
    """Apply the claim's rule (from the registry) to ``inputs``, capped by its method."""
    return _decide(claim_id, inputs)[1]


def _decide(claim_id: str, inputs: dict) -> tuple[str, str]:
    """(what the claim's rule says, the verdict its method allows)."""
    c = get(claim_id)
    said = RULES[c.rule](c, **inputs)
    return said, cap(c.method, said, c.rule)


@dataclass(frozen=True)
class Record:
    """What one notebook found for one claim: the value (or the bound / band, for a model),
    the verdict its rule gave, and the evidence."""

    claim_id: str
    reproduced: str
    bound: str
    verdict: str
    evidence: str
    notes: str = ""
    correction_kind: str = ""
    rebuttal: str = ""

    def row(self) -> dict:
        c = get(self.claim_id)
        return {"claim_id": self.claim_id, "method": c.method, "reproduced": self.reproduced,
                "bound": self.bound, "verdict": self.verdict, "rule": c.rule,
                "evidence": self.evidence, "notes": self.notes, "correction_kind": self.correction_kind,
                "rebuttal": self.rebuttal}


def rebuttal(reply: str, stands: str) -> str:
    """The author's strongest reply to a negative verdict and why the verdict stands (or what it
    concedes), as the ledger's ``rebuttal`` column reads: ``reply: …; stands: …``."""
    if not str(reply).strip() or not str(stands).strip():
        raise ValueError("a rebuttal needs the author's reply and why the verdict stands")
    return f"reply: {reply}; stands: {stands}"


#: the verdicts that decide nothing either way: their notes may open with why (``undecided: …``)
UNDECIDED = ("not reproducible here", TURNS)


def judge(claim_id: str, evidence: str, *, value=None, bound=None, notes: str = "", kind: str | None = None,
          reply: tuple[str, str] | None = None, undecided: str | None = None, **inputs) -> Record:
    """Judge one claim → :class:`Record`. ``value``: what k3lab found (shown in the
    ``reproduced`` column; for ``modelled``/``unchecked`` claims it must be None and the
    model's output goes to ``bound``, so a bound never reads as a reproduced value).
    ``inputs``: the numbers the claim's rule needs (see :data:`RULES`). When the rule speaks
    against the claim and ``correction`` says what holds instead, it heads the notes, also where
    the method caps the verdict (an emulation's or a model's correction is what it shows, not a
    verdict on the article). ``kind`` (:data:`~k3lab.claims.rules.CORRECTION_KINDS`) and ``reply``
    (the author's strongest reply, why the verdict stands: :func:`rebuttal`) are kept on a negative
    verdict only, where ``tests/test_findings.py`` requires both. ``undecided``: why the evidence
    cannot decide, heading the notes (``undecided: …``) when the verdict is one of :data:`UNDECIDED`
    (the opening's reading of the row, :mod:`k3lab.bottom_line`)."""
    c = get(claim_id)
    if not str(evidence).strip():
        raise ValueError(f"claim {claim_id}: evidence must say what the verdict rests on")
    if c.method in ("modelled", "unchecked") and value is not None:
        raise ValueError(f"claim {claim_id} is {c.method}: put the model's output in bound=, not value=")
    if kind is not None and kind not in CORRECTION_KINDS:
        raise ValueError(f"claim {claim_id}: correction kind {kind!r} is not one of {', '.join(CORRECTION_KINDS)}")
    rule_inputs = dict(inputs)
    if value is not None:
        rule_inputs.setdefault("value", value)
    said, v = _decide(claim_id, rule_inputs)
    neg = is_negative(v)
    if neg and inputs.get("correction"):  # what holds instead is part of the record
        notes = f"correction: {inputs['correction']}" + (f"; {notes}" if str(notes).strip() else "")
    elif undecided and base_verdict(v) in UNDECIDED:
        notes = f"undecided: {undecided}" + (f"; {notes}" if str(notes).strip() else "")
    return Record(claim_id, "" if value is None else _fmt(value), "" if bound is None else str(bound),
                  v, str(evidence), str(notes), kind if neg and kind else "",
                  rebuttal(*reply) if neg and reply else "")


#: what a notebook run with changed parameters writes instead of claims.csv
NOT_JUDGED = "not_judged.json"


class Recorder:
    """Collects one notebook's records; :meth:`save` writes ``results/<nb>/claims.csv``."""

    def __init__(self, notebook_id: str, out_dir=None):
        self.notebook_id = notebook_id
        self.out_dir = out_dir
        self.records: dict[str, Record] = {}

    def add(self, *records: Record):
        """Keep records (re-adding a claim replaces it); returns them as a table."""
        for r in records:
            if get(r.claim_id).notebook != self.notebook_id:
                raise ValueError(f"claim {r.claim_id} belongs to notebook "
                                 f"{get(r.claim_id).notebook}, not {self.notebook_id}")
            self.records[r.claim_id] = r
        return self.frame([r.claim_id for r in records])

    def frame(self, ids=None):
        """The recorded rows (all, or ``ids``) as a DataFrame in registry order."""
        import pandas as pd

        order = list(registry())
        keep = [r for r in self.records.values() if ids is None or r.claim_id in ids]
        rows = [r.row() for r in sorted(keep, key=lambda r: order.index(r.claim_id))]
        return pd.DataFrame(rows, columns=RECORD_COLUMNS)

    def missing(self) -> list[str]:
        return [c.id for c in registry().values() if c.notebook == self.notebook_id and c.id not in self.records]

    def save(self, not_judged: dict | None = None):
        """Write the notebook's claims.csv; ValueError if one of its claims was not judged.
        ``not_judged``: the parameters a what-if run changed (``Params.changed``): the article's
        claims are not its questions, so instead of claims.csv it writes :data:`NOT_JUDGED`
        naming them, and the ledger leaves the notebook's claims out and says why."""
        out = self.out_dir or results_dir(self.notebook_id)
        if not_judged:
            if self.records:
                raise ValueError(f"{self.notebook_id}: a what-if run records no claims (it changed {sorted(not_judged)})")
            return io.write_json(out / NOT_JUDGED, {"notebook": self.notebook_id,
                                                    "changed": {k: not_judged[k] for k in sorted(not_judged)}})
        gap = self.missing()
        if gap:
            raise ValueError(f"{self.notebook_id} did not judge {', '.join(gap)}")
        return io.write_csv(self.frame(), out / "claims.csv")
