"""The two verdict rules that judge claims by the field: a serving model validated on public
measurements (``validated_model``) and third-party measurements of the same setting
(``cited``), with the method caps (k3lab.claims.rules). Edge cases written by hand."""

import math

import pytest

from k3lab import claims
from k3lab.claims.rules import RULES, cap
from k3lab.schemas import Tolerance


def _claim(claimed, rule, method="modelled", tol=None):
    return claims.Claim("X1", "throughput", "04_throughput_perf_per_dollar", "q", claimed, "tok/s", method, rule, tol)


VM = RULES["validated_model"]
CITED = RULES["cited"]
B = math.log(1.2)  # a ±20% band


def test_inside_a_narrow_band_agrees_and_a_model_reads_consistent():
    c = _claim(1000, "validated_model")
    assert VM(c, readings=[(1100, B)]) == "reproduced"          # 1100/1.2 = 917 <= 1000
    assert cap("modelled", VM(c, readings=[(1100, B)])) == "consistent"


def test_outside_the_band_is_a_discrepancy_on_either_side():
    c = _claim(1000, "validated_model")
    assert VM(c, readings=[(1300, B)]) == "discrepancy"          # low end 1083
    assert VM(c, readings=[(700, B)]) == "discrepancy"           # high end 840


def test_a_claim_outside_even_a_wide_band_is_flagged():
    c = _claim(100, "validated_model")
    wide = math.log(3.0)                                          # 9x from end to end
    assert VM(c, readings=[(1000, wide)]) == "discrepancy"
    assert VM(_claim(900, "validated_model"), readings=[(1000, wide)]) == "not reproducible here"


def test_readings_span_their_union():
    c = _claim(1000, "validated_model")
    # neither reading alone holds 1000, and together they span 750-1320: 1.76x, narrow enough
    assert VM(c, readings=[(900, B), (1100, B)]) == "reproduced"
    assert VM(c, readings=[(700, B), (1300, B)]) == "not reproducible here"   # 583-1560: 2.7x


def test_a_band_exactly_two_fold_still_counts_as_narrow():
    half = math.log(2.0) / 2
    assert VM(_claim(1000, "validated_model"), readings=[(1000, half)]) == "reproduced"


def test_outside_the_validated_domain_nothing_is_decided():
    c = _claim(1000, "validated_model")
    assert VM(c, readings=[(1000, B)], in_domain=False) == "not reproducible here"
    assert VM(c, readings=[(5000, B)], in_domain=False) == "not reproducible here"


def test_a_worded_claim_passes_its_number():
    c = _claim("+18%; c24 -> c64", "validated_model")
    assert VM(c, readings=[(1.2, B)], claimed_value=1.18) == "reproduced"


@pytest.mark.parametrize("readings, msg", [([], "at least one"), ([(0, B)], "predicted > 0"),
                                            ([(100, -0.1)], "band >= 0"), ([(math.nan, B)], "must be a number")])
def test_bad_model_inputs_are_refused(readings, msg):
    with pytest.raises(ValueError, match=msg):
        VM(_claim(1, "validated_model"), readings=readings)


def test_cited_agrees_within_the_claims_tolerance_and_caps_at_consistent():
    c = _claim(952, "cited", "cited", Tolerance(rel=0.1, why="test"))
    assert CITED(c, values=[1040]) == "reproduced"                # 9.2% off
    assert cap("cited", CITED(c, values=[1040])) == "consistent"
    assert CITED(c, values=[1060]) == "discrepancy"               # 11.3% off
    # issue 36: measurements that disagree among themselves decide nothing (agreeing with one of them
    # is no more a confirmation than disagreeing with one is a refutation)
    assert CITED(c, values=[1060, 990]) == "not reproducible here"
    assert CITED(c, values=[1000, 990]) == "reproduced"


def test_cited_without_a_match_cannot_decide():
    c = _claim(952, "cited", "cited", Tolerance(rel=0.1, why="test"))
    assert CITED(c, values=[]) == "not reproducible here"


def test_cited_needs_a_tolerance():
    with pytest.raises(ValueError, match="needs a tolerance"):
        CITED(_claim(952, "cited", "cited"), values=[952])


def test_cited_is_a_method_the_schema_and_the_cap_know():
    assert "cited" in claims.METHODS
    assert cap("cited", "reproduced") == "consistent"
    # a third party's measurement that disagrees cannot show the article wrong either
    assert cap("cited", CITED(_claim(952, "cited", "cited", Tolerance(rel=0.1, why="t")), values=[1060])) == \
        "inconsistent with public measurements"


def test_a_model_outside_its_band_reads_inconsistent_with_the_model():
    c = _claim(1000, "validated_model")
    assert cap("modelled", VM(c, readings=[(1300, B)])) == "inconsistent with the model"
    assert cap("modelled", VM(c, readings=[(1000, B)], in_domain=False)) == "not reproducible here"
