"""Finding 2 reproduced on sglang's own code, on CPU (runs in ``.venv-sglang``).

On a CPU box sglang 0.5.16's ``is_cuda()`` / ``is_musa()`` are false, so
``sglang/srt/speculative/dflash_utils.py`` binds ``top_k_renorm_prob`` and
``top_p_renorm_prob`` to ``None``: exactly what ROCm got. This module calls the real
``build_dflash_verify_target_probs`` with request mixes and records, for three states of
that module's bindings, which path the batch took (sparse ``torch.topk`` or dense
``softmax`` + renorm) and what happened:

* ``0.5.16`` — as installed (both names ``None``): ``TypeError``;
* ``pr32621`` — the state the article hit (PR #32621: the HIP branch binds a Triton top-p
  kernel and never binds top-k): ``top_k_renorm_prob`` deleted, ``top_p_renorm_prob``
  bound. A Triton kernel cannot run here, so k3lab's top-p stands in for it (it is only
  reached by batches that never touch top-k);
* ``patched`` — after :data:`k3lab_patches.topk_renorm.PATCH` ``.apply``.

The batch's sampling info, the seeded logits and the naive reference target are those of
``python -m k3lab_patches verify`` (:mod:`k3lab_patches.verify`: a real
``SamplingBatchInfo`` built from real ``SamplingParams``), which an operator runs on a patched
image. The path is observed, not inferred: the module's ``F.softmax`` is wrapped to record the width it is called on.
The NameError is also shown the way the scheduler met it: in a child process that dies
of it, with Python's own excepthook printing the "Did you mean" line.

:func:`transcript` returns everything as a deterministic dict (no times, no paths);
``benchmarks/sglang_topk_repro.py`` writes it to ``data/measured/cpu-2core/`` and the
notebook replays it. :func:`run_sglang_0523_fallback` runs sglang 0.5.23's torch fallback
(``_dflash_top_k_renorm_prob``) in a child process whose ``PYTHONPATH`` points at a
second sglang install.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from k3lab_patches.verify import DRAFT_TOKENS, logits_for, reference_target_probs, sampling_info  # noqa: F401
from k3lab_patches.verify import MIX as _CRASH_REQUESTS

from .. import data, sampling
from ..paths import REPO_ROOT

DFLASH = "sglang.srt.speculative.dflash_utils"
STATES = ("0.5.16", "pr32621", "patched")
STATE_LABELS = {
    "0.5.16": "sglang 0.5.16 as shipped (non-CUDA: both names None)",
    "pr32621": "PR #32621 state (top-p bound, top-k never bound)",
    "patched": "0.5.16 + k3lab.patches (plain-PyTorch renorm)",
}
# Request mixes: each request's sampling parameters as a user sends them.
MIXES: dict[str, list[dict]] = {
    "all unrestricted (top_k=-1, top_p=1)": [dict(temperature=0.8)] * 4,
    "all top_k=20": [dict(temperature=0.8, top_k=20)] * 4,
    "top_k=20 and top_k=50": [dict(temperature=0.8, top_k=20), dict(temperature=0.8, top_k=50)] * 2,
    "top_k=20 + top_p=0.9, all": [dict(temperature=0.8, top_k=20, top_p=0.9)] * 4,
    "top_p=0.9 only": [dict(temperature=0.8, top_p=0.9)] * 4,
    "top_k=20 mixed with unrestricted": list(_CRASH_REQUESTS),  # what `k3lab_patches verify` runs
    "greedy (temperature 0) mixed with unrestricted": [dict(temperature=0.0), dict(temperature=0.8)] * 2,
    "top_k=50 + top_p=0.95 mixed with unrestricted": [dict(temperature=0.8, top_k=50, top_p=0.95),
                                                      dict(temperature=0.8)] * 2,
}
CRASH_MIX = "top_k=20 mixed with unrestricted"
DEFAULT_VOCAB = 163_840  # Kimi K3's vocabulary (data/model/kimi_k3_config.json)


def _dflash():
    import importlib

    return importlib.import_module(DFLASH)


@contextlib.contextmanager
def bindings(state: str):
    """Put dflash_utils' renorm names into ``state`` (see :data:`STATES`); restore after."""
    from k3lab_patches.topk_renorm import PATCH

    if state not in STATES:
        raise ValueError(f"unknown state {state!r}; states: {STATES}")
    mod = _dflash()
    before = {n: mod.__dict__.get(n, None) for n in ("top_k_renorm_prob", "top_p_renorm_prob")}
    had = {n: n in mod.__dict__ for n in before}
    try:
        if state == "pr32621":
            mod.__dict__.pop("top_k_renorm_prob", None)
            mod.top_p_renorm_prob = sampling.top_p_renorm_prob  # stands in for the Triton kernel
        elif state == "patched":
            from importlib.metadata import version

            PATCH.apply(version("sglang"))
        yield mod
    finally:
        if state == "patched":
            PATCH.revert()
        for n, v in before.items():
            if had[n]:
                setattr(mod, n, v)
            else:
                mod.__dict__.pop(n, None)


