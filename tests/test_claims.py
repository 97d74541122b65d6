"""k3lab.claims: the registry, the verdict rules and their method caps, the recorder and the
ledger's integrity checks. Expected verdicts follow from the rules as documented, worked
out by hand for each case."""

import pandas as pd
import pytest

from k3lab import claims

ARTICLE_IDS = ([f"M{i}" for i in range(1, 19)] + [f"S{i}" for i in range(1, 16)]
               + [f"P{i}" for i in range(1, 13)] + [f"T{i}" for i in range(1, 29)])


def test_registry_holds_every_claim_with_a_method_and_a_known_rule():
    reg = claims.registry()
    assert list(reg) == ARTICLE_IDS
    for c in reg.values():
        assert c.method in claims.METHODS
        assert c.rule in claims.RULES
        if c.rule in ("within_tolerance", "self_contradiction"):
            assert c.tolerance is not None and c.tolerance.why


def test_new_claims_say_why_they_were_added():
    for cid in ("M11", "M12", "M13", "M14", "M15", "S8", "S9", "S10", "S11", "S12", "P8", "P9", "P10", "P11",
                "T14", "T15", "T16", "T17", "T18", "T19", "T20", "T21", "T22",
                # issue 36: the claims the audit found without a row, and the direction's magnitude
                "M16", "M17", "S13", "S14", "P12", "T23", "T24", "T25", "T26", "T27",
                # audit 2: the claims the second audit found without a row
                "M18", "S15", "T28"):
        assert claims.get(cid).added


@pytest.mark.parametrize("method,raw,capped", [
    ("measured", "reproduced", "reproduced"), ("derived", "reproduced", "reproduced"),
    ("arithmetic", "reproduced", "consistent"), ("emulated", "reproduced", "consistent (emulated)"),
    ("modelled", "reproduced", "consistent"), ("cited", "reproduced", "consistent"),
    ("unchecked", "reproduced", "not reproducible here"),
    ("emulated", "consistent", "consistent (emulated)"),
    # a negative verdict needs evidence as strong as a positive one: independent evidence and the
    # article's own numbers keep it; an emulation, a model or a cited measurement say "inconsistent with"
    ("measured", "discrepancy", "discrepancy"), ("derived", "corrected", "corrected"),
    ("arithmetic", "corrected", "corrected"), ("arithmetic", "discrepancy", "discrepancy"),
    ("emulated", "discrepancy", "inconsistent with the emulation"),
    ("emulated", "corrected", "inconsistent with the emulation"),
    ("modelled", "discrepancy", "inconsistent with the model"), ("modelled", "corrected", "inconsistent with the model"),
    ("cited", "discrepancy", "inconsistent with public measurements"),
    ("unchecked", "discrepancy", "not reproducible here"),
    ("modelled", "not reproducible here", "not reproducible here"),
])
def test_method_caps_the_verdict(method, raw, capped):
    assert claims.cap(method, raw) == capped
    assert claims.cap(method, capped) == capped            # a recorded verdict passes its own method's cap


def test_a_qualified_verdict_belongs_to_its_method():
    # the ledger re-caps every row: a verdict qualified for another method changes, so it is refused
    assert claims.cap("derived", "inconsistent with the model") == "discrepancy"
    assert claims.cap("modelled", "consistent (emulated)") == "consistent"
    assert claims.cap("modelled", "inconsistent with the emulation") == "inconsistent with the model"
    # a rule's weak negative is always recorded with what it is inconsistent with
    assert claims.cap("modelled", "inconsistent") == "inconsistent with the model"
    assert claims.cap("derived", "inconsistent") == "inconsistent with the evidence"
    assert claims.cap("emulated", "inconsistent with the evidence") == "inconsistent with the emulation"
    assert "inconsistent" not in claims.VERDICTS               # so the ledger refuses it bare
    with pytest.raises(ValueError, match="unknown verdict"):
        claims.cap("derived", "wrong")


def test_arithmetic_keeps_a_negative_only_where_the_article_meets_its_own_numbers():
    """Issue 36: T20's readings bring independent prices in, so its negative is capped like its
    positive (consistent <-> inconsistent with the evidence); T10's contradicts the article's own 2.4x."""
    assert claims.cap("arithmetic", "corrected", "self_contradiction") == "corrected"
    assert claims.cap("arithmetic", "corrected", "direction") == "inconsistent with the evidence"
    assert claims.cap("arithmetic", "reproduced", "direction") == "consistent"
    assert claims.verdict("T20", leads=[(-0.1, -0.1)], correction="behind") == "inconsistent with the evidence"
    assert claims.verdict("T10", value=0.4167) == "corrected"


