"""Text formats → Python objects, strictly: every way a file can be unreadable is one line.

The readers :mod:`k3lab.data` builds on (it validates what they return against a schema).
Each raises :class:`DataError` naming the file (``where``) and, where there is one, the line:

- :func:`read_text`: the bytes must be UTF-8 (``not UTF-8 text (byte 17)``);
- :func:`read_yaml`: valid YAML, and **no key twice in one mapping** (PyYAML keeps the last
  one silently): ``duplicate key 'value' (lines 12 and 14)``;
- :func:`read_json`: valid JSON, no key twice in one object (``duplicate key
  'text_config.hidden_size' (lines 8 and 40)``), every number finite — ``NaN`` and
  ``Infinity`` are not JSON, Python's ``json`` module only tolerates them — except keys named
  in ``allow_infinity`` (``+Infinity`` only, for a producer that writes it on purpose), and
  every number under a key that counts bytes (``*bytes*``) a non-negative integer;
- :func:`read_jsonl`: one JSON object per line, each read as :func:`read_json` reads a file;
- :func:`read_csv`: a header of distinct names, every row as long as the header, and a last
  row that ends with a newline (a file cut short mid-row is refused, not half read).
"""

from __future__ import annotations

import bisect
import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from .limits import MAX_DIGITS


class DataError(ValueError):
    """A data file that cannot be used as it is; the message names the file and the field."""


# --------------------------------------------------------------------------- text


def read_text(path, where: str) -> str:
    """The file as UTF-8 text; DataError for a missing file or bytes that are not UTF-8."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"{where}: file missing") from None
    except IsADirectoryError:
        raise DataError(f"{where}: is a directory, not a file") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{where}: not UTF-8 text (byte {e.start})") from None


def refuse_strays(folder, shown: str, registered, registry: str, why: str) -> None:
    """DataError (one line) for an entry of ``folder`` (``shown`` in messages) that is not a plain
    file ``registered`` names (the names ``registry`` lists): a symlink (named as the link, never by
    its target), a subfolder or an unregistered file, which a reader globbing the folder would
    follow or skip silently."""
    for p in sorted(Path(folder).iterdir()):
        kind = ("a symlink" if p.is_symlink() else "a subfolder" if p.is_dir() else "not a plain file"
                if not p.is_file() else "" if p.name in registered else f"not in {registry}")
        if kind:
            raise DataError(f"{shown}/{p.name}: {kind}; {why}")


# --------------------------------------------------------------------------- YAML


class _DuplicateKey(Exception):
    def __init__(self, key, first: int, second: int, at: str = ""):
        super().__init__(key)
        self.key, self.first, self.second, self.at = key, first, second, at


class _LongNumber(Exception):
    """A number written with more digits than :data:`k3lab.limits.MAX_DIGITS`: refused unread
    (Python would refuse to convert one of 4,300 with a message that names no file or field)."""

    def __init__(self, text: str, line: int | None = None, key=None):
        super().__init__(text)
        self.digits, self.line, self.key = sum(ch.isdigit() for ch in text), line, key

    def message(self, where: str) -> str:
        at = (f"line {self.line}: " if self.line else "") + (f"{self.key}: " if self.key is not None else "")
        return (f"{where}: {at}a number written with {self.digits:,} digits (at most {MAX_DIGITS} are read; "
                f"no quantity here needs more)")


def _short_int(text: str, line: int | None = None) -> int:
    if len(text) > MAX_DIGITS:
        raise _LongNumber(text, line)
    return int(text)


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml parses 5x faster
    """PyYAML's safe loader, refusing a mapping that names one key twice."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if value_node.tag == "tag:yaml.org,2002:int" and len(value_node.value) > MAX_DIGITS:
                    raise _LongNumber(value_node.value, value_node.start_mark.line + 1, key)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: PyYAML reports it itself
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise _DuplicateKey(key, first, line)
                seen[key] = line
        return super().construct_mapping(node, deep)


#: YAML 1.2's core schema for plain numbers, decimal only (yaml.org/spec/1.2.2 §10.3.2): PyYAML
#: resolves YAML 1.1's, where ``2_95`` is 295, ``0x10`` 16, ``0o7`` 7, ``010`` 8 and ``1:30`` 90 while
#: ``1e3`` is a string. Here those are strings (which a schema then refuses, naming the field)
#: and ``1e3``, ``1.0e3`` are floats.
DECIMAL_INT = re.compile(r"^[-+]?[0-9]+$")
DECIMAL_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                           r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _core_schema_resolvers(resolvers: dict) -> dict:
    """PyYAML's implicit resolvers without its YAML 1.1 int and float, with YAML 1.2 core's
    decimal int and float (tried in that order: an int also matches the float pattern)."""
    out = {ch: [(tag, rx) for tag, rx in rs if tag not in _NUMBER_TAGS] for ch, rs in resolvers.items()}
    for tag, rx in zip(_NUMBER_TAGS, (DECIMAL_INT, DECIMAL_FLOAT)):
        for ch in "-+0123456789.":
            out.setdefault(ch, []).append((tag, rx))
    return out


