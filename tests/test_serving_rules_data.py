"""``data/sglang_serving_rules.yaml`` and the findings that read it, without sglang (the real
releases are checked in tests/sglang/test_serving_rules.py)."""

from k3lab import data
from k3lab.findings import f3_prefill, f4_throughput
from k3lab.probes import serving_rules


def test_every_rule_has_a_check_and_names_both_releases_read():
    doc = data.load("serving_rules")
    assert set(doc.rules) == set(serving_rules.CHECKS)
    for name, rule in doc.rules.items():
        assert set(rule.holds) == {"0.5.16", "0.5.23"}, name
        assert rule.check.startswith("k3lab.probes.serving_rules."), name


def test_probe_arguments_read_none_for_fields_it_leaves_out():
    a = serving_rules._dspark_args(2)
    assert a.pp_size == 2 and a.disaggregation_mode == "null" and a.some_field_sglang_adds is None


def test_t14_says_under_which_setting_each_reading_holds():
    """Audit 4 (rule (a)): with DSpark sglang forces TP16, as the article says; without it TP8xPP2 also fits.
    The article leaves DSpark on the B200 open (T25), so the row is undecided and its notes say both."""
    r = {x.claim_id: x for x in f4_throughput.records()}["T14"]
    assert "_handle_dspark" in r.evidence and "0.5.16, 0.5.23" in r.evidence
    assert r.verdict == "not reproducible here"
    assert r.notes.startswith("undecided: it turns on whether the article's B200 ran DSpark")
    assert "TP16, as the article says" in r.notes and "TP16 is a choice" in r.notes
    assert "the correction holds under both" not in r.notes


def test_p7_names_the_setting_that_would_make_it_hold():
    r = {x.claim_id: x for x in f3_prefill.records()}["P7"]
    assert "--prefill-attention-backend" in r.notes and "AiterAttnBackend.__init__" in r.evidence
