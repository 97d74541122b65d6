"""Field types and the base documents every schema builds on: a quantity with its source,
a ``sources`` table that every ``source:`` field must name."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


# --------------------------------------------------------------------------- field types

Positive = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(strict=True, gt=0)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
Fraction = Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)]
Finite = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Text = Annotated[str, Field(strict=True, min_length=1)]
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def named_twice(names) -> list:
    """The names that occur more than once in ``names``, sorted."""
    names = list(names)
    return sorted({n for n in names if names.count(n) > 1})


class _Doc(BaseModel):
    """Strict: no unknown keys, no type coercion, and no NaN or infinity in any float field
    (``allow_inf_nan``), including the unconstrained ones."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Source(_Doc):
    """Where a number comes from: a title, a date (YYYY, YYYY-MM or YYYY-MM-DD), a URL if any."""

    title: Text
    date: Text
    url: str | None = None
    kind: str | None = None
    version: str | None = None
    repo: str | None = None
    commit: str | None = None
    note: str | None = None

    @field_validator("date")
    @classmethod
    def _date(cls, v: str) -> str:
        if not DATE.match(v):
            raise ValueError(f"date must be YYYY, YYYY-MM or YYYY-MM-DD, got {v!r}")
        return v


class Num(_Doc):
    """A positive physical quantity and its source."""

    value: Positive
    source: Text
    note: str | None = None


class NumOrNone(_Doc):
    """A quantity a device may not have at all (``value: null``, e.g. FP4 on an H200)."""

    value: Positive | None
    source: Text
    note: str | None = None


class Count(_Doc):
    value: PositiveInt
    source: Text
    note: str | None = None


class Label(_Doc):
    value: Text
    source: Text
    note: str | None = None


def _sources_cited(obj: Any, path: str = ""):
    """Yield (field path, source key) for every ``source`` field below ``obj``."""
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            v = getattr(obj, name)
            if name == "source" and isinstance(v, str):
                yield path.rstrip("."), v
            else:
                yield from _sources_cited(v, f"{path}{name}.")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _sources_cited(v, f"{path}{k}.")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _sources_cited(v, f"{path}{i}.")


class _Sourced(_Doc):
    """A document with a ``sources`` table that every ``source:`` field must name."""

    sources: dict[str, Source]

    @model_validator(mode="after")
    def _known_sources(self):
        for where, key in _sources_cited({k: getattr(self, k) for k in type(self).model_fields
                                           if k != "sources"}):
            if key not in self.sources:
                raise ValueError(f"{where}: cites unknown source {key!r} "
                                 f"(known: {', '.join(sorted(self.sources))})")
        return self
