"""Measure MLA prefill attention time with 12 heads vs zero-padded 16 (finding 3).

    .venv/bin/python benchmarks/attention_heads.py                 # CPU, 1k..32k, ~4-6 min on 2 cores
    .venv/bin/python benchmarks/attention_heads.py --device cuda --machine nvidia-h200
    .venv/bin/python benchmarks/attention_heads.py --smoke         # 512..2k, seconds

Writes ``data/measured/<machine>/attention_heads.csv`` and ``attention_heads.meta.json``
(machine, versions, date, command). Notebook 03 replays them offline.
"""

from __future__ import annotations

import argparse
import sys

import torch

from k3lab import io
from k3lab.live import kernel_timing as headbench
from k3lab.paths import MEASURED_DIR


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--machine", default=None, help="folder under data/measured (default cpu-2core)")
    ap.add_argument("--lens", type=int, nargs="*", default=None)
    ap.add_argument("--repeats", type=int, default=None, help="repeats for every length")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    lens = a.lens or ((512, 1024, 2048) if a.smoke else headbench.DEFAULT_LENS)
    reps = a.repeats if a.repeats is not None else (3 if a.smoke else None)
    machine = a.machine or ("cpu-2core" if a.device == "cpu" else "gpu")
    df = headbench.measure(lens, reps, device=a.device, dtype=getattr(torch, a.dtype))
    out = MEASURED_DIR / machine
    cmd = "python benchmarks/attention_heads.py " + " ".join(argv if argv is not None else sys.argv[1:])
    io.write_csv(df, out / "attention_heads.csv")
    io.write_json(out / "attention_heads.meta.json", headbench.machine_meta(a.device, cmd.strip()))
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
