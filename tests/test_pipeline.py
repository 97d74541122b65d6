"""The reproduction spine as one transaction (issue 12): profiles and parameters checked
before anything runs, a run staged and committed with ``manifest.json`` last, a failed
notebook kept under ``results/failed/`` with the previous results untouched, a lock against
a second run, ``recover()`` after an interrupted commit, what-if runs under ``results/runs/``.

The notebooks are tiny fixtures (``tests/fixtures/notebooks/``, kernel ``k3lab``): ``01_a``
and ``02_b`` write a CSV through ``k3lab.io`` into ``nbparams``' results folder; ``03_fail``
raises in a cell. Runs use ``report=False`` (the report needs the study's own notebooks).
SIGKILL / SIGINT of a real ``reproduce`` process and the ledger live in tests/test_faults.py.
"""

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from k3lab import io, pipeline
from k3lab.paths import results_root
from study_helpers import check_manifest, leftovers, make_study, snapshot

TABLE_A = "i,x,label\n0,0,a\n1,1,a\n2,2,a\n"   # rows=3, scale=1.0, label="a", by hand


def run(profile: str, nbs: Path, params: Path):
    return pipeline.run(profile, report=False, params_dir=params, notebooks_dir=nbs)


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


# --------------------------------------------------------------------------- profiles and parameters


def test_unknown_profile_lists_known(tmp_path):
    nbs, params = make_study(tmp_path)
    with pytest.raises(pipeline.PipelineError, match=r"unknown profile 'nope'; known profiles: study"):
        run("nope", nbs, params)
    assert not results_root().exists()


def test_broken_profile_yaml_is_one_line_naming_the_file(tmp_path):
    nbs, params = make_study(tmp_path, profiles={"broken": "defaults: {mode: offline, smoke: false\nnotebooks: {}\n"})
    with pytest.raises(pipeline.PipelineError) as ei:
        run("broken", nbs, params)
    msg = str(ei.value)
    assert msg.startswith("params/broken.yaml: not valid YAML"), msg
    assert "\n" not in msg
    assert not results_root().exists()


def test_profile_that_is_not_utf8(tmp_path):
    nbs, params = make_study(tmp_path)
    (params / "binary.yaml").write_bytes(b"defaults: {mode: \xff\xfe}\n")
    with pytest.raises(pipeline.PipelineError, match=r"^params/binary\.yaml: not UTF-8"):
        run("binary", nbs, params)


def test_undeclared_parameter_stops_before_anything_runs(tmp_path):
    nbs, params = make_study(tmp_path, profiles={"bad": "defaults: {mode: offline, smoke: false}\n"
                                                        "notebooks: {02_b: {colour: red}}\n"})
    with pytest.raises(pipeline.PipelineError) as ei:
        run("bad", nbs, params)
    msg = str(ei.value)
    assert "02_b.ipynb" in msg and "colour" in msg and "\n" not in msg, msg
    assert not results_root().exists()


@pytest.mark.parametrize("profile", [
    "defaults: {mode: offline, smoke: 'yes please'}\n",
    "defaults: {mode: offline, smoke: false}\nnotebooks: {01_a: {rows: many}}\n",
    "defaults: {mode: offline, smoke: false}\nnotebooks: {01_a: {gpus: mi355x}}\n",
    "defaults: {mode: offline, smoke: false}\nnotebooks: {01_a: {scale: true}}\n",
])
def test_wrong_type_stops_before_anything_runs(tmp_path, profile):
    nbs, params = make_study(tmp_path, profiles={"bad": profile})
    with pytest.raises(pipeline.PipelineError, match=r"profile 'bad', 0[12]_[ab]\.ipynb: parameter '"):
        run("bad", nbs, params)
    assert not results_root().exists()


def test_declared_parameters_are_passed(tmp_path):
    nbs, params = make_study(tmp_path, profiles={"good": "defaults: {mode: offline, smoke: true}\n"
                                                         "notebooks: {01_a: {rows: 7, scale: 2}}\n"})
    jobs = {j.notebook_id: j.parameters for j in pipeline.plan("good", params_dir=params, notebooks_dir=nbs)}
    assert jobs == {"01_a": {"mode": "offline", "smoke": True, "rows": 7, "scale": 2},
                    "02_b": {"mode": "offline", "smoke": True}}


def test_profile_naming_a_missing_notebook(tmp_path):
    nbs, params = make_study(tmp_path, profiles={"ghost": "notebooks: {09_ghost: {}}\n"})
    with pytest.raises(pipeline.PipelineError, match=r"notebooks that do not exist: \['09_ghost'\]"):
        run("ghost", nbs, params)


