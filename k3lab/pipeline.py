"""Run the study's notebooks with papermill under a parameter profile — as one transaction.

``params/<profile>.yaml``::

    defaults:   {mode: offline, smoke: false}      # given to every notebook
    notebooks:  {01_memory_fit: {...}, ...}        # per-notebook overrides
    what_if:    false                              # true: a buyer's question (see below)

A run is a transaction (:mod:`k3lab.transaction`). Every notebook executes into a staging
folder; only when all of them, the ledger and the report succeeded are the staged files
moved into the target folder, with ``manifest.json`` (run id, start/end, git commit,
profile, versions, every file and its sha256) moved last, by a journal that a recovery
replays. An interrupted or failed run leaves the previous complete results untouched; the
next run of any profile removes its leftovers (and finishes or rolls back a half-done
commit). A second run while one is active fails at once (``.lock``, held with flock).

k3lab writes only into a results folder it made (a marker file; the repository's own
``results/``), never into the repository root or a folder holding git-tracked files, and
never deletes what no manifest of k3lab lists: a file (or empty folder) it did not write stops
the run, and so does a file it wrote that was changed since (``--replace-edited`` replaces it).
A failed notebook is kept in ``failed/``, never through a symlink in its place.

The study's profiles (``what_if: false``) write ``results/``. A what-if profile runs only
the notebooks it names and writes ``results/runs/<profile>/``, never over the study's
results. A profile may also be a file anywhere, given as a path (``--profile
/tmp/x/yours`` or ``.../yours.yaml``): its results always go to ``results/runs/<its
stem>/`` (``$K3LAB_RESULTS``), never over the study's results nor outside the results
folder; a name that would leave ``results/runs/`` is refused.

Before anything runs, every parameter of every notebook is checked against the notebook's
``parameters`` cell, by type and by value (:mod:`k3lab.param_values`; the notebooks check
them again themselves, ``k3lab.nbparams``, so a notebook run by hand fails the same way),
and every input of ``data/`` is loaded and checked (:func:`k3lab.data.check_all`, and each
model config against its published figures): a broken file stops the run in one line, with
nothing written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import data, io, nbparams, transaction
from .aiter_release import installed_release
from .cli_parser import OneLineParser
from .manifest import (FAILED, MANIFEST, REBUILDABLE, PipelineError, changed, read_manifest, sha256,  # noqa: F401
                       unlisted, verify)
from .paths import NOTEBOOKS_DIR, PARAMS_DIR, REPO_ROOT, results_root
from .specs import known_models, load_model
from .transaction import LOCK, commit, recover, run_lock  # noqa: F401  (the transaction's steps, as before)

KERNEL_NAME = "k3lab"
REQUIRED_PARAMETERS = ("mode", "smoke")
MODES = ("offline", "live")


@dataclass(frozen=True)
class Job:
    notebook: Path
    parameters: dict

    @property
    def notebook_id(self) -> str:
        return self.notebook.stem


def known_profiles(params_dir: Path = PARAMS_DIR) -> list[str]:
    return sorted(p.stem for p in Path(params_dir).glob("*.yaml"))


def notebooks(notebooks_dir: Path = NOTEBOOKS_DIR) -> list[Path]:
    """The study's notebooks, ``notebooks/NN_*.ipynb``, in order."""
    return sorted(p for p in Path(notebooks_dir).glob("[0-9][0-9]_*.ipynb"))


#: a profile's name, and the folder name of its results under ``results/runs/``
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def is_path(profile: str) -> bool:
    """A profile given as a file (it has a folder in it, or ends in .yaml / .yml), not a name of params/."""
    s = str(profile)
    return "/" in s or os.sep in s or s.endswith((".yaml", ".yml"))


def profile_file(profile: str, params_dir: Path = PARAMS_DIR) -> tuple[Path, str, str]:
    """(the profile's file, its name, how errors show the file) for a name of ``params/`` or a
    path (with or without ``.yaml``). PipelineError for an unknown one or a name that could
    not be a folder of ``results/runs/``."""
    s = str(profile)
    if not is_path(s):
        if not PROFILE_NAME.match(s):
            raise PipelineError(f"profile name {s!r}: use letters, digits, '.', '-' and '_' (a name of params/), "
                                f"or give the profile's file as a path")
        path = Path(params_dir) / f"{s}.yaml"
        if not path.exists():
            raise PipelineError(f"unknown profile {s!r}; known profiles: {', '.join(known_profiles(params_dir))}")
        return path, s, f"params/{path.name}"
    p = Path(s).expanduser()
    path = p if p.is_file() or p.suffix in (".yaml", ".yml") else p.with_name(p.name + ".yaml")
    name = path.stem
    if not PROFILE_NAME.match(name):
        raise PipelineError(f"profile {s!r}: its name {name!r} cannot name a folder of results/runs/ "
                            f"(use letters, digits, '.', '-' and '_', not starting with '.')")
    if p.is_dir() or path.is_dir():
        raise PipelineError(f"profile {s!r} is a directory, not a profile file (a YAML file like params/offline.yaml)")
    if not path.is_file():
        raise PipelineError(f"profile {s!r}: no such file ({path})")
    return path, name, s


