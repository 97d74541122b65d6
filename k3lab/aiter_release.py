"""Finding 3 from AITER's real release: which head counts per rank each AITER kernel accepts.

k3lab.attention types AITER's head rules by hand. This module derives them instead, by
reading the files of the AITER release that ``pip`` installs, **without importing it**
(``import aiter`` needs ROCm). It parses:

* the C++ checks of the MLA entry points (``TORCH_CHECK`` conditions and ``gqa_ratio == N``
  branches of ``mla_prefill_asm_fwd`` / ``mla_decode_stage1_asm_fwd`` in
  ``aiter_meta/csrc/py_itfs_cu/asm_mla.cu``), the head-count cases compiled into
  ``mla_reduce_v1`` (``aiter_meta/csrc/kernels/mla/reduce.cu``) and the persistent-metadata
  checks (``aiter_meta/csrc/kernels/mla/metadata/v1_*_device.cuh``);
* the Python dispatch in ``aiter/mla.py`` (``get_meta_param``, ``mla_decode_fwd``,
  ``mla_prefill_fwd``), ``aiter/ops/attention.py`` (``get_mla_metadata_info_v1``) and
  ``aiter/ops/mha.py`` (``_flash_attn_varlen_forward`` / ``can_impl_fmha_v3_fwd``);
* the precompiled ASM kernels shipped per architecture, ``aiter_meta/hsa/<arch>/mla/*.co``
  and ``aiter_meta/hsa/<arch>/fmha_v3_fwd/**/*.co``, whose file names state the heads a
  kernel was built for (``mqa16``, ``qh128``, ``gqaratio16``; ``fwd_hd192_hd128``);
* the CK flash-attention fallback's checks (``aiter_meta/csrc/py_itfs_ck/mha_varlen_fwd_kernels.cu``).

Architectures: ``gfx942`` = MI300X/MI325X, ``gfx950`` = MI350X/MI355X.

"Heads" below always means **query heads per rank (per GPU)**. In absorbed MLA (prefill
with a prefix, decode) there is one KV head, so heads per rank = q/kv ratio (``gqa_ratio``).
In MHA-form MLA prefill (a cold prefill: q/k head dim 192, v head dim 128 for Kimi K3,
from ``qk_nope_head_dim`` 128 + ``qk_rope_head_dim`` 64 and ``v_head_dim`` 128) each q head
has its own k/v head.

The release pinned here is the only ``amd-aiter`` on PyPI: **0.1.7.post2.dev18**, uploaded
2025-11-18T06:57:42Z (wheel ``amd_aiter-0.1.7.post2.dev18-py3-none-any.whl``, 40,189,929
bytes; 169 MiB in 9,474 files once installed, 373 of them .pyc that pip compiles). Its sources are byte-identical to ROCm/aiter
``main`` at commit e6015f3a (2025-11-18). AITER's later releases (v0.1.8 … v0.1.20) are
published as GitHub release wheels only, not on PyPI. Install it, never imported, with::

    .venv/bin/pip install --no-deps --target .venv/amd-aiter-0.1.7.post2.dev18 amd-aiter==0.1.7.post2.dev18

No code here is copied from AITER; each derived rule names the file and check it comes from.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: The amd-aiter release on PyPI this module is written for (and the folder name's suffix).
AITER_PIN = "0.1.7.post2.dev18"
#: Environment variable that may point at an install folder (overrides the default).
ENV_RELEASE_DIR = "K3LAB_AITER_RELEASE"
#: GPU architectures whose precompiled kernels the release ships (MI300 and MI355X).
ARCHS = ("gfx942", "gfx950")

#: Kernel families, in table order.
FAMILIES = (
    "mla_prefill_asm",      # absorbed-form MLA prefill, bf16, mla_prefill_asm_fwd
    "mla_prefill_ps_asm",   # MHA-form fp8 persistent MLA prefill, mla_prefill_ps_asm_fwd
    "mla_decode_asm",       # absorbed-form MLA decode, non-persistent (mla_decode_fwd)
    "mla_decode_asm_ps",    # absorbed-form MLA decode, persistent mode (bf16 / fp8 `_ps` kernels)
    "mla_reduce_v1_dv128",  # split-KV reduction mla_reduce_v1 at v head dim 128 (MHA-form prefill)
    "mla_reduce_v1_dv512",  # mla_reduce_v1 at v head dim 512 (= kv_lora_rank, absorbed decode)
    "fmha_v3_fwd",          # ASM flash-attention fwd (flash_attn_varlen_func), qk 192 / v 128
    "mha_fwd_ck",           # CK flash-attention fwd fallback (mha_varlen_fwd), JIT-compiled
)

_REPO_ROOT = Path(__file__).resolve().parents[1]

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


def _hsa_mla(arch: str) -> str:
    return f"aiter_meta/hsa/{arch}/mla"


def _hsa_fmha(arch: str) -> str:
    return f"aiter_meta/hsa/{arch}/fmha_v3_fwd"


class ReleaseNotInstalled(FileNotFoundError):
    """The pinned AITER release folder is missing (run the install command it names)."""


class ReleaseFileMissing(FileNotFoundError):
    """The release folder lacks a file or folder the parser needs (named in the message)."""


# --------------------------------------------------------------------------- the release

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
                f"amd-aiter {self.version} at {_show(self.folder)} lacks {rel!r}, which the "
                f"k3lab.aiter_release parser needs (reinstall the release, or the layout changed)")
        return p

    def read(self, rel: str) -> str:
        return self.path(rel).read_text(encoding="utf-8", errors="replace")


def _show(p: Path) -> str:
    """A path for messages: relative to the repo when inside it (no machine paths)."""
    try:
        return str(Path(p).resolve().relative_to(_REPO_ROOT))
    except ValueError:
        return str(p)


def install_command(version: str = AITER_PIN) -> str:
    """The pip command (run at the repo root) that installs ``version`` never-imported."""
    return (f".venv/bin/pip install --no-deps --target .venv/amd-aiter-{version} "
            f"amd-aiter=={version}")


def _dist_version(folder: Path) -> str:
    infos = sorted(folder.glob("amd_aiter-*.dist-info"))
    if not infos:
        raise ReleaseFileMissing(
            f"{_show(folder)} has no amd_aiter-*.dist-info folder: not a pip --target install "
            f"of amd-aiter (expected amd_aiter-<version>.dist-info/METADATA)")
    meta = infos[-1] / "METADATA"
    if not meta.exists():
        raise ReleaseFileMissing(f"{_show(folder)} lacks {infos[-1].name}/METADATA")
    m = re.search(r"^Version:\s*(\S+)", meta.read_text(encoding="utf-8", errors="replace"), re.M)
    if not m:
        raise ValueError(f"{infos[-1].name}/METADATA in {_show(folder)} has no Version: line")
    return m.group(1)


def installed_release(version: str = AITER_PIN, folder: str | os.PathLike | None = None) -> Release:
    """Locate the installed AITER release → :class:`Release` (version, folder).

    Looks at ``folder`` if given, else ``$K3LAB_AITER_RELEASE``, else
    ``<repo>/.venv/amd-aiter-<version>``. Raises :class:`ReleaseNotInstalled` (naming the
    folder and the install command) when it is missing, :class:`ReleaseFileMissing` when a
    needed file is absent, ValueError when the installed version is not ``version``.
    """
    if folder is None:
        folder = os.environ.get(ENV_RELEASE_DIR) or (_REPO_ROOT / ".venv" / f"amd-aiter-{version}")
    folder = Path(folder)
    if not folder.is_dir():
        raise ReleaseNotInstalled(
            f"amd-aiter {version} is not installed: missing folder {_show(folder)}. Run `make setup` "
            f"or, at the repo root: {install_command(version)}")
    got = _dist_version(folder)
    if got != version:
        raise ValueError(f"{_show(folder)} holds amd-aiter {got}, expected {version}")
    rel = Release(got, folder)
    for f in REQUIRED_FILES:
        rel.path(f)
    for arch in ARCHS:
        rel.path(_hsa_mla(arch))
        rel.path(_hsa_fmha(arch))
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


# --------------------------------------------------------------------------- C/C++ and Python text

_C_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)


def _blank_c_comments(text: str) -> str:
    """Replace C/C++ comments by spaces (newlines kept) so offsets and line numbers survive."""
    def sub(m):
        s = m.group(0)
        return s if s.startswith('"') else re.sub(r"[^\n]", " ", s)
    return _C_TOKENS.sub(sub, text)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _match_close(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket closing the one at ``i`` (strings skipped)."""
    depth, j, n = 0, i, len(text)
    while j < n:
        c = text[j]
        if c == '"':
            j += 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ValueError(f"unbalanced {open_ch}{close_ch} from offset {i}")


