"""The article's bottom line for a reader, from the claims ledger: per finding, what holds, what
does not (by kind of correction), what turns on the price, and what this study could not check
and why — computed from the verdicts of :mod:`k3lab.claims` (a ledger DataFrame, the columns of
``results/claims.csv``), never typed.

- :func:`headline`: the article's bottom line as the ledger judges it: its title, "The CUDA moat is
  a patch away" (:data:`TITLE_LINE`: its mechanism, S12, and its effort, S13), then its conclusion,
  "the direction is hard to argue with" (the MI355X ahead of the B300 on perf/$,
  :data:`BOTTOM_LINE`): the direction at the article's own throughput under each pair of rental
  prices with its break-even price ratio and how thin its margins are (T20), the ~45% apart (T26),
  the serving model at matched latency by TPOT target (T21), and the article's B200 figure against
  public runs on a faster link under each reading of its own link (:data:`B200_LINE`: T23, T27);
- :func:`finding_lines`: one sentence per finding, its claims sorted by what a reader can do
  with them (:func:`reading`);
- :func:`readme_text` (markdown) and :func:`html` (the report's opening box) say both.

A ledger without the bottom-line claims (a partial run, a test's) says so instead of guessing.
"""

from __future__ import annotations

import html as _html

from . import claims

#: the findings in the order the study presents them, with their titles
FINDING_TITLES = {"memory": "1 · memory fit", "spec_decode": "2 · top-k renorm fix",
                  "prefill": "3 · head padding / TTFT", "throughput": "4 · throughput and perf/$"}
#: the claims that judge the article's bottom line: the direction at its own throughput, on the
#: serving model, and the magnitude
BOTTOM_LINE = ("T20", "T21", "T26")
#: the B200 comparison against the network it ran on (the split's cost, the 7x)
B200_LINE = ("T23", "T27")
#: the title of the article's bottom line, "The CUDA moat is a patch away": its mechanism (no kernel needed, not
#: a silicon limit) and its effort ("an afternoon"), two rows (audit 3)
TITLE_LINE = ("S12", "S13")
#: what a base verdict tells a reader, in the order a finding's sentence lists them; a negative one
#: is read by its kind of correction (:data:`CORRECTED_AS`)
READINGS = {"reproduced": "holds (shown here)",
            "consistent": "holds as far as this study can tell (not shown independently)",
            "discrepancy": "does not hold", "corrected": "does not hold",
            claims.TURNS: "turns on the price",
            "inconsistent": "disagrees with evidence that cannot show it wrong (an emulation, a model, public "
                            "measurements or a few prices)",
            "not reproducible here": "not decided here"}
#: a consistent row whose method is arithmetic on the article's own numbers (audit 5: its inputs are not checked,
#: so it does not read as holding)
ADDS_UP = "adds up on the article's own numbers (its inputs not checked here)"  # audit 4: checked, or not checkable; the reason follows each row
#: a discrepancy or correction, by its kind (k3lab.claims.CORRECTION_KINDS)
CORRECTED_AS = {"substantive": "does not hold",
                "precision": "holds, with a correction of precision",
                "literal": "holds as meant, wrong as worded"}
#: the order a finding's sentence lists the readings in
ORDER = ("holds (shown here)", "holds as far as this study can tell (not shown independently)", ADDS_UP,
         CORRECTED_AS["literal"], CORRECTED_AS["precision"], READINGS[claims.TURNS], READINGS["inconsistent"],
         CORRECTED_AS["substantive"], READINGS["not reproducible here"])
#: why a claim could not be checked, by the rule that judged it (a model's row: by its bound)
WHY_NOT = {"unchecked": "nothing here can check it", "bound": "the evidence is a bound only",
           "validated_model": "the serving model's band is too wide to tell",
           "direction": "the serving model's band cannot call every pair of prices",
           "holds": "it turns on a setting the article does not state",
           "cited": "no public measurement of its setting can speak to it"}
OUTSIDE = "outside its domain"


