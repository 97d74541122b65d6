"""Service-level objectives: a latency a renter buys, and how busy a deployment may run while the
serving model says it meets it.

A renter buys a latency: mean TPOT (ms between two output tokens of one request), mean TTFT (ms to
a request's first token), or tokens/s per user (1,000 / TPOT: the same limit in InferenceX's unit,
its "interactivity"). :class:`SLO` holds them. :func:`operating_point` finds, for one deployment
and workload, the highest concurrency at which the model's central prediction meets the SLO (the
point a price uses) and the highest at which its **slow edge** does — the model as slow as its
validated band allows (latency × e^band, throughput × e^-band), priced at that edge's throughput —
and its **fast edge**, the model as fast as the band allows, up to what the pools admit: the two ends
of the $/M a renter pays at the target if the model is off by its band either way (newcomer 55: a band
at the centre's concurrency put "$3.90-$6.51" beside a slow edge of $9.04, its high end a concurrency
that misses the target). Without an SLO the point is :func:`k3lab.serving.predict.peak` (the best output tok/s the pools
admit) and there is no slow edge. InferenceX plots cost against tokens/s per user; aiconfigurator
searches batch sizes under a TTFT and a TPOT limit (``aiconfigurator-core`` 0.12.0,
``sdk/backends/base_backend.py``, the aggregated-serving search over ``runtime_config.ttft`` /
``.tpot``; read, not copied). This is that search on k3lab's serving model, through
:func:`~k3lab.serving.predict.predict` and :func:`~k3lab.serving.predict.admission` only, so a
refit flows through.

The search assumes latency grows with concurrency (a closed-loop benchmark's does: a bigger batch
makes every decode step longer and more prompts queue for prefill). It tries the sweep's
concurrencies (:data:`k3lab.serving.predict.SWEEP`) up to what the pools admit, then bisects
between the last that meets the SLO and the first that does not. Units: ms; tok/s of output for
the whole deployment; per user = per request in flight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import NO_SPEC, Workload
from .predict import SWEEP, Prediction, admission, family_params, peak, predict

#: the SLO fields, their unit and what each limits (the CLI's flags are these names with dashes)
FIELDS = {"max_tpot_ms": "ms", "max_ttft_ms": "ms", "min_tok_s_per_user": "tok/s per user"}


@dataclass(frozen=True)
class SLO:
    """Latency limits (None: no limit). ``min_tok_s_per_user`` is a TPOT limit of 1,000 / it ms."""

    max_tpot_ms: float | None = None
    max_ttft_ms: float | None = None
    min_tok_s_per_user: float | None = None

    def __post_init__(self):
        for name, unit in FIELDS.items():
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not math.isfinite(v) or v <= 0):
                raise ValueError(f"{name} must be a positive number of {unit}, got {v!r}")

    def check_decodes(self, output_len: int, instead: str = "--max-ttft") -> None:
        """ValueError (one line) where a TPOT limit is asked of one output token: no decode step
        follows the first, so TPOT is undefined and the limit judges nothing (``instead``: what to give)."""
        if output_len == 1 and (self.max_tpot_ms is not None or self.min_tok_s_per_user is not None):
            raise ValueError("--output-len 1 has no TPOT (no decode step follows the first token), so --max-tpot "
                             f"and --min-tok-s-per-user judge nothing: give {instead}")

    @classmethod
    def of(cls, max_tpot_ms=None, max_ttft_ms=None, min_tok_s_per_user=None) -> "SLO":
        """An SLO from optional values where 0 or None means no limit (a notebook parameter's default)."""
        def pick(v):
            return None if v is None or (not isinstance(v, bool) and isinstance(v, (int, float)) and v == 0) else v

        return cls(pick(max_tpot_ms), pick(max_ttft_ms), pick(min_tok_s_per_user))

    @property
    def active(self) -> bool:
        return any(getattr(self, k) is not None for k in FIELDS)

    @property
    def tpot_limit_ms(self) -> float | None:
        """The TPOT limit both TPOT fields give together (ms), or None."""
        lims = [x for x in (self.max_tpot_ms, None if self.min_tok_s_per_user is None
                            else 1e3 / self.min_tok_s_per_user) if x is not None]
        return min(lims) if lims else None

    def label(self) -> str:
        """``TPOT ≤ 50 ms, TTFT ≤ 2,000 ms`` (the limits as given), or ``no latency target``."""
        parts = ([f"TPOT ≤ {self.max_tpot_ms:,g} ms"] if self.max_tpot_ms is not None else []) + (
            [f"≥ {self.min_tok_s_per_user:,g} tok/s per user"] if self.min_tok_s_per_user is not None else []) + (
            [f"TTFT ≤ {self.max_ttft_ms:,g} ms"] if self.max_ttft_ms is not None else [])
        return ", ".join(parts) or "no latency target"

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in FIELDS}

    def misses(self, p: Prediction, edge: str = "central") -> list[str] | None:
        """What prediction ``p`` misses (empty: it meets the SLO). ``edge``: ``central`` (the model's
        value), ``slow`` (the slow end of its validated band) or ``fast`` (its fast end); at either
        band edge, None when a limited metric has no validated band there (nothing can be said)."""
        if edge not in ("central", "slow", "fast"):
            raise ValueError(f"edge must be central, slow or fast, got {edge!r}")
        out = []
        for kind, limit in (("tpot_ms", self.tpot_limit_ms), ("ttft_ms", self.max_ttft_ms)):
            if limit is None:
                continue
            if edge == "central":
                v = getattr(p, kind)
            else:
                iv = p.interval(kind)
                if iv is None:
                    return None
                v = iv[1] if edge == "slow" else iv[0]
            if v > limit:
                out.append(f"{kind.split('_')[0].upper()} {v:,.1f} ms > {limit:,g} ms")
        return out