def test_arithmetic_claims_never_read_reproduced():
    # T9 is 6.00 / 2.50 = 2.4 exactly, yet arithmetic on the article's numbers can only be consistent
    assert claims.verdict("T9", exact=2.4) == "consistent"
    assert claims.verdict("T10", value=0.4167) == "corrected"  # 'a third' vs its own 2.4x


@pytest.mark.parametrize("x,exponent", [(2.78, -2), (103, 0), (103.0, 0), (1.5, -1), (1400, 2), (1200.0, 2),
                                         (0.333, -3), (7, 0), (10, 1), (0, 0), (45, 0), (2.50, -1)])
def test_stated_exponent_reads_the_last_significant_digit(x, exponent):
    # trailing zeros of a whole number are not significant; a float keeps only the digits it has
    # (2.50 is 2.5 once parsed: its rate claims are judged by other rules)
    assert claims.stated_exponent(x) == exponent


@pytest.mark.parametrize("value,claimed,same", [
    (102.5, 103, True), (103.49, 103, True), (103.5, 103, False), (102.49, 103, False),  # half up, lower edge in
    (2.775, 2.78, True), (2.785, 2.78, False),          # 2.775 is 2.775, not 2.77499… (read from its repr)
    (1.45, 1.5, True), (1.55, 1.5, False), (1.536, 1.5, True),
    (1350, 1400, True), (1449.99, 1400, True), (1450, 1400, False), (1349.99, 1400, False),
    (0.3325, 0.333, True), (0.3335, 0.333, False), (0.4167, 0.333, False),
    (6.4996, 7, False), (6.5, 7, True), (45.7, 45, False), (45.45, 45, True),
])
def test_about_n_rule_edges(value, claimed, same):
    assert claims.same_as_stated(value, claimed) is same


def test_one_about_n_rule_for_every_about_claim():
    # every claim the article words as about / roughly / near / around / ~ N uses digits, nothing else
    words = ("about ", "roughly ", "near ", "around ", "~")
    for c in claims.registry().values():
        if c.rule == "within_tolerance" and any(w in c.quote for w in words):
            assert c.tolerance.digits, c.id
    for cid in ("M1", "M2", "M4", "M5", "M9", "T12"):
        assert claims.get(cid).tolerance.digits, cid
        assert "about-N" in claims.get(cid).tolerance_text()


def test_within_tolerance_digits():
    # M1 2.78 stated with two decimals: 2.7795 rounds half up to 2.78, 2.7749 to 2.77
    assert claims.verdict("M1", value=2.7795) == "reproduced"
    assert claims.verdict("M1", value=2.7749) == "discrepancy"
    # M2 "about 103B": 102.5 up to 103.5 (not included); 104.19 is outside
    assert claims.verdict("M2", value=102.5) == "reproduced"
    assert claims.verdict("M2", value=103.49) == "reproduced"
    assert claims.verdict("M2", value=103.5) == "discrepancy"
    assert claims.verdict("M2", value=104.19) == "discrepancy"
    # T12 has two numbers, each at its own digits: 1,400 and 1,200 are +-50 W
    assert claims.verdict("T12", values=[1400, 1200]) == "reproduced"
    assert claims.verdict("T12", values=[1449, 1150]) == "reproduced"
    assert claims.verdict("T12", values=[1450, 1200]) == "discrepancy"
    assert claims.verdict("T12", values=[1400, 1000]) == "discrepancy"