def test_bad_mode_and_shape(tmp_path):
    nbs, params = make_study(tmp_path, profiles={"m": "defaults: {mode: turbo}\n",
                                                 "s": "default: {mode: offline}\n",
                                                 "w": "what_if: true\n"})
    with pytest.raises(pipeline.PipelineError, match="mode must be one of"):
        pipeline.load_profile("m", params)
    with pytest.raises(pipeline.PipelineError, match="top-level keys"):
        pipeline.load_profile("s", params)
    with pytest.raises(pipeline.PipelineError, match="what-if profile must name the notebooks"):
        pipeline.load_profile("w", params)


def _notebook(path: Path, params_src, body: str = "x = 1") -> Path:
    nb = nbformat.v4.new_notebook()
    if params_src is not None:
        nb.cells.append(nbformat.v4.new_code_cell(params_src, metadata={"tags": ["parameters"]}))
    nb.cells.append(nbformat.v4.new_code_cell(body))
    nb.metadata["kernelspec"] = {"name": "k3lab", "display_name": "k3lab", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_notebook_without_parameters_cell(tmp_path):
    nbs, params = make_study(tmp_path)
    _notebook(nbs / "03_gamma.ipynb", None)
    with pytest.raises(pipeline.PipelineError, match="03_gamma.ipynb: no cell tagged 'parameters'"):
        pipeline.plan("study", params_dir=params, notebooks_dir=nbs)


def test_notebook_must_declare_mode_and_smoke(tmp_path):
    nbs, params = make_study(tmp_path)
    _notebook(nbs / "03_gamma.ipynb", "# k3lab parameters\nn = 1")
    with pytest.raises(pipeline.PipelineError, match="must declare 'mode'"):
        pipeline.plan("study", params_dir=params, notebooks_dir=nbs)


def test_every_study_notebook_plans_under_every_profile():
    for profile in pipeline.known_profiles():
        prof = pipeline.load_profile(profile)
        jobs = pipeline.plan(profile)
        # a study profile runs every notebook; a what-if profile exactly the ones it names
        want = sorted(prof["notebooks"]) if prof["what_if"] else [p.stem for p in pipeline.notebooks()]
        assert [j.notebook_id for j in jobs] == want, profile
        assert all(j.parameters["mode"] in pipeline.MODES for j in jobs)
    assert {p for p in pipeline.known_profiles() if pipeline.load_profile(p)["what_if"]} == {
        "deepseek-v3-mi300x-vs-h200", "kimi-k3-fp8-256k"}
    assert [p.stem for p in pipeline.notebooks()][-1] == "05_claims_ledger"


def test_cli_reports_bad_profile(capsys):
    assert pipeline.main(["--profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown profile 'nope'" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- a complete run


def test_successful_run_writes_manifest_with_every_file(baseline):
    man = check_manifest(baseline, "study", ["01_a", "02_b"])
    assert {"01_a/table_a.csv", "01_a/01_a.ipynb", "02_b/table_b.csv", "02_b/02_b.ipynb"} <= set(man["files"])
    assert (baseline / "01_a" / "table_a.csv").read_text() == TABLE_A
    assert man["notebooks"]["01_a"] == {"mode": "offline", "smoke": False}
    assert leftovers(baseline) == []


def test_outputs_are_mode_0644(baseline):
    files = [p for p in baseline.rglob("*") if p.is_file()]
    assert files
    modes = {str(p.relative_to(baseline)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {"0o644"}, modes


def test_a_new_run_replaces_the_previous_one_whole(tmp_path, previous, umask022):
    root = results_root()
    old_id = json.loads((root / "manifest.json").read_text())["run_id"]
    (root / "99_old").mkdir()
    (root / "99_old" / "claims.csv").write_text("stale\n")
    (root / "README.md").write_text("kept\n")
    (root / "runs" / "buyer").mkdir(parents=True)
    (root / "runs" / "buyer" / "x.csv").write_text("kept\n")
    nbs, params = make_study(tmp_path)
    run("study", nbs, params)
    man = check_manifest(root, "study", ["01_a", "02_b"])
    assert man["run_id"] != old_id
    assert not (root / "99_old").exists()          # not part of this run: gone with the old one
    assert (root / "README.md").read_text() == "kept\n"
    assert (root / "runs" / "buyer" / "x.csv").read_text() == "kept\n"
    assert leftovers(root) == []


def test_failing_notebook_keeps_previous_results_and_the_executed_notebook(tmp_path, previous):
    root = results_root()
    nbs, params = make_study(tmp_path, "01_a", "02_b", "03_fail")
    with pytest.raises(pipeline.PipelineError) as ei:
        run("study", nbs, params)
    msg = str(ei.value)
    assert "\n" not in msg, msg
    assert "03_fail.ipynb" in msg and "RuntimeError: boom on purpose in 03_fail" in msg, msg
    assert "failed/03_fail.ipynb" in msg, msg
    kept = root / "failed" / "03_fail.ipynb"
    assert kept.exists() and stat.S_IMODE(kept.stat().st_mode) == 0o644
    # the message names the cell that failed: the kept notebook shows the error in that cell
    cell_no = int(re.search(r"cell \[(\d+)\]", msg).group(1))
    nb = nbformat.read(kept, as_version=4)
    err_cells = [c for c in nb.cells if c.cell_type == "code"
                 and any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    assert len(err_cells) == 1 and err_cells[0].execution_count == cell_no
    assert "raise RuntimeError" in err_cells[0].source
    # the previous complete results, byte for byte; nothing of the failed run leaked in
    assert snapshot(root) == previous
    assert leftovers(root) == []


# --------------------------------------------------------------------------- the lock


def test_second_run_while_one_is_active_fails_at_once(tmp_path, previous):
    root = results_root()
    nbs, params = make_study(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (root / ".lock").write_text(str(holder.pid))
        with pytest.raises(pipeline.PipelineError, match=rf"another k3lab run \(pid {holder.pid}\)"):
            run("study", nbs, params)
        assert (root / ".lock").read_text() == str(holder.pid)   # not taken from the live run
        assert snapshot(root) == previous
        assert not list(root.glob(".staging-*"))
    finally:
        holder.kill()
        holder.wait()


def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path, previous):
    root = results_root()
    nbs, params = make_study(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (root / ".lock").write_text(str(dead.pid))
    run("study", nbs, params)
    check_manifest(root, "study", ["01_a", "02_b"])
    assert leftovers(root) == []


# --------------------------------------------------------------------------- recover()


RUN_ID = "20990101T000000Z-4242"


def _half_new_set(root: Path) -> None:
    (root / "01_a").mkdir()
    (root / "01_a" / "table_a.csv").write_text("i,x,label\n0,9,new\n")


def test_recover_rolls_back_an_interrupted_commit(previous):
    """The commit had moved the old entries aside and half the new ones in; no manifest for
    its run: recover() puts the old run back."""
    root = results_root()
    old = root / f".old-{RUN_ID}"
    old.mkdir()
    for p in sorted(root.iterdir()):
        if not p.name.startswith("."):
            os.replace(p, old / p.name)
    _half_new_set(root)
    (root / f".staging-{RUN_ID}").mkdir()
    (root / f".staging-{RUN_ID}" / "02_b").mkdir()
    done = pipeline.recover(root)
    assert any("rolled back" in line and RUN_ID in line for line in done), done
    assert snapshot(root) == previous
    assert leftovers(root) == []


def test_recover_keeps_a_commit_whose_manifest_landed(previous):
    root = results_root()
    old = root / f".old-{RUN_ID}"
    old.mkdir()
    for p in sorted(root.iterdir()):
        if not p.name.startswith("."):
            os.replace(p, old / p.name)
    _half_new_set(root)
    io.write_json(root / "manifest.json", {"run_id": RUN_ID, "files": {}})
    pipeline.recover(root)
    assert not old.exists()
    assert (root / "01_a" / "table_a.csv").read_text() == "i,x,label\n0,9,new\n"
    assert json.loads((root / "manifest.json").read_text())["run_id"] == RUN_ID


def test_recover_when_the_old_entries_were_only_half_moved_aside(previous):
    """Interrupted in the commit's first step (old entries going aside, nothing new moved in
    yet): recover() must give back the whole old run, not delete what had not moved yet."""
    root = results_root()
    old = root / f".old-{RUN_ID}"
    old.mkdir()
    os.replace(root / "01_a", old / "01_a")        # 02_b and manifest.json not moved yet
    pipeline.recover(root)
    assert snapshot(root) == previous
    assert leftovers(root) == []


def test_recover_removes_staging_and_temporary_files(previous):
    root = results_root()
    (root / ".staging-20990101T000000Z-1" / "01_a").mkdir(parents=True)
    (root / "01_a" / ".table_a.csv.x1y2.tmp").write_text("half")
    (root / ".manifest.json.abcd.tmp").write_text("half")
    pipeline.recover(root)
    assert snapshot(root) == previous
    assert leftovers(root) == []


# --------------------------------------------------------------------------- what-if and overrides


def test_what_if_profile_writes_runs_and_never_touches_results(tmp_path, previous):
    root = results_root()
    nbs, params = make_study(tmp_path, profiles={"buyer": "what_if: true\nnotebooks: {01_a: {rows: 5}}\n"})
    run("buyer", nbs, params)
    assert snapshot(root) == previous
    out = root / "runs" / "buyer"
    man = check_manifest(out, "buyer", ["01_a"])
    assert not (out / "02_b").exists()
    assert (out / "01_a" / "table_a.csv").read_text().splitlines() == ["i,x,label"] + [f"{i},{i},a" for i in range(5)]
    assert all(not f.startswith("runs/") for f in man["files"])
    assert leftovers(root) == [] and leftovers(out) == []


def test_study_profile_override_lands_in_the_notebooks_folder(tmp_path, previous):
    """A study profile (what_if: false) may override a notebook's parameters; the outputs are
    that run's results/<nb>/, listed in the manifest, not an ad-hoc results/runs/ folder."""
    root = results_root()
    nbs, params = make_study(tmp_path, profiles={"big": "defaults: {mode: offline, smoke: false}\n"
                                                         "notebooks: {01_a: {rows: 4}}\n"})
    run("big", nbs, params)
    man = check_manifest(root, "big", ["01_a", "02_b"])
    assert "01_a/table_a.csv" in man["files"], sorted(man["files"])
    assert (root / "01_a" / "table_a.csv").read_text().count("\n") == 5
    assert not (root / "runs").exists(), sorted(str(p.relative_to(root)) for p in (root / "runs").rglob("*"))


# --------------------------------------------------------------------------- atomic writes


def test_atomic_write_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with io.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["t.csv"]


def test_atomic_writes_are_0644(tmp_path, umask022):
    import pandas as pd

    io.write_csv(pd.DataFrame({"a": [1]}), tmp_path / "a.csv")
    io.write_text(tmp_path / "b.txt", "x")
    io.write_json(tmp_path / "c.json", {"a": 1})
    assert {stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("a.csv", "b.txt", "c.json")} == {0o644}


def test_csv_is_deterministic(tmp_path):
    import pandas as pd

    df = pd.DataFrame({"a": [1, 2], "x": [1 / 3, 2.0e-9]})
    io.write_csv(df, tmp_path / "a.csv")
    io.write_csv(df.copy(), tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes() == b"a,x\n1,0.333333\n2,2e-09\n"


# --------------------------------------------------------------------------- verify against the manifest


def test_verify_finds_what_changed_since_the_run(previous):
    """A complete run verifies clean; a file edited, deleted, or written by hand afterwards
    (a notebook run in JupyterLab writes straight into results/<nb>/) is named, one line each;
    the README table then refuses to update from it."""
    from k3lab import report

    root = results_root()
    assert pipeline.verify(root) == []
    man = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    first, second = sorted(f for f in man["files"] if f.endswith(".csv"))[:2]
    (root / first).write_text("i,x,label\n9,9,z\n", encoding="utf-8")
    (root / second).unlink()
    (root / "01_a" / "by_hand.csv").write_text("x\n1\n", encoding="utf-8")
    (root / "99_stray").mkdir()
    (root / "99_stray" / "claims.csv").write_text("x\n", encoding="utf-8")
    run_id = man["run_id"]
    assert pipeline.verify(root) == sorted([f"{first}: changed since run {run_id} wrote it",
                                            f"{second}: missing (listed by run {run_id})"]) + [
        f"01_a/by_hand.csv: not written by run {run_id}", f"99_stray/claims.csv: not written by run {run_id}"]
    (root / "claims.csv").write_text("claim_id\n", encoding="utf-8")
    readme = root.parent / "README.md"
    readme.write_text("x\n", encoding="utf-8")
    assert report.main(["--readme", str(readme), "--claims", str(root / "claims.csv")]) == 2
    assert readme.read_text(encoding="utf-8") == "x\n"


def test_verify_without_a_complete_run(tmp_path):
    with pytest.raises(pipeline.PipelineError, match="manifest.json is missing"):
        pipeline.verify(tmp_path)