def _rows(df) -> dict[str, dict]:
    return {r["claim_id"]: r for r in df.to_dict("records")}


def correction(row: dict) -> str:
    """What holds instead (``correction: …``), or why the evidence cannot decide (``undecided: …``),
    as the record's notes open with it, to its first '; ' outside parentheses (one inside belongs to
    the sentence: cut there, the sentence would stop mid-parenthesis)."""
    notes = str(row.get("notes", ""))
    for head in ("correction: ", "undecided: "):
        if notes.startswith(head):
            text, depth = notes[len(head):], 0
            for i, ch in enumerate(text):
                depth += {"(": 1, ")": -1}.get(ch, 0)
                if depth == 0 and text.startswith("; ", i):
                    return text[:i]
            return text
    return ""


def reading(row: dict) -> str:
    """What a row tells a reader (:data:`READINGS`; a discrepancy or a correction by its kind)."""
    base = claims.base_verdict(row["verdict"])
    if base in ("discrepancy", "corrected"):
        return CORRECTED_AS.get(str(row.get("correction_kind") or ""), READINGS[base])
    if base == "consistent" and row.get("method") == "arithmetic":
        return ADDS_UP
    return READINGS[base]


def _direction(row: dict) -> str:
    b = claims.base_verdict(row["verdict"])
    return {"reproduced": "holds in direction under every pair of rental prices found",
            "consistent": "holds in direction at the article's own (self-reported) throughput under every pair of rental "
                          "prices found",
            claims.TURNS: "turns on the price", "not reproducible here": "cannot be settled here"}.get(b, "does not hold")


def _size(row: dict) -> str:
    """What the ledger says of the ~45% (T26), by its base verdict."""
    b = claims.base_verdict(row["verdict"])
    return {"reproduced": "holds at every pair of rental prices found", "consistent": "holds at every pair found",
            claims.TURNS: "depends on which price is paired", "not reproducible here": "cannot be settled here"}.get(
        b, "does not hold at the prices found")


def _said(row: dict) -> str:
    """'(S13: corrected)': the row's id and verdict, as the opening cites them."""
    return f"({row['claim_id']}: {row['verdict']})"


def headline_parts(df) -> list[tuple[str, str]]:
    """The article's bottom line judged, part by part: (what is judged, the sentence) for its title
    (:data:`TITLE_LINE`, when the ledger has it), :data:`BOTTOM_LINE`'s direction, size and
    matched-latency rows, and :data:`B200_LINE`'s (when the ledger has them); one part saying so when
    the ledger lacks :data:`BOTTOM_LINE`."""
    rows = _rows(df)
    if not all(c in rows for c in BOTTOM_LINE):
        return [("", f"The article's bottom line ({', '.join(BOTTOM_LINE)}: the MI355X ahead of the B300 on perf/$) "
                     "is not in this ledger.")]
    out = []
    title = [rows[c] for c in TITLE_LINE if c in rows]
    if title:
        out.append(("the title", "The article's bottom line is titled \u201cThe CUDA moat is a patch away\u201d: "
                    + "; ".join(_title_part(t) for t in title) + "."))
    art, mod, mag = (rows[c] for c in BOTTOM_LINE)
    out.append(("the direction", f"Its conclusion, \u201cthe direction is hard to argue with\u201d (the MI355X ahead "
                f"of the B300 on perf/$), {_direction(art)}: there they put the MI355X {art['reproduced']} "
                f"{_said(art)}" + (f"; {art['bound']}" if art["bound"] else "") + "."))
    out.append(("the size", f"The size, its ~45%, {_size(mag)} {_said(mag)}: {correction(mag) or mag['reproduced']}."))
    out.append(("at matched latency", f"On the serving model at matched latency (each node at the same TPOT), "
                f"{correction(mod) or mod['bound'].removeprefix('model: ')} {_said(mod)}."))
    b200 = [rows[c] for c in B200_LINE if c in rows]
    if b200:
        out.append(("against the B200", "Against the B200: " + "; ".join(
            f"{correction(r) or r['reproduced']} {_said(r)}" for r in b200) + "."))
    return out