def test_rounding_rule_tells_rounding_first_from_a_wrong_number():
    # T7 claims 45: exact 45.71 rounds to 46; the article's rounded 48/33 gives 45.45 -> 45, which
    # the verdict column must show apart from an exact match
    assert claims.verdict("T7", exact=45.71, from_rounded=45.45) == "consistent (rounded inputs)"
    assert claims.verdict("T7", exact=45.49, from_rounded=45.45) == "consistent"  # exact path first
    assert claims.verdict("T7", exact=45.71, from_rounded=46.2) == "discrepancy"
    assert claims.verdict("T7", exact=45.71) == "discrepancy"                      # no rounded path given
    # T8 "about 7x": exact 6.4996 rounds to 6; 48 / 7 = 6.857 rounds to 7
    assert claims.verdict("T8", exact=6.4996, from_rounded=6.857) == "consistent (rounded inputs)"
    assert claims.verdict("T8", exact=6.5, from_rounded=6.857) == "consistent"     # 6.5 rounds half up to 7
    # T6 has three numbers
    assert claims.verdict("T6", exact=[47.6, 32.67, 7.32]) == "consistent"
    assert claims.verdict("T6", exact=[47.6, 31.4, 7.32]) == "discrepancy"
    assert claims.verdict("T6", exact=[47.6, 31.4, 7.32], from_rounded=[48, 33, 7]) == "consistent (rounded inputs)"
    with pytest.raises(ValueError, match="rounded-input values"):
        claims.verdict("T6", exact=[47.6, 31.4, 7.32], from_rounded=[48, 33])


def test_qualified_verdicts_are_documented_forms_of_their_base():
    assert claims.VERDICTS == ("reproduced", "consistent", "consistent (rounded inputs)", "consistent (emulated)",
                               "inconsistent with the emulation", "inconsistent with the model",
                               "inconsistent with public measurements", "inconsistent with the evidence",
                               "discrepancy", "corrected", "turns on the price", "not reproducible here")
    # every verdict a record carries is a rule's or a qualified one; the bare "inconsistent" only counts
    assert (set(claims.RULE_VERDICTS) - {"inconsistent"}) | set(claims.QUALIFIED) == set(claims.VERDICTS)
    assert set(claims.BASE_VERDICTS) - set(claims.VERDICTS) == {"inconsistent"}
    assert claims.base_verdict("consistent (rounded inputs)") == "consistent"
    assert claims.base_verdict("consistent (emulated)") == "consistent"
    for v in ("inconsistent with the emulation", "inconsistent with the model", "inconsistent with public measurements",
              "inconsistent with the evidence"):
        assert claims.base_verdict(v) == "inconsistent"
    assert claims.base_verdict("corrected") == "corrected"
    with pytest.raises(ValueError, match="unknown verdict"):
        claims.base_verdict("consistent (rounded)")
    # the method cap leaves it alone; unchecked still caps everything
    assert claims.cap("arithmetic", "consistent (rounded inputs)") == "consistent (rounded inputs)"
    assert claims.cap("unchecked", "consistent (rounded inputs)") == "not reproducible here"
    assert claims.verdict_literals('v = "consistent (rounded inputs)"') == ["consistent (rounded inputs)"]


def test_bound_rule():
    # M6 claims 71%: a floor at or below it leaves it possible, never confirmed; a floor above it refutes it
    assert claims.verdict("M6", floor=66.3) == "not reproducible here"
    assert claims.verdict("M6", floor=71.0) == "not reproducible here"
    assert claims.verdict("M6", floor=71.01) == "discrepancy"
    # a ceiling alike (T27: a public peak caps the 7x; cited caps the discrepancy)
    assert claims.verdict("T27", ceiling=7.0) == "not reproducible here"
    assert claims.verdict("T27", ceiling=1.4) == "inconsistent with public measurements"
    # a claim in words is bounded through x (P8's 4-7k against the article's own 3,373 floor)
    assert claims.verdict("P8", floor=3373, x=[4000, 7000]) == "not reproducible here"
    assert claims.verdict("P8", floor=4500, x=[4000, 7000]) == "discrepancy"
    with pytest.raises(ValueError, match="floor"):
        claims.verdict("M6", floor=float("nan"))
    with pytest.raises(ValueError, match="a floor or a ceiling"):
        claims.verdict("M6")


def test_plausible_range_places_but_never_establishes_nor_refutes():
    # T5 is derived, yet a range of rental prices can only say consistent inside it, inconsistent outside
    assert claims.verdict("T5", low=[2.18, 3.69, 3.32], high=[8.6, 15, 14]) == "consistent"
    assert claims.verdict("T5", low=[2.50, 6.00, 4.25], high=[2.50, 6.00, 4.25]) == "consistent"  # edges inside
    assert claims.verdict("T5", low=[2.51, 3.69, 3.32], high=[8.6, 15, 14]) == "inconsistent with the evidence"
    assert claims.verdict("T18", low=3.69, high=15.0) == "consistent"
    assert claims.verdict("T18", low=6.01, high=15.0) == "inconsistent with the evidence"
    with pytest.raises(ValueError, match="ranges"):
        claims.verdict("T5", low=[1, 2], high=[3, 4])


