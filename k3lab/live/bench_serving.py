"""Finding 4, live: sglang ``bench_serving`` JSONL (read, validate) and concurrency sweeps.

``python -m sglang.bench_serving … --output-file F`` appends one JSON object per run to
``F`` (sglang 0.5.16 ``sglang/benchmark/serving.py``, the ``result`` dict written in
``benchmark``). :func:`read_jsonl` reads such a file through :mod:`k3lab.data` (the schema
is :class:`k3lab.schemas.measured.BenchServing`) and validates every line: the keys k3lab
uses must be there with the right types and units (``*_ms`` in milliseconds, ``duration``
in seconds, ``*_throughput`` in tok/s or req/s), and the units must agree with each other
(``output_throughput`` = ``total_output_tokens`` / ``duration``; a TTFT cannot exceed the
end-to-end latency). A malformed line is a ValueError naming the file and the line number.

:func:`sweep` (``python -m k3lab bench --base-url … --concurrency 1,4,16,24,64``) runs
``python -m sglang.bench_serving`` once per concurrency (``random-ids``, 1,024 in /
400 out, range ratio 1.0 by default) with a progress bar, then validates everything and
moves the JSONL into ``results/`` atomically.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from .. import data, io, limits
from ..cli_parser import OneLineParser
from ..limits import arg, help_text
from ..data import check_count
from ..paths import results_dir
from ..schemas.measured import OPTIONAL_KEYS, REQUIRED_KEYS, UNIT_REL_TOL, validate_bench_record  # noqa: F401

NOTEBOOK_ID = "04_throughput_perf_per_dollar"
#: the loader's name for a bench_serving JSONL (:data:`k3lab.data.SCHEMAS`)
BENCH_KIND = "bench_live_smoke"
DEFAULT_CONCURRENCIES = (1, 4, 16, 24, 64)

SUMMARY_COLUMNS = ["max_concurrency", "completed", "output_tok_s", "total_tok_s",
                   "median_ttft_ms", "p99_ttft_ms", "median_itl_ms", "mean_tpot_ms",
                   "random_input_len", "random_output_len", "accept_length"]


# --------------------------------------------------------------------------- reading


def validate_record(rec, where: str = "record") -> dict:
    """Check one bench_serving result object; returns it unchanged (ValueError otherwise).
    The schema of a bench_serving line (:func:`k3lab.schemas.measured.validate_bench_record`)."""
    return validate_bench_record(rec, where)


def parse_lines(lines, source: str = "<jsonl>") -> list[dict]:
    """Parse and validate JSONL text lines (blank lines skipped), through :mod:`k3lab.data`:
    no duplicate keys, finite numbers (``request_rate`` may be sglang's ``Infinity``)."""
    return data.parse_lines(BENCH_KIND, lines, source)


def read_jsonl(path) -> list[dict]:
    """Read a bench_serving ``--output-file`` JSONL → list of validated result dicts."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"bench_serving JSONL not found: {p.name}")
    return data.read(BENCH_KIND, p)


def summarize(records: list[dict]):
    """One row per run, units in column names, sorted by concurrency → DataFrame."""
    import pandas as pd

    rows = []
    for r in records:
        rows.append({"max_concurrency": r.get("max_concurrency"), "completed": r["completed"],
                     "output_tok_s": float(r["output_throughput"]),
                     "total_tok_s": float(r["total_throughput"]),
                     "median_ttft_ms": float(r["median_ttft_ms"]), "p99_ttft_ms": float(r["p99_ttft_ms"]),
                     "median_itl_ms": float(r["median_itl_ms"]), "mean_tpot_ms": float(r["mean_tpot_ms"]),
                     "random_input_len": r["random_input_len"], "random_output_len": r["random_output_len"],
                     "accept_length": r.get("accept_length")})
    df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return df.sort_values("max_concurrency", kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- commands


def parse_concurrencies(text: str) -> list[int]:
    """'1,4,16,24,64' → [1, 4, 16, 24, 64] (positive, unique, in the order given)."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            c = int(part)
        except ValueError:
            raise ValueError(f"concurrency {part!r} is not an integer") from None
        if c <= 0:
            raise ValueError(f"concurrency must be positive, got {c}")
        limits.check("requests", c, "a concurrency")
        if c in out:
            raise ValueError(f"concurrency {c} given twice")
        out.append(c)
    if not out:
        raise ValueError("no concurrency given (expected e.g. '1,4,16,24,64')")
    return out


def check_base_url(url: str, allow_remote: bool = False) -> str:
    """An http(s) URL with a host and no path; loopback only unless ``allow_remote``."""
    u = urlparse(str(url))
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"base URL must look like http://127.0.0.1:30000, got {url!r}")
    if u.path not in ("", "/"):
        raise ValueError(f"base URL must not have a path (bench_serving adds /v1/...), got {url!r}")
    if not allow_remote:
        host = u.hostname
        loop = host == "localhost"
        try:
            loop = loop or ipaddress.ip_address(host).is_loopback
        except ValueError:
            pass
        if not loop:
            raise ValueError(f"base URL host {host!r} is not a loopback address; pass "
                             f"allow_remote=True (--allow-remote) to benchmark another machine")
    return str(url).rstrip("/")


