"""What the pipeline tests share: a tiny study (fixture notebooks + profiles), a driver that
runs ``python -m k3lab reproduce`` on it, and readers of a results folder.

The notebooks are ``tests/fixtures/notebooks/`` (kernel ``k3lab``): ``01_a`` and ``02_b``
write a CSV through ``k3lab.io``; ``03_fail`` raises in a cell. Used by test_pipeline,
test_faults and test_cli_errors; the ``baseline`` / ``previous`` fixtures are in conftest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import textwrap
from pathlib import Path

from k3lab import pipeline

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "notebooks"
REPO = Path(__file__).resolve().parents[1]
STUDY = "defaults: {mode: offline, smoke: false}\nnotebooks: {}\n"

#: `python -m k3lab reproduce` with the pipeline pointed at a test's notebooks and params:
#: ``python driver.py PARAMS NOTEBOOKS [reproduce args]``
DRIVER = textwrap.dedent('''\
    import sys
    from pathlib import Path
    from k3lab import cli, pipeline

    _run = pipeline.run

    def run(profile, kernel_name=pipeline.KERNEL_NAME, report=True, replace_edited=False, **_):
        return _run(profile, kernel_name, report=False, params_dir=Path(sys.argv[1]),
                    notebooks_dir=Path(sys.argv[2]), replace_edited=replace_edited)

    pipeline.run = run
    sys.exit(cli.main(["reproduce", *sys.argv[3:]]))
''')


def make_study(root: Path, *names: str, profiles: dict | None = None) -> tuple[Path, Path]:
    """Copy fixture notebooks into ``root/notebooks`` and write ``root/params/*.yaml``."""
    nbs, params = root / "notebooks", root / "params"
    nbs.mkdir(parents=True, exist_ok=True)
    params.mkdir(parents=True, exist_ok=True)
    for n in names or ("01_a", "02_b"):
        shutil.copy(FIXTURES / f"{n}.ipynb", nbs / f"{n}.ipynb")
    for name, text in {"study": STUDY, **(profiles or {})}.items():
        (params / f"{name}.yaml").write_text(text, encoding="utf-8")
    return nbs, params


def write_driver(folder: Path) -> Path:
    driver = folder / "reproduce_driver.py"
    driver.write_text(DRIVER)
    return driver


@contextlib.contextmanager
def results_at(folder):
    """``K3LAB_RESULTS`` pointed at ``folder`` for the block, restored after."""
    before = os.environ.get("K3LAB_RESULTS")
    os.environ["K3LAB_RESULTS"] = str(folder)
    try:
        yield Path(folder)
    finally:
        if before is None:
            os.environ.pop("K3LAB_RESULTS", None)
        else:
            os.environ["K3LAB_RESULTS"] = before


def complete_run(base: Path) -> Path:
    """One complete study run (01_a, 02_b) under ``base`` (umask 022) → its results folder."""
    nbs, params = make_study(base)
    old_umask = os.umask(0o022)
    try:
        with results_at(base / "results"):
            pipeline.run("study", report=False, params_dir=params, notebooks_dir=nbs)
    finally:
        os.umask(old_umask)
    return base / "results"


def snapshot(root: Path) -> dict:
    """Every file under ``root`` but dot-files, failed/ and runs/ → (bytes, mode)."""
    out = {}
    if not root.exists():
        return out
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] in ("failed", "runs") or any(part.startswith(".") for part in rel.parts):
            continue
        if p.is_file():
            out[str(rel)] = (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
    return out


def leftovers(root: Path) -> list[str]:
    """What a finished or recovered run must not leave behind."""
    pats = (".staging-*", ".old-*", ".lock", ".commit-*")
    found = [p for pat in pats for p in root.glob(pat)] + list(root.rglob(".*.tmp"))
    return sorted(str(p.relative_to(root)) for p in found)


def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def check_manifest(root: Path, profile: str, notebook_ids: list[str]) -> dict:
    """manifest.json lists every file of the run with its sha256 (recomputed here)."""
    man = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    for key in ("run_id", "profile", "started_utc", "finished_utc", "git_commit", "versions", "notebooks", "files"):
        assert key in man, f"manifest.json has no {key!r}"
    assert man["profile"] == profile
    assert sorted(man["notebooks"]) == sorted(notebook_ids)
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
               and not any(part.startswith(".") for part in p.relative_to(root).parts)
               and p.relative_to(root).parts[0] not in ("failed", "runs", "README.md") and p.name != "manifest.json"}
    assert set(man["files"]) == on_disk
    for rel, digest in man["files"].items():
        assert sha256(root / rel) == digest, rel
    return man


@contextlib.contextmanager
def stand_in_band(family: str, metric: str = "decode", band_log: float = 0.1):
    """The committed fit with one family's metric validated at ``band_log`` (a stand-in): since
    issue 37 the B300's decode speed is not validated (one repository measured it) and compare,
    the decision and the perf/$ tables price nothing on it; tests of their arithmetic on a priced
    pair run inside this. What the committed fit itself says is tested without it."""
    from k3lab.serving import committed

    real = committed.fitted

    def fitted(fam):
        params, bands = real(fam)
        return params, ({**bands, metric: band_log} if fam == family else bands)

    committed.fitted = fitted
    try:
        yield
    finally:
        committed.fitted = real


def processes_with_env(entry: str) -> list[int]:
    """Live (not zombie) processes whose environment holds ``entry`` (``NAME=value``): how the
    tests find what a k3lab run started (Linux ``/proc``)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if entry.encode() in env and state != "Z":
            out.append(int(d.name))
    return out
