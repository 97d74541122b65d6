"""Judging one claim (:func:`judge` → :class:`Record`) and one notebook's records (:class:`Recorder`)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import io
from ..paths import results_dir
from .registry import RECORD_COLUMNS, get, registry
from .rules import RULES, cap, format_value as _fmt


def verdict(claim_id: str, **inputs) -> str:
    """Apply the claim's rule (from the registry) to ``inputs``, capped by its method."""
    return _decide(claim_id, inputs)[1]


def _decide(claim_id: str, inputs: dict) -> tuple[str, str]:
    """(what the claim's rule says, the verdict its method allows)."""
    c = get(claim_id)
    said = RULES[c.rule](c, **inputs)
    return said, cap(c.method, said)


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

    def row(self) -> dict:
        c = get(self.claim_id)
        return {"claim_id": self.claim_id, "method": c.method, "reproduced": self.reproduced,
                "bound": self.bound, "verdict": self.verdict, "rule": c.rule,
                "evidence": self.evidence, "notes": self.notes}


def judge(claim_id: str, evidence: str, *, value=None, bound=None, notes: str = "", **inputs) -> Record:
    """Judge one claim → :class:`Record`. ``value``: what k3lab found (shown in the
    ``reproduced`` column; for ``modelled``/``unchecked`` claims it must be None and the
    model's output goes to ``bound``, so a bound never reads as a reproduced value).
    ``inputs``: the numbers the claim's rule needs (see :data:`RULES`). When the rule says
    ``corrected``, its ``correction`` (what holds instead) heads the notes, also where the
    method caps the verdict (an emulation's or a model's correction is what it shows, not a
    verdict on the article)."""
    c = get(claim_id)
    if not str(evidence).strip():
        raise ValueError(f"claim {claim_id}: evidence must say what the verdict rests on")
    if c.method in ("modelled", "unchecked") and value is not None:
        raise ValueError(f"claim {claim_id} is {c.method}: put the model's output in bound=, not value=")
    rule_inputs = dict(inputs)
    if value is not None:
        rule_inputs.setdefault("value", value)
    said, v = _decide(claim_id, rule_inputs)
    if said == "corrected" and inputs.get("correction"):  # what holds instead is part of the record
        notes = f"correction: {inputs['correction']}" + (f"; {notes}" if str(notes).strip() else "")
    return Record(claim_id, "" if value is None else _fmt(value), "" if bound is None else str(bound),
                  v, str(evidence), str(notes))


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
