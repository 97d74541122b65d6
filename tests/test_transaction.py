"""``k3lab.transaction``: what a results folder's owner may touch (issue 35's data-loss cases).

- a ``.lock`` that is a symlink, a hard link or not a plain file is refused, never truncated
  (neither by a run on its own folder nor by the sweep of ``results/runs/<name>/``);
- every temporary file a run makes lies in its marked staging folder (the journal's and a
  failed notebook's too), so recovery never needs to guess which dot-file is k3lab's;
- a folder inside the study's ``results/`` other than ``runs/<name>/`` is never claimed (a
  refused run used to leave a marker in ``results/01_memory_fit/`` that stopped every run);
- a ``report`` rebuilt while a commit was cut short does not stop the next run;
- Ctrl-C during the recovery says so, not "the previous results are untouched";
- what a SIGKILLed run left running (its kernel's process group) is stopped by the next run.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from k3lab import pipeline, report, transaction
from k3lab.paths import results_root
from study_helpers import check_manifest, leftovers, make_study, processes_with_env, snapshot

USERS = "a user's file: must never change\n"


def run(nbs, params, profile="study"):
    return pipeline.run(profile, report=False, params_dir=params, notebooks_dir=nbs)


# --------------------------------------------------------------------------- the lock


def _foreign_lock(folder: Path, kind: str, users: Path) -> None:
    lock = folder / transaction.LOCK
    if kind == "symlink":
        lock.symlink_to(users)
    elif kind == "dangling symlink":
        lock.symlink_to(users.parent / "nothing-here")
    elif kind == "hard link":
        os.link(users, lock)
    else:  # a FIFO: opening it for writing must not hang
        os.mkfifo(lock)


KINDS = ["symlink", "dangling symlink", "hard link", "fifo"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_foreign_lock_is_refused_in_one_line_and_never_written(tmp_path, kind):
    users = tmp_path / "notes.txt"
    users.write_text(USERS)
    folder = tmp_path / "results"
    transaction.claim(folder)
    _foreign_lock(folder, kind, users)
    with pytest.raises(pipeline.PipelineError) as ei:
        transaction.try_lock(folder)
    msg = str(ei.value)
    assert "\n" not in msg and "not k3lab's lock file" in msg and "move it out of the way" in msg, msg
    assert users.read_text() == USERS and not (users.parent / "nothing-here").exists()


@pytest.mark.parametrize("kind", ["symlink", "hard link"])
def test_a_run_refuses_a_symlinked_lock_and_the_sweep_leaves_one_alone(tmp_path, previous, kind):
    """The issue: a ``.lock`` symlink to a user's file, in the run's folder or in a marked
    ``results/runs/<name>/`` the sweep visits: the file ended up holding a pid."""
    users = tmp_path / "users" / "notes.txt"
    users.parent.mkdir()
    users.write_text(USERS)
    root = results_root()
    nbs, params = make_study(tmp_path / "study")
    other = root / "runs" / "other"
    transaction.claim(other)
    _foreign_lock(other, kind, users)
    run(nbs, params)  # the sweep meets the foreign lock in runs/other/ and leaves it
    assert users.read_text() == USERS and (other / transaction.LOCK).exists()
    _foreign_lock(root, kind, users)
    before = snapshot(root)
    with pytest.raises(pipeline.PipelineError, match="not k3lab's lock file"):
        run(nbs, params)
    assert users.read_text() == USERS and snapshot(root) == before


# --------------------------------------------------------------------------- temporaries


def test_every_temporary_of_a_run_is_made_in_its_staging_folder(tmp_path, previous, monkeypatch):
    """Recovery removes no dot-file by its look: so a run must make none outside its marked
    staging folder (its notebooks' outputs, a failed notebook kept, the commit journal)."""
    root = results_root()
    made = []
    mkstemp = tempfile.mkstemp

    def spy(*a, **kw):
        fd, name = mkstemp(*a, **kw)
        made.append(Path(name))
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", spy)
    nbs, params = make_study(tmp_path / "ok")
    run(nbs, params)          # the commit journal is written in the parent process
    nbs, params = make_study(tmp_path / "fails", "01_a", "03_fail")
    with pytest.raises(pipeline.PipelineError, match="failed/03_fail.ipynb"):
        run(nbs, params)      # the failed notebook kept under failed/
    in_root = [p for p in made if root in p.parents]
    assert in_root, "the spy saw no write into the results folder"
    outside = [str(p.relative_to(root)) for p in in_root if not p.relative_to(root).parts[0].startswith(".staging-")]
    assert outside == []


def test_a_run_leaves_a_users_look_alike_temporaries_alone(tmp_path, previous):
    root = results_root()
    mine = {".report.html.v2.tmp": "mine\n", ".manifest.json.backup.tmp": "{mine}\n"}
    for name, text in mine.items():
        (root / name).write_text(text)
    nbs, params = make_study(tmp_path)
    run(nbs, params)
    assert {n: (root / n).read_text() for n in mine} == mine
    check_manifest(root, "study", ["01_a", "02_b"])


# --------------------------------------------------------------------------- whose folder


@pytest.mark.parametrize("inside", ["01_memory_fit", "failed", "runs/x/01_a", "runs"])
def test_no_folder_inside_the_studys_results_but_runs_name_is_claimed(tmp_path, monkeypatch, inside):
    """The issue: a refused run (K3LAB_RESULTS=results/01_memory_fit) marked that folder, and
    every run of the study refused it afterwards as a file no manifest lists."""
    study = tmp_path / "repo" / "results"
    (study / "01_memory_fit").mkdir(parents=True)
    (study / "01_memory_fit" / "table.csv").write_text("a\n")
    monkeypatch.setattr(transaction, "STUDY_RESULTS", study)
    monkeypatch.setattr(transaction, "REPO_ROOT", tmp_path / "repo")
    with pytest.raises(pipeline.PipelineError) as ei:
        transaction.claim(study / inside)
    assert "lies inside the study's results folder" in str(ei.value) and "\n" not in str(ei.value)
    assert not list(study.rglob(transaction.MARKER))
    transaction.claim(study / "runs" / "buyer")   # a what-if run's folder is k3lab's to make
    transaction.claim(study)
    assert (study / "runs" / "buyer" / transaction.MARKER).is_file() and (study / transaction.MARKER).is_file()


# --------------------------------------------------------------------------- interrupted runs


RUN_ID = "20990101T000000Z-4242"


def _cut_commit(root: Path, step: str, monkeypatch) -> None:
    staging = transaction.new_staging(root, RUN_ID)
    (staging / "01_a").mkdir()
    (staging / "01_a" / "table_a.csv").write_text("i,x,label\n0,9,new\n")
    transaction.io.write_json(staging / "manifest.json", {"run_id": RUN_ID, "files": {"01_a/table_a.csv": ""}})

    def fault(label):
        if label == step:
            raise KeyboardInterrupt

    monkeypatch.setattr(transaction, "FAULT", fault)
    with pytest.raises(KeyboardInterrupt):
        transaction.commit(staging, root, RUN_ID)
    monkeypatch.setattr(transaction, "FAULT", None)


def test_a_report_rebuilt_on_a_half_committed_folder_does_not_stop_the_next_run(tmp_path, previous, monkeypatch):
    """Issue 35: ``report`` on a folder whose commit was cut short wrote report.html beside
    ``.old-<run>/report.html``, and every later run refused ("both report.html and ...")."""
    root = results_root()
    (root / "report.html").write_text("the old run's report\n")   # REBUILDABLE: moved aside by a commit
    _cut_commit(root, "move 01_a in", monkeypatch)
    assert (root / f".old-{RUN_ID}" / "report.html").exists()
    # as the old `report` did: a report written straight into the half-committed folder ...
    (root / "report.html").write_text("rebuilt\n")
    pipeline.recover(root)   # ... no longer stops the rollback: the old run comes back whole
    assert (root / "report.html").read_text() == "the old run's report\n" and leftovers(root) == []
    # and `report` now finishes the interrupted commit itself, under the lock, before it writes
    (root / "report.html").unlink()
    _cut_commit(root, "move 01_a in", monkeypatch)
    monkeypatch.setattr(report, "build", lambda root, what_if, out: (out.write_text("page\n"), out)[1])
    report.rebuild(root)
    assert (root / "report.html").read_text() == "page\n" and leftovers(root) == []
    nbs, params = make_study(tmp_path)
    run(nbs, params)
    check_manifest(root, "study", ["01_a", "02_b"])


def test_a_report_on_a_folder_a_hand_run_changed_says_so_on_the_terminal(previous, monkeypatch, capsys):
    """The second attack: a notebook run by hand in JupyterLab writes into the study's ``results/<nb>/``
    and ``report`` rendered the mix with a note only inside the page. It now says so on stderr too,
    naming the file; a folder exactly as its run wrote it gets no warning."""
    root = results_root()
    monkeypatch.setattr(report, "build", lambda root, what_if, out: (out.write_text("page\n"), out)[1])
    report.rebuild(root)
    assert "warning" not in capsys.readouterr().err
    victim = next(p for p in sorted(root.glob("01_a/*.csv")))
    victim.write_text(victim.read_text() + "9,9,by hand\n")
    report.rebuild(root)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "k3lab report: warning:" in err
    assert f"01_a/{victim.name}: changed since run" in err and "python -m k3lab reproduce --replace-edited" in err


def test_ctrl_c_during_recovery_does_not_say_untouched(tmp_path, previous, monkeypatch, capsys):
    root = results_root()
    _cut_commit(root, "move 01_a in", monkeypatch)
    nbs, params = make_study(tmp_path)

    def fault(label):
        if label.startswith("move") and label.endswith("back"):
            raise KeyboardInterrupt

    monkeypatch.setattr(transaction, "FAULT", fault)
    real = pipeline.run
    monkeypatch.setattr(pipeline, "run", lambda profile, kernel, report=True, **_:
                        real(profile, kernel, report=False, params_dir=params, notebooks_dir=nbs))
    assert pipeline.main(["--profile", "study"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "untouched" not in err, err
    assert "cleaning up an earlier run's leftovers" in err and "the next run of any profile finishes" in err, err
    monkeypatch.setattr(transaction, "FAULT", None)
    pipeline.recover(root)
    assert snapshot(root) == previous and leftovers(root) == []



# --------------------------------------------------------------------------- what a killed run left running


CHILD_CELL = ("import subprocess, sys\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
              "print('child', child.pid)")


@pytest.mark.slow
def test_the_next_run_stops_what_a_killed_run_left_running(tmp_path, previous):
    """Issue 35: a SIGKILLed run can leave its kernel, or what the kernel started, running
    (ipykernel exits when its parent dies, the processes it started do not). The next run
    stops the kernel's process group before it removes the staging folder."""
    import nbformat

    from study_helpers import REPO, write_driver
    from test_faults import staged, stop_kernels, wait_for

    root = results_root()
    nbs, params = make_study(tmp_path, profiles={"kill": "defaults: {mode: offline, smoke: false}\n"
                                                         "notebooks: {01_a: {sleep_s: 120}}\n"})
    nb = nbformat.read(nbs / "01_a.ipynb", as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell(CHILD_CELL))
    nbformat.write(nb, nbs / "01_a.ipynb")
    # no pipes: what the kernel started would hold them open after the kill
    proc = subprocess.Popen([sys.executable, str(write_driver(tmp_path)), str(params), str(nbs), "--profile", "kill"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        wait_for(lambda: staged(root, "table_a.csv"), proc, "01_a to write its table")
    finally:
        proc.kill()
        proc.wait()
    staging = next(root.glob(".staging-*"))
    try:
        assert _running_for(staging), "the killed run left nothing running: the test does not test anything"
        run(nbs, params)
        deadline = time.monotonic() + 10   # SIGKILL is delivered at once; the reaper may take a moment
        while _running_for(staging) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = _running_for(staging)
    finally:
        stop_kernels(proc.pid)   # whatever happens, nothing of this test stays behind
    assert survivors == []
    assert leftovers(root) == []


def _running_for(staging: Path) -> list[int]:
    return processes_with_env(f"K3LAB_RESULTS={staging}")


# --------------------------------------------------------------------------- issue 35, hostile pass: D1, D3


@pytest.mark.parametrize("where", ["failed", "failed/03_fail.ipynb"])
def test_a_failed_notebook_is_never_kept_through_a_symlink(tmp_path, previous, where):
    """D1: a ``failed`` symlink (or ``failed/<id>.ipynb`` one) in a results folder sent k3lab's
    failed notebook over the user's decoy/03_fail.ipynb. The run still fails in one line, saying
    where nothing was kept; the user's file and link are as they were."""
    root = results_root()
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "03_fail.ipynb").write_text(USERS)
    if where == "failed":
        (root / "failed").symlink_to(decoy)
    else:
        (root / "failed").mkdir()
        (root / "failed" / "03_fail.ipynb").symlink_to(decoy / "03_fail.ipynb")
    nbs, params = make_study(tmp_path, "01_a", "03_fail")
    with pytest.raises(pipeline.PipelineError) as ei:
        run(nbs, params)
    msg = str(ei.value)
    assert "\n" not in msg and "boom on purpose" in msg and f"{where} is a symlink" in msg, msg
    assert (decoy / "03_fail.ipynb").read_text() == USERS and (root / where).is_symlink()
    assert snapshot(root) == previous and leftovers(root) == []


def test_a_users_empty_folder_in_a_notebooks_folder_stops_the_run(tmp_path, previous):
    """D3: an empty folder made inside results/01_a/ was deleted by the next run without a word."""
    root = results_root()
    (root / "01_a" / "mine").mkdir()
    nbs, params = make_study(tmp_path)
    with pytest.raises(pipeline.PipelineError) as ei:
        run(nbs, params)
    msg = str(ei.value)
    assert "\n" not in msg and "01_a/mine/" in msg and "no k3lab manifest lists" in msg, msg
    assert (root / "01_a" / "mine").is_dir() and snapshot(root) == previous


def test_a_hand_edit_of_the_runs_file_stops_the_run_unless_asked_to_replace_it(tmp_path, previous):
    """D3: a hand edit of results/01_a/table_a.csv was discarded by the next run; now the run
    refuses in one line naming the file and how to proceed, and --replace-edited replaces it."""
    root = results_root()
    victim = root / "01_a" / "table_a.csv"
    edited = victim.read_text() + "9,9,mine\n"
    victim.write_text(edited)
    nbs, params = make_study(tmp_path)
    with pytest.raises(pipeline.PipelineError) as ei:
        run(nbs, params)
    msg = str(ei.value)
    assert "\n" not in msg and "01_a/table_a.csv changed since the run that wrote it" in msg, msg
    assert "--replace-edited" in msg and "move the file or the folder away" in msg, msg
    assert victim.read_text() == edited and leftovers(root) == []
    pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs, replace_edited=True)
    assert victim.read_text() == previous["01_a/table_a.csv"][0].decode()
    check_manifest(root, "study", ["01_a", "02_b"])


def test_a_run_leaves_no_empty_folder_behind(tmp_path, previous):
    """The rule that makes an empty folder a user's: a committed run holds none (its staging
    folder's empty folders are pruned before the manifest), so a second run goes ahead."""
    root = results_root()
    nbs, params = make_study(tmp_path)
    run(nbs, params)
    assert [p for p in root.rglob("*") if p.is_dir() and not any(p.iterdir())] == []
    run(nbs, params)


def test_a_symlinked_report_is_neither_replaced_by_report_nor_swept_by_a_run(tmp_path, previous):
    """Beyond D1: report.html (rebuildable, so not in the manifest's check) as a symlink to a user's
    file: `report --results` refuses to rename over it, and a run refuses to move it aside."""
    root = results_root()
    users = tmp_path / "mine.html"
    users.write_text(USERS)
    (root / "report.html").unlink(missing_ok=True)
    (root / "report.html").symlink_to(users)
    with pytest.raises(pipeline.PipelineError, match="report.html is a symlink"):
        report.rebuild(root)
    nbs, params = make_study(tmp_path)
    with pytest.raises(pipeline.PipelineError, match="holds report.html, which no k3lab manifest lists"):
        run(nbs, params)
    assert (root / "report.html").is_symlink() and users.read_text() == USERS
