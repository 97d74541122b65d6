"""The child process: measure the sglang on ``sys.path`` and write its row as JSON.

:func:`k3lab.probes.release_matrix.run_release` starts ``python -m k3lab.probes.release_matrix
--child OUT --expect VERSION [--vocab N] [--site]`` (see ``__main__.py``) with ``PYTHONPATH``
set to the release's folder, or unset for the interpreter's own sglang (``--site``).
:func:`_child` checks that the sglang it imports is that release from that place, then
:func:`measure` builds the row: finding 2 (:mod:`.f2_verify`), finding 3 (:mod:`.f3_aiter`),
sglang's default attention backend on ROCm (:mod:`.default_backend`) and whether the release
ships ``sglang/srt/models/kimi_k3.py`` and the classes it registers (:func:`kimi_k3`).

sglang is imported inside functions: it must be the release ``PYTHONPATH`` selected.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from importlib.metadata import version
from pathlib import Path

import torch

from ..topk_repro import DEFAULT_VOCAB
from .default_backend import default_attention_backend_hip
from .f2_verify import finding2
from .f3_aiter import finding3

KIMI_K3 = "sglang/srt/models/kimi_k3.py"


def kimi_k3() -> dict:
    import sglang   # child: release on PYTHONPATH

    f = Path(sglang.__file__).resolve().parent.parent / KIMI_K3
    if not f.is_file():
        return {"model_file": False, "entry_classes": []}
    m = re.search(r"^EntryClass\s*=\s*\[?([^\]\n]*)\]?", f.read_text(encoding="utf-8"), re.M)
    classes = [c.strip() for c in m.group(1).split(",") if c.strip()] if m else []
    return {"model_file": True, "entry_classes": classes}


def measure(vocab: int = DEFAULT_VOCAB) -> dict:
    """In the child: the whole row for the sglang on ``sys.path``."""
    torch.manual_seed(0)
    row = {"sglang": version("sglang")}
    row.update(finding2(vocab))
    row["aiter"] = finding3()
    row["aiter"]["default_backend_on_hip"] = default_attention_backend_hip()
    row["kimi_k3"] = kimi_k3()
    return row


def _child(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--child", required=True)
    ap.add_argument("--expect", required=True)
    ap.add_argument("--vocab", type=int, default=DEFAULT_VOCAB)
    ap.add_argument("--site", action="store_true",
                    help="measure the interpreter's own sglang (no PYTHONPATH)")
    a = ap.parse_args(argv)
    import sglang   # child: release on PYTHONPATH

    where = Path(sglang.__file__).resolve()
    roots = [Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    from_path = any(r in where.parents for r in roots)
    if version("sglang") != a.expect or from_path == a.site:
        raise SystemExit(f"expected sglang {a.expect} from PYTHONPATH, got {version('sglang')} "
                         f"from {where}")
    row = measure(a.vocab)
    Path(a.child).write_text(json.dumps(row, indent=2, sort_keys=True), encoding="utf-8")
    return 0
