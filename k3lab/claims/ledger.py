"""The ledger: every notebook's checked ``claims.csv`` joined with the registry."""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import results_root
from .record import NOT_JUDGED
from .registry import LEDGER_COLUMNS, RECORD_COLUMNS, registry
from .rules import CORRECTION_KINDS, TURNS, VERDICTS, base_verdict, cap, format_value, is_negative


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
        if cap(r["method"], r["verdict"], reg[cid].rule) != r["verdict"]:
            raise ValueError(f"{path}: claim {cid}: verdict {r['verdict']!r} is not allowed for method {r['method']!r}")
        out[cid] = r
    want = {c.id for c in reg.values() if c.notebook == notebook_id}
    if set(out) != want:
        raise ValueError(f"{path}: missing claims {sorted(want - set(out))} (truncated or stale file)")
    return out


def ledger(root=None, notebook_ids=None):
    """Join the claims files of the given notebooks (default: every notebook the registry
    names) with the registry → DataFrame of :data:`LEDGER_COLUMNS`, registry order. A notebook
    run with changed parameters (a what-if) judged nothing: its :data:`NOT_JUDGED` marker leaves
    its claims out, and ``df.attrs["not_judged"]`` maps it to the parameters it changed.

    Each claim is read only from ``<root>/<its notebook>/claims.csv``: a stray folder is
    never read, a missing or truncated file is an error."""
    import pandas as pd

    root = results_root() if root is None else root
    reg = registry()
    nbs = sorted({c.notebook for c in reg.values()}) if notebook_ids is None else list(notebook_ids)
    found: dict[str, dict] = {}
    skipped = {}
    for nb in nbs:
        path = root / nb / "claims.csv"
        if not path.exists():
            marker = root / nb / NOT_JUDGED
            if marker.exists():
                skipped[nb] = read_not_judged(marker, nb)
                continue
            raise ValueError(f"{path}: missing (did {nb} run?)")
        found.update(read_records(path, nb))
    rows = []
    for cid, c in reg.items():
        if c.notebook not in nbs or c.notebook in skipped:
            continue
        r = found[cid]
        rows.append({"claim_id": cid, "finding": c.finding, "quote": c.quote,
                     "claimed": format_value(c.claimed), "unit": c.unit, "method": c.method,
                     "reproduced": r["reproduced"], "bound": r["bound"], "verdict": r["verdict"],
                     "rule": c.rule, "tolerance": c.tolerance_text(),
                     "evidence": r["evidence"], "notes": r["notes"], "correction_kind": r["correction_kind"],
                     "rebuttal": r["rebuttal"]})
    df = pd.DataFrame(rows, columns=LEDGER_COLUMNS)
    df.attrs["not_judged"] = skipped
    return df


def read_not_judged(path, notebook_id: str) -> dict:
    """The parameters a what-if run of ``notebook_id`` changed (its :data:`NOT_JUDGED` file),
    checked: ValueError naming the file otherwise."""
    import json

    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable not-judged marker ({e})") from None
    if not isinstance(d, dict) or d.get("notebook") != notebook_id or not isinstance(d.get("changed"), dict) \
            or not d["changed"]:
        raise ValueError(f"{path}: expected {{'notebook': {notebook_id!r}, 'changed': {{...}}}}")
    return d["changed"]


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


def corrections_by_kind(df) -> dict[str, int]:
    """The negative verdicts of a ledger counted by their correction kind (substantive,
    precision, literal; ``kind not recorded`` for a negative row without one), kinds with none left out."""
    neg = df[df["verdict"].map(is_negative)] if len(df) else df
    kinds = neg["correction_kind"].replace("", "kind not recorded") if "correction_kind" in neg else \
        neg["verdict"].map(lambda _: "kind not recorded")
    counts = kinds.value_counts()
    order = [*CORRECTION_KINDS, "kind not recorded"]
    return {k: int(counts[k]) for k in order if counts.get(k, 0)}


def plain_answer(df) -> str:
    """One sentence a reader can act on: how many claims were independently shown, how many
    are consistent without independent proof, how many are wrong (by kind of correction), how
    many disagree with weaker evidence, how many turn on the price, how many could not be checked here."""
    v = df["verdict"].map(base_verdict).value_counts()
    strong = df[df["verdict"].map(base_verdict).isin(("discrepancy", "corrected"))] if len(df) else df
    kinds = corrections_by_kind(strong)
    by_kind = f" ({', '.join(f'{n} {k}' for k, n in kinds.items())})" if kinds else ""
    return (f"Of the article's {len(df)} claims, {v.get('reproduced', 0)} were shown independently "
            f"(measured or derived); {v.get('consistent', 0)} are consistent with the evidence without being shown "
            f"independently; {v.get('discrepancy', 0) + v.get('corrected', 0)} are wrong or "
            f"needed correcting{by_kind}; {v.get('inconsistent', 0)} disagree with evidence that cannot show them "
            f"wrong (the study's emulation, model, public measurements or a few prices); "
            + (f"{v[TURNS]} turn{'s' if v[TURNS] == 1 else ''} on the price; " if v.get(TURNS, 0) else "")
            + f"{v.get('not reproducible here', 0)} could not be checked here.")


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
