"""The claims registry: every claim of ``data/claims.yaml`` as a :class:`Claim`, and the
columns the records and the ledger carry."""

from __future__ import annotations

from dataclasses import dataclass

from .. import data
from ..schemas.article import claimed_numbers
from .rules import CRITERIA, INDEPENDENT, RULES, VERDICTS  # noqa: F401  (VERDICTS, INDEPENDENT: re-exported)

METHODS = data.METHODS
#: ``correction_kind`` and ``rebuttal``: on a negative verdict only, its kind (substantive, precision,
#: literal: :data:`k3lab.claims.rules.CORRECTION_KINDS`) and the article's author's strongest reply,
#: with why the verdict stands (``reply: …; stands: …``)
RECORD_COLUMNS = ["claim_id", "method", "reproduced", "bound", "verdict", "rule", "evidence", "notes",
                  "correction_kind", "rebuttal"]
LEDGER_COLUMNS = ["claim_id", "finding", "quote", "claimed", "unit", "method", "reproduced",
                  "bound", "verdict", "rule", "tolerance", "evidence", "notes", "correction_kind", "rebuttal"]
#: what a notebook shows of its own records, and of the ledger
SUMMARY_COLUMNS = ["claim_id", "method", "reproduced", "bound", "verdict", "evidence"]
LEDGER_VIEW = ["claim_id", "claimed", "method", "reproduced", "bound", "verdict", "evidence"]


@dataclass(frozen=True)
class Claim:
    """One claim of the article, as the article states it, and how k3lab checks it."""

    id: str
    finding: str
    notebook: str
    quote: str
    claimed: object
    unit: str
    method: str
    rule: str
    tolerance: object = None
    added: str | None = None

    @property
    def claimed_numbers(self) -> list[float]:
        """The claimed value as numbers: ``2.78`` → [2.78]; ``"48 / 33 / 7"`` → [48, 33, 7]."""
        nums = claimed_numbers(self.claimed)
        if nums is None:
            raise ValueError(f"claim {self.id}: claimed value {self.claimed!r} is not a number "
                             f"(or numbers separated by ' / ')")
        return nums

    def tolerance_text(self) -> str:
        """The numeric tolerance, or how the claim's rule decides agreement (:data:`CRITERIA`)."""
        t = self.tolerance
        if t is None:
            return CRITERIA[self.rule]
        if t.digits:
            return "about-N rule: half a unit in the last significant digit as written"
        return f"±{t.rel:.1%} relative" if t.rel is not None else f"±{t.abs:g} {self.unit}"


def registry() -> dict[str, Claim]:
    """All claims of ``data/claims.yaml``, by ID, in the file's order (validated, cached)."""
    return _registry()


@data.cached
def _registry() -> dict[str, Claim]:
    doc = data.load("claims")
    out = {}
    for c in doc.claims:
        if c.rule not in RULES:
            raise data.DataError(f"data/claims.yaml: claim {c.id}: unknown rule {c.rule!r}; "
                                 f"known: {', '.join(RULES)}")
        out[c.id] = Claim(c.id, c.finding, c.notebook, c.quote, c.claimed, c.unit, c.method,
                          c.rule, c.tolerance, c.added)
    return out


def get(claim_id: str) -> Claim:
    """One claim by ID; ValueError naming the known IDs otherwise."""
    reg = registry()
    if claim_id not in reg:
        raise ValueError(f"unknown claim id {claim_id!r}; known: {', '.join(reg)}")
    return reg[claim_id]
