"""A notebook run by hand, and a profile given as a file, write only where k3lab may
(attack on main: "a notebook run by hand writes into a folder k3lab never made, overwriting
the user's files"; "reproduce --profile <file> writes .k3lab-results into a user's non-empty
results/runs/<name>/ before refusing it")."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from k3lab import nbparams, pipeline, transaction
from k3lab.manifest import PipelineError
from k3lab.nbparams import ParameterError
from study_helpers import FIXTURES, REPO, make_study

PARAMS_CELL = '# k3lab parameters\nmode = "offline"\nsmoke = False\nrows = 3\n'
DEFAULTS = {"mode": "offline", "smoke": False, "rows": 3}


def _user_folder(tmp_path: Path) -> Path:
    """A user's folder shaped like results: 01_a/table_a.csv holding their own data."""
    d = tmp_path / "u1"
    (d / "01_a").mkdir(parents=True)
    (d / "01_a" / "table_a.csv").write_text("USER DATA\n")
    return d


def _run_by_hand(tool: str, tmp_path: Path, results: Path, run_env: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, K3LAB_RESULTS=str(results))
    env.pop(nbparams.RUN_ENV, None)
    if run_env:
        env[nbparams.RUN_ENV] = run_env
    nb = FIXTURES / "01_a.ipynb"
    if tool == "jupyter":
        cmd = [str(Path(sys.executable).parent / "jupyter"), "execute", "--kernel_name=k3lab",
               f"--output={tmp_path / 'out'}", str(nb)]
    else:
        cmd = [sys.executable, "-m", "papermill", "-k", "k3lab", "--no-progress-bar", str(nb), str(tmp_path / "o.ipynb")]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=FIXTURES, timeout=300)


@pytest.mark.parametrize("tool, run_env", [("jupyter", "ci"), ("jupyter", None), ("papermill", None)])
def test_a_notebook_run_by_hand_never_writes_into_a_users_folder(tmp_path, tool, run_env):
    user = _user_folder(tmp_path)
    before = sorted(p.relative_to(user) for p in user.rglob("*"))
    r = _run_by_hand(tool, tmp_path, user, run_env)
    assert r.returncode != 0
    assert "not empty and not a k3lab results folder" in r.stdout + r.stderr
    assert (user / "01_a" / "table_a.csv").read_text() == "USER DATA\n"
    assert sorted(p.relative_to(user) for p in user.rglob("*")) == before  # no marker, nothing added


def test_a_notebook_run_by_hand_into_a_new_folder_marks_it_and_writes(tmp_path):
    """nbval's way (``make test-notebooks``: K3LAB_RESULTS at a folder it just removed)."""
    fresh = tmp_path / "fresh"
    r = _run_by_hand("jupyter", tmp_path, fresh, None)
    assert r.returncode == 0, r.stderr
    assert transaction.marked(fresh)
    assert (fresh / "01_a" / "table_a.csv").read_text().splitlines() == ["i,x,label", "0,0,a", "1,1,a", "2,2,a"]
    # and again, into the folder k3lab now owns
    assert _run_by_hand("jupyter", tmp_path, fresh, None).returncode == 0


def _namespace(rows=3):
    return {"In": ["", PARAMS_CELL, f"# Parameters\nrows = {rows}\n"], **DEFAULTS, "rows": rows}


def test_check_refuses_a_foreign_results_root_in_one_line(tmp_path, monkeypatch):
    user = _user_folder(tmp_path)
    monkeypatch.setenv("K3LAB_RESULTS", str(user))
    with pytest.raises(ParameterError) as ei:
        nbparams.check(_namespace())
    assert str(ei.value).startswith("a notebook run by hand: ") and "\n" not in str(ei.value)
    assert str(user) in str(ei.value)
    assert not (user / transaction.MARKER).exists()


def test_a_what_if_by_hand_refuses_a_users_runs_folder(tmp_path, monkeypatch):
    root = tmp_path / "res"
    monkeypatch.setenv("K3LAB_RESULTS", str(root))
    monkeypatch.delenv(nbparams.RUN_ENV, raising=False)
    P = nbparams.check(_namespace(rows=9))  # claims (makes and marks) the new root
    assert transaction.marked(root)
    run = root / "runs" / nbparams.run_name(P.changed)
    run.mkdir(parents=True)
    (run / "mine.txt").write_text("mine")
    with pytest.raises(ParameterError, match="not empty and not a k3lab results folder"):
        P.results_dir("01_a")
    assert sorted(p.name for p in run.iterdir()) == ["mine.txt"]


