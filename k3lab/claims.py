"""The claims registry, the verdict rules, the per-notebook recorder and the ledger.

Every claim of the article lives in ``data/claims.yaml`` with the article's value, its unit,
the **method** k3lab checks it by, the **rule** that turns what was found into a verdict,
and the **tolerance** that rule uses. A notebook (through its finding module) hands numbers
to :meth:`Recorder.judge`; the rule named in the registry decides the verdict, capped by the
method. Nothing else in k3lab or in a notebook writes a verdict.

Methods (:data:`METHODS`): ``measured`` (ran here on real code or hardware), ``derived``
(computed independently from primary sources), ``arithmetic`` (recomputed from the
article's own numbers), ``emulated`` (real code in a state the study built), ``modelled``
(an analytic model with assumptions; the band or bound is stated), ``unchecked``.

Verdicts (:data:`VERDICTS`), and what each one may claim:

- ``reproduced``: an independent check (method ``measured`` or ``derived``) agrees within
  the stated tolerance. Nothing else can reach it (:func:`cap`).
- ``consistent``: the evidence agrees but cannot establish the claim by its method
  (``arithmetic`` on the article's own numbers, an ``emulated`` state, a ``modelled``
  band that is narrow enough to tell the claim from its negation).
- ``discrepancy``: the evidence disagrees; the evidence gives the size of the difference.
- ``corrected``: the article's statement is wrong in a way the evidence pins down (its unit,
  a contradiction with its own numbers, what really happens instead).
- ``not reproducible here``: nothing here can confirm it (an upper bound, a model fitted to
  the article's own numbers, a band too wide, hardware we lack); the notes say what live
  mode measures.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import data, io
from .paths import results_dir, results_root

METHODS = data.METHODS
VERDICTS = ("reproduced", "consistent", "discrepancy", "corrected", "not reproducible here")
INDEPENDENT = ("measured", "derived")
RECORD_COLUMNS = ["claim_id", "method", "reproduced", "bound", "verdict", "rule", "evidence", "notes"]
LEDGER_COLUMNS = ["claim_id", "finding", "quote", "claimed", "unit", "method", "reproduced",
                  "bound", "verdict", "rule", "tolerance", "evidence", "notes"]
#: what a notebook shows of its own records, and of the ledger
SUMMARY_COLUMNS = ["claim_id", "method", "reproduced", "bound", "verdict"]
LEDGER_VIEW = ["claim_id", "claimed", "method", "reproduced", "bound", "verdict", "evidence"]
#: a modelled band wider than this factor (high / low) cannot tell a claim from its negation
BAND_MAX_RATIO = 2.0


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
        if isinstance(self.claimed, bool):
            raise ValueError(f"claim {self.id}: claimed value {self.claimed!r} is not a number")
        if isinstance(self.claimed, (int, float)):
            return [float(self.claimed)]
        try:
            return [float(x) for x in str(self.claimed).split(" / ")]
        except ValueError:
            raise ValueError(f"claim {self.id}: claimed value {self.claimed!r} is not a number "
                             f"(or numbers separated by ' / ')") from None

    def tolerance_text(self) -> str:
        t = self.tolerance
        if t is None:
            return ""
        if t.digits:
            return "claim's own precision (half a unit in its last digit)"
        return f"±{t.rel:.1%} relative" if t.rel is not None else f"±{t.abs:g} {self.unit}"


def registry() -> dict[str, Claim]:
    """All claims of ``data/claims.yaml``, by ID, in the file's order (validated, cached)."""
    return _registry(id(data.load("claims")))


@functools.lru_cache(maxsize=4)
def _registry(_doc_id) -> dict[str, Claim]:
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


# --------------------------------------------------------------------------- rules


def cap(method: str, verdict: str) -> str:
    """The method caps the verdict: only ``measured``/``derived`` can be ``reproduced``;
    ``unchecked`` is always ``not reproducible here``."""
    if method == "unchecked":
        return "not reproducible here"
    if verdict == "reproduced" and method not in INDEPENDENT:
        return "consistent"
    return verdict