def _c_function(text: str, name: str, file: str) -> tuple[int, str]:
    """(offset, body) of the C++ function ``name`` in comment-blanked ``text``."""
    m = re.search(rf"\bvoid\s+{re.escape(name)}\s*\(", text)
    if not m:
        raise ValueError(f"{file}: function {name}() not found (release layout not understood)")
    close = _match_close(text, m.end() - 1, "(", ")")
    brace = text.index("{", close)
    end = _match_close(text, brace, "{", "}")
    return brace, text[brace:end + 1]


def _checks(body: str, offset: int, text: str) -> list[tuple[str, int]]:
    """(condition, line) of every TORCH_CHECK / AITER_CHECK in ``body``: the first argument."""
    out = []
    for m in re.finditer(r"\b(?:TORCH|AITER)_CHECK\s*\(", body):
        j, depth = m.end(), 1
        start = j
        while j < len(body):
            c = body[j]
            if c == '"':
                j = body.index('"', j + 1)
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    break
            elif c == "," and depth == 1:
                break
            j += 1
        cond = " ".join(body[start:j].split())
        out.append((cond, _line_of(text, offset + m.start())))
    return out


def _py_function(text: str, name: str, file: str) -> tuple[int, str]:
    """(offset, source) of the top-level Python function ``name``."""
    m = re.search(rf"^def {re.escape(name)}\(", text, re.M)
    if not m:
        raise ValueError(f"{file}: def {name}() not found (release layout not understood)")
    nxt = re.compile(r"\n(?=[^\s)#])").search(text, m.end())
    return m.start(), text[m.start(): nxt.start() if nxt else len(text)]


