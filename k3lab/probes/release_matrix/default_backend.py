"""Which attention backend sglang itself picks on ROCm for Kimi K3 when no flag names one.

What an operator who passes no ``--attention-backend`` gets: sglang's own automatic choice
for an MLA model under HIP emulation, per head count and TP degree (a column of the matrix).

sglang is imported inside the function: it runs in the child, on the release
``PYTHONPATH`` selected, and the package must import without sglang.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace as NS

from .emulation import swapped

CASES = ((96, 8), (96, 6), (128, 8))   # (total heads, TP)


def _model_config(heads: int):
    return NS(hf_config=NS(architectures=["KimiK3ForConditionalGeneration"]),
              get_num_kv_heads=lambda tp: heads // tp, has_attention_sinks=False,
              has_asymmetric_kv=False)


def default_attention_backend_hip() -> dict:
    """sglang's own automatic attention-backend choice for an MLA model on ROCm (no flag given).

    0.5.16–0.5.18: ``ServerArgs._get_default_attn_backend`` with the ``server_args`` module's
    ``is_hip`` / ``is_hopper_with_cuda_12_3`` / ``is_sm100_supported`` replaced by constants
    (HIP, not Hopper, not SM100); 0.5.19 on: ``arg_groups.model_override_base.
    get_default_attn_backend`` under sglang's ``override_platform(is_hip=True, …)``. The
    ``self``/``server_args`` (only ``tp_size`` and ``speculative_algorithm`` are read) and the
    model config (K3's architecture, ``get_num_kv_heads`` = 96 // TP as K3's config has 96 KV
    heads) are stand-ins. → {"<heads> heads TP<tp> (<per rank>/rank)": backend}.
    """
    out = {}
    try:
        mob = importlib.import_module("sglang.srt.arg_groups.model_override_base")
        fn = getattr(mob, "get_default_attn_backend", None)
    except ImportError:
        fn = None
    if fn is not None:
        from sglang.srt.runtime_context import override_platform   # child: release on PYTHONPATH

        with override_platform(is_hip=True, is_cuda=False, is_sm100=False, is_hopper_with_cuda_12_3=False):
            for heads, tp in CASES:
                out[f"{heads} heads TP{tp} ({heads // tp}/rank)"] = fn(
                    NS(tp_size=tp, speculative_algorithm=None), True, _model_config(heads))
        out["selector"] = "sglang.srt.arg_groups.model_override_base.get_default_attn_backend"
        return out
    S = importlib.import_module("sglang.srt.server_args")
    names = {"is_hip": True, "is_hopper_with_cuda_12_3": False, "is_sm100_supported": False}
    with swapped(S.__dict__, {n: (lambda v=val: v) for n, val in names.items()}):
        for heads, tp in CASES:
            out[f"{heads} heads TP{tp} ({heads // tp}/rank)"] = S.ServerArgs._get_default_attn_backend(
                NS(tp_size=tp, speculative_algorithm=None), True, _model_config(heads))
    out["selector"] = "sglang.srt.server_args.ServerArgs._get_default_attn_backend"
    return out
