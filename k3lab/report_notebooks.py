"""An executed notebook as the report's HTML: its markdown rendered, each code cell folded in a
``<details>``, each output below it — a displayed DataFrame as the page's table (from the CSV
the cell wrote of it, where there is one), a table of claims as a line pointing into the
page's ledger, a PNG inline, a stream or traceback as text. Everything is made inert: no
scripts, frames or linked resources (the page renders offline).
"""

from __future__ import annotations

import ast
import html
import re
from dataclasses import dataclass
from pathlib import Path

from . import claims
from .report_html import verdict_badge
from .report_tables import restyle_html, table_html

_esc = html.escape


_ACTIVE = re.compile(r"<(script|iframe|object|embed)\b.*?</\1\s*>|<(script|iframe|object|embed|link|base)\b[^>]*>",
                     re.I | re.S)
_REMOTE = re.compile(r"""\b(src|srcset|data|poster)\s*=\s*(["']?)(?:https?:)?//[^"'\s>]*\2|url\([^)]*\)|@import""",
                     re.I)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _clean_html(s: str) -> str:
    """Notebook HTML made inert: no scripts, frames or linked resources (the page renders offline)."""
    return _REMOTE.sub("", _ACTIVE.sub("", s))


def markdown_html(text: str) -> str:
    """A notebook's markdown as HTML (tables, strikethrough). No math: in these notebooks ``$``
    is a currency, and a page without scripts could not typeset math anyway (nbconvert's
    renderer reads ``$/GPU-hour … perf/$`` as one formula and leaves its ``**bold**`` literal)."""
    import mistune

    return _clean_html(mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])(text))


