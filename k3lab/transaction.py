"""A results folder that is k3lab's own, and a run committed into it as one transaction.

**Ownership.** k3lab writes only into a folder it made: one holding its marker file
(:data:`MARKER`, written when k3lab creates the folder or finds it empty) or the study's own
``results/`` that ships with the repository (and the ``runs/<name>/`` below it; no other
folder inside it). :func:`claim` refuses the repository root (or a folder holding it), any
folder holding files tracked by git, and a folder that is not empty and not marked. In a
folder it owns, k3lab deletes only what a manifest of k3lab lists (``manifest.json``'s files,
the manifest itself, :data:`~k3lab.manifest.REBUILDABLE`), what a commit journal names, and
its own marked staging folders (where every temporary file of a run, its journal's and its
report's included, is written: :func:`k3lab.io.atomic_path`'s ``tmp_dir``). A dot-file that
merely looks like a temporary is never touched; :func:`k3lab.manifest.unlisted` names
anything else, and a run refuses to start while there is any.

**Lock.** ``<folder>/.lock`` is held with ``flock`` (exclusive, non-blocking): the kernel
releases it when its process dies, so a stale lock is simply free, and of any number of
contenders exactly one holds it. The holder writes its pid into it and removes it on release.
It is opened with ``O_NOFOLLOW`` and must be a plain file with one link: a symlink or a hard
link named ``.lock`` (to a user's file) is refused, never truncated.

**Commit.** :func:`commit` writes a journal (``.commit-<run id>.json``: the entries it will
move aside, the entries it will move in, the manifest last) before it moves anything, then
moves the old entries aside into ``.old-<run id>/``, the new ones in, and removes what the
journal names. :func:`recover` reads a journal and finishes the commit (the new manifest
landed) or rolls it back (it did not); every step of both is a move whose state on disk says
whether it happened, so a commit or a recovery cut short at any step, any number of times in
a row, ends in the whole old run or the whole new one. :data:`FAULT`, when set (tests), is
called with a label before every change on disk these functions make.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
import shutil
import signal
import stat
import subprocess
from pathlib import Path
from typing import Callable

from . import io
from .manifest import MANIFEST, REBUILDABLE, PipelineError, _managed, listed_files
from .paths import REPO_ROOT, STUDY_RESULTS

MARKER = ".k3lab-results"
MARKER_TEXT = ("A results folder made by k3lab (python -m k3lab reproduce). k3lab replaces in it only what\n"
               "its manifest.json lists; delete this file and k3lab will no longer write here.\n")
STAGING_MARK = ".k3lab-staging"
LOCK = ".lock"
JOURNAL = ".commit-"
#: a run id: UTC start time and pid (``20990101T000000Z-4242``)
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-\d+$")

#: fault injection (tests): called with a label before every change on disk of commit/recover
FAULT: Callable[[str], None] | None = None


def _step(label: str) -> None:
    if FAULT is not None:
        FAULT(label)


# --------------------------------------------------------------------------- ownership


def marked(folder: Path) -> bool:
    p = Path(folder) / MARKER
    return p.is_file() and not p.is_symlink()


def _study_place(folder: Path) -> str | None:
    """Where ``folder`` lies in the study's own ``results/``: ``"root"`` (results/ itself),
    ``"run"`` (``results/runs/<name>/``), ``"inside"`` (any other folder below results/, such as
    a notebook's ``results/01_memory_fit/``: never a results folder of its own), or None."""
    study = STUDY_RESULTS.resolve()
    if folder == study:
        return "root"
    if folder.parent == study / "runs":
        return "run"
    return "inside" if study in folder.parents else None


def _tracked(folder: Path) -> list[str]:
    """Files under ``folder`` that git tracks (empty outside a work tree or without git)."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "ls-files", "-z", "--", "."], capture_output=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode:
        return []
    return [s for s in out.stdout.decode("utf-8", "replace").split("\0") if s]


def claim(folder: Path) -> None:
    """Make sure ``folder`` is k3lab's to write (see the module docstring), creating and
    marking it if it does not exist or is empty. PipelineError (one line) otherwise."""
    folder = Path(folder).resolve()
    repo = REPO_ROOT.resolve()
    if folder == repo or folder in repo.parents:
        raise PipelineError(f"{folder} is the repository{' (or a folder holding it)' if folder != repo else ''}: "
                            f"k3lab never writes its results there; point K3LAB_RESULTS at a new or empty folder")
    if folder.exists() and not folder.is_dir():
        raise PipelineError(f"{folder} is not a folder; point K3LAB_RESULTS at a new or empty folder")
    place = _study_place(folder)
    if place == "inside":
        raise PipelineError(f"{folder} lies inside the study's results folder, which k3lab owns whole: its results go "
                            f"to results/ itself or results/runs/<name>/; point K3LAB_RESULTS at a folder outside it")
    if folder.exists():
        tracked = [t for t in _tracked(folder) if not (folder == STUDY_RESULTS.resolve() and t == "README.md")]
        if tracked:
            raise PipelineError(f"{folder} holds files tracked by git ({', '.join(tracked[:3])}"
                                f"{', ...' if len(tracked) > 3 else ''}): k3lab never writes its results there")
        if marked(folder):
            return
        # ownership is decided before any marker is written: a non-empty results/runs/<name>/ without
        # one is someone's folder (only results/ itself, shipped with the repository, is k3lab's unmarked)
        if place != "root" and any(folder.iterdir()):
            where = ("a new or empty folder" if place is None
                     else "a new or empty folder (or move its files out, or name the profile differently)")
            raise PipelineError(f"{folder} is not empty and not a k3lab results folder (no {MARKER}): k3lab writes "
                                f"only into a folder it made; point K3LAB_RESULTS at {where}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_marker(folder / MARKER)
    except PermissionError:
        raise PipelineError(f"cannot write to {folder} (permission denied)") from None


def _write_marker(path: Path) -> None:
    """Create the marker in place (no temporary beside it: a kill mid-write leaves a marker,
    never a stray dot-file that would make the folder look foreign); never through a link."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except FileExistsError:
        return  # a concurrent claim made it; marked() checks it is a file
    try:
        os.write(fd, MARKER_TEXT.encode())
    finally:
        os.close(fd)


def claim_owned(folder: Path) -> None:
    """A folder k3lab made (its marker), to write into without making or marking it:
    PipelineError (one line) for anything else, the repository and folders holding it included."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PipelineError(f"{folder}: no such folder")
    repo = REPO_ROOT.resolve()
    if folder.resolve() == repo or folder.resolve() in repo.parents or not marked(folder):
        raise PipelineError(f"{folder} is not a k3lab results folder (no {MARKER}): k3lab writes only into a folder "
                            f"it made")


def new_run_id() -> str:
    """A run id (:data:`RUN_ID`): the UTC time now and this process's pid."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"


# --------------------------------------------------------------------------- the lock


def _foreign_lock(folder: Path, why: str) -> PipelineError:
    return PipelineError(f"{Path(folder) / LOCK} is {why}, not k3lab's lock file: k3lab never writes through it; "
                         f"move it out of the way and run again")


def try_lock(folder: Path) -> int | None:
    """Take ``folder/.lock`` → its file descriptor, or None while another process holds it.
    PipelineError (one line) when ``.lock`` is a symlink, not a plain file, or a hard link
    (it could be a user's file): nothing is written to it."""
    lock = Path(folder) / LOCK
    while True:
        try:
            # O_NOFOLLOW: a symlink fails (ELOOP) instead of opening its target; O_NONBLOCK:
            # a FIFO named .lock cannot hang the open
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except PermissionError:
            raise PipelineError(f"cannot write to {folder} (permission denied)") from None
        except OSError as e:
            if lock.is_symlink():
                raise _foreign_lock(folder, "a symbolic link") from None
            raise PipelineError(f"cannot open {lock}: {e.strerror or e}") from None
        mine = os.fstat(fd)
        if not stat.S_ISREG(mine.st_mode) or mine.st_nlink > 1:
            os.close(fd)
            raise _foreign_lock(folder, "not a plain file" if not stat.S_ISREG(mine.st_mode)
                                else f"a hard link ({mine.st_nlink} names for one file)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            st = os.stat(lock, follow_symlinks=False)
            same = (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            return fd
        os.close(fd)  # its holder released and removed it between our open and our flock: again


def release(folder: Path, fd: int) -> None:
    """Remove the lock file while still holding it, then let go of it."""
    try:
        (Path(folder) / LOCK).unlink(missing_ok=True)
    finally:
        os.close(fd)


@contextlib.contextmanager
def run_lock(folder: Path):
    """Hold ``<folder>/.lock`` for the run; PipelineError if a live run holds it."""
    fd = try_lock(folder)
    if fd is None:
        try:
            pid = (Path(folder) / LOCK).read_text().strip() or "unknown"
        except OSError:
            pid = "unknown"
        raise PipelineError(f"another k3lab run (pid {pid}) is writing {folder}; wait for it "
                            f"or stop it (its lock is {LOCK})")
    try:
        yield
    finally:
        release(folder, fd)


# --------------------------------------------------------------------------- staging and commit


def new_staging(target: Path, run_id: str) -> Path:
    """``target/.staging-<run id>/``, marked as k3lab's."""
    staging = target / f".staging-{run_id}"
    staging.mkdir()
    (staging / STAGING_MARK).touch()
    return staging


def owned_names(target: Path) -> list[str]:
    """Top-level entries of ``target`` that a k3lab manifest lists (and the manifest itself,
    and :data:`REBUILDABLE`): what a commit moves aside."""
    names = {rel.split("/", 1)[0] for rel in listed_files(target)} | {MANIFEST, *REBUILDABLE}
    return sorted(p.name for p in _managed(target) if p.name in names)


def _journal(target: Path, run_id: str) -> Path:
    return target / f"{JOURNAL}{run_id}.json"


def commit(staging: Path, target: Path, run_id: str) -> None:
    """Move the staged run into ``target`` (module docstring): journal, old entries aside,
    new ones in, manifest last, then clean up."""
    new = sorted((p.name for p in staging.iterdir() if not p.name.startswith(".")), key=lambda n: (n == MANIFEST, n))
    if new[-1:] != [MANIFEST]:
        raise PipelineError(f"{staging}: no {MANIFEST} staged; nothing committed")
    aside = owned_names(target)
    _step("write journal")
    io.write_json(_journal(target, run_id), {"run_id": run_id, "old": aside, "new": new}, tmp_dir=staging)
    old = target / f".old-{run_id}"
    _step("make .old")
    old.mkdir(exist_ok=True)
    for n in aside:
        _step(f"move {n} aside")
        os.replace(target / n, old / n)
    for n in new:
        _step(f"move {n} in")
        os.replace(staging / n, target / n)
    _finish(target, run_id)


def _finish(target: Path, run_id: str) -> None:
    """The commit landed: remove the old entries, the staging folder, the journal."""
    for p in (target / f".old-{run_id}", target / f".staging-{run_id}"):
        if p.exists():
            _step(f"remove {p.name}")
            shutil.rmtree(p)
    _step("remove journal")
    _journal(target, run_id).unlink(missing_ok=True)


def _committed(target: Path, run_id: str) -> bool:
    if (target / f".staging-{run_id}" / MANIFEST).exists():
        return False
    try:
        return json.loads((target / MANIFEST).read_text(encoding="utf-8")).get("run_id") == run_id
    except (OSError, ValueError, AttributeError):
        return False


def _roll_back(target: Path, run_id: str, plan: dict) -> None:
    """Undo a commit that did not land, newest move first; each undo only if its move happened."""
    staging, old = target / f".staging-{run_id}", target / f".old-{run_id}"
    aside = set(plan["old"])
    for n in reversed(plan["new"]):
        # target/n is the new entry only while the old one of that name is aside (or never was)
        is_new = (target / n).exists() and (n not in aside or (old / n).exists())
        if is_new and not (staging / n).exists():
            _step(f"move {n} back out")
            os.replace(target / n, staging / n)
    for n in reversed(plan["old"]):
        if (old / n).exists():
            if (target / n).exists() and n in REBUILDABLE:
                # rebuilt (python -m k3lab report) while the commit was cut short: the old run's own
                # copy goes back over it, as the rest of the old run does
                _step(f"move {n} back over its rebuilt copy")
                os.replace(old / n, target / n)
                continue
            if (target / n).exists():
                raise PipelineError(f"{target}: both {n} and .old-{run_id}/{n} exist; "
                                    f"look at them (the journal {_journal(target, run_id).name} is kept)")
            _step(f"move {n} back")
            os.replace(old / n, target / n)
    if staging.exists():
        _step(f"remove {staging.name}")
        shutil.rmtree(staging)
    if old.exists():
        _step(f"remove {old.name}")
        old.rmdir()  # empty now; anything else in it is not k3lab's to delete
    _step("remove journal")
    _journal(target, run_id).unlink(missing_ok=True)


def recover(target: Path) -> list[str]:
    """Clean up what interrupted runs left in ``target`` (under its lock) → what it did.

    A journal → its commit is finished or rolled back (only what the journal names moves or
    goes); a staging folder of k3lab's (:data:`STAGING_MARK`, or empty) is removed, with any
    temporary file a kill left in it (every write of a run has its temporary there). Anything
    else is left alone — a dot-file that looks like a temporary too — and an ``.old-*`` folder
    without a journal is reported, never deleted."""
    done: list[str] = []
    target = Path(target)
    if not target.is_dir():
        return done
    for j in sorted(target.glob(f"{JOURNAL}*.json")):
        run_id = j.name[len(JOURNAL):-len(".json")]
        try:
            plan = json.loads(j.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            plan = None
        if not RUN_ID.match(run_id) or not isinstance(plan, dict) or plan.get("run_id") != run_id:
            raise PipelineError(f"{j}: not a commit journal k3lab can read; look at it and at "
                                f".old-{run_id}/ before removing them")
        if _committed(target, run_id):
            _finish(target, run_id)
            done.append(f"finished the interrupted commit of run {run_id}")
        else:
            _roll_back(target, run_id, plan)
            done.append(f"rolled back the interrupted commit of run {run_id}")
    for st in sorted(target.glob(".staging-*")):
        if (st / STAGING_MARK).exists():
            stopped = stop_processes_of(st)
            if stopped:
                done.append(f"stopped what the killed run of {st.name} left running (pid {', '.join(map(str, stopped))})")
            _step(f"remove {st.name}")
            shutil.rmtree(st)
        elif st.is_dir() and not any(st.iterdir()):
            st.rmdir()
        else:
            done.append(f"left {st.name} alone: not a staging folder of k3lab's")
            continue
        done.append(f"removed {st.name}")
    for old in sorted(target.glob(".old-*")):
        done.append(f"left {old.name} alone: no commit journal says what it holds")
    return done


def stop_processes_of(staging: Path) -> list[int]:
    """Kill what a killed run left running for ``staging``: its notebook's kernel (jupyter_client
    starts it in a session, hence a process group, of its own; ipykernel exits when its parent
    dies, but not what it started) and everything in that kernel's process group → their pids.

    A process is the run's only if its environment says ``K3LAB_RESULTS=<staging>`` (the
    pipeline sets it for the kernel, and children inherit it): a pid reused by anything else
    never matches. Linux (``/proc``) only; elsewhere nothing is found."""
    proc = Path("/proc")
    wanted = {f"K3LAB_RESULTS={p}".encode() for p in (Path(staging), Path(staging).resolve())}
    if not proc.is_dir():
        return []
    found = []
    for d in proc.iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = set((d / "environ").read_bytes().split(b"\0"))
        except OSError:  # gone, or another user's
            continue
        if env & wanted:
            found.append(int(d.name))
    own = os.getpgid(0)
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group != own:
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
    return sorted(found)


def sweep(root: Path, skip: Path) -> list[str]:
    """Recover every other k3lab results folder under ``root`` (``root`` itself and
    ``root/runs/<name>/``) that no live run holds: a killed run of any profile leaves
    nothing behind once any profile runs again. → lines saying what was done."""
    out: list[str] = []
    runs = root / "runs"
    folders = [root] + (sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else [])
    for d in folders:
        if d.resolve() == Path(skip).resolve() or not marked(d):
            continue
        try:
            fd = try_lock(d)
        except PipelineError as e:
            out.append(f"{d.name}: left alone: {e}")
            continue
        if fd is None:
            continue
        try:
            out += [f"{d.name}: {line}" for line in recover(d)]
        except (PipelineError, OSError) as e:
            out.append(f"{d.name}: {e}")
        finally:
            release(d, fd)
    return out


def unlisted_error(target: Path, files: list[str]) -> PipelineError:
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return PipelineError(f"{target} holds {shown}, which no k3lab manifest lists; k3lab never deletes what it did "
                         f"not write: move {'it' if len(files) == 1 else 'them'} out of the way (a notebook run by "
                         f"hand writes there) and run again")
