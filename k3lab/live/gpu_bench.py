"""The GPU benchmark (issue 32): findings 2 and 3 measured on an accelerator, one prepared command.

    python benchmarks/gpu/run.py --device cuda            # sized for ~8 min on an H200 (not yet run on one)
    python benchmarks/gpu/run.py --device cpu --quick     # the same path on a CPU, tiny shapes, seconds

Sections (each its own CSV; :mod:`k3lab.schemas.gpu_bench` checks them): ``prefill``
(:mod:`.gpu_prefill`: 12 vs zero-padded 16 heads through torch SDPA's backends and a Triton
kernel), ``decode`` (:mod:`.gpu_decode`: the same for absorbed-MLA decode), ``renorm``
(:mod:`.gpu_renorm`: top-k renorm contenders, host syncs counted). Beside them
``gpu_bench_kernels.csv`` (which kernel ran, refused or was skipped, and why) and
``gpu_bench.meta.json`` (device, driver, versions, date, the exact command, the sweep). Files
are written only once every section finished (each atomically, the meta last), into
``data/measured/<kind>/`` (:func:`k3lab.live.device_bench.kind`) or ``--out-dir``. Timings are
data, never asserted; seeds fixed; one progress bar over the whole sweep.

:func:`run_live` is what a notebook in live mode calls: the same command where torch sees a
GPU, one line and None where not.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import torch

from .. import io
from ..paths import MEASURED_DIR, REPO_ROOT
from ..schemas import gpu_bench as G
from . import device_bench as D
from . import gpu_decode, gpu_prefill, gpu_renorm
from .runner import run_benchmark

SCRIPT = "benchmarks/gpu/run.py"
SEED = 0
TRANSFERS = ("An H200 is not an MI355X: different kernels (CUDA flash/cuDNN/Triton here; AITER's ASM and "
             "Triton on ROCm), memory system and clocks. What may transfer is ratios measured on one device: "
             "padded/unpadded time against the 16/12 FLOP ratio, checked/unchecked renorm, k3lab against the "
             "sort fix, and whether padding moves decode; absolute seconds do not.")
WHAT = ("finding 3: one MLA layer of one TP8 rank of Kimi K3, causal cold prefill, 12 heads vs zero-padded 16 vs "
        "16 native (q/k 192, v 128), bf16, per kernel; P7: absorbed MLA decode (576-wide latent, one KV head, "
        "512-wide value), 12 vs 16 q heads; finding 2: top-k renorm at [rows, vocab], fp32 and bf16")


@dataclass(frozen=True)
class Sweep:
    """What one run measures (the meta file's ``sweep``)."""

    prefill_seq_lens: tuple[int, ...]
    decode_batches: tuple[int, ...]
    decode_contexts: tuple[int, ...]
    renorm_rows: int
    renorm_vocab: int
    renorm_ks: tuple[int, ...]
    renorm_dtypes: tuple[str, ...]
    repeats_prefill: int
    repeats_decode: int
    repeats_renorm: int
    warmups: int

    def steps(self, sections) -> int:
        """Progress-bar steps: one per (length, kernel), (batch, context, kernel), (dtype, k)."""
        n = {"prefill": len(self.prefill_seq_lens) * len(gpu_prefill.KERNELS),
             "decode": len(self.decode_batches) * len(self.decode_contexts) * len(gpu_decode.KERNELS),
             "renorm": len(self.renorm_dtypes) * len(self.renorm_ks)}
        return sum(n[s] for s in sections)


#: the full sweep (sized for an H200 within ~8 minutes) and the quick one (a CPU in seconds)
FULL = Sweep(prefill_seq_lens=(4096, 8192, 16384, 32768, 65536, 131072), decode_batches=(1, 4, 16, 64),
             decode_contexts=(1024, 8192, 32768, 131072), renorm_rows=512, renorm_vocab=163_840,
             renorm_ks=(1, 20, 50, 1024), renorm_dtypes=("float32", "bfloat16"), repeats_prefill=5,
             repeats_decode=20, repeats_renorm=25, warmups=3)
QUICK = Sweep(prefill_seq_lens=(64, 128), decode_batches=(1, 2), decode_contexts=(128,), renorm_rows=8,
              renorm_vocab=4096, renorm_ks=(1, 20, 50, 1024), renorm_dtypes=("float32", "bfloat16"),
              repeats_prefill=2, repeats_decode=2, repeats_renorm=2, warmups=1)


def measure(device: torch.device, sweep: Sweep, sections=G.SECTIONS, flashinfer: bool = True,
            progress: bool = True) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Run ``sections`` → ({section: its table}, the kernels table)."""
    from tqdm.auto import tqdm

    torch.manual_seed(SEED)
    tables, kernel_rows = {}, []
    with tqdm(total=sweep.steps(sections), desc="gpu bench", disable=not progress) as bar:
        if "prefill" in sections:
            bar.set_description("gpu bench: prefill")
            rows, k = gpu_prefill.measure(sweep.prefill_seq_lens, sweep.repeats_prefill, sweep.warmups, device,
                                          seed=SEED, bar=bar)
            tables["prefill"], kernel_rows = pd.DataFrame(rows, columns=G.GpuPrefill.columns()), kernel_rows + k
        if "decode" in sections:
            bar.set_description("gpu bench: decode")
            rows, k = gpu_decode.measure(sweep.decode_batches, sweep.decode_contexts, sweep.repeats_decode,
                                         sweep.warmups, device, seed=SEED, bar=bar)
            tables["decode"], kernel_rows = pd.DataFrame(rows, columns=G.GpuDecode.columns()), kernel_rows + k
        if "renorm" in sections:
            bar.set_description("gpu bench: renorm")
            rows, k = gpu_renorm.measure(sweep.renorm_rows, sweep.renorm_vocab, sweep.renorm_ks,
                                         [getattr(torch, d) for d in sweep.renorm_dtypes], sweep.repeats_renorm,
                                         sweep.warmups, device, seed=SEED, flashinfer=flashinfer, bar=bar)
            tables["renorm"], kernel_rows = pd.DataFrame(rows, columns=G.GpuRenorm.columns()), kernel_rows + k
    return tables, pd.DataFrame(kernel_rows, columns=G.GpuKernels.columns())


def write(out_dir: Path, tables: dict, kernels: pd.DataFrame, meta: dict) -> list[Path]:
    """The section CSVs, the kernels CSV, then the meta file (each written atomically)."""
    paths = [io.write_csv(tables[s], out_dir / G.CSV[s]) for s in G.SECTIONS if s in tables]
    paths.append(io.write_csv(kernels, out_dir / G.CSV["kernels"]))
    paths.append(io.write_json(out_dir / G.META, meta))
    return paths


def run(device_name: str, quick: bool = False, sections=G.SECTIONS, out_dir=None, command: str | None = None,
        flashinfer: bool = True, progress: bool = True, root=None) -> list[Path]:
    """Measure and write into ``out_dir``, else ``root/<kind>/`` (``root`` default
    ``data/measured``) → the files written. :class:`~k3lab.live.device_bench.DeviceUnavailable`
    before anything runs when the device is not here."""
    device = D.resolve(device_name)
    sections = tuple(s for s in G.SECTIONS if s in sections)
    sweep = QUICK if quick else FULL
    out = Path(out_dir) if out_dir is not None else Path(root or MEASURED_DIR) / D.kind(device)
    started = time.perf_counter()
    tables, kernels = measure(device, sweep, sections, flashinfer, progress)
    meta = {**D.describe(device), "command": command or f"python {SCRIPT} --device {device_name}"
            + (" --quick" if quick else ""), "quick": quick, "sections": list(sections), "seed": SEED,
            "sweep": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(sweep).items()},
            "outputs": sorted([G.CSV[s] for s in sections] + [G.CSV["kernels"]]), "what": WHAT,
            "transfers": TRANSFERS, "wall_time_s": round(time.perf_counter() - started, 3)}
    return write(out, tables, kernels, meta)


def main(argv=None) -> int:
    """The command line of ``benchmarks/gpu/run.py`` → exit status (2 and one line on stderr for a
    device that is not here)."""
    ap = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    ap.add_argument("--quick", action="store_true", help="tiny shapes and few repeats (seconds on a CPU)")
    ap.add_argument("--sections", nargs="+", choices=G.SECTIONS, default=list(G.SECTIONS))
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--out-dir", type=Path, default=None, help="write here (default: data/measured/<device kind>/)")
    where.add_argument("--root", type=Path, default=None, help="write into ROOT/<device kind>/ (on a lent machine: $OUT)")
    ap.add_argument("--no-flashinfer", action="store_true", help="skip FlashInfer's reference even if it imports")
    ap.add_argument("--no-progress", action="store_true")
    argv = sys.argv[1:] if argv is None else list(argv)
    a = ap.parse_args(argv)
    try:
        written = run(a.device, a.quick, a.sections, a.out_dir, shown_command(argv), not a.no_flashinfer,
                      not a.no_progress, a.root)
    except D.DeviceUnavailable as e:
        print(f"{SCRIPT}: {e}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(p.name for p in written)} to {written[0].parent}")
    return 0


def shown_command(argv) -> str:
    """The command as the meta file records it: a folder given to ``--out-dir`` / ``--root``
    outside this checkout is written ``<DIR>`` (no path of the machine that ran it)."""
    def folder(arg: str) -> str:
        p = Path(arg).resolve()
        return str(p.relative_to(REPO_ROOT)) if p.is_relative_to(REPO_ROOT) else "<DIR>"

    shown, hide = ["python", SCRIPT], False
    for arg in argv:
        opt, eq, value = arg.partition("=")
        if hide:
            arg = folder(arg)
        elif eq and opt in ("--out-dir", "--root"):
            arg = f"{opt}={folder(value)}"
        shown.append(arg)
        hide = arg in ("--out-dir", "--root")
    return " ".join(shown)


def run_live(out_dir, sections=G.SECTIONS, quick: bool = False, timeout_s: float = 900) -> Path | None:
    """Live mode: run :data:`SCRIPT` on this machine's GPU into ``out_dir`` → the folder, or None
    after one line saying why not (torch sees no GPU here)."""
    if not torch.cuda.is_available():
        print(f"live: skipped {SCRIPT}: torch {torch.__version__} sees no CUDA device on this machine; "
              "the GPU tables below are the committed ones, if any")
        return None
    args = ["--device", "cuda", "--sections", *sections, "--no-progress"] + (["--quick"] if quick else [])
    return run_benchmark("gpu/run.py", args, out_dir=out_dir, timeout_s=timeout_s)