def load_profile(name: str, params_dir: Path = PARAMS_DIR) -> dict:
    """Read and shape-check a profile (a name of ``params/`` or a path, :func:`profile_file`)
    → {defaults, notebooks, what_if, name, file, from_path}."""
    path, stem, shown = profile_file(name, params_dir)
    try:
        prof = data.read_yaml(path, where=shown)
    except data.DataError as e:
        raise PipelineError(str(e)) from None
    prof = prof or {}
    if not isinstance(prof, dict) or set(prof) - {"defaults", "notebooks", "what_if", "description"}:
        raise PipelineError(f"{shown}: top-level keys must be 'defaults', 'notebooks' and "
                            f"optionally 'what_if', 'description'; got "
                            f"{sorted(prof) if isinstance(prof, dict) else type(prof).__name__}")
    defaults = prof.get("defaults") or {}
    per_nb = prof.get("notebooks") or {}
    what_if = prof.get("what_if", False)
    if not isinstance(defaults, dict) or not isinstance(per_nb, dict) or not isinstance(what_if, bool):
        raise PipelineError(f"{shown}: 'defaults' and 'notebooks' must be mappings, 'what_if' true/false")
    for nb, p in per_nb.items():
        if p is not None and not isinstance(p, dict):
            raise PipelineError(f"{shown}: notebooks.{nb} must be a mapping of parameters")
    mode = defaults.get("mode", "offline")
    if mode not in MODES:
        raise PipelineError(f"{shown}: mode must be one of {MODES}, got {mode!r}")
    if what_if and not per_nb:
        raise PipelineError(f"{shown}: a what-if profile must name the notebooks it runs")
    return {"defaults": defaults, "notebooks": per_nb, "what_if": what_if, "name": stem, "file": shown,
            "from_path": is_path(name)}