def build_command(base_url: str, concurrency: int, output_file, num_prompts: int | None = None,
                  input_len: int = 1024, output_len: int = 400, range_ratio: float = 1.0,
                  backend: str = "sglang-oai", tokenizer: str | None = None,
                  model: str | None = None, python: str | None = None, seed: int = 1,
                  extra: list[str] | None = None, allow_remote: bool = False) -> list[str]:
    """The ``python -m sglang.bench_serving`` argv for one concurrency point.

    ``num_prompts`` defaults to 4 × concurrency (at least 8), so every point runs at
    its concurrency for several rounds. Options as in sglang 0.5.16 ``bench_serving``.
    """
    url = check_base_url(base_url, allow_remote)
    for name, v in (("concurrency", concurrency), ("input_len", input_len), ("output_len", output_len)):
        check_count(name, v)
    n = check_count("num_prompts", max(8, 4 * concurrency) if num_prompts is None else num_prompts)
    if not 0 < range_ratio <= 1:
        raise ValueError(f"range_ratio must be in (0, 1], got {range_ratio!r}")
    cmd = [python or sys.executable, "-m", "sglang.bench_serving",
           "--backend", backend, "--base-url", url,
           "--dataset-name", "random-ids",
           "--random-input-len", str(input_len), "--random-output-len", str(output_len),
           "--random-range-ratio", f"{range_ratio:g}",
           "--num-prompts", str(n), "--max-concurrency", str(concurrency),
           "--seed", str(seed), "--disable-tqdm",
           "--output-file", str(output_file)]
    if tokenizer:
        cmd += ["--tokenizer", str(tokenizer)]
    if model:
        cmd += ["--model", str(model)]
    return cmd + list(extra or [])


def not_ready(base_url: str, python: str | None = None, timeout_s: float = 3.0) -> str | None:
    """Why a live sweep cannot run here, or None when it can: sglang's bench_serving must be
    importable by ``python`` and a server must answer ``GET <base_url>/v1/models``."""
    import importlib.util
    import urllib.error
    import urllib.request

    try:
        url = check_base_url(base_url, allow_remote=True)
    except ValueError as e:
        return str(e)
    if python is None:
        if importlib.util.find_spec("sglang") is None:
            return ("sglang is not installed in this environment (bench_serving comes with it; "
                    "use --python or the sglang environment)")
    elif not Path(python).exists():
        return f"no interpreter at {python}"
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=timeout_s) as r:
            if r.status != 200:
                return f"the server at {url} answered HTTP {r.status} to /v1/models"
    except (urllib.error.URLError, OSError) as e:
        return f"no server answers at {url} ({getattr(e, 'reason', e)})"
    return None