def test_the_pipelines_kernel_needs_no_claim(tmp_path, monkeypatch):
    staging = transaction.new_staging(tmp_path, "20990101T000000Z-1")
    (staging / "stray.txt").write_text("written by an earlier notebook of this run")
    monkeypatch.setenv("K3LAB_RESULTS", str(staging))
    monkeypatch.setenv(nbparams.RUN_ENV, "study")
    assert nbparams.check(_namespace()).results_dir("01_a") == staging / "01_a"
    assert not (staging / transaction.MARKER).exists()


# --------------------------------------------------------------------------- a profile's runs/<name>/


@pytest.fixture
def study_results(tmp_path, monkeypatch):
    """A stand-in for the study's own results/ (k3lab.transaction's STUDY_RESULTS), K3LAB_RESULTS at it."""
    study = tmp_path / "study_results"
    study.mkdir()
    monkeypatch.setattr(transaction, "STUDY_RESULTS", study)
    monkeypatch.setenv("K3LAB_RESULTS", str(study))
    return study


def test_claim_decides_before_it_marks_a_users_runs_folder(study_results):
    quick = study_results / "runs" / "quick"
    quick.mkdir(parents=True)
    (quick / "notes.txt").write_text("mine\n")
    with pytest.raises(PipelineError, match="not empty and not a k3lab results folder"):
        transaction.claim(quick)
    assert sorted(p.name for p in quick.iterdir()) == ["notes.txt"]
    empty = study_results / "runs" / "empty"
    empty.mkdir()
    transaction.claim(empty)  # empty: k3lab's to mark
    assert transaction.marked(empty)


def test_reproduce_with_a_profile_file_leaves_a_users_runs_folder_unmarked(tmp_path, study_results):
    nbs, params = make_study(tmp_path / "s", "01_a")
    prof = tmp_path / "quick.yaml"
    prof.write_text("defaults: {mode: offline, smoke: true}\nnotebooks: {01_a: {}}\n")
    quick = study_results / "runs" / "quick"
    quick.mkdir(parents=True)
    (quick / "notes.txt").write_text("mine\n")
    with pytest.raises(PipelineError, match="not empty and not a k3lab results folder"):
        pipeline.run(str(prof), report=False, params_dir=params, notebooks_dir=nbs)
    assert sorted(p.name for p in quick.iterdir()) == ["notes.txt"]
    assert (quick / "notes.txt").read_text() == "mine\n"


def test_cli_reproduce_refuses_a_foreign_results_folder_in_one_line(tmp_path):
    user = _user_folder(tmp_path)
    env = dict(os.environ, K3LAB_RESULTS=str(user))
    r = subprocess.run([sys.executable, "-m", "k3lab", "reproduce", "--profile", "ci"], capture_output=True,
                       text=True, env=env, cwd=REPO, timeout=300)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    assert "not empty and not a k3lab results folder" in r.stderr
    assert not (user / transaction.MARKER).exists()


@pytest.mark.parametrize("what_if", [False, True], ids=["study", "what-if"])
def test_a_symlink_in_a_notebook_folders_place_is_refused_and_its_target_kept(tmp_path, monkeypatch, what_if):
    """Second attack: `results/01_memory_fit` a symlink to a user's folder, in k3lab's own results folder, and the
    notebook run by hand wrote through it. Refused in one line; the user's file is as it was."""
    root = tmp_path / "res"
    monkeypatch.setenv("K3LAB_RESULTS", str(root))
    monkeypatch.delenv(nbparams.RUN_ENV, raising=False)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "table_a.csv").write_text("USER DATA\n")
    P = nbparams.check(_namespace(rows=9 if what_if else 3))  # claims (makes and marks) the new root
    parent = root / "runs" / nbparams.run_name(P.changed) if what_if else root
    if what_if:
        nbparams.claim_by_hand(parent)
    (parent / "01_a").symlink_to(victim, target_is_directory=True)
    with pytest.raises(ParameterError) as ei:
        P.results_dir("01_a")
    assert "is a symlink" in str(ei.value) and "\n" not in str(ei.value)
    assert (victim / "table_a.csv").read_text() == "USER DATA\n" and sorted(p.name for p in victim.iterdir()) == ["table_a.csv"]
