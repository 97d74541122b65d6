"""The reproduction spine as one transaction (issue 12): profiles and parameters checked
before anything runs, a run staged and committed with ``manifest.json`` last, a failed
notebook kept under ``results/failed/`` with the previous results untouched, a lock against
a second run, ``recover()`` after an interrupted commit, what-if runs under ``results/runs/``.

The notebooks are tiny fixtures (``tests/fixtures/notebooks/``, kernel ``k3lab``): ``01_a``
and ``02_b`` write a CSV through ``k3lab.io`` into ``nbparams``' results folder; ``03_fail``
raises in a cell. Runs use ``report=False`` (the report needs the study's own notebooks).
SIGKILL / SIGINT of a real ``reproduce`` process and the ledger live in tests/test_faults.py.
"""

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from k3lab import io, pipeline, transaction
from k3lab.paths import REPO_ROOT, results_root
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


def _laughs() -> str:
    """A ~600-byte profile whose list parameter nests aliases that expand to 9**9 entries."""
    nest = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    nest += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    return ("defaults: {mode: offline, smoke: false}\nnotebooks:\n  01_memory_fit:\n"
            f"    variants: [{', '.join(nest)}]\n")


def test_a_billion_laughs_profile_is_refused_at_once_in_one_line(tmp_path):
    """The issue: 587 bytes of nested aliases passed validation, then grew ~16 MB/s with no
    output. The loader counts what the aliases expand to before building anything."""
    import time

    params = tmp_path / "params"
    params.mkdir()
    (params / "laughs.yaml").write_text(_laughs())
    assert len(_laughs()) < 700
    t0 = time.perf_counter()
    with pytest.raises(pipeline.PipelineError) as ei:
        pipeline.run("laughs", report=False, params_dir=params)
    assert time.perf_counter() - t0 < 30
    msg = str(ei.value)
    assert msg.startswith("params/laughs.yaml: its aliases expand") and "\n" not in msg, msg
    assert not results_root().exists()


def test_a_number_too_long_to_read_names_the_profile_line_and_field(tmp_path):
    """Issue 35: a 5,000-digit context_tokens failed with Python's digit-limit message."""
    params = tmp_path / "params"
    params.mkdir()
    (params / "bad.yaml").write_text("defaults: {mode: offline, smoke: false}\nnotebooks:\n  01_memory_fit:\n"
                                     f"    context_tokens: {'9' * 5000}\n")
    with pytest.raises(pipeline.PipelineError) as ei:
        pipeline.run("bad", report=False, params_dir=params)
    assert str(ei.value) == ("params/bad.yaml: line 4: context_tokens: a number written with 5,000 digits "
                             "(at most 100 are read; no quantity here needs more)")
    assert not results_root().exists()


