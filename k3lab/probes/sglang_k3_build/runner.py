"""The parent side of the K3 build probe: launch one child per rank, collect the transcript.

:func:`run_probe` builds one rank of a layout in a child process (``python -m
k3lab.probes.sglang_k3_build`` in ``.venv-sglang`` with sglang 0.5.23 first on
``PYTHONPATH``); :func:`probe_case` compacts it; :func:`transcript` runs every case of
:data:`~k3lab.probes.sglang_k3_build.layouts.LAYOUTS` ×
:data:`~k3lab.probes.sglang_k3_build.layouts.PLATFORM_CASES`, the all-rank check and the
expected failures, as ``benchmarks/sglang_k3_rank_bytes.py`` commits it;
:func:`load_transcript` reads the committed one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from ... import data
from ...paths import REPO_ROOT
from ..topk_repro import sglang_0523_dir
from .comparison import sglang_rank_bytes
from .config import QUANT_CONFIG_SOURCE
from .layouts import LAYOUTS, PLATFORM_CASES, PLATFORMS, RELEASE, Layout, case_key, iter_cases
from .records import compact

TRANSCRIPT = "sglang_0523_k3_rank_bytes.json"


def default_python() -> str:
    """``.venv-sglang``'s interpreter (the current one when already inside it)."""
    cand = REPO_ROOT / ".venv-sglang" / "bin" / "python"
    if Path(sys.prefix).resolve() == (REPO_ROOT / ".venv-sglang").resolve() or not cand.exists():
        return sys.executable
    return str(cand)


def run_probe(layout: Layout | str, platform: str = "cuda-sm100", aiter_k3_opt: str | None = None,
              rank: int | None = None, python: str | None = None, post_load: bool = True,
              moe_runner_backend: str | None = None, timeout_s: float = 900) -> dict:
    """Build one rank of ``layout`` on ``platform`` in a child process whose
    ``PYTHONPATH`` starts with the 0.5.23 folder; return the child's record (dict).

    ``rank`` defaults to the first probed rank (TP rank 0 of stage 0);
    ``moe_runner_backend`` overrides :meth:`Layout.runner_for`. RuntimeError with the
    child's last lines if it fails.
    """
    lay = LAYOUTS[layout] if isinstance(layout, str) else layout
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; known: {', '.join(PLATFORMS)}")
    target = sglang_0523_dir()
    if not (target / "sglang").is_dir():
        raise RuntimeError(f"sglang {RELEASE} is not installed in {target.name} (make sglang-env)")
    rank = lay.probe_ranks()[0] if rank is None else rank
    args = ["--tp", str(lay.tp), "--pp", str(lay.pp), "--rank", str(rank), "--platform", platform,
            "--ep-size", str(lay.ep), "--moe-a2a-backend", lay.a2a_for(platform),
            "--dp-size", str(lay.dp), "--moe-runner-backend", moe_runner_backend or lay.runner_for(platform)]
    if lay.dp_attention:
        args.append("--enable-dp-attention")
    if aiter_k3_opt is not None:
        args += ["--aiter-k3-opt", str(aiter_k3_opt)]
    if not post_load:
        args.append("--no-post-load")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(target), str(REPO_ROOT)])
    with tempfile.TemporaryDirectory(prefix="k3lab-k3probe-") as tmp:
        out = Path(tmp) / "rank.json"
        proc = subprocess.run([python or default_python(), "-m", "k3lab.probes.sglang_k3_build",
                               *args, "--out", str(out)], capture_output=True, text=True,
                              env=env, cwd=tmp, timeout=timeout_s)
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-15:])
            raise RuntimeError(f"sglang {RELEASE} K3 build failed for {lay.name} on {platform} "
                               f"rank {rank} (exit {proc.returncode}):\n{tail}")
        return json.loads(out.read_text(encoding="utf-8"))


def probe_case(layout: str, platform: str, aiter_k3_opt: str | None = None, stage: int = 0,
               python: str | None = None) -> dict:
    """The compact record (:func:`compact`) of TP rank 0 of pipeline ``stage``."""
    lay = LAYOUTS[layout]
    return compact(run_probe(lay, platform, aiter_k3_opt, rank=stage * lay.tp, python=python))


#: Layout/platform/runner combinations that 0.5.23 refuses to build (recorded, with the
#: error, by :func:`transcript`): the default runner for K3 on SM100 under DeepEP.
EXPECTED_FAILURES = (("tp8-ep8-a2a", "cuda-sm100", None, "auto"),)
#: Layout/platform cases whose every TP rank is built to show the ranks are equal.
RANK_CHECKS = (("tp8", "cuda-sm100", None),)