def describe_bindings(mod) -> dict[str, str]:
    """What each renorm name of the module is bound to, in words."""
    from k3lab_patches.topk_renorm import REPLACEMENTS

    out = {}
    for n in ("top_k_renorm_prob", "top_p_renorm_prob", "tree_speculative_sampling_target_only"):
        v = mod.__dict__.get(n, "<missing>")
        if isinstance(v, str):
            out[n] = "not defined"
        elif v is None:
            out[n] = "None"
        elif v is REPLACEMENTS.get(n):
            out[n] = "k3lab.sampling"
        elif v is sampling.top_p_renorm_prob:
            out[n] = "a top-p kernel (k3lab's, standing in for Triton)"
        else:
            out[n] = f"{getattr(v, '__module__', '?')}.{getattr(v, '__name__', '?')}"
    return out


class _SoftmaxSpy:
    """Proxy for ``torch.nn.functional`` recording the last-dim width of each softmax."""

    def __init__(self, real):
        self._real, self.widths = real, []

    def softmax(self, x, *a, **kw):
        self.widths.append(int(x.shape[-1]))
        return self._real.softmax(x, *a, **kw)

    def __getattr__(self, name):
        return getattr(self._real, name)


def run_case(state: str, mix: str, vocab: int = DEFAULT_VOCAB, draft: int = DRAFT_TOKENS,
             seed: int = 0) -> dict:
    """One (state, request mix) through the real verifier → a transcript row."""
    requests = MIXES[mix]
    info = sampling_info(requests, vocab)
    logits = logits_for(len(requests), vocab, draft, seed)
    with bindings(state) as mod:
        spy = _SoftmaxSpy(mod.F)
        mod.F = spy
        try:
            got = mod.build_dflash_verify_target_probs(
                next_token_logits=logits, sampling_info=info, draft_token_num=draft,
                bs=len(requests))
            outcome, error = "ok", ""
        except Exception as e:  # the point: record what the scheduler would have died of
            got, outcome, error = None, type(e).__name__, f"{type(e).__name__}: {e}"
        finally:
            mod.F = spy._real
    width = spy.widths[0] if spy.widths else None
    path = "dense" if width == vocab else ("sparse" if width else "none")
    matches = ""
    if got is not None:
        ref = reference_target_probs(logits, requests, draft)
        matches = bool(torch.allclose(got, ref, atol=1e-6, rtol=1e-5)
                       and torch.equal(got != 0, ref != 0))
    return {"state": state, "mix": mix, "need_top_k": bool(info.need_top_k_sampling),
            "need_top_p": bool(info.need_top_p_sampling), "path": path, "outcome": outcome,
            "error": error, "matches_reference": matches}


_CHILD = """
import sys
from k3lab.probes import topk_repro as r
sys.exit(r._crash_child({vocab}))
"""


def _crash_child(vocab: int) -> int:
    """In a child: the PR #32621 state, the crash mix, and no try/except (dies of it)."""
    requests = MIXES[CRASH_MIX]
    info = sampling_info(requests, vocab)
    logits = logits_for(len(requests), vocab)
    mod = _dflash()
    mod.__dict__.pop("top_k_renorm_prob", None)
    mod.top_p_renorm_prob = sampling.top_p_renorm_prob
    mod.build_dflash_verify_target_probs(next_token_logits=logits, sampling_info=info,
                                         draft_token_num=DRAFT_TOKENS, bs=len(requests))
    return 0


def crash_in_child(vocab: int = 4096, timeout_s: float = 300) -> dict:
    """Run the PR #32621 crash in a fresh interpreter → {returncode, last_line, exc_lines}."""
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(vocab=int(vocab))],
                          capture_output=True, text=True, timeout=timeout_s,
                          cwd=str(REPO_ROOT))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    exc = [ln for ln in lines if ln.startswith("NameError") or ln.startswith("TypeError")]
    return {"returncode": proc.returncode, "last_line": lines[-1] if lines else "",
            "exception_lines": exc,
            "traceback_mentions": sorted({ln.strip().split(",")[0].split("/")[-1].rstrip('"')
                                          for ln in lines if "dflash_utils.py" in ln})}


