"""Which sglang releases this machine holds: their folders, versions and the pinned list.

Each release is installed with ``--no-deps`` into its own folder
(``.venv-sglang/releases/sglang-<version>``, see ``requirements/sglang-releases.txt``); the
sglang in ``.venv-sglang``'s own site-packages (0.5.16) counts too. Standard library only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from ...paths import REPO_ROOT
from ...versions import version_key  # noqa: F401  (re-exported: the matrix's order)

RELEASES_DIR_ENV = "K3LAB_SGLANG_RELEASES"


def releases_dir() -> Path:
    """The folder holding ``sglang-<version>`` installs (``$K3LAB_SGLANG_RELEASES`` overrides)."""
    env = os.environ.get(RELEASES_DIR_ENV)
    return Path(env) if env else REPO_ROOT / ".venv-sglang" / "releases"


def release_dir(version: str) -> Path:
    """``releases/sglang-<version>``; for a release ``make sglang-env`` puts beside the venv
    (``.venv-sglang/sglang-0.5.23``) that folder when the first is absent."""
    d = releases_dir() / f"sglang-{version}"
    legacy = REPO_ROOT / ".venv-sglang" / f"sglang-{version}"
    if not (d / "sglang").is_dir() and (legacy / "sglang").is_dir():
        return legacy
    return d


def _no_pythonpath_env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def site_version(python: str | None = None) -> str | None:
    """The sglang installed in ``python``'s own site-packages (``.venv-sglang``: 0.5.16)."""
    proc = subprocess.run([python or sys.executable, "-c",
                           "import importlib.metadata as m; print(m.version('sglang'))"],
                          capture_output=True, text=True, env=_no_pythonpath_env(), timeout=120)
    return proc.stdout.strip() if proc.returncode == 0 else None


def release_source(version: str, python: str | None = None) -> tuple[str, Path | None]:
    """Where ``version`` comes from: ``("folder", path)``, ``("site", None)`` or ``("missing", path)``."""
    d = release_dir(version)
    if (d / "sglang").is_dir():
        return "folder", d
    if site_version(python) == version:
        return "site", None
    return "missing", d


def requirements_versions(path: Path | None = None) -> list[str]:
    """The ``sglang==X`` pins of ``requirements/sglang-releases.txt`` in order."""
    p = Path(path) if path is not None else REPO_ROOT / "requirements" / "sglang-releases.txt"
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            m = re.fullmatch(r"sglang==(\S+)", line)
            if not m:
                raise ValueError(f"{p.name}: expected 'sglang==X', got {line!r}")
            out.append(m.group(1))
    return out


def installed_releases(python: str | None = None) -> list[str]:
    """Versions this machine can measure (release folders, and the venv's own), oldest first."""
    vs = set()
    for base in (releases_dir(), REPO_ROOT / ".venv-sglang"):
        if base.is_dir():
            vs |= {p.name[len("sglang-"):] for p in base.iterdir()
                   if p.name.startswith("sglang-") and (p / "sglang").is_dir()}
    own = site_version(python)
    if own:
        vs.add(own)
    return sorted(vs, key=version_key)