def transcript(layouts=None, rank_checks=RANK_CHECKS, python: str | None = None,
               progress=None) -> dict:
    """Every probed rank of :data:`LAYOUTS` × :data:`PLATFORM_CASES` (compact), the
    heaviest rank of each layout/platform, the all-rank check and the expected failures.
    Deterministic (no times, no paths). ``progress(str)`` is called after each build."""
    say = progress or (lambda msg: None)
    cases = {}
    for name, platform, opt, stage in iter_cases(layouts):
        key = case_key(name, platform, opt, stage)
        cases[key] = probe_case(name, platform, opt, stage, python)
        say(f"{key}: {cases[key]['totals']['bytes'] / 2**30:.3f} GiB")
    heaviest = {}
    for key, c in cases.items():
        layout, plat, _ = key.split("|")
        loaded = sglang_rank_bytes(c)
        h = heaviest.get(f"{layout}|{plat}")
        if h is None or loaded > h["loaded_bytes"]:
            proc = c["process_weights_after_loading"]
            heaviest[f"{layout}|{plat}"] = {
                "case": key, "world_rank": c["world_rank"], "pp_rank": c["resolved"]["pp_rank"],
                "bytes": c["totals"]["bytes"], "GiB": round(c["totals"]["bytes"] / 2**30, 4),
                "post_load_runtime_bytes": c["post_load"]["runtime_bytes"],
                "post_load_merge_padding_bytes": c["post_load"]["merge_padding_bytes"],
                "process_weights_delta_bytes": proc.get("delta_bytes_rank", 0) if proc.get("ran") else None,
                "loaded_bytes": loaded, "loaded_GiB": round(loaded / 2**30, 4),
                "resident_after_post_load_bytes": c["post_load"]["resident_bytes"],
                "resident_after_post_load_GiB": round(c["post_load"]["resident_bytes"] / 2**30, 4)}
    checks = {}
    for name, platform, opt in rank_checks or ():
        lay = LAYOUTS[name]
        per = {}
        for r in range(lay.tp * lay.pp):
            d = run_probe(lay, platform, opt, rank=r, python=python, post_load=False)
            per[str(r)] = d["totals"]["bytes"]
        checks[case_key(name, platform, opt).rsplit("|", 1)[0]] = {
            "bytes_per_world_rank": per, "all_equal_within_stage": all(
                len({per[str(s * lay.tp + t)] for t in range(lay.tp)}) == 1 for s in range(lay.pp))}
        say(f"rank check {name} {platform}: {sorted(set(per.values()))}")
    failures = []
    for name, platform, opt, runner in EXPECTED_FAILURES:
        lay = LAYOUTS[name]
        try:
            run_probe(lay, platform, opt, python=python, post_load=False, moe_runner_backend=runner)
            err = None
        except RuntimeError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            err = lines[-1] if lines else str(e)
        failures.append({"layout": name, "platform": platform, "moe_runner_backend": runner,
                         "server_args": dict(lay.server_args(platform), moe_runner_backend=runner),
                         "error": err})
        say(f"expected failure {name} {platform} runner={runner}: {err}")
    first = next(iter(cases.values()))
    return {
        "what": ("Per-rank weight bytes of sglang 0.5.23's real Kimi K3 text model "
                 "(KimiK3LinearForCausalLM) built on the meta device, one child process per rank"),
        "sglang_version": first["sglang_version"],
        "model_class": "sglang.srt.models.kimi_k3.KimiK3LinearForCausalLM",
        "quantization_config_source": QUANT_CONFIG_SOURCE,
        "bytes_note": ("bytes as stored: packed MXFP4 uint8 weights and uint8 E8M0 scales one byte "
                       "per element; 'runtime' rows are tensors post_load_weights leaves (MLA "
                       "w_kc/w_vc); resident_bytes counts each storage once after post_load_weights; "
                       "loaded_bytes = parameters + buffers + runtime rows + the experts' "
                       "process_weights_after_loading change (run on one layer, SM100 "
                       "flashinfer_mxfp4 only)"),
        "layouts": {n: dict(asdict(LAYOUTS[n]), server_args={
            p: dict(LAYOUTS[n].server_args(p), moe_runner_backend=LAYOUTS[n].runner_for(p))
            for p in PLATFORMS}) for n in (layouts or LAYOUTS)},
        "platform_cases": [{"platform": p, "SGLANG_AITER_K3_OPT": o, "label": PLATFORMS[p]["label"]}
                           for p, o in PLATFORM_CASES],
        "cases": cases,
        "heaviest": dict(sorted(heaviest.items())),
        "rank_checks": checks,
        "expected_failures": failures,
    }


def load_transcript(path: Path | None = None) -> dict:
    """The committed transcript (``data/measured/cpu-2core/sglang_0523_k3_rank_bytes.json``),
    or the one at ``path``, read and checked by :mod:`k3lab.data` (schema ``RankBytes``)."""
    return data.load("sglang_k3_rank_bytes") if path is None else data.read("sglang_k3_rank_bytes", path)
