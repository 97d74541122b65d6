"""Tables for people: the one formatter of the report's tables and of the notebooks' displayed ones.

:func:`table_html` turns a DataFrame into an HTML table a reader can scan: no index column (a
meaningless 0…n index is dropped; a named index becomes ordinary columns), a dash for a missing
value (never ``NaN``), thousands separators, no scientific notation (``19,570``, not
``1.957e+04``), $ columns with cents, yes/no for booleans, units in the headers
(``weights_gib_per_gpu`` → ``weights (GiB per GPU)``), markdown in text cells rendered
(``**x**``, ``*x*``, ```x```), and a table wider than :data:`MAX_COLUMNS` shown as the columns a
reader needs (columns that are empty or the same in every row are said once in a line; a family
of ``name[key]`` columns becomes one min – max column) with the full table in a ``<details>``.
Every table sits in a ``div.table-wrap`` that scrolls sideways inside its section, never the page.

In a notebook, end a cell with ``report_tables.show(df)`` for the same table.

:func:`restyle_html` rewrites the DataFrames a notebook displayed (pandas' ``to_html``) into the
same format, for notebooks executed before they used :func:`show`.
"""

from __future__ import annotations

import html
import math
import re
from html.parser import HTMLParser

DASH = "—"
#: a table with more columns than this is shown as the columns a reader needs, the rest folded
MAX_COLUMNS = 14
#: text that means "no value" in pandas' HTML (a Python ``None`` is shown as the word: it can mean
#: "bound to None"; in a DataFrame it is missing)
MISSING_TEXT = frozenset({"", "nan", "NaN", "<NA>", "NaT"})
_esc = html.escape


# ---------------------------------------------------------------- values

def is_missing(v) -> bool:
    """None, NaN, pandas' NA/NaT, or a string that stands for no value (see :data:`MISSING_TEXT`)."""
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip() in MISSING_TEXT
    if isinstance(v, float):
        return math.isnan(v)
    try:
        import pandas as pd

        return bool(pd.isna(v)) if not hasattr(v, "__len__") else False
    except (TypeError, ValueError, ImportError):
        return False


