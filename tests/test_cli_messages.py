"""Issue 35's misleading messages and strictness gaps: each bad input gets one line naming the
real problem (the flag, file or field), never a traceback, never a rounded or impossible number.
One section per case of the issue's list (1-10), then the small ones."""

import json
import re
import sys
import types

import pytest

from k3lab import compare, data, limits, nbparams, paths
from k3lab.specs import load_model
from test_cli_bounds import _one_line_error, _run  # the CLI in-process: exit status, stdout, stderr

PREDICT = ["predict", "--input-len", "1024", "--output-len", "400", "--concurrency", "4"]


# --------------------------------------------------------------------------- 1: the draft block


def test_a_block_of_one_names_block_size_not_the_acceptance(capsys):
    line = _one_line_error(capsys, *PREDICT, "--layout", "8xmi355x tp8", "--spec", "dspark", "--block-size", "1")
    assert "--block-size" in line and "2 to 64" in line and "got 1" in line
    assert "accept_len" not in line and "2.63" not in line


def test_an_acceptance_above_the_block_names_both(capsys):
    line = _one_line_error(capsys, *PREDICT, "--layout", "8xmi355x tp8", "--spec", "dspark", "--block-size", "3",
                           "--accept-len", "5")
    # 3 drafts + the bonus token: at most 4 tokens a verify step
    assert "--accept-len 5" in line and "--block-size 3" in line and "at most 4 tokens" in line


