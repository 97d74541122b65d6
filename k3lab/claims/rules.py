"""The verdict rules: each turns what a check found into a verdict, then the method caps it.

A rule takes the :class:`~k3lab.claims.registry.Claim` (its claimed value, unit and
tolerance) and the numbers a finding module hands over; :data:`RULES` maps the rule names
``data/claims.yaml`` uses to them. :func:`cap` is the one place where the method limits
the verdict: only ``measured`` or ``derived`` evidence can read *reproduced*.
"""

from __future__ import annotations

import math
from typing import Protocol


class Claim(Protocol):
    """What a rule reads of a claim (:class:`k3lab.claims.registry.Claim` has it; the rules
    do not import the registry, which imports them)."""

    id: str
    claimed: object
    unit: str
    rule: str
    tolerance: object

    @property
    def claimed_numbers(self) -> list[float]: ...

VERDICTS = ("reproduced", "consistent", "discrepancy", "corrected", "not reproducible here")
INDEPENDENT = ("measured", "derived")
#: a modelled band wider than this factor (high / low) cannot tell a claim from its negation
BAND_MAX_RATIO = 2.0


def cap(method: str, verdict: str) -> str:
    """The method caps the verdict: only ``measured``/``derived`` can be ``reproduced``;
    ``unchecked`` is always ``not reproducible here``."""
    if method == "unchecked":
        return "not reproducible here"
    if verdict == "reproduced" and method not in INDEPENDENT:
        return "consistent"
    return verdict


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


def round_half_up(x: float, nd: int) -> float:
    q = 10.0 ** nd
    return math.floor(x * q + 0.5) / q


def format_value(v) -> str:
    """How a found or claimed value reads in the ledger: ``yes``/``no``, 6 significant digits."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def agrees(claim: Claim, value: float, claimed: float | None = None) -> bool:
    """``value`` agrees with the claimed number under the claim's tolerance."""
    c = claim.claimed_numbers[0] if claimed is None else claimed
    v = _num("value", value)
    t = claim.tolerance
    if t is None:
        raise ValueError(f"claim {claim.id}: rule {claim.rule!r} needs a tolerance in data/claims.yaml")
    if t.digits:
        nd = decimals_of(c)
        return round_half_up(v, nd) == round_half_up(c, nd)
    if t.rel is not None:
        return abs(v - c) <= t.rel * abs(c)
    return abs(v - c) <= t.abs


def rule_within_tolerance(claim, value=None, values=None, **_):
    """The number found agrees with the claimed one within the stated tolerance; with
    ``values`` (one per claimed number, e.g. "1400 / 1200"), every one must agree."""
    if values is None:
        return "reproduced" if agrees(claim, value) else "discrepancy"
    claimed = claim.claimed_numbers
    if len(values) != len(claimed):
        raise ValueError(f"claim {claim.id}: {len(values)} values for {len(claimed)} claimed numbers")
    return "reproduced" if all(agrees(claim, v, c) for v, c in zip(values, claimed)) else "discrepancy"


def rule_matches(claim, value, correction: str | None = None, **_):
    """What was found equals what the article says (a count, a flag, an error text, a
    rule). When it does not and ``correction`` says what really happens: ``corrected``."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    same = str(value) == format_value(claim.claimed)
    return "reproduced" if same else ("corrected" if correction else "discrepancy")


def rule_holds(claim, holds: bool, correction: str | None = None, **_):
    """A stated fact or argument holds (``holds``) given the evidence; else ``corrected``
    when ``correction`` says what holds instead, ``discrepancy`` otherwise."""
    if not isinstance(holds, bool):
        raise ValueError(f"rule holds: 'holds' must be True or False, got {holds!r}")
    return "reproduced" if holds else ("corrected" if correction else "discrepancy")


def rule_rounding(claim, exact, from_rounded=None, **_):
    """Each exact value, rounded half up to the decimals the article stated, equals the claim.
    If only the same computation on the article's *rounded* inputs does, the article rounded
    first: ``consistent``. ``exact`` / ``from_rounded``: a number or a list (one per claimed
    value)."""
    claimed = claim.claimed_numbers
    ex = exact if isinstance(exact, (list, tuple)) else [exact]
    if len(ex) != len(claimed):
        raise ValueError(f"claim {claim.id}: {len(ex)} exact values for {len(claimed)} claimed")

    def same(vals):
        return all(round_half_up(_num("exact", v), decimals_of(c)) == round_half_up(c, decimals_of(c))
                   for v, c in zip(vals, claimed))

    if same(ex):
        return "reproduced"
    if from_rounded is not None:
        fr = from_rounded if isinstance(from_rounded, (list, tuple)) else [from_rounded]
        if same(fr):
            return "consistent"
    return "discrepancy"


def rule_self_contradiction(claim, value, **_):
    """The claimed number against the value the article's *own* other numbers imply: when
    they disagree the article contradicts itself (``corrected``)."""
    return "reproduced" if agrees(claim, value) else "corrected"


def rule_in_range(claim, low, high, x=None, **_):
    """``x`` (default: the claimed numbers) lies in [low, high]; ``low``/``high`` may be
    lists, one range per claimed number. For T5: each article price within independent
    prices of the same kind; for P8: the article's own average rate within the range it
    states."""
    xs = claim.claimed_numbers if x is None else (list(x) if isinstance(x, (list, tuple)) else [x])
    los = list(low) if isinstance(low, (list, tuple)) else [low] * len(xs)
    his = list(high) if isinstance(high, (list, tuple)) else [high] * len(xs)
    if not len(xs) == len(los) == len(his):
        raise ValueError(f"claim {claim.id}: {len(xs)} values for {len(los)} ranges")
    ok = True
    for v, lo, hi in zip(xs, los, his):
        lo, hi = _num("low", lo), _num("high", hi)
        if lo > hi:
            raise ValueError(f"rule in_range: low {lo} > high {hi}")
        ok &= lo <= _num("x", v) <= hi
    return "reproduced" if ok else "discrepancy"


def rule_ranges_overlap(claim, low, high, claimed_low, claimed_high, **_):
    """A range recomputed from the article's numbers overlaps the range it claims."""
    ok = _num("low", low) <= _num("claimed_high", claimed_high) and _num("high", high) >= _num("claimed_low", claimed_low)
    return "reproduced" if ok else "discrepancy"