def _plain(v):
    """numpy scalars → Python ones (bool before int: numpy's bool is no int)."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return v.item()
        except (ValueError, TypeError):
            return v
    return v


def is_number(v) -> bool:
    v = _plain(v)
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not is_missing(v)


def auto_decimals(values) -> int | None:
    """Decimals for a column of numbers: 0 when every value is whole; else enough for three
    significant digits of the smallest non-zero magnitude (0–6) — or None when the non-zero
    magnitudes span more than a factor 10 (then each value gets its own three significant
    digits, :func:`value_decimals`: ``0.457``, ``0.006``, ``2,723``)."""
    nums = [abs(float(_plain(v))) for v in values if is_number(v)]
    finite = [v for v in nums if math.isfinite(v)]
    if all(float(v).is_integer() for v in finite):
        return 0
    nonzero = [v for v in finite if v]
    if not nonzero:
        return 0
    if max(nonzero) / min(nonzero) > 10:
        return None
    return value_decimals(min(nonzero))


def value_decimals(v) -> int:
    """Decimals that show three significant digits of ``v`` (never fewer than its integer
    digits; one for 100–999, so ``191.0`` is not read as a count), 0–6."""
    v = abs(float(v))
    if not v or not math.isfinite(v):
        return 0
    return 1 if 100 <= v < 1000 else max(0, min(6, 2 - math.floor(math.log10(v))))


def format_number(v, decimals: int | None, separators: bool = True) -> str:
    """A number in plain positional notation: ``19,570``, ``2.50``, ``-4.9``; never ``1.957e+04``.
    ``decimals`` None: :func:`value_decimals` of the value (0 for a whole number), trailing
    zeros dropped (``0.04``, ``191.0``). A missing value is :data:`DASH`; infinity is ``∞``."""
    v = _plain(v)
    if is_missing(v):
        return DASH
    if isinstance(v, float) and math.isinf(v):
        return "∞" if v > 0 else "−∞"
    own = decimals is None
    if own:
        decimals = 0 if float(v).is_integer() else value_decimals(v)
    sep = "," if separators else ""
    if isinstance(v, int) and not decimals:
        return f"{v:{sep}d}"
    text = f"{float(v):{sep}.{decimals}f}"
    if own and "." in text:  # a value's own digits: no trailing zeros, but one decimal stays (191.0)
        text = re.sub(r"(\.\d*?[1-9]?)0+$", r"\1", text)
        text = text + "0" if text.endswith(".") else text
    return text[1:] if re.fullmatch(r"-0(\.0+)?", text) else text  # no "-0.00"


_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*]+?)(?<=[^\s*])\*(?![\w*])")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def inline_markdown(text: str) -> str:
    """One cell's text as HTML: escaped, then ``**bold**``, ``*italic*``, ```code``` and
    ``[text](url)`` rendered (a link keeps its text only: the page loads nothing). Snake_case
    names and arithmetic (``8 * 192``) are left as they are."""
    codes: list[str] = []

    def keep(m):
        codes.append(f"<code>{m.group(1)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    s = _CODE.sub(keep, _esc(str(text), quote=False))
    s = _LINK.sub(lambda m: m.group(1), s)
    s = _BOLD.sub(r"<b>\1</b>", s)
    s = _ITALIC.sub(r"<i>\1</i>", s)
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], s)


# ---------------------------------------------------------------- headers

#: snake_case words → how a header writes them; ``True``: a unit (goes in parentheses)
_PHRASES: list[tuple[tuple[str, ...], str, bool]] = [
    (("tok", "s", "per", "dollar", "hour"), "tok/s per $/hour", True),
    (("usd", "per", "million", "tokens"), "$/M tokens", True),
    (("usd", "per", "gpu", "hour"), "$/GPU-hour", True),
    (("usd", "per", "hour"), "$/hour", True),
    (("usd", "per", "kwh"), "$/kWh", True),
    (("gbit", "s"), "Gbit/s", True),
    (("tok", "s"), "tok/s", True),
    (("usd",), "$", True), (("gib",), "GiB", True), (("gb",), "GB", True), (("tb",), "TB", True),
    (("mib",), "MiB", True), (("pct",), "%", True), (("s",), "s", True), (("ms",), "ms", True),
    (("us",), "µs", True), (("w",), "W", True), (("kwh",), "kWh", True),
    (("per", "gpu"), "per GPU", False), (("per", "node"), "per node", False),
    (("per", "token"), "per token", False), (("per", "rank"), "per rank", False),
]
_ACRONYMS = {"gpu": "GPU", "gpus": "GPUs", "kv": "KV", "tp": "TP", "pp": "PP", "ep": "EP", "mla": "MLA",
             "kda": "KDA", "ttft": "TTFT", "moe": "MoE", "flops": "FLOPs", "hbm": "HBM", "id": "ID"}
_FAMILY = re.compile(r"^(?P<stem>[^\[\]]+)\[(?P<key>[^\[\]]+)\]$")


def header_label(name) -> str:
    """A column name as a header (plain text): snake_case words spaced, acronyms capitalised,
    units spelled and put in parentheses — ``weights_gib_per_gpu`` → ``weights (GiB per GPU)``,
    ``decode_bound_tok_s`` → ``decode bound (tok/s)``, ``usd_per_hour[article]`` →
    ``$/hour · article``. A name with spaces is a person's already and is kept."""
    name = str(name)
    fam = _FAMILY.match(name)
    if fam:
        return f"{header_label(fam['stem'])} · {fam['key']}"
    if " " in name:
        return name
    if "_" not in name:
        return _ACRONYMS.get(name, name)
    words = [w for w in name.split("_") if w]
    parts: list[tuple[str, bool]] = []
    i = 0
    while i < len(words):
        low = [w.lower() for w in words[i:]]
        for phrase, text, unit in _PHRASES:
            if tuple(low[: len(phrase)]) == phrase and (unit or (parts and parts[-1][1])):
                parts.append((text, True))
                i += len(phrase)
                break
        else:
            w = words[i]
            parts.append((_ACRONYMS.get(w.lower(), w) if w.islower() or w.lower() in _ACRONYMS else w, False))
            i += 1
    first_unit = next((k for k, (_, u) in enumerate(parts) if u), None)
    texts = [t for t, _ in parts]
    if first_unit is None or first_unit == 0:
        return " ".join(texts)
    return f"{' '.join(texts[:first_unit])} ({' '.join(texts[first_unit:])})"


