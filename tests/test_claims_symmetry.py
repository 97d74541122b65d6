"""Rules that cut both ways (issue 36): for every rule of ``k3lab.claims.RULES``, evidence that
points the other way gives the mirrored verdict at the same strength — reproduced ↔ discrepancy /
corrected, consistent ↔ inconsistent, undecided ↔ undecided (``k3lab.claims.STRENGTH``) — and the
method's cap keeps it so. Each rule's mirror is written here by hand, from the evidence the rule
reads; the verdicts are never copied from the code under test, only their strengths compared.

The two asymmetries the project keeps are pinned as such, with their reason: an arithmetic
disagreement among the article's own numbers is decisive while their agreement is not (the
article contradicting itself), and a bound can only ever refute (a floor and a ceiling alike).
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3lab import claims
from k3lab.claims.rules import RULES, cap
from k3lab.schemas import Tolerance

S = claims.STRENGTH
REL = Tolerance(rel=0.1, why="a test's 10%")


def strength(verdict: str) -> int:
    return S[claims.base_verdict(verdict)]


def _claim(claimed, rule, tol=None, method="derived"):
    return claims.Claim("X1", "throughput", "04_throughput_perf_per_dollar", "q", claimed, "u", method, rule, tol)


def _mirrored(a: str, b: str) -> bool:
    return strength(a) == -strength(b)


positive = st.floats(min_value=0.5, max_value=5_000, allow_nan=False, allow_infinity=False)
inside = st.floats(min_value=-0.095, max_value=0.095)       # within 10%, with a margin
outside = st.floats(min_value=0.105, max_value=3.0)         # beyond it, either side


# --------------------------------------------------------------------------- one mirror per rule

@settings(max_examples=60, deadline=None)
@given(c=positive, d=inside, e=outside, sign=st.sampled_from((-1, 1)))
def test_within_tolerance(c, d, e, sign):
    claim = _claim(c, "within_tolerance", REL)
    if sign < 0 and e >= 1:
        e = 0.5                                            # a value below zero is no mirror of one above
    agree, disagree = RULES["within_tolerance"](claim, value=c * (1 + d)), \
        RULES["within_tolerance"](claim, value=c * (1 + sign * e))
    assert _mirrored(agree, disagree) and strength(agree) == 2


@pytest.mark.parametrize("covers", [True, False])
@pytest.mark.parametrize("correction", [None, "what holds instead"])
def test_matches(covers, correction):
    claim = _claim(12, "matches")
    same = RULES["matches"](claim, value=12, covers_claim=covers, correction=correction)
    other = RULES["matches"](claim, value=16, covers_claim=covers, correction=correction)
    assert _mirrored(same, other)
    assert abs(strength(same)) == (2 if covers else 1)    # a proxy is weak on both sides


@pytest.mark.parametrize("correction", [None, "what holds instead"])
def test_holds(correction):
    claim = _claim("x", "holds")
    assert _mirrored(RULES["holds"](claim, holds=True, correction=correction),
                     RULES["holds"](claim, holds=False, correction=correction))
    assert strength(RULES["holds"](claim, holds=None, correction=correction)) == 0


@settings(max_examples=60, deadline=None)
@given(outcomes=st.lists(st.booleans(), min_size=1, max_size=4), correction=st.sampled_from((None, "what holds")))
def test_holds_over_the_readings_the_article_leaves_open(outcomes, correction):
    """Audit 3 (T23: ~195 Gb/s per GPU or per node): negating the claim's outcome under every reading
    mirrors the verdict; holding under some readings and not under others decides nothing, whichever
    way round."""
    claim = _claim("x", "holds")
    readings = {f"reading {i}": o for i, o in enumerate(outcomes)}
    flipped = {k: not o for k, o in readings.items()}
    a = RULES["holds"](claim, readings=readings, correction=correction)
    b = RULES["holds"](claim, readings=flipped, correction=correction)
    assert _mirrored(a, b)
    if len(set(outcomes)) == 2:
        assert a == b == "not reproducible here"
    else:
        assert abs(strength(a)) == 2
    with pytest.raises(ValueError):
        RULES["holds"](claim, holds=True, readings=readings)


@settings(max_examples=60, deadline=None)
@given(c=st.integers(min_value=2, max_value=900).filter(lambda n: n % 10), frac=st.floats(min_value=-0.45, max_value=0.45),
       off=st.floats(min_value=0.55, max_value=0.95), sign=st.sampled_from((-1, 1)))
def test_rounding(c, frac, off, sign):
    """The exact value rounds to the claim, or misses it; the rounded-input path (when given)
    mirrored along with it (whole numbers whose last digit is significant: 10 is read as 1e1)."""
    claim = _claim(c, "rounding")
    hit, miss = c + frac, c + sign * off
    assert _mirrored(RULES["rounding"](claim, exact=hit), RULES["rounding"](claim, exact=miss))
    assert _mirrored(RULES["rounding"](claim, exact=hit, from_rounded=hit),
                     RULES["rounding"](claim, exact=miss, from_rounded=miss))


def test_rounding_credits_only_the_articles_stated_inputs():
    """The one qualifier of ``rounding``: the exact value misses, the article's own rounded inputs
    hit (T7: 48 / 33 = 45.45 → 45, exact 45.7 → 46). It reads a weak positive because the
    article's number is what its printed inputs give; its mirror (exact hits, printed inputs
    miss) is an exact agreement and reads reproduced. Both sides credit the article's arithmetic
    on numbers it printed, never penalise it: kept, and pinned here."""
    claim = _claim(45, "rounding")
    assert RULES["rounding"](claim, exact=45.7, from_rounded=45.45) == "consistent (rounded inputs)"
    assert RULES["rounding"](claim, exact=45.3, from_rounded=45.7) == "reproduced"


@settings(max_examples=60, deadline=None)
@given(c=positive, d=inside, e=outside)
def test_self_contradiction(c, d, e):
    claim = _claim(c, "self_contradiction", REL)
    assert _mirrored(RULES["self_contradiction"](claim, value=c * (1 + d)),
                     RULES["self_contradiction"](claim, value=c * (1 + e)))


@pytest.mark.parametrize("rule, weight", [("in_range", 2), ("plausible_range", 1)])
@settings(max_examples=40, deadline=None)
@given(lo=positive, width=st.floats(min_value=0.01, max_value=10), t=st.floats(min_value=0, max_value=1),
       out=st.floats(min_value=0.01, max_value=5), below=st.booleans())
def test_ranges(rule, weight, lo, width, t, out, below):
    hi = lo * (1 + width)
    claim = _claim(1.0, rule)
    x_in = lo + t * (hi - lo)
    x_out = lo / (1 + out) if below else hi * (1 + out)
    a, b = RULES[rule](claim, low=lo, high=hi, x=x_in), RULES[rule](claim, low=lo, high=hi, x=x_out)
    assert _mirrored(a, b) and abs(strength(a)) == weight   # a range of prices places and disagrees alike


@settings(max_examples=60, deadline=None)
@given(lo=positive, width=st.floats(min_value=0.01, max_value=10), m=st.floats(min_value=0.02, max_value=0.5),
       t=st.floats(min_value=0.05, max_value=0.95))
def test_plausible_range_margin_is_undecided_on_both_sides(lo, width, m, t):
    """Audit 2: a margin the same data documents beyond an end (T5: committed-term discounts below the
    lowest price) reads undecided, below the low end and, mirrored, above the high end alike; beyond
    the margin it disagrees, inside the range it agrees: the margin never widens 'consistent'."""
    hi = lo * (1 + width)
    claim = _claim(1.0, "plausible_range")
    rule = RULES["plausible_range"]
    below, above = lo * (1 - t * m), hi * (1 + t * m)
    assert strength(rule(claim, low=lo, high=hi, x=below, below=m)) == 0
    assert strength(rule(claim, low=lo, high=hi, x=above, above=m)) == 0
    assert strength(rule(claim, low=lo, high=hi, x=lo * (1 - m) * 0.9, below=m)) == -1
    assert strength(rule(claim, low=lo, high=hi, x=hi * (1 + m) * 1.1, above=m)) == -1
    assert strength(rule(claim, low=lo, high=hi, x=(lo + hi) / 2, below=m, above=m)) == 1
    # one number beyond its margin outweighs another inside one: the claim's numbers read together
    assert strength(rule(claim, low=[lo, lo], high=[hi, hi], x=[below, lo * (1 - m) * 0.9], below=m)) == -1


@settings(max_examples=60, deadline=None)
@given(c=st.floats(min_value=5, max_value=500), w=st.floats(min_value=0.001, max_value=0.09),
       e=outside, across=st.floats(min_value=0.2, max_value=0.8))
def test_magnitude_over_a_range_of_prices(c, w, e, across):
    """Audit 2: a reading over a range of prices (Ornn's B300 index) is a range: wholly inside the
    tolerance agrees ↔ wholly outside disagrees (mirrored); one across the tolerance's edge holds at
    some prices and not at others, undecided (turns on the price) like a split of point readings."""
    claim = _claim(c, "magnitude", REL)
    rule = RULES["magnitude"]
    inside_r = (c * (1 - w), c * (1 + w))
    outside_r = (c * (1 + e), c * (1 + e) * 1.5)
    assert _mirrored(rule(claim, values=[inside_r]), rule(claim, values=[outside_r]))
    edge = c * (1.1 - 0.2 * across)                       # a range from well below into the tolerance
    assert strength(rule(claim, values=[(c * 0.05, edge)])) == 0
    assert strength(rule(claim, values=[c * 0.05, (c * 0.05, edge)])) == 0
    assert strength(rule(claim, values=[c * 0.05, (c * 0.05, c * 0.5)])) == -2


@settings(max_examples=60, deadline=None)
@given(p=positive, band=st.floats(min_value=0.0, max_value=math.log(2) / 2 - 1e-6),
       t=st.floats(min_value=-0.99, max_value=0.99), out=st.floats(min_value=1.01, max_value=3))
def test_validated_model(p, band, t, out):
    """Inside a band narrow enough to tell the claim from its negation ↔ outside it; outside the
    validated domain, neither side decides."""
    c_in, c_out = p * math.exp(t * band), p * math.exp(out * band + 0.01)
    a = RULES["validated_model"](_claim(c_in, "validated_model"), readings=[(p, band)])
    b = RULES["validated_model"](_claim(c_out, "validated_model"), readings=[(p, band)])
    assert _mirrored(a, b)
    for c in (c_in, c_out):
        assert RULES["validated_model"](_claim(c, "validated_model"), readings=[(p, band)], in_domain=False) \
            == "not reproducible here"


@settings(max_examples=60, deadline=None)
@given(c=positive, ds=st.lists(inside, min_size=1, max_size=5), es=st.lists(outside, min_size=1, max_size=5))
def test_cited_and_magnitude(c, ds, es):
    """Every measurement (reading) agrees ↔ none does; some and some ↔ some and some."""
    for rule, key in (("cited", "values"), ("magnitude", "values")):
        claim = _claim(c, rule, REL)
        agree = RULES[rule](claim, **{key: [c * (1 + d) for d in ds]})
        none = RULES[rule](claim, **{key: [c * (1 + e) for e in es]})
        split = RULES[rule](claim, **{key: [c * (1 + d) for d in ds] + [c * (1 + e) for e in es]})
        assert _mirrored(agree, none) and strength(split) == 0


@settings(max_examples=60, deadline=None)
@given(c=positive, k=st.floats(min_value=1.3, max_value=3.0), t=st.floats(min_value=0.05, max_value=0.95))
def test_cited_spread_is_undecided_on_both_sides(c, k, t):
    """Audit 3 (S6): a measured value whose gap to the claim lies inside a spread the same data
    documents (DSpark's single-stream gain with the acceptance the prompts allow) reads undecided,
    the value below the claim and, mirrored, above it alike; beyond the spread it disagrees on both
    sides; within tolerance it agrees whatever the spread (the spread never widens agreement)."""
    claim = _claim(c, "cited", REL)
    rule = RULES["cited"]
    room = 1 - 1 / k                                    # the spread's reach below a value, the narrower side
    d = 0.105 + t * (room - 0.11)                       # beyond the 10% tolerance, inside the spread on both sides
    assert strength(rule(claim, values=[c * (1 - d)], spread=k)) == 0
    assert strength(rule(claim, values=[c * (1 + d)], spread=k)) == 0
    assert _mirrored(rule(claim, values=[c / (k * 1.05)], spread=k), rule(claim, values=[c], spread=k))
    assert _mirrored(rule(claim, values=[c * k * 1.05], spread=k), rule(claim, values=[c * (1 + 0.05 * t)], spread=k))
    # without a spread the same gap disagrees, as before
    assert strength(rule(claim, values=[c * 1.2])) == -2
    with pytest.raises(ValueError):
        rule(claim, values=[c], spread=0.5)


lead = st.tuples(st.floats(min_value=-2, max_value=2), st.floats(min_value=0, max_value=1)).map(
    lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=200, deadline=None)
@given(leads=st.lists(lead, min_size=1, max_size=6), correction=st.sampled_from((None, "what holds")))
def test_direction(leads, correction):
    """Negating every reading's lead mirrors the verdict: ahead everywhere ↔ behind everywhere,
    split ↔ split (turns on the price), a reading that straddles zero ↔ one that straddles it."""
    claim = _claim("X ahead", "direction")
    flipped = [(-hi, -lo) for lo, hi in leads]
    a = RULES["direction"](claim, leads=leads, correction=correction)
    b = RULES["direction"](claim, leads=flipped, correction=correction)
    assert _mirrored(a, b)
    if any(lo > 0 for lo, _ in leads) and any(hi < 0 for _, hi in leads):
        assert a == b == claims.TURNS                           # never a reversal


@settings(max_examples=60, deadline=None)
@given(f=positive, xs=st.lists(positive, min_size=1, max_size=3))
def test_bound(f, xs):
    """A bound refutes, never confirms; a floor and a ceiling alike: reflecting the numbers turns a
    floor into a ceiling and leaves the verdict as it was."""
    claim = _claim(1.0, "bound")
    a = RULES["bound"](claim, floor=f, x=xs)
    b = RULES["bound"](claim, ceiling=-f, x=[-x for x in xs])
    assert a == b and strength(a) <= 0


def test_unchecked():
    assert strength(RULES["unchecked"](_claim("x", "unchecked"))) == 0


def test_every_rule_has_its_mirror_here():
    """A new rule must come with its mirror in this file."""
    tested = {"within_tolerance", "matches", "holds", "rounding", "self_contradiction", "in_range",
              "plausible_range", "validated_model", "cited", "magnitude", "direction", "bound", "unchecked"}
    assert set(RULES) == tested


# --------------------------------------------------------------------------- the method's cap


MIRROR_PAIRS = [("reproduced", "discrepancy"), ("reproduced", "corrected"), ("consistent", "inconsistent"),
                ("not reproducible here", "not reproducible here"), (claims.TURNS, claims.TURNS)]


@pytest.mark.parametrize("method", claims.METHODS)
@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("pos, neg", MIRROR_PAIRS)
def test_the_cap_keeps_mirrored_verdicts_mirrored(method, rule, pos, neg):
    a, b = cap(method, pos, rule), cap(method, neg, rule)
    if method == "arithmetic" and rule in claims.SELF_CHECK_RULES and (pos, neg) != ("consistent", "inconsistent") \
            and pos == "reproduced":
        # the one kept asymmetry: the article's own numbers contradicting each other is decisive,
        # agreeing is only self-consistency (T10: 'a third' against its own 2.4x)
        assert (strength(a), strength(b)) == (1, -2)
        return
    assert _mirrored(a, b), (method, rule, a, b)