def test_model_claims_read_the_validated_model_and_cannot_be_reproduced():
    # T1 claims 952 tok/s; each reading is (predicted, band as a log factor)
    assert claims.verdict("T1", readings=[(1000, 0.1)]) == "consistent"          # inside, modelled caps
    assert claims.verdict("T1", readings=[(1000, 0.1), (2200, 0.1)]) == "not reproducible here"  # > 2x wide
    # 952 below the band: the model disagrees, which cannot show the article wrong
    assert claims.verdict("T1", readings=[(2000, 0.1)]) == "inconsistent with the model"
    assert claims.verdict("T1", readings=[(1000, 0.1)], in_domain=False) == "not reproducible here"
    assert claims.verdict("T11") == "not reproducible here"


def test_matches_holds_and_corrections():
    assert claims.verdict("M10", value=12) == "reproduced"
    assert claims.verdict("M10", value=16) == "discrepancy"
    # P3 is emulated: it can say the emulation disagrees, never that the article is wrong
    assert claims.verdict("P3", value="refuses", correction="it refuses to start") == "inconsistent with the emulation"
    assert claims.verdict("S2", value=claims.get("S2").claimed) == "consistent (emulated)"
    assert claims.verdict("T14", holds=False, correction="TP8xPP2 fits too") == "corrected"
    assert claims.verdict("T16", holds=True) == "consistent"  # arithmetic
    with pytest.raises(ValueError, match="True, False or None"):
        claims.verdict("T16", holds="yes")
    # undecided: the evidence turns on a setting the article leaves open (P7)
    assert claims.verdict("P7", holds=None) == "not reproducible here"
    assert claims.verdict("P7", holds=True) == "consistent"           # modelled caps reproduced
    assert claims.verdict("M12", holds=False, correction="309 GB vs 288 GB") == "corrected"


def test_a_correction_is_kept_in_the_notes():
    r = claims.judge("M12", "driver readings", value="309.2 / 288.4", holds=False, correction="7% more", notes="n")
    assert r.verdict == "corrected" and r.notes == "correction: 7% more; n"
    # an emulation's correction stays in the notes, though its verdict cannot say "corrected"
    r = claims.judge("S8", "emulated state", value="3 of 5", holds=False, correction="only mixed batches")
    assert r.verdict == "inconsistent with the emulation" and r.notes == "correction: only mixed batches"
    r = claims.judge("M12", "driver readings", value="288.0 / 288.0", holds=True, correction="unused")
    assert r.verdict == "reproduced" and r.notes == ""


def test_matches_on_evidence_that_covers_part_of_the_claim_reads_consistent():
    # S1 is derived from the published config, which lists no tensors: agreement cannot establish
    # "ships zero draft tensors"; a disagreement would still be a discrepancy
    assert claims.verdict("S1", value=0) == "reproduced"
    assert claims.verdict("S1", value=0, covers_claim=False) == "consistent"
    # and its disagreement is as weak as its agreement (issue 36: rules cut both ways)
    assert claims.verdict("S1", value=1, covers_claim=False) == "inconsistent with the evidence"
    assert claims.verdict("S1", value=1) == "discrepancy"


def test_direction_rule():
    # T20 (arithmetic): leads without a band; T21 (modelled): leads with the model's band
    assert claims.verdict("T20", leads=[(0.1, 0.1), (0.02, 0.02)]) == "consistent"        # arithmetic caps
    # issue 36: split readings turn on the price, never a reversal; a reversal needs every reading
    assert claims.verdict("T20", leads=[(0.1, 0.1), (-0.04, -0.04)]) == "turns on the price"
    assert claims.verdict("T20", leads=[(0.1, 0.1), (-0.04, -0.04)], correction="a tie") == "turns on the price"
    assert claims.verdict("T20", leads=[(-0.1, -0.1), (-0.04, -0.04)]) == "inconsistent with the evidence"
    assert claims.verdict("T20", leads=[(0.0, 0.0)]) == "not reproducible here"           # exactly level: no winner
    assert claims.verdict("T20", leads=[(0.1, 0.1), (0.0, 0.0)]) == "not reproducible here"
    assert claims.verdict("T21", leads=[(0.02, 1.3), (0.07, 1.4)]) == "consistent"
    assert claims.verdict("T21", leads=[(0.02, 1.3), (-0.03, 1.2)]) == "not reproducible here"  # band straddles 0
    assert claims.verdict("T21", leads=[(0.02, 1.3), (-0.5, -0.1)]) == "turns on the price"
    assert claims.verdict("T21", leads=[(-0.6, -0.02), (-0.5, -0.1)]) == "inconsistent with the model"
    with pytest.raises(ValueError, match="at least one"):
        claims.verdict("T21", leads=[])
    with pytest.raises(ValueError, match="low end is above"):
        claims.verdict("T21", leads=[(0.2, 0.1)])


