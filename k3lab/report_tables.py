"""Tables for people: the one formatter of the report's tables and of the notebooks' displayed ones.

:func:`table_html` turns a DataFrame into an HTML table a reader can scan: no index column (a
meaningless 0…n index is dropped; a named index becomes ordinary columns), every cell as
:mod:`k3lab.report_cells` writes it (a dash for a missing value, thousands separators, no
scientific notation, $ columns with cents, units in the headers, markdown rendered), and a
table wider than :data:`MAX_COLUMNS` shown as the columns a reader needs (columns that are
empty or the same in every row are said once in a line; a family of ``name[key]`` columns
becomes one min – max column) with the full table in a ``<details>``. Every table sits in a
``div.table-wrap`` that scrolls sideways inside its section, never the page.

In a notebook, end a cell with ``report_tables.show(df)`` for the same table.

:func:`restyle_html` rewrites the DataFrames a notebook displayed (pandas' ``to_html``) into the
same format, for notebooks executed before they used :func:`show`.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from .report_cells import (COLUMN_FAMILY, DASH, MISSING_TEXT, auto_decimals, column_cells, format_number,
                           header_label, is_missing, is_money, is_number, plain_value)

#: a table with more columns than this is shown as the columns a reader needs, the rest folded
MAX_COLUMNS = 14
_esc = html.escape


def html_table(headers, rows, numeric=(), cls: str = "grid", caption: str = "", wide: bool = False) -> str:
    """The one table markup of the page: ``headers`` and ``rows`` are HTML already; columns
    whose index is in ``numeric`` are right-aligned; wrapped in a sideways-scrolling div (a
    shadow at an edge shows there is more). ``wide``: a table meant to be wider than the page
    (a folded full table): its cells keep a readable width and it scrolls, never squeezed."""
    num = set(numeric)
    head = "".join(f'<th{" class=num" if i in num else ""}>{h}</th>' for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td{" class=num" if i in num else ""}>{c}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    cap = f"<caption>{caption}</caption>" if caption else ""
    return (f'<div class="table-wrap{" wide" if wide else ""}"><table class="{cls}">{cap}<thead><tr>{head}</tr>'
            f"</thead><tbody>{body}</tbody></table></div>")


# ---------------------------------------------------------------- DataFrames

def _flat(df):
    """No index column: an unnamed integer index (row numbers, also after filtering) is dropped,
    any other becomes columns; MultiIndex columns are joined with ' · '."""
    import pandas as pd

    df = df.copy()
    if isinstance(df.columns, pd.MultiIndex):
        df.columns = [" · ".join(str(x) for x in c if str(x) != "") for c in df.columns]
    idx = df.index
    row_numbers = idx.nlevels == 1 and idx.name is None and pd.api.types.is_integer_dtype(idx.dtype)
    if not row_numbers:
        names = [n if n is not None else ("" if idx.nlevels == 1 else f"level {i}") for i, n in enumerate(idx.names)]
        df.index = idx.set_names(names)
        df = df.reset_index()
    df.columns = [str(c) for c in df.columns]
    return df


def reader_view(df, max_columns: int = MAX_COLUMNS):
    """(view, notes): the columns a reader needs of a wide table. Columns empty in every row
    and (with two or more rows) columns with one value are dropped and said in ``notes``; a
    family ``name[key]`` of three or more columns becomes one min – max text column; then the
    first ``max_columns`` columns are kept. A table of ``max_columns`` columns or fewer is
    returned whole."""
    import pandas as pd

    if len(df.columns) <= max_columns:
        return df, []
    notes = []
    empty = [c for c in df.columns if all(is_missing(v) for v in df[c])]
    if empty:
        notes.append("empty in every row: " + ", ".join(header_label(c) for c in empty))
    same = []
    if len(df) >= 2:
        for c in df.columns:
            if c in empty:
                continue
            vals = {str(plain_value(v)) for v in df[c]}
            if len(vals) == 1:
                same.append(c)
    if same:
        cells = {c: column_cells(df[c].iloc[:1], header_label(c))[0][0] for c in same}
        notes.append("the same in every row: " + "; ".join(f"{_esc(header_label(c))} {cells[c]}" for c in same))
    families: dict[str, list[str]] = {}
    for c in df.columns:
        m = COLUMN_FAMILY.match(c)
        if m and c not in empty:
            families.setdefault(m["stem"], []).append(c)
    families = {k: v for k, v in families.items() if len(v) >= 3}
    out, done = {}, set()
    for c in df.columns:
        if c in empty or c in same:
            continue
        m = COLUMN_FAMILY.match(c)
        if m and m["stem"] in families:
            stem = m["stem"]
            if stem in done:
                continue
            cols = families[stem]
            label = header_label(stem)
            _, numeric = column_cells([v for cc in cols for v in df[cc]], label)
            dec = 2 if is_money(label) else auto_decimals([v for cc in cols for v in df[cc]])

            def span(row, cols=cols, dec=dec):
                vals = [row[cc] for cc in cols if is_number(row[cc])]
                if not vals:
                    return DASH
                lo, hi = min(vals), max(vals)
                return format_number(lo, dec) if lo == hi else f"{format_number(lo, dec)} – {format_number(hi, dec)}"

            out[f"{label}: min – max of {len(cols)}"] = [span(r) for r in df[cols].to_dict("records")]
            notes.append(f"{_esc(label)}: min – max over {len(cols)} columns "
                         f"({_esc(', '.join(COLUMN_FAMILY.match(x)['key'] for x in cols))})")
            done.add(stem)
        else:
            out[c] = list(df[c])
    view = pd.DataFrame(out, index=range(len(df)))
    if len(view.columns) > max_columns:
        rest = list(view.columns[max_columns:])
        notes.append(f"{len(rest)} more column(s) in the full table: "
                     + ", ".join(_esc(header_label(c)) for c in rest))
        view = view[list(view.columns[:max_columns])]
    return view, notes


def table_html(df, *, decimals: dict | None = None, html_columns=(), empty: str = "no rows",
               max_columns: int = MAX_COLUMNS, full_csv: str | None = None, caption: str = "",
               cls: str = "grid") -> str:
    """A DataFrame as the page's table (see the module docstring).

    ``decimals``: {column: decimals} where the automatic choice is not wanted; ``html_columns``:
    columns whose cells are HTML already (badges); ``empty``: the one line said instead of an
    empty table; ``full_csv``: a relative link to the file the table came from; ``max_columns``:
    above it, :func:`reader_view` and the full table in a ``<details>``."""
    decimals = decimals or {}
    link = f' — <a href="{_esc(full_csv)}">{_esc(full_csv.rsplit("/", 1)[-1])}</a>' if full_csv else ""
    if df is None or len(df) == 0:
        return f'<p class="empty">{_esc(empty)}{link}</p>'
    df = _flat(df)
    view, notes = reader_view(df, max_columns)
    out = _frame_table(view, decimals, html_columns, cls, caption)
    if notes or view is not df:
        out += "".join(f'<p class="table-note">{n}</p>' for n in notes)
        summary = f"the full table: {len(df.columns)} columns × {len(df):,} rows, scrolls sideways{link}"
        out += (f'<details class="full"><summary>{summary}</summary>'
                + _frame_table(df, decimals, html_columns, cls, "", wide=True) + "</details>")
    elif link:
        out += f'<p class="table-note">from{link}</p>'
    return out


def _frame_table(df, decimals, html_columns, cls, caption, wide: bool = False) -> str:
    headers, cols, numeric = [], [], set()
    for i, c in enumerate(df.columns):
        label = header_label(c)
        headers.append(_esc(label))
        if c in html_columns:
            cells = ["" if is_missing(v) else str(v) for v in df[c]]
        else:
            vals = df[c].tolist()
            cells, num = column_cells(vals, label, decimals.get(c))
            if num or all(is_missing(v) or (isinstance(v, str) and _RANGE.match(v)) for v in vals):
                numeric.add(i)
        cols.append(cells)
    rows = [list(r) for r in zip(*cols)] if cols else []
    return html_table(headers, rows, numeric, cls, caption, wide)


_RANGE = re.compile(r"^-?\d[\d,]*(\.\d+)? – -?\d[\d,]*(\.\d+)?$")  # "2.08 – 240.00" of reader_view


class Table:
    """What :func:`show` returns: Jupyter displays its HTML (``_repr_html_``)."""

    def __init__(self, html_text: str):
        self.html = html_text

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html


def show(df, **kw) -> Table:
    """``report_tables.show(df)`` as a notebook cell's last line: the table as the report shows it."""
    return Table(table_html(df, **kw))


