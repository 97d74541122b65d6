"""The argument parser of the operator's commands (and, re-exported, of the k3lab study's): a
usage mistake is one line on stderr and exit status 2 — argparse would print the whole usage
too — a number past its cap is refused at the door (:func:`bounded_int`), and a flag that takes one
value is refused when given twice (argparse would silently keep the last one)."""

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
        # every add_argument of this parser (and of its groups, which share the registry) gets these
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)
        self.register("action", "append", _AppendDistinct)

    def parse_known_args(self, args=None, namespace=None):
        self._given = {}  # dest → what was typed for each single-value flag seen in this parse
        return super().parse_known_args(args, namespace)

    def _get_values(self, action, arg_strings):
        # argparse's hook that sees the strings as typed, before ``type`` converts them (the echo)
        given = getattr(self, "_given", None)
        if isinstance(action, _StoreOnce) and action.option_strings and given is not None:
            typed = " ".join(arg_strings)
            if action.dest in given:
                flag = "/".join(action.option_strings)
                self.error(f"{flag} given twice ({shown_value(given[action.dest])}, then {shown_value(typed)}): "
                           "give it once")
            given[action.dest] = typed
        return super()._get_values(action, arg_strings)

    def error(self, message):
        print(f"{self.prefix} {self.prog.split()[-1]}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def shown_value(value) -> str:
    """A value the user typed, quoted and cut at 30 characters, for a one-line message."""
    text = str(value)
    return repr(text[:30] + ("..." if len(text) > 30 else ""))


class _StoreOnce(argparse._StoreAction):
    """``store`` whose flag :class:`OneLineParser` refuses a second time (``--layout A --layout
    B``: which one the user meant is not for argparse to guess; checked in ``_get_values``,
    where the typed strings are still at hand)."""


class _AppendDistinct(argparse._AppendAction):
    """``append`` that refuses the same value twice (``--variant ep --variant ep``): a repeat
    is a slip, never a second item."""

    def __call__(self, parser, namespace, values, option_string=None):
        if values in (getattr(namespace, self.dest, None) or ()):
            parser.error(f"{option_string} {shown_value(values)} given twice: give each value once")
        super().__call__(parser, namespace, values, option_string)


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
