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
from typing import Protocol

from .tolerance import (_num, agrees, decimals_of, round_half_up, round_to_exponent, same_as_stated,  # noqa: F401
                        stated_exponent, tolerance_interval)


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
#: would decide wrongly), precision (the point stands, a number, its unit or what it counts is off),
#: literal (the words are wrong, a quantifier too broad, while the meaning the article plainly intends
#: holds: 'any', 'the only', 'at all', 'the very first'; data/claims.yaml's header)
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


def format_value(v) -> str:
    """How a found or claimed value reads in the ledger: ``yes``/``no``, 6 significant digits."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


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


def rule_holds(claim, holds: bool | None = None, correction: str | None = None, readings: dict | None = None, **_):
    """A stated fact or argument holds (``holds``) given the evidence; else ``corrected``
    when ``correction`` says what holds instead, ``discrepancy`` otherwise. ``holds=None``:
    the evidence cannot decide (it turns on a setting or a measurement nothing here has, or on
    an effort such as "an afternoon" that nothing here measures): ``not reproducible here``.

    ``readings`` (instead of ``holds``): {a reading the article leaves open: whether the claim holds
    under it} (T23: its ~195 Gb/s per GPU or per node). Every reading holds → as ``holds=True``;
    none does → as ``holds=False``; some do and some do not → ``not reproducible here``: the verdict
    turns on what the article left open, never on the reading the study prefers (audit 3)."""
    if readings is not None:
        if holds is not None:
            raise ValueError("rule holds: give 'holds' or 'readings', not both")
        vals = list(readings.values())
        if not vals or not all(isinstance(v, bool) for v in vals):
            raise ValueError(f"rule holds: 'readings' must map each reading to True or False, got {readings!r}")
        holds = True if all(vals) else False if not any(vals) else None
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


def rule_plausible_range(claim, low, high, x=None, below=0.0, above=0.0, **_):
    """Like ``in_range``, for a range that can place a number but never establish it (rental prices,
    lowest to highest: T5, T18), so it cuts both ways alike: every number inside → ``consistent``;
    one beyond the range and its margins → ``inconsistent`` (a few prices refute no rate, as they
    confirm none). ``below`` / ``above``: a margin (a fraction of the end) the evidence itself
    documents beyond an end (T5: the committed-term discounts of the same data under their list
    prices); a number inside a margin and none beyond → ``not reproducible here`` (possible, never
    shown). The margins never widen what reads ``consistent``."""
    xs = claim.claimed_numbers if x is None else (list(x) if isinstance(x, (list, tuple)) else [x])
    b, a = _num("below", below), _num("above", above)
    if not (0 <= b < 1 and a >= 0):
        raise ValueError(f"rule plausible_range: margins need 0 <= below < 1 and above >= 0, got {b}, {a}")
    if _inside(claim, low, high, xs):
        return "consistent"
    los = [v * (1 - b) for v in (low if isinstance(low, (list, tuple)) else [low] * len(xs))]
    his = [v * (1 + a) for v in (high if isinstance(high, (list, tuple)) else [high] * len(xs))]
    return "not reproducible here" if _inside(claim, los, his, xs) else "inconsistent"


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


def rule_cited(claim, values, claimed_value=None, spread: float = 1.0, **_):
    """Third-party measurements of the claim's setting (``values``; method ``cited``: measured, not
    here; the finding names where a setting differs): the claim within tolerance of every one agrees
    (capped at ``consistent``), of none is a ``discrepancy`` (capped at ``inconsistent with public
    measurements``); of some but not all, or with none to compare, ``not reproducible here``.

    ``spread`` (a factor >= 1): how far the same data documents the measured quantity moving with
    what the cited runs did not hold to the claim's setting (S6: a single-stream DSpark gain with
    the acceptance the prompts allow, 10th to 90th percentile of public runs). A claim within a
    value's spread (value ÷ spread to value × spread), above or below alike, but within tolerance of
    none → ``not reproducible here`` (possible, never shown), like ``plausible_range``'s margins; the
    spread never widens what agrees."""
    vals = [_num("cited value", v) for v in values]
    k = _num("spread", spread)
    if k < 1:
        raise ValueError(f"rule cited: spread is a factor >= 1, got {k}")
    if not vals:
        return "not reproducible here"
    c = claim.claimed_numbers[0] if claimed_value is None else _num("claimed_value", claimed_value)
    hits = [agrees(claim, v, c) for v in vals]
    if all(hits):
        return "reproduced"
    if any(hits) or any(v / k <= c <= v * k for v in vals):
        return "not reproducible here"
    return "discrepancy"


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
    tolerance. A reading is a number, or a (low, high) range where the prices it rests on are a
    range (Ornn's B300 index): a range wholly inside the tolerance agrees, one wholly outside
    disagrees, one across its edge agrees at some of its prices and not at others. Every reading
    agrees → ``reproduced``; none agrees anywhere → ``discrepancy``; the number holds at some of the
    prices and not at others → :data:`TURNS`. The direction is another claim (T20)."""
    pts = [(_num("reading", v), _num("reading", v)) if not isinstance(v, (list, tuple))
           else (_num("reading low", v[0]), _num("reading high", v[1])) for v in values]
    if not pts:
        raise ValueError(f"claim {claim.id}: rule magnitude needs at least one reading")
    if any(lo > hi for lo, hi in pts):
        raise ValueError(f"claim {claim.id}: rule magnitude: a reading's low end is above its high end")
    t_lo, t_hi = tolerance_interval(claim)
    somewhere = [lo == hi and agrees(claim, lo) or lo < hi and lo <= t_hi and hi >= t_lo for lo, hi in pts]
    everywhere = [lo == hi and agrees(claim, lo) or lo < hi and agrees(claim, lo) and agrees(claim, hi)
                  for lo, hi in pts]
    if all(everywhere):
        return "reproduced"
    return "discrepancy" if not any(somewhere) else TURNS


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
    "holds": "the stated fact holds given the evidence (yes/no; undecided, or holding under some readings the article "
             "leaves open and not under others: not reproducible here)",
    "rounding": "exact value rounded half up at the claim's last stated digit (from rounded inputs only: "
                "consistent (rounded inputs))",
    "self_contradiction": "numeric tolerance of data/claims.yaml",
    "in_range": "the value lies inside the range the evidence gives",
    "plausible_range": "inside the range of independent rental prices (it places, never establishes; outside it and "
                       "any margin the same data documents, it disagrees, never refutes; inside a margin: undecided)",
    "validated_model": (f"inside the serving model's validated band (its out-of-source error on public "
                        f"measurements), at most {BAND_MAX_RATIO:g}x wide, inside the validated domain"),
    "cited": "numeric tolerance of data/claims.yaml, against every third-party measurement of the same setting "
             "(some agreeing, some not, or a gap inside a spread the same data documents: undecided)",
    "direction": "every reading's lead above zero (every one below: reversed; some above and some below: turns on "
                 "the price; one straddling zero: cannot tell)",
    "bound": "inside the evidence's floor / ceiling (possible, never confirmed; outside: a discrepancy)",
    "magnitude": "numeric tolerance of data/claims.yaml under every reading, a reading over a range of prices as a "
                 "range (agreeing at some prices and not at others: turns on the price)",
    "unchecked": "none: nothing here checks it",
}
