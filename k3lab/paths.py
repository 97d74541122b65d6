"""Where the project's data and results live.

``data/`` is read from the source tree (the package is installed editable by
``make setup``); ``K3LAB_DATA`` points elsewhere (the tests use it to feed the loader
broken copies). ``results/`` defaults to ``<repo>/results`` and can be redirected with
the environment variable ``K3LAB_RESULTS`` (the tests do this so that they never touch a
user's results).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT: Path = Path(__file__).resolve().parents[1]
DATA_DIR: Path = REPO_ROOT / "data"
NOTEBOOKS_DIR: Path = REPO_ROOT / "notebooks"
PARAMS_DIR: Path = REPO_ROOT / "params"
MEASURED_DIR: Path = DATA_DIR / "measured"
#: the study's own results folder, shipped with the repository (only its README.md is tracked)
STUDY_RESULTS: Path = REPO_ROOT / "results"


def data_dir() -> Path:
    """The data folder: ``$K3LAB_DATA`` if set, else ``<repo>/data``."""
    env = os.environ.get("K3LAB_DATA")
    return Path(env).resolve() if env else DATA_DIR


def _in_a_kernel() -> bool:
    """This process is a notebook's kernel (an IPython kernel app has started in it)."""
    app = sys.modules.get("ipykernel.kernelapp")
    return app is not None and app.IPKernelApp.initialized()


def results_root() -> Path:
    """The results folder: ``$K3LAB_RESULTS`` if set, else ``<repo>/results``. A relative
    ``$K3LAB_RESULTS`` is read from where the user ran the command: the process's folder, but in a
    notebook's kernel (which Jupyter starts in ``notebooks/``) the folder the shell that started it
    was in (``$PWD``, inherited); a kernel without one refuses it (ValueError, one line)."""
    env = os.environ.get("K3LAB_RESULTS")
    if not env:
        return STUDY_RESULTS
    p = Path(env).expanduser()
    if not p.is_absolute() and _in_a_kernel():
        start = os.environ.get("PWD", "")
        if not Path(start).is_absolute():
            raise ValueError(f"K3LAB_RESULTS={env!r} is a relative path, and this notebook's kernel cannot tell "
                             "where you started it: give an absolute path")
        p = Path(start) / p
    return p.resolve()


def results_dir(notebook_id: str, create: bool = True) -> Path:
    """The folder of one notebook's outputs, e.g. ``results/01_memory_fit``."""
    if not notebook_id or "/" in notebook_id or notebook_id.startswith("."):
        raise ValueError(f"bad notebook id {notebook_id!r}: expected a name like '01_memory_fit'")
    d = results_root() / notebook_id
    refuse_a_link(d)
    if create:
        d.mkdir(parents=True, exist_ok=True)
    return d


def refuse_a_link(d: Path) -> None:
    """ValueError (one line) when a notebook's output folder ``d`` is a symlink or not a folder: a
    link in its place would send the notebook's writes into a folder k3lab never made."""
    if d.is_symlink() or (d.exists() and not d.is_dir()):
        raise ValueError(f"{d} is {'a symlink' if d.is_symlink() else 'not a folder'}: k3lab writes a notebook's "
                         "outputs only into a folder it made; remove it or choose another K3LAB_RESULTS")


def data_path(*parts: str) -> Path:
    """A file under ``data/``; raises FileNotFoundError naming it if it is missing."""
    p = data_dir().joinpath(*parts)
    if not p.exists():
        raise FileNotFoundError(f"k3lab data file missing: data/{'/'.join(parts)}")
    return p