_UniqueKeyLoader.yaml_implicit_resolvers = _core_schema_resolvers(_UniqueKeyLoader.yaml_implicit_resolvers)


def _construct_int(loader, node):
    if len(node.value) > MAX_DIGITS:
        raise _LongNumber(node.value, node.start_mark.line + 1)
    if DECIMAL_INT.match(node.value):
        return int(node.value, 10)  # YAML 1.2: a leading 0 is still decimal
    return yaml.SafeLoader.construct_yaml_int(loader, node)  # an explicit !!int tag


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


#: nodes YAML aliases may add to a document beyond those written (the repository's largest
#: use adds about 2,100): a "billion laughs" nest of aliases is refused before it is expanded
ALIAS_EXPANSION_LIMIT = 10_000


def _expanded_size(node, memo: dict, busy: set) -> int:
    """Nodes ``node`` stands for once every alias in it is expanded (memoised per node, so
    counting costs the nodes written, not the expansion). ValueError for an alias cycle."""
    key = id(node)
    if key in memo:
        return memo[key]
    if key in busy:
        raise ValueError("an alias refers to a node that contains it")
    busy.add(key)
    if isinstance(node, yaml.SequenceNode):
        n = 1 + sum(_expanded_size(c, memo, busy) for c in node.value)
    elif isinstance(node, yaml.MappingNode):
        n = 1 + sum(_expanded_size(k, memo, busy) + _expanded_size(v, memo, busy) for k, v in node.value)
    else:
        n = 1
    busy.discard(key)
    memo[key] = n
    return n


def _check_aliases(node, where: str) -> None:
    memo: dict = {}
    try:
        total = _expanded_size(node, memo, set())
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None
    except RecursionError:
        raise DataError(f"{where}: nested too deep") from None
    if total - len(memo) > ALIAS_EXPANSION_LIMIT:
        raise DataError(f"{where}: its aliases expand {len(memo):,} YAML nodes into {total:,}; "
                        f"refused past {ALIAS_EXPANSION_LIMIT:,} added nodes (an alias bomb?)")


def read_yaml(path, where: str) -> Any:
    """Parse one YAML file (UTF-8, valid YAML, no duplicate keys, aliases that expand it by
    at most :data:`ALIAS_EXPANSION_LIMIT` nodes) → Python objects."""
    return parse_yaml(read_text(path, where), where)


def parse_yaml(text: str, where: str) -> Any:
    """YAML text as :func:`read_yaml` parses a file's (``where`` names it in errors)."""
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(node, where)
        return loader.construct_document(node)
    except _DuplicateKey as d:
        raise DataError(f"{where}: duplicate key {d.key!r} (lines {d.first} and {d.second}); "
                        f"YAML would keep only the second") from None
    except _LongNumber as n:
        raise DataError(n.message(where)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = str(getattr(e, "problem", None) or e).replace("\n", " ")
        raise DataError(f"{where}: not valid YAML ({line}{problem})") from None
    except RecursionError:
        raise DataError(f"{where}: not valid YAML (nested too deep)") from None
    finally:
        loader.dispose()


# --------------------------------------------------------------------------- JSON

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _first_duplicate(text: str) -> tuple[str, str, int, int] | None:
    """(path of the object, key, first line, second line) of the first key an object of
    ``text`` (valid JSON) names twice; None if there is none. A scan of the tokens that
    keeps the enclosing objects' current keys and the arrays' indices."""
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    stack: list[dict] = []
    for m in _TOKEN.finditer(text):
        t = m.group()
        if t == "{":
            stack.append({"obj": True, "seen": {}, "key": None, "want_key": True})
        elif t == "[":
            stack.append({"obj": False, "i": 0})
        elif t in ("}", "]"):
            stack.pop()
        elif t == ",":
            top = stack[-1]
            if top["obj"]:
                top["want_key"] = True
            else:
                top["i"] += 1
        elif t == ":":
            stack[-1]["want_key"] = False
        elif t.startswith('"') and stack and stack[-1]["obj"] and stack[-1]["want_key"]:
            top = stack[-1]
            key = json.loads(t)
            line = bisect.bisect_left(newlines, m.start()) + 1
            if key in top["seen"]:
                at = ".".join(str(s["key"] if s["obj"] else s["i"]) for s in stack[:-1])
                return at, key, top["seen"][key], line
            top["seen"][key] = line
            top["key"] = key
    return None


def _pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k, 0, 0)
        out[k] = v
    return out


