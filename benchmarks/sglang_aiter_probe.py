"""Probe the real sglang AITER backend on CPU, before and after the k3lab head-pad patch.

    .venv-sglang/bin/python benchmarks/sglang_aiter_probe.py

Runs sglang's own ``AiterAttnBackend.__init__`` for Kimi K3 (96 heads) at TP 1..32, and its
``forward_extend`` fp8 prefill path with k3lab's labelled AITER stand-ins
(k3lab.probes.aiter_backend), unpatched and patched. Writes
``data/measured/cpu-2core/sglang_aiter_probe.json`` for notebook 03 (which runs in .venv,
without sglang) to replay.
"""

from __future__ import annotations

import datetime as _dt
import platform

import k3lab_patches as patches
import torch
from k3lab_patches.aiter_head_pad import _MARK, PATCH

from k3lab import io
from k3lab.paths import MEASURED_DIR
from k3lab.probes import aiter_backend as H


def main() -> int:
    version = patches.sglang_version()
    mod = H.backend_module()
    PATCH.revert()
    rows = []
    for tp in (1, 2, 4, 8, 16, 32):
        ok, msg = H.accepts(96, tp)
        rows.append({"tp": tp, "heads_per_rank": 96 // tp, "unpatched_starts": ok, "unpatched_error": msg})
    applied = PATCH.apply(version)
    try:
        for r in rows:
            b, _ = H.make_backend(96, r["tp"])
            r.update({"patched_starts": True, "patched_num_head": b.num_head,
                      "patched_num_head_padded": b.num_head_padded,
                      "patched_real_heads": getattr(b, "k3lab_real_heads", None)})
        backend, _ = H.make_backend(96, 8)
        # the original fp8 prefill method on 12 heads (what 0.5.16 would run if it started)
        si = H.StandIns()
        original = getattr(mod.AiterAttnBackend.mla_fp8_prefill_attn, _MARK)
        with H.installed(si):
            _, (q, k, v, cu, layer) = H.cold_prefill(backend, [7, 19, 1], seed=3)
            try:
                original(backend, q, k, v, layer)
                unpatched_prefill = {"ok": True}
            except RuntimeError as e:
                unpatched_prefill = {"ok": False, "error": str(e)}
        si = H.StandIns()
        with H.installed(si):
            out, (q, k, v, cu, layer) = H.cold_prefill(backend, [7, 19, 1], seed=3)
        ref = H.fp8_reference(q, k, v, cu, layer.scaling)
        patched_prefill = {"ok": True, "kernel_heads": si.prefill_heads, "reduce_heads": si.reduce_heads,
                           "out_shape": list(out.shape),
                           "bitwise_equal_to_reference": bool(torch.equal(out, ref)),
                           "max_abs_diff": float((out.float() - ref.float()).abs().max())}
    finally:
        reverted = PATCH.revert()
    doc = {"sglang": version, "torch": torch.__version__, "python": platform.python_version(),
           "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": "python benchmarks/sglang_aiter_probe.py (in .venv-sglang)",
           "real": "sglang's aiter_backend module and AiterAttnBackend methods",
           "stand_ins": "model runner/config/layer/batch objects and the AITER kernels (k3lab.probes.aiter_backend)",
           "tp_rows": rows, "patched": applied, "reverted": reverted,
           "prefill_12_heads_unpadded": unpatched_prefill, "prefill_12_heads_patched": patched_prefill}
    io.write_json(MEASURED_DIR / "cpu-2core" / "sglang_aiter_probe.json", doc)
    print(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
