"""Run a measurement script of ``benchmarks/`` for a notebook in live mode.

A notebook never shells out itself: it calls :func:`run_benchmark`, which runs the script in
the environment it needs (the main ``.venv`` or ``.venv-sglang``) into a fresh folder and
returns that folder — or returns None after printing why it cannot (the environment is
missing), so a live cell says so and skips instead of failing or faking a number.
``K3LAB_SGLANG_PYTHON`` names the sglang environment's interpreter when it is not
``.venv-sglang`` (conda users; a path that does not exist makes the sglang cells skip).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..paths import REPO_ROOT

ENVIRONMENTS = {"main": Path(sys.executable), "sglang": REPO_ROOT / ".venv-sglang" / "bin" / "python"}
SGLANG_PYTHON_ENV = "K3LAB_SGLANG_PYTHON"


def interpreter(env: str) -> Path:
    """The Python of environment ``env`` (:data:`ENVIRONMENTS`; ``$K3LAB_SGLANG_PYTHON`` for sglang)."""
    if env == "sglang" and os.environ.get(SGLANG_PYTHON_ENV):
        return Path(os.environ[SGLANG_PYTHON_ENV])
    return ENVIRONMENTS[env]


def run_benchmark(script: str, args=(), env: str = "main", timeout_s: float = 1800,
                  out_dir=None) -> Path | None:
    """Run ``benchmarks/<script>`` with ``--out-dir <out_dir>`` (default: a new temporary folder)
    and ``args``; → the output folder.

    ``env``: ``main`` or ``sglang`` (:data:`ENVIRONMENTS`). Returns None, printing one line,
    when that environment does not exist here; RuntimeError with the script's last line if
    it fails.
    """
    if env not in ENVIRONMENTS:
        raise ValueError(f"env must be one of {sorted(ENVIRONMENTS)}, got {env!r}")
    py = interpreter(env)
    path = REPO_ROOT / "benchmarks" / script
    if not path.exists():
        raise ValueError(f"no such benchmark: benchmarks/{script}")
    if not py.exists():
        print(f"live: skipped benchmarks/{script}: the {env} environment is missing "
              f"({'make sglang-env, or ' + SGLANG_PYTHON_ENV + '=<its python>' if env == 'sglang' else 'make setup'})")
        return None
    # the notebook's own results folder keeps a live measurement with the run (and inside its
    # transaction); a temporary folder only when none is given
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
    else:
        out = Path(tempfile.mkdtemp(prefix=f"k3lab-{path.stem}-"))
    proc = subprocess.run([str(py), str(path), "--out-dir", str(out), *map(str, args)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode:
        last = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(f"benchmarks/{script} failed: {last[-1] if last else proc.returncode}")
    return out
