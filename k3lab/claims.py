"""The claims registry and the verdict rules.

The article's claims live in ``data/claims.yaml`` (quote, claimed value, unit, the
notebook that reproduces it). A notebook records what it found with :func:`record`,
then writes ``results/<notebook>/claims.csv`` with :func:`save`. ``05_claims_ledger``
joins those files with the registry through :func:`ledger`.

Verdicts come from a fixed vocabulary (:data:`VERDICTS`):

- ``reproduced``: the derived value matches the claim within a stated tolerance;
- ``consistent``: the direction holds, within the article's own rounding;
- ``discrepancy``: they differ; the evidence gives the size of the difference;
- ``not reproducible here``: needs hardware we lack; the note says what live mode measures;
- ``corrected``: the article's figure is wrong, with the evidence.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import yaml

from . import io
from .paths import data_path, results_dir, results_root

VERDICTS = ("reproduced", "consistent", "discrepancy", "not reproducible here", "corrected")
LEDGER_COLUMNS = ["claim_id", "finding", "quote", "claimed", "unit", "reproduced",
                  "verdict", "evidence", "notes"]
RECORD_COLUMNS = ["claim_id", "reproduced", "verdict", "evidence", "notes"]


@dataclass(frozen=True)
class Claim:
    """One claim of the article, as the article states it."""

    id: str
    finding: str
    notebook: str
    quote: str
    claimed: object
    unit: str


@functools.lru_cache(maxsize=None)
def registry() -> dict[str, Claim]:
    """All claims of ``data/claims.yaml``, by ID, in the file's order."""
    with open(data_path("claims.yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    out: dict[str, Claim] = {}
    for row in doc["claims"]:
        missing = {"id", "finding", "notebook", "quote", "claimed", "unit"} - set(row)
        if missing:
            raise ValueError(f"data/claims.yaml: claim {row.get('id')!r} lacks {sorted(missing)}")
        if row["id"] in out:
            raise ValueError(f"data/claims.yaml: duplicate claim id {row['id']!r}")
        out[row["id"]] = Claim(**{k: row[k] for k in ("id", "finding", "notebook", "quote", "claimed", "unit")})
    return out


def get(claim_id: str) -> Claim:
    """One claim by ID; ValueError naming the known IDs otherwise."""
    reg = registry()
    if claim_id not in reg:
        raise ValueError(f"unknown claim id {claim_id!r}; known: {', '.join(reg)}")
    return reg[claim_id]


def judge(claimed: float, reproduced: float, rel_tol: float) -> str:
    """``reproduced`` if |reproduced − claimed| ≤ rel_tol·|claimed|, else ``discrepancy``."""
    for name, v in (("claimed", claimed), ("reproduced", reproduced), ("rel_tol", rel_tol)):
        if not isinstance(v, (int, float)) or math.isnan(v):
            raise ValueError(f"judge: {name} must be a number, got {v!r}")
    if rel_tol < 0:
        raise ValueError(f"judge: rel_tol must be >= 0, got {rel_tol}")
    return "reproduced" if abs(reproduced - claimed) <= rel_tol * abs(claimed) else "discrepancy"


def rel_diff(claimed: float, reproduced: float) -> float:
    """(reproduced − claimed) / claimed, the signed relative difference."""
    if claimed == 0:
        raise ValueError("rel_diff: claimed value is 0")
    return (reproduced - claimed) / claimed


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class Recorder:
    """Collects the claims one notebook reproduces; :meth:`save` writes them atomically."""

    def __init__(self, notebook_id: str):
        self.notebook_id = notebook_id
        self.rows: dict[str, dict] = {}

    def record(self, claim_id: str, reproduced, verdict: str, evidence: str, notes: str = "") -> dict:
        """Record one claim's reproduced value and verdict (re-recording replaces it)."""
        claim = get(claim_id)
        if verdict not in VERDICTS:
            raise ValueError(f"verdict {verdict!r} for {claim_id} is not one of {VERDICTS}")
        if not str(evidence).strip():
            raise ValueError(f"claim {claim_id}: evidence must say what the verdict rests on")
        if claim.notebook != self.notebook_id:
            raise ValueError(f"claim {claim_id} belongs to notebook {claim.notebook}, "
                             f"not {self.notebook_id}")
        row = {"claim_id": claim_id, "reproduced": _fmt(reproduced), "verdict": verdict,
               "evidence": str(evidence), "notes": str(notes)}
        self.rows[claim_id] = row
        return row

    def frame(self):
        """The recorded rows as a DataFrame in registry order."""
        import pandas as pd

        order = list(registry())
        rows = sorted(self.rows.values(), key=lambda r: order.index(r["claim_id"]))
        return pd.DataFrame(rows, columns=RECORD_COLUMNS)

    def save(self):
        """Write ``results/<notebook>/claims.csv``; returns the path."""
        return io.write_csv(self.frame(), results_dir(self.notebook_id) / "claims.csv")


def ledger(root=None):
    """Join every ``results/*/claims.csv`` with the registry → DataFrame of LEDGER_COLUMNS.

    A claim no notebook recorded is kept with an empty verdict, so a gap is visible.
    Raises ValueError for a claims file that names an unknown claim or is malformed.
    """
    import pandas as pd

    root = results_root() if root is None else root
    found: dict[str, dict] = {}
    for path in sorted(root.glob("*/claims.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        if list(df.columns) != RECORD_COLUMNS:
            raise ValueError(f"{path}: columns {list(df.columns)} != {RECORD_COLUMNS}")
        for r in df.to_dict("records"):
            get(r["claim_id"])
            if r["verdict"] not in VERDICTS:
                raise ValueError(f"{path}: claim {r['claim_id']} has unknown verdict {r['verdict']!r}")
            found[r["claim_id"]] = r
    rows = []
    for cid, c in registry().items():
        r = found.get(cid, {})
        rows.append({"claim_id": cid, "finding": c.finding, "quote": c.quote,
                     "claimed": _fmt(c.claimed), "unit": c.unit,
                     "reproduced": r.get("reproduced", ""), "verdict": r.get("verdict", ""),
                     "evidence": r.get("evidence", ""), "notes": r.get("notes", "")})
    return pd.DataFrame(rows, columns=LEDGER_COLUMNS)