def _is_money(label: str) -> bool:
    return "$" in label and "per $" not in label


def _no_separators(label: str) -> bool:
    return bool(re.search(r"\b(year|date|port|commit|version)\b", label, re.I))


# ---------------------------------------------------------------- columns → cells

def column_cells(values, label: str = "", decimals: int | None = None) -> tuple[list[str], bool]:
    """The HTML cells of one column, and whether it is numeric (right-aligned). Numbers share
    the column's decimals (``decimals`` or :func:`auto_decimals`; a $ column: 2), whole
    numbers get separators, booleans read yes/no, text is :func:`inline_markdown`."""
    vals = [_plain(v) for v in values]
    present = [v for v in vals if not is_missing(v)]
    numeric = bool(present) and all(is_number(v) for v in present)
    if decimals is None:
        decimals = 2 if numeric and _is_money(label) else auto_decimals(present)
    sep = not _no_separators(label)
    out = []
    for v in vals:
        if is_missing(v):
            out.append(DASH)
        elif isinstance(v, bool):
            out.append("yes" if v else "no")
        elif is_number(v):
            out.append(format_number(v, decimals, sep))
        elif isinstance(v, str) and _SCI.match(v.strip()):
            out.append(plain_sci(v.strip(), sep))
        else:
            out.append(inline_markdown(v))
    return out, numeric


_SCI = re.compile(r"^[-+]?(\d+)(?:\.(\d+))?[eE]([-+]?\d+)$")


def plain_sci(text: str, separators: bool = True) -> str:
    """A number a notebook wrote in scientific notation (``"2.726e+15"``), in positional
    notation with the significant digits it had: ``2,726,000,000,000,000``; ``"3.1e-05"`` →
    ``0.000031``."""
    m = _SCI.match(text)
    digits = len((m[1] + (m[2] or "")).lstrip("0")) or 1
    v = float(text)
    exp = math.floor(math.log10(abs(v))) if v else 0
    return format_number(v, max(0, digits - 1 - exp), separators)


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
    notes, keep = [], []
    empty = [c for c in df.columns if all(is_missing(v) for v in df[c])]
    if empty:
        notes.append("empty in every row: " + ", ".join(header_label(c) for c in empty))
    same = []
    if len(df) >= 2:
        for c in df.columns:
            if c in empty:
                continue
            vals = {str(_plain(v)) for v in df[c]}
            if len(vals) == 1:
                same.append(c)
    if same:
        cells = {c: column_cells(df[c].iloc[:1], header_label(c))[0][0] for c in same}
        notes.append("the same in every row: " + "; ".join(f"{_esc(header_label(c))} {cells[c]}" for c in same))
    families: dict[str, list[str]] = {}
    for c in df.columns:
        m = _FAMILY.match(c)
        if m and c not in empty:
            families.setdefault(m["stem"], []).append(c)
    families = {k: v for k, v in families.items() if len(v) >= 3}
    out, done = {}, set()
    for c in df.columns:
        if c in empty or c in same:
            continue
        m = _FAMILY.match(c)
        if m and m["stem"] in families:
            stem = m["stem"]
            if stem in done:
                continue
            cols = families[stem]
            label = header_label(stem)
            _, numeric = column_cells([v for cc in cols for v in df[cc]], label)
            dec = 2 if _is_money(label) else auto_decimals([v for cc in cols for v in df[cc]])

            def span(row, cols=cols, dec=dec):
                vals = [row[cc] for cc in cols if is_number(row[cc])]
                if not vals:
                    return DASH
                lo, hi = min(vals), max(vals)
                return format_number(lo, dec) if lo == hi else f"{format_number(lo, dec)} – {format_number(hi, dec)}"

            out[f"{label}: min – max of {len(cols)}"] = [span(r) for r in df[cols].to_dict("records")]
            notes.append(f"{_esc(label)}: min – max over {len(cols)} columns "
                         f"({_esc(', '.join(_FAMILY.match(x)['key'] for x in cols))})")
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
