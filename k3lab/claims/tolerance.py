"""How a claimed number is read: "about N" at the digits the article wrote (:func:`same_as_stated`),
a claim's tolerance (:func:`agrees`, :func:`tolerance_interval`), and the rounding helpers the rules
and the findings share. Kept apart from the verdict rules (:mod:`k3lab.claims.rules`), which use it."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def _num(name, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise ValueError(f"rule input {name} must be a number, got {v!r}")
    return float(v)


def decimals_of(x: float) -> int:
    """Decimal places a number was stated with (48 → 0, 1.65 → 2, 0.333 → 3)."""
    s = repr(float(x))
    if "e" in s:
        return 0
    frac = s.split(".")[1]
    return 0 if frac == "0" else len(frac)


def stated_exponent(x: float) -> int:
    """The power of ten of the last significant digit of ``x`` as the article wrote it:
    2.78 → -2, 103 → 0, 1.5 → -1, 1,400 → 2 (trailing zeros of a whole number are not
    significant), 0 → 0."""
    d = Decimal(repr(_num("x", x)))
    return 0 if d == 0 else int(d.normalize().as_tuple().exponent)


def _dec(x: float) -> Decimal:
    # the shortest repr, so 2.775 is 2.775 and not 2.77499999…
    return Decimal(repr(float(x)))


def round_to_exponent(x: float, exponent: int) -> Decimal:
    """``x`` rounded half up (away from zero at .5) to a multiple of 10**exponent."""
    q = Decimal(1).scaleb(exponent)
    return (_dec(x) / q).quantize(Decimal(1), rounding=ROUND_HALF_UP) * q


def round_half_up(x: float, nd: int) -> float:
    """``x`` rounded half up to ``nd`` decimals (2.775 → 2.78)."""
    return float(round_to_exponent(x, -nd))


def same_as_stated(value: float, claimed: float) -> bool:
    """**The one rule for "about / roughly / near / around / ~ N"** (and for a number the
    article rounded): ``value`` agrees with ``claimed`` when it rounds half up to ``claimed``
    at the last significant digit ``claimed`` was written with — half a unit either side,
    lower edge included: "about 103B" holds 102.5 up to (not including) 103.5, "roughly
    2.78T" 2.775-2.785, "near 1.5TB" 1.45-1.55, "around 1,400W" 1,350-1,450 (trailing zeros
    of a whole number are not significant). The article chose the digits; the rule reads
    them, instead of a tolerance picked per claim."""
    e = stated_exponent(claimed)
    return round_to_exponent(_num("value", value), e) == round_to_exponent(claimed, e)


def agrees(claim, value: float, claimed: float | None = None) -> bool:
    """``value`` agrees with the claimed number under the claim's tolerance."""
    c = claim.claimed_numbers[0] if claimed is None else claimed
    v = _num("value", value)
    t = claim.tolerance
    if t is None:
        raise ValueError(f"claim {claim.id}: rule {claim.rule!r} needs a tolerance in data/claims.yaml")
    if t.digits:
        return same_as_stated(v, c)
    if t.rel is not None:
        return abs(v - c) <= t.rel * abs(c)
    return abs(v - c) <= t.abs


def tolerance_interval(claim, claimed: float | None = None) -> tuple[float, float]:
    """The values that agree with the claimed number under the claim's tolerance, as (low, high):
    ``digits`` half a unit of the last stated digit either side (:func:`same_as_stated`), ``rel``
    and ``abs`` as written."""
    c = claim.claimed_numbers[0] if claimed is None else _num("claimed", claimed)
    t = claim.tolerance
    if t is None:
        raise ValueError(f"claim {claim.id}: rule {claim.rule!r} needs a tolerance in data/claims.yaml")
    if t.digits:
        half = 10.0 ** stated_exponent(c) / 2
        return c - half, c + half
    d = t.rel * abs(c) if t.rel is not None else t.abs
    return c - d, c + d