def _ints(pattern: str, s: str) -> frozenset[int]:
    return frozenset(int(x) for x in re.findall(pattern, s))


#: Head-count tokens in AITER MLA kernel file names, most specific first
#: (``mla_a8w8_qh16_qseqlen1_gqaratio16``, ``mla_pfl_bf16_a16w16_causal_subQ16_mqa16``).
_NAME_HEAD_KEYS = ("gqaratio", "mqa", "qh")


def kernel_heads(name: str) -> int | None:
    """q heads per KV head a kernel file name says it was built for (None if it says none).

    ``subQ`` is a tile size, not a head count, and is ignored.
    """
    for key in _NAME_HEAD_KEYS:
        m = re.search(rf"(?:^|_){key}(\d+)(?=_|$|\.)", name)
        if m:
            return int(m.group(1))
    return None


def _is_persistent_kernel(name: str) -> bool:
    return re.search(r"_ps(?=_|$)", name) is not None


# --------------------------------------------------------------------------- rules

@dataclass(frozen=True)
class HeadRule:
    """What one kernel family accepts on one architecture, derived from the release files.

    ``heads``: the accepted q heads per rank (a finite set), or None when any count is
    accepted (``any_count``); an empty set when the family is not usable on ``arch``.
    ``rule``: the rule in words. ``evidence``: "file:line what" strings (files relative
    to the release folder) and the kernel files that back it.
    """

    family: str
    arch: str
    shipped: bool
    heads: frozenset[int] | None
    rule: str
    evidence: tuple[str, ...]

    @property
    def any_count(self) -> bool:
        return self.heads is None

    def accepts(self, n: int) -> bool:
        """Whether ``n`` q heads per rank reach this kernel family on this arch."""
        n = _check_heads(n)
        return self.shipped and (self.heads is None or n in self.heads)

    def padded(self, n: int) -> int | None:
        """Smallest accepted head count ≥ ``n`` (``n`` itself if accepted); None if none."""
        n = _check_heads(n)
        if not self.shipped:
            return None
        if self.heads is None:
            return n
        larger = sorted(h for h in self.heads if h >= n)
        return larger[0] if larger else None


def _check_heads(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"heads per rank must be an int, got {n!r}")
    if n <= 0:
        raise ValueError(f"heads per rank must be positive, got {n}")
    return n


def _kernel_files(release: Release, arch: str, names) -> list[str]:
    """The subset of ``names`` shipped as ``aiter_meta/hsa/<arch>/mla/<name>.co``."""
    d = release.path(_hsa_mla(arch))
    return sorted(n for n in set(names) if (d / f"{n}.co").is_file())


