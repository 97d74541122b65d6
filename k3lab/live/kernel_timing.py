"""Time one layer's MLA prefill attention with 12 real heads vs zero-padded to 16.

Used by ``benchmarks/attention_heads.py`` (which writes ``data/measured/<machine>/``) and by
notebook 03 in live mode. One cold prefill of one sequence of ``S`` tokens, one MLA layer
of one TP8 rank (12 heads, q/k head dim 192, v head dim 128), causal, through
:func:`k3lab.attention.sdpa_prefill` (torch's fused SDPA kernel). The padded run includes
the pad and slice copies, as the patch does. The two variants alternate within each repeat
(12, 16, 12, 16, …) so that load from other processes hits both alike; the medians and
their ratio are reported next to the FLOP ratio 16/12.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import statistics
import time

import torch

from .. import attention as A
from .. import mla_kernels
from .. import data
from .device_bench import cpu_model

DEFAULT_LENS = (1024, 2048, 4096, 8192, 16384, 32768)
#: repeats per sequence length: many where a run is cheap, one at 32k (~1–2 min a run here).
DEFAULT_REPEATS = {1024: 7, 2048: 7, 4096: 5, 8192: 3, 16384: 3, 32768: 1}
COLUMNS = ["seq_len", "heads_real", "heads_padded", "repeats", "t_real_median_s",
           "t_padded_median_s", "t_real_min_s", "t_padded_min_s", "t_pad_copy_median_s",
           "ratio_measured", "ratio_min", "ratio_flops", "ratio_flops_plus_copy", "gflop_s_real", "gflop_s_padded_useful", "device", "dtype"]


def pad_copies(q, k, v, m):
    """The wrapper's own work besides the kernel: three zero-pad copies and one slice."""
    padded = [A.pad_heads(x, m) for x in (q, k, v)]  # all three are timed; v's slice stands for the output
    return padded[2][:, : q.shape[1]].contiguous()


def _sync(device: str) -> None:
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.synchronize()


def _time_once(fn, args, device: str) -> float:
    _sync(device)
    t0 = time.perf_counter()
    fn(*args)
    _sync(device)
    return time.perf_counter() - t0


def measure(lens=DEFAULT_LENS, repeats: dict | int | None = None, heads: int = 12,
            device: str = "cpu", dtype: torch.dtype = torch.float32, seed: int = 0,
            progress: bool = True):
    """Run the timing → pandas DataFrame with :data:`COLUMNS` (times in seconds).

    ``repeats``: an int for every length, or {seq_len: n} (default :data:`DEFAULT_REPEATS`,
    2 for lengths it does not list).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    lens = [int(s) for s in lens]
    if not lens or any(s <= 0 for s in lens):
        raise ValueError(f"sequence lengths must be positive ints, got {lens}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for but torch sees no CUDA device")
    reps = repeats if repeats is not None else DEFAULT_REPEATS
    m = A.padded_heads(heads)
    plain, padded = mla_kernels.sdpa_prefill, A.with_head_padding(mla_kernels.sdpa_prefill)
    # warm-up (first-call allocations, thread pool start) on a small input
    wq, wk, wv, wcu = mla_kernels.make_varlen_batch([256], heads, dtype=dtype, seed=seed, device=device)
    plain(wq, wk, wv, wcu), padded(wq, wk, wv, wcu)
    rows = []
    total = sum(int(reps) if isinstance(reps, int) else int(reps.get(s, 2)) for s in lens)
    bar = tqdm(total=total, desc="12 vs 16 heads", disable=not progress)
    for s in lens:
        n = int(reps) if isinstance(reps, int) else int(reps.get(s, 2))
        if n <= 0:
            raise ValueError(f"repeats must be positive, got {n} for seq_len {s}")
        q, k, v, cu = mla_kernels.make_varlen_batch([s], heads, dtype=dtype, seed=seed, device=device)
        t_real, t_pad, t_copy = [], [], []
        for i in range(n):
            # alternate which variant runs first, so drifting load hits both alike
            if i % 2 == 0:
                t_real.append(_time_once(plain, (q, k, v, cu), device))
                t_pad.append(_time_once(padded, (q, k, v, cu), device))
            else:
                t_pad.append(_time_once(padded, (q, k, v, cu), device))
                t_real.append(_time_once(plain, (q, k, v, cu), device))
            t_copy.append(_time_once(pad_copies, (q, k, v, m), device))
            bar.update(1)
        del q, k, v
        fl_real = A.attention_flops(s, heads)
        fl_pad = A.attention_flops(s, m)
        mr, mp = statistics.median(t_real), statistics.median(t_pad)
        mc = statistics.median(t_copy)
        rows.append({"seq_len": s, "heads_real": heads, "heads_padded": m, "repeats": n,
                     "t_real_median_s": mr, "t_padded_median_s": mp,
                     "t_real_min_s": min(t_real), "t_padded_min_s": min(t_pad),
                     "t_pad_copy_median_s": mc,
                     "ratio_measured": mp / mr, "ratio_min": min(t_pad) / min(t_real),
                     "ratio_flops": fl_pad / fl_real,
                     "ratio_flops_plus_copy": fl_pad / fl_real + mc / mr,
                     "gflop_s_real": fl_real / mr / 1e9,
                     "gflop_s_padded_useful": fl_real / mp / 1e9,
                     "device": device, "dtype": str(dtype).replace("torch.", "")})
    bar.close()
    return pd.DataFrame(rows, columns=COLUMNS)


def machine_meta(device: str, command: str) -> dict:
    """Machine, versions, date and command for the ``.meta.json`` beside a measurement."""
    meta = {
        "what": "one MLA layer, one TP8 rank: causal cold-prefill attention, 12 heads vs zero-padded 16 "
                "(q/k head dim 192, v 128), torch SDPA; medians over alternating repeats",
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command,
        "device": device,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "note": "compare ratios, not absolute times; load_average_at_end says how busy the "
                "machine was (other processes may have shared its cores)",
    }
    try:
        meta["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    if device.startswith("cuda") and torch.cuda.is_available():
        meta["gpu"] = torch.cuda.get_device_name(0)
        meta["cuda"] = torch.version.cuda
    return meta


def load(folder=None):
    """The committed CPU measurement (``data/measured/cpu-2core/attention_heads.csv``), or the
    one in ``folder``, checked by :mod:`k3lab.data` (schema ``AttentionHeads``) → DataFrame."""
    return data.load("attention_heads") if folder is None else data.read("attention_heads", folder / "attention_heads.csv")
