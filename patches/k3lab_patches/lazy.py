"""A module imported on first use rather than at import: the patches' torch code (the
renormalisation, the head padding) stays out of ``python -m k3lab_patches status --version X``,
which reads versions only and runs where torch may be absent (a laptop checking an image's
version; newcomer 23 met a traceback there). Standard library only.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """The module ``name`` (dotted), imported on first attribute access."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)
