"""One cell of a table for people: a value, a column of values, a header.

The rules every table of the report (and every table a notebook shows) follows, one value
at a time: a dash for a missing value (never ``NaN``), thousands separators, no scientific
notation (``19,570``, not ``1.957e+04``; a number a notebook wrote as ``"2.726e+15"`` keeps
its significant digits), a column's numbers sharing their decimals, $ columns with cents,
yes/no for booleans, units in the headers (``weights_gib_per_gpu`` → ``weights (GiB per
GPU)``) and markdown in text cells rendered (``**x**``, ``*x*``, ```x```). Cells here are
HTML; :mod:`k3lab.report_tables` lays them out as tables.
"""

from __future__ import annotations

import html
import math
import re

DASH = "—"
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


def plain_value(v):
    """numpy scalars → Python ones (bool before int: numpy's bool is no int)."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return v.item()
        except (ValueError, TypeError):
            return v
    return v


def is_number(v) -> bool:
    v = plain_value(v)
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not is_missing(v)


def auto_decimals(values) -> int | None:
    """Decimals for a column of numbers: 0 when every value is whole; else enough for three
    significant digits of the smallest non-zero magnitude (0–6) — or None when the non-zero
    magnitudes span more than a factor 10 (then each value gets its own three significant
    digits, :func:`value_decimals`: ``0.457``, ``0.006``, ``2,723``)."""
    nums = [abs(float(plain_value(v))) for v in values if is_number(v)]
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
    v = plain_value(v)
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
#: a column of a family ``name[key]`` (one quantity per key, e.g. a price source)
COLUMN_FAMILY = re.compile(r"^(?P<stem>[^\[\]]+)\[(?P<key>[^\[\]]+)\]$")


def header_label(name) -> str:
    """A column name as a header (plain text): snake_case words spaced, acronyms capitalised,
    units spelled and put in parentheses — ``weights_gib_per_gpu`` → ``weights (GiB per GPU)``,
    ``decode_bound_tok_s`` → ``decode bound (tok/s)``, ``usd_per_hour[article]`` →
    ``$/hour · article``. A name with spaces is a person's already and is kept."""
    name = str(name)
    fam = COLUMN_FAMILY.match(name)
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


def is_money(label: str) -> bool:
    return "$" in label and "per $" not in label


def _no_separators(label: str) -> bool:
    return bool(re.search(r"\b(year|date|port|commit|version)\b", label, re.I))


# ---------------------------------------------------------------- columns → cells

def column_cells(values, label: str = "", decimals: int | None = None) -> tuple[list[str], bool]:
    """The HTML cells of one column, and whether it is numeric (right-aligned). Numbers share
    the column's decimals (``decimals`` or :func:`auto_decimals`; a $ column: 2), whole
    numbers get separators, booleans read yes/no, text is :func:`inline_markdown`."""
    vals = [plain_value(v) for v in values]
    present = [v for v in vals if not is_missing(v)]
    numeric = bool(present) and all(is_number(v) for v in present)
    if decimals is None:
        decimals = 2 if numeric and is_money(label) else auto_decimals(present)
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
