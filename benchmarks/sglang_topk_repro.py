"""Finding 2 on real sglang 0.5.16 (CPU): blast-radius table + the child-process NameError.

Run in the compatibility environment (``make sglang-env``)::

    .venv-sglang/bin/python benchmarks/sglang_topk_repro.py

Writes ``data/measured/cpu-2core/sglang_topk_repro.json`` (deterministic: no times, no
paths; tests/sglang/test_topk_repro.py regenerates it and compares) and
``sglang_topk_repro.meta.json`` (machine, versions, date, command). ~1 minute.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
from importlib.metadata import version
from pathlib import Path

import torch

from k3lab import io
from k3lab.paths import MEASURED_DIR
from k3lab.probes import topk_repro

NAME = "sglang_topk_repro"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--out-dir", type=Path, default=MEASURED_DIR / "cpu-2core")
    a = ap.parse_args(argv)
    doc = topk_repro.transcript()
    io.write_json(a.out_dir / f"{NAME}.json", doc)
    meta = {"machine": platform.machine(), "cpu": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(), "python": platform.python_version(),
            "torch": torch.__version__, "sglang": version("sglang"),
            "transformers": version("transformers"),
            "date": dt.date.today().isoformat(),
            "command": "python benchmarks/sglang_topk_repro.py " + " ".join(argv or sys.argv[1:]),
            "environment": ".venv-sglang (make sglang-env; requirements/sglang-0.5.16.txt)"}
    io.write_json(a.out_dir / f"{NAME}.meta.json", meta)
    print(f"[k3lab] wrote {NAME}.json ({len(doc['rows'])} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
