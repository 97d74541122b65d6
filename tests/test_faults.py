"""Fault injection (issue 12): a ``reproduce`` process killed (SIGKILL) or interrupted
(SIGINT) at several points, a commit cut short at every step, and claims files that are
stray, truncated, foreign or inconsistent with their method.

The killed process is the real command line, ``k3lab.cli.main(["reproduce", ...])`` (what
``python -m k3lab reproduce`` runs), started from a small driver that points the pipeline at
the fixture notebooks and params of the test (``tests/fixtures/notebooks``: ``01_a`` and
``02_b`` write a CSV and can sleep, so a kill lands mid-notebook).
"""

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from k3lab import claims, data, io, pipeline, transaction
from k3lab.paths import results_root
from study_helpers import REPO, check_manifest, leftovers, make_study, processes_with_env, snapshot, write_driver


# --------------------------------------------------------------------------- helpers


def kernels_of(pid: int) -> list[int]:
    """Kernels a (possibly dead) k3lab process started: jupyter_client gives each one
    JPY_PARENT_PID=<its pid> and a session of its own, so they outlive a killed parent."""
    return processes_with_env(f"JPY_PARENT_PID={pid}")


def stop_kernels(pid: int) -> None:
    for k in kernels_of(pid):
        try:
            os.kill(k, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_reproduce(tmp_path: Path, nbs: Path, params: Path, profile: str) -> subprocess.Popen:
    driver = write_driver(tmp_path)
    env = dict(os.environ)
    env.pop("K3LAB_DEBUG", None)
    return subprocess.Popen([sys.executable, str(driver), str(params), str(nbs), "--profile", profile],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            # a Ctrl-C must reach Python's handler even if this test runs with SIGINT ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for(cond, proc: subprocess.Popen, what: str, timeout: float = 120.0) -> None:
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if cond():
            return
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"reproduce exited ({proc.returncode}) before {what}:\n{out}\n{err}")
        time.sleep(0.01)
    proc.kill()
    stop_kernels(proc.pid)
    pytest.fail(f"timed out waiting for {what}")


def finish(proc: subprocess.Popen, sig: int) -> tuple[str, str]:
    """Send ``sig`` to the reproduce process and wait for it → (stdout, stderr); it and the
    kernels it started (they outlive it) are gone afterwards whatever happens."""
    try:
        proc.send_signal(sig)
        return proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stop_kernels(proc.pid)


def staged(root: Path, pattern: str) -> bool:
    return any(p for st in root.glob(".staging-*") for p in st.rglob(pattern))


# --------------------------------------------------------------------------- SIGKILL


KILL_POINTS = {
    # profile overrides, and when to kill
    "during_first_notebook": ("notebooks: {01_a: {sleep_s: 120}}", lambda r: staged(r, "table_a.csv")),
    "during_second_notebook": ("notebooks: {02_b: {sleep_s: 120}}", lambda r: staged(r, "table_b.csv")),
    "between_notebooks": ("notebooks: {}", lambda r: staged(r, "01_a.ipynb") and staged(r, "02_b")),
}


@pytest.mark.slow
@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_sigkill_leaves_previous_results_and_next_run_cleans_up(tmp_path, previous, point):
    root = results_root()
    overrides, ready = KILL_POINTS[point]
    nbs, params = make_study(tmp_path, profiles={"kill": f"defaults: {{mode: offline, smoke: false}}\n{overrides}\n"})
    proc = start_reproduce(tmp_path, nbs, params, "kill")
    try:
        wait_for(lambda: ready(root), proc, point)
        # the run is live: a second run is refused at once and leaves the first one alone
        with pytest.raises(pipeline.PipelineError, match=rf"another k3lab run \(pid {proc.pid}\)"):
            pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs)
        assert list(root.glob(".staging-*")), "the refused run removed the live run's staging folder"
    finally:
        finish(proc, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    # the previous complete results, byte for byte; the kill left its staging and lock behind
    assert snapshot(root) == previous
    assert list(root.glob(".staging-*")) and (root / ".lock").exists()
    # plus temporary files as a write cut short by the kill leaves them: in its staging folder,
    # where every write of a run has its temporary (k3lab.io.atomic_path's tmp_dir)
    st = next(root.glob(".staging-*"))
    (st / "01_a" / ".table_a.csv.k1ll3d.tmp").write_text("half a table")
    (st / ".manifest.json.k1ll3d.tmp").write_text("{")
    # the next run takes the dead run's lock, removes its leftovers and succeeds
    pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs)
    assert leftovers(root) == []
    man = check_manifest(root, "study", ["01_a", "02_b"])
    assert man["run_id"] != json.loads(previous["manifest.json"][0])["run_id"]
    assert {"01_a/table_a.csv", "02_b/table_b.csv"} <= set(man["files"])