@pytest.mark.parametrize("notebook, given, says", [
    ("05_claims_ledger", "{mode: bogus}", "parameter 'mode': unknown 'bogus'; known: offline, live"),
    ("01_memory_fit", "{mem_fraction: .nan}", "parameter 'mem_fraction' must be a finite number, got nan"),
    ("01_memory_fit", "{layouts: []}", "parameter 'layouts' must not be empty"),
    ("04_throughput_perf_per_dollar", "{gpus: [mi999x]}", "parameter 'gpus': unknown 'mi999x'"),
    ("01_memory_fit", "{layouts: ['8xmi355x tq8']}", "parameter 'layouts': layout '8xmi355x tq8': unknown part"),
    ("01_memory_fit", "{context_tokens: 104857600}", "parameter 'context_tokens' must be 0 to 10,000,000"),
    ("01_memory_fit", "{model: deepseek-v3, context_tokens: 1000000}", "exceeds deepseek-v3's maximum of 163,840"),
    # issue 35: a 200,000-entry list ran until the kernel died
    ("04_throughput_perf_per_dollar", "{gpus: [" + ", ".join(["mi355x"] * 200_000) + "]}",
     "parameter 'gpus': its number of entries must be 0 to 1,000 entries"),
    ("04_throughput_perf_per_dollar", "{usd_per_gpu_hour: {mi355x: 1.0e+308}}", "0.01 to 1,000 $/GPU-hour"),
    ("04_throughput_perf_per_dollar", "{concurrencies: '1,x'}", "concurrency 'x' is not an integer"),
])
def test_every_parameter_of_every_notebook_is_checked_before_the_first_runs(tmp_path, notebook, given, says):
    """The issue: a per-notebook `mode: bogus` was caught only after notebooks 01 and 02 ran;
    `mem_fraction: .nan` said "its default must be a literal"; `layouts: []` said "max() arg
    is an empty sequence". Each is one line naming the notebook, before anything is written."""
    params = tmp_path / "params"
    params.mkdir()
    (params / "bad.yaml").write_text(f"defaults: {{mode: offline, smoke: false}}\nnotebooks: {{{notebook}: {given}}}\n")
    with pytest.raises(pipeline.PipelineError) as ei:
        pipeline.run("bad", report=False, params_dir=params)
    msg = str(ei.value)
    assert msg.startswith(f"profile 'bad', {notebook}.ipynb: ") and says in msg and "\n" not in msg, msg
    assert not results_root().exists()


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
    # 99_old: written by the previous run (its manifest lists it), not by this one
    (root / "99_old").mkdir()
    (root / "99_old" / "claims.csv").write_text("stale\n")
    man = json.loads((root / "manifest.json").read_text())
    man["files"]["99_old/claims.csv"] = hashlib.sha256(b"stale\n").hexdigest()  # as written: not a hand edit
    (root / "manifest.json").write_text(json.dumps(man))
    (root / "README.md").write_text("kept\n")
    (root / "runs" / "buyer").mkdir(parents=True)
    (root / "runs" / "buyer" / "x.csv").write_text("kept\n")
    nbs, params = make_study(tmp_path)
    run("study", nbs, params)
    man = check_manifest(root, "study", ["01_a", "02_b"])
    assert man["run_id"] != old_id
    assert not (root / "99_old").exists()          # listed by the old run only: gone with it
    assert (root / "README.md").read_text() == "kept\n"
    assert (root / "runs" / "buyer" / "x.csv").read_text() == "kept\n"
    assert leftovers(root) == []


@pytest.mark.parametrize("stray", ["notes.txt", "01_a/by_hand.csv", "mydata/important.csv", "99_old/claims.csv"])
def test_a_file_no_manifest_lists_stops_the_run_and_is_kept(tmp_path, previous, stray):
    """The issue's case: K3LAB_RESULTS at a folder holding a user's files deleted them. In a
    k3lab results folder, a file no manifest lists stops the run before anything runs."""
    root = results_root()
    (root / stray).parent.mkdir(parents=True, exist_ok=True)
    (root / stray).write_text("mine\n")
    before = snapshot(root)
    nbs, params = make_study(tmp_path)
    with pytest.raises(pipeline.PipelineError) as ei:
        run("study", nbs, params)
    msg = str(ei.value)
    assert stray in msg and "no k3lab manifest lists" in msg and "\n" not in msg, msg
    assert snapshot(root) == before and (root / stray).read_text() == "mine\n"
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


# --------------------------------------------------------------------------- whose folder it is


def _git_repo(path: Path, files: dict) -> Path:
    """A small git work tree at ``path`` with ``files`` (relative path → text) committed."""
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(git + cmd, check=True, capture_output=True)
    return path


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def test_results_at_the_repository_root_is_refused_and_nothing_is_deleted(tmp_path, monkeypatch):
    """The issue's case: K3LAB_RESULTS=. in a fresh clone deleted every tracked file. Here a
    stand-in clone (the module's REPO_ROOT pointed at it), then the real repository root."""
    clone = _git_repo(tmp_path / "clone", {"k3lab/x.py": "x = 1\n", "Makefile": "all:\n", "data/a.yaml": "a: 1\n"})
    before = _tree(clone)
    monkeypatch.setattr(transaction, "REPO_ROOT", clone)
    monkeypatch.setenv("K3LAB_RESULTS", str(clone))
    nbs, params = make_study(tmp_path / "study")
    with pytest.raises(pipeline.PipelineError, match=r"is the repository: k3lab never writes its results there"):
        run("study", nbs, params)
    with pytest.raises(pipeline.PipelineError, match=r"or a folder holding it"):
        transaction.claim(clone.parent)
    assert _tree(clone) == before and not (clone / transaction.MARKER).exists()
    monkeypatch.undo()
    with pytest.raises(pipeline.PipelineError, match="is the repository"):
        transaction.claim(REPO_ROOT)
    assert not (REPO_ROOT / transaction.MARKER).exists()


