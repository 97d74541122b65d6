"""Findings 2 and 3 across sglang releases: what each PyPI release from 0.5.16 on fixed.

Each release is installed with ``--no-deps`` into its own folder
(``.venv-sglang/releases/sglang-<version>``, see ``requirements/sglang-releases.txt``) and
measured in a child process that runs ``.venv-sglang``'s Python with ``PYTHONPATH`` set to
that folder, so the release's own ``sglang`` package shadows the 0.5.16 in site-packages
(the child checks that it did). Everything runs on CPU. One child → one JSON row.

Finding 2 — the DFlash/DSpark verify path (``build_dflash_verify_target_probs`` in
``sglang/srt/speculative/dflash_utils.py``; renamed ``build_speculative_verify_target_probs``
in 0.5.22; from 0.5.23 the renorm names are resolved in
``sglang/kernels/ops/sampling/renorm.py`` and imported into ``dflash_utils``). For each of
three platforms (CUDA, HIP, CPU) the probe

* emulates the platform with the checks those modules use at import time: the functions
  ``is_cuda`` / ``is_hip`` / ``is_musa`` / ``is_npu`` of ``sglang.srt.utils`` (and of
  ``sglang.srt.utils.common``, where they are defined) are replaced by constants, and in
  releases that have it sglang's own ``runtime_context.override_platform(is_cuda=…,
  is_hip=…)`` is installed too (it answers ``get_platform()`` readers; the renorm modules do
  not read it). Then the platform-resolving modules are executed again into fresh module
  objects (not ``importlib.reload``, which would keep names a branch does not bind)
  (``kernels/ops/sampling/renorm.py`` and
  ``kernels/ops/speculative/verify_sampling.py`` where they exist, then ``dflash_utils``),
  so their ``if is_cuda(): … elif is_hip(): …`` import blocks run again. Everything else
  imported once, on CPU. On exit the constants are removed and the modules reloaded again;
* records what ``top_k_renorm_prob``, ``top_p_renorm_prob`` and
  ``tree_speculative_sampling_target_only`` are bound to in the module the verify
  function reads (``dflash_utils``), and ``_DFLASH_SAMPLING_VERIFY_AVAILABLE``;
* runs the real verify function on every request mix of notebook 02
  (:data:`k3lab.probes.topk_repro.MIXES`, real ``SamplingParams`` / ``SamplingBatchInfo``)
  twice: on seeded random logits (compared with
  :func:`k3lab.probes.topk_repro.reference_target_probs`) and on logits with ties placed at
  the top-k pivot (ranks k-2 … k+1 of each top-k row share one value) or straddling the
  top-p cut (a group of 20 equal probabilities across which the cumulative mass crosses p),
  compared with two naive references: tie-keeping (FlashInfer's threshold semantics,
  keep every entry >= pivot) and rank-mask (keep exactly k, or the shortest prefix
  reaching p). The path (sparse ``torch.topk`` or dense ``softmax`` + renorm) is observed
  by wrapping the module's ``F.softmax``.

Stand-ins (k3lab's, labelled, never sglang's or FlashInfer's): compiled kernels that
cannot load on a CPU box. ``sgl_kernel`` (CUDA wheel, ≤ 0.5.20) and ``flashinfer.sampling``
(0.5.21 on) are put in ``sys.modules`` as stand-in modules whose renorm functions are
:func:`k3lab.sampling.top_k_renorm_prob` / ``top_p_renorm_prob`` (FlashInfer semantics);
their ``tree_speculative_sampling_target_only`` raises. On HIP the real sglang Triton
wrappers (``kernels/ops/sampling/renorm_triton.py``) do import and are what gets bound
(recorded), but they refuse CPU tensors, so for the verify run the module's names are
re-pointed at the same k3lab stand-ins (recorded as ``run_with``). What a stand-in shows:
which name is bound and whether the path crashes; a dense-path "tie-keeping" result on
CUDA/HIP is the stand-in's semantics (FlashInfer's, which sglang's Triton kernels document
too), not a measurement of the GPU kernel. The CPU column and every sparse-path result
run sglang's own code only.

Finding 3 — ``sglang/srt/layers/attention/aiter_backend.py``: the real
``AiterAttnBackend.__init__`` for 96 heads at TP8 (12 per rank) with the stand-in model
runner/config of :mod:`k3lab.probes.aiter_backend`, plus stand-ins for the launcher's
published ``spec``/``schedule`` config (from 0.5.17 the backend reads ``get_spec()`` and
``get_schedule()`` instead of the runner) bound into the backend module. It records
refusal (exact message) or the mode (``head_pad_mode``, padded counts), the head counts
1…144 the constructor accepts at TP1, and — where 12 is accepted — the real
``forward_extend`` cold prefill on the gfx950 fp8 path with the AITER stand-ins of
:class:`k3lab.probes.aiter_backend.StandIns`, compared with
:func:`k3lab.attention.with_head_padding` around the same stand-in, and the real decode
wrapper ``_mla_decode_fwd_with_head_pad``. Where 12 is refused, the same is run with
:data:`k3lab.patches.aiter_head_pad.PATCH` applied (``force=True`` outside its known
versions) to see whether the k3lab patch carries over. Also sglang's own automatic
choice of attention backend on ROCm when none is given (:func:`default_attention_backend_hip`),
which is what an operator who passes no ``--attention-backend`` gets. Also: whether the release ships
``sglang/srt/models/kimi_k3.py`` and the classes it registers.

Rows are deterministic (no times, no paths). :func:`lookup` answers ``status: unknown``
for a release the matrix does not hold. Import only in ``.venv-sglang`` (the child needs
sglang; the parent functions need only the standard library and torch).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

from ..paths import REPO_ROOT

PLATFORMS = ("cuda", "hip", "cpu")
PLATFORM_PROBES = ("is_cuda", "is_hip", "is_musa", "is_npu")
PLATFORM_FLAGS = {
    "cuda": {"is_cuda": True, "is_hip": False, "is_musa": False, "is_npu": False},
    "hip": {"is_cuda": False, "is_hip": True, "is_musa": False, "is_npu": False},
    "cpu": {"is_cuda": False, "is_hip": False, "is_musa": False, "is_npu": False},
}
DFLASH = "sglang.srt.speculative.dflash_utils"
# Modules whose import-time platform branches decide the renorm bindings, in reload order.
PLATFORM_MODULES = ("sglang.kernels.ops.sampling.renorm",
                    "sglang.kernels.ops.speculative.verify_sampling", DFLASH)
VERIFY_FUNCTIONS = ("build_dflash_verify_target_probs", "build_speculative_verify_target_probs")
BOUND_NAMES = ("top_k_renorm_prob", "top_p_renorm_prob", "tree_speculative_sampling_target_only")
AITER = "sglang.srt.layers.attention.aiter_backend"
KIMI_K3 = "sglang/srt/models/kimi_k3.py"
RELEASES_DIR_ENV = "K3LAB_SGLANG_RELEASES"
DEFAULT_VOCAB = 163_840   # Kimi K3's vocabulary, as notebook 02
TIE_GROUP = 20            # equal probabilities straddling the top-p cut
MATRIX = "sglang_release_matrix.json"
# Where the cold prefill is measured (tokens per sequence); small: the point is equality.
PREFILL_SEQ_LENS = (7, 19, 1)
HEAD_SWEEP = range(1, 145)

_MISSING = object()


# ----------------------------------------------------------------------------- parent side

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


def version_key(version: str) -> tuple:
    """Sort key for PEP 440-ish versions of sglang (``0.5.15.post1`` after ``0.5.15``)."""
    parts = []
    for p in re.split(r"[.]", version):
        m = re.fullmatch(r"(\d+)|post(\d+)|(\D+)(\d*)", p)
        if m and m.group(1) is not None:
            parts.append((1, int(m.group(1)), ""))
        elif m and m.group(2) is not None:
            parts.append((2, int(m.group(2)), "post"))
        else:
            parts.append((0, 0, p))
    return tuple(parts)


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


def run_release(version: str, python: str | None = None, vocab: int = DEFAULT_VOCAB,
                timeout_s: float = 1800) -> dict:
    """Measure one release in a child process → its row (see module doc).

    The child runs ``python`` (default: this interpreter) with ``PYTHONPATH`` set to the
    release's folder, or, for the sglang in that interpreter's own site-packages, with no
    ``PYTHONPATH``. RuntimeError naming the folder when the release is not installed or the
    child fails.
    """
    kind, target = release_source(version, python)
    if kind == "missing":
        raise RuntimeError(f"sglang {version} is not installed in releases/{target.name} "
                           f"(pip install --no-deps --target <that folder> sglang=={version})")
    with tempfile.TemporaryDirectory(prefix="k3lab-release-") as tmp:
        out = Path(tmp) / "row.json"
        env = _no_pythonpath_env()
        env["PYTHONHASHSEED"] = "0"
        if kind == "folder":
            env["PYTHONPATH"] = str(target)
        proc = subprocess.run(
            [python or sys.executable, "-m", "k3lab.probes.release_matrix", "--child", str(out),
             "--expect", version, "--vocab", str(int(vocab))] + (["--site"] if kind == "site" else []),
            capture_output=True, text=True, env=env, cwd=str(REPO_ROOT), timeout=timeout_s)
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-12:])
            raise RuntimeError(f"sglang {version} child failed (exit {proc.returncode}):\n{tail}")
        return json.loads(out.read_text(encoding="utf-8"))


def build_matrix(versions=None, python: str | None = None, vocab: int = DEFAULT_VOCAB) -> dict:
    """Rows for ``versions`` (default: every installed release), oldest first."""
    vs = sorted(versions if versions is not None else installed_releases(), key=version_key)
    return {"vocab": vocab, "draft_tokens": _draft_tokens(), "platforms": list(PLATFORMS),
            "mixes": list(_mixes()), "method": METHOD,
            "rows": [run_release(v, python=python, vocab=vocab) for v in vs]}


def load_matrix(path: Path | None = None) -> dict:
    """The committed matrix (``data/measured/cpu-2core/sglang_release_matrix.json``)."""
    from ..paths import data_path

    p = Path(path) if path is not None else data_path("measured", "cpu-2core", MATRIX)
    return json.loads(Path(p).read_text(encoding="utf-8"))


def lookup(version: str, doc: dict | None = None) -> dict:
    """The row for ``version``; ``{"sglang": version, "status": "unknown"}`` if absent."""
    doc = load_matrix() if doc is None else doc
    for row in doc.get("rows", []):
        if row.get("sglang") == version:
            return row
    return {"sglang": version, "status": "unknown",
            "reason": "release not in the matrix (not measured); nothing is inferred for it"}


def hip_verify_crashes(row: dict) -> bool | str:
    """Does any request mix crash the verify path on HIP? ``"unknown"`` for an unknown row."""
    if row.get("status") == "unknown":
        return "unknown"
    return any(r["outcome"] != "ok" for r in row["verify"]["hip"].values())


def aiter_refuses_12_heads(row: dict) -> bool | str:
    """Does the AITER backend refuse 12 heads per rank at start-up? ``"unknown"`` if unknown."""
    if row.get("status") == "unknown":
        return "unknown"
    return not row["aiter"]["accepts_12"]


def summary_frame(doc: dict):
    """One line per release: bindings per platform, verify behaviour, AITER, kimi_k3.py."""
    import pandas as pd

    lines = []
    for row in doc["rows"]:
        d = {"sglang": row["sglang"]}
        for plat in PLATFORMS:
            b = row["bindings"][plat]
            d[f"{plat} top_k / top_p"] = f"{_short(b['top_k_renorm_prob'])} / {_short(b['top_p_renorm_prob'])}"
        for plat in PLATFORMS:
            d[f"{plat} verify"] = _verify_summary(row["verify"][plat])
        a = row["aiter"]
        d["AITER 12 heads"] = (f"accepted (head_pad_mode={a['mode_12']['head_pad_mode']!r}, "
                               f"{a['mode_12']['num_head_padded']} kernel heads)"
                               if a["accepts_12"] else f"refused: {a['error_12'].splitlines()[0]}")
        d["ROCm default backend, K3 TP8"] = a["default_backend_on_hip"]["96 heads TP8 (12/rank)"]
        eq = a.get("prefill_12")
        patch = a.get("k3lab_patch")
        if eq:
            d["prefill == with_head_padding"] = (
                f"{eq['kernel'].split(' ')[0]} on {eq['kernel_heads'][0]} heads "
                f"({eq['padded_heads_content']}): max|diff| {eq['max_abs_diff_vs_with_head_padding']}")
        elif isinstance(patch, dict) and (patch.get("prefill_12") or {}).get("ok"):
            pe = patch["prefill_12"]
            d["prefill == with_head_padding"] = (
                f"refused; with k3lab patch{' (force=True)' if patch['forced'] else ''}: "
                f"{pe['kernel'].split(' ')[0]} on {pe['kernel_heads'][0]} heads: max|diff| "
                f"{pe['max_abs_diff_vs_with_head_padding']}")
        else:
            d["prefill == with_head_padding"] = "n/a"
        d["kimi_k3.py"] = row["kimi_k3"]["model_file"]
        lines.append(d)
    return pd.DataFrame(lines)


def _short(binding: str) -> str:
    return (binding.replace("sglang.kernels.ops.sampling.", "")
            .replace("stand-in for ", "≈").replace("LazyImport", "lazy"))


def _verify_summary(per_mix: dict) -> str:
    """Crashes, the tie behaviours seen, and random-logit mismatches across the request mixes."""
    crashes = sorted({r["error"] for r in per_mix.values() if r["outcome"] != "ok"})
    off = sorted({r["random_matches_reference"] for r in per_mix.values()
                  if r["outcome"] == "ok" and r["random_matches_reference"] != "matches"})
    ties = sorted({r["ties"] for r in per_mix.values() if r["outcome"] == "ok"
                   and r["ties"] not in ("indistinguishable",)})
    n_crash = sum(r["outcome"] != "ok" for r in per_mix.values())
    parts = []
    if n_crash:
        parts.append(f"{n_crash}/{len(per_mix)} crash ({'; '.join(crashes)})")
    if ties:
        parts.append("ties: " + ", ".join(ties))
    if off:
        parts.append("random logits: " + " / ".join(o.replace("matches except: ", "") for o in off))
    return "; ".join(parts) or "ok"


def _mixes():
    from . import topk_repro

    return topk_repro.MIXES


def _draft_tokens() -> int:
    from . import topk_repro

    return topk_repro.DRAFT_TOKENS


METHOD = {
    "platform_emulation": (
        "import sglang on CPU; replace sglang.srt.utils.{is_cuda,is_hip,is_musa,is_npu} (and "
        "the same names in sglang.srt.utils.common) by constants; where the release has "
        "sglang.srt.runtime_context.override_platform, install override_platform(is_cuda=.., "
        "is_hip=..) too; execute sglang.kernels.ops.sampling.renorm and "
        "sglang.kernels.ops.speculative.verify_sampling (where present), then "
        "sglang.srt.speculative.dflash_utils again into fresh module objects (so a name a "
        "branch does not bind is 'not defined'); undo and re-execute afterwards"),
    "stand_ins": (
        "k3lab stand-ins, not sglang/FlashInfer: sys.modules['sgl_kernel'] and "
        "sys.modules['flashinfer.sampling'] with k3lab.sampling renorm functions "
        "(FlashInfer semantics) and a tree_speculative_sampling_target_only that raises; on HIP "
        "the real Triton wrappers bind (recorded) but refuse CPU tensors, so the verify run "
        "re-points the bound names at the same k3lab stand-ins (run_with)"),
    "ties": (
        "ties logits: top-k rows get ranks k-2..k+1 equal; top-p-only rows get "
        f"{TIE_GROUP} equal probabilities across the top-p cut; 'tie-keeping' = equals the "
        "naive threshold reference (keep every entry >= pivot), 'rank-mask' = equals the naive "
        "rank reference (keep exactly k / the shortest prefix reaching p) up to which tied "
        "entries are kept, 'indistinguishable' = both references agree for that mix"),
    "aiter": (
        "real AiterAttnBackend.__init__/forward_extend/_mla_decode_fwd_with_head_pad with "
        "k3lab stand-ins defined in k3lab.probes.release_matrix (runner, model config, layer, "
        "batch, metadata; AITER's mla_prefill_ps_asm_fwd, mla_reduce_v1, mla_decode_fwd, "
        "flash_attn_varlen_func computing a float32 reference and refusing what AITER refuses) "
        "and stand-in get_spec()/get_schedule() bags bound into the backend module; gfx950 fp8 "
        "prefill forced on (module flag _use_fp8_prefill_attn)"),
    "default_backend_on_hip": (
        "sglang's own default attention-backend selector for an MLA model under HIP emulation "
        "(server_args.is_hip etc. replaced by constants up to 0.5.18; override_platform from "
        "0.5.19) with a stand-in model config of 96 KV heads"),
}


# ----------------------------------------------------------------------------- child side

def _sanitize(text: str) -> str:
    """Drop machine paths from an error message (rows must not hold paths)."""
    for root in sorted({str(REPO_ROOT), *(p for p in sys.path if p and p.startswith("/"))},
                       key=len, reverse=True):
        text = text.replace(root, "<root>")
    return re.sub(r"0x[0-9a-f]{6,}", "0x…", text)


def _error(e: BaseException) -> str:
    return _sanitize(f"{type(e).__name__}: {e}")


def _stand_in(real: str, fn):
    """A k3lab function standing in for the compiled kernel ``real`` (labelled)."""
    def stand_in(probs, arg, *args, **kwargs):
        return fn(probs, arg)

    stand_in.__name__ = real.rsplit(".", 1)[-1]
    stand_in.__qualname__ = stand_in.__name__
    stand_in.__module__ = "k3lab.probes.release_matrix"
    stand_in.k3lab_stand_in_for = real
    return stand_in


def _raising_stand_in(real: str):
    def stand_in(*args, **kwargs):
        raise RuntimeError(f"k3lab stand-in for {real}: the compiled kernel is absent on CPU")

    stand_in.__name__ = real.rsplit(".", 1)[-1]
    stand_in.k3lab_stand_in_for = real
    return stand_in


def _stand_in_modules() -> dict[str, types.ModuleType]:
    from .. import sampling

    sk = types.ModuleType("sgl_kernel")
    sk.__doc__ = "k3lab stand-in for the sgl_kernel wheel (CPU box: the real one cannot load)"
    sk.top_k_renorm_prob = _stand_in("sgl_kernel.top_k_renorm_prob", sampling.top_k_renorm_prob)
    sk.top_p_renorm_prob = _stand_in("sgl_kernel.top_p_renorm_prob", sampling.top_p_renorm_prob)
    sk.tree_speculative_sampling_target_only = _raising_stand_in(
        "sgl_kernel.tree_speculative_sampling_target_only")
    fi = types.ModuleType("flashinfer")
    fi.__doc__ = "k3lab stand-in for flashinfer (CPU box)"
    fi.__path__ = []
    fs = types.ModuleType("flashinfer.sampling")
    fs.top_k_renorm_probs = _stand_in("flashinfer.sampling.top_k_renorm_probs",
                                      sampling.top_k_renorm_prob)
    fs.top_p_renorm_probs = _stand_in("flashinfer.sampling.top_p_renorm_probs",
                                      sampling.top_p_renorm_prob)
    fi.sampling = fs
    return {"sgl_kernel": sk, "flashinfer": fi, "flashinfer.sampling": fs}


def describe(obj) -> str:
    """What a module global is bound to, in words."""
    if obj is _MISSING:
        return "not defined"
    if obj is None:
        return "None"
    if type(obj).__name__ == "LazyImport":   # before any getattr: that would resolve it
        return f"LazyImport({obj.__dict__['module_name']}.{obj.__dict__['class_name']})"
    label = getattr(obj, "k3lab_stand_in_for", None)
    if isinstance(label, str):
        return f"stand-in for {label}"
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


@contextlib.contextmanager
def emulated_platform(name: str):
    """Re-resolve the renorm bindings as on ``name`` (see the module doc) → the verify module."""
    import sglang.srt.utils as U
    import sglang.srt.utils.common as C

    _import_on_this_machine()            # everything else imports once, on the real (CPU) platform
    flags = PLATFORM_FLAGS[name]
    saved = []
    installed_modules = {}
    override = None
    try:
        for mod in (U, C):
            for fn, value in flags.items():
                saved.append((mod, fn, mod.__dict__.get(fn, _MISSING)))
                setattr(mod, fn, (lambda v=value: v))
        if name == "cuda":
            for mname, m in _stand_in_modules().items():
                installed_modules[mname] = sys.modules.get(mname, _MISSING)
                sys.modules[mname] = m
        try:
            from sglang.srt.runtime_context import override_platform
        except ImportError:
            override_platform = None
        if override_platform is not None:
            override = override_platform(is_cuda=flags["is_cuda"], is_hip=flags["is_hip"])
            override.install()
        yield _reload_platform_modules()
    finally:
        if override is not None:
            override.restore()
        for mod, fn, old in reversed(saved):
            if old is _MISSING:
                mod.__dict__.pop(fn, None)
            else:
                setattr(mod, fn, old)
        for mname, old in installed_modules.items():
            if old is _MISSING:
                sys.modules.pop(mname, None)
            else:
                sys.modules[mname] = old
        _reload_platform_modules()


def _import_on_this_machine() -> None:
    import importlib.util

    for name in PLATFORM_MODULES:
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def _fresh_exec(name: str):
    """Execute module ``name`` anew into a fresh module object and install it in sys.modules.

    Not ``importlib.reload``: a reload re-runs the code in the old namespace, so a name the
    new platform branch never binds would keep its old value instead of being undefined.
    """
    import importlib.util

    spec = importlib.util.find_spec(name)
    old = sys.modules.get(name)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        if old is not None:
            sys.modules[name] = old
        raise
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, mod)
    return mod


def _reload_platform_modules():
    import importlib.util

    for name in PLATFORM_MODULES:
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            _fresh_exec(name)
    return sys.modules[DFLASH]


def _verify_function(mod):
    for n in VERIFY_FUNCTIONS:
        if hasattr(mod, n):
            return n, getattr(mod, n)
    raise RuntimeError(f"{DFLASH} has none of {VERIFY_FUNCTIONS}")


def bindings(mod) -> dict:
    out = {n: describe(mod.__dict__.get(n, _MISSING)) for n in BOUND_NAMES}
    out["_DFLASH_SAMPLING_VERIFY_AVAILABLE"] = bool(mod.__dict__.get("_DFLASH_SAMPLING_VERIFY_AVAILABLE", False))
    return out


def _runnable(mod) -> dict:
    """Re-point GPU-only renorm kernels (Triton wrappers) at k3lab stand-ins → what ran."""
    from .. import sampling

    run_with = {}
    for n, fn in (("top_k_renorm_prob", sampling.top_k_renorm_prob),
                  ("top_p_renorm_prob", sampling.top_p_renorm_prob)):
        obj = mod.__dict__.get(n, _MISSING)
        d = describe(obj)
        if obj is _MISSING or obj is None or d.startswith("stand-in") or d.startswith("LazyImport"):
            run_with[n] = "as bound"
        else:
            setattr(mod, n, _stand_in(d, fn))
            run_with[n] = f"stand-in for {d}"
    return run_with


def tie_logits(requests: list[dict], vocab: int, draft: int, seed: int = 0):
    """Seeded logits ``[len(requests)*draft, vocab]`` with ties at each row's pivot.

    Rows with top-k < vocab: ranks k-2 … k+1 (0-based k-1 is the pivot) take the pivot's
    value. Rows with only top-p < 1: probabilities (after temperature) of 4 head entries
    (0.30, 0.20, 0.12, 0.08), then :data:`TIE_GROUP` equal entries of 0.0135 each (the cut
    for p = 0.9 or 0.95 falls inside the group), the rest equal; logits = T·log(prob), in a
    seeded random order. Other rows: the random logits.
    """
    import torch
    from sglang.srt.sampling.sampling_params import SamplingParams

    from .topk_repro import logits_for

    sps = [SamplingParams(**r) for r in requests]
    out = logits_for(len(requests), vocab, draft, seed).clone()
    g = torch.Generator().manual_seed(seed + 1)
    for i in range(out.shape[0]):
        sp = sps[i // draft]
        if sp.top_k < vocab:
            k = int(sp.top_k)
            order = torch.argsort(out[i], descending=True)
            out[i, order[max(k - 2, 0):min(k + 2, vocab)]] = out[i, order[k - 1]].clone()
        elif sp.top_p < 1.0:
            head = [0.30, 0.20, 0.12, 0.08]
            rest = vocab - len(head) - TIE_GROUP
            if rest <= 0:
                raise ValueError(f"vocab {vocab} too small for the top-p tie design")
            probs = torch.tensor(head + [0.0135] * TIE_GROUP + [0.03 / rest] * rest, dtype=torch.float64)
            cum_head, p = sum(head), float(sp.top_p)
            n_in_group = (p - cum_head) / 0.0135
            if not (0.5 < n_in_group < TIE_GROUP - 0.5) or abs(n_in_group - round(n_in_group)) < 0.1:
                raise ValueError(f"top_p {p} does not cut inside the tie group")
            row = (sp.temperature * torch.log(probs)).to(torch.float32)
            out[i] = row[torch.randperm(vocab, generator=g)]
    return out


def rank_reference(logits, requests: list[dict], draft: int):
    """Naive per-row target with a rank mask: top-k keeps exactly k, top-p the shortest prefix.

    Same steps as :func:`k3lab.probes.topk_repro.reference_target_probs` (softmax(logits/T)
    → top-k → renormalise the batch's rows when any row has a top-k → top-p), but which of
    several tied entries is kept is left to ``torch.sort`` (compare sorted rows).
    """
    import torch
    from sglang.srt.sampling.sampling_params import TOP_K_ALL, SamplingParams

    sps = [SamplingParams(**r) for r in requests]
    any_top_k = any(sp.top_k != TOP_K_ALL for sp in sps)
    vocab = logits.shape[1]
    out = torch.empty_like(logits)
    for i in range(logits.shape[0]):
        sp = sps[i // draft]
        p = torch.softmax(logits[i] / sp.temperature, dim=-1)
        if sp.top_k < vocab:
            idx = torch.sort(p, descending=True, stable=True).indices[: int(sp.top_k)]
            keep = torch.zeros_like(p, dtype=torch.bool)
            keep[idx] = True
            p = torch.where(keep, p, torch.zeros_like(p))
        if any_top_k:
            p = (p.double() / p.double().sum()).float()
        if sp.top_p < 1.0:
            s, idx = torch.sort(p, descending=True, stable=True)
            c = torch.cumsum(s.double(), 0)
            n = int(torch.searchsorted(c, torch.tensor([sp.top_p], dtype=torch.float64) * c[-1]))
            keep = torch.zeros_like(p, dtype=torch.bool)
            keep[idx[: n + 1]] = True
            p = torch.where(keep, p, torch.zeros_like(p))
            p = p / p.sum()
        out[i] = p
    return out.view(-1, draft, vocab)


def _same(a, b) -> bool:
    import torch

    return bool(torch.allclose(a, b, atol=1e-6, rtol=1e-5) and torch.equal(a != 0, b != 0))


def _same_sorted(a, b) -> bool:
    import torch

    a2, b2 = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    sa = torch.sort(a2, dim=-1, descending=True).values
    sb = torch.sort(b2, dim=-1, descending=True).values
    return bool(torch.allclose(sa, sb, atol=1e-6, rtol=1e-5)
                and torch.equal((a2 != 0).sum(-1), (b2 != 0).sum(-1)))


def _tied_rows(requests: list[dict], vocab: int, draft: int):
    """Bool mask of the verify rows where :func:`tie_logits` placed ties."""
    import torch
    from sglang.srt.sampling.sampling_params import SamplingParams

    sps = [SamplingParams(**r) for r in requests]
    return torch.tensor([sps[i // draft].top_k < vocab or sps[i // draft].top_p < 1.0
                         for i in range(len(requests) * draft)])


def _random_verdict(got, ref, requests: list[dict], draft: int) -> str:
    """How the verifier's target compares with the naive reference on random logits.

    ``matches``; or ``matches except: …`` naming the only differences found, each row's
    common entries agreeing within rtol 1e-3: ``drops tail tokens of top_p=1 rows``
    (sglang's torch top-p, ``top_p_normalize_probs_torch``, zeroes entries whose float32
    exclusive cumulative sum exceeds p, which rounding makes happen at p = 1 in a long
    vocabulary) and ``top-p cut moves by <=2 entries in some rows`` (the same float32
    cumulative sum against the reference's float64 one); else ``differs``.
    """
    import torch
    from sglang.srt.sampling.sampling_params import SamplingParams

    if _same(got, ref):
        return "matches"
    vocab = got.shape[-1]
    g, r = got.reshape(-1, vocab), ref.reshape(-1, vocab)
    sps = [SamplingParams(**q) for q in requests]
    effects = set()
    for i in range(g.shape[0]):
        gi, ri = g[i], r[i]
        if _same(gi, ri):
            continue
        sg, sr = gi != 0, ri != 0
        common = sg & sr
        if not torch.allclose(gi[common], ri[common], rtol=1e-3, atol=1e-7):
            return "differs"
        if sps[i // draft].top_p >= 1.0:
            if bool((sg & ~sr).any()):
                return "differs"
            effects.add("drops tail tokens of top_p=1 rows")
        else:
            if int((sg ^ sr).sum()) > 2:
                return "differs"
            effects.add("top-p cut moves by <=2 entries in some rows")
    return "matches except: " + "; ".join(sorted(effects))


class _SoftmaxSpy:
    def __init__(self, real):
        self._real, self.widths = real, []

    def softmax(self, x, *a, **kw):
        self.widths.append(int(x.shape[-1]))
        return self._real.softmax(x, *a, **kw)

    def __getattr__(self, name):
        return getattr(self._real, name)


def _run_verify(mod, fn_name: str, requests: list[dict], logits, draft: int):
    from .topk_repro import sampling_info

    vocab = logits.shape[1]
    info = sampling_info(requests, vocab)
    spy = _SoftmaxSpy(mod.F)
    mod.F = spy
    try:
        got = getattr(mod, fn_name)(next_token_logits=logits, sampling_info=info,
                                    draft_token_num=draft, bs=len(requests))
        err = ""
    except Exception as e:  # the point: record what the scheduler would die of
        got, err = None, _error(e)
    finally:
        mod.F = spy._real
    width = spy.widths[0] if spy.widths else None
    path = "dense" if width == vocab else ("sparse" if width else "none")
    return got, err, path, info


def finding2(vocab: int) -> dict:
    from . import topk_repro

    draft = topk_repro.DRAFT_TOKENS
    refs = {}
    for mix, requests in topk_repro.MIXES.items():
        rnd = topk_repro.logits_for(len(requests), vocab, draft)
        tie = tie_logits(requests, vocab, draft)
        ref_tie = topk_repro.reference_target_probs(tie, requests, draft)
        ref_rank = rank_reference(tie, requests, draft)
        refs[mix] = (rnd, topk_repro.reference_target_probs(rnd, requests, draft), tie, ref_tie, ref_rank,
                     not _same_sorted(ref_tie, ref_rank))
    binds, verify, run_with, fn_used = {}, {}, {}, None
    for plat in PLATFORMS:
        with emulated_platform(plat) as mod:
            binds[plat] = bindings(mod)
            fn_name, _ = _verify_function(mod)
            fn_used = f"{DFLASH}.{fn_name}"
            run_with[plat] = _runnable(mod)
            rows = {}
            for mix, requests in topk_repro.MIXES.items():
                rnd, ref_rnd, tie, ref_tie, ref_rank, distinguishable = refs[mix]
                got, err, path, info = _run_verify(mod, fn_name, requests, rnd, draft)
                row = {"need_top_k": bool(info.need_top_k_sampling),
                       "need_top_p": bool(info.need_top_p_sampling), "path": path,
                       "outcome": "ok" if got is not None else err.split(":", 1)[0],
                       "error": err, "random_matches_reference": None, "ties": "not run"}
                if got is not None:
                    row["random_matches_reference"] = _random_verdict(got, ref_rnd, requests, draft)
                    got_t, err_t, _, _ = _run_verify(mod, fn_name, requests, tie, draft)
                    if got_t is None:
                        row["ties"] = f"crash: {err_t}"
                    else:
                        sel = _tied_rows(requests, vocab, draft)
                        got_t, ref_t, ref_r = got_t.view(-1, vocab)[sel], ref_tie.view(-1, vocab)[sel], \
                            ref_rank.view(-1, vocab)[sel]
                        is_tie, is_rank = _same(got_t, ref_t), _same_sorted(got_t, ref_r)
                        row["ties"] = ("indistinguishable" if not distinguishable and is_tie
                                       else "tie-keeping" if is_tie
                                       else "rank-mask" if is_rank else "differs from both references")
                rows[mix] = row
            verify[plat] = rows
    return {"verify_function": fn_used, "bindings": binds, "run_with": run_with, "verify": verify,
            "ties_distinguishable": {m: r[5] for m, r in refs.items()}}


# --- finding 3 -------------------------------------------------------------------------
#
# Stand-ins (k3lab's, labelled, never AITER's): written here rather than shared with
# k3lab.probes.aiter_backend so that a row does not move when other helpers do.

#: ``mla_reduce_v1`` head counts at v head dim 128 (ROCm/aiter e4048607,
#: csrc/kernels/mla/reduce.cu, MLA_REDUCE_ROUTER, as k3lab recorded them on 2026-12-02). Only
#: "12 is absent, 16 is present" matters here.
AITER_REDUCE_V1_HEADS_DV128 = frozenset({1, 2, 4, 8, 10, 16, 32, 40, 48, 64, 96, 128})
#: q heads AITER's absorbed-form MLA decode kernels are built for (qh16 / qh128).
AITER_DECODE_HEADS = frozenset({16, 128})


def reference_prefill(q, k, v, cu, scale: float):
    """Causal varlen MHA-form attention in float32 (cold prefill: q and k share ``cu``).

    q/k ``[T, H, 192]``, v ``[T, H, 128]`` (any float dtype, fp8 included) → float32
    ``[T, H, 128]``. Each head is computed on its own (batched matmul over heads).
    """
    import torch

    out = torch.zeros((q.shape[0], q.shape[1], v.shape[2]), dtype=torch.float32)
    bounds = [int(x) for x in cu.tolist()]
    for a, b in zip(bounds, bounds[1:]):
        if b == a:
            continue
        qs, ks, vs = (x[a:b].float().transpose(0, 1) for x in (q, k, v))
        s = torch.matmul(qs, ks.transpose(1, 2)) * scale
        n = b - a
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        out[a:b] = torch.matmul(torch.softmax(s, dim=-1), vs).transpose(0, 1)
    return out


class AiterStandIns:
    """k3lab stand-ins for the AITER functions the backend calls (call records kept). Not AITER.

    ``mla_prefill_ps_asm_fwd`` (fp8 ASM MHA-form prefill): reference math into ``output``;
    ``mla_reduce_v1``: refuses head counts it has no instance for (AITER's rule, above);
    ``get_ps_metadata_v1``: records (gqa ratio, kv heads); ``mla_decode_fwd``: 16/128 heads
    only, output = 2·q[..., :d_v]; ``flash_attn_varlen_func`` (CK varlen, any head count):
    reference math.
    """

    def __init__(self):
        self.prefill_heads: list[int] = []
        self.reduce_heads: list[int] = []
        self.decode_heads: list[int] = []
        self.flash_heads: list[int] = []
        self.ps_metadata: list[tuple[int, int]] = []

    def mla_prefill_ps_asm_fwd(self, Q, K, V, qo_indptr, kv_indptr, kv_page_indices, work_indptr,
                               work_info_set, max_seqlen_q, softmax_scale, is_causal, split_data,
                               split_lse, output, q_scale=None, k_scale=None, v_scale=None):
        if K.shape[1] != Q.shape[1]:
            raise RuntimeError("stand-in mla_prefill_ps_asm_fwd: MHA form needs kv heads == q heads")
        self.prefill_heads.append(int(Q.shape[1]))
        output.copy_(reference_prefill(Q, K, V, qo_indptr, float(softmax_scale)).to(output.dtype))

    def mla_reduce_v1(self, partial_output, partial_lse, reduce_indptr, reduce_final_map,
                      reduce_partial_map, tile_q, num_kv_splits, final_output, final_lse=None):
        h, d = final_output.shape[-2], final_output.shape[-1]
        if d != 128 or h not in AITER_REDUCE_V1_HEADS_DV128:
            raise RuntimeError(f"kn_mla_reduce_v1 doesn't support the specified settings: #heads: {h}, "
                               f"head dimension: {d}. (k3lab stand-in reproducing AITER's refusal)")
        self.reduce_heads.append(int(h))

    def get_ps_metadata_v1(self, qo_indptr, kv_indptr, seq_lens, gqa_ratio, num_heads_k, *a, **kw):
        self.ps_metadata.append((int(gqa_ratio), int(num_heads_k)))

    def mla_decode_fwd(self, q, kv_buffer, o, **kwargs):
        if q.shape[1] not in AITER_DECODE_HEADS:
            raise RuntimeError(f"stand-in mla_decode_fwd: no kernel for {q.shape[1]} q heads (qh16/qh128)")
        self.decode_heads.append(int(q.shape[1]))
        o.copy_((2 * q[..., : o.shape[-1]].float()).to(o.dtype))

    def flash_attn_varlen_func(self, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None,
                               max_seqlen_k=None, softmax_scale=None, causal=True, **kwargs):
        if not causal or not bool((cu_seqlens_q == cu_seqlens_k).all()):
            raise RuntimeError("stand-in flash_attn_varlen_func: cold causal prefill only")
        self.flash_heads.append(int(q.shape[1]))
        scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
        return reference_prefill(q, k, v, cu_seqlens_q, float(scale)).to(q.dtype)


_STAND_IN_NAMES = ("mla_prefill_ps_asm_fwd", "mla_reduce_v1", "get_ps_metadata_v1", "mla_decode_fwd",
                   "flash_attn_varlen_func")


@contextlib.contextmanager
def stand_ins_installed(mod, si: AiterStandIns):
    """Bind the stand-ins into the real backend module (the ``from aiter import`` names)."""
    saved = {n: mod.__dict__.get(n, _MISSING) for n in _STAND_IN_NAMES}
    try:
        for n in _STAND_IN_NAMES:
            setattr(mod, n, getattr(si, n))
        yield mod
    finally:
        for n, v in saved.items():
            if v is _MISSING:
                mod.__dict__.pop(n, None)
            else:
                setattr(mod, n, v)


class FakeModelConfig:
    """Stand-in for the fields of sglang's ModelConfig the backend reads (K3-like MLA)."""

    def __init__(self, heads: int = 96, context_len: int = 4096):
        import torch
        from sglang.srt.configs.model_config import AttentionArch

        self.num_attention_heads = heads
        self.dtype = torch.bfloat16
        self.is_multimodal = False
        self.head_dim = 192
        self.v_head_dim = 128
        self.attention_arch = AttentionArch.MLA
        self.context_len = context_len

    def get_num_kv_heads(self, tensor_parallel_size: int) -> int:
        return max(1, self.num_attention_heads // tensor_parallel_size)


def _runner(heads: int, max_bs: int = 4):
    """Stand-in model runner: the attributes ``AiterAttnBackend.__init__`` reads, 0.5.16 … 0.5.23."""
    from types import SimpleNamespace as NS

    import torch

    cfg = FakeModelConfig(heads)
    pool = NS()
    return NS(model_config=cfg, device="cpu", kv_cache_dtype=torch.bfloat16, dtype=torch.bfloat16,
              server_args=NS(page_size=1, speculative_num_draft_tokens=None, speculative_num_steps=None),
              sliding_window_size=None, token_to_kv_pool=pool,
              token_to_kv_pool_allocator=NS(get_kvcache=lambda: pool),
              req_to_token_pool=NS(req_to_token=torch.zeros(max_bs, cfg.context_len, dtype=torch.int32),
                                   size=max_bs),
              decode_attention_backend_str="aiter", prefill_attention_backend_str="aiter",
              kv_index_translator=None)


@contextlib.contextmanager
def aiter_context(tp: int):
    """Stand-in published config bound into the backend module + the TP width override."""
    from types import SimpleNamespace as NS

    from sglang.srt.runtime_context import get_parallel

    mod = importlib.import_module(AITER)
    bags = {"get_spec": NS(speculative_num_draft_tokens=None, speculative_num_steps=None,
                           speculative_algorithm=None, speculative_attention_mode="prefill"),
            "get_schedule": NS(page_size=1)}
    saved = {n: mod.__dict__.get(n, _MISSING) for n in bags}
    over = {"attn_tp_size": tp}
    try:
        get_parallel().attn_dcp_size
    except Exception:
        over["attn_dcp_size"] = 1
    try:
        for n, bag in bags.items():
            if saved[n] is not _MISSING:
                setattr(mod, n, (lambda b=bag: b))
        with get_parallel().override(**over):
            yield mod
    finally:
        for n, v in saved.items():
            if v is not _MISSING:
                setattr(mod, n, v)


def construct(total_heads: int, tp: int):
    with aiter_context(tp) as mod:
        mod._use_fp8_prefill_attn = True        # gfx950 (is_gfx95_supported() is false on CPU)
        return mod.AiterAttnBackend(_runner(total_heads))


def _ranges(ns: list[int]) -> str:
    out, start = [], None
    for i, n in enumerate(ns):
        if start is None:
            start = n
        if i + 1 == len(ns) or ns[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ", ".join(out)


def varlen_batch(seq_lens, heads: int, seed: int = 3):
    """Seeded bf16 q/k ``[T, heads, 192]``, v ``[T, heads, 128]`` and int32 cu_seqlens."""
    import torch

    g = torch.Generator().manual_seed(seed)
    t = sum(seq_lens)
    q, k = (torch.randn(t, heads, 192, generator=g).to(torch.bfloat16) for _ in range(2))
    v = torch.randn(t, heads, 128, generator=g).to(torch.bfloat16)
    cu = torch.tensor([0] + torch.tensor(list(seq_lens)).cumsum(0).tolist(), dtype=torch.int32)
    return q, k, v, cu


def _cold_prefill(mod, backend, heads: int, seed: int = 3):
    """The real ``forward_extend`` on an EXTEND batch without prefix (stand-in metadata)."""
    import dataclasses
    from types import SimpleNamespace as NS

    import torch
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    lens = list(PREFILL_SEQ_LENS)
    q, k, v, cu = varlen_batch(lens, heads, seed)
    t = q.shape[0]
    backend.token_to_kv_pool.get_key_buffer = lambda layer_id: torch.zeros(t, 1, 576, dtype=torch.bfloat16)
    backend.token_to_kv_pool.get_value_buffer = lambda layer_id: torch.zeros(t, 1, 512, dtype=torch.bfloat16)
    z2, z1 = torch.zeros(2, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    values = dict(kv_indptr=cu, kv_indices=torch.arange(t, dtype=torch.int32), qo_indptr=cu,
                  kv_last_page_len=torch.ones(len(lens), dtype=torch.int32), max_q_len=max(lens),
                  max_kv_len=max(lens), work_metadata=z1, work_indptr=z2, work_info_set=z1,
                  reduce_indptr=z2, reduce_final_map=z1, reduce_partial_map=z1,
                  fp8_prefill_kv_indices=torch.arange(t, dtype=torch.int32), is_causal=True,
                  need_lse=False, num_partial_tiles=0)
    if hasattr(mod, "MlaPrefillPsMetadata"):
        ps_fields = {f.name for f in dataclasses.fields(mod.MlaPrefillPsMetadata)}
        values["prefill_ps_metadata"] = mod.MlaPrefillPsMetadata(
            **{n: v_ for n, v_ in values.items() if n in ps_fields})
    fm_fields = {f.name for f in dataclasses.fields(mod.ForwardMetadata)}
    backend.forward_metadata = mod.ForwardMetadata(**{n: v_ for n, v_ in values.items() if n in fm_fields})
    layer = NS(logit_cap=0.0, is_cross_attention=False, k_scale=None, v_scale=None, layer_id=0,
               tp_q_head_num=heads, tp_k_head_num=heads, tp_v_head_num=heads, qk_head_dim=192,
               v_head_dim=128, head_dim=192, scaling=1 / 192 ** 0.5, sliding_window_size=None)
    batch = NS(forward_mode=ForwardMode.EXTEND, out_cache_loc=torch.arange(t),
               extend_prefix_lens_cpu=[0] * len(lens), encoder_out_cache_loc=None,
               attn_attend_prefix_cache=False, mha_return_lse=False, num_prefix_chunks=0,
               extend_prefix_lens=torch.zeros(len(lens), dtype=torch.int32),
               extend_seq_lens=torch.tensor(lens, dtype=torch.int32))
    out = backend.forward_extend(q, k, v, layer, batch, save_kv_cache=False)
    return out, (q, k, v, cu, layer)


def _prefill_equality(mod, backend, heads: int = 12) -> dict:
    """Real cold prefill for ``heads`` vs :func:`k3lab.attention.with_head_padding` around the
    same stand-in kernel.

    gfx950 is emulated (fp8 prefill switch on). Which AITER kernel the backend called is
    recorded: the fp8 ASM prefill (``mla_prefill_ps_asm_fwd`` + ``mla_reduce_v1``, inputs cast
    to the module's ``fp8_dtype`` as sglang does) or the CK varlen ``flash_attn_varlen_func``;
    the comparison wraps that same stand-in, fed the same way.
    """
    import torch

    from .. import attention as A

    si = AiterStandIns()
    saved_flag = mod.__dict__.get("_use_fp8_prefill_attn", _MISSING)
    try:
        mod._use_fp8_prefill_attn = True
        with stand_ins_installed(mod, si):
            out, (q, k, v, cu, layer) = _cold_prefill(mod, backend, heads)
    except Exception as e:
        return {"ok": False, "error": _error(e), "kernel_heads": si.prefill_heads or si.flash_heads}
    finally:
        if saved_flag is _MISSING:
            mod.__dict__.pop("_use_fp8_prefill_attn", None)
        else:
            mod._use_fp8_prefill_attn = saved_flag
    scale = layer.scaling
    si2 = AiterStandIns()
    if si.prefill_heads:
        fp8 = getattr(mod, "fp8_dtype", torch.float8_e4m3fn)

        def same_kernel(q_, k_, v_, cu_):
            o = q_.new_empty((q_.shape[0], q_.shape[1], 128), dtype=torch.bfloat16)
            si2.mla_prefill_ps_asm_fwd(q_.to(fp8), k_.to(fp8), v_.to(fp8), cu_, cu_, None, None, None,
                                       max(PREFILL_SEQ_LENS), scale, True, None, None, o)
            si2.mla_reduce_v1(None, None, None, None, None, 256, 0, o)
            return o

        kernel, kernel_heads = "mla_prefill_ps_asm_fwd + mla_reduce_v1 (fp8 ASM)", si.prefill_heads
        ref = reference_prefill(q.to(fp8), k.to(fp8), v.to(fp8), cu, scale).to(torch.bfloat16)
    else:
        def same_kernel(q_, k_, v_, cu_):
            return si2.flash_attn_varlen_func(q_, k_, v_, cu_, cu_, max(PREFILL_SEQ_LENS),
                                              max(PREFILL_SEQ_LENS), softmax_scale=scale, causal=True)

        kernel, kernel_heads = "flash_attn_varlen_func (CK, bf16)", si.flash_heads
        ref = reference_prefill(q, k, v, cu, scale).to(q.dtype)
    padded = A.with_head_padding(same_kernel)(q, k, v, cu)
    return {"ok": True, "kernel": kernel, "kernel_heads": kernel_heads,
            "reduce_heads": si.reduce_heads, "out_shape": list(out.shape),
            "padded_heads_content": (_pad_content(backend, q, heads) if si.prefill_heads else "no padding"),
            "comparison_kernel_heads": si2.prefill_heads or si2.flash_heads,
            "max_abs_diff_vs_with_head_padding": float((out.float() - padded.float()).abs().max()),
            "bitwise_equal_to_with_head_padding": bool(torch.equal(out, padded)),
            "max_abs_diff_vs_unpadded_reference": float((out.float() - ref.float()).abs().max())}


def _pad_content(backend, q, heads: int) -> str:
    """What the fp8 prefill's extra heads hold: zeros (k3lab patch), tiled copies (sglang), none."""
    import torch

    if getattr(backend, "k3lab_padded_heads", None):
        return "zeros (k3lab with_head_padding inside the patched method)"
    m = getattr(backend, "fp8_prefill_num_head", None)
    if m is None or m == heads or not hasattr(backend, "pad_heads"):
        return "no padding"
    p = backend.pad_heads(q, m)
    if torch.equal(p[:, heads:], torch.zeros_like(p[:, heads:])):
        return "zeros"
    if torch.equal(p[:, heads:], q[:, : m - heads]):
        return f"tiled copies of heads 0..{m - heads - 1}"
    return "other"


def _decode_12(mod, backend) -> dict:
    """The real ``_mla_decode_fwd_with_head_pad`` on 12 heads with the decode stand-in."""
    import torch

    from types import SimpleNamespace as NS

    si = AiterStandIns()
    q = (torch.arange(3 * 12 * 576, dtype=torch.float32).reshape(3, 12, 576) / 1000).to(torch.bfloat16)
    layer = NS(v_head_dim=512, tp_q_head_num=12)
    try:
        with stand_ins_installed(mod, si):
            o = backend._mla_decode_fwd_with_head_pad(q, torch.zeros(4, 1, 576, dtype=torch.bfloat16),
                                                      layer, max_seqlen_q=1)
    except Exception as e:
        return {"ok": False, "error": _error(e)}
    expect = (2 * q[..., :512].float()).to(torch.bfloat16)
    return {"ok": True, "kernel_heads": si.decode_heads, "out_shape": list(o.shape),
            "equal_to_unpadded": bool(torch.equal(o, expect))}


def finding3() -> dict:
    from .. import attention as A

    mod = importlib.import_module(AITER)
    res: dict = {"module": AITER}
    accepted = []
    for n in HEAD_SWEEP:
        try:
            construct(n, 1)
            accepted.append(n)
        except AssertionError:
            pass
    res["accepted_heads_tp1"] = _ranges(accepted)
    res["accepts_12"] = 12 in accepted
    res["matches_k3lab_is_supported_heads"] = accepted == [n for n in HEAD_SWEEP if A.is_supported_heads(n)]
    try:
        backend = construct(96, 8)
        res["error_12"] = ""
        res["mode_12"] = {
            "num_head": backend.num_head,
            "num_head_padded": getattr(backend, "num_head_padded", None),
            "head_pad_mode": getattr(backend, "head_pad_mode", "(no head_pad_mode)"),
            "head_repeat_factor": getattr(backend, "head_repeat_factor", None),
            "fp8_prefill_num_head": getattr(backend, "fp8_prefill_num_head", None),
            "mla_kernel_num_head_padded": getattr(backend, "mla_kernel_num_head_padded", None)}
        res["prefill_12"] = _prefill_equality(mod, backend)
        res["decode_12"] = _decode_12(mod, backend)
        res["k3lab_patch"] = "not needed"
    except AssertionError as e:
        res["error_12"] = _sanitize(f"AssertionError: {e}")
        res["mode_12"] = None
        res["prefill_12"] = None
        res["decode_12"] = None
        res["k3lab_patch"] = _with_k3lab_patch(mod)
    return res


def _with_k3lab_patch(mod) -> dict:
    from importlib.metadata import version

    from ..patches.aiter_head_pad import PATCH

    v = version("sglang")
    forced = v not in PATCH.known_versions
    try:
        PATCH.apply(v, force=True)
    except Exception as e:
        return {"forced": forced, "applies": False, "error": _error(e)}
    try:
        backend = construct(96, 8)
        out = {"forced": forced, "applies": True,
               "num_head_padded": backend.num_head_padded,
               "prefill_12": _prefill_equality(mod, backend),
               "decode_12": _decode_12(mod, backend)}
    except Exception as e:
        out = {"forced": forced, "applies": True, "error": _error(e)}
    finally:
        PATCH.revert()
    return out


def default_attention_backend_hip() -> dict:
    """sglang's own automatic attention-backend choice for an MLA model on ROCm (no flag given).

    0.5.16–0.5.18: ``ServerArgs._get_default_attn_backend`` with the ``server_args`` module's
    ``is_hip`` / ``is_hopper_with_cuda_12_3`` / ``is_sm100_supported`` replaced by constants
    (HIP, not Hopper, not SM100); 0.5.19 on: ``arg_groups.model_override_base.
    get_default_attn_backend`` under sglang's ``override_platform(is_hip=True, …)``. The
    ``self``/``server_args`` (only ``tp_size`` and ``speculative_algorithm`` are read) and the
    model config (K3's architecture, ``get_num_kv_heads`` = 96 // TP as K3's config has 96 KV
    heads) are stand-ins. → {"<heads> heads TP<tp> (<per rank>/rank)": backend}.
    """
    from types import SimpleNamespace as NS

    cases = ((96, 8), (96, 6), (128, 8))

    def model_config(heads):
        return NS(hf_config=NS(architectures=["KimiK3ForConditionalGeneration"]),
                  get_num_kv_heads=lambda tp: heads // tp, has_attention_sinks=False,
                  has_asymmetric_kv=False)

    out = {}
    try:
        mob = importlib.import_module("sglang.srt.arg_groups.model_override_base")
        fn = getattr(mob, "get_default_attn_backend", None)
    except ImportError:
        fn = None
    if fn is not None:
        from sglang.srt.runtime_context import override_platform

        with override_platform(is_hip=True, is_cuda=False, is_sm100=False, is_hopper_with_cuda_12_3=False):
            for heads, tp in cases:
                out[f"{heads} heads TP{tp} ({heads // tp}/rank)"] = fn(
                    NS(tp_size=tp, speculative_algorithm=None), True, model_config(heads))
        out["selector"] = "sglang.srt.arg_groups.model_override_base.get_default_attn_backend"
        return out
    S = importlib.import_module("sglang.srt.server_args")
    names = {"is_hip": True, "is_hopper_with_cuda_12_3": False, "is_sm100_supported": False}
    saved = {n: S.__dict__.get(n, _MISSING) for n in names}
    try:
        for n, val in names.items():
            setattr(S, n, (lambda v=val: v))
        for heads, tp in cases:
            out[f"{heads} heads TP{tp} ({heads // tp}/rank)"] = S.ServerArgs._get_default_attn_backend(
                NS(tp_size=tp, speculative_algorithm=None), True, model_config(heads))
    finally:
        for n, val in saved.items():
            if val is _MISSING:
                S.__dict__.pop(n, None)
            else:
                setattr(S, n, val)
    out["selector"] = "sglang.srt.server_args.ServerArgs._get_default_attn_backend"
    return out


def kimi_k3() -> dict:
    import sglang

    f = Path(sglang.__file__).resolve().parent.parent / KIMI_K3
    if not f.is_file():
        return {"model_file": False, "entry_classes": []}
    m = re.search(r"^EntryClass\s*=\s*\[?([^\]\n]*)\]?", f.read_text(encoding="utf-8"), re.M)
    classes = [c.strip() for c in m.group(1).split(",") if c.strip()] if m else []
    return {"model_file": True, "entry_classes": classes}


def measure(vocab: int = DEFAULT_VOCAB) -> dict:
    """In the child: the whole row for the sglang on ``sys.path``."""
    from importlib.metadata import version

    import torch

    torch.manual_seed(0)
    row = {"sglang": version("sglang")}
    row.update(finding2(vocab))
    row["aiter"] = finding3()
    row["aiter"]["default_backend_on_hip"] = default_attention_backend_hip()
    row["kimi_k3"] = kimi_k3()
    return row


def _child(argv: list[str]) -> int:
    import argparse
    from importlib.metadata import version

    ap = argparse.ArgumentParser()
    ap.add_argument("--child", required=True)
    ap.add_argument("--expect", required=True)
    ap.add_argument("--vocab", type=int, default=DEFAULT_VOCAB)
    ap.add_argument("--site", action="store_true",
                    help="measure the interpreter's own sglang (no PYTHONPATH)")
    a = ap.parse_args(argv)
    import sglang

    where = Path(sglang.__file__).resolve()
    roots = [Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    from_path = any(r in where.parents for r in roots)
    if version("sglang") != a.expect or from_path == a.site:
        raise SystemExit(f"expected sglang {a.expect} from PYTHONPATH, got {version('sglang')} "
                         f"from {where}")
    row = measure(a.vocab)
    Path(a.child).write_text(json.dumps(row, indent=2, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))