@pytest.mark.slow
def test_sigkill_of_a_what_if_run_is_cleaned_by_the_next_run_of_the_study(tmp_path, previous):
    """The issue: SIGKILL leaves .lock and .staging-* under results/runs/<name>/ until that
    same name runs again. Any run cleans them now."""
    root = results_root()
    nbs, params = make_study(tmp_path, profiles={"buyer": "what_if: true\nnotebooks: {01_a: {sleep_s: 120}}\n"})
    proc = start_reproduce(tmp_path, nbs, params, "buyer")
    try:
        wait_for(lambda: staged(root / "runs" / "buyer", "table_a.csv"), proc, "the what-if run's table")
    finally:
        finish(proc, signal.SIGKILL)
    assert leftovers(root / "runs" / "buyer") != []
    pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs)
    assert leftovers(root / "runs" / "buyer") == [] and leftovers(root) == []


# --------------------------------------------------------------------------- SIGINT


@pytest.mark.slow
def test_ctrl_c_exits_130_in_one_line_and_results_intact(tmp_path, previous):
    root = results_root()
    nbs, params = make_study(tmp_path, profiles={"slow": "defaults: {mode: offline, smoke: false}\n"
                                                         "notebooks: {01_a: {sleep_s: 120}}\n"})
    proc = start_reproduce(tmp_path, nbs, params, "slow")
    try:
        wait_for(lambda: staged(root, "table_a.csv"), proc, "01_a to write its table")
    finally:
        out, err = finish(proc, signal.SIGINT)
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert snapshot(root) == previous
    assert leftovers(root) == []
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert any(line.startswith("k3lab reproduce: interrupted") for line in lines), err
    assert len(lines) == 1, f"stderr is not one line:\n{err}"


# --------------------------------------------------------------------------- a commit cut short


def _fake_run(root: Path, tag: str, names: list[str]) -> None:
    """A complete run's files under ``root``, listed by its manifest."""
    for n in names:
        (root / n).mkdir(parents=True)
        (root / n / "table.csv").write_text(f"{tag},{n}\n")
    (root / "claims.csv").write_text(f"{tag}\n")
    files = {f"{n}/table.csv": "" for n in names} | {"claims.csv": ""}
    (root / "manifest.json").write_text(json.dumps({"run_id": tag, "files": files}))


class Killed(BaseException):
    """What transaction.FAULT raises: a process killed before that step."""


def _faulting(at: int | None, counter: dict):
    """A FAULT hook counting steps and raising Killed before step ``at`` (None: never)."""
    def fault(label):
        if counter["n"] == at:
            raise Killed(label)
        counter["n"] += 1
    return fault


def _run_cut(monkeypatch, fn, at: int | None) -> tuple[int, bool]:
    """Run ``fn()`` with a fault before step ``at`` → (steps taken, whether it was cut)."""
    counter = {"n": 0}
    monkeypatch.setattr(transaction, "FAULT", _faulting(at, counter))
    try:
        fn()
        return counter["n"], False
    except Killed:
        return counter["n"], True
    finally:
        monkeypatch.setattr(transaction, "FAULT", None)


