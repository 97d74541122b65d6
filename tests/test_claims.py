"""The claims registry, the recorder, the ledger and the README table."""

import pandas as pd
import pytest

from k3lab import claims, io, report

ISSUE_IDS = (
    [f"M{i}" for i in range(1, 11)] + [f"S{i}" for i in range(1, 8)]
    + [f"P{i}" for i in range(1, 8)] + [f"T{i}" for i in range(1, 14)]
)


def test_registry_holds_every_claim_id_the_study_promises():
    assert list(claims.registry()) == ISSUE_IDS
    for c in claims.registry().values():
        assert c.quote.strip() and c.unit.strip()
        assert c.notebook.startswith(("01_", "02_", "03_", "04_"))


def test_registry_quotes_come_from_the_article_wording():
    # Spot checks of the registry against the article's sentences (not against k3lab output).
    assert claims.get("M1").claimed == 2.78
    assert claims.get("T1").claimed == 952
    assert "top_k_renorm_prob" in claims.get("S2").claimed


def test_recorder_validates():
    rec = claims.Recorder("01_memory_fit")
    with pytest.raises(ValueError, match="unknown claim id 'Z9'"):
        rec.record("Z9", 1, "reproduced", "e")
    with pytest.raises(ValueError, match="verdict 'ok' for M1 is not one of"):
        rec.record("M1", 1, "ok", "e")
    with pytest.raises(ValueError, match="evidence must say"):
        rec.record("M1", 1, "reproduced", "  ")
    with pytest.raises(ValueError, match="belongs to notebook 04_throughput_perf_per_dollar"):
        rec.record("T1", 1, "reproduced", "e")


def test_recorder_roundtrip_into_ledger(tmp_path):
    rec = claims.Recorder("01_memory_fit")
    rec.record("M4", 1.5612345678, "reproduced", "checkpoint bytes / 1e12")
    rec.record("M1", 2.8, "consistent", "count_params", notes="n")
    rec.record("M1", 2.79, "reproduced", "count_params again")  # re-recording replaces
    path = rec.save()
    assert path.parent.name == "01_memory_fit"
    df = claims.ledger(path.parent.parent)
    assert list(df.columns) == claims.LEDGER_COLUMNS
    assert len(df) == len(ISSUE_IDS)
    m = df.set_index("claim_id")
    assert m.loc["M1", "reproduced"] == "2.79" and m.loc["M1", "verdict"] == "reproduced"
    assert m.loc["M4", "reproduced"] == "1.56123"
    assert m.loc["M2", "verdict"] == ""  # not recorded stays visible as a gap


def test_ledger_rejects_malformed_and_unknown(tmp_path):
    d = tmp_path / "09_x"
    d.mkdir()
    io.write_text(d / "claims.csv", "claim_id,verdict\nM1,reproduced\n")
    with pytest.raises(ValueError, match="columns"):
        claims.ledger(tmp_path)
    io.write_text(d / "claims.csv", "claim_id,reproduced,verdict,evidence,notes\nQ1,1,reproduced,e,\n")
    with pytest.raises(ValueError, match="unknown claim id 'Q1'"):
        claims.ledger(tmp_path)
    io.write_text(d / "claims.csv", "claim_id,reproduced,verdict,evidence,notes\nM1,1,great,e,\n")
    with pytest.raises(ValueError, match="unknown verdict 'great'"):
        claims.ledger(tmp_path)


def test_judge():
    assert claims.judge(100, 104, 0.05) == "reproduced"
    assert claims.judge(100, 106, 0.05) == "discrepancy"
    assert claims.judge(-2, -2.09, 0.05) == "reproduced"
    with pytest.raises(ValueError):
        claims.judge(float("nan"), 1, 0.1)
    with pytest.raises(ValueError):
        claims.judge(1, 1, -0.1)
    assert claims.rel_diff(200, 150) == -0.25


def test_readme_table_render_and_staleness(tmp_path):
    df = claims.ledger(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{report.README_START}\nold\n{report.README_END}\ntail\n")
    ledger_csv = io.write_csv(df, tmp_path / "claims.csv")
    assert not report.readme_is_current(readme, ledger_csv)
    readme.write_text(report.render_readme(readme.read_text(), report.readme_table(df)))
    assert report.readme_is_current(readme, ledger_csv)
    text = readme.read_text()
    assert text.startswith("# x\n") and text.endswith("tail\n")
    assert text.count("\n| M") == 10 and "| T13 |" in text
    with pytest.raises(ValueError, match="markers"):
        report.render_readme("no markers", "t")


def test_readme_table_escapes_pipes():
    df = pd.DataFrame([{"claim_id": "X", "quote": "a | b", "claimed": "1", "reproduced": "2",
                        "unit": "u", "verdict": "reproduced"}])
    row = report.readme_table(df).splitlines()[2]
    assert "a \\| b" in row and row.count(" | ") == 5


def test_verdict_counts_by_finding(tmp_path):
    rec = claims.Recorder("03_head_padding_prefill")
    rec.record("P4", 0, "reproduced", "max abs diff")
    rec.record("P1", "51/23", "not reproducible here", "needs MI355X")
    rec.save()
    df = claims.ledger()
    t = report.verdict_counts(df)
    assert t.loc["prefill", "reproduced"] == 1
    assert t.loc["prefill", "not reproducible here"] == 1
    assert t.loc["prefill", "(not recorded)"] == 5
    assert t.loc["memory", "(not recorded)"] == 10
    assert int(t.values.sum()) == len(ISSUE_IDS)