# ---------------------------------------------------------------- pandas' HTML read back

_NUM = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?$")


def parse_cell(text: str):
    """A cell of pandas' HTML as a value: None (missing), bool, int, float or the text."""
    t = text.strip()
    if t in MISSING_TEXT:
        return None
    if t in ("True", "False"):
        return t == "True"
    if _NUM.match(t) and any(ch.isdigit() for ch in t):
        plain = t.replace(",", "")
        if re.fullmatch(r"[-+]?\d+", plain):
            return int(plain)
        return float(plain)
    return t


class _Tables(HTMLParser):
    """Collects every ``<table class="dataframe">``: its header and body rows as cells
    (tag, text, colspan, rowspan), with the source offsets of the whole ``<div>…</div>``."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self._t, self._cell, self._row, self._part = [], None, None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "dataframe" in (a.get("class") or "").split():
            self._t = {"head": [], "body": [], "start": self.getpos()}
        elif self._t is None:
            return
        elif tag in ("thead", "tbody"):
            self._part = "head" if tag == "thead" else "body"
        elif tag == "tr":
            self._row = []
        elif tag in ("th", "td") and self._row is not None:
            self._cell = [tag, "", int(a.get("colspan") or 1), int(a.get("rowspan") or 1)]

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data

    def handle_endtag(self, tag):
        if self._t is None:
            return
        if tag in ("th", "td") and self._cell is not None:
            self._cell[1] = " ".join(self._cell[1].split())
            self._row.append(tuple(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._t[self._part or "body"].append(self._row)
            self._row = None
        elif tag == "table":
            self._t["end"] = self.getpos()
            self.tables.append(self._t)
            self._t = None


def _grid(rows, width: int | None = None):
    """Rows of (tag, text, colspan, rowspan) → rows of (tag, text) with spans filled in."""
    out, carry = [], {}
    for row in rows:
        line, k, cells = [], 0, list(row)
        while cells or k in carry:
            if k in carry:
                tag, text, left = carry.pop(k)
                line.append((tag, text))
                if left > 1:
                    carry[k] = (tag, text, left - 1)
                k += 1
                continue
            tag, text, colspan, rowspan = cells.pop(0)
            for _ in range(colspan):
                line.append((tag, text))
                if rowspan > 1:
                    carry[k] = (tag, text, rowspan - 1)
                k += 1
        out.append(line)
    return out


def frame_from_pandas_html(fragment: str):
    """(DataFrame, truncated) from the first pandas ``to_html`` table in ``fragment``, read
    back: index levels become columns (unnamed row numbers are dropped), MultiIndex headers are
    joined with ' · ', cells become values (:func:`parse_cell`). ``truncated``: pandas cut rows
    or columns (``...`` cells, an "N rows × M columns" line). None when there is no such table."""
    import pandas as pd

    p = _Tables()
    p.feed(fragment)
    if not p.tables:
        return None
    t = p.tables[0]
    body = _grid(t["body"])
    head = _grid(t["head"])
    n_index = 0
    if body:
        n_index = next((k for k, (tag, _) in enumerate(body[0]) if tag != "th"), len(body[0]))
    width = max([len(r) for r in body + head] or [0])
    index_names = [""] * n_index
    levels = []
    for r in head:
        r = r + [("th", "")] * (width - len(r))
        if n_index and all(text == "" for _, text in r[n_index:]) and any(text for _, text in r[:n_index]):
            index_names = [text for _, text in r[:n_index]]
        else:
            levels.append([text for _, text in r[n_index:]])
    columns = [" · ".join(x for x in parts if x) or f"column {k + 1}" for k, parts in enumerate(zip(*levels))] \
        if levels else [f"column {k + 1}" for k in range(width - n_index)]
    rows = [[text for _, text in r] + [""] * (width - len(r)) for r in body]
    truncated = "..." in columns or any(all(c == "..." for c in r[n_index:]) for r in rows if r[n_index:]) \
        or bool(re.search(r"\d+ rows × \d+ columns", fragment))
    idx_cols = [r[:n_index] for r in rows]
    # an unnamed index of whole numbers is pandas' row numbering (0…n, or what a filter left)
    row_numbers = n_index == 1 and not index_names[0] and all(re.fullmatch(r"\d+|\.\.\.", r[0]) for r in idx_cols)
    data: dict[str, list] = {}
    if n_index and not row_numbers:
        for k in range(n_index):
            name = index_names[k] or ("" if n_index == 1 else f"level {k}")
            data[name] = [parse_cell(r[k]) for r in idx_cols]
    for k, c in enumerate(columns):
        name = c if c not in data else f"{c} "
        data[name] = [parse_cell(r[n_index + k]) for r in rows]
    return pd.DataFrame(data, index=range(len(rows))), truncated


_DATAFRAME_DIV = re.compile(r"<div>\s*(<style scoped>.*?</style>\s*)?<table[^>]*class=\"dataframe\".*?</table>"
                            r"(\s*<p>\d+ rows × \d+ columns</p>)?\s*</div>|<table[^>]*class=\"dataframe\".*?</table>",
                            re.S)


def restyle_html(fragment: str, replace=None) -> str:
    """Every pandas table in an output's HTML rewritten as :func:`table_html` would write it.

    ``replace(frame) -> str | None``: a caller's rendering of a table it recognises (the
    report puts a link to its ledger in place of a repeated one); None: the default. A table
    pandas truncated says so in a line under it."""
    def sub(m):
        got = frame_from_pandas_html(m.group(0))
        if got is None:
            return m.group(0)
        frame, truncated = got
        custom = replace(frame) if replace else None
        if custom is not None:
            return custom
        out = table_html(frame)
        if truncated:
            out += '<p class="table-note">pandas shortened this table when the notebook displayed it (… marks cut ' \
                   "rows or columns); the notebook's CSV holds it whole.</p>"
        return out

    return _DATAFRAME_DIV.sub(sub, fragment)