def _mla_prefill_rules(release: Release) -> list[HeadRule]:
    raw = release.read(F_ASM_MLA)
    text = _blank_c_comments(raw)
    off, body = _c_function(text, "mla_prefill_asm_fwd", F_ASM_MLA)
    gqa_allowed, kv_required, ev = None, None, []
    for cond, line in _checks(body, off, text):
        if "gqa_ratio" in cond:
            vals = _ints(r"gqa_ratio\s*==\s*(\d+)", cond)
            if not vals or re.search(r"gqa_ratio\s*(?:!=|<|>)", cond):
                raise ValueError(f"{F_ASM_MLA}:{line}: head check {cond!r} not understood")
            gqa_allowed = vals if gqa_allowed is None else gqa_allowed & vals
            ev.append(f"{F_ASM_MLA}:{line} mla_prefill_asm_fwd TORCH_CHECK({cond})")
        elif "num_kv_heads" in cond:
            kv_required = _ints(r"num_kv_heads\s*==\s*(\d+)", cond)
            ev.append(f"{F_ASM_MLA}:{line} mla_prefill_asm_fwd TORCH_CHECK({cond})")
        elif "head" in cond and "head_size" not in cond:
            raise ValueError(f"{F_ASM_MLA}:{line}: head check {cond!r} not understood")
    if gqa_allowed is None:
        raise ValueError(f"{F_ASM_MLA}: mla_prefill_asm_fwd has no gqa_ratio check (layout changed)")
    if kv_required != frozenset({1}):
        raise ValueError(f"{F_ASM_MLA}: mla_prefill_asm_fwd kv-head check is {kv_required}, expected one KV head")
    qtypes = sorted(set(re.findall(r"Q\.dtype\(\)\s*==\s*at::ScalarType::(\w+)", body)))
    names = re.findall(r'"/mla/(\w+)\.co"', body)
    if not names:
        raise ValueError(f"{F_ASM_MLA}: mla_prefill_asm_fwd names no /mla/*.co kernel (layout changed)")
    # Python wrapper: mla_prefill_fwd must not add a head check of its own.
    mla_py = release.read(F_MLA_PY)
    poff, psrc = _py_function(mla_py, "mla_prefill_fwd", F_MLA_PY)
    if re.search(r"assert[^\n]*nhead", psrc):
        raise ValueError(f"{F_MLA_PY}: mla_prefill_fwd asserts on nhead (not parsed)")
    ev.append(f"{F_MLA_PY}:{_line_of(mla_py, poff)} mla_prefill_fwd: no head-count assert, "
              f"calls mla_prefill_asm_fwd with nhead unchanged")
    rules = []
    for arch in ARCHS:
        present = _kernel_files(release, arch, names)
        built = frozenset(h for h in (kernel_heads(n) for n in present) if h is not None)
        acc = built & gqa_allowed
        rules.append(HeadRule(
            "mla_prefill_asm", arch, bool(acc), acc,
            f"q heads per rank (1 KV head, Q dtype {'/'.join(qtypes)}) in {sorted(acc)}: "
            f"TORCH_CHECK allows {sorted(gqa_allowed)}, kernels built for {sorted(built)}",
            tuple(ev) + tuple(f"{_hsa_mla(arch)}/{n}.co (heads {kernel_heads(n)})" for n in present)))
    return rules


def _mla_prefill_ps_rules(release: Release) -> list[HeadRule]:
    text = _blank_c_comments(release.read(F_ASM_MLA))
    has_fn = re.search(r"\bvoid\s+mla_prefill_ps_asm_fwd\s*\(", text) is not None
    rules = []
    for arch in ARCHS:
        kernels = sorted(p.stem for p in release.path(_hsa_mla(arch)).glob("mla_pfl_qh*_vh*.co"))
        if has_fn or kernels:
            raise ValueError(
                f"amd-aiter {release.version} ships the MHA-form persistent prefill "
                f"(mla_prefill_ps_asm_fwd / {kernels}); k3lab.aiter_release was written for the "
                f"{AITER_PIN} layout, which lacks it, and does not parse its rule")
        rules.append(HeadRule(
            "mla_prefill_ps_asm", arch, False, frozenset(),
            "not shipped in this release: no mla_prefill_ps_asm_fwd in asm_mla.cu and no "
            "mla_pfl_qh*_vh*.co kernel",
            (f"{F_ASM_MLA}: no function mla_prefill_ps_asm_fwd",
             f"{_hsa_mla(arch)}/: no mla_pfl_qh*_vh*.co")))
    return rules


def _decode_parts(release: Release):
    raw = release.read(F_ASM_MLA)
    text = _blank_c_comments(raw)
    off, body = _c_function(text, "mla_decode_stage1_asm_fwd", F_ASM_MLA)
    branches = _ints(r"gqa_ratio\s*==\s*(\d+)", body)
    if not branches:
        raise ValueError(f"{F_ASM_MLA}: mla_decode_stage1_asm_fwd has no gqa_ratio branch (layout changed)")
    kv_line = None
    for cond, line in _checks(body, off, text):
        if "num_kv_heads" in cond:
            if _ints(r"num_kv_heads\s*==\s*(\d+)", cond) != frozenset({1}):
                raise ValueError(f"{F_ASM_MLA}:{line}: kv-head check {cond!r} not understood")
            kv_line = line
        elif ("gqa" in cond or "num_heads" in cond) and "impl_ptr" not in cond:
            raise ValueError(f"{F_ASM_MLA}:{line}: head check {cond!r} not understood")
    if kv_line is None:
        raise ValueError(f"{F_ASM_MLA}: mla_decode_stage1_asm_fwd lacks the num_kv_heads check")
    branch_line = _line_of(text, off + re.search(r"gqa_ratio\s*==", body).start())
    names = re.findall(r'"/mla/(\w+)\.co"', body)
    ev = (f"{F_ASM_MLA}:{kv_line} mla_decode_stage1_asm_fwd TORCH_CHECK(num_kv_heads == 1)",
          f"{F_ASM_MLA}:{branch_line} mla_decode_stage1_asm_fwd kernel branches on gqa_ratio == "
          f"{' / '.join(map(str, sorted(branches)))}; otherwise TORCH_CHECK(impl_ptr != nullptr) fails")
    return branches, names, ev