def declared_parameters(notebook: Path) -> dict:
    """Names → default values declared in the notebook's ``parameters`` cell."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if not cells:
        raise PipelineError(f"{notebook.name}: no cell tagged 'parameters'")
    try:
        return nbparams.declared([cells[0].source])[0]
    except nbparams.ParameterError as e:
        raise PipelineError(f"{notebook.name}: {e}") from None


def plan(profile: str, params_dir: Path = PARAMS_DIR, notebooks_dir: Path = NOTEBOOKS_DIR) -> list[Job]:
    """Resolve a profile to the jobs to run, validating every parameter first."""
    prof = load_profile(profile, params_dir)
    nbs = {p.stem: p for p in notebooks(notebooks_dir)}
    unknown_nb = sorted(set(prof["notebooks"]) - set(nbs))
    if unknown_nb:
        raise PipelineError(f"profile {profile!r} names notebooks that do not exist: {unknown_nb}; "
                            f"notebooks: {sorted(nbs)}")
    jobs = []
    for nb_id, path in nbs.items():
        if prof["what_if"] and nb_id not in prof["notebooks"]:
            continue
        params = dict(prof["defaults"])
        params.update(prof["notebooks"].get(nb_id) or {})
        defaults = declared_parameters(path)
        for req in REQUIRED_PARAMETERS:
            if req not in defaults:
                raise PipelineError(f"{path.name}: its parameters cell must declare {req!r}")
        try:
            nbparams.validate(defaults, params)
        except nbparams.ParameterError as e:
            raise PipelineError(f"profile {profile!r}, {path.name}: {e}") from None
        jobs.append(Job(path, params))
    if not jobs:
        raise PipelineError("nothing to run: no notebooks/NN_*.ipynb found")
    return jobs


# --------------------------------------------------------------------------- the transaction


def target_dir(profile: str, what_if: bool, from_path: bool = False) -> Path:
    """Where a profile's results land: ``results/`` for the study's own profiles, else
    ``results/runs/<profile>/`` (a what-if profile, or one given as a path). PipelineError
    if that folder would not lie inside ``results/runs/``."""
    if not (what_if or from_path):
        return results_root()
    runs = results_root() / "runs"
    target = runs / profile
    if not PROFILE_NAME.match(str(profile)) or runs.resolve() not in target.resolve().parents:
        raise PipelineError(f"profile {profile!r}: its results would land outside {runs}")
    return target


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (git not available)"
    if out.returncode:
        return "unknown (not a git checkout)"
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("k3lab", "torch", "numpy", "pandas", "matplotlib", "papermill", "pydantic", "aiconfigurator-core"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    # the AITER release notebook 03 reads as files (installed beside the venv, never imported)
    try:
        out["amd-aiter"] = installed_release().version
    except (OSError, ValueError):
        out["amd-aiter"] = None
    return out


def manifest(staging: Path, run_id: str, profile: str, jobs: list[Job], started: str, what_if: bool = False) -> dict:
    """What ``manifest.json`` holds: the run, its profile and whether it is a what-if run (the
    report reads that here, never from where the folder lies), and every file with its sha256."""
    files = {str(p.relative_to(staging)): sha256(p) for p in sorted(staging.rglob("*"))
             if p.is_file() and not (p.parent == staging and p.name.startswith("."))}  # not the staging mark
    return {"run_id": run_id, "profile": profile, "what_if": what_if, "started_utc": started,
            "finished_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": git_commit(), "versions": versions(),
            "notebooks": {j.notebook_id: j.parameters for j in jobs}, "files": files}


def _error_line(e) -> str:
    """One line for a failed notebook cell (papermill's PapermillExecutionError)."""
    ename = getattr(e, "ename", type(e).__name__)
    evalue = str(getattr(e, "evalue", e)).strip().splitlines()
    cell = getattr(e, "exec_count", None)
    return f"cell [{cell}]: {ename}: {evalue[-1] if evalue else ''}"


def check_kernel(kernel_name: str) -> None:
    """PipelineError (one line) when no Jupyter kernel of that name is installed: said before
    anything runs, with the kernels there are, not as a notebook's failure after it started."""
    from jupyter_client.kernelspec import KernelSpecManager

    found = sorted(KernelSpecManager().find_kernel_specs())
    if kernel_name not in found:
        raise PipelineError(f"--kernel {kernel_name!r}: no Jupyter kernel of that name is installed; kernels found: "
                            f"{', '.join(found) or 'none'} (`make setup` installs {KERNEL_NAME!r})")


def run_job(job: Job, out_dir: Path, kernel_name: str = KERNEL_NAME) -> Path:
    """Execute one notebook with papermill into ``out_dir/<id>/<id>.ipynb``."""
    import papermill as pm

    d = out_dir / job.notebook_id
    d.mkdir(parents=True, exist_ok=True)
    out = d / f"{job.notebook_id}.ipynb"
    pm.execute_notebook(str(job.notebook), str(out), parameters=job.parameters,
                        kernel_name=kernel_name, cwd=str(job.notebook.parent),
                        progress_bar=False, log_output=False,
                        extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    os.chmod(out, 0o644)
    return out


def prune_empty_folders(staging: Path) -> None:
    """Remove the empty folders of a staged run (deepest first): a committed run holds none, so an
    empty folder in a results folder is a user's (:func:`k3lab.manifest.unlisted`)."""
    for d in sorted((p for p in staging.rglob("*") if p.is_dir() and not p.is_symlink()),
                    key=lambda p: len(p.parts), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()


def refuse_what_is_not_the_runs(target: Path, replace_edited: bool = False) -> None:
    """PipelineError (one line) when ``target`` holds what its last run did not write (a file or
    empty folder no manifest lists), or, unless ``replace_edited``, a file that run wrote and
    someone changed since (a hand edit, a notebook run by hand): a run replaces only what is
    exactly its predecessor's, so nothing a user put there is discarded silently."""
    stray = unlisted(target)
    if stray:
        raise transaction.unlisted_error(target, stray)
    edited = [] if replace_edited else changed(target)
    if edited:
        more = f" (and {len(edited) - 1} more)" if len(edited) > 1 else ""
        raise PipelineError(f"{_shown(target)}/{edited[0]}{more} changed since the run that wrote it: a run would "
                            f"replace your edits; move the file or the folder away to keep them, or run "
                            f"`python -m k3lab reproduce --replace-edited` to replace them")


def run(profile: str = "offline", kernel_name: str = KERNEL_NAME, report: bool = True,
        params_dir: Path = PARAMS_DIR, notebooks_dir: Path = NOTEBOOKS_DIR,
        replace_edited: bool = False) -> list[tuple[str, float]]:
    """Run a profile as one transaction; returns (notebook id, seconds) per notebook.
    ``replace_edited``: replace files of the previous run that were changed since it wrote them
    (:func:`refuse_what_is_not_the_runs`)."""
    jobs = plan(profile, params_dir, notebooks_dir)
    prof = load_profile(profile, params_dir)
    what_if, profile = prof["what_if"], prof["name"]
    target = target_dir(profile, what_if, prof["from_path"])
    check_kernel(kernel_name)
    data.check_all()  # every input of data/, before anything runs or is written
    for model in known_models():  # each model config against the figures it is published with
        load_model(model)
    for folder in dict.fromkeys((results_root(), target)):  # k3lab's own folders only (k3lab.transaction)
        transaction.claim(folder)
    timings = []
    with run_lock(target):
        try:
            for line in recover(target) + transaction.sweep(results_root(), skip=target):
                print(f"[k3lab] {line}", flush=True)
        except KeyboardInterrupt as e:  # a recovery cut short is not "untouched": its journal finishes it
            e.k3lab_pending = (f"it was cleaning up an earlier run's leftovers under {_shown(results_root())}, "
                               f"which the next run of any profile finishes")
            raise
        refuse_what_is_not_the_runs(target, replace_edited)
        started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        run_id = transaction.new_run_id()
        env_before = {k: os.environ.get(k) for k in ("K3LAB_RESULTS", nbparams.RUN_ENV)}
        try:
            staging = transaction.new_staging(target, run_id)
            os.environ["K3LAB_RESULTS"] = str(staging)
            os.environ[nbparams.RUN_ENV] = profile
            for job in jobs:
                t0 = time.perf_counter()
                print(f"[k3lab] running {job.notebook.name} ({profile})", flush=True)
                try:
                    run_job(job, staging, kernel_name)
                except Exception as e:  # a notebook cell raised: keep what it showed
                    kept = _keep_failed(staging, target, job)
                    raise PipelineError(f"{job.notebook.name} failed at {_error_line(e)} "
                                        f"(the executed notebook is kept at {kept}); "
                                        f"{target} is unchanged") from None
                timings.append((job.notebook_id, time.perf_counter() - t0))
                print(f"[k3lab]   done in {timings[-1][1]:.1f} s", flush=True)
            if report:
                from . import report as report_mod  # report imports compare/prices/notebook HTML: only when asked

                report_mod.build(staging, what_if=what_if)
            prune_empty_folders(staging)
            io.write_json(staging / MANIFEST, manifest(staging, run_id, profile, jobs, started, what_if))
            refuse_what_is_not_the_runs(target, replace_edited)  # written by hand while the notebooks ran
            commit(staging, target, run_id)
        except BaseException:
            _undo(target)
            raise
        finally:
            for k, v in env_before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    print(f"[k3lab] results: {_shown(target)}/ (manifest.json lists every file)", flush=True)
    return timings


def _undo(target: Path) -> None:
    """Roll back whatever the failed run left (its staging folder, a commit cut short). A
    second interruption here leaves the journal: the next run of any profile finishes it."""
    try:
        recover(target)
    except KeyboardInterrupt as e:
        e.k3lab_pending = f"the next run finishes undoing this one in {target}"
        raise


def _shown(p: Path) -> str:
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def _keep_failed(staging: Path, target: Path, job: Job) -> str:
    """Keep the executed notebook of a failed job at ``target/failed/<id>.ipynb``, written
    atomically and only if papermill's copy is whole JSON (a full disk cuts it short)."""
    src = staging / job.notebook_id / f"{job.notebook_id}.ipynb"
    dst = target / FAILED / f"{job.notebook_id}.ipynb"
    if not src.exists():
        return "(papermill wrote none)"
    try:
        text = src.read_text(encoding="utf-8")
        json.loads(text)
    except (OSError, ValueError):
        return "(none: papermill's copy is incomplete, was the disk full?)"
    for p, kind in ((dst.parent, "folder"), (dst, "file")):  # a link there would send k3lab's copy over a user's file
        plain = p.is_dir() if kind == "folder" else p.is_file()
        if p.is_symlink() or (p.exists() and not plain):
            what = "a symlink" if p.is_symlink() else f"not a plain {kind}"
            return f"(none: {_shown(p)} is {what}, which k3lab never writes through; move it away)"
    try:
        io.write_text(dst, text, tmp_dir=staging)  # a kill mid-write leaves its temporary in k3lab's staging folder
    except OSError as e:
        return f"(none: it could not be written: {e.strerror or e})"
    return _shown(dst)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m k3lab reproduce", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=os.environ.get("PROFILE", "offline"),
                    help="a name of params/ (default: offline; PROFILE= in make), or a profile file's path "
                         "(its results go to results/runs/<its name>/)")
    ap.add_argument("--kernel", default=KERNEL_NAME)
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--replace-edited", action="store_true",
                    help="replace files of the previous run that were changed since it wrote them (a notebook run "
                         "by hand); without it such a file stops the run")
    a = ap.parse_args(argv)
    try:
        run(a.profile, a.kernel, report=not a.no_report, replace_edited=a.replace_edited)
    except (PipelineError, data.DataError) as e:
        print(f"k3lab reproduce: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        pending = getattr(e, "k3lab_pending", None)
        print("k3lab reproduce: interrupted; " + (pending or "the previous results are untouched"), file=sys.stderr)
        return 130
    return 0
