"""The GPU benchmark's runs, replayed for notebooks 02 and 03 — or the plain statement that none exists.

``benchmarks/gpu/run.py`` (:mod:`k3lab.live.gpu_bench`) writes ``gpu_bench_*.csv`` and
``gpu_bench.meta.json`` into ``data/measured/<gpu-kind>/``. :func:`replay` reads every such
folder whose run was on a GPU (a CPU run of the same path is its test, not a measurement),
each file checked by :mod:`k3lab.schemas.gpu_bench`, and returns tables labelled with the GPU
kind; with none committed it returns the explicit empty state :data:`NO_GPU`. A live run's
fresh folder replaces the committed ones when given.

What transfers from the GPU measured to the article's MI355X is said in :data:`TRANSFERS`:
ratios measured on one device, not absolute times. Nothing here judges a claim: no verdict
reads these tables (the claims' evidence stays as :mod:`.f2_topk` and :mod:`.f3_prefill` say).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import data, io
from ..paths import data_dir
from ..schemas import gpu_bench as G

NO_GPU = ("no GPU measurement committed: no data/measured/<gpu-kind>/gpu_bench.meta.json from a GPU run of "
          "benchmarks/gpu/run.py (docs/gpu-benchmarks.md says how to make one); nothing here is judged from GPU data")
TRANSFERS = ("What transfers to an MI355X: ratios measured on one device (padded/unpadded time against the 16/12 "
             "FLOP ratio, whether padding moves decode, checked/unchecked renorm, k3lab against the sort fix), not "
             "absolute times: the GPU measured is not an MI355X and its kernels are not AITER's")
#: per section, the columns shown (ratios first; seconds last, for this device only)
VIEWS = {
    "prefill": ["kernel", "seq_len", "ratio_padded_over_12", "ratio_flops", "ratio_flops_plus_copies",
                "ratio_native_over_12", "copies_share_of_padded", "sliced_equals_12", "max_abs_diff_sliced_vs_12",
                "v_head_dim_run", "tflop_s_12", "t_12_median_s"],
    "decode": ["kernel", "batch", "context", "ratio_padded_over_12", "ratio_native_over_12", "sliced_equals_12",
               "max_abs_diff_sliced_vs_12", "kv_gb_s_12", "t_12_median_s"],
    "renorm": ["dtype", "k", "contender", "ratio_to_k3lab_patch", "host_syncs", "same_kept_set_as_sort_fix",
               "max_abs_diff_vs_sort_fix", "median_s"],
    "kernels": ["section", "kernel", "status", "v_head_dim_run", "max_abs_diff_vs_reference", "reason"],
}


@dataclass(frozen=True)
class GpuRun:
    """One run: the GPU kind, its meta document, and its tables (section or ``kernels`` → DataFrame)."""

    kind: str
    where: str
    meta: dict
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def label(self) -> str:
        m = self.meta
        return (f"{self.kind} ({m['gpu'] or m['cpu']}, driver {m['driver'] or 'unknown'}, torch {m['torch']}, triton "
                f"{m['triton'] or 'absent'}, {m['date_utc'][:10]}{', quick' if m['quick'] else ''}): {self.where}")


def load_run(folder, where: str, named_by_kind: bool = True) -> GpuRun:
    """The run in ``folder`` (its meta file and the files it lists), each checked by its schema;
    ``where`` says where it came from. DataError in one line when ``named_by_kind`` (a folder
    under ``measured/``) and the folder's name is not the meta's ``gpu_kind``."""
    folder = Path(folder)
    meta = data.read_measured(G.GpuBenchMeta, folder / G.META)
    if named_by_kind and meta["gpu_kind"] != folder.name:
        raise data.DataError(f"{where}/{G.META}: gpu_kind: {meta['gpu_kind']!r} is not its folder's name "
                             f"{folder.name!r}")
    tables = {part: data.read_measured(G.SCHEMA_OF[fname], folder / fname)
              for part, fname in G.CSV.items() if fname in meta["outputs"]}
    return GpuRun(meta["gpu_kind"], where, meta, tables)


def committed(measured=None) -> list[GpuRun]:
    """Every GPU run under ``data/measured/`` (or ``measured``), by kind; CPU runs left out."""
    root = Path(measured) if measured is not None else data_dir() / "measured"
    shown = "data/measured" if measured is None else root.name
    found = [load_run(m.parent, f"{shown}/{m.parent.name}") for m in sorted(root.glob(f"*/{G.META}"))]
    return [r for r in found if r.meta["device"] != "cpu"]


@dataclass(frozen=True)
class Replay:
    """What notebooks show: the runs (maybe none) and where they came from."""

    runs: list[GpuRun]
    source: str  # "committed" or "live"

    @property
    def state(self) -> str:
        if not self.runs:
            return NO_GPU
        runs = "; ".join(r.label() for r in self.runs)
        return f"GPU measurement ({self.source}, method: measured): {runs}. {TRANSFERS}."

    def table(self, section: str) -> pd.DataFrame | None:
        """The runs' ``section`` table (:data:`VIEWS` columns), a ``gpu_kind`` column first; None
        when no run has it."""
        if section not in VIEWS:
            raise ValueError(f"unknown section {section!r}; known: {', '.join(VIEWS)}")
        parts = [r.tables[section][VIEWS[section]].assign(gpu_kind=r.kind) for r in self.runs if section in r.tables]
        if not parts:
            return None
        return pd.concat(parts, ignore_index=True)[["gpu_kind", *VIEWS[section]]]

    def renorm_checks(self) -> pd.DataFrame | None:
        """Per GPU kind, dtype and k: what k3lab's input checks cost (checked / unchecked time, and
        each one's host syncs) and how k3lab compares with the sort fix; None without renorm data."""
        t = self.table("renorm")
        if t is None:
            return None
        keys = ["gpu_kind", "dtype", "k"]
        wide = t.pivot_table(index=keys, columns="contender", values="median_s", aggfunc="first")
        syncs = t.set_index(keys + ["contender"])["host_syncs"].unstack("contender")
        out = pd.DataFrame({"checked_over_unchecked": wide["k3lab_patch"] / wide["k3lab_unchecked"],
                            "sort_fix_over_k3lab_patch": wide["sort_fix"] / wide["k3lab_patch"],
                            "host_syncs_checked": syncs["k3lab_patch"],
                            "host_syncs_unchecked": syncs["k3lab_unchecked"]})
        return out.reset_index()

    def save(self, out_dir, sections) -> list[Path]:
        """Write ``gpu_<section>.csv`` (and ``gpu_kernels.csv``) for the tables there are; nothing
        in the empty state."""
        written = []
        for s in (*sections, "kernels"):
            t = self.table(s)
            if t is not None:
                if s == "kernels":
                    t = t[t.section.isin(sections)]
                written.append(io.write_csv(t, Path(out_dir) / f"gpu_{s}.csv"))
        return written


def replay(fresh=None, measured=None) -> Replay:
    """The live run in ``fresh`` (a folder :func:`k3lab.live.gpu_bench.run_live` returned), else
    every committed GPU run (:func:`committed`) — possibly none: then :attr:`Replay.state` is
    :data:`NO_GPU`."""
    if fresh is not None:
        return Replay([load_run(fresh, "live run", named_by_kind=False)], "live")
    return Replay(committed(measured), "committed")