def test_in_range_per_value_ranges():
    c = claims.Claim("X1", "prefill", "03_head_padding_prefill", "q", "2-3", "x", "arithmetic", "in_range", None)
    rule = claims.RULES["in_range"]
    assert rule(c, x=3.85, low=2, high=3) == "discrepancy"
    assert rule(c, x=3.0, low=2, high=3) == "reproduced"
    assert rule(c, x=[2, 3], low=[1, 2], high=[2, 3]) == "reproduced"
    with pytest.raises(ValueError, match="low 3.0 > high 2.0"):
        rule(c, x=2.5, low=3, high=2)


def test_p9_is_a_bound_like_p8():
    """Audit 3: the article's own numbers bound P9's speed-up (1x, and 3.85x with free attention): inside,
    possible, never implied; beyond the ceiling, a contradiction among its numbers."""
    assert claims.verdict("P9", x=[2, 3], floor=1.0, ceiling=3.85) == "not reproducible here"
    assert claims.verdict("P9", x=[2, 4], floor=1.0, ceiling=3.85) == "discrepancy"


def test_judge_keeps_model_outputs_out_of_the_reproduced_column():
    r = claims.judge("T1", "a serving model", bound="model 900-1,100", readings=[(1000, 0.1)])
    assert r.reproduced == "" and r.bound == "model 900-1,100"
    with pytest.raises(ValueError, match="bound="):
        claims.judge("T1", "a serving model", value=1000, readings=[(1000, 0.1)])
    with pytest.raises(ValueError, match="evidence"):
        claims.judge("M10", "  ", value=12)


def test_recorder_checks_ownership_and_completeness(tmp_path):
    rec = claims.Recorder("03_head_padding_prefill", tmp_path)
    with pytest.raises(ValueError, match="belongs to notebook"):
        rec.add(claims.judge("M10", "x", value=12))
    rec.add(claims.judge("P8", "x", value=3373, floor=3373, x=[4000, 7000]))
    with pytest.raises(ValueError, match="did not judge"):
        rec.save()


def _write_nb(root, nb, rows):
    d = root / nb
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=claims.RECORD_COLUMNS).to_csv(d / "claims.csv", index=False)


def _rows(nb):
    out = []
    for c in claims.registry().values():
        if c.notebook == nb:
            out.append({"claim_id": c.id, "method": c.method, "reproduced": "", "bound": "",
                        "verdict": claims.cap(c.method, "discrepancy", c.rule), "rule": c.rule, "evidence": "e",
                        "notes": ""})
    return out


def test_ledger_reads_only_its_notebooks_and_checks_each_file(tmp_path):
    nbs = sorted({c.notebook for c in claims.registry().values()})
    for nb in nbs:
        _write_nb(tmp_path, nb, _rows(nb))
    _write_nb(tmp_path, "99_old", [{"claim_id": "T1", "method": "modelled", "reproduced": "9999", "bound": "",
                                     "verdict": "reproduced", "rule": "x", "evidence": "e", "notes": ""}])
    led = claims.ledger(tmp_path)
    assert list(led.claim_id) == ARTICLE_IDS
    assert "9999" not in set(led.reproduced)           # the stray folder is never read
    # truncated: a notebook's file lacking some of its claims
    _write_nb(tmp_path, "03_head_padding_prefill", _rows("03_head_padding_prefill")[:2])
    with pytest.raises(ValueError, match="missing claims"):
        claims.ledger(tmp_path)
    # a claim recorded by the wrong notebook
    _write_nb(tmp_path, "03_head_padding_prefill", _rows("03_head_padding_prefill") + _rows("01_memory_fit")[:1])
    with pytest.raises(ValueError, match="belongs to 01_memory_fit"):
        claims.ledger(tmp_path)
    # a verdict its method cannot reach
    bad = _rows("03_head_padding_prefill")
    bad[0]["verdict"] = "reproduced"  # P1 is arithmetic
    _write_nb(tmp_path, "03_head_padding_prefill", bad)
    with pytest.raises(ValueError, match="not allowed for method 'arithmetic'"):
        claims.ledger(tmp_path)


