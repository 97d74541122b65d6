"""Which sglang release has which bug: the committed release matrix, read as data.

``data/measured/cpu-2core/sglang_release_matrix.json`` is measured by the probe package
(:mod:`k3lab.probes.release_matrix`, ``benchmarks/sglang_release_matrix.py``) and read here,
through the loader (:mod:`k3lab.data`, schema :class:`k3lab.schemas.transcripts.ReleaseMatrix`).
The notebooks ask this module whether a release is broken; it never imports the probes.
The patches an operator installs (the ``k3lab-patches`` distribution, ``patches/``) cannot
read ``data/``: they ship :func:`patch_verdicts` of this matrix as
``patches/k3lab_patches/release_verdicts.json`` (written by :func:`write_patch_verdicts`;
a test fails when it is stale). Standard library and the loader only.
"""

from __future__ import annotations

from pathlib import Path

from . import data, io
from .paths import REPO_ROOT
from .versions import version_key  # noqa: F401  (the matrix's order)

NAME = "sglang_release_matrix"
#: the file name of the committed matrix (under ``data/measured/cpu-2core/``)
MATRIX = Path(data.SCHEMAS[NAME][0]).name


def load_matrix(path: Path | None = None) -> dict:
    """The committed matrix (checked, cached), or the one at ``path`` (checked the same way)."""
    return data.load(NAME) if path is None else data.read(NAME, path)


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


#: k3lab_patches' patch name → the matrix's reading of a row that says the release needs it
PATCH_VERDICTS = {"topk_renorm": hip_verify_crashes, "aiter_head_pad": aiter_refuses_12_heads}
#: where the k3lab-patches distribution keeps its copy (k3lab_patches.releases.VERDICTS)
VERDICTS_PATH = REPO_ROOT / "patches" / "k3lab_patches" / "release_verdicts.json"


#: the release facts an operator needs beside the verdicts: does the release ship Kimi K3's model
#: module, and which attention backend it picks on HIP for Kimi K3's 96 heads at TP8 (12 per rank)
K3_FACTS = {"kimi_k3_module": lambda r: bool(r["kimi_k3"]["model_file"]),
            "hip_default_attention_k3_tp8": lambda r: r["aiter"]["default_backend_on_hip"]["96 heads TP8 (12/rank)"]}


def patch_verdicts(doc: dict | None = None) -> dict:
    """The matrix reduced to what the patches need: per measured release, oldest first,
    whether it has the bug each patch fixes (``{"sglang": v, "topk_renorm": bool, …}``), and
    the release facts of :data:`K3_FACTS` (``kimi_k3_module``, ``hip_default_attention_k3_tp8``), the exception
    the top-k transcript raised on the release it ran (``topk_crash``), and :func:`k3_images`."""
    doc = load_matrix() if doc is None else doc
    rows = [{"sglang": r["sglang"], **{n: bool(f(r)) for n, f in PATCH_VERDICTS.items()},
             **{k: f(r) for k, f in K3_FACTS.items()}} for r in doc["rows"]]
    # the exception the top-k transcript saw on a release it ran (0.5.16: a TypeError, not the article's NameError;
    # newcomer 51 found that only in the bottom line)
    t = data.load("sglang_topk_repro")
    seen = {x["error"].split(":")[0] for x in t["rows"] if x["state"] == t["sglang_version"] and x["outcome"] != "ok"}
    for r in rows:
        if r["sglang"] == t["sglang_version"] and r["topk_renorm"] and len(seen) == 1:
            r["topk_crash"] = seen.pop()
    return {"source": (f"k3lab study, data/measured/cpu-2core/{MATRIX} (measured "
                       f"{data.load(NAME + '_meta')['date']}); rewritten by "
                       "benchmarks/sglang_release_matrix.py"),
            "meaning": {"topk_renorm": "a request mix crashes the speculative verify path on HIP",
                        "aiter_head_pad": "the AITER attention backend refuses 12 heads per rank",
                        "kimi_k3_module": "the release ships sglang/srt/models/kimi_k3.py (it can run Kimi K3)",
                        "hip_default_attention_k3_tp8": "the attention backend sglang picks on HIP for 96 heads "
                                                        "at TP8 unless --attention-backend says otherwise"},
            "rows": rows, "k3_images": k3_images()}


def k3_images() -> dict:
    """The article's Kimi K3 images as the study emulated them (not a measured release: newcomers 49-50 found no
    row for the NameError the question names): the state label and the exception the emulation raised
    (``data/measured/cpu-2core/sglang_topk_repro.json``, its PR #32621 state: top-p bound on HIP, top-k never),
    beside the version those images report (``data/public_measurements.yaml``'s ROCm runs on them)."""
    import re

    t = data.load("sglang_topk_repro")
    seen = sorted({m.group(1) for x in data.load("public_measurements").measurements
                   for m in [re.search(r"reporting\s+(\S+?\.dev\d+)", " ".join((x.engine_version or "").split()))] if m})
    return {"state": t["state_labels"]["pr32621"], "raises": t["crash"]["last_line"].split(":")[0],
            "reports": seen[0] if seen else None,
            "source": "k3lab study, data/measured/cpu-2core/sglang_topk_repro.json (emulated on 0.5.16's code)"}


def write_patch_verdicts(path: Path | None = None, doc: dict | None = None) -> Path:
    """Write :func:`patch_verdicts` where k3lab-patches ships it (default :data:`VERDICTS_PATH`)."""
    return io.write_json(VERDICTS_PATH if path is None else path, patch_verdicts(doc))
