"""The installed amd-aiter release (never imported): where it is, which files the parser reads.

:func:`installed_release` locates the ``pip --target`` install pinned by
``requirements/amd-aiter.txt`` and checks that every file the parser needs is there;
:func:`verify_record` checks those files against the wheel's ``RECORD`` hashes.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..paths import REPO_ROOT


def _pinned_version() -> str:
    """The pin of ``requirements/amd-aiter.txt`` (what ``make setup`` installs), stored once."""
    req = REPO_ROOT / "requirements" / "amd-aiter.txt"
    for line in req.read_text(encoding="utf-8").splitlines():
        if line.startswith("amd-aiter=="):
            return line.split("==", 1)[1].strip()
    raise ValueError("requirements/amd-aiter.txt has no 'amd-aiter==<version>' line")


#: The amd-aiter release on PyPI this package is written for (and the folder name's suffix).
AITER_PIN = _pinned_version()
#: Environment variable that may point at an install folder (overrides the default).
ENV_RELEASE_DIR = "K3LAB_AITER_RELEASE"
#: GPU architectures whose precompiled kernels the release ships (MI300 and MI355X).
ARCHS = ("gfx942", "gfx950")

# Files the parser reads, relative to the release folder.
F_ASM_MLA = "aiter_meta/csrc/py_itfs_cu/asm_mla.cu"
F_REDUCE = "aiter_meta/csrc/kernels/mla/reduce.cu"
F_META_V11 = "aiter_meta/csrc/kernels/mla/metadata/v1_1_device.cuh"
F_META_V12 = "aiter_meta/csrc/kernels/mla/metadata/v1_2_device.cuh"
F_CK_VARLEN = "aiter_meta/csrc/py_itfs_ck/mha_varlen_fwd_kernels.cu"
F_MLA_PY = "aiter/mla.py"
F_ATTN_PY = "aiter/ops/attention.py"
F_MHA_PY = "aiter/ops/mha.py"
REQUIRED_FILES = (F_ASM_MLA, F_REDUCE, F_META_V11, F_META_V12, F_CK_VARLEN,
                  F_MLA_PY, F_ATTN_PY, F_MHA_PY)


def hsa_mla(arch: str) -> str:
    """The folder of ``arch``'s precompiled MLA kernels, relative to the release."""
    return f"aiter_meta/hsa/{arch}/mla"


def hsa_fmha(arch: str) -> str:
    """The folder of ``arch``'s precompiled flash-attention fwd kernels, relative to the release."""
    return f"aiter_meta/hsa/{arch}/fmha_v3_fwd"


class ReleaseNotInstalled(FileNotFoundError):
    """The pinned AITER release folder is missing (run the install command it names)."""


class ReleaseFileMissing(FileNotFoundError):
    """The release folder lacks a file or folder the parser needs (named in the message)."""


@dataclass(frozen=True)
class Release:
    """An installed (never imported) AITER release: ``version`` and its ``folder``."""

    version: str
    folder: Path

    def path(self, rel: str) -> Path:
        """The file ``rel`` (relative to the release); ReleaseFileMissing naming it if absent."""
        p = self.folder / rel
        if not p.exists():
            raise ReleaseFileMissing(
                f"amd-aiter {self.version} at {show(self.folder)} lacks {rel!r}, which the "
                f"k3lab.aiter_release parser needs (reinstall the release, or the layout changed)")
        return p

    def read(self, rel: str) -> str:
        return self.path(rel).read_text(encoding="utf-8", errors="replace")


def show(p: Path) -> str:
    """A path for messages: relative to the repo when inside it (no machine paths)."""
    try:
        return str(Path(p).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def install_command(version: str = AITER_PIN) -> str:
    """The pip command (run at the repo root) that installs ``version`` never-imported."""
    return (f".venv/bin/pip install --no-deps --target .venv/amd-aiter-{version} "
            f"amd-aiter=={version}")


def dist_version(folder: Path) -> str:
    """The version in ``folder``'s ``amd_aiter-*.dist-info/METADATA``."""
    infos = sorted(folder.glob("amd_aiter-*.dist-info"))
    if not infos:
        raise ReleaseFileMissing(
            f"{show(folder)} has no amd_aiter-*.dist-info folder: not a pip --target install "
            f"of amd-aiter (expected amd_aiter-<version>.dist-info/METADATA)")
    meta = infos[-1] / "METADATA"
    if not meta.exists():
        raise ReleaseFileMissing(f"{show(folder)} lacks {infos[-1].name}/METADATA")
    m = re.search(r"^Version:\s*(\S+)", meta.read_text(encoding="utf-8", errors="replace"), re.M)
    if not m:
        raise ValueError(f"{infos[-1].name}/METADATA in {show(folder)} has no Version: line")
    return m.group(1)


def installed_release(version: str = AITER_PIN, folder: str | os.PathLike | None = None) -> Release:
    """Locate the installed AITER release → :class:`Release` (version, folder).

    Looks at ``folder`` if given, else ``$K3LAB_AITER_RELEASE``, else
    ``<repo>/.venv/amd-aiter-<version>``. Raises :class:`ReleaseNotInstalled` (naming the
    folder and the install command) when it is missing, :class:`ReleaseFileMissing` when a
    needed file is absent, ValueError when the installed version is not ``version``.
    """
    if folder is None:
        folder = os.environ.get(ENV_RELEASE_DIR) or (REPO_ROOT / ".venv" / f"amd-aiter-{version}")
    folder = Path(folder)
    if not folder.is_dir():
        raise ReleaseNotInstalled(
            f"amd-aiter {version} is not installed: missing folder {show(folder)}. Run `make setup` "
            f"or, at the repo root: {install_command(version)}")
    got = dist_version(folder)
    if got != version:
        raise ValueError(f"{show(folder)} holds amd-aiter {got}, expected {version}")
    rel = Release(got, folder)
    for f in REQUIRED_FILES:
        rel.path(f)
    for arch in ARCHS:
        rel.path(hsa_mla(arch))
        rel.path(hsa_fmha(arch))
    return rel


def verify_record(release: Release, files=REQUIRED_FILES) -> dict[str, str]:
    """Check ``files`` against the wheel's RECORD (sha256) → {file: sha256 hex}.

    ValueError naming a file whose bytes differ from what the wheel shipped (an edited
    install would make every derived rule suspect).
    """
    infos = sorted(release.folder.glob("amd_aiter-*.dist-info"))
    record = release.path(f"{infos[-1].name}/RECORD").read_text(encoding="utf-8")
    want = {}
    for line in record.splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[1].startswith("sha256="):
            want[parts[0]] = parts[1][len("sha256="):]
    out = {}
    for f in files:
        if f not in want:
            raise ValueError(f"{f} is not listed in the wheel's RECORD")
        digest = hashlib.sha256(release.path(f).read_bytes()).digest()
        b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        if b64 != want[f]:
            raise ValueError(f"{f} differs from the file amd-aiter {release.version} shipped "
                             f"(sha256 mismatch with RECORD)")
        out[f] = digest.hex()
    return out
