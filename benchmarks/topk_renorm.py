"""Top-k renorm on this CPU at K3's vocabulary: k3lab vs the article's sort fix vs sglang
0.5.23's rank-mask fallback; and how often ties at the pivot make rank masking differ.

    PYTHONPATH=.venv-sglang/sglang-0.5.23 .venv-sglang/bin/python benchmarks/topk_renorm.py

With sglang 0.5.23 importable (the command above; ``make sglang-env`` installs it), its
real ``_dflash_top_k_renorm_prob`` is timed; otherwise k3lab's rank-mask twin
(:func:`k3lab.sampling.top_k_rank_mask`) stands in and the CSV says so (column ``impl``).

Writes ``data/measured/cpu-2core/topk_renorm.csv`` (median seconds over repeats and
ratios; 2 shared cores, other work running: ratios are the result, not seconds),
``topk_renorm_ties.csv`` and ``topk_renorm.meta.json``. Takes ~6 minutes.
"""

from __future__ import annotations

import argparse
import datetime as dt
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
TIE_SETTINGS = [  # (input distribution, logit std)
    ("bf16 logits -> fp32 softmax", 1.0), ("bf16 logits -> fp32 softmax", 3.0),
    ("probs stored in bf16", 1.0), ("probs stored in bf16", 3.0),
    ("probs stored in fp16", 1.0), ("probs stored in fp16", 3.0),
]
TIE_KS = (20, 50, 1024)


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


def median_s(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def timing_table(rows: int, vocab: int, repeats: int, seed: int = 0) -> pd.DataFrame:
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(torch.randn(rows, vocab, generator=g) * 3.0, dim=-1)  # fp32, as sglang's dense path
    rank_fn, rank_label = rank_mask_impl()
    out = []
    for case in tqdm(K_CASES, desc="k cases"):
        k = k_for(case, rows)
        ours = S.top_k_renorm_prob(probs, k)
        sort = S.top_k_sort_fix(probs, k)
        rank = rank_fn(probs, k)
        t_ours = median_s(lambda: S.top_k_renorm_prob(probs, k), repeats)
        t_sort = median_s(lambda: S.top_k_sort_fix(probs, k), repeats)
        t_rank = median_s(lambda: rank_fn(probs, k), repeats)
        out.append({"k": case, "rows": rows, "vocab": vocab, "dtype": "float32", "repeats": repeats,
                    "k3lab_s": t_ours, "sort_fix_s": t_sort, "rank_mask_s": t_rank,
                    "speedup_vs_sort_fix": t_sort / t_ours, "speedup_vs_rank_mask": t_rank / t_ours,
                    "same_kept_set_as_sort_fix": bool(torch.equal(ours != 0, sort != 0)),
                    "max_abs_diff_vs_sort_fix": float((ours - sort).abs().max()),
                    "rows_differing_from_rank_mask": int(((ours != 0) != (rank != 0)).any(dim=1).sum()),
                    "impl": rank_label})
    return pd.DataFrame(out)


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=MEASURED_DIR / "cpu-2core")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rows", type=int, default=BATCH * DRAFT)
    ap.add_argument("--tie-rows", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=VOCAB)
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.rows < 2 or a.tie_rows < 1 or a.vocab < 1025:
        raise SystemExit("repeats >= 1, rows >= 2, tie-rows >= 1, vocab > 1024 required")
    torch.manual_seed(0)
    timing = timing_table(a.rows, a.vocab, a.repeats)
    ties = tie_table(a.tie_rows, a.vocab)
    io.write_csv(timing, a.out_dir / f"{NAME}.csv")
    io.write_csv(ties, a.out_dir / f"{NAME}_ties.csv")
    try:
        sgl = version("sglang")
    except PackageNotFoundError:
        sgl = None
    meta = {"machine": platform.machine(), "cpu": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(), "python": platform.python_version(),
            "torch": torch.__version__, "sglang_on_path": sgl, "date": dt.date.today().isoformat(),
            "command": ("PYTHONPATH=.venv-sglang/sglang-0.5.23 .venv-sglang/bin/python " if sgl == "0.5.23" else "python ")
                       + " ".join(["benchmarks/topk_renorm.py", *(argv if argv is not None else sys.argv[1:])]),
            "notes": "median wall seconds over `repeats` per case on a shared 2-core box; compare the "
                     "ratios. Inputs: softmax(3 * N(0,1)) float32 rows, seeded. Tie study inputs: "
                     "columns input/logit_std; seed 1.",
            "outputs": [f"{NAME}.csv", f"{NAME}_ties.csv"]}
    io.write_json(a.out_dir / f"{NAME}.meta.json", meta)
    print(timing.to_string(index=False))
    print(ties.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