def sweep(base_url: str, concurrencies=DEFAULT_CONCURRENCIES, out: str | os.PathLike | None = None,
          runner=None, progress: bool = True, **kw) -> Path:
    """Run bench_serving once per concurrency; validate; move the JSONL to ``out``.

    ``out`` defaults to ``results/04_throughput_perf_per_dollar/bench_sweep.jsonl``.
    ``runner(cmd) → returncode`` runs one command (default: subprocess, output shown).
    Nothing lands at ``out`` unless every run succeeded and every line validates.
    """
    from tqdm.auto import tqdm

    concs = parse_concurrencies(",".join(str(c) for c in concurrencies))
    out = Path(out) if out else results_dir(NOTEBOOK_ID) / "bench_sweep.jsonl"
    runner = runner or (lambda cmd: subprocess.run(cmd).returncode)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        for c in tqdm(concs, desc="bench_serving sweep", unit="run", disable=not progress):
            cmd = build_command(base_url, c, tmp, **kw)
            rc = runner(cmd)
            if rc != 0:
                raise RuntimeError(f"bench_serving failed (exit {rc}) at concurrency {c}: "
                                   f"{shlex.join(cmd)}")
        records = read_jsonl(tmp)
        if len(records) != len(concs):
            raise RuntimeError(f"expected {len(concs)} result lines, bench_serving wrote {len(records)}")
        got = [r.get("max_concurrency") for r in records]
        if got != concs:
            raise RuntimeError(f"result lines are for concurrencies {got}, expected {concs}")
        text = tmp.read_text(encoding="utf-8")
        io.write_text(out, text)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def dspark_note() -> str:
    """What random-ids prompts do to a DSpark server's speed, from the public runs' acceptance groups
    (:func:`k3lab.serving.field.accept_groups`): a draft guesses synthetic prompts' outputs far better
    than natural text's, so a DSpark speed measured here is an upper bound for real traffic."""
    from ..serving.field import accept_groups

    gs = accept_groups("nvidia-blackwell")
    told = (f" (public Blackwell runs accept a median {gs[-1]['median']:g} tokens a step on synthetic prompts, "
            f"{gs[0]['median']:g} on natural text)" if len(gs) > 1 else "")
    return ("the sweep prompts with random-ids: on a speculative (DSpark) server the draft is accepted far more "
            f"often than on real traffic{told}, so its DSpark speed here is an upper bound; a server without "
            "speculative decoding is measured as it serves")


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab bench``: a bench_serving concurrency sweep against a running server."""
    ap = OneLineParser(prog="python -m k3lab bench", description="Drive sglang.bench_serving over a concurrency sweep.")
    ap.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:30000")
    ap.add_argument("--concurrency", default=",".join(map(str, DEFAULT_CONCURRENCIES)),
                    help=help_text("comma-separated, e.g. 1,4,16,24,64; each", "requests"))
    ap.add_argument("--input-len", type=arg("tokens", "--input-len"), default=1024,
                    help=help_text("prompt tokens (default 1024)", "tokens"))
    ap.add_argument("--output-len", type=arg("tokens", "--output-len"), default=400,
                    help=help_text("output tokens (default 400)", "tokens"))
    ap.add_argument("--range-ratio", type=arg("range_ratio_or_one", "--range-ratio"), default=1.0,
                    help=help_text("bench_serving's --random-range-ratio (default 1.0)", "range_ratio_or_one"))
    ap.add_argument("--num-prompts-per-concurrency", type=arg("requests", "--num-prompts-per-concurrency"),
                    default=None, help=help_text("requests per point (default 4 x concurrency, at least 8)",
                                                 "requests"))
    ap.add_argument("--backend", default="sglang-oai")
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--python", default=None, help="interpreter with sglang (default: this one)")
    ap.add_argument("--out", default=None, help="JSONL path (default: results/04_throughput_perf_per_dollar/bench_sweep.jsonl)")
    ap.add_argument("--allow-remote", action="store_true", help="allow a non-loopback server")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args(argv)
    try:
        concs = parse_concurrencies(a.concurrency)
        kw = dict(num_prompts=a.num_prompts_per_concurrency, input_len=a.input_len,
                  output_len=a.output_len, range_ratio=a.range_ratio, backend=a.backend,
                  tokenizer=a.tokenizer, model=a.model, python=a.python,
                  allow_remote=a.allow_remote)
        if a.out and Path(a.out).is_dir():
            raise ValueError(f"--out {a.out} is a directory; give a file path, e.g. {Path(a.out) / 'bench_sweep.jsonl'}")
        if a.dry_run:
            print(f"note: {dspark_note()}", file=sys.stderr)  # (newcomer 19: the measure line's DSpark runs, overstated)
            for c in concs:
                print(shlex.join(build_command(a.base_url, c, "OUT.jsonl", **kw)))
            return 0
        why = not_ready(a.base_url, a.python)
        if why:
            raise RuntimeError(f"cannot run the sweep here: {why}")
        print(f"note: {dspark_note()}", file=sys.stderr)  # once the sweep runs (a refusal stays one line)
        path = sweep(a.base_url, concs, a.out, **kw)
    except (ValueError, RuntimeError, FileNotFoundError) as e:
        print(f"k3lab bench: error: {e}", file=sys.stderr)
        return 2
    print(summarize(read_jsonl(path)).to_string(index=False))
    print(f"wrote {path.name}")
    return 0