NO_SLO = SLO()


@dataclass(frozen=True)
class OperatingPoint:
    """Where a deployment runs under an SLO. ``point``: the priced prediction (the highest
    concurrency whose central latency meets the SLO; without one, the peak), None when not even
    one request in flight meets it (``why``). ``slow``: the highest concurrency at which the band's
    slow edge meets the SLO, None without an SLO or when nothing can meet it there (``slow_why``).
    ``slow_tok_s``: the slow edge's throughput (its band's low end, whole deployment), NaN if none.
    ``fast``, ``fast_tok_s``: the same at the band's fast edge (the highest concurrency, up to ``limit``,
    at which the band's fast end meets the SLO; its throughput the band's high end there).
    ``limit``: under an SLO the most requests in flight it could pick (what the pools admit, or
    the lower cap given); 0 without an SLO. ``capped``: the point sits at that limit, so admission,
    not the latency target, set its concurrency (its latency is under the target)."""

    slo: SLO
    point: Prediction | None
    slow: Prediction | None = None
    why: str = ""
    slow_why: str = ""
    limit: int = 0
    fast: Prediction | None = None

    @property
    def capped(self) -> bool:
        return bool(self.limit) and self.point is not None and self.point.concurrency >= self.limit

    @property
    def slow_tok_s(self) -> float:
        iv = None if self.slow is None else self.slow.interval("output_tok_s")
        return math.nan if iv is None else iv[0]

    @property
    def fast_tok_s(self) -> float:
        iv = None if self.fast is None else self.fast.interval("output_tok_s")
        return math.nan if iv is None else iv[1]


def _highest(at, limit: int, ok) -> int | None:
    """The highest concurrency in 1..``limit`` for which ``ok(at(c))`` holds, assuming it holds
    up to some concurrency and not above it; None when it fails at 1."""
    tried = sorted({c for c in SWEEP if c <= limit} | {limit})
    good, bad = None, None
    for c in tried:
        if ok(at(c)):
            good = c
        else:
            bad = c
            break
    if good is None:
        return None
    if bad is None:
        return good
    while bad - good > 1:  # bisect: good meets it, bad does not
        mid = (good + bad) // 2
        good, bad = (mid, bad) if ok(at(mid)) else (good, mid)
    return good


