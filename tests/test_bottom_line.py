"""``k3lab.bottom_line``: the article's bottom line and the per-finding sentences, computed from
a ledger's verdicts. The ledgers here are written by hand, with the claims' columns."""

import pandas as pd

from k3lab import bottom_line, claims


def _row(cid, finding, method, verdict, reproduced="", bound="", notes="", rule="holds", claimed="c"):
    return {"claim_id": cid, "finding": finding, "quote": f"q {cid}", "claimed": claimed, "unit": "u",
            "method": method, "reproduced": reproduced, "bound": bound, "verdict": verdict, "rule": rule,
            "tolerance": "", "evidence": "e", "notes": notes}


def _ledger(t20="corrected", t21="not reproducible here"):
    rows = [
        _row("M1", "memory", "derived", "reproduced"),
        _row("M2", "memory", "derived", "discrepancy", reproduced="104.19", rule="within_tolerance", claimed="103"),
        _row("M12", "memory", "derived", "corrected", notes="correction: not the same capacity; the gap is 7%"),
        _row("M13", "memory", "unchecked", "not reproducible here", rule="unchecked"),
        _row("S2", "spec_decode", "emulated", "consistent (emulated)", rule="matches"),
        _row("S8", "spec_decode", "emulated", "inconsistent with the emulation", notes="correction: only mixed batches"),
        _row("P5", "prefill", "modelled", "not reproducible here", bound="model 1-2 tok/s (outside its domain)",
             rule="validated_model"),
        _row("T1", "throughput", "modelled", "not reproducible here", bound="model 897-2,572", rule="validated_model"),
        _row("T20", "throughput", "arithmetic", t20, reproduced="-10.2% to +5.9% (ahead under 2, behind under 2 of 4 sources)",
             notes="correction: the direction turns on the price, and its ~45% needs its own $2.50; the prices are "
                   "independent" if t20 == "corrected" else "", rule="direction"),
        _row("T21", "throughput", "modelled", t21, bound="model: ahead under 2, too close to call under 2 of 4 sources",
             rule="direction"),
    ]
    return pd.DataFrame(rows, columns=claims.LEDGER_COLUMNS)


def test_headline_judges_the_direction_from_t20_and_t21():
    h = bottom_line.headline(_ledger())
    assert "does not hold as stated" in h
    assert "-10.2% to +5.9% (ahead under 2, behind under 2 of 4 sources) (T20: corrected)" in h
    assert "it is ahead under 2, too close to call under 2 of 4 sources (T21: not reproducible here)" in h
    # what holds instead: the correction, without the notes that follow it
    assert h.endswith("What holds instead: the direction turns on the price, and its ~45% needs its own $2.50.")


def test_headline_when_the_direction_survives_or_is_missing():
    assert "holds as far as this study can tell" in bottom_line.headline(_ledger("consistent", "consistent"))
    assert "cannot be settled here" in bottom_line.headline(_ledger("consistent", "not reproducible here"))
    assert "cannot be settled here" in bottom_line.headline(_ledger("consistent", "inconsistent with the model"))
    df = _ledger()
    assert bottom_line.headline(df[~df.claim_id.isin(["T21"])]).endswith("is not in this ledger.")


def test_finding_lines_sort_claims_by_what_a_reader_can_do():
    lines = dict(bottom_line.finding_lines(_ledger()))
    assert list(lines) == ["1 · memory fit", "2 · top-k renorm fix", "3 · head padding / TTFT",
                           "4 · throughput and perf/$"]
    mem = dict(lines["1 · memory fit"])
    assert mem["holds (shown here)"] == ["M1"]
    assert mem["does not hold"] == ["M2 (claimed 103, found 104.19)", "M12 (not the same capacity)"]
    assert mem["not checked here"] == ["M13 (nothing here can check it)"]
    spec = dict(lines["2 · top-k renorm fix"])
    # an emulation that disagrees is never listed as "does not hold"
    assert spec == {"holds as far as this study can tell (not shown independently)": ["S2"],
                    "disagrees with the study's emulation, model or public measurements (not shown wrong)": ["S8"]}
    assert dict(lines["3 · head padding / TTFT"])["not checked here"] == [
        "P5 (the question is outside the serving model's validated domain)"]
    tp = dict(lines["4 · throughput and perf/$"])
    assert tp["not checked here"] == ["T1 (the serving model's band is too wide to tell)",
                                      "T21 (the serving model's band cannot call every price source)"]


def test_readme_text_and_html():
    df = _ledger()
    text = bottom_line.readme_text(df)
    assert text.startswith("**The article's bottom line, judged.** The article's bottom line")
    assert "\n- **1 · memory fit** — holds (shown here): M1; does not hold: M2 (claimed 103" in text
    page = bottom_line.html(df)
    assert page.startswith('<div class="decision" id="bottom-line">') and "$2.50" in page
    assert page.count("<li>") == 4 and "<table" not in page


def test_a_claim_the_model_is_not_validated_for_says_so():
    """T1-T3 read 'not checked here' because the serving model has no validated band for their
    metric, not because a band is too wide: the reader is told which."""
    import pandas as pd

    from k3lab import bottom_line

    df = pd.DataFrame([{"claim_id": "T1", "finding": "throughput", "verdict": "not reproducible here",
                        "rule": "validated_model", "bound": "model not validated here (2 readings)", "notes": "",
                        "claimed": "952", "reproduced": ""},
                       {"claim_id": "T2", "finding": "throughput", "verdict": "not reproducible here",
                        "rule": "validated_model", "bound": "model 744-3,165 (3 readings)", "notes": "",
                        "claimed": "1568", "reproduced": ""}])
    (title, parts), = bottom_line.finding_lines(df)
    items = dict(parts)["not checked here"]
    assert items[0].startswith("T1 (the serving model is not validated for it")
    assert items[1] == "T2 (the serving model's band is too wide to tell)"
