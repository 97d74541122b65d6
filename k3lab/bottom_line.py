"""The article's bottom line for a reader, from the claims ledger: per finding, what holds, what
does not, and what this study could not check and why — computed from the verdicts of
:mod:`k3lab.claims` (a ledger DataFrame, the columns of ``results/claims.csv``), never typed.

- :func:`headline`: the article's conclusion, "the direction is hard to argue with" (the MI355X
  ahead of the B300 on perf/$), as the ledger judges it (:data:`BOTTOM_LINE`: at the article's
  own throughput and on the serving model, under every independent price source);
- :func:`finding_lines`: one sentence per finding, its claims sorted by what a reader can do
  with them (:data:`READINGS`);
- :func:`readme_text` (markdown) and :func:`html` (the report's opening box) say both.

A ledger without the bottom-line claims (a partial run, a test's) says so instead of guessing.
"""

from __future__ import annotations

import html as _html

from . import claims

#: the findings in the order the study presents them, with their titles
FINDING_TITLES = {"memory": "1 · memory fit", "spec_decode": "2 · top-k renorm fix",
                  "prefill": "3 · head padding / TTFT", "throughput": "4 · throughput and perf/$"}
#: the claims that judge the article's bottom line: at its own throughput, on the serving model
BOTTOM_LINE = ("T20", "T21")
#: what a base verdict tells a reader, in the order a finding's sentence lists them
READINGS = {"reproduced": "holds (shown here)",
            "consistent": "holds as far as this study can tell (not shown independently)",
            "discrepancy": "does not hold", "corrected": "does not hold",
            "inconsistent": "disagrees with the study's emulation, model or public measurements (not shown wrong)",
            "not reproducible here": "not checked here"}
#: why a claim could not be checked, by the rule that judged it (a model's row: by its bound)
WHY_NOT = {"unchecked": "nothing here can check it", "lower_bound": "the evidence is a lower bound only",
           "validated_model": "the serving model's band is too wide to tell",
           "direction": "the serving model's band cannot call every price source",
           "holds": "it turns on a setting the article does not state", "cited": "no public measurement of its setting"}
OUTSIDE = "outside its domain"


def _rows(df) -> dict[str, dict]:
    return {r["claim_id"]: r for r in df.to_dict("records")}


def correction(row: dict) -> str:
    """What holds instead, as the record's notes carry it (``correction: …``), to its first ';'."""
    notes = str(row.get("notes", ""))
    return notes[len("correction: "):].split("; ")[0] if notes.startswith("correction: ") else ""


def headline(df) -> str:
    """One sentence: the article's bottom line judged, from :data:`BOTTOM_LINE`'s rows."""
    rows = _rows(df)
    if not all(c in rows for c in BOTTOM_LINE):
        return (f"The article's bottom line ({', '.join(BOTTOM_LINE)}: the MI355X ahead of the B300 on perf/$) is not "
                "in this ledger.")
    art, mod = (rows[c] for c in BOTTOM_LINE)
    a, m = claims.base_verdict(art["verdict"]), claims.base_verdict(mod["verdict"])
    if a in ("discrepancy", "corrected"):
        judged = "does not hold as stated"
    elif a == m == "consistent" or (a == "consistent" and m == "reproduced"):
        judged = "holds as far as this study can tell"
    else:
        judged = "cannot be settled here"
    fix = correction(art)
    return (f"The article's bottom line, \u201cthe direction is hard to argue with\u201d (the MI355X ahead of the B300 "
            f"on perf/$ by ~45%), {judged}: at the article's own throughput, independent prices put the MI355X's lead "
            f"at {art['reproduced']} ({art['claim_id']}: {art['verdict']}); on the serving model it is "
            f"{mod['bound'].removeprefix('model: ')} ({mod['claim_id']}: {mod['verdict']})."
            + (f" What holds instead: {fix}." if fix else ""))


def _item(row: dict, reading: str) -> str:
    cid = row["claim_id"]
    if reading == "does not hold":
        fix = correction(row)
        return f"{cid} ({fix})" if fix else f"{cid} (claimed {row['claimed']}, found {row['reproduced'] or row['bound']})"
    if reading == "not checked here":
        bound = str(row["bound"])
        why = ("the question is outside the serving model's validated domain" if OUTSIDE in bound
               else "the serving model is not validated for it (too few public sources, or a band wider than ×2)"
               if "not validated" in bound else WHY_NOT.get(row["rule"], "nothing here can decide it"))
        return f"{cid} ({why})"
    return cid


def finding_lines(df) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """Per finding (in :data:`FINDING_TITLES` order, then any other): (title, [(reading, items)])
    where each reading of :data:`READINGS` that some claim has lists its claims (with what
    holds instead, or why not checked)."""
    out = []
    findings = [f for f in FINDING_TITLES if f in set(df["finding"])] + \
        sorted(set(df["finding"]) - set(FINDING_TITLES))
    for f in findings:
        sub = [r for r in df.to_dict("records") if r["finding"] == f]
        parts = []
        for reading in dict.fromkeys(READINGS.values()):
            items = [_item(r, reading) for r in sub if r["verdict"] and READINGS[claims.base_verdict(r["verdict"])] == reading]
            if items:
                parts.append((reading, items))
        out.append((FINDING_TITLES.get(f, f), parts))
    return out


def _sentence(parts) -> str:
    return "; ".join(f"{reading}: {', '.join(items)}" for reading, items in parts) + "."


def readme_text(df) -> str:
    """The bottom line as markdown, for the README's top (the lead pastes it): the headline,
    then one bullet per finding."""
    lines = [f"**The article's bottom line, judged.** {headline(df)}", ""]
    lines += [f"- **{title}** — {_sentence(parts)}" for title, parts in finding_lines(df)]
    return "\n".join(lines)


def html(df) -> str:
    """The report's opening box (``id="bottom-line"``): the headline, then the per-finding lines."""
    e = _html.escape
    items = "".join(f"<li><b>{e(title)}</b> — {e(_sentence(parts))}</li>" for title, parts in finding_lines(df))
    return (f'<div class="decision" id="bottom-line"><h2>The article\'s bottom line, judged</h2>'
            f'<p class="answer">{e(headline(df))}</p><ul class="answer">{items}</ul></div>')