def transcript(vocab: int = DEFAULT_VOCAB, crash_vocab: int = 4096) -> dict:
    """Every state × mix row, the bindings of each state, and the child-process crash."""
    from importlib.metadata import version

    rows, binds = [], {}
    for state in STATES:
        with bindings(state) as mod:
            binds[state] = describe_bindings(mod)
        for mix in MIXES:
            rows.append(run_case(state, mix, vocab))
    return {"sglang_version": version("sglang"), "vocab": vocab, "draft_tokens": DRAFT_TOKENS,
            "requests_per_mix": {m: len(r) for m, r in MIXES.items()},
            "state_labels": STATE_LABELS, "bindings": binds, "rows": rows,
            "crash_mix": CRASH_MIX, "crash": crash_in_child(crash_vocab)}


# --- sglang 0.5.23's torch fallback, in a child process --------------------------------

SGLANG_0523_DIR_ENV = "K3LAB_SGLANG_0523"


def sglang_0523_dir() -> Path:
    """Where the second sglang (0.5.23) is installed (``make sglang-env``): ``$K3LAB_SGLANG_0523``,
    else this checkout's ``.venv-sglang/sglang-0.5.23``, else (a checkout without its own
    ``.venv-sglang``, e.g. a git worktree run with another checkout's) the one beside the
    running interpreter's environment."""
    if SGLANG_0523_DIR_ENV in os.environ:
        return Path(os.environ[SGLANG_0523_DIR_ENV])
    own = REPO_ROOT / ".venv-sglang" / "sglang-0.5.23"
    beside = Path(sys.prefix) / "sglang-0.5.23"
    return beside if not own.exists() and beside.is_dir() else own


_CHILD_0523 = """
import sys, torch
from importlib.metadata import version
assert version("sglang") == "0.5.23", version("sglang")
from sglang.srt.speculative import dflash_utils as d
assert d.top_k_renorm_prob is None, "expected the non-CUDA build (fallback path)"
inp = torch.load(sys.argv[1])
outs = [d._dflash_top_k_renorm_prob(p, k) for p, k in inp]
torch.save(outs, sys.argv[2])
"""


def run_sglang_0523_fallback(cases: list[tuple[torch.Tensor, torch.Tensor]],
                             python: str | None = None, timeout_s: float = 600) -> list[torch.Tensor]:
    """sglang 0.5.23's ``_dflash_top_k_renorm_prob(probs, top_ks)`` on each case, in a child.

    ``cases``: (probs ``[rows, vocab]``, top_ks int ``[rows]``). RuntimeError naming the
    folder if the 0.5.23 install is absent or its import fails.
    """
    target = sglang_0523_dir()
    if not (target / "sglang").is_dir():
        raise RuntimeError(f"sglang 0.5.23 is not installed in {target.name} "
                           f"(make sglang-env installs it)")
    with tempfile.TemporaryDirectory(prefix="k3lab-0523-") as tmp:
        src, dst = Path(tmp) / "in.pt", Path(tmp) / "out.pt"
        torch.save(list(cases), src)
        env = dict(os.environ, PYTHONPATH=str(target))
        proc = subprocess.run([python or sys.executable, "-c", _CHILD_0523, str(src), str(dst)],
                              capture_output=True, text=True, env=env, timeout=timeout_s)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.splitlines()[-5:])
            raise RuntimeError(f"sglang 0.5.23 child failed (exit {proc.returncode}):\n{tail}")
        return torch.load(dst)


# --- replay (main environment, no sglang needed) ----------------------------------------

TRANSCRIPT = "sglang_topk_repro.json"


def load_transcript(path: Path | None = None) -> dict:
    """The committed transcript (``data/measured/cpu-2core/sglang_topk_repro.json``), or a
    fresh one at ``path``, read and checked by :mod:`k3lab.data` (schema ``TopkRepro``)."""
    return data.load("sglang_topk_repro") if path is None else data.read("sglang_topk_repro", path)


def blast_radius_frame(doc: dict):
    """Transcript rows → DataFrame: one row per request mix, path, then one outcome per state."""
    import pandas as pd

    rows = {}
    for r in doc["rows"]:
        d = rows.setdefault(r["mix"], {"request mix": r["mix"], "need top-k": r["need_top_k"],
                                       "need top-p": r["need_top_p"], "path": r["path"]})
        ok = r["outcome"] == "ok"
        d[r["state"]] = ("ok" + ("" if r["matches_reference"] else " (differs)")) if ok else r["outcome"]
    return pd.DataFrame(list(rows.values()), columns=["request mix", "need top-k", "need top-p", "path",
                                                      *STATES])