def operating_point(cfg, dep, input_len: int, output_len: int, slo: SLO = NO_SLO, spec=NO_SPEC, variants=(),
                    kv_dtype: str = "bf16", mem_fraction: float | None = None, max_running: int | None = None,
                    **kw) -> OperatingPoint:
    """:class:`OperatingPoint` of ``dep`` at ``input_len`` / ``output_len`` under ``slo`` (module
    docstring). ``max_running``: a lower cap on requests in flight (whole deployment), e.g. what a
    state-pool setting leaves; ``kw`` goes to :func:`~k3lab.serving.predict.predict`. ValueError
    (and :class:`~k3lab.serving.predict.NotCalibrated`) as :func:`~k3lab.serving.predict.peak`."""
    if not slo.active:
        return OperatingPoint(slo, peak(cfg, dep, input_len, output_len, spec, variants, kv_dtype=kv_dtype,
                                        mem_fraction=mem_fraction, max_running=max_running, **kw),
                              slow_why="no latency target")
    family_params(dep.gpu)   # an uncalibrated GPU says so first, as predict does (NotCalibrated)
    adm = admission(cfg, dep, input_len + output_len, spec, variants, kv_dtype, mem_fraction,
                    **{k: v for k, v in kw.items() if k == "engine"})
    limit = adm.requests if max_running is None else min(adm.requests, max_running)
    if limit < 1:
        raise ValueError(f"{dep.label}: not one {input_len + output_len:,}-token request fits"
                         + (f" ({adm.why_none})" if adm.why_none else ""))
    seen = {}

    def at(c):
        if c not in seen:
            seen[c] = predict(cfg, dep, Workload(input_len, output_len, c), spec, variants, kv_dtype, mem_fraction, **kw)
        return seen[c]

    # a latency past predict's cap is never printed nor priced: a concurrency that reaches it meets nothing
    c = _highest(at, limit, lambda p: not slo.misses(p) and not p.over_latency_cap())
    if c is None:
        one = at(1)
        return OperatingPoint(slo, None, None, f"even one request in flight misses {slo.label()} "
                                               f"({'; '.join(slo.misses(one)) or one.over_latency_cap()})",
                              "the central value misses it")
    if slo.misses(at(1), "slow") is None:
        return OperatingPoint(slo, at(c), None, slow_why=f"a limited metric has no validated band for {at(1).family}",
                              limit=limit)
    s = _highest(at, limit, lambda p: not slo.misses(p, "slow") and not p.over_latency_cap())
    why = "" if s is not None else f"at the band's slow edge even one request misses {slo.label()}"
    # the fast edge meets it wherever the centre does (the band's fast end is below the centre): at c or above
    f = _highest(at, limit, lambda p: not slo.misses(p, "fast") and not p.over_latency_cap())
    return OperatingPoint(slo, at(c), None if s is None else at(s), slow_why=why, limit=limit,
                          fast=None if f is None else at(f))


def add_arguments(ap) -> None:
    """The SLO flags of ``compare``, ``predict`` and ``quote``: ``--max-tpot MS``, ``--max-ttft MS``,
    ``--min-tok-s-per-user N`` (:func:`from_args` reads them back)."""
    from ..limits import arg, help_text

    ap.add_argument("--max-tpot", type=arg("latency_ms", "--max-tpot"), default=None, metavar="MS",
                    help=help_text("latency target: mean time per output token of a request", "latency_ms"))
    ap.add_argument("--max-ttft", type=arg("latency_ms", "--max-ttft"), default=None, metavar="MS",
                    help=help_text("latency target: mean time to a request's first token", "latency_ms"))
    ap.add_argument("--min-tok-s-per-user", type=arg("tok_s_per_user", "--min-tok-s-per-user"), default=None,
                    metavar="N", help=help_text("latency target as output tok/s of one request (1,000 / TPOT)",
                                                "tok_s_per_user"))


def from_args(args) -> SLO:
    """The :class:`SLO` of parsed :func:`add_arguments` flags."""
    return SLO(args.max_tpot, args.max_ttft, args.min_tok_s_per_user)
