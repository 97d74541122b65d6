"""Per-rank weight bytes from sglang 0.5.23's real Kimi K3 module (issue 13, part 1).

Run in the compatibility environment (``make sglang-env``)::

    .venv-sglang/bin/python benchmarks/sglang_k3_rank_bytes.py
    .venv-sglang/bin/python benchmarks/sglang_k3_rank_bytes.py --layouts tp8 tp16   # a subset

Builds ``sglang.srt.models.kimi_k3.KimiK3LinearForCausalLM`` on the meta device, one child
process per rank with sglang 0.5.23 first on ``PYTHONPATH`` (``k3lab.probes.sglang_k3_build``),
for every layout of ``LAYOUTS`` (TP8, TP16, TP8×PP2 both stages, EP8 without and with an
all-to-all backend, DP attention, DP attention + EP8) on CUDA SM100 (flashinfer_mxfp4) and ROCm AITER
with ``SGLANG_AITER_K3_OPT`` unset and ``=1``; TP rank 0 of each stage (all TP ranks of
``tp8`` on CUDA are built too, to show they are equal).

Writes ``data/measured/cpu-2core/sglang_0523_k3_rank_bytes.json`` (deterministic: no
times, no paths; tests/sglang/test_sglang_k3_rank_bytes.py regenerates two cases and
compares) and ``sglang_0523_k3_rank_bytes.meta.json`` (machine, versions, date, command,
wall time). About 10 minutes on 2 cores (~15-25 s per rank, 29 builds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

from k3lab import io
from k3lab.paths import MEASURED_DIR
from k3lab.probes import sglang_k3_build as probe

NAME = "sglang_0523_k3_rank_bytes"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--out-dir", type=Path, default=MEASURED_DIR / "cpu-2core")
    ap.add_argument("--layouts", nargs="*", default=None, choices=sorted(probe.LAYOUTS),
                    help="a subset of the layouts (default: all)")
    ap.add_argument("--no-rank-check", action="store_true", help="skip building every TP rank of tp8")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    doc = probe.transcript(a.layouts, rank_checks=() if a.no_rank_check else probe.RANK_CHECKS,
                           progress=lambda msg: print(f"[k3lab] {msg}", flush=True))
    wall = time.monotonic() - t0
    io.write_json(a.out_dir / f"{NAME}.json", doc)
    import torch

    meta = {"machine": platform.machine(), "cpu": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(), "python": platform.python_version(),
            "torch": torch.__version__, "sglang": doc["sglang_version"],
            "sglang_in_parent": version("sglang"), "transformers": version("transformers"),
            "date": dt.date.today().isoformat(),
            "command": "python benchmarks/sglang_k3_rank_bytes.py "
                       + " ".join(argv if argv is not None else sys.argv[1:]),
            "environment": ".venv-sglang (make sglang-env); children run with "
                           ".venv-sglang/sglang-0.5.23 first on PYTHONPATH "
                           "(requirements/sglang-0.5.23.txt)",
            "quantization_config": probe.QUANT_CONFIG_SOURCE,
            "builds": len(doc["cases"]) + sum(len(c["bytes_per_world_rank"])
                                              for c in doc["rank_checks"].values())
                      + len(doc["expected_failures"]),
            "wall_time_s": round(wall),
            "note": "meta-device builds on CPU; platforms emulated (see k3lab/probes/sglang_k3_build/)"}
    io.write_json(a.out_dir / f"{NAME}.meta.json", meta)
    print(f"[k3lab] wrote {NAME}.json ({len(doc['cases'])} ranks) in {wall:.0f} s")
    for k, h in doc["heaviest"].items():
        print(f"  {k:40s} {h['loaded_GiB']:9.3f} GiB loaded  ({h['GiB']:.3f} GiB parameters + buffers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
