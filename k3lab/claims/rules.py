"""The verdict rules: each turns what a check found into a verdict, then the method caps it.

A rule takes the :class:`~k3lab.claims.registry.Claim` (its claimed value, unit and
tolerance) and the numbers a finding module hands over; :data:`RULES` maps the rule names
``data/claims.yaml`` uses to them. :func:`cap` is the one place where the method limits
the verdict, on both sides: only ``measured`` or ``derived`` evidence can read *reproduced*,
and an emulation, a model or a third party's measurement can say a claim is *inconsistent
with* it, never that the article is wrong (:data:`METHOD_QUALIFIED`).
:func:`same_as_stated` is the one rule for "about N" (the ``digits`` tolerance and the
``rounding`` rule both use it).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
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

#: the verdicts the rules decide between
RULE_VERDICTS = ("reproduced", "consistent", "discrepancy", "corrected", "not reproducible here")
#: what a verdict counts as (:func:`base_verdict`): the rules' five and ``inconsistent``, the
#: negative a weaker method may state (only ever recorded with what it is inconsistent with)
BASE_VERDICTS = ("reproduced", "consistent", "inconsistent", "discrepancy", "corrected", "not reproducible here")
#: the negative verdicts, and the positive one, that need independent evidence
NEGATIVE = ("discrepancy", "corrected")
INDEPENDENT = ("measured", "derived")
#: a method's own wording of a verdict its evidence cannot state plainly → (method, the rule's
#: verdict it stands for). The method caps both sides alike: an emulation (real code in a state
#: the study built), a model, or a third party's measurement that disagrees with a claim cannot
#: show the article wrong any more than one that agrees can show it right; a reader sees with
#: what the claim is inconsistent. (Arithmetic keeps ``discrepancy`` / ``corrected``: the
#: article's own numbers contradicting each other is decisive, agreeing is not.)
METHOD_QUALIFIED = {
    "consistent (emulated)": ("emulated", "consistent"),
    "inconsistent with the emulation": ("emulated", "discrepancy"),
    "inconsistent with the model": ("modelled", "discrepancy"),
    "inconsistent with public measurements": ("cited", "discrepancy"),
}
#: every qualified verdict, with the base verdict it counts as. ``consistent (rounded
#: inputs)``: the article's number follows only from its own *rounded* inputs; the exact
#: computation rounds to something else (T7, T8) — a rule says so, not the method.
QUALIFIED = {"consistent (rounded inputs)": "consistent",
             **{v: "consistent" if r == "consistent" else "inconsistent" for v, (_, r) in METHOD_QUALIFIED.items()}}
#: every verdict a record may carry, in the order a reader ranks them
VERDICTS = ("reproduced", "consistent", "consistent (rounded inputs)", "consistent (emulated)",
            "inconsistent with the emulation", "inconsistent with the model", "inconsistent with public measurements",
            "discrepancy", "corrected", "not reproducible here")
#: a modelled band wider than this factor (high / low) cannot tell a claim from its negation
BAND_MAX_RATIO = 2.0


def base_verdict(verdict: str) -> str:
    """The base verdict a (possibly qualified) verdict counts as; ValueError for an unknown one."""
    if verdict in BASE_VERDICTS:
        return verdict
    if verdict in QUALIFIED:
        return QUALIFIED[verdict]
    raise ValueError(f"unknown verdict {verdict!r}; known: {', '.join(VERDICTS)}")


def cap(method: str, verdict: str) -> str:
    """The verdict a record of ``method`` carries for what a rule decided (a method-qualified
    verdict is read back as the rule's, so the cap is idempotent):

    - ``unchecked``: always ``not reproducible here``;
    - ``reproduced`` needs ``measured`` or ``derived`` evidence; any other method reads ``consistent``
      (an emulation: ``consistent (emulated)``);
    - ``discrepancy`` / ``corrected`` from an emulation, a model or a cited measurement read
      ``inconsistent with`` it (:data:`METHOD_QUALIFIED`); ``arithmetic``, ``measured`` and
      ``derived`` keep them."""
    if verdict in METHOD_QUALIFIED:
        verdict = METHOD_QUALIFIED[verdict][1]
    if verdict not in VERDICTS:  # an unknown verdict is an error, never passed through
        raise ValueError(f"unknown verdict {verdict!r}; known: {', '.join(VERDICTS)}")
    if method == "unchecked":
        return "not reproducible here"
    if verdict == "reproduced" and method not in INDEPENDENT:
        verdict = "consistent"
    rule_says = "discrepancy" if verdict in NEGATIVE else verdict  # a qualified negative stands for both
    for shown, (m, r) in METHOD_QUALIFIED.items():
        if m == method and r == rule_says:
            return shown
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
        return same_as_stated(v, c)
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


def rule_matches(claim, value, correction: str | None = None, covers_claim: bool = True, **_):
    """What was found equals what the article says (a count, a flag, an error text, a
    rule). When it does not and ``correction`` says what really happens: ``corrected``.
    ``covers_claim`` False: the evidence reaches only part of what the claim says (S1: the
    published config, not the checkpoint's tensor list), so agreement reads ``consistent``."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    if str(value) == format_value(claim.claimed):
        return "reproduced" if covers_claim else "consistent"
    return "corrected" if correction else "discrepancy"


def rule_holds(claim, holds: bool | None, correction: str | None = None, **_):
    """A stated fact or argument holds (``holds``) given the evidence; else ``corrected``
    when ``correction`` says what holds instead, ``discrepancy`` otherwise. ``holds=None``:
    the evidence cannot decide (it turns on a setting or a measurement nothing here has):
    ``not reproducible here``."""
    if holds is None:
        return "not reproducible here"
    if not isinstance(holds, bool):
        raise ValueError(f"rule holds: 'holds' must be True, False or None, got {holds!r}")
    return "reproduced" if holds else ("corrected" if correction else "discrepancy")


def rule_rounding(claim, exact, from_rounded=None, **_):
    """Each exact value, rounded half up at the claim's last stated digit
    (:func:`same_as_stated`), equals the claim. If only the same computation on the
    article's *rounded* inputs does, the article rounded first: ``consistent (rounded
    inputs)``, never the plain ``consistent`` of an exact match. ``exact`` / ``from_rounded``:
    a number or a list (one per claimed value)."""
    claimed = claim.claimed_numbers
    ex = exact if isinstance(exact, (list, tuple)) else [exact]
    if len(ex) != len(claimed):
        raise ValueError(f"claim {claim.id}: {len(ex)} exact values for {len(claimed)} claimed")

    def same(vals):
        return all(same_as_stated(_num("exact", v), c) for v, c in zip(vals, claimed))

    if same(ex):
        return "reproduced"
    if from_rounded is not None:
        fr = from_rounded if isinstance(from_rounded, (list, tuple)) else [from_rounded]
        if len(fr) != len(claimed):
            raise ValueError(f"claim {claim.id}: {len(fr)} rounded-input values for {len(claimed)} claimed")
        if same(fr):
            return "consistent (rounded inputs)"
    return "discrepancy"


def rule_self_contradiction(claim, value, **_):
    """The claimed number against the value the article's *own* other numbers imply: when
    they disagree the article contradicts itself (``corrected``)."""
    return "reproduced" if agrees(claim, value) else "corrected"


def _inside(claim, low, high, x=None) -> bool:
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
    return ok


def rule_in_range(claim, low, high, x=None, **_):
    """``x`` (default: the claimed numbers) lies in [low, high]; ``low``/``high`` may be
    lists, one range per claimed number (P8, P9: a value the article's own numbers imply,
    within the range it states)."""
    return "reproduced" if _inside(claim, low, high, x) else "discrepancy"


def rule_plausible_range(claim, low, high, x=None, **_):
    """Like ``in_range``, for a range that can place a number but never establish it (the
    independent prices a rate could be, from the lowest rental rate less the largest
    committed-term discount to the highest list price: T5, T18): inside → ``consistent``,
    outside → ``discrepancy``."""
    return "consistent" if _inside(claim, low, high, x) else "discrepancy"


def rule_validated_model(claim, readings, in_domain: bool = True, claimed_value=None, **_):
    """A serving model validated on public measurements (:mod:`k3lab.serving`): each reading of
    the claim (e.g. with and without speculative decoding) is a (predicted, band) pair, the band
    the model's out-of-source validation error as a log factor; together they span
    ``[min p·e^-band, max p·e^band]``.

    - the question outside the model's validated domain (``in_domain`` False: a length,
      concurrency or topology no public measurement covers), or a reading whose band is None
      (the metric is not validated: its out-of-sample error is unknown or wider than ×2)
      → ``not reproducible here``;
    - the claim outside the span → ``discrepancy``, however wide the span (a claim outside even
      a wide band is flagged, never reported like one inside);
    - inside a span at most :data:`BAND_MAX_RATIO` wide → agrees (``consistent`` for a model);
    - inside a wider span → ``not reproducible here``.
    """
    if not isinstance(in_domain, bool):
        raise ValueError(f"rule validated_model: in_domain must be True or False, got {in_domain!r}")
    pts = list(readings)
    if not pts:
        raise ValueError(f"claim {claim.id}: rule validated_model needs at least one (predicted, band) reading")
    lows, highs = [], []
    if any(b is None for _, b in pts):  # a metric the model is not validated on judges nothing
        return "not reproducible here"
    for p, b in pts:
        p, b = _num("predicted", p), _num("band", b)
        if p <= 0 or b < 0:
            raise ValueError(f"rule validated_model: need predicted > 0 and band >= 0, got {p}, {b}")
        lows.append(p * math.exp(-b))
        highs.append(p * math.exp(b))
    if not in_domain:
        return "not reproducible here"
    lo, hi = min(lows), max(highs)
    c = claim.claimed_numbers[0] if claimed_value is None else _num("claimed_value", claimed_value)
    if not lo <= c <= hi:
        return "discrepancy"
    return "reproduced" if hi / lo <= BAND_MAX_RATIO else "not reproducible here"


def rule_cited(claim, values, claimed_value=None, **_):
    """Third-party measurements of the claim's setting (``values``; method ``cited``: measured,
    but not here; the finding names where a measurement's setting differs, e.g. its workload
    or a GPU of the same silicon): the claim within the claim's tolerance of any of them
    agrees (capped at ``consistent``: the study did not make the measurement); otherwise
    ``discrepancy`` (capped at ``inconsistent with public measurements``, for the same reason).
    No matching measurement → ``not reproducible here``."""
    vals = [_num("cited value", v) for v in values]
    if not vals:
        return "not reproducible here"
    c = claim.claimed_numbers[0] if claimed_value is None else _num("claimed_value", claimed_value)
    return "reproduced" if any(agrees(claim, v, c) for v in vals) else "discrepancy"


def rule_direction(claim, leads, correction: str | None = None, **_):
    """A direction (one side wins) judged under every reading that can decide it: ``leads``, one
    (low, high) per reading, the winner's lead as a fraction (0.45 = 45% better; a reading
    without a band has low = high). The direction holds when every reading's low end is above
    zero; a reading wholly below zero reverses it (``corrected`` with ``correction``, else
    ``discrepancy``); otherwise some reading cannot tell (``not reproducible here``). T20: the
    MI355X's perf/$ lead over the B300 under each independent price source."""
    pts = [(_num("lead low", lo), _num("lead high", hi)) for lo, hi in leads]
    if not pts:
        raise ValueError(f"claim {claim.id}: rule direction needs at least one (low, high) lead")
    if any(lo > hi for lo, hi in pts):
        raise ValueError(f"claim {claim.id}: rule direction: a lead's low end is above its high end")
    if any(hi < 0 for _, hi in pts):
        return "corrected" if correction else "discrepancy"
    return "reproduced" if all(lo > 0 for lo, _ in pts) else "not reproducible here"


def rule_lower_bound(claim, limit, **_):
    """A lower bound ``limit`` the evidence puts on the claimed number (M6: the weights alone
    are a floor under "weights plus KV state"): a claim at or above it is possible, never
    confirmed (``not reproducible here``); a claim below it is a ``discrepancy``."""
    return "discrepancy" if claim.claimed_numbers[0] < _num("limit", limit) else "not reproducible here"


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
    "plausible_range": rule_plausible_range,
    "validated_model": rule_validated_model,
    "cited": rule_cited,
    "direction": rule_direction,
    "lower_bound": rule_lower_bound,
    "unchecked": rule_unchecked,
}

#: How each rule decides agreement, in words, for a claim without a numeric tolerance
#: (the ledger's ``tolerance`` column); a numeric tolerance in data/claims.yaml overrides it.
CRITERIA = {
    "within_tolerance": "numeric tolerance of data/claims.yaml",
    "matches": "exact: the value found equals the claimed value",
    "holds": "the stated fact holds given the evidence (yes/no; undecided: not reproducible here)",
    "rounding": "exact value rounded half up at the claim's last stated digit (from rounded inputs only: "
                "consistent (rounded inputs))",
    "self_contradiction": "numeric tolerance of data/claims.yaml",
    "in_range": "the value lies inside the range the evidence gives",
    "plausible_range": "inside the range of independent figures of the same kind (it places, never establishes)",
    "validated_model": (f"inside the serving model's validated band (its out-of-source error on public "
                        f"measurements), at most {BAND_MAX_RATIO:g}x wide, inside the validated domain"),
    "cited": "numeric tolerance of data/claims.yaml, against third-party measurements of the same setting",
    "direction": "every reading's lead above zero (a reading wholly below zero reverses it; one straddling zero cannot tell)",
    "lower_bound": "at or above the evidence's lower bound (possible, never confirmed)",
    "unchecked": "none: nothing here checks it",
}
