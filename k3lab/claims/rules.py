"""The verdict rules: each turns what a check found into a verdict, then the method caps it.

A rule takes the :class:`~k3lab.claims.registry.Claim` (its claimed value, unit and
tolerance) and the numbers a finding module hands over; :data:`RULES` maps the rule names
``data/claims.yaml`` uses to them. :func:`cap` is the one place where the method limits
the verdict, on both sides: only ``measured`` or ``derived`` evidence can read *reproduced*,
and an emulation, a model or a third party's measurement can say a claim is *inconsistent
with* it, never that the article is wrong (:data:`METHOD_QUALIFIED`).
:func:`same_as_stated` is the one rule for "about N" (the ``digits`` tolerance and the
``rounding`` rule both use it).

**Rules cut both ways** (``tests/test_claims_symmetry.py`` checks every rule): evidence that
points the other way gives the mirrored verdict at the same strength — *reproduced* ↔
*discrepancy*/*corrected* (strong), *consistent* ↔ *inconsistent* (weak: evidence that can place
a claim but not establish it cannot refute it either), *not reproducible here* and *turns on the
price* (undecided) ↔ themselves. :data:`STRENGTH` ranks them so.
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

#: what a direction whose readings split (some wholly ahead, some wholly behind) reads
TURNS = "turns on the price"
#: the verdicts the rules decide between. ``inconsistent``: the evidence disagrees but, like its
#: agreement (``consistent``), cannot establish anything; never recorded bare (:func:`cap` names
#: with what). :data:`TURNS`: the readings split, so the claim holds under some and not others.
RULE_VERDICTS = ("reproduced", "consistent", "inconsistent", "discrepancy", "corrected", TURNS,
                 "not reproducible here")
#: what a verdict counts as (:func:`base_verdict`): the rules' own
BASE_VERDICTS = RULE_VERDICTS
#: the negative verdicts (base), and the methods whose positive needs no cap
NEGATIVE = ("discrepancy", "corrected")
NEGATIVE_BASE = ("inconsistent", "discrepancy", "corrected")
INDEPENDENT = ("measured", "derived")
#: a method's own wording of a verdict its evidence cannot state plainly → (method, the rule's
#: verdict it stands for). The method caps both sides alike: an emulation (real code in a state
#: the study built), a model, or a third party's measurement that disagrees with a claim cannot
#: show the article wrong any more than one that agrees can show it right; a reader sees with
#: what the claim is inconsistent.
METHOD_QUALIFIED = {
    "consistent (emulated)": ("emulated", "consistent"),
    "inconsistent with the emulation": ("emulated", "discrepancy"),
    "inconsistent with the model": ("modelled", "discrepancy"),
    "inconsistent with public measurements": ("cited", "discrepancy"),
}
#: a rule's ``inconsistent`` from any other evidence (a few prices, a proxy, outside numbers)
INCONSISTENT_EVIDENCE = "inconsistent with the evidence"
#: every qualified verdict, with the base verdict it counts as. ``consistent (rounded inputs)``:
#: the article's number follows only from its own *rounded* inputs; the exact computation rounds
#: to something else (T7, T8) — a rule says so, not the method.
QUALIFIED = {"consistent (rounded inputs)": "consistent", INCONSISTENT_EVIDENCE: "inconsistent",
             **{v: "consistent" if r == "consistent" else "inconsistent" for v, (_, r) in METHOD_QUALIFIED.items()}}
#: every verdict a record may carry, in the order a reader ranks them
VERDICTS = ("reproduced", "consistent", "consistent (rounded inputs)", "consistent (emulated)",
            "inconsistent with the emulation", "inconsistent with the model", "inconsistent with public measurements",
            INCONSISTENT_EVIDENCE, "discrepancy", "corrected", TURNS, "not reproducible here")
#: how strongly a base verdict speaks for (+) or against (-) the claim: mirrored evidence, the opposite
STRENGTH = {"reproduced": 2, "consistent": 1, "not reproducible here": 0, TURNS: 0, "inconsistent": -1,
            "discrepancy": -2, "corrected": -2}
#: the rules under which an arithmetic claim meets only the article's own numbers: a disagreement
#: there is the article contradicting itself (decisive), an agreement only self-consistency
#: (capped). Any other rule brings outside numbers in (T20: independent prices), so the cap is
#: the same on both sides: consistent ↔ inconsistent with the evidence.
SELF_CHECK_RULES = ("within_tolerance", "rounding", "self_contradiction", "in_range", "holds", "bound", "matches")
#: a negative verdict's kind of correction (counted by kind): substantive (a reader acting on the claim
#: would decide wrongly), precision (the point stands, a number or its scope is off), literal (the words
#: are wrong, the meaning the article plainly intends holds)
CORRECTION_KINDS = ("substantive", "precision", "literal")
#: a modelled band wider than this factor (high / low) cannot tell a claim from its negation
BAND_MAX_RATIO = 2.0


def base_verdict(verdict: str) -> str:
    """The base verdict a (possibly qualified) verdict counts as; ValueError for an unknown one."""
    if verdict in BASE_VERDICTS:
        return verdict
    if verdict in QUALIFIED:
        return QUALIFIED[verdict]
    raise ValueError(f"unknown verdict {verdict!r}; known: {', '.join(VERDICTS)}")


def is_negative(verdict: str) -> bool:
    """A verdict that speaks against the claim (``discrepancy``, ``corrected``, any ``inconsistent with``)."""
    return base_verdict(verdict) in NEGATIVE_BASE


def cap(method: str, verdict: str, rule: str | None = None) -> str:
    """The verdict a record of ``method`` carries for what a rule decided (a method-qualified
    verdict is read back as the rule's, so the cap is idempotent):

    - ``unchecked``: always ``not reproducible here``;
    - ``reproduced`` needs ``measured`` or ``derived`` evidence; any other method reads ``consistent``
      (an emulation: ``consistent (emulated)``);
    - ``discrepancy`` / ``corrected`` from an emulation, a model or a cited measurement read
      ``inconsistent with`` it (:data:`METHOD_QUALIFIED`); ``measured`` and ``derived`` keep them, and
      ``arithmetic`` keeps them under :data:`SELF_CHECK_RULES` (``rule``; None counts as one),
      where they are the article contradicting itself; under any other rule an arithmetic negative
      reads :data:`INCONSISTENT_EVIDENCE`, like its capped positive;
    - a rule's weak ``inconsistent`` reads ``inconsistent with`` the emulation, the model, public
      measurements or, for any other method, :data:`INCONSISTENT_EVIDENCE`."""
    if verdict in METHOD_QUALIFIED:
        verdict = METHOD_QUALIFIED[verdict][1]
    elif verdict == INCONSISTENT_EVIDENCE:
        verdict = "inconsistent"
    if verdict not in VERDICTS and verdict != "inconsistent":  # an unknown verdict is an error, never passed through
        raise ValueError(f"unknown verdict {verdict!r}; known: {', '.join(VERDICTS)}")
    if method == "unchecked":
        return "not reproducible here"
    if verdict == "reproduced" and method not in INDEPENDENT:
        verdict = "consistent"
    if verdict in NEGATIVE and method == "arithmetic" and rule is not None and rule not in SELF_CHECK_RULES:
        verdict = "inconsistent"
    weak = verdict == "inconsistent"
    rule_says = "discrepancy" if verdict in NEGATIVE or weak else verdict  # a qualified negative stands for both
    for shown, (m, r) in METHOD_QUALIFIED.items():
        if m == method and r == rule_says:
            return shown
    return INCONSISTENT_EVIDENCE if weak else verdict


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
    ``covers_claim`` False: the evidence is a proxy that reaches only part of what the claim
    says (S1: the published config, not the checkpoint's tensor list), so it cuts both ways
    weakly: agreement reads ``consistent``, disagreement ``inconsistent``."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    if str(value) == format_value(claim.claimed):
        return "reproduced" if covers_claim else "consistent"
    if not covers_claim:
        return "inconsistent"
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
    """Like ``in_range``, for a range that can place a number but never establish it (rental prices,
    lowest to highest, no discount added: T5, T18), so it cuts both ways alike: inside →
    ``consistent``, outside → ``inconsistent`` (a few prices refute no rate, as they confirm none)."""
    return "consistent" if _inside(claim, low, high, x) else "inconsistent"


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
    """Third-party measurements of the claim's setting (``values``; method ``cited``: measured, not
    here; the finding names where a setting differs): the claim within tolerance of every one agrees
    (capped at ``consistent``), of none is a ``discrepancy`` (capped at ``inconsistent with public
    measurements``); of some but not all, or with none to compare, ``not reproducible here``."""
    vals = [_num("cited value", v) for v in values]
    if not vals:
        return "not reproducible here"
    c = claim.claimed_numbers[0] if claimed_value is None else _num("claimed_value", claimed_value)
    hits = [agrees(claim, v, c) for v in vals]
    return "reproduced" if all(hits) else "discrepancy" if not any(hits) else "not reproducible here"


def rule_direction(claim, leads, correction: str | None = None, **_):
    """A direction (one side wins) under every reading that can decide it: ``leads``, one (low,
    high) per reading, the winner's lead as a fraction (0.45 = 45% better; no band: low = high).
    Every reading wholly above zero: it holds; every one wholly below: reversed (``corrected`` with
    ``correction``, else ``discrepancy``); some wholly above and some wholly below: :data:`TURNS`
    (never a reversal); otherwise a reading straddles zero: ``not reproducible here``. T20, T21."""
    pts = [(_num("lead low", lo), _num("lead high", hi)) for lo, hi in leads]
    if not pts:
        raise ValueError(f"claim {claim.id}: rule direction needs at least one (low, high) lead")
    if any(lo > hi for lo, hi in pts):
        raise ValueError(f"claim {claim.id}: rule direction: a lead's low end is above its high end")
    ahead, behind = sum(lo > 0 for lo, _ in pts), sum(hi < 0 for _, hi in pts)
    if ahead == len(pts):
        return "reproduced"
    if behind == len(pts):
        return "corrected" if correction else "discrepancy"
    return TURNS if ahead and behind else "not reproducible here"


def rule_bound(claim, floor=None, ceiling=None, x=None, **_):
    """A bound the evidence puts on the claimed numbers (or on ``x``, when the claim is words:
    P8's "4-7k"): a ``floor`` (M6: the weights alone are a floor under "weights plus KV state"; P8:
    a TTFT's average rate is a floor under the prefill rate) and/or a ``ceiling`` (T27: a public
    peak caps a ratio). Inside the bounds the claim is possible, never confirmed (``not reproducible
    here``); outside them it is a ``discrepancy``. A floor and a ceiling are judged alike (the
    mirror of a claim below a floor is one above a ceiling)."""
    if floor is None and ceiling is None:
        raise ValueError(f"claim {claim.id}: rule bound needs a floor or a ceiling")
    lo = -math.inf if floor is None else _num("floor", floor)
    hi = math.inf if ceiling is None else _num("ceiling", ceiling)
    if lo > hi:
        raise ValueError(f"claim {claim.id}: rule bound: floor {lo} > ceiling {hi}")
    xs = claim.claimed_numbers if x is None else [_num("x", v) for v in (x if isinstance(x, (list, tuple)) else [x])]
    return "not reproducible here" if all(lo <= c <= hi for c in xs) else "discrepancy"


def rule_magnitude(claim, values, **_):
    """One claimed number (a multiplier) under several readings of it (``values``: T26, the
    MI355X's lead under each pair of independent rental prices), each against the claim's
    tolerance: every reading agrees → ``reproduced``; none → ``discrepancy``; some do and some do
    not → :data:`TURNS` (the number holds at some prices only). The direction is another claim (T20)."""
    vals = [_num("reading", v) for v in values]
    if not vals:
        raise ValueError(f"claim {claim.id}: rule magnitude needs at least one reading")
    hits = [agrees(claim, v) for v in vals]
    return "reproduced" if all(hits) else "discrepancy" if not any(hits) else TURNS


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
    "bound": rule_bound,
    "magnitude": rule_magnitude,
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
    "plausible_range": "inside the range of independent rental prices (it places, never establishes; outside, it "
                       "disagrees, never refutes)",
    "validated_model": (f"inside the serving model's validated band (its out-of-source error on public "
                        f"measurements), at most {BAND_MAX_RATIO:g}x wide, inside the validated domain"),
    "cited": "numeric tolerance of data/claims.yaml, against every third-party measurement of the same setting "
             "(some agreeing, some not: undecided)",
    "direction": "every reading's lead above zero (every one below: reversed; some above and some below: turns on "
                 "the price; one straddling zero: cannot tell)",
    "bound": "inside the evidence's floor / ceiling (possible, never confirmed; outside: a discrepancy)",
    "magnitude": "numeric tolerance of data/claims.yaml under every reading (some agreeing, some not: turns on the price)",
    "unchecked": "none: nothing here checks it",
}
