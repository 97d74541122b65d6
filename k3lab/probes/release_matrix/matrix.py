"""The matrix document: build it from child processes, load the committed one, read it.

:func:`run_release` measures one release in a child process (:mod:`.child`) → its row;
:func:`build_matrix` gathers rows with the method and request mixes; reading the committed
matrix (:func:`load_matrix`, :func:`lookup`, the verdicts :func:`hip_verify_crashes` and
:func:`aiter_refuses_12_heads` the patches use) lives in :mod:`k3lab.release_status` and is
re-exported here; :func:`summary_frame` is one line per release for the notebooks. No
sglang needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ...paths import REPO_ROOT
from ...release_status import MATRIX, aiter_refuses_12_heads, hip_verify_crashes, load_matrix, lookup  # noqa: F401
from .. import topk_repro
from ..topk_repro import DEFAULT_VOCAB
from .emulation import PLATFORMS
from .f2_verify import TIE_GROUP
from .releases import _no_pythonpath_env, installed_releases, release_source, version_key

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


def _mixes():
    return topk_repro.MIXES


def _draft_tokens() -> int:
    return topk_repro.DRAFT_TOKENS


def run_release(version: str, python: str | None = None, vocab: int = DEFAULT_VOCAB,
                timeout_s: float = 1800) -> dict:
    """Measure one release in a child process → its row (see the package doc).

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


def summary_frame(doc: dict):
    """One line per release: bindings per platform, verify behaviour, AITER, kimi_k3.py."""
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