def headline(df) -> str:
    """:func:`headline_parts` as one paragraph (the README's)."""
    return " ".join(text for _, text in headline_parts(df))


#: what each row of :data:`TITLE_LINE` judges of the title
TITLE_PARTS = {"S12": "as a mechanism (no kernel needed, not a silicon limit)", "S13": "as an effort ('an afternoon')"}


def _title_part(row: dict) -> str:
    """'as a mechanism … it holds as far as this study can tell (S12: consistent (emulated))': one row of the title."""
    fix = correction(row)
    read = reading(row)
    read = "cannot be checked here" if read == READINGS["not reproducible here"] else read
    return (f"{TITLE_PARTS.get(row['claim_id'], row['claim_id'])} it {read} {_said(row)}"
            + (f": {fix}" if fix else ""))


def _item(row: dict, read: str) -> str:
    cid = row["claim_id"]
    if read in CORRECTED_AS.values() or read in (READINGS["inconsistent"], READINGS[claims.TURNS]):
        fix = correction(row)
        return f"{cid} ({fix})" if fix else f"{cid} (claimed {row['claimed']}, found {row['reproduced'] or row['bound']})"
    if read == READINGS["not reproducible here"]:
        bound = str(row["bound"])
        why = correction(row) or (
            "the question is outside the serving model's validated domain" if OUTSIDE in bound
            else "the serving model is not validated for it (too few public sources, or a band wider than ×2)"
            if "not validated" in bound else WHY_NOT.get(row["rule"], "nothing here can decide it"))
        return f"{cid} ({why})"
    return cid


def finding_lines(df) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """Per finding (in :data:`FINDING_TITLES` order, then any other): (title, [(reading, items)])
    where each reading (:data:`ORDER`) that some claim has lists its claims (with what holds
    instead, or why not checked)."""
    out = []
    findings = [f for f in FINDING_TITLES if f in set(df["finding"])] + \
        sorted(set(df["finding"]) - set(FINDING_TITLES))
    for f in findings:
        sub = [r for r in df.to_dict("records") if r["finding"] == f and r["verdict"]]
        parts = []
        for read in ORDER:
            items = [_item(r, read) for r in sub if reading(r) == read]
            if items:
                parts.append((read, items))
        out.append((FINDING_TITLES.get(f, f), parts))
    return out


def _sentence(parts) -> str:
    return "; ".join(f"{read}: {', '.join(items)}" for read, items in parts) + "."


def readme_text(df) -> str:
    """The bottom line as markdown, for the README's top (the lead pastes it): the headline,
    then one bullet per finding."""
    lines = [f"**The article's bottom line, judged.** {headline(df)}", ""]
    lines += [f"- **{title}** — {_sentence(parts)}" for title, parts in finding_lines(df)]
    return "\n".join(lines)


#: the report's fold over the per-finding lines (below the headline's parts, above the decision box)
CLAIM_BY_CLAIM = "Claim by claim, per finding"


def html(df) -> str:
    """The report's opening box (``id="bottom-line"``): the headline, then the per-finding lines."""
    e = _html.escape
    items = "".join(f"<li><b>{e(title)}</b> — {e(_sentence(parts))}</li>" for title, parts in finding_lines(df))
    # the headline part by part, each under what it judges, so that a reader can scan it
    head = "".join(f"<li><b>{e(label[:1].upper() + label[1:])}</b> — {e(text)}</li>" if label else f"<li>{e(text)}</li>"
                   for label, text in headline_parts(df))
    return (f'<div class="decision" id="bottom-line"><h2>The article\'s bottom line, judged</h2>'
            f'<ul class="answer headline">{head}</ul><details><summary><b>{CLAIM_BY_CLAIM}</b> ({len(df)} claims)'
            f'</summary><ul class="answer">{items}</ul></details></div>')