def test_a_small_block_caps_the_acceptance_band_at_what_it_allows(capsys):
    rc, out, err = _run(capsys, *PREDICT, "--layout", "8xmi355x tp8", "--spec", "dspark", "--block-size", "2",
                        "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert max(d["accept_len_range"]) <= 2 + 1 and d["accept_len"] <= 2 + 1


# --------------------------------------------------------------------------- 2: --range-ratio, once and as typed


@pytest.mark.parametrize("typed", ["1", "1e-400", "6e5000", "0", "nan"])
def test_a_range_ratio_is_refused_once_and_echoed_as_typed(capsys, typed):
    line = _one_line_error(capsys, *PREDICT, "--layout", "8xmi355x tp8", "--lengths", "uniform",
                           "--range-ratio", typed)
    assert "--range-ratio" in line and line.endswith(f"got {typed}") and line.count("error:") == 1
    assert "above 0 and below 1" in line and "got 0.0" not in line and "got inf" not in line


def test_a_range_ratio_inside_the_range_answers(capsys):
    rc, out, err = _run(capsys, *PREDICT, "--layout", "8xmi355x tp8", "--lengths", "uniform", "--range-ratio", "0.8")
    assert rc == 0 and "uniform lengths" in out, err


# --------------------------------------------------------------------------- 3: settings groups in a layout


@pytest.mark.parametrize("layout, says", [
    ("8xmi355x tp8 [aiter-k3-opt] [aiter-k3-opt]", "one [...] settings group per layout"),
    ("8xmi355x tp8 [aiter-k3-opt] [ep]", "one [...] settings group per layout"),
    ("8xmi355x tp8 [aiter-k3-opt, aiter-k3-opt]", "setting aiter-k3-opt given twice"),
    ("8xmi355x tp8 [aiter-k3-opt,]", "an empty name"),
])
def test_a_settings_group_given_twice_is_refused(capsys, layout, says):
    line = _one_line_error(capsys, *PREDICT, "--layout", layout)
    assert says in line and "'[aiter-k3-opt] [aiter-k3-opt]'" not in line


def test_a_setting_in_the_layout_and_in_variant_is_given_twice(capsys):
    line = _one_line_error(capsys, *PREDICT, "--layout", "8xmi355x tp8 [aiter-k3-opt]", "--variant", "aiter-k3-opt")
    assert "setting aiter-k3-opt given twice" in line


# --------------------------------------------------------------------------- 4: a price for a GPU not quoted


def test_quote_refuses_a_price_for_a_gpu_it_was_not_asked_about(capsys):
    line = _one_line_error(capsys, "quote", "--gpu", "b200", "--usd-per-gpu-hour", "mi355x=2")
    assert "--usd-per-gpu-hour mi355x=2" in line and "MI355X" in line and "--gpu b200" in line
    assert "add --gpu mi355x" in line


def test_compare_refuses_a_price_for_a_gpu_it_was_not_asked_about_as_quote_does(capsys):
    """Attack 5 (M9): compare said "your prices: prices no layout ...; B300 not priced by you" for a price of a GPU
    its --gpu list left out; it refuses as quote does, after naming an unknown --gpu first."""
    line = _one_line_error(capsys, "compare", "--gpu", "B300", "--usd-per-gpu-hour", "mi355x=3")
    assert line.endswith("--usd-per-gpu-hour mi355x=3 prices MI355X, which the comparison was not asked about "
                         "(--gpu b300): add --gpu mi355x, or drop that price"), line
    assert "did you mean 'b300'" in _one_line_error(capsys, "compare", "--gpu", "b3000", "--usd-per-gpu-hour", "b300=3")
    rc, out, err = _run(capsys, "compare", "--gpu", "B300", "--usd-per-gpu-hour", "B300=3", "--top", "1")
    # (attack 6: 16xb300 tp8 pp2, outside the validated domain, is cheaper at the centre: named beside it)
    assert rc == 0 and ("your prices (--usd-per-gpu-hour), cheapest inside the model's validated domain: 8xb300 tp8"
                        in out), err
    assert "16xb300 tp8 pp2 is cheaper at the model's centre ($" in out and "but outside that domain (no band)" in out


def test_quote_of_one_gpu_gives_no_verdict_on_two_others(capsys):
    rc, out, err = _run(capsys, "quote", "--gpu", "b200")
    assert rc == 0, err
    assert "verdict" not in out and "MI355X" not in out and "B300" not in out


# --------------------------------------------------------------------------- 5: compare --tok-s


def test_compare_echoes_a_tok_s_as_typed_and_gives_it_no_model_latency(capsys):
    rc, out, err = _run(capsys, "compare", "--tok-s", "mi355x=0.01")
    assert rc == 0, err
    assert "prices: MI355X 0.01;" in out and "MI355X 0.0;" not in out
    mine = [x for x in out.splitlines() if "(your --tok-s)" in x]
    assert mine and all("latency unknown at your --tok-s" in x and not re.search(r"c\d+, TPOT \d", x) for x in mine)
    rc, out, err = _run(capsys, "compare", "--tok-s", "mi355x=0.01", "--json")
    assert rc == 0, err
    user = [a for a in json.loads(out)["answers"] if a.get("priced_by") == "your --tok-s"]
    assert user and all(a["tpot_ms"] is None and a["concurrency"] == 0 and a["latency_unknown"] for a in user)


# --------------------------------------------------------------------------- 6: report --claims


def test_report_claims_without_readme_says_so_first(capsys, tmp_path):
    line = _one_line_error(capsys, "report", "--claims", str(tmp_path / "missing.csv"))
    assert "--claims is read with --readme" in line


@pytest.mark.parametrize("make, says", [
    (lambda t: t, "is a directory"),
    (lambda t: (t / "empty.csv").write_text("") and None or t / "empty.csv", "is an empty file (0 bytes)"),
    (lambda t: "", "is empty: give the ledger CSV's path"),
    (lambda t: t / "missing.csv", "does not exist"),
])
def test_report_claims_says_what_is_wrong_with_it(capsys, tmp_path, make, says):
    claims = str(make(tmp_path))
    line = _one_line_error(capsys, "report", "--readme", str(tmp_path / "README.md"), "--claims", claims)
    assert f"--claims {claims!r} {says}" in line


def _ledger_csv(folder) -> str:
    """A two-row ledger of the real columns (a README's generated blocks are built from it)."""
    from k3lab import claims

    rows = [{c: "" for c in claims.LEDGER_COLUMNS} | {"claim_id": cid, "finding": "memory", "quote": "q",
                                                       "method": "derived", "verdict": "reproduced", "rule": "matches"}
            for cid in ("X1", "X2")]
    import pandas as pd

    pd.DataFrame(rows, columns=claims.LEDGER_COLUMNS).to_csv(folder / "claims.csv", index=False)
    return str(folder / "claims.csv")


README = "# x\n\n<!-- claims-table:start (generated by `make readme-table`; do not edit) -->\nold\n<!-- claims-table:end -->\n"


@pytest.mark.parametrize("check", [(), ("--check",)])
def test_report_claims_that_are_not_a_ledger_are_one_line_with_check_too(capsys, tmp_path, check):
    """Issue 35 (hostile pass, T1): `--claims bad.csv --check` was a KeyError traceback."""
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    (tmp_path / "README.md").write_text(README)
    line = _one_line_error(capsys, "report", "--claims", str(tmp_path / "bad.csv"), "--readme",
                           str(tmp_path / "README.md"), *check)
    assert "bad.csv: columns ['a', 'b']" in line and "claim_id" in line, line
    assert (tmp_path / "README.md").read_text() == README


def test_report_readme_empty_says_so(capsys, tmp_path):
    """M9: `--readme ''` said "[Errno 21] Is a directory: '.'"."""
    line = _one_line_error(capsys, "report", "--readme", "", "--claims", _ledger_csv(tmp_path))
    assert "--readme '' is empty" in line and "Errno" not in line, line


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_report_readme_through_a_link_is_refused_and_nothing_changes(capsys, tmp_path, link):
    """D2: a symlinked (or hard-linked) README was replaced by a new 0644 file and the real one left
    stale. Refused in one line; the link and the file it shares are as they were."""
    import os

    real, name = tmp_path / "real.md", tmp_path / "README.md"
    real.write_text(README)
    os.chmod(real, 0o600)
    (os.symlink if link == "symlink" else os.link)(real, name)
    line = _one_line_error(capsys, "report", "--readme", str(name), "--claims", _ledger_csv(tmp_path))
    assert ("is a symbolic link: give the file it points to" if link == "symlink" else "has 2 names") in line, line
    assert name.is_symlink() == (link == "symlink") and os.path.samefile(name, real)
    assert real.read_text() == README and (real.stat().st_mode & 0o777) == 0o600


def test_report_readme_update_keeps_the_files_mode(capsys, tmp_path):
    """D2: an update of a 0600 README widened it to 0644; it keeps its own mode now."""
    import os

    readme = tmp_path / "README.md"
    readme.write_text(README)
    os.chmod(readme, 0o600)
    rc, out, err = _run(capsys, "report", "--readme", str(readme), "--claims", _ledger_csv(tmp_path))
    assert rc == 0 and err == "", err
    assert "| X1 |" in readme.read_text() and "\nold\n" not in readme.read_text()
    assert (readme.stat().st_mode & 0o777) == 0o600


# --------------------------------------------------------------------------- 7: papermill's nan


@pytest.mark.parametrize("given", ["mem_fraction = float('nan')", 'mem_fraction = float("-inf")',
                                   "mem_fraction = [0.5, float('inf')]"])
def test_a_parameter_set_to_nan_is_named_not_blamed_on_its_default(given):
    history = ["# k3lab parameters\nmode = 'offline'\nmem_fraction = 0.9\n", f"# Parameters\n{given}\n"]
    with pytest.raises(nbparams.ParameterError) as ei:
        nbparams.declared(history)
    msg = str(ei.value)
    assert msg.startswith("parameter 'mem_fraction': nan and inf are not accepted") and "\n" not in msg
    assert "default" not in msg


def test_a_computed_value_given_is_not_called_a_default():
    with pytest.raises(nbparams.ParameterError, match="'rows': its value must be a literal"):
        nbparams.declared(["# k3lab parameters\nrows = 1\n", "# Parameters\nrows = len('abc')\n"])


# --------------------------------------------------------------------------- 8: a relative K3LAB_RESULTS


@pytest.fixture
def in_a_kernel(monkeypatch):
    """This process seen as a notebook's kernel (an IPython kernel app started)."""
    app = types.ModuleType("ipykernel.kernelapp")
    app.IPKernelApp = type("IPKernelApp", (), {"initialized": classmethod(lambda cls: True)})
    monkeypatch.setitem(sys.modules, "ipykernel.kernelapp", app)


def test_a_relative_results_folder_is_where_the_user_ran_the_command(tmp_path, monkeypatch, in_a_kernel):
    start, kernel_cwd = tmp_path / "where-i-ran-it", tmp_path / "notebooks"
    start.mkdir()
    kernel_cwd.mkdir()
    monkeypatch.setenv("PWD", str(start))   # the shell's folder, inherited by the kernel
    monkeypatch.chdir(kernel_cwd)           # Jupyter starts the kernel in the notebook's folder
    monkeypatch.setenv("K3LAB_RESULTS", "out")
    assert paths.results_root() == (start / "out").resolve()


def test_a_relative_results_folder_without_a_start_folder_is_refused(monkeypatch, in_a_kernel):
    monkeypatch.delenv("PWD", raising=False)
    monkeypatch.setenv("K3LAB_RESULTS", "out")
    with pytest.raises(ValueError) as ei:
        paths.results_root()
    assert "K3LAB_RESULTS='out' is a relative path" in str(ei.value) and "\n" not in str(ei.value)


def test_outside_a_kernel_a_relative_results_folder_is_the_process_folder(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ipykernel.kernelapp", None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("K3LAB_RESULTS", "out")
    assert paths.results_root() == (tmp_path / "out").resolve()


# --------------------------------------------------------------------------- 9: a profile that is a directory


@pytest.mark.parametrize("name, given", [("prof.yaml", "prof.yaml"), ("prof", "prof"), ("prof.yaml", "prof")])
def test_a_profile_that_is_a_directory_is_called_one(capsys, tmp_path, name, given):
    (tmp_path / name).mkdir()
    line = _one_line_error(capsys, "reproduce", "--profile", str(tmp_path / given))
    assert "is a directory, not a profile file" in line and "no such file" not in line


# --------------------------------------------------------------------------- 10: data/predictions/


@pytest.mark.parametrize("stray, says", [
    (lambda d: (d / "alias.yaml").symlink_to(d / "2026-12-04-model-v3.yaml"), "alias.yaml: a symlink"),
    (lambda d: (d / "late.yml").write_text("predictions: []\n"), "late.yml: not in data/predictions/SHA256SUMS.yaml"),
    (lambda d: (d / "old").mkdir(), "old: a subfolder"),
])
def test_a_stray_in_predictions_is_refused_by_its_own_name(data_copy, capsys, stray, says):
    stray(data_copy / "predictions")
    data.clear_cache()
    line = _one_line_error(capsys, "score")
    assert f"data/predictions/{says}" in line and "SHA256SUMS.yaml" in line
    assert "2026-12-04-model-v3.yaml" not in line  # the link is named, never its target


def test_a_recording_replaced_by_a_link_is_refused_as_a_link(data_copy, capsys, tmp_path):
    rec = data_copy / "predictions" / "2026-12-04-model-v4.yaml"
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_bytes(rec.read_bytes())
    rec.unlink()
    rec.symlink_to(elsewhere)
    data.clear_cache()
    line = _one_line_error(capsys, "score")
    assert "data/predictions/2026-12-04-model-v4.yaml: a symlink" in line and "elsewhere" not in line


# --------------------------------------------------------------------------- small: k3lab_patches status


def _status(capsys, *argv):
    from k3lab_patches import __main__ as M

    try:
        rc = M.status_main(list(argv))
    except SystemExit as e:
        rc = e.code
    return (rc, *capsys.readouterr())


def test_patches_status_help_prints_its_usage(capsys):
    rc, out, err = _status(capsys, "--help")
    assert rc == 0 and err == "" and "--version VERSION" in out


def test_patches_status_reads_a_v_prefixed_version_as_the_release(capsys):
    rc, plain, _ = _status(capsys, "--version", "0.5.23")
    rc_v, with_v, err = _status(capsys, "--version", "v0.5.23")
    assert rc == rc_v == 0 and err == ""
    assert with_v.splitlines()[1:] == plain.splitlines()[1:] and ": unknown:" not in with_v


def test_patches_status_parses_an_epoch(capsys):
    rc, zero, _ = _status(capsys, "--version", "0!0.5.23")
    _, plain, _ = _status(capsys, "--version", "0.5.23")
    assert rc == 0 and zero.splitlines()[1:] == plain.splitlines()[1:]
    rc, one, err = _status(capsys, "--version", "1!0.5.23")  # after every release of epoch 0: none measured
    assert rc == 0 and err == ""
    assert "topk_renorm: unknown: not in the measured matrix" in one and "not needed" not in one


# --------------------------------------------------------------------------- small: one output token


def test_one_output_token_has_no_tpot(capsys):
    rc, out, err = _run(capsys, "predict", "--layout", "8xmi355x tp8", "--input-len", "1000", "--output-len", "1",
                        "--concurrency", "4")
    assert rc == 0, err
    tpot = next(x for x in out.splitlines() if x.strip().startswith("TPOT (ms)"))
    assert tpot.split()[2] == "—" and "no decode step" in tpot
    rc, out, err = _run(capsys, "predict", "--layout", "8xmi355x tp8", "--input-len", "1000", "--output-len", "1",
                        "--concurrency", "4", "--json")
    d = json.loads(out)
    assert d["tpot_ms"] is None and d["itl_ms"] is None and "no decode step" in d["tpot_undefined"]
    assert d["ttft_ms"] > 0


@pytest.mark.parametrize("target", [["--max-tpot", "50"], ["--min-tok-s-per-user", "20"]])
def test_one_output_token_has_no_tpot_target_to_meet(capsys, target):
    line = _one_line_error(capsys, "predict", "--layout", "8xmi355x tp8", "--input-len", "1000", "--output-len", "1",
                           *target)
    assert "--output-len 1 has no TPOT" in line and target[0] in line


# --------------------------------------------------------------------------- small: compare's latency cap


def test_compare_never_prices_a_latency_past_predicts_cap():
    cap = limits.CAPS["latency_ms"].high
    df = compare.compare_rows(load_model("kimi-k3"), input_len=1_000_000, output_len=40_000,
                              gpus=["mi355x", "mi350x"])
    priced = df[df["model_tok_s"].notna()]
    assert (priced["model_ttft_ms"] <= cap).all() and (priced["model_tpot_ms"] <= cap).all()
    # 16xmi355x tp8 pp2 [aiter-k3-opt] queues its 5 requests' prefills past ten minutes: named, not priced
    assert any(f"beyond {cap:,.0f} ms" in str(n) for n in df["model_note"])


def test_a_tok_s_per_user_limit_below_the_latency_cap_is_refused(capsys):
    """Attack 6: --min-tok-s-per-user 1e-9 (a token every 10^12 ms) was taken where --max-tpot 600001 is refused; the
    per-user rate's low end is the latency cap's ten minutes a token (1,000 / 600,000 ms < 0.002 tok/s)."""
    line = _one_line_error(capsys, "quote", "--min-tok-s-per-user", "1e-9")
    assert "--min-tok-s-per-user: must be 0.002 to 100,000 tok/s per user" in line and line.endswith("got 1e-9")
    assert 1000 / 0.002 <= 600_000
    rc, out, err = _run(capsys, "quote", "--min-tok-s-per-user", "0.002", "--gpu", "mi355x")
    assert rc == 0, err
