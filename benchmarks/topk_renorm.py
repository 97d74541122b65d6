"""Top-k renorm on this CPU at K3's vocabulary: k3lab vs sglang 0.5.23's rank-mask fallback vs
the article's sort fix, interleaved in one process; and how often ties at the pivot make rank
masking differ.

    PYTHONPATH=.venv-sglang/sglang-0.5.23 .venv-sglang/bin/python benchmarks/topk_renorm.py

With sglang 0.5.23 importable (the command above; ``make sglang-env`` installs it), its
real ``_dflash_top_k_renorm_prob`` is timed; otherwise k3lab's rank-mask twin
(:func:`k3lab.sampling.top_k_rank_mask`) stands in and the CSV says so (column ``impl``).

Timing: per k case, every contender runs once per round, rounds repeat ``--repeats`` times,
and each round starts one contender later (A,B,C,… then B,C,…,A), so load from other jobs
on this shared machine falls on all of them alike; a contender slower than a second per call
(the sort fix; the fallback when a row is unrestricted) runs every ``--slow-every`` rounds
and is compared on those rounds only. Contenders: ``k3lab``
(:func:`k3lab.sampling.top_k_renorm_prob`, validation on, as the sglang patch calls it),
``rank_mask`` (the fallback), ``sort_fix``, and two floors that are not renormalisations:
``topk`` (one ``torch.topk(probs, k)``, values and indices, the selection the fallback makes)
and ``zeros_like`` (allocating and zeroing the ``[rows, vocab]`` output every contender
returns). Ratios (``*_over_*``) are medians of the per-round ratios, ``rounds_*`` count the
rounds a contender won; ``*_s`` are median seconds; ``speedup_vs_*`` are ratios of those
medians. ``--profile`` also prints where
k3lab's and the fallback's time goes per operator (torch.profiler, one call per case).

Writes ``data/measured/cpu-2core/topk_renorm.csv``, ``topk_renorm_ties.csv`` and
``topk_renorm.meta.json`` (machine, load averages, versions, date, command). ~15 minutes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pandas as pd
import torch
from tqdm.auto import tqdm

from k3lab import io
from k3lab import sampling as S
from k3lab.paths import MEASURED_DIR

NAME = "topk_renorm"
VOCAB = 163_840
BATCH, DRAFT = 64, 8  # rows = batch × verify rows per request
K_CASES = ("1", "20", "50", "1024", "20 mixed with unrestricted")
CONTENDERS = ("k3lab", "rank_mask", "sort_fix", "topk", "zeros_like")
TIE_SETTINGS = [  # (input distribution, logit std)
    ("bf16 logits -> fp32 softmax", 1.0), ("bf16 logits -> fp32 softmax", 3.0),
    ("probs stored in bf16", 1.0), ("probs stored in bf16", 3.0),
    ("probs stored in fp16", 1.0), ("probs stored in fp16", 3.0),
]
TIE_KS = (20, 50, 1024)
SLOW_S = 1.0  # a contender whose warm-up call took longer runs only every --slow-every rounds


def k_for(case: str, rows: int) -> torch.Tensor:
    """Per-row k (int64 [rows]) for a case; 'mixed': even rows k=20, odd rows TOP_K_ALL."""
    if case.startswith("20 mixed"):
        return torch.where(torch.arange(rows) % 2 == 0, 20, S.TOP_K_ALL).to(torch.int64)
    return torch.full((rows,), int(case), dtype=torch.int64)


def rank_mask_impl():
    """(callable, label): sglang 0.5.23's real fallback if importable, else k3lab's twin."""
    try:
        if version("sglang") == "0.5.23":
            from sglang.srt.speculative.dflash_utils import _dflash_top_k_renorm_prob

            return _dflash_top_k_renorm_prob, "sglang 0.5.23 _dflash_top_k_renorm_prob"
    except (PackageNotFoundError, ImportError):
        pass
    return S.top_k_rank_mask, "k3lab.sampling.top_k_rank_mask (twin of 0.5.23's fallback)"


def interleaved(fns: dict, rounds: int, every: dict[str, int]) -> dict[str, dict[int, float]]:
    """Wall seconds per call, by round: ``rounds`` rounds; fn ``n`` runs in the rounds ``r`` with
    ``r % every[n] == 0`` (slow ones every few rounds); each round starts one fn later."""
    names = list(fns)
    ts: dict[str, dict[int, float]] = {n: {} for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            if r % every[n]:
                continue
            t0 = time.perf_counter()
            fns[n]()
            ts[n][r] = time.perf_counter() - t0
    return ts


def paired(a: dict[int, float], b: dict[int, float]) -> tuple[float, int, int]:
    """(median over the rounds both ran of a / b, rounds where a < b, rounds compared)."""
    common = sorted(set(a) & set(b))
    return (statistics.median(a[r] / b[r] for r in common), sum(a[r] < b[r] for r in common), len(common))


def machine_busy_s() -> float:
    """CPU seconds all processes have been busy since boot (/proc/stat); NaN where unreadable."""
    try:
        ticks = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    except (OSError, ValueError):
        return float("nan")
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def k3lab_plan(k: torch.Tensor, vocab: int) -> str:
    """How k3lab finds the top entries for this k (:func:`k3lab.sampling._top_k_plan`)."""
    restricted = k[k < vocab]
    if not restricted.numel():
        return "none (renormalise only)"
    plan, chunk = S._top_k_plan(vocab, int(restricted.max()))
    if plan == "floor" and restricted.numel() < k.numel():
        plan, chunk = "topk", 0  # as top_k_renorm_prob does for mixed batches
    return f"{plan} (chunk {chunk})" if chunk else plan


def timing_table(rows: int, vocab: int, repeats: int, slow_every: int, seed: int = 0) -> pd.DataFrame:
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(torch.randn(rows, vocab, generator=g) * 3.0, dim=-1)  # fp32, as sglang's dense path
    rank_fn, rank_label = rank_mask_impl()
    out = []
    for case in tqdm(K_CASES, desc="k cases"):
        k = k_for(case, rows)
        k_sel = int(k[k < vocab].max()) if bool((k < vocab).any()) else vocab
        fns = {"k3lab": lambda: S.top_k_renorm_prob(probs, k), "rank_mask": lambda: rank_fn(probs, k),
               "sort_fix": lambda: S.top_k_sort_fix(probs, k), "topk": lambda: torch.topk(probs, k_sel, dim=-1),
               "zeros_like": lambda: torch.zeros_like(probs)}
        assert tuple(fns) == CONTENDERS
        warm = {}
        for n in ("topk", "zeros_like", "k3lab", "rank_mask", "sort_fix"):  # warm-up, outputs kept
            t0 = time.perf_counter()
            warm[n] = fns[n]()
            warm[n + "_s"] = time.perf_counter() - t0
        ours, rank, sort = warm["k3lab"], warm["rank_mask"], warm["sort_fix"]
        every = {n: slow_every if warm[n + "_s"] > SLOW_S else 1 for n in fns}
        del warm
        load0, busy0, self0, wall0 = os.getloadavg()[0], machine_busy_s(), time.process_time(), time.perf_counter()
        ts = interleaved(fns, repeats, every)
        load1, busy1, self1, wall1 = os.getloadavg()[0], machine_busy_s(), time.process_time(), time.perf_counter()
        others = ((busy1 - busy0) - (self1 - self0)) / (wall1 - wall0)  # cores other processes used
        med = {n: statistics.median(v.values()) for n, v in ts.items()}
        vs_rank, won_rank, n_rank = paired(ts["k3lab"], ts["rank_mask"])
        vs_sort, won_sort, n_sort = paired(ts["k3lab"], ts["sort_fix"])
        out.append({"k": case, "rows": rows, "vocab": vocab, "dtype": "float32", "repeats": repeats,
                    "k3lab_s": med["k3lab"], "sort_fix_s": med["sort_fix"], "rank_mask_s": med["rank_mask"],
                    "speedup_vs_sort_fix": med["sort_fix"] / med["k3lab"],
                    "speedup_vs_rank_mask": med["rank_mask"] / med["k3lab"],
                    "same_kept_set_as_sort_fix": bool(torch.equal(ours != 0, sort != 0)),
                    "max_abs_diff_vs_sort_fix": float((ours - sort).abs().max()),
                    "rows_differing_from_rank_mask": int(((ours != 0) != (rank != 0)).any(dim=1).sum()),
                    "impl": rank_label,
                    "topk_s": med["topk"], "zeros_like_s": med["zeros_like"],
                    "k3lab_over_rank_mask": vs_rank, "k3lab_over_sort_fix": vs_sort,
                    "topk_over_k3lab": paired(ts["topk"], ts["k3lab"])[0],
                    "zeros_like_over_k3lab": paired(ts["zeros_like"], ts["k3lab"])[0],
                    "rounds_k3lab_faster_than_rank_mask": f"{won_rank}/{n_rank}",
                    "rounds_k3lab_faster_than_sort_fix": f"{won_sort}/{n_sort}",
                    "k3lab_plan": k3lab_plan(k, vocab),
                    "load_1min_before": round(load0, 2), "load_1min_after": round(load1, 2),
                    "other_jobs_cores": round(max(others, 0.0), 2)})
        del ours, rank, sort
    return pd.DataFrame(out)


def profile_table(rows: int, vocab: int, seed: int = 0, top: int = 12) -> str:
    """Per-operator self CPU time of one k3lab call and one fallback call per k case."""
    from torch.profiler import ProfilerActivity, profile

    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(torch.randn(rows, vocab, generator=g) * 3.0, dim=-1)
    rank_fn, rank_label = rank_mask_impl()
    parts = []
    for case in K_CASES:
        k = k_for(case, rows)
        for label, fn in (("k3lab", lambda: S.top_k_renorm_prob(probs, k)), (rank_label, lambda: rank_fn(probs, k))):
            fn()
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                fn()
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)
            parts.append(f"== k = {case}: {label}\n{table}")
    return "\n".join(parts)


def tie_table(rows: int, vocab: int, seed: int = 1) -> pd.DataFrame:
    """Per setting and k: share of rows where rank mask ≠ threshold, extra tokens, TV distance."""
    out = []
    for dist, std in tqdm(TIE_SETTINGS, desc="tie settings"):
        g = torch.Generator().manual_seed(seed)
        logits = torch.randn(rows, vocab, generator=g) * std
        if dist.startswith("bf16 logits"):
            probs = torch.softmax(logits.to(torch.bfloat16).float(), dim=-1)
        else:
            dt_ = torch.bfloat16 if "bf16" in dist else torch.float16
            probs = torch.softmax(logits, dim=-1).to(dt_)
        for k in TIE_KS:
            # both in float64 (an exact up-cast keeps every tie) so only the kept sets differ
            thr = S.top_k_renorm_prob(probs.double(), k)
            rnk = S.top_k_rank_mask(probs.double(), k)
            differ = S.tie_straddles(probs, k)
            extra = (S.kept_counts(thr) - S.kept_counts(rnk)).double()
            tv = 0.5 * (thr - rnk).abs().sum(dim=1)
            out.append({"input": dist, "logit_std": std, "k": k, "rows": rows, "vocab": vocab,
                        "share_rows_differ": float(differ.double().mean()),
                        "rows_differ_observed": int(((thr != 0) != (rnk != 0)).any(dim=1).sum()),
                        "mean_extra_tokens_kept": float(extra.mean()),
                        "max_extra_tokens_kept": int(extra.max()),
                        "mean_total_variation": float(tv.mean()), "max_total_variation": float(tv.max())})
    return pd.DataFrame(out)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo where there is one."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--out-dir", type=Path, default=MEASURED_DIR / "cpu-2core")
    ap.add_argument("--repeats", type=int, default=21, help="rounds per k case")
    ap.add_argument("--slow-every", type=int, default=3,
                    help=f"a contender slower than {SLOW_S:g} s per call runs every this many rounds")
    ap.add_argument("--rows", type=int, default=BATCH * DRAFT)
    ap.add_argument("--tie-rows", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--profile", action="store_true", help="also print a per-operator profile (stdout only)")
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.slow_every < 1 or a.rows < 2 or a.tie_rows < 1 or a.vocab < 1025:
        raise SystemExit("repeats >= 1, slow-every >= 1, rows >= 2, tie-rows >= 1, vocab > 1024 required")
    torch.manual_seed(0)
    started = dt.datetime.now(dt.timezone.utc)
    load_start = os.getloadavg()
    timing = timing_table(a.rows, a.vocab, a.repeats, a.slow_every)
    load_end = os.getloadavg()
    ties = tie_table(a.tie_rows, a.vocab)
    io.write_csv(timing, a.out_dir / f"{NAME}.csv")
    io.write_csv(ties, a.out_dir / f"{NAME}_ties.csv")
    try:
        sgl = version("sglang")
    except PackageNotFoundError:
        sgl = None
    meta = {"machine": platform.machine(), "cpu": cpu_model(), "cpus": os.cpu_count(),
            "threads": torch.get_num_threads(), "python": platform.python_version(),
            "torch": torch.__version__, "sglang_on_path": sgl, "date": started.date().isoformat(),
            "started_utc": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "load_average_at_start": [round(x, 2) for x in load_start],
            "load_average_after_timing": [round(x, 2) for x in load_end],
            "command": ("PYTHONPATH=.venv-sglang/sglang-0.5.23 .venv-sglang/bin/python " if sgl == "0.5.23" else "python ")
                       + " ".join(["benchmarks/topk_renorm.py", *(argv if argv is not None else sys.argv[1:])]),
            "notes": "shared 2-core box with other jobs running: compare the ratios, not seconds. Contenders "
                     "run interleaved in one process (rotating order per round); *_s are median wall seconds, "
                     "*_over_* medians of per-round ratios; a contender slower than 1 s per call ran every "
                     "--slow-every rounds. Interference: load_1min_* is the 1-minute load average around "
                     "each case (this benchmark alone adds about 2 on 2 cores); other_jobs_cores the mean "
                     "number of cores other processes kept busy during the case's rounds (/proc/stat less "
                     "this process's CPU time). Inputs: softmax(3 * N(0,1)) float32 rows, seeded. Tie "
                     "study inputs: columns input/logit_std; seed 1.",
            "outputs": [f"{NAME}.csv", f"{NAME}_ties.csv"]}
    io.write_json(a.out_dir / f"{NAME}.meta.json", meta)
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        print(timing.to_string(index=False))
        print(ties.to_string(index=False))
    if a.profile:
        print(profile_table(a.rows, a.vocab))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