def test_verdicts_by_method_line():
    df = pd.DataFrame({"verdict": ["reproduced", "reproduced", "consistent", "reproduced"],
                       "method": ["derived", "measured", "arithmetic", "derived"]})
    assert claims.verdicts_by_method(df) == "reproduced: 2 derived, 1 measured; consistent: 1 arithmetic"


def test_verdict_literals_found_in_code_cells():
    assert claims.verdict_literals('v = "reproduced" if ok else "discrepancy"') == ["reproduced", "discrepancy"]
    assert claims.verdict_literals('print("the claim was reproduced here")') == []
    assert claims.verdict_literals("x = 1") == []


# --------------------------------------------------------------------------- what-if runs (issue 31)

JUDGING = ("01_memory_fit", "02_topk_renorm_fix", "03_head_padding_prefill", "04_throughput_perf_per_dollar")


def _study(root, changed: dict):
    """A run folder: each notebook of ``changed`` ran as a what-if (its parameters changed) and
    wrote the not-judged marker through the Recorder; the others wrote their claims."""
    for nb in JUDGING:
        if nb in changed:
            (root / nb).mkdir(parents=True)
            claims.Recorder(nb, root / nb).save(not_judged=changed[nb])
        else:
            _write_nb(root, nb, _rows(nb))


@pytest.mark.parametrize("changed", [
    {"01_memory_fit": {"context_tokens": 65536}},                                     # the profile
    {"04_throughput_perf_per_dollar": {"usd_per_gpu_hour": {"mi355x": 3.0}}},
    {"01_memory_fit": {"model": "deepseek-v3"}, "04_throughput_perf_per_dollar": {"model": "deepseek-v3"}},
    {nb: {"kv_dtype": "fp8"} for nb in JUDGING},                                       # every notebook changed
], ids=["01", "04", "01+04", "all"])
def test_a_what_if_of_any_subset_of_notebooks_never_crashes_the_ledger(tmp_path, changed):
    """Issue 31: a profile that changes only notebook 01 failed in the ledger (claims.csv missing).
    A notebook run with changed parameters judges nothing and says so: the ledger leaves its
    claims out, names it with what it changed, and the bottom line and report counts still build."""
    from k3lab import bottom_line, report

    _study(tmp_path, changed)
    led = claims.ledger(tmp_path)
    reg = claims.registry()
    assert set(led.claim_id) == {c.id for c in reg.values() if c.notebook not in changed}
    assert led.attrs["not_judged"] == {nb: dict(sorted(v.items())) for nb, v in changed.items()}
    assert not (tmp_path / next(iter(changed)) / "claims.csv").exists()
    bottom_line.headline(led)                          # says the bottom line is not in this ledger when 04 changed
    report.verdict_counts(led)
    if "04_throughput_perf_per_dollar" in changed:
        assert "is not in this ledger" in bottom_line.headline(led)


def test_a_what_if_records_nothing_and_a_broken_marker_is_named(tmp_path):
    rec = claims.Recorder("01_memory_fit", tmp_path)
    rec.add(claims.judge("M10", "x", value=12))
    with pytest.raises(ValueError, match="a what-if run records no claims"):
        rec.save(not_judged={"context_tokens": 65536})
    for nb in JUDGING:
        _write_nb(tmp_path, nb, _rows(nb))
    (tmp_path / "01_memory_fit" / "claims.csv").unlink()
    (tmp_path / "01_memory_fit" / claims.record.NOT_JUDGED).write_text('{"notebook": "02_topk_renorm_fix"}')
    with pytest.raises(ValueError, match=r"not_judged\.json: expected \{'notebook': '01_memory_fit'"):
        claims.ledger(tmp_path)
    (tmp_path / "01_memory_fit" / claims.record.NOT_JUDGED).unlink()
    with pytest.raises(ValueError, match=r"01_memory_fit/claims\.csv: missing \(did 01_memory_fit run\?\)"):
        claims.ledger(tmp_path)