def test_results_at_a_users_folder_is_refused_and_nothing_is_deleted(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    for rel in ("notes.txt", "mydata/important.csv", "sub/deep/x.txt", ".hidden.tmp", "01_a/table_a.csv"):
        (mine / rel).parent.mkdir(parents=True, exist_ok=True)
        (mine / rel).write_text(f"{rel}\n")
    before = _tree(mine)
    monkeypatch.setenv("K3LAB_RESULTS", str(mine))
    nbs, params = make_study(tmp_path / "study")
    with pytest.raises(pipeline.PipelineError) as ei:
        run("study", nbs, params)
    assert "is not empty and not a k3lab results folder" in str(ei.value), ei.value
    assert _tree(mine) == before and not (mine / transaction.MARKER).exists()


def test_a_folder_holding_tracked_files_is_refused_even_when_marked(tmp_path, monkeypatch):
    repo = _git_repo(tmp_path / "repo", {"out/kept.csv": "a\n", f"out/{transaction.MARKER}": ""})
    before = _tree(repo)
    monkeypatch.setenv("K3LAB_RESULTS", str(repo / "out"))
    nbs, params = make_study(tmp_path / "study")
    with pytest.raises(pipeline.PipelineError, match=r"holds files tracked by git \(.*kept\.csv"):
        run("study", nbs, params)
    assert _tree(repo) == before


def test_an_empty_or_new_folder_becomes_k3labs(tmp_path, monkeypatch):
    for folder in (tmp_path / "empty", tmp_path / "new" / "deeper"):
        if folder.name == "empty":
            folder.mkdir()
        monkeypatch.setenv("K3LAB_RESULTS", str(folder))
        nbs, params = make_study(tmp_path / f"study-{folder.name}")
        run("study", nbs, params)
        assert (folder / transaction.MARKER).is_file()
        check_manifest(folder, "study", ["01_a", "02_b"])


def test_the_studys_own_results_folder_is_k3labs_with_its_tracked_readme(tmp_path, monkeypatch):
    """results/ ships with the repository (only its README.md is tracked): k3lab writes there
    without a marker at first, and never touches the README."""
    clone = _git_repo(tmp_path / "clone", {"results/README.md": "# results\n", "k3lab/x.py": "x = 1\n"})
    monkeypatch.setattr(transaction, "REPO_ROOT", clone)
    monkeypatch.setattr(transaction, "STUDY_RESULTS", clone / "results")
    transaction.claim(clone / "results")
    assert (clone / "results" / transaction.MARKER).is_file()
    assert (clone / "results" / "README.md").read_text() == "# results\n"
    (clone / "results" / "extra.md").write_text("x\n")
    subprocess.run(["git", "-C", str(clone), "add", "results/extra.md"], check=True)
    with pytest.raises(pipeline.PipelineError, match=r"tracked by git \(extra\.md\)"):
        transaction.claim(clone / "results")


# --------------------------------------------------------------------------- the lock


HOLD_LOCK = ("import sys, time\nfrom pathlib import Path\nfrom k3lab import transaction\n"
             "with transaction.run_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(120)\n")


def test_second_run_while_one_is_active_fails_at_once(tmp_path, previous):
    root = results_root()
    nbs, params = make_study(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
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


class Cut(BaseException):
    """Stands for a SIGKILL at one step of a commit (transaction.FAULT raises it)."""


def _cut_commit_at(root: Path, label: str, monkeypatch) -> None:
    """Stage a new run (01_a changed, 03_c new) and commit it, cut before step ``label``."""
    staging = transaction.new_staging(root, RUN_ID)
    (staging / "01_a").mkdir()
    (staging / "01_a" / "table_a.csv").write_text("i,x,label\n0,9,new\n")
    (staging / "03_c").mkdir()
    (staging / "03_c" / "table_c.csv").write_text("new\n")
    io.write_json(staging / "manifest.json", {"run_id": RUN_ID, "files": {"01_a/table_a.csv": "", "03_c/table_c.csv": ""}})

    def fault(step):
        if step == label:
            raise Cut(step)

    monkeypatch.setattr(transaction, "FAULT", fault)
    with pytest.raises(Cut):
        pipeline.commit(staging, root, RUN_ID)
    monkeypatch.setattr(transaction, "FAULT", None)


@pytest.mark.parametrize("label", ["make .old", "move 01_a aside", "move 02_b aside", "move 01_a in",
                                   "move 03_c in", "move manifest.json in"])
def test_recover_rolls_back_a_commit_cut_before_its_manifest_landed(previous, monkeypatch, label):
    root = results_root()
    _cut_commit_at(root, label, monkeypatch)
    done = pipeline.recover(root)
    assert any("rolled back" in line and RUN_ID in line for line in done), done
    assert snapshot(root) == previous
    assert leftovers(root) == []


@pytest.mark.parametrize("label", [f"remove .old-{RUN_ID}", f"remove .staging-{RUN_ID}", "remove journal"])
def test_recover_keeps_a_commit_whose_manifest_landed(previous, monkeypatch, label):
    root = results_root()
    _cut_commit_at(root, label, monkeypatch)
    pipeline.recover(root)
    assert (root / "01_a" / "table_a.csv").read_text() == "i,x,label\n0,9,new\n"
    assert (root / "03_c" / "table_c.csv").read_text() == "new\n" and not (root / "02_b").exists()
    assert json.loads((root / "manifest.json").read_text())["run_id"] == RUN_ID
    assert leftovers(root) == []


def test_recover_never_deletes_what_no_journal_or_manifest_names(previous):
    """An .old-* folder without a journal, a staging folder k3lab did not mark, a temporary
    name beside a file no manifest lists: reported or left, never deleted."""
    root = results_root()
    (root / f".old-{RUN_ID}" / "01_a").mkdir(parents=True)
    (root / f".old-{RUN_ID}" / "01_a" / "mine.csv").write_text("mine\n")
    (root / ".staging-mine" / "x").mkdir(parents=True)
    (root / "01_a" / ".notes.txt.abcd1234.tmp").write_text("mine\n")
    done = pipeline.recover(root)
    assert (root / f".old-{RUN_ID}" / "01_a" / "mine.csv").read_text() == "mine\n"
    assert (root / ".staging-mine" / "x").is_dir() and (root / "01_a" / ".notes.txt.abcd1234.tmp").exists()
    assert any(f".old-{RUN_ID} alone" in line for line in done) and any(".staging-mine alone" in line for line in done)


def test_recover_removes_staging_with_its_temporaries_and_no_look_alike(previous):
    """A killed run's temporaries lie in its marked staging folder, which goes whole; a
    dot-file beside the results that merely looks like a temporary (issue 35:
    ``.report.html.v2.tmp``, ``.manifest.json.backup.tmp``) is a user's, and stays."""
    root = results_root()
    st = transaction.new_staging(root, "20990101T000000Z-1")
    (st / "01_a").mkdir()
    (st / "01_a" / ".table_a.csv.x1y2.tmp").write_text("half")        # a write cut short by the kill
    (st / ".commit-20990101T000000Z-1.json.abcd.tmp").write_text("{")  # the journal's, cut short
    (root / ".staging-20990101T000000Z-2").mkdir()   # made, killed before its mark
    mine = {".report.html.v2.tmp": "my report\n", ".manifest.json.backup.tmp": "{my backup}\n",
            ".manifest.json.abcd.tmp": "mine too\n"}
    for name, text in mine.items():
        (root / name).write_text(text)
    pipeline.recover(root)
    assert snapshot(root) == previous
    assert not list(root.glob(".staging-*"))
    assert {n: (root / n).read_text() for n in mine} == mine
    assert sorted(leftovers(root)) == sorted(mine)   # the user's, not k3lab's


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


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_no_json_k3lab_writes_holds_nan_or_infinity(tmp_path, bad):
    """Issue 35: ``compare --json`` printed ``Infinity``, which no strict JSON reader takes."""
    with pytest.raises(ValueError, match="NaN or an infinity") as ei:
        io.json_text({"rows": [{"usd": bad}]})
    assert "\n" not in str(ei.value)
    with pytest.raises(ValueError):
        io.write_json(tmp_path / "x.json", {"usd": bad})
    assert os.listdir(tmp_path) == []   # nothing half-written, no temporary left
    assert json.loads(io.json_text({"usd": None, "n": 1.5})) == {"usd": None, "n": 1.5}


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