def _mla_decode_rules(release: Release) -> list[HeadRule]:
    branches, names, ev = _decode_parts(release)
    mla_py = release.read(F_MLA_PY)
    off, src = _py_function(mla_py, "get_meta_param", F_MLA_PY)
    m = re.search(r"get_mgc\s*=\s*\{([^}]*)\}", src)
    a = re.search(r"assert\s+nhead\s+in\s+get_mgc", src)
    if not (m and a):
        raise ValueError(f"{F_MLA_PY}: get_meta_param's get_mgc table / assert not found (layout changed)")
    mgc = _ints(r"(\d+)\s*:", m.group(1))
    ev = ev + (f"{F_MLA_PY}:{_line_of(mla_py, off + a.start())} get_meta_param: assert nhead in "
               f"get_mgc (keys {sorted(mgc)})",)
    rules = []
    for arch in ARCHS:
        present = _kernel_files(release, arch, [n for n in names if not _is_persistent_kernel(n)])
        built = frozenset(h for h in map(kernel_heads, present) if h is not None)
        acc = built & branches & mgc
        rules.append(HeadRule(
            "mla_decode_asm", arch, bool(acc), acc,
            f"q heads per rank (1 KV head) in {sorted(acc)}: C++ branches {sorted(branches)}, "
            f"Python get_mgc {sorted(mgc)}, kernels built for {sorted(built)}",
            ev + tuple(f"{_hsa_mla(arch)}/{n}.co (heads {kernel_heads(n)})" for n in present)))
    return rules


def _mla_decode_ps_rules(release: Release) -> list[HeadRule]:
    branches, names, ev = _decode_parts(release)
    mla_py = release.read(F_MLA_PY)
    off, src = _py_function(mla_py, "mla_decode_fwd", F_MLA_PY)
    m = re.search(r"if\s+(nhead\s*==[^\n]*):\s*\n(?:\s*#[^\n]*\n)*\s*pass\s*\n"
                  r"\s*elif\s+nhead\s+in\s+range\(\s*(\d+)\s*,\s*(\d+)\s*(?:\+\s*(\d+))?\s*,\s*(\d+)\s*\)"
                  r"([^\n]*):", src)
    if not m:
        raise ValueError(f"{F_MLA_PY}: mla_decode_fwd's persistent head dispatch not found (layout changed)")
    py_native = _ints(r"nhead\s*==\s*(\d+)", m.group(1))
    lo, hi, plus, step = int(m.group(2)), int(m.group(3)), int(m.group(4) or 0), int(m.group(5))
    fold_range = frozenset(range(lo, hi + plus, step))
    qlen = re.search(r"max_seqlen_q\s*==\s*(\d+)", m.group(6))
    target = re.search(r"\bnhead\s*=\s*(\d+)\b", src[m.end(): m.end() + 600])
    if not target:
        raise ValueError(f"{F_MLA_PY}: mla_decode_fwd fold target (nhead = N) not found")
    fold_to = int(target.group(1))
    py_line = _line_of(mla_py, off + m.start())
    ev = ev + (f"{F_MLA_PY}:{py_line} mla_decode_fwd persistent: native `{' '.join(m.group(1).split())}`; "
               f"nhead in range({lo}, {hi}{' + ' + str(plus) if plus else ''}, {step}){' with max_seqlen_q == ' + qlen.group(1) if qlen else ''} "
               f"folded to nhead = {fold_to}",)
    # persistent metadata (C++): fold rule and the check on what is left
    meta_ok = None
    for f in (F_META_V11, F_META_V12):
        raw = release.read(f)
        text = _blank_c_comments(raw)
        fm = re.search(r"\(num_heads\s*%\s*(\d+)\s*==\s*0\)\s*&&\s*\(num_heads\s*<\s*(\d+)\)", text)
        cks = [(c, ln) for c, ln in _checks(text, 0, text) if "num_heads" in c]
        if not fm or not cks:
            raise ValueError(f"{f}: persistent-metadata head fold / check not found (layout changed)")
        mod, upper = int(fm.group(1)), int(fm.group(2))
        native_meta = _ints(r"num_heads\s*==\s*(\d+)", cks[0][0])
        ok = {n for n in range(1, 1025) if n in native_meta or (n % mod == 0 and n < upper)}
        meta_ok = ok if meta_ok is None else meta_ok & ok
        ev = ev + (f"{f}:{_line_of(text, fm.start())} fold when num_heads % {mod} == 0 && num_heads < {upper}; "
                   f"{f}:{cks[0][1]} TORCH_CHECK({cks[0][0]})",)
    attn = release.read(F_ATTN_PY)
    ioff, isrc = _py_function(attn, "get_mla_metadata_info_v1", F_ATTN_PY)
    im = re.search(r"assert\s+num_head_qo\s*%\s*(\d+)\s*==\s*0", isrc)
    info_mod = int(im.group(1)) if im else 1
    if im:
        ev = ev + (f"{F_ATTN_PY}:{_line_of(attn, ioff + im.start())} get_mla_metadata_info_v1: "
                   f"assert num_head_qo % {info_mod} == 0",)
    rules = []
    for arch in ARCHS:
        present = _kernel_files(release, arch, [n for n in names if _is_persistent_kernel(n)])
        built = frozenset(h for h in map(kernel_heads, present) if h is not None)
        native = built & branches & py_native
        folded = frozenset(n for n in fold_range if fold_to in native)
        acc = frozenset(n for n in (native | folded) if n in meta_ok and n % info_mod == 0)
        rules.append(HeadRule(
            "mla_decode_asm_ps", arch, bool(acc), acc,
            f"q heads per rank (1 KV head) in {sorted(acc)}: native {sorted(native)} "
            f"(persistent kernels built for {sorted(built)}), others folded onto the {fold_to}-head "
            f"kernel{' only when max_seqlen_q == ' + qlen.group(1) if qlen else ''}; metadata accepts "
            f"multiples of its fold modulus below its bound",
            ev + tuple(f"{_hsa_mla(arch)}/{n}.co (heads {kernel_heads(n)})" for n in present)))
    return rules


