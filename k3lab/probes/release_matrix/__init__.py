"""Findings 2 and 3 across sglang releases: what each PyPI release from 0.5.16 on fixed.

Each release is installed with ``--no-deps`` into its own folder
(``.venv-sglang/releases/sglang-<version>``, see ``requirements/sglang-releases.txt``) and
measured in a child process that runs ``.venv-sglang``'s Python with ``PYTHONPATH`` set to
that folder, so the release's own ``sglang`` package shadows the 0.5.16 in site-packages
(the child checks that it did). Everything runs on CPU. One child → one JSON row:

* finding 2 — the DFlash/DSpark verify path under emulated CUDA, HIP and CPU: what the
  renorm names are bound to, and how the real verify function treats each request mix of
  notebook 02, ties included;
* finding 3 — the real ``AiterAttnBackend`` for 96 heads at TP8 (12 per rank): refused or
  padded, the head counts it accepts, the real cold prefill and decode wrapper against
  :func:`k3lab.attention.with_head_padding` (with the k3lab patch where 12 is refused), and
  sglang's own default attention backend on ROCm;
* whether the release ships ``sglang/srt/models/kimi_k3.py`` and the classes it registers.

Compiled kernels that cannot load on a CPU box are replaced by k3lab's labelled stand-ins,
never sglang's, FlashInfer's or AITER's. Rows are deterministic (no times, no paths).
:func:`lookup` answers ``status: unknown`` for a release the matrix does not hold.

Layout: :mod:`.releases` (installed releases and versions), :mod:`.matrix` (run a child per
release, build/load/look up the matrix, the verdicts the patches read, the summary frame),
:mod:`.child` and ``__main__`` (the child process), :mod:`.emulation` (platform emulation
and kernel stand-in modules), :mod:`.f2_verify` (finding 2), :mod:`.f3_aiter` and
:mod:`.f3_stand_ins` (finding 3), :mod:`.default_backend` (sglang's choice on ROCm),
:mod:`.record` (row values without paths). The whole package imports without sglang (the
parent side needs the standard library, torch and pandas); the child needs sglang.
"""

from __future__ import annotations

from ..topk_repro import DEFAULT_VOCAB, DFLASH
from .child import KIMI_K3, kimi_k3, measure
from .default_backend import default_attention_backend_hip
from .emulation import (PLATFORM_FLAGS, PLATFORM_MODULES, PLATFORM_PROBES, PLATFORMS, emulated_platform,
                        swapped)
from .f2_verify import (BOUND_NAMES, TIE_GROUP, VERIFY_FUNCTIONS, bindings, finding2, rank_reference,
                        tie_logits)
from .f3_aiter import AITER, HEAD_SWEEP, PREFILL_SEQ_LENS, aiter_context, construct, finding3
from .f3_stand_ins import (AITER_DECODE_HEADS, AITER_REDUCE_V1_HEADS_DV128, AiterStandIns, FakeModelConfig,
                           reference_prefill, stand_ins_installed, varlen_batch)
from .matrix import (MATRIX, METHOD, _draft_tokens, _mixes, aiter_refuses_12_heads, build_matrix,
                     hip_verify_crashes, load_matrix, lookup, run_release, summary_frame)
from .record import describe
from .releases import (RELEASES_DIR_ENV, installed_releases, release_dir, release_source, releases_dir,
                       requirements_versions, site_version, version_key)

__all__ = [
    # releases
    "RELEASES_DIR_ENV", "releases_dir", "release_dir", "site_version", "release_source",
    "version_key", "requirements_versions", "installed_releases",
    # the matrix document and its verdicts
    "DEFAULT_VOCAB", "MATRIX", "METHOD", "run_release", "build_matrix", "load_matrix", "lookup",
    "hip_verify_crashes", "aiter_refuses_12_heads", "summary_frame",
    "_mixes", "_draft_tokens",          # read by benchmarks/ and tests/
    # child side
    "PLATFORMS", "PLATFORM_PROBES", "PLATFORM_FLAGS", "PLATFORM_MODULES", "DFLASH", "swapped",
    "emulated_platform", "describe", "VERIFY_FUNCTIONS", "BOUND_NAMES", "TIE_GROUP", "bindings",
    "tie_logits", "rank_reference", "finding2", "AITER", "HEAD_SWEEP", "PREFILL_SEQ_LENS",
    "AITER_REDUCE_V1_HEADS_DV128", "AITER_DECODE_HEADS", "reference_prefill", "varlen_batch",
    "AiterStandIns", "stand_ins_installed", "FakeModelConfig", "aiter_context", "construct",
    "finding3", "default_attention_backend_hip", "KIMI_K3", "kimi_k3", "measure",
]
