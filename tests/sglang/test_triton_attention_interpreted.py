"""k3lab's Triton prefill kernel (:mod:`k3lab.live.triton_attention`) without a GPU: Triton's CPU
interpreter runs the same kernel code (issue 32's offline twin of the GPU benchmark's Triton
row). It lives in this tier because .venv-sglang is the environment that has triton. The
interpreter is switched on by ``TRITON_INTERPRET=1`` before triton is imported, so each check
runs in a child interpreter; it cannot multiply bfloat16 tiles, so float32 and float16 are checked.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton", reason="triton is not installed in this environment")

REPO = Path(__file__).resolve().parents[2]
CHILD = r"""
import json, sys, torch
from k3lab import attention as A, mla_kernels as K
from k3lab.live import triton_attention as T
out = []
for dtype in (torch.float32, torch.float16):
    for heads, d, dv, n, config in ((12, 192, 128, 37, (16, 16, 1, 1)), (3, 192, 128, 70, None), (2, 64, 32, 20, (16, 16, 1, 1))):
        q, k, v, cu = K.make_varlen_batch([n], heads, qk_head_dim=d, v_head_dim=dv, dtype=dtype, seed=5)
        kern = lambda q, k, v: T.causal_prefill(q, k, v, config=config)
        got = kern(q, k, v)
        ref = K.mla_prefill_reference(q.double(), k.double(), v.double(), cu)
        padded = A.with_head_padding(kern)(q, k, v) if heads == 12 else got
        out.append({"dtype": str(dtype), "heads": heads, "d": d, "n": n, "shape": list(got.shape),
                    "err": float((got.double() - ref).abs().max()), "padded_equal": bool(torch.equal(padded, got))})
try:
    T.causal_prefill(*K.make_varlen_batch([4], 1, qk_head_dim=112, v_head_dim=32)[:3])
    out.append("accepted 112")
except ValueError as e:
    out.append(str(e))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def results():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_kernel_matches_the_reference_causal_prefill(results):
    rows = results[:-1]
    assert len(rows) == 6
    for r in rows:
        assert r["shape"] == [r["n"], r["heads"], 128 if r["d"] == 192 else 32]
        tol = 1e-5 if r["dtype"] == "torch.float32" else 5e-3
        assert r["err"] < tol, r


def test_zero_padding_12_heads_to_16_around_it_changes_no_bit(results):
    assert all(r["padded_equal"] for r in results[:-1] if r["heads"] == 12)


def test_a_head_dim_it_cannot_split_is_refused_in_words(results):
    assert results[-1] == "q/k head dim 112 is not a power of two or a sum of two (e.g. 192 = 128 + 64)"