def reduce_cases(release: Release) -> dict[int, frozenset[int]]:
    """mla_reduce_v1's compiled (v head dim → head counts) cases from reduce.cu's router macro."""
    raw = release.read(F_REDUCE)
    text = _blank_c_comments(raw).replace("\\\n", " \n")
    pairs = re.findall(r"MLA_(?:MERGE|REDUCE)_CASE_(?:IF|EF)\(\s*NUM_HEAD\s*,\s*(\d+)\s*,\s*HEAD_DIM\s*,\s*(\d+)", text)
    if not pairs:
        raise ValueError(f"{F_REDUCE}: no MLA_*_CASE_(IF|EF)(NUM_HEAD, n, HEAD_DIM, d, ...) cases found")
    out: dict[int, set[int]] = {}
    for h, d in pairs:
        out.setdefault(int(d), set()).add(int(h))
    return {d: frozenset(v) for d, v in sorted(out.items())}


def _reduce_rules(release: Release) -> list[HeadRule]:
    raw = release.read(F_REDUCE)
    text = _blank_c_comments(raw)
    cases = reduce_cases(release)
    router = re.search(r"#define\s+(MLA_\w*ROUTER)\b", text)
    err = re.search(r'doesn\'t support the specified settings', text)
    ev = [f"{F_REDUCE}:{_line_of(text, router.start()) if router else '?'} "
          f"{router.group(1) if router else 'router'} cases (heads, v head dim): "
          + ", ".join(f"dv{d}: {sorted(h)}" for d, h in cases.items())]
    if err:
        ev.append(f"{F_REDUCE}:{_line_of(text, err.start())} otherwise TORCH_CHECK(false, "
                  f"\"kn_mla_reduce_v1 doesn't support the specified settings\")")
    rules = []
    for fam, dv in (("mla_reduce_v1_dv128", 128), ("mla_reduce_v1_dv512", 512)):
        acc = cases.get(dv, frozenset())
        for arch in ARCHS:  # HIP source, compiled at first use for the arch at hand
            rules.append(HeadRule(fam, arch, bool(acc), acc,
                                  f"heads per rank in {sorted(acc)} at v head dim {dv} "
                                  f"(HIP source, JIT-compiled for {arch})", tuple(ev)))
    return rules


