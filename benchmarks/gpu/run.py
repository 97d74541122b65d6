"""The GPU benchmark of findings 2 and 3 (issue 32): one prepared command for a lent GPU.

    python benchmarks/gpu/run.py                          # --device cuda: the full sweep, sized for ~8 min on an H200
    python benchmarks/gpu/run.py --device cpu --quick     # the same path on a CPU, tiny shapes, seconds

Writes ``gpu_bench_{prefill,decode,renorm,kernels}.csv`` and ``gpu_bench.meta.json`` into
``data/measured/<device kind>/`` (e.g. ``nvidia-h200``) or ``--out-dir``. The code is
:mod:`k3lab.live.gpu_bench`; docs/gpu-benchmarks.md says how to run it and what it writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's k3lab, however it is run

from k3lab.live.gpu_bench import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