def band_is_informative(low: float, high: float, no_effect: float | None = 1.0) -> bool:
    """A modelled band can tell a claim from its negation only if it spans at most
    :data:`BAND_MAX_RATIO` (high / low) and does not contain ``no_effect`` (e.g. a 1.0×
    speed-up)."""
    lo, hi = _num("low", low), _num("high", high)
    if lo <= 0 or hi < lo:
        raise ValueError(f"a band needs 0 < low <= high, got [{lo}, {hi}]")
    if hi / lo > BAND_MAX_RATIO:
        return False
    return not (no_effect is not None and lo <= no_effect <= hi)


def rule_model_band(claim, low, high, no_effect=1.0, claimed_value=None, **_):
    """A model's band [low, high] for the claimed number (``claimed_value`` when the claim
    states it in words, e.g. "+18%" → 1.18). Too wide (see :func:`band_is_informative`) →
    ``not reproducible here``; the claim inside → agrees (``consistent`` for a model);
    outside → ``discrepancy``."""
    if not band_is_informative(low, high, no_effect):
        return "not reproducible here"
    c = claim.claimed_numbers[0] if claimed_value is None else _num("claimed_value", claimed_value)
    return "reproduced" if _num("low", low) <= c <= _num("high", high) else "discrepancy"


def rule_upper_bound(claim, limit, **_):
    """A model's upper bound ``limit`` on the claimed number: a claim below it is possible,
    never confirmed (``not reproducible here``); a claim above it is a ``discrepancy``."""
    return "discrepancy" if claim.claimed_numbers[0] > _num("limit", limit) else "not reproducible here"


def rule_fitted_model(claim, **_):
    """A model fitted to the article's own numbers cannot confirm those numbers."""
    return "not reproducible here"


def rule_unchecked(claim, **_):
    """Nothing here could check it."""
    return "not reproducible here"


RULES = {
    "within_tolerance": rule_within_tolerance,
    "matches": rule_matches,
    "holds": rule_holds,
    "rounding": rule_rounding,
    "self_contradiction": rule_self_contradiction,
    "in_range": rule_in_range,
    "ranges_overlap": rule_ranges_overlap,
    "model_band": rule_model_band,
    "upper_bound": rule_upper_bound,
    "fitted_model": rule_fitted_model,
    "unchecked": rule_unchecked,
}

#: How each rule decides agreement, in words, for a claim without a numeric tolerance
#: (the ledger's ``tolerance`` column); a numeric tolerance in data/claims.yaml overrides it.
CRITERIA = {
    "within_tolerance": "numeric tolerance of data/claims.yaml",
    "matches": "exact: the value found equals the claimed value",
    "holds": "the stated fact holds given the evidence (yes/no)",
    "rounding": "exact value rounded half up to the claim's stated decimals",
    "self_contradiction": "numeric tolerance of data/claims.yaml",
    "in_range": "the value lies inside the range the evidence gives",
    "ranges_overlap": "the recomputed range overlaps the claimed range",
    "model_band": f"inside a model band at most {BAND_MAX_RATIO:g}x wide that excludes no effect",
    "upper_bound": "below the model's upper bound (possible, never confirmed)",
    "fitted_model": "none: a model fitted to the article's numbers cannot confirm them",
    "unchecked": "none: nothing here checks it",
}