def _fmha_rules(release: Release, qk_head_dim: int, v_head_dim: int) -> list[HeadRule]:
    mha = release.read(F_MHA_PY)
    off, src = _py_function(mha, "_flash_attn_varlen_forward", F_MHA_PY)
    g = re.search(r"def can_impl_fmha_v3_fwd\(\):\n(.*?)\n\s*return ret", src, re.S)
    if not g:
        raise ValueError(f"{F_MHA_PY}: _flash_attn_varlen_forward.can_impl_fmha_v3_fwd not found")
    gate = g.group(1)
    gline = _line_of(mha, off + g.start())
    head_conds = [" ".join(ln.split()) for ln in gate.splitlines() if "nhead" in ln]
    for c in head_conds:
        if not re.search(r"nhead_q\s*%\s*nhead_k\s*==\s*0", c):
            raise ValueError(f"{F_MHA_PY}: can_impl_fmha_v3_fwd head condition {c!r} not understood")
    if not head_conds:
        raise ValueError(f"{F_MHA_PY}: can_impl_fmha_v3_fwd has no nhead_q % nhead_k check (layout changed)")
    v_ok = _ints(r"hdim_v\s*==\s*(\d+)", gate)
    gated = {(a, int(d)) for a, d in re.findall(r'get_gfx\(\)\s*==\s*"(\w+)"\s*and\s*hdim_q\s*==\s*(\d+)', gate)}
    q_any = _ints(r"hdim_q\s*==\s*(\d+)", gate) - {d for _, d in gated}
    ev = (f"{F_MHA_PY}:{gline} can_impl_fmha_v3_fwd: {'; '.join(head_conds)}; hdim_v in {sorted(v_ok)}; "
          f"hdim_q in {sorted(q_any)} on any arch, "
          + ", ".join(f"{d} on {a}" for a, d in sorted(gated)) + "; else mha_varlen_fwd (CK)",)
    stem = f"fwd_hd{qk_head_dim}_hd{v_head_dim}_bf16" if qk_head_dim != v_head_dim else f"fwd_hd{qk_head_dim}_bf16"
    rules = []
    for arch in ARCHS:
        d = release.path(_hsa_fmha(arch))
        files = sorted(str(p.relative_to(release.folder)) for p in d.rglob(f"{stem}*.co"))
        gate_ok = v_head_dim in v_ok and (qk_head_dim in q_any or (arch, qk_head_dim) in gated)
        tune = None
        cg = d / "codegen.py"
        if cg.is_file():
            t = re.search(r"nhead_q\s*%\s*(\d+)\s*!=\s*0", cg.read_text(encoding="utf-8", errors="replace"))
            tune = int(t.group(1)) if t else None
        ok = gate_ok and bool(files)
        why = ("any head count (MHA form: nhead_q % nhead_k == 0 always holds)" if ok else
               f"not used for qk/v head dims {qk_head_dim}/{v_head_dim} on {arch}: "
               f"{'no ' + stem + '*.co kernel' if not files else 'Python gate refuses the head dims'}; "
               f"flash_attn_varlen_func falls back to CK mha_varlen_fwd")
        if ok and tune:
            why += (f"; causal launches with heads not a multiple of {tune} use a lower tuning "
                    f"option ({_hsa_fmha(arch)}/codegen.py)")
        rules.append(HeadRule("fmha_v3_fwd", arch, ok, None if ok else frozenset(), why,
                              ev + tuple(files[:4]) + ((f"... {len(files)} files",) if len(files) > 4 else ())))
    return rules


def _ck_rules(release: Release, qk_head_dim: int, v_head_dim: int) -> list[HeadRule]:
    raw = release.read(F_CK_VARLEN)
    text = _blank_c_comments(raw)
    ev, any_heads, dims_ok = [], False, True
    for cond, line in _checks(text, 0, text):
        if re.search(r"num_heads\s*%\s*num_heads_k\s*==\s*0", cond):
            any_heads = True
            ev.append(f"{F_CK_VARLEN}:{line} TORCH_CHECK({cond})")
        elif "num_heads" in cond:
            raise ValueError(f"{F_CK_VARLEN}:{line}: head check {cond!r} not understood")
        elif re.search(r"head_size_[qv]\s*(<=|%)", cond):
            which = qk_head_dim if "head_size_q" in cond else v_head_dim
            le = re.search(r"<=\s*(\d+)", cond)
            md = re.search(r"%\s*(\d+)\s*==\s*0", cond)
            if (le and which > int(le.group(1))) or (md and which % int(md.group(1))):
                dims_ok = False
            ev.append(f"{F_CK_VARLEN}:{line} TORCH_CHECK({cond})")
    if not any_heads:
        raise ValueError(f"{F_CK_VARLEN}: no num_heads % num_heads_k check found (layout changed)")
    ok = dims_ok
    return [HeadRule("mha_fwd_ck", arch, ok, None if ok else frozenset(),
                     ("any head count (MHA form: num_heads % num_heads_k == 0 always holds); "
                      f"CK kernels JIT-compiled from aiter_meta/3rdparty/composable_kernel for {arch}")
                     if ok else f"head dims {qk_head_dim}/{v_head_dim} refused by the CK checks",
                     tuple(ev)) for arch in ARCHS]


