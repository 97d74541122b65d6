""""Did you mean": the nearest known name to a mistyped one, for every message that refuses a
name (a flag, a GPU, a layout's GPU, a price tier, a model, an sglang setting). Standard library
only (:func:`difflib.get_close_matches`), so the lowest floor of the package may use it."""

from __future__ import annotations

import difflib


def did_you_mean(word: str, known) -> str:
    """`` (did you mean 'mi355x'?)`` for the closest of ``known`` to ``word`` (case-insensitive),
    or the empty string when none is close."""
    names = [str(k) for k in known]
    low = {n.lower(): n for n in names}
    hit = difflib.get_close_matches(str(word).lower(), list(low), n=1, cutoff=0.6)
    return f" (did you mean {low[hit[0]]!r}?)" if hit else ""


def unknown(what: str, word: str, known) -> str:
    """``unknown GPU 'mi355' (did you mean 'mi355x'?); known: a, b, c``."""
    names = [str(k) for k in known]
    return f"unknown {what} {word!r}{did_you_mean(word, names)}; known: {', '.join(names)}"
