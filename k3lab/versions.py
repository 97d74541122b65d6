"""Version strings of sglang releases: their order (standard library only)."""

from __future__ import annotations

import re


def version_key(version: str) -> tuple:
    """Sort key for PEP 440-ish versions of sglang (``0.5.15.post1`` after ``0.5.15``)."""
    parts = []
    for p in re.split(r"[.]", version):
        m = re.fullmatch(r"(\d+)|post(\d+)|(\D+)(\d*)", p)
        if m and m.group(1) is not None:
            parts.append((1, int(m.group(1)), ""))
        elif m and m.group(2) is not None:
            parts.append((2, int(m.group(2)), "post"))
        else:
            parts.append((0, 0, p))
    return tuple(parts)
