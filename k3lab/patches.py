"""The patches a user applies to a running sglang, as the study calls them.

They live in the ``k3lab-patches`` distribution (``patches/`` at the top of this repository,
import name ``k3lab_patches``), which an operator installs into a production sglang image with
``pip install --no-deps`` (docs/operators.md); the study depends on it, not the other way
round. This module re-exports its API unchanged — ``k3lab.patches.apply`` *is*
``k3lab_patches.apply`` — so ``k3lab.patches.apply()`` / ``revert()`` / ``status()`` keep
working. The patches themselves: :mod:`k3lab_patches.topk_renorm`,
:mod:`k3lab_patches.aiter_head_pad`; the sglang plugin and ``serve``:
:mod:`k3lab_patches.plugin`, :mod:`k3lab_patches.serve`.
"""

from __future__ import annotations

from k3lab_patches import (  # noqa: F401  (re-exported)
    Patch,
    UnsupportedSglangVersion,
    UpstreamFixed,
    apply,
    check_version,
    revert,
    sglang_version,
    status,
)