def test_commit_and_recovery_cut_at_every_step_twice_in_a_row(tmp_path, monkeypatch):
    """Kill ``commit`` before each of its steps; then kill the recovery that follows before
    each of its steps; then kill the next recovery before each of its steps; then recover.
    Every path ends in the whole old run or the whole new one, with nothing left over: the
    issue's "second crash during recovery deletes restored results" cannot happen."""
    old_tag, new_tag = "20990101T000000Z-1", "20990101T000001Z-2"
    proto = tmp_path / "proto" / "target"
    _fake_run(proto, old_tag, ["01_a", "02_b", "03_c"])
    (proto / "README.md").write_text("kept\n")
    (proto / transaction.MARKER).write_text("")
    staging = transaction.new_staging(proto, new_tag)
    _fake_run(staging, new_tag, ["01_a", "02_b", "04_d"])
    old_snap = snapshot(proto)
    new_snap = snapshot(staging) | {"README.md": old_snap["README.md"]}
    cases = {"n": 0}

    def fresh(src: Path, name: str) -> Path:
        dst = tmp_path / "cases" / name / "target"
        shutil.rmtree(dst.parent, ignore_errors=True)
        shutil.copytree(src, dst, symlinks=True)
        return dst

    def commit_in(t: Path):
        return lambda: pipeline.commit(t / f".staging-{new_tag}", t, new_tag)

    def settled(t: Path, where: str) -> None:
        cases["n"] += 1
        got = snapshot(t)
        assert got in (old_snap, new_snap), f"{where}: neither the old nor the new run: {sorted(got)}"
        assert leftovers(t) == [], (where, leftovers(t))

    n_commit, cut = _run_cut(monkeypatch, commit_in(fresh(proto, "count")), None)
    assert not cut and n_commit >= 12
    for k in range(n_commit):
        after_commit = fresh(proto, f"c{k}")
        assert _run_cut(monkeypatch, commit_in(after_commit), k)[1]
        n_rec, _ = _run_cut(monkeypatch, lambda: pipeline.recover(fresh(after_commit, "r")), None)
        settled(tmp_path / "cases" / "r" / "target", f"commit cut at {k}")
        for j in range(n_rec):
            after_rec = fresh(after_commit, f"c{k}r{j}")
            assert _run_cut(monkeypatch, lambda: pipeline.recover(after_rec), j)[1]
            n_rec2, _ = _run_cut(monkeypatch, lambda: pipeline.recover(fresh(after_rec, "r2")), None)
            settled(tmp_path / "cases" / "r2" / "target", f"commit cut at {k}, recovery at {j}")
            for i in range(n_rec2):
                t = fresh(after_rec, "r3")
                assert _run_cut(monkeypatch, lambda: pipeline.recover(t), i)[1]
                pipeline.recover(t)
                settled(t, f"commit cut at {k}, recovery at {j}, recovery again at {i}")
    assert cases["n"] > 100


@pytest.mark.slow
def test_interrupted_commit_then_interrupted_rollback_keeps_the_previous_run(tmp_path, previous, monkeypatch):
    """The issue's sequence: Ctrl-C during the commit, Ctrl-C again during its rollback, then
    run again: the previous complete run is whole at every point after the rollback
    finishes, and the next run replaces it whole."""
    root = results_root()
    nbs, params = make_study(tmp_path)

    def fault(label):
        if label in ("move 02_b in", "move 01_a back out"):
            raise KeyboardInterrupt

    monkeypatch.setattr(transaction, "FAULT", fault)
    with pytest.raises(KeyboardInterrupt) as ei:
        pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs)
    monkeypatch.setattr(transaction, "FAULT", None)
    # says the undo is not finished, and where
    assert getattr(ei.value, "k3lab_pending", None) == f"the next run finishes undoing this one in {root}"
    assert list(root.glob(".commit-*.json")), "the journal must survive the second interruption"
    pipeline.recover(root)
    assert snapshot(root) == previous and leftovers(root) == []
    pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs)
    check_manifest(root, "study", ["01_a", "02_b"])
    assert leftovers(root) == []


# --------------------------------------------------------------------------- the lock


def _contend(folder: str, barrier, out) -> None:
    barrier.wait()
    fd = transaction.try_lock(Path(folder))
    out.put("held" if fd is not None else "refused")
    if fd is not None:
        time.sleep(0.3)   # hold it while the others try
        transaction.release(Path(folder), fd)


