"""The schema kinds of files that are not YAML documents: a JSON document, a CSV table, a
JSONL stream. :mod:`k3lab.data` reads the file (:mod:`k3lab.readers`) and checks it against
one of these; a YAML document's schema is a pydantic model (:mod:`.base`).

- :class:`JsonFile`: ``schema`` is a ``TypedDict`` checked strictly by pydantic (types,
  signs, ranges, required keys; unknown keys refused unless the TypedDict is :func:`open_`),
  then :meth:`JsonFile.check` for what spans fields. The loader hands consumers the parsed
  dict itself once it passed: typed by its ``TypedDict``, never coerced.
- :class:`Table`: ``row`` is a ``TypedDict`` of the columns (exactly those, each cell
  converted to the column's type before the check), then :meth:`Table.check` over the rows.
  Consumers get a pandas DataFrame of the converted rows.
- :class:`Lines`: one record per line, each checked by :meth:`Lines.check_record`.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, ClassVar

from pydantic import ConfigDict, TypeAdapter

_STRICT = dict(strict=True, allow_inf_nan=False)


def closed(cls):
    """A TypedDict whose unknown keys are refused."""
    cls.__pydantic_config__ = ConfigDict(extra="forbid", **_STRICT)
    return cls


def open_(cls):
    """A TypedDict that keeps keys it does not name (checked only by the readers' generic
    rules: finite numbers, non-negative byte counts). For parts k3lab does not read."""
    cls.__pydantic_config__ = ConfigDict(extra="allow", **_STRICT)
    return cls


@functools.lru_cache(maxsize=None)
def adapter(schema) -> TypeAdapter:
    return TypeAdapter(schema)


def required_keys(schema) -> list[str]:
    """The keys a TypedDict requires, in declaration order."""
    req = getattr(schema, "__required_keys__", frozenset())
    return [k for k in typing.get_type_hints(schema, include_extras=True) if k in req]


class JsonFile:
    """A JSON document: :attr:`schema` (a TypedDict) and :meth:`check` (cross-field rules;
    raise ValueError starting with the field's path). :attr:`allow_infinity`: keys whose
    value may be ``Infinity`` because the producer writes it on purpose."""

    schema: ClassVar[Any] = None
    allow_infinity: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def check(cls, doc: dict) -> None:
        """Rules across fields (none by default)."""

    @classmethod
    def required(cls) -> list[str]:
        return required_keys(cls.schema)


class Table:
    """A CSV table: :attr:`row` (a TypedDict naming every column, in order) and :meth:`check`
    over the converted rows (raise ValueError naming the line and column)."""

    row: ClassVar[Any] = None

    @classmethod
    def columns(cls) -> list[str]:
        return list(typing.get_type_hints(cls.row))

    @classmethod
    def check(cls, rows: list[tuple[int, dict]]) -> None:
        """Rules across rows (none by default); ``rows``: (line number, converted row)."""

    @classmethod
    def required(cls) -> list[str]:
        return cls.columns()


def not_above(n: int, row: dict, *pairs: tuple[str, str], rel: float = 0.0) -> None:
    """A :meth:`Table.check` rule: ValueError naming line ``n`` and the field when ``row[a]``
    exceeds ``row[b]`` for a pair ``(a, b)`` (a minimum and its median, a count and its total);
    ``rel``: the relative slack of values rounded when written."""
    for a, b in pairs:
        if row[a] > row[b] * (1 + rel):
            raise ValueError(f"line {n}: {a}: {row[a]!r} exceeds {b} {row[b]!r}")


class Lines:
    """A JSONL stream: :meth:`check_record` checks one record (``where`` names the line)."""

    allow_infinity: ClassVar[tuple[str, ...]] = ()
    #: what an empty stream is called in the error
    empty: ClassVar[str] = "no records (an empty file)"

    @classmethod
    def check_record(cls, rec, where: str) -> dict:
        raise NotImplementedError

    @classmethod
    def required(cls) -> list[str]:
        return []
