"""Findings 2 and 3 on every sglang release from 0.5.16 on (CPU), one child process each.

``make release-matrix`` installs the releases (``make sglang-releases``:
``requirements/sglang-releases.txt``, ~2.5 minutes, 1.3 GB) and runs this script in the
compatibility environment; by hand::

    .venv-sglang/bin/python benchmarks/sglang_release_matrix.py [--versions 0.5.16 0.5.19]

Each release runs in ``.venv-sglang``'s Python with ``PYTHONPATH`` set to its folder
(:mod:`k3lab.probes.release_matrix`). The committed run took 1,054 s for all eight
(45–192 s per release, ``wall_seconds_per_release`` in the meta file) on a shared 2-core box. Writes ``data/measured/cpu-2core/sglang_release_matrix.json`` (deterministic: no
times, no paths; ``tests/sglang/test_release_matrix.py`` regenerates rows and compares) and
``sglang_release_matrix.meta.json`` (machine, versions, date, command), and — when writing
the committed matrix — the verdicts the ``k3lab-patches`` distribution ships
(``patches/k3lab_patches/release_verdicts.json``). A release that is
listed in the requirements file but not installed is an error, not a silent gap.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

import torch

from k3lab import io, release_status
from k3lab.paths import MEASURED_DIR
from k3lab.probes import release_matrix as RM

NAME = "sglang_release_matrix"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--out-dir", type=Path, default=MEASURED_DIR / "cpu-2core")
    ap.add_argument("--versions", nargs="*", default=None,
                    help="releases to measure (default: every pin of requirements/sglang-releases.txt)")
    ap.add_argument("--vocab", type=int, default=RM.DEFAULT_VOCAB)
    a = ap.parse_args(argv)
    versions = a.versions if a.versions else RM.requirements_versions()
    missing = [v for v in versions if not (RM.release_dir(v) / "sglang").is_dir()]
    if missing:
        print(f"[k3lab] not installed under .venv-sglang/releases: {', '.join(missing)} "
              f"(see this script's docstring)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    seconds = {}
    rows = []
    for v in sorted(versions, key=RM.version_key):
        t = time.perf_counter()
        rows.append(RM.run_release(v, vocab=a.vocab))
        seconds[v] = round(time.perf_counter() - t, 1)
        print(f"[k3lab] sglang {v}: {seconds[v]} s", flush=True)
    doc = {"vocab": a.vocab, "draft_tokens": RM._draft_tokens(), "platforms": list(RM.PLATFORMS),
           "mixes": list(RM._mixes()), "method": RM.METHOD, "rows": rows}
    io.write_json(a.out_dir / f"{NAME}.json", doc)
    meta = {"machine": platform.machine(), "cpu": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": version("transformers"),
            "sglang_releases": [r["sglang"] for r in rows],
            "date": dt.date.today().isoformat(),
            "command": "python benchmarks/sglang_release_matrix.py " + " ".join(argv or sys.argv[1:]),
            "environment": (".venv-sglang (make sglang-env; requirements/sglang-0.5.16.txt) with each "
                            "release from requirements/sglang-releases.txt on PYTHONPATH in its own child "
                            "process"),
            "wall_seconds_per_release": seconds,
            "wall_seconds_total": round(time.perf_counter() - t0, 1),
            "notes": ("CPU only. CUDA/HIP are emulated (sglang's platform checks replaced, modules "
                      "reloaded) with labelled k3lab stand-ins for compiled kernels; see the JSON's "
                      "'method'. Times are for a shared 2-core box.")}
    io.write_json(a.out_dir / f"{NAME}.meta.json", meta)
    if a.out_dir.resolve() == (MEASURED_DIR / "cpu-2core").resolve():
        # the committed matrix changed: the verdicts k3lab-patches ships follow it
        print(f"[k3lab] wrote {release_status.write_patch_verdicts(doc=doc)}")
    print(f"[k3lab] wrote {NAME}.json ({len(rows)} releases) in {meta['wall_seconds_total']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
