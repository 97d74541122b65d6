"""Finding 3: the head-count rules of AITER MLA prefill, and the 12→16 zero-pad wrapper.

Kimi K3 has 96 attention heads; at TP8 each rank holds 12. Two rules decide whether a head
count reaches AITER's fast kernels:

* sglang's own (``AiterAttnBackend.__init__``, 0.5.16 … 0.5.18): :func:`is_supported_heads`,
  :func:`padded_heads`, :func:`kernel_heads`. The release matrix
  (:mod:`k3lab.probes.release_matrix`) checks these against every release.
* AITER's own, per kernel and architecture, read from the installed ``amd-aiter`` release by
  :mod:`k3lab.aiter_release` — never typed here. :func:`head_table` puts both side by side.

sglang's rule and the zero-pad wrapper (:func:`with_head_padding`, :func:`pad_heads`,
:func:`check_qkv`, :func:`check_cu`) are what an operator installs with the AITER head-pad
patch, so they live in the ``k3lab-patches`` distribution
(``patches/k3lab_patches/head_padding.py``) and are re-exported here unchanged:
``k3lab.attention.with_head_padding`` *is* ``k3lab_patches.head_padding.with_head_padding``.
The kernels the wrapper is tested with are in :mod:`k3lab.mla_kernels`. (A package folder
rather than ``attention.py`` so that git follows the old file to its new place.)
"""

from __future__ import annotations

from k3lab_patches.head_padding import *  # noqa: F401,F403  (the one implementation)
from k3lab_patches.head_padding import _check_heads

from .. import aiter_release
from ..model.flops import attention_flops, causal_pairs  # noqa: F401  (torch-free; re-exported)

#: the AITER kernels shown beside sglang's rule: (family, arch) of k3lab.aiter_release
AITER_COLUMNS = (("mla_prefill_asm", "gfx950"), ("mla_reduce_v1_dv128", "gfx950"),
                 ("fmha_v3_fwd", "gfx950"), ("fmha_v3_fwd", "gfx942"))


def head_table(total_heads: int = 96, tps=(1, 2, 4, 8, 16, 32), release_dir=None):
    """Per TP degree: heads per rank, sglang's start-up verdict, the count it pads or repeats
    to, the attention FLOPs spent on zero heads, and for each AITER kernel of
    :data:`AITER_COLUMNS` (from the installed release) whether it accepts the real count and
    the smallest count it does accept. → pandas DataFrame, one row per TP degree.
    """
    import pandas as pd

    _check_heads(total_heads, "total heads")
    rows = []
    for tp in tps:
        _check_heads(tp, "TP degree")
        if total_heads % tp:
            raise ValueError(f"TP {tp} does not divide {total_heads} heads")
        n = total_heads // tp
        try:
            m = padded_heads(n)
        except ValueError:
            m = None
        row = {"tp": tp, "heads_per_rank": n, "sglang_supported": is_supported_heads(n),
               "sglang_padded_heads": m, "kernel_heads": kernel_heads(n) if m else None,
               "extra_attention_flops_pct": round(100.0 * (m - n) / n, 4) if m else None}
        for fam, arch in AITER_COLUMNS:
            r = aiter_release.rule(fam, arch, release_dir)
            row[f"{fam}@{arch}"] = r.accepts(n)
            row[f"{fam}@{arch}_padded"] = r.padded(n)
        rows.append(row)
    return pd.DataFrame(rows)

