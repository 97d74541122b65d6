"""Finding 3 from AITER's real release: which head counts per rank each AITER kernel accepts.

k3lab.attention types AITER's head rules by hand. This module derives them instead, by
reading the files of the AITER release that ``pip`` installs, **without importing it**
(``import aiter`` needs ROCm). It parses:

* the C++ checks of the MLA entry points (``TORCH_CHECK`` conditions and ``gqa_ratio == N``
  branches of ``mla_prefill_asm_fwd`` / ``mla_decode_stage1_asm_fwd`` in
  ``aiter_meta/csrc/py_itfs_cu/asm_mla.cu``), the head-count cases compiled into
  ``mla_reduce_v1`` (``aiter_meta/csrc/kernels/mla/reduce.cu``) and the persistent-metadata
  checks (``aiter_meta/csrc/kernels/mla/metadata/v1_*_device.cuh``);
* the Python dispatch in ``aiter/mla.py`` (``get_meta_param``, ``mla_decode_fwd``,
  ``mla_prefill_fwd``), ``aiter/ops/attention.py`` (``get_mla_metadata_info_v1``) and
  ``aiter/ops/mha.py`` (``_flash_attn_varlen_forward`` / ``can_impl_fmha_v3_fwd``);
* the precompiled ASM kernels shipped per architecture, ``aiter_meta/hsa/<arch>/mla/*.co``
  and ``aiter_meta/hsa/<arch>/fmha_v3_fwd/**/*.co``, whose file names state the heads a
  kernel was built for (``mqa16``, ``qh128``, ``gqaratio16``; ``fwd_hd192_hd128``);
* the CK flash-attention fallback's checks (``aiter_meta/csrc/py_itfs_ck/mha_varlen_fwd_kernels.cu``).

Architectures: ``gfx942`` = MI300X/MI325X, ``gfx950`` = MI350X/MI355X.

"Heads" below always means **query heads per rank (per GPU)**. In absorbed MLA (prefill
with a prefix, decode) there is one KV head, so heads per rank = q/kv ratio (``gqa_ratio``).
In MHA-form MLA prefill (a cold prefill: q/k head dim 192, v head dim 128 for Kimi K3,
from ``qk_nope_head_dim`` 128 + ``qk_rope_head_dim`` 64 and ``v_head_dim`` 128) each q head
has its own k/v head.

The release pinned here is the only ``amd-aiter`` on PyPI: **0.1.7.post2.dev18**, uploaded
2025-11-18T06:57:42Z (wheel ``amd_aiter-0.1.7.post2.dev18-py3-none-any.whl``, 40,189,929
bytes; 169 MiB in 9,474 files once installed, 373 of them .pyc that pip compiles). Its sources are byte-identical to ROCm/aiter
``main`` at commit e6015f3a (2025-11-18). AITER's later releases (v0.1.8 … v0.1.20) are
published as GitHub release wheels only, not on PyPI. Install it, never imported, with::

    .venv/bin/pip install --no-deps --target .venv/amd-aiter-0.1.7.post2.dev18 amd-aiter==0.1.7.post2.dev18

No code here is copied from AITER; each derived rule names the file and check it comes from.

Layout: :mod:`~k3lab.aiter_release.files` (the installed release and its RECORD),
:mod:`~k3lab.aiter_release.source` (reading C/C++/Python source and kernel names),
:mod:`~k3lab.aiter_release.families` (one derivation per kernel family → :class:`HeadRule`),
:mod:`~k3lab.aiter_release.rules` (the queries: :func:`head_rules`, :func:`rule`,
:func:`accepts`, :func:`tp_table`). ``python -m k3lab.aiter_release`` prints every rule.
"""

from __future__ import annotations

from .families import FAMILIES, HeadRule, reduce_cases
from .files import (AITER_PIN, ARCHS, ENV_RELEASE_DIR, F_ASM_MLA, F_ATTN_PY, F_CK_VARLEN, F_MHA_PY,
                    F_META_V11, F_META_V12, F_MLA_PY, F_REDUCE, REQUIRED_FILES, Release,
                    ReleaseFileMissing, ReleaseNotInstalled, install_command, installed_release, show,
                    verify_record)
from .rules import accepts, head_rules, rule, tp_table
from .source import kernel_heads

__all__ = ["AITER_PIN", "ENV_RELEASE_DIR", "ARCHS", "FAMILIES", "F_ASM_MLA", "F_REDUCE", "F_META_V11",
           "F_META_V12", "F_CK_VARLEN", "F_MLA_PY", "F_ATTN_PY", "F_MHA_PY", "REQUIRED_FILES",
           "ReleaseNotInstalled", "ReleaseFileMissing", "Release", "install_command",
           "installed_release", "verify_record", "kernel_heads", "HeadRule", "reduce_cases",
           "head_rules", "rule", "accepts", "tp_table", "main"]


def main() -> None:  # pragma: no cover - a convenience printer
    """Print every derived rule with its evidence, and the padded heads per TP degree."""
    rel = installed_release()
    print(f"amd-aiter {rel.version} at {show(rel.folder)}")
    for r in head_rules(rel):
        heads = "any" if r.heads is None else sorted(r.heads)
        print(f"{r.family:20s} {r.arch}  {heads}\n    {r.rule}")
        for e in r.evidence:
            print(f"      - {e}")
    t = tp_table(release_dir=rel)
    print(t.pivot_table(index=["family", "arch"], columns="heads_per_rank", values="padded_heads",
                        aggfunc="first").to_string())