def check_numbers(obj, where: str, allow_infinity: tuple[str, ...] = (), at: str = "",
                  counts_bytes: bool = False) -> None:
    """Every float below ``obj`` finite (``+inf`` allowed under the keys ``allow_infinity``);
    every number under a key that counts bytes (``*bytes*``, and everything below such a key)
    a non-negative int (null allowed: not measured)."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        here = f"{at}.{k}" if at else str(k)
        in_bytes = counts_bytes or (isinstance(k, str) and "bytes" in k.lower())
        if isinstance(v, float) and not math.isfinite(v):
            if not (isinstance(obj, dict) and k in allow_infinity and v == math.inf):
                raise DataError(f"{where}: {here}: must be a finite number (got {v!r})")
        if in_bytes and isinstance(v, (int, float)) and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise DataError(f"{where}: {here}: a byte count must be a non-negative integer (got {v!r})")
        if isinstance(v, (dict, list)):
            check_numbers(v, where, allow_infinity, here, in_bytes)


def parse_json(text: str, where: str, allow_infinity: tuple[str, ...] = ()) -> Any:
    """Parse JSON text (no duplicate keys, finite numbers; see the module doc)."""
    try:
        obj = json.loads(text, object_pairs_hook=_pairs, parse_int=_short_int)
    except _LongNumber as n:  # json gives no position: the first place the digits stand
        n.line = text.count("\n", 0, max(text.find(str(n)), 0)) + 1
        raise DataError(n.message(where)) from None
    except _DuplicateKey:
        found = _first_duplicate(text)
        at, key, first, second = found if found else ("", "?", 0, 0)
        name = f"{at}.{key}" if at else key
        lines = f"lines {first} and {second}" if first != second else f"twice on line {first}"
        raise DataError(f"{where}: duplicate key {name!r} ({lines}); "
                        f"JSON readers would keep only the second") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise DataError(f"{where}: not valid JSON (nested too deep)") from None
    check_numbers(obj, where, allow_infinity)
    return obj


def read_json(path, where: str, allow_infinity: tuple[str, ...] = ()) -> Any:
    """Parse one JSON file (UTF-8, valid JSON, no duplicate keys, finite numbers)."""
    return parse_json(read_text(path, where), where, allow_infinity)


def parse_jsonl(lines, where: str, allow_infinity: tuple[str, ...] = ()) -> list[tuple[int, Any]]:
    """(line number, object) for every non-blank line; each line parsed as :func:`parse_json`
    (``<where>:line N: ...`` in errors)."""
    out = []
    for i, line in enumerate(lines, start=1):
        if line.strip():
            out.append((i, parse_json(line, f"{where}:line {i}", allow_infinity)))
    return out


def read_jsonl(path, where: str, allow_infinity: tuple[str, ...] = ()) -> list[tuple[int, Any]]:
    return parse_jsonl(read_text(path, where).splitlines(), where, allow_infinity)


# --------------------------------------------------------------------------- CSV


def read_csv(path, where: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(header, [(line number, cells)]) of a CSV file whose cells are strings."""
    text = read_text(path, where)
    if not text.strip():
        raise DataError(f"{where}: empty (no header, no rows)")
    if not text.endswith("\n"):
        raise DataError(f"{where}: truncated (its last row has no end of line)")
    try:
        rows = list(csv.reader(io.StringIO(text), strict=True))
    except csv.Error as e:
        raise DataError(f"{where}: not valid CSV ({e})") from None
    header = rows[0]
    seen: dict[str, int] = {}
    for i, name in enumerate(header):
        if not name.strip():
            raise DataError(f"{where}: line 1: column {i + 1} has no name")
        if name in seen:
            raise DataError(f"{where}: line 1: duplicate column {name!r} (columns {seen[name] + 1} and {i + 1})")
        seen[name] = i
    body = []
    for n, cells in enumerate(rows[1:], start=2):
        if not cells:
            raise DataError(f"{where}: line {n}: empty line")
        if len(cells) != len(header):
            raise DataError(f"{where}: line {n}: {len(cells)} cells for {len(header)} columns")
        body.append((n, cells))
    if not body:
        raise DataError(f"{where}: no rows below the header")
    return header, body
