"""Run the study's notebooks with papermill under a parameter profile.

``params/<profile>.yaml`` has two keys::

    defaults:   {mode: offline, smoke: false}      # given to every notebook
    notebooks:  {01_memory_fit: {...}, ...}        # per-notebook overrides

Every parameter is checked against the names the notebook declares in its cell tagged
``parameters`` *before anything runs* (papermill itself only warns about unknown
names). Each executed notebook is written to a temporary name under
``results/NN_*/`` and renamed when it finished, so an interrupted run leaves no
half-written notebook behind.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import io
from .paths import NOTEBOOKS_DIR, PARAMS_DIR, results_dir, results_root

KERNEL_NAME = "k3lab"
REQUIRED_PARAMETERS = ("mode", "smoke")
MODES = ("offline", "live")


class PipelineError(ValueError):
    """A profile or notebook that cannot be run as asked."""


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


def load_profile(name: str, params_dir: Path = PARAMS_DIR) -> dict:
    """Read and shape-check ``params/<name>.yaml``."""
    path = Path(params_dir) / f"{name}.yaml"
    if not path.exists():
        raise PipelineError(f"unknown profile {name!r}; known profiles: "
                            f"{', '.join(known_profiles(params_dir))}")
    with open(path, encoding="utf-8") as f:
        prof = yaml.safe_load(f) or {}
    if not isinstance(prof, dict) or set(prof) - {"defaults", "notebooks"}:
        raise PipelineError(f"{path.name}: top-level keys must be 'defaults' and 'notebooks', "
                            f"got {sorted(prof) if isinstance(prof, dict) else type(prof).__name__}")
    defaults = prof.get("defaults") or {}
    per_nb = prof.get("notebooks") or {}
    if not isinstance(defaults, dict) or not isinstance(per_nb, dict):
        raise PipelineError(f"{path.name}: 'defaults' and 'notebooks' must be mappings")
    mode = defaults.get("mode", "offline")
    if mode not in MODES:
        raise PipelineError(f"{path.name}: mode must be one of {MODES}, got {mode!r}")
    return {"defaults": defaults, "notebooks": per_nb}


def declared_parameters(notebook: Path) -> dict:
    """Names (→ inferred type) declared in the notebook's ``parameters`` cell."""
    import papermill as pm

    params = pm.inspect_notebook(str(notebook))
    if not params:
        raise PipelineError(f"{notebook.name}: no cell tagged 'parameters' (or it declares nothing)")
    return params


def plan(profile: str, only: list[str] | None = None, params_dir: Path = PARAMS_DIR,
         notebooks_dir: Path = NOTEBOOKS_DIR) -> list[Job]:
    """Resolve a profile to the jobs to run, validating every parameter name first."""
    prof = load_profile(profile, params_dir)
    nbs = {p.stem: p for p in notebooks(notebooks_dir)}
    unknown_nb = sorted(set(prof["notebooks"]) - set(nbs))
    if unknown_nb:
        raise PipelineError(f"profile {profile!r} names notebooks that do not exist: {unknown_nb}; "
                            f"notebooks: {sorted(nbs)}")
    if only:
        missing = sorted(set(only) - set(nbs))
        if missing:
            raise PipelineError(f"no such notebook(s): {missing}; notebooks: {sorted(nbs)}")
    jobs = []
    for nb_id, path in nbs.items():
        if only and nb_id not in only:
            continue
        params = dict(prof["defaults"])
        params.update(prof["notebooks"].get(nb_id) or {})
        declared = declared_parameters(path)
        for req in REQUIRED_PARAMETERS:
            if req not in declared:
                raise PipelineError(f"{path.name}: its parameters cell must declare {req!r}")
        undeclared = sorted(set(params) - set(declared))
        if undeclared:
            raise PipelineError(
                f"profile {profile!r} gives {path.name} parameter(s) {undeclared} that the "
                f"notebook does not declare; it declares: {sorted(declared)}")
        jobs.append(Job(path, params))
    if not jobs:
        raise PipelineError("nothing to run: no notebooks/NN_*.ipynb found")
    return jobs


def run_job(job: Job, kernel_name: str = KERNEL_NAME, progress: bool = False) -> Path:
    """Execute one notebook with papermill into ``results/<id>/<id>.ipynb`` atomically."""
    import papermill as pm

    out = results_dir(job.notebook_id) / f"{job.notebook_id}.ipynb"
    with io.atomic_path(out) as tmp:
        tmp_nb = tmp.with_suffix(".ipynb")
        try:
            pm.execute_notebook(str(job.notebook), str(tmp_nb), parameters=job.parameters,
                                kernel_name=kernel_name, cwd=str(job.notebook.parent),
                                progress_bar=progress, log_output=False)
            os.replace(tmp_nb, tmp)
        finally:
            if tmp_nb.exists():
                tmp_nb.unlink()
    return out


def run(profile: str = "offline", only: list[str] | None = None,
        kernel_name: str = KERNEL_NAME, report: bool = True, params_dir: Path = PARAMS_DIR,
        notebooks_dir: Path = NOTEBOOKS_DIR) -> list[tuple[str, float]]:
    """Run a profile end to end; returns (notebook id, seconds) per notebook.

    Every job is validated before the first one runs.
    """
    jobs = plan(profile, only, params_dir, notebooks_dir)
    timings = []
    for job in jobs:
        t0 = time.perf_counter()
        print(f"[k3lab] running {job.notebook.name} ({profile})", flush=True)
        run_job(job, kernel_name=kernel_name)
        dt = time.perf_counter() - t0
        timings.append((job.notebook_id, dt))
        print(f"[k3lab]   done in {dt:.1f} s -> results/{job.notebook_id}/", flush=True)
    if report:
        from . import report as report_mod

        path = report_mod.build(results_root())
        print(f"[k3lab] report: {path}", flush=True)
    return timings


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m k3lab reproduce", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=os.environ.get("PROFILE", "offline"))
    ap.add_argument("--only", nargs="*", help="notebook ids to run (default: all)")
    ap.add_argument("--kernel", default=KERNEL_NAME)
    ap.add_argument("--no-report", action="store_true")
    a = ap.parse_args(argv)
    try:
        run(a.profile, a.only, a.kernel, report=not a.no_report)
    except PipelineError as e:
        print(f"k3lab reproduce: error: {e}", file=sys.stderr)
        return 2
    return 0