@lru_cache(maxsize=8)
def _rules_cached(folder: str, version: str, qk_head_dim: int, v_head_dim: int) -> tuple[HeadRule, ...]:
    rel = Release(version, Path(folder))
    rules = (_mla_prefill_rules(rel) + _mla_prefill_ps_rules(rel) + _mla_decode_rules(rel)
             + _mla_decode_ps_rules(rel) + _reduce_rules(rel) + _fmha_rules(rel, qk_head_dim, v_head_dim)
             + _ck_rules(rel, qk_head_dim, v_head_dim))
    order = {f: i for i, f in enumerate(FAMILIES)}
    return tuple(sorted(rules, key=lambda r: (order[r.family], r.arch)))


def _release(release_dir) -> Release:
    if isinstance(release_dir, Release):
        return release_dir
    if release_dir is None:
        return installed_release()
    folder = Path(release_dir)
    return installed_release(_dist_version(folder) if folder.is_dir() else AITER_PIN, folder)


def head_rules(release_dir=None, qk_head_dim: int = 192, v_head_dim: int = 128) -> tuple[HeadRule, ...]:
    """Derive every family × arch head rule from an installed release → tuple of :class:`HeadRule`.

    ``release_dir``: a :class:`Release`, a folder (a ``pip --target`` install), or None for
    :func:`installed_release`. ``qk_head_dim``/``v_head_dim``: the MHA-form prefill head dims
    the flash-attention families are judged for (Kimi K3: 192 / 128). A missing file raises
    :class:`ReleaseFileMissing` naming it; a check the parser does not recognise raises
    ValueError naming the file and line, rather than guessing.
    """
    rel = _release(release_dir)
    return _rules_cached(str(rel.folder), rel.version, int(qk_head_dim), int(v_head_dim))


def rule(family: str, arch: str, release_dir=None) -> HeadRule:
    """The :class:`HeadRule` of one family on one arch (ValueError for unknown names)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown kernel family {family!r}; known: {', '.join(FAMILIES)}")
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; known: {', '.join(ARCHS)}")
    for r in head_rules(release_dir):
        if r.family == family and r.arch == arch:
            return r
    raise AssertionError("unreachable: every family has a rule per arch")  # pragma: no cover


def accepts(family: str, arch: str, heads: int, release_dir=None) -> bool:
    """Whether ``heads`` q heads per rank are accepted by ``family`` on ``arch``."""
    return rule(family, arch, release_dir).accepts(heads)


def tp_table(total_heads: int = 96, tps=(1, 2, 4, 8, 16, 32), release_dir=None,
             families=FAMILIES):
    """Per TP degree × family × arch: heads per rank, accepted, smallest accepted padding.

    Columns: ``tp``, ``heads_per_rank`` (q heads per GPU = total_heads / tp), ``family``,
    ``arch``, ``accepted`` (bool), ``padded_heads`` (smallest accepted count ≥ heads per
    rank, or None when the family has none), ``extra_attention_flops_pct``
    ((padded − real) / real × 100, the attention FLOPs spent on zero heads). → pandas DataFrame.
    """
    import pandas as pd

    total_heads = _check_heads(total_heads)
    rules = {(r.family, r.arch): r for r in head_rules(release_dir)}
    rows = []
    for tp in tps:
        tp = _check_heads(tp)
        if total_heads % tp:
            raise ValueError(f"TP {tp} does not divide {total_heads} heads")
        n = total_heads // tp
        for fam in families:
            for arch in ARCHS:
                r = rules[(fam, arch)]
                m = r.padded(n)
                rows.append({"tp": tp, "heads_per_rank": n, "family": fam, "arch": arch,
                             "accepted": r.accepts(n), "padded_heads": m,
                             "extra_attention_flops_pct": None if m is None else round(100.0 * (m - n) / n, 4)})
    df = pd.DataFrame(rows)
    df["padded_heads"] = df["padded_heads"].astype("Int64")
    df["extra_attention_flops_pct"] = df["extra_attention_flops_pct"].astype("Float64")
    return df


def main() -> None:  # pragma: no cover - a convenience printer
    rel = installed_release()
    print(f"amd-aiter {rel.version} at {_show(rel.folder)}")
    for r in head_rules(rel):
        heads = "any" if r.heads is None else sorted(r.heads)
        print(f"{r.family:20s} {r.arch}  {heads}\n    {r.rule}")
        for e in r.evidence:
            print(f"      - {e}")
    t = tp_table(release_dir=rel)
    print(t.pivot_table(index=["family", "arch"], columns="heads_per_rank", values="padded_heads",
                        aggfunc="first").to_string())


if __name__ == "__main__":  # pragma: no cover
    main()
