"""How large a number a user may give before it stops making physical sense: one cap per kind
of quantity, with the reason, shared by every command line flag and notebook parameter.

A value past its cap, below its floor, not finite, or not a number is refused in one line
naming the flag and the range (:func:`check`); ``--help`` states each flag's range
(:func:`help_text`). The caps are engineering bounds chosen well above anything real, not
facts about a product: they keep a typo (``--gpus 10000000000``, ``--hbm-gb 1e40``) from
becoming a plan for 1e39 replicas, and keep every later product and sum far from overflow.
"""

from __future__ import annotations

import argparse
import math
import numbers
import reprlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Cap:
    """A quantity's range ``[low, high]`` (``low`` excluded when ``open_low``), its unit, and
    whether it counts (an integer)."""

    low: float
    high: float
    unit: str
    why: str
    integer: bool = False
    open_low: bool = False
    open_high: bool = False

    def text(self) -> str:
        lo = f"{self.low:,}" if self.integer else f"{self.low:g}"
        hi = f"{self.high:,}" if self.integer else f"{self.high:,.15g}"  # 1,000,000, never 1e+06
        if self.open_high:
            span = f"above {lo} and below {hi}" if self.open_low else f"{lo} to below {hi}"
        else:
            span = f"{'>' if self.open_low else ''}{lo}{' to ' if not self.open_low else ', at most '}{hi}"
        return span + (f" {self.unit}" if self.unit else "")


CAPS: dict[str, Cap] = {
    "gpus": Cap(1, 100_000, "GPUs", "the largest clusters built hold about 100,000 GPUs", integer=True),
    "parallel": Cap(1, 1024, "", "no model here has more than 128 heads or layers to split", integer=True),
    "tokens": Cap(1, 10_000_000, "tokens", "no published model reads more than 10M tokens", integer=True),
    "tokens_or_zero": Cap(0, 10_000_000, "tokens", "as tokens; 0 means the model's maximum", integer=True),
    "requests": Cap(1, 10_000_000, "requests", "far above what any GPU pool holds", integer=True),
    "rows": Cap(1, 1_000_000, "rows", "far more than there are layouts", integer=True),
    "hbm_gb": Cap(0, 4096, "GB per GPU", "the largest GPU memory today is 288 GB", open_low=True),
    "overhead_gib": Cap(0, 4096, "GiB per GPU", "no more than a GPU's memory"),
    "fraction": Cap(0, 1, "", "a fraction of the GPU's memory", open_low=True),
    "ratio": Cap(0.001, 1000, "", "the state pool's memory over the KV pool's; below 0.001 the state pool "
                 "holds no request's state"),
    "usd_per_gpu_hour": Cap(0.01, 1000, "$/GPU-hour", "public prices run $1-$15 per GPU-hour"),
    "usd_per_kwh": Cap(0, 10, "$/kWh", "electricity costs cents to a dollar per kWh"),
    "tok_s_per_gpu": Cap(0.01, 1_000_000, "tok/s per GPU", "slower than any decode that serves anyone, "
                         "far above any measured one"),
    "accept_len": Cap(1, 8, "tokens per verify step", "DSpark drafts at most 8 tokens"),
    "draft_tokens": Cap(2, 64, "draft tokens per step", "public Kimi K3 DSpark runs draft 2 to 8 (the draft's own "
                        "block is 7): below 2 there is no block to draft; past 64 a verify step is a prefill of every "
                        "request, not a decode", integer=True),
    # uniform lengths below 1 (1 is --lengths fixed); 0 would ask for empty prompts
    "range_ratio": Cap(0, 1, "", "bench_serving's length spread of uniform lengths (1 is fixed lengths)",
                       open_low=True, open_high=True),
    "range_ratio_or_one": Cap(0, 1, "", "bench_serving's length spread (1: fixed lengths)", open_low=True),
    "latency_ms": Cap(0, 600_000, "ms", "ten minutes to a token is no service", open_low=True),
    "latency_ms_or_zero": Cap(0, 600_000, "ms", "as latency_ms; 0 means no limit"),
    # the low end is the latency caps' ten minutes a token (attack 6: 1e-9 tok/s was taken, 600,001 ms refused)
    "tok_s_per_user": Cap(0.002, 100_000, "tok/s per user", "below, a token takes longer than the ten minutes "
                          "--max-tpot allows; above, far past any one request's decode rate"),
    "tok_s_per_user_or_zero": Cap(0, 100_000, "tok/s per user", "as tok_s_per_user; 0 means no limit"),
    "entries": Cap(0, 1000, "entries", "far more than there are GPUs, layouts or settings to list", integer=True),
}