def test_a_stale_lock_with_four_contenders_gives_exactly_one_holder(tmp_path):
    """The issue: a stale .lock and four runs released at once gave 2-3 holders in 29 of 30
    trials. With flock, of any number of contenders exactly one holds the lock."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "results"
    folder.mkdir()
    for trial in range(12):
        (folder / ".lock").write_text(str(dead.pid))   # stale: its process is gone
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_contend, args=(str(folder), barrier, out)) for _ in range(4)]
        for p in procs:
            p.start()
        got = sorted(out.get(timeout=30) for _ in procs)
        for p in procs:
            p.join(30)
        assert got == ["held", "refused", "refused", "refused"], (trial, got)
        assert not (folder / ".lock").exists()


def test_a_killed_runs_leftovers_under_runs_are_cleaned_by_a_run_of_another_name(tmp_path, previous):
    """A what-if run killed under results/runs/<name>/ leaves .lock and .staging-*; the next
    run of any profile removes them (not only the next run of that name)."""
    root = results_root()
    other = root / "runs" / "killed"
    transaction.claim(other)
    (other / ".lock").write_text("999999999")               # its holder is gone (no flock held)
    (transaction.new_staging(other, "20990101T000000Z-7") / "01_a").mkdir()
    (other / "kept.csv").write_text("a user's file\n")      # not k3lab's: stays
    nbs, params = make_study(tmp_path)
    pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs)
    assert leftovers(other) == [] and (other / "kept.csv").read_text() == "a user's file\n"
    assert leftovers(root) == []


# --------------------------------------------------------------------------- a full disk


def test_the_failed_notebook_is_never_kept_truncated(tmp_path, monkeypatch):
    """On a full disk papermill's copy of the executed notebook is cut short, and so would be
    a copy of it: failed/ gets a whole notebook or none."""
    target = tmp_path / "results"
    staging = target / ".staging-x"
    job = pipeline.Job(Path("01_a.ipynb"), {})
    (staging / "01_a").mkdir(parents=True)
    nb = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    (staging / "01_a" / "01_a.ipynb").write_text(nb[: len(nb) // 2])
    assert "incomplete" in pipeline._keep_failed(staging, target, job)
    assert not (target / "failed" / "01_a.ipynb").exists()

    (staging / "01_a" / "01_a.ipynb").write_text(nb)
    real_write = Path.write_text

    def full_disk(self, text, *a, **kw):
        real_write(self, text[: len(text) // 3], *a, **kw)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    said = pipeline._keep_failed(staging, target, job)
    monkeypatch.undo()
    assert "No space left" in said
    assert not (target / "failed" / "01_a.ipynb").exists() and not list(target.rglob("*.tmp"))
    assert pipeline._keep_failed(staging, target, job).endswith("failed/01_a.ipynb")
    assert json.loads((target / "failed" / "01_a.ipynb").read_text()) == json.loads(nb)


# --------------------------------------------------------------------------- the ledger


def _claims_file(nb: str, overrides: dict | None = None, drop: tuple = ()) -> str:
    """A well-formed claims.csv for notebook ``nb`` from the registry; ``overrides`` maps
    claim id → column values to change."""
    import pandas as pd

    rows = []
    for c in claims.registry().values():
        if c.notebook != nb or c.id in drop:
            continue
        r = {"claim_id": c.id, "method": c.method, "reproduced": "", "bound": "",
             "verdict": "not reproducible here", "rule": c.rule,
             "evidence": f"hand-written evidence for {c.id} long enough to be cut in the middle", "notes": ""}
        r.update((overrides or {}).get(c.id, {}))
        rows.append(r)
    return pd.DataFrame(rows, columns=claims.RECORD_COLUMNS).to_csv(index=False, lineterminator="\n")


def _notebooks() -> list[str]:
    return sorted({c.notebook for c in claims.registry().values()})


def _claim_with(method: str):
    return next(c for c in claims.registry().values() if c.method == method)


@pytest.fixture
def ledger_root(monkeypatch):
    monkeypatch.delenv("K3LAB_DATA", raising=False)
    data.clear_cache()
    root = results_root()
    for nb in _notebooks():
        io.write_text(root / nb / "claims.csv", _claims_file(nb))
    return root


def test_hand_written_claims_files_make_a_ledger(ledger_root):
    df = claims.ledger(ledger_root)
    assert list(df["claim_id"]) == list(claims.registry())
    assert set(df["verdict"]) == {"not reproducible here"}


def test_a_stray_claims_file_is_never_read(ledger_root):
    """The issue's case: results/99_old/claims.csv turned T1 into '9999 reproduced'."""
    t1 = claims.get("T1")
    before = claims.ledger(ledger_root)
    stray = _claims_file(t1.notebook, {"T1": {"reproduced": "9999", "verdict": "reproduced", "method": "measured"}})
    io.write_text(ledger_root / "99_old" / "claims.csv", stray)
    io.write_text(ledger_root / "04_stale_copy" / "claims.csv", stray)
    after = claims.ledger(ledger_root)
    assert after.equals(before)
    assert "9999" not in set(after["reproduced"])