def displayed_csv(source: str) -> str | None:
    """The CSV a code cell wrote of the frame it displays: the cell ends with a bare name ``X``
    and calls ``io.write_csv(X, <path ending in "name.csv">)`` → ``"name.csv"``; else None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[-1], ast.Expr) or not isinstance(tree.body[-1].value, ast.Name):
        return None
    shown = tree.body[-1].value.id
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "write_csv"
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == shown):
            names = [c.value for c in ast.walk(node.args[1])
                     if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            if names and names[-1].endswith(".csv"):
                return names[-1].rsplit("/", 1)[-1]
    return None


@dataclass
class NotebookContext:
    """What rendering one notebook needs from the page: its folder (for the CSVs its cells
    wrote), its id, the ledger's claim ids (None: no ledger on the page) and whether the run
    is a what-if run."""
    folder: Path
    nb_id: str
    ledger_ids: frozenset | None = None
    what_if: bool = False


def claims_table_html(frame, ctx: NotebookContext) -> str | None:
    """A displayed table of claims (``claim_id`` and ``verdict`` columns), told in a line:
    empty → that nothing was judged (a what-if run judges nothing); rows the page's ledger
    holds → counts by verdict and a link to each row of the ledger (the ledger is on the page
    once). None: not such a table, or rows the ledger lacks (then it is shown as a table)."""
    if not {"claim_id", "verdict"} <= set(frame.columns):
        return None
    if len(frame) == 0:
        return ('<p class="empty">No verdicts: a what-if run judges none of the article\'s claims.</p>'
                if ctx.what_if else '<p class="empty">No verdicts recorded.</p>')
    ids = [str(x) for x in frame["claim_id"]]
    if ctx.ledger_ids is None or not set(ids) <= ctx.ledger_ids:
        return None
    counts = frame["verdict"].fillna("").astype(str).value_counts()
    tally = ", ".join(f"{verdict_badge(v)} {counts[v]}" for v in [*claims.VERDICTS, ""] if counts.get(v, 0))
    links = " ".join(f'<a href="#claim-{_esc(i)}">{_esc(i)}</a>' for i in ids)
    return (f'<p class="ledger-ref">{"All " if len(ids) == len(ctx.ledger_ids) else ""}{len(ids)} claims: {tally}. '
            f'Each is one row of the <a href="#ledger">claims ledger</a> above (shown once): {links}</p>')


def _output_html(out, ctx: NotebookContext, csv_name: str | None = None) -> str:
    kind, d = out.get("output_type"), out.get("data", {})
    if kind == "stream":
        text = _ANSI.sub("", "".join(out.get("text", "")))
        return f'<pre class="{_esc(out.get("name", "stdout"))}">{_esc(text)}</pre>'
    if kind == "error":
        tb = _ANSI.sub("", "\n".join(out.get("traceback", [])) or f"{out.get('ename')}: {out.get('evalue')}")
        return f'<pre class="stderr">{_esc(tb)}</pre>'
    if "image/png" in d:
        return f'<img alt="figure" src="data:image/png;base64,{"".join(d["image/png"]).strip()}">'
    if "text/html" in d or "image/svg+xml" in d:
        raw = "".join(d.get("text/html") or d["image/svg+xml"])
        csv = ctx.folder / csv_name if csv_name else None
        if csv is not None and csv.is_file() and 'class="dataframe"' in raw:
            return _csv_table_html(csv, ctx)
        return f'<div class="html-out">{_clean_html(restyle_html(raw, lambda f: claims_table_html(f, ctx)))}</div>'
    if "text/markdown" in d:
        return markdown_html("".join(d["text/markdown"]))
    return f'<pre>{_esc("".join(d["text/plain"]))}</pre>' if "text/plain" in d else ""


def _csv_table_html(csv: Path, ctx: NotebookContext) -> str:
    """A table the notebook displayed, from the CSV its cell wrote of it (whole: no cell or
    column pandas' display cut), with a link to that file."""
    df = _read_csv(csv)
    told = claims_table_html(df, ctx)
    return told if told is not None else table_html(df, full_csv=f"{ctx.nb_id}/{csv.name}",
                                                    empty=f"no rows for this run ({csv.name} is empty)")


def _read_csv(path: Path):
    """A CSV a notebook wrote; an empty file (an empty frame) → an empty DataFrame."""
    import pandas as pd

    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def notebook_html(path: Path, ctx: NotebookContext | None = None) -> tuple[str, dict, str]:
    """(HTML, papermill parameters, title) of one executed notebook: markdown rendered (its
    first ``# heading`` becomes the title), every code cell collapsed in ``<details>``, outputs
    below it: a displayed DataFrame as the page's table (:mod:`k3lab.report_tables`, from the
    CSV the cell wrote of it where there is one), a table of claims as a line pointing into
    the ledger, PNGs inline."""
    import nbformat

    ctx = ctx or NotebookContext(path.parent, path.stem)
    nb = nbformat.read(path, as_version=4)
    parts, title = [], ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            src = cell.source
            if not title:
                m = re.match(r"\s*#\s+(.+)\n?", src)
                if m:
                    title, src = m.group(1).strip(), src[m.end():]
            parts.append(f'<div class="md">{markdown_html(src)}</div>')
        elif cell.cell_type == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            label = next((t for t in ("parameters", "injected-parameters") if t in tags), "code")
            csv_name = displayed_csv(cell.source)
            parts.append(f"<details><summary>{label}</summary><pre><code>{_esc(cell.source)}</code></pre></details>"
                         + "".join(_output_html(o, ctx, csv_name if o.get("output_type") == "execute_result" else None)
                                   for o in cell.get("outputs", [])))
    return "".join(parts), dict(nb.metadata.get("papermill", {}).get("parameters", {}) or {}), title


def perf_csvs_html(root: Path) -> str:
    """Every ``*perf_per_dollar*.csv`` the run's notebooks wrote (``<root>/NN_*/``), each as the
    page's table with a link to its file; an empty one as a line."""
    out = []
    for csv in sorted(root.glob("[0-9][0-9]_*/*perf_per_dollar*.csv")):
        rel = str(csv.relative_to(root))
        df = _read_csv(csv)
        out.append(table_html(df, full_csv=rel, empty=f"{rel}: no rows for this run") if df.empty else
                   f"<h4>{_esc(rel)} (written by the run's notebook)</h4>" + table_html(df, full_csv=rel))
    return "".join(out)
