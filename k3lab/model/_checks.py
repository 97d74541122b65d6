"""Argument checks of the plain-number sglang mirrors (:mod:`.pool_sizing`, :mod:`.pool_inputs`,
:mod:`.resident`, :mod:`.capacity`) beyond :func:`k3lab.data.check_count` (a positive int)
and :func:`k3lab.data.check_finite` (a finite, by default positive, number)."""

from __future__ import annotations

from ..data import check_count, check_finite


def check_size(name: str, v) -> int:
    """A count that may be 0: a non-negative int (not a bool) → int, else ValueError."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    return v


def check_optional_count(name: str, v) -> int | None:
    """None (not given) or a positive int (:func:`k3lab.data.check_count`)."""
    return None if v is None else check_count(name, v)


def check_fraction(name: str, v) -> float:
    """A fraction in (0, 1] → float, else ValueError."""
    f = check_finite(name, v)
    if f > 1:
        raise ValueError(f"{name} must be <= 1, got {v!r}")
    return f


def check_non_negative(name: str, v) -> float:
    """A finite number >= 0 → float, else ValueError."""
    f = check_finite(name, v, positive=False)
    if f < 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    return f
