"""Generated and recorded data files are used only as they were written (attack on main:
"data/serving_validation.yaml is used silently when edited"; "predictions on record can be
edited and score accepts them")."""

import hashlib
import json

import pytest
import yaml

from k3lab import cli, data
from k3lab.serving import score

VAL = "serving_validation.yaml"


def _seal_by_hand(doc: dict) -> str:
    body = {**doc, "generated": {k: v for k, v in doc["generated"].items() if k != "content_sha256"}}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _first_row(doc):
    return next(iter(doc["validation"].values()))[0]


@pytest.mark.parametrize("edit", [
    lambda d: _first_row(d).__setitem__("predicted_out_of_sample", _first_row(d)["predicted_out_of_sample"] * 2),
    lambda d: d["held_out"][0].__setitem__("predicted", d["held_out"][0]["predicted"] / 3),
    lambda d: d["generated"].__setitem__("command", "made up"),
    lambda d: d["generated"].pop("content_sha256"),
], ids=["validation row", "held out", "provenance", "no seal"])
def test_an_edited_serving_validation_is_refused_in_one_line_naming_the_file(data_copy, edit):
    f = data_copy / VAL
    doc = yaml.safe_load(f.read_text(encoding="utf-8"))
    assert doc["generated"]["content_sha256"] == _seal_by_hand(doc)   # the committed file is sealed
    edit(doc)
    f.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    data.clear_cache()
    with pytest.raises(data.DataError) as ei:
        data.load("serving_validation")
    msg = str(ei.value)
    assert msg.startswith(f"data/{VAL}: generated.content_sha256: the validation is not what `make serving-fit` "
                          f"wrote") and "\n" not in msg


def test_a_comment_in_serving_validation_is_no_edit(data_copy):
    f = data_copy / VAL
    f.write_text(f.read_text(encoding="utf-8") + "# a note\n", encoding="utf-8")
    data.clear_cache()
    assert data.load("serving_validation").generated["model_version"]


# --------------------------------------------------------------------------- predictions on record


def _recordings(d):
    return sorted(p for p in (d / "predictions").glob("*.yaml") if p.name != "SHA256SUMS.yaml")


def test_every_committed_recording_is_registered_with_its_own_sha256(data_copy):
    reg = yaml.safe_load((data_copy / "predictions" / "SHA256SUMS.yaml").read_text(encoding="utf-8"))["recorded"]
    recs = _recordings(data_copy)
    assert len(recs) >= 2
    assert reg == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in recs}


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("value: 538.603025", "value: 538.703025", 1),     # one predicted value
    lambda t: t.replace("in_domain: true", "in_domain: false", 1),
    lambda t: t + "# a later note\n",                                       # bytes: even a comment
])
def test_score_refuses_an_edited_recording_in_one_line(data_copy, capsys, edit):
    f = data_copy / "predictions" / "2026-12-04-model-v4.yaml"
    text = f.read_text(encoding="utf-8")
    new = edit(text)
    assert new != text
    f.write_text(new, encoding="utf-8")
    data.clear_cache()
    assert cli.main(["score"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert "data/predictions/2026-12-04-model-v4.yaml: edited since it was recorded" in err


def test_score_refuses_an_unregistered_recording(data_copy, capsys, monkeypatch):
    reg = data_copy / "predictions" / "SHA256SUMS.yaml"
    doc = yaml.safe_load(reg.read_text(encoding="utf-8"))
    del doc["recorded"]["2026-12-04-model-v3.yaml"]
    reg.write_text(yaml.safe_dump(doc), encoding="utf-8")
    data.clear_cache()
    assert cli.main(["score"]) == 2
    err = capsys.readouterr().err
    assert "data/predictions/2026-12-04-model-v3.yaml: not in data/predictions/SHA256SUMS.yaml" in err


def test_write_record_registers_the_new_file_and_keeps_the_others(data_copy):
    before = {p.name: p.read_bytes() for p in _recordings(data_copy)}
    new = data_copy / "predictions" / "2099-01-01-model-v9.yaml"
    doc = {"made": {"date": "2099-01-01", "model_version": "9", "commit": "x", "fit_sha256": "0" * 64,
                    "command": "a test"}, "predictions": []}
    score.write_record(new, doc)
    assert {p.name: p.read_bytes() for p in _recordings(data_copy) if p != new} == before   # untouched
    reg = yaml.safe_load((data_copy / "predictions" / "SHA256SUMS.yaml").read_text(encoding="utf-8"))["recorded"]
    assert reg[new.name] == hashlib.sha256(new.read_bytes()).hexdigest()
    assert set(reg) == set(before) | {new.name}
    assert data.read("predictions@2026-12-04-model-v4", data_copy / "predictions" / "2026-12-04-model-v4.yaml")
    with pytest.raises(ValueError, match="never rewritten"):
        score.write_record(new, doc)


def test_score_refuses_a_registered_recording_that_is_missing(data_copy, capsys):
    """Second attack: a recording removed from data/predictions/ was ignored (exit 0, one recording fewer)."""
    (data_copy / "predictions" / "2026-12-04-model-v4.yaml").unlink()
    data.clear_cache()
    assert cli.main(["score"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert "data/predictions/2026-12-04-model-v4.yaml: listed in SHA256SUMS.yaml but missing" in err