#: digits a number may be written with before it is refused unread: Python refuses to convert
#: one of more than 4,300 digits, and none of the caps above needs more than a dozen
MAX_DIGITS = 100


def shown(value) -> str:
    """``value`` for a one-line message: thousands separators, a float to 4 significant figures,
    an integer too long to print as "a number of N digits" (never Python's digit-limit error)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 200:
            return f"a number of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
        return f"{value:,}" if abs(value) < 10**18 else f"{float(value):.4g}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return reprlib.repr(value)


def parse(kind: str, text: str, name: str):
    """The number ``text`` reads as, within :data:`CAPS` ``[kind]`` (:func:`check`)."""
    cap = CAPS[kind]
    digits = sum(ch.isdigit() for ch in text)
    if digits > MAX_DIGITS:
        raise ValueError(f"{name} must be {cap.text()} ({cap.why}), got a number written with {digits:,} digits")
    try:
        value = int(text) if cap.integer else float(text)
    except (ValueError, OverflowError):
        raise ValueError(f"{name} must be {'an integer' if cap.integer else 'a number'}"
                         f" ({cap.text()}), got {reprlib.repr(text)}") from None
    return check(kind, value, name, typed=text)


def as_number(value, integer: bool = False):
    """A plain ``int`` (or ``float``) for any integer (or real) scalar, NumPy's included
    (``np.int64(8)``); ``value`` itself when it is not one (the caller refuses it)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if not integer and isinstance(value, numbers.Real):
        return float(value)
    return value


def _got(value, typed: str | None) -> str:
    """The refused value as the user gave it: the text typed, else a float's shortest exact form
    (``600001.0``, never ``6e+05`` rounded onto the cap it broke)."""
    if typed is not None:
        return reprlib.repr(typed.strip()).strip("'") if len(typed.strip()) > 40 else typed.strip()
    return repr(value) if isinstance(value, float) else shown(value)


def check(kind: str, value, name: str, typed: str | None = None):
    """``value`` (an int, or a float where the kind allows; NumPy's scalars too) within
    :data:`CAPS` ``[kind]`` → itself as a plain number; ValueError in one line naming ``name``
    and the range otherwise (the value shown as ``typed``, the text it was read from, if given)."""
    cap = CAPS[kind]
    value = as_number(value, cap.integer)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (cap.integer and not isinstance(value, int)):
        raise ValueError(f"{name} must be {'an integer' if cap.integer else 'a number'} ({cap.text()}), "
                         f"got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number ({cap.text()}), got {_got(value, typed)}")
    if value > cap.high or value < cap.low or (cap.open_low and value == cap.low) or (cap.open_high and value == cap.high):
        raise ValueError(f"{name} must be {cap.text()} ({cap.why}), got {_got(value, typed)}")
    return value


def arg(kind: str, name: str):
    """An argparse ``type`` for a flag of ``kind``: a usage error in one line (OneLineParser)."""
    def read(text: str):
        try:
            return parse(kind, text, name)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{name} ")) from None
    read.__name__ = CAPS[kind].unit or kind  # how argparse names the type in its messages
    return read


def help_text(text: str, kind: str) -> str:
    """A flag's help with its range: ``number of GPUs (1 to 100,000 GPUs)``."""
    return f"{text} ({CAPS[kind].text()})"