def _num(name, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise ValueError(f"rule input {name} must be a number, got {v!r}")
    return float(v)


def decimals_of(x: float) -> int:
    """Decimal places a number was stated with (48 → 0, 1.65 → 2, 0.333 → 3)."""
    s = repr(float(x))
    if "e" in s:
        return 0
    frac = s.split(".")[1]
    return 0 if frac == "0" else len(frac)


def round_half_up(x: float, nd: int) -> float:
    q = 10.0 ** nd
    return math.floor(x * q + 0.5) / q


def agrees(claim: Claim, value: float, claimed: float | None = None) -> bool:
    """``value`` agrees with the claimed number under the claim's tolerance."""
    c = claim.claimed_numbers[0] if claimed is None else claimed
    v = _num("value", value)
    t = claim.tolerance
    if t is None:
        raise ValueError(f"claim {claim.id}: rule {claim.rule!r} needs a tolerance in data/claims.yaml")
    if t.digits:
        nd = decimals_of(c)
        return round_half_up(v, nd) == round_half_up(c, nd)
    if t.rel is not None:
        return abs(v - c) <= t.rel * abs(c)
    return abs(v - c) <= t.abs


def rule_within_tolerance(claim, value=None, values=None, **_):
    """The number found agrees with the claimed one within the stated tolerance; with
    ``values`` (one per claimed number, e.g. "1400 / 1200"), every one must agree."""
    if values is None:
        return "reproduced" if agrees(claim, value) else "discrepancy"
    claimed = claim.claimed_numbers
    if len(values) != len(claimed):
        raise ValueError(f"claim {claim.id}: {len(values)} values for {len(claimed)} claimed numbers")
    return "reproduced" if all(agrees(claim, v, c) for v, c in zip(values, claimed)) else "discrepancy"


def rule_matches(claim, value, correction: str | None = None, **_):
    """What was found equals what the article says (a count, a flag, an error text, a
    rule). When it does not and ``correction`` says what really happens: ``corrected``."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    same = str(value) == _fmt(claim.claimed)
    return "reproduced" if same else ("corrected" if correction else "discrepancy")


def rule_holds(claim, holds: bool, correction: str | None = None, **_):
    """A stated fact or argument holds (``holds``) given the evidence; else ``corrected``
    when ``correction`` says what holds instead, ``discrepancy`` otherwise."""
    if not isinstance(holds, bool):
        raise ValueError(f"rule holds: 'holds' must be True or False, got {holds!r}")
    return "reproduced" if holds else ("corrected" if correction else "discrepancy")


def rule_unit_slip(claim, value, value_other_reading, **_):
    """The number agrees as stated (``reproduced``) or only when its unit is read the other
    way (``corrected``: right number, wrong unit)."""
    if agrees(claim, value):
        return "reproduced"
    return "corrected" if agrees(claim, value_other_reading) else "discrepancy"


def rule_rounding(claim, exact, from_rounded=None, **_):
    """Each exact value, rounded half up to the decimals the article stated, equals the claim.
    If only the same computation on the article's *rounded* inputs does, the article rounded
    first: ``consistent``. ``exact`` / ``from_rounded``: a number or a list (one per claimed
    value)."""
    claimed = claim.claimed_numbers
    ex = exact if isinstance(exact, (list, tuple)) else [exact]
    if len(ex) != len(claimed):
        raise ValueError(f"claim {claim.id}: {len(ex)} exact values for {len(claimed)} claimed")

    def same(vals):
        return all(round_half_up(_num("exact", v), decimals_of(c)) == round_half_up(c, decimals_of(c))
                   for v, c in zip(vals, claimed))

    if same(ex):
        return "reproduced"
    if from_rounded is not None:
        fr = from_rounded if isinstance(from_rounded, (list, tuple)) else [from_rounded]
        if same(fr):
            return "consistent"
    return "discrepancy"


def rule_self_contradiction(claim, value, **_):
    """The claimed number against the value the article's *own* other numbers imply: when
    they disagree the article contradicts itself (``corrected``)."""
    return "reproduced" if agrees(claim, value) else "corrected"


def rule_in_range(claim, low, high, x=None, **_):
    """``x`` (default: the claimed numbers) lies in [low, high]; ``low``/``high`` may be
    lists, one range per claimed number. For T5: each article price within independent
    prices of the same kind; for P8: the article's own average rate within the range it
    states."""
    xs = claim.claimed_numbers if x is None else (list(x) if isinstance(x, (list, tuple)) else [x])
    los = list(low) if isinstance(low, (list, tuple)) else [low] * len(xs)
    his = list(high) if isinstance(high, (list, tuple)) else [high] * len(xs)
    if not len(xs) == len(los) == len(his):
        raise ValueError(f"claim {claim.id}: {len(xs)} values for {len(los)} ranges")
    ok = True
    for v, lo, hi in zip(xs, los, his):
        lo, hi = _num("low", lo), _num("high", hi)
        if lo > hi:
            raise ValueError(f"rule in_range: low {lo} > high {hi}")
        ok &= lo <= _num("x", v) <= hi
    return "reproduced" if ok else "discrepancy"


def rule_ranges_overlap(claim, low, high, claimed_low, claimed_high, **_):
    """A range recomputed from the article's numbers overlaps the range it claims."""
    ok = _num("low", low) <= _num("claimed_high", claimed_high) and _num("high", high) >= _num("claimed_low", claimed_low)
    return "reproduced" if ok else "discrepancy"


def band_is_informative(low: float, high: float, no_effect: float | None = 1.0) -> bool:
    """A modelled band can tell a claim from its negation only if it spans at most
    :data:`BAND_MAX_RATIO` (high / low) and does not contain ``no_effect`` (e.g. a 1.0×
    speed-up)."""
    lo, hi = _num("low", low), _num("high", high)
    if lo <= 0 or hi < lo:
        raise ValueError(f"a band needs 0 < low <= high, got [{lo}, {hi}]")
    if hi / lo > BAND_MAX_RATIO:
        return False
    return not (no_effect is not None and lo <= no_effect <= hi)


def rule_model_band(claim, low, high, no_effect=1.0, claimed_value=None, **_):
    """A model's band [low, high] for the claimed number (``claimed_value`` when the claim
    states it in words, e.g. "+18%" → 1.18). Too wide (see :func:`band_is_informative`) →
    ``not reproducible here``; the claim inside → agrees (``consistent`` for a model);
    outside → ``discrepancy``."""
    if not band_is_informative(low, high, no_effect):
        return "not reproducible here"
    c = claim.claimed_numbers[0] if claimed_value is None else _num("claimed_value", claimed_value)
    return "reproduced" if _num("low", low) <= c <= _num("high", high) else "discrepancy"


def rule_upper_bound(claim, limit, **_):
    """A model's upper bound ``limit`` on the claimed number: a claim below it is possible,
    never confirmed (``not reproducible here``); a claim above it is a ``discrepancy``."""
    return "discrepancy" if claim.claimed_numbers[0] > _num("limit", limit) else "not reproducible here"


def rule_fitted_model(claim, **_):
    """A model fitted to the article's own numbers cannot confirm those numbers."""
    return "not reproducible here"


def rule_unchecked(claim, **_):
    """Nothing here could check it."""
    return "not reproducible here"


RULES = {
    "within_tolerance": rule_within_tolerance,
    "matches": rule_matches,
    "holds": rule_holds,
    "unit_slip": rule_unit_slip,
    "rounding": rule_rounding,
    "self_contradiction": rule_self_contradiction,
    "in_range": rule_in_range,
    "ranges_overlap": rule_ranges_overlap,
    "model_band": rule_model_band,
    "upper_bound": rule_upper_bound,
    "fitted_model": rule_fitted_model,
    "unchecked": rule_unchecked,
}


def verdict(claim_id: str, **inputs) -> str:
    """Apply the claim's rule (from the registry) to ``inputs``, capped by its method."""
    c = get(claim_id)
    return cap(c.method, RULES[c.rule](c, **inputs))


# --------------------------------------------------------------------------- recording


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


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
    ``inputs``: the numbers the claim's rule needs (see :data:`RULES`)."""
    c = get(claim_id)
    if not str(evidence).strip():
        raise ValueError(f"claim {claim_id}: evidence must say what the verdict rests on")
    if c.method in ("modelled", "unchecked") and value is not None:
        raise ValueError(f"claim {claim_id} is {c.method}: put the model's output in bound=, not value=")
    rule_inputs = dict(inputs)
    if value is not None:
        rule_inputs.setdefault("value", value)
    v = verdict(claim_id, **rule_inputs)
    return Record(claim_id, "" if value is None else _fmt(value), "" if bound is None else str(bound),
                  v, str(evidence), str(notes))


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

    def save(self):
        """Write the notebook's claims.csv; ValueError if one of its claims was not judged."""
        gap = self.missing()
        if gap:
            raise ValueError(f"{self.notebook_id} did not judge {', '.join(gap)}")
        out = self.out_dir or results_dir(self.notebook_id)
        return io.write_csv(self.frame(), out / "claims.csv")


# --------------------------------------------------------------------------- the ledger


def read_records(path, notebook_id: str) -> dict[str, dict]:
    """One notebook's ``claims.csv``, checked: exact columns, known claims that belong to
    ``notebook_id``, every claim of that notebook present once, verdicts and methods that
    match the registry. ValueError naming the file otherwise."""
    import pandas as pd

    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a readable claims file ({e})") from None
    if not Path(path).read_bytes().endswith(b"\n"):
        raise ValueError(f"{path}: truncated (its last row has no end of line)")
    if list(df.columns) != RECORD_COLUMNS:
        raise ValueError(f"{path}: columns {list(df.columns)} != {RECORD_COLUMNS}")
    reg = registry()
    out = {}
    for r in df.to_dict("records"):
        cid = r["claim_id"]
        if cid not in reg:
            raise ValueError(f"{path}: unknown claim {cid!r}")
        if reg[cid].notebook != notebook_id:
            raise ValueError(f"{path}: claim {cid} belongs to {reg[cid].notebook}, not {notebook_id}")
        if cid in out:
            raise ValueError(f"{path}: claim {cid} recorded twice")
        if r["verdict"] not in VERDICTS:
            raise ValueError(f"{path}: claim {cid} has unknown verdict {r['verdict']!r}")
        if r["method"] != reg[cid].method:
            raise ValueError(f"{path}: claim {cid} method {r['method']!r} != registry {reg[cid].method!r}")
        if cap(r["method"], r["verdict"]) != r["verdict"]:
            raise ValueError(f"{path}: claim {cid}: verdict {r['verdict']!r} is not allowed for method {r['method']!r}")
        out[cid] = r
    want = {c.id for c in reg.values() if c.notebook == notebook_id}
    if set(out) != want:
        raise ValueError(f"{path}: missing claims {sorted(want - set(out))} (truncated or stale file)")
    return out


def ledger(root=None, notebook_ids=None):
    """Join the claims files of the given notebooks (default: every notebook the registry
    names) with the registry → DataFrame of :data:`LEDGER_COLUMNS`, registry order.

    Each claim is read only from ``<root>/<its notebook>/claims.csv``: a stray folder is
    never read, a missing or truncated file is an error."""
    import pandas as pd

    root = results_root() if root is None else root
    reg = registry()
    nbs = sorted({c.notebook for c in reg.values()}) if notebook_ids is None else list(notebook_ids)
    found: dict[str, dict] = {}
    for nb in nbs:
        path = root / nb / "claims.csv"
        if not path.exists():
            raise ValueError(f"{path}: missing (did {nb} run?)")
        found.update(read_records(path, nb))
    rows = []
    for cid, c in reg.items():
        if c.notebook not in nbs:
            continue
        r = found[cid]
        rows.append({"claim_id": cid, "finding": c.finding, "quote": c.quote,
                     "claimed": _fmt(c.claimed), "unit": c.unit, "method": c.method,
                     "reproduced": r["reproduced"], "bound": r["bound"], "verdict": r["verdict"],
                     "rule": c.rule, "tolerance": c.tolerance_text(),
                     "evidence": r["evidence"], "notes": r["notes"]})
    return pd.DataFrame(rows, columns=LEDGER_COLUMNS)


def verdicts_by_method(df) -> str:
    """One line counting verdicts by method, e.g. ``reproduced: 9 derived, 3 measured;
    consistent: 6 arithmetic, 2 emulated; …``."""
    parts = []
    for v in VERDICTS:
        sub = df[df["verdict"] == v]
        if len(sub):
            counts = sub["method"].value_counts()
            inner = ", ".join(f"{n} {m}" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            parts.append(f"{v}: {inner}")
    return "; ".join(parts)


_VERDICT_WORD = re.compile("|".join(re.escape(v) for v in VERDICTS))


def verdict_literals(source: str) -> list[str]:
    """Verdict words appearing as string literals in ``source`` (a notebook code cell):
    a verdict must come from a rule, never be typed."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _VERDICT_WORD.fullmatch(node.value.strip()):
            hits.append(node.value)
    return hits
