"""The argument parser of the operator's commands (and, re-exported, of the k3lab study's): a
usage mistake is one line on stderr and exit status 2 — argparse would print the whole usage
too — and a number past its cap is refused at the door (:func:`bounded_int`)."""

from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    """``<prefix> <command>: error: <message>`` and exit 2 (``prefix``: the program family); flags
    are never abbreviated (``allow_abbrev=False``: a prefix of one flag is not silently taken as it)."""

    prefix = "k3lab_patches"

    def __init__(self, *args, **kw):
        kw.setdefault("allow_abbrev", False)
        super().__init__(*args, **kw)

    def error(self, message):
        print(f"{self.prefix} {self.prog.split()[-1]}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def bounded_int(low: int, high: int, why: str):
    """An argparse ``type``: an integer in ``[low, high]`` (``why`` says where the bounds come
    from); read digit by digit only up to 18 of them (a 5,000-digit one is refused unread)."""
    def read(text: str) -> int:
        t = text.strip()
        if len(t.lstrip("+-")) > 18 or not t.lstrip("+-").isdigit():
            raise argparse.ArgumentTypeError(f"must be an integer from {low:,} to {high:,} ({why}), "
                                             f"got {text[:30]!r}{'...' if len(text) > 30 else ''}")
        v = int(t)
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"must be an integer from {low:,} to {high:,} ({why}), got {v:,}")
        return v
    read.__name__ = "integer"
    return read