@pytest.mark.parametrize("keep", [0.0, 0.3, 0.6, 0.9, 0.97])
def test_a_truncated_claims_file_is_refused(ledger_root, keep):
    nb = claims.get("P2").notebook
    path = ledger_root / nb / "claims.csv"
    text = path.read_bytes()
    header_end = text.index(b"\n") + 1
    cut = max(header_end if keep else 0, int(len(text) * keep))
    cut = min(cut, len(text) - 2)                # never the whole file
    path.write_bytes(text[:cut])
    with pytest.raises(ValueError, match=re.escape(str(path))):
        claims.read_records(path, nb)
    with pytest.raises(ValueError, match=nb):
        claims.ledger(ledger_root)


def test_a_claims_file_cut_inside_its_last_row_is_refused(ledger_root):
    """Cut in the middle of the last row's evidence: every claim id is still there, but the
    row is not whole (no notes column, no newline)."""
    nb = claims.get("P2").notebook
    path = ledger_root / nb / "claims.csv"
    text = path.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    cut = len(text.rstrip("\n")) - len(last) + last.index("long enough")
    path.write_text(text[:cut])
    with pytest.raises(ValueError, match=re.escape(str(path))):
        claims.read_records(path, nb)


def test_a_missing_claims_file_is_refused(ledger_root):
    nb = claims.get("P2").notebook
    (ledger_root / nb / "claims.csv").unlink()
    with pytest.raises(ValueError, match=f"{nb}/claims.csv"):
        claims.ledger(ledger_root)


def test_a_claim_recorded_by_the_wrong_notebook(ledger_root):
    nb3, nb4 = claims.get("P2").notebook, claims.get("T1").notebook
    path = ledger_root / nb3 / "claims.csv"
    foreign = _claims_file(nb4).splitlines()[1:]
    t1 = next(line for line in foreign if line.startswith("T1,"))
    path.write_text(path.read_text() + t1 + "\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}.*T1 belongs to {nb4}, not {nb3}"):
        claims.read_records(path, nb3)


def test_reproduced_is_not_allowed_for_an_arithmetic_claim(ledger_root):
    c = _claim_with("arithmetic")
    path = ledger_root / c.notebook / "claims.csv"
    path.write_text(_claims_file(c.notebook, {c.id: {"verdict": "reproduced", "reproduced": "1"}}))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}.*{c.id}.*'reproduced'.*'arithmetic'"):
        claims.read_records(path, c.notebook)


def test_a_method_that_disagrees_with_the_registry(ledger_root):
    c = _claim_with("arithmetic")
    path = ledger_root / c.notebook / "claims.csv"
    path.write_text(_claims_file(c.notebook, {c.id: {"method": "derived", "verdict": "reproduced"}}))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}.*{c.id} method 'derived' != registry 'arithmetic'"):
        claims.read_records(path, c.notebook)


@pytest.mark.parametrize("change, match", [
    ({"verdict": "totally reproduced"}, "unknown verdict"),
    ({"claim_id": "Z99"}, "unknown claim 'Z99'"),
])
def test_other_bad_rows(ledger_root, change, match):
    c = claims.get("P2")
    path = ledger_root / c.notebook / "claims.csv"
    path.write_text(_claims_file(c.notebook, {"P2": change}))
    with pytest.raises(ValueError, match=match):
        claims.read_records(path, c.notebook)


def test_a_claim_recorded_twice(ledger_root):
    c = claims.get("P2")
    path = ledger_root / c.notebook / "claims.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + [next(line for line in lines if line.startswith("P2,"))]))
    with pytest.raises(ValueError, match="P2 recorded twice"):
        claims.read_records(path, c.notebook)
