"""What a row may hold: live objects and errors put into words, free of machine paths.

Rows of the matrix are deterministic (no times, no paths): :func:`describe` names what a
module global is bound to, :func:`_error` an exception, with :func:`_sanitize` replacing
the repository and ``sys.path`` roots by ``<root>`` and addresses by ``0x…``.
"""

from __future__ import annotations

import re
import sys

from ...paths import REPO_ROOT

#: Marks a module global that is absent (``describe`` → "not defined"; restored by removal).
_MISSING = object()


def _sanitize(text: str) -> str:
    """Drop machine paths from an error message (rows must not hold paths)."""
    for root in sorted({str(REPO_ROOT), *(p for p in sys.path if p and p.startswith("/"))},
                       key=len, reverse=True):
        text = text.replace(root, "<root>")
    return re.sub(r"0x[0-9a-f]{6,}", "0x…", text)


def _error(e: BaseException) -> str:
    return _sanitize(f"{type(e).__name__}: {e}")


def describe(obj) -> str:
    """What a module global is bound to, in words."""
    if obj is _MISSING:
        return "not defined"
    if obj is None:
        return "None"
    if type(obj).__name__ == "LazyImport":   # before any getattr: that would resolve it
        return f"LazyImport({obj.__dict__['module_name']}.{obj.__dict__['class_name']})"
    label = getattr(obj, "k3lab_stand_in_for", None)
    if isinstance(label, str):
        return f"stand-in for {label}"
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"
