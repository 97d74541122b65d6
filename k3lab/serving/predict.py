"""What the validated serving model says about one question, and how sure it is.

:func:`predict` answers a deployment × workload × speculative setting × engine × harness with
TPOT, TTFT and output tok/s (whole deployment, per node, per GPU), each with the band its family's
out-of-sample error gives (:func:`k3lab.serving.committed.fitted`), the requests the engine runs at
once (its own limit capped by what the pools hold for the request length: finding 1's
:func:`k3lab.memory.fit`, never by hand; clients beyond it queue, and their wait is in the TTFT),
where the question leaves the validated domain (:mod:`k3lab.serving.domain`), and the public
measurements nearest to the question.
:func:`peak` is the best output tok/s over the concurrencies a sweep would try (:data:`SWEEP`),
among those the pools admit — the reading of the article's "peaked at".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import data
from ..specs import Deployment, ModelConfig
from . import committed, domain
from .engines import COHORT_HARNESS, SGLANG, Admission, Engine, Harness, mean_lengths, regime, usual_harness
from .engines import admission as engine_admission
from .model import NO_SPEC, FamilyParams, Spec, Workload, benchmark, spans_nodes  # noqa: F401  (spans_nodes: API)
from .observations import family_of, metric_of

#: concurrencies a benchmark sweep tries (powers of two and the article's c24 / c48 / c96)
SWEEP = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def band_words(band_log: float | None) -> str:
    """A multiplicative band as a reader takes it: ``x1.88 (-47%/+88%)`` for a log half-width of
    ln 1.88 (the value lies between ÷1.88 and ×1.88 of the central one, so it is never "±88%");
    ``not validated`` for None."""
    if band_log is None:
        return "not validated"
    return f"x{math.exp(band_log):.2f} (-{-math.expm1(-band_log):.0%}/+{math.expm1(band_log):.0%})"


class NotCalibrated(ValueError):
    """The GPU's family has no validated parameters (too few public measurements)."""


def admission(cfg: ModelConfig, dep: Deployment, context_tokens: int, spec: Spec = NO_SPEC, variants=(),
              kv_dtype: str = "bf16", mem_fraction: float | None = None, engine: Engine = SGLANG) -> Admission:
    """:class:`~k3lab.serving.engines.Admission` of ``dep`` for requests of ``context_tokens``
    (input + output) under ``engine`` (:func:`k3lab.serving.engines.admission`); ``mem_fraction``
    None: the engine's default (sglang's 0.9)."""
    return engine_admission(cfg, dep, context_tokens, spec.on, variants, kv_dtype, engine, mem_fraction)


@dataclass(frozen=True)
class Prediction:
    """The model's answer (see the module docstring). Times in ms; tok/s of output tokens.

    ``bands``: per validation metric (decode, TTFT, DSpark) the family's validated error as a
    factor's log, or None where that metric is not validated (then no interval is given and no
    verdict or price may use the value). ``spread``: per output kind, the (low, high) of the
    central value over the acceptance lengths the DSpark question spans (empty without one).
    :meth:`interval` combines both."""

    layout: str
    gpu: str
    family: str
    variants: tuple
    input_len: int
    output_len: int
    concurrency_asked: int
    concurrency: int
    admitted: int
    spec: str
    accept_len: float
    tpot_ms: float
    ttft_ms: float
    itl_ms: float
    output_tok_s: float
    num_gpus: int
    num_nodes: int
    bands: dict
    params: FamilyParams
    nearest: tuple = field(default=())
    outside: tuple = field(default=())
    spread: dict = field(default_factory=dict)
    accept_range: tuple = field(default=())
    ttft_outside: tuple = field(default=())
    admission_note: str = ""
    engine: str = "sglang"
    regime: str = "cohort"
    harness: Harness = COHORT_HARNESS

    KINDS = ("output_tok_s", "tpot_ms", "ttft_ms", "itl_ms")
    #: why a question of one output token has no TPOT nor decode step (printed "—", null in JSON)
    NO_DECODE = "one output token: no decode step follows the first, so TPOT is undefined"

    @property
    def decodes(self) -> bool:
        """A decode step follows the first token (two output tokens or more): TPOT is defined."""
        return self.output_len > 1

    def over_latency_cap(self) -> str:
        """Which of the model's TPOT and TTFT lie past the latency cap k3lab states for every latency
        it reads (:data:`k3lab.limits.CAPS` ``latency_ms``), as a clause naming the cap; "" when none:
        such a number is never printed (predict refuses, compare and quote leave the row unpriced)."""
        from ..limits import CAPS

        cap = CAPS["latency_ms"]
        over = [n for n, v in (("TPOT", self.tpot_ms if self.decodes else 0.0), ("TTFT", self.ttft_ms))
                if not v <= cap.high]
        return (f"the model's {' and '.join(over)} at this question {'is' if len(over) == 1 else 'are'} beyond "
                f"{cap.high:,.0f} ms ({cap.why})") if over else ""

    @property
    def in_domain(self) -> bool:
        """The question's speed (decode, or DSpark) lies where the family's public measurements
        validate the model (:func:`domain_gaps` found nothing)."""
        return not self.outside

    @property
    def ttft_in_domain(self) -> bool:
        return not self.ttft_outside

    def gaps(self, kind: str) -> tuple:
        """Where the question leaves the validated domain of output ``kind``'s metric."""
        return self.ttft_outside if kind == "ttft_ms" else self.outside

    @property
    def spec_on(self) -> bool:
        return self.spec != "none"

    def band_of(self, kind: str) -> float | None:
        """The log band ``kind`` is judged by, or None where its metric is not validated."""
        return self.bands.get(metric_of(kind, self.spec_on))

    @property
    def band(self) -> float | None:
        """The band of the throughput and TPOT (decode, or DSpark with speculation)."""
        return self.band_of("output_tok_s")

    def validated(self, kind: str = "output_tok_s") -> bool:
        return self.band_of(kind) is not None

    def band_holds(self, kind: str = "output_tok_s") -> bool:
        """Whether output ``kind``'s printed band holds for this question: its metric's band is
        validated and the question lies inside that metric's domain (JSON's ``validated``)."""
        return self.validated(kind) and not self.gaps(kind)

    def not_validated(self, kind: str) -> list[str]:
        """Why output ``kind``'s band does not hold for this question: its metric's band is not
        validated for the family (the committed fit's reason), and where the question leaves the
        metric's domain; empty when the band holds."""
        m = metric_of(kind, self.spec_on)
        name = {"ttft": "TTFT", "dspark": "DSpark speed", "decode": "decode speed"}.get(m, m)
        why = [] if self.validated(kind) else [
            f"{name} is not validated for {self.family}: {committed.fitted_bands(self.family)[m].why_not}"]
        return why + list(self.gaps(kind))

    @property
    def output_tok_s_per_node(self) -> float:
        return self.output_tok_s / self.num_nodes

    @property
    def output_tok_s_per_gpu(self) -> float:
        return self.output_tok_s / self.num_gpus

    def interval(self, kind: str, scale: float = 1.0) -> tuple[float, float] | None:
        """(low, high) of output ``kind`` × ``scale`` (e.g. 1 / GPUs for tok/s per GPU): the spread
        over the acceptance lengths widened by the metric's band; None where not validated."""
        b = self.band_of(kind)
        if b is None:
            return None
        v = getattr(self, kind)
        lo, hi = self.spread.get(kind, (v, v))
        return min(lo, v) * scale * math.exp(-b), max(hi, v) * scale * math.exp(b)

    def as_dict(self) -> dict:
        d = {"layout": self.layout, "gpu": self.gpu, "family": self.family, "variants": list(self.variants),
             "input_len": self.input_len, "output_len": self.output_len,
             "concurrency_asked": self.concurrency_asked, "concurrency": self.concurrency,
             "admitted_requests": self.admitted, "admission": self.admission_note, "spec": self.spec,
             "accept_len": self.accept_len,
             "accept_len_range": list(self.accept_range),
             "engine": self.engine, "regime": self.regime, "arrival": self.harness.arrival,
             "length_distribution": self.harness.lengths,
             "bands_log": dict(self.bands),
             # one truth: "validated" means the band printed beside the value holds for this question — the
             # family's band of its metric is validated AND the question lies inside that metric's domain
             "band_validated": {k: self.validated(k) for k in self.KINDS},
             "validated": {k: self.band_holds(k) for k in self.KINDS},
             "in_validated_domain": not self.not_validated("output_tok_s") and not self.not_validated("ttft_ms"),
             "speed_in_validated_domain": not self.not_validated("output_tok_s"),
             "ttft_in_validated_domain": not self.not_validated("ttft_ms"),
             "outside_validated_domain": self.not_validated("output_tok_s"),
             "ttft_outside_validated_domain": self.not_validated("ttft_ms"),
             "params": {k: getattr(self.params, k) for k in FamilyParams.NAMES}}
        per = {"output_tok_s": ("output_tok_s", 1.0), "output_tok_s_per_node": ("output_tok_s", 1 / self.num_nodes),
               "output_tok_s_per_gpu": ("output_tok_s", 1 / self.num_gpus)}
        for k in ("tpot_ms", "ttft_ms", "itl_ms", "output_tok_s", "output_tok_s_per_node", "output_tok_s_per_gpu"):
            kind, sc = per.get(k, (k, 1.0))
            iv = self.interval(kind, sc)
            d[k] = getattr(self, k)
            d[f"{k}_low"], d[f"{k}_high"] = (None, None) if iv is None else iv
        if not self.decodes:
            d.update({f"{k}{e}": None for k in ("tpot_ms", "itl_ms") for e in ("", "_low", "_high")},
                     tpot_undefined=self.NO_DECODE)
        d["nearest_measurements"] = [dict(n) for n in self.nearest]
        return d


def family_params(gpu: str) -> tuple[str, FamilyParams, dict]:
    """(family, fitted parameters, bands per metric) for a GPU from the committed fit
    (:func:`k3lab.serving.committed.fitted`); :class:`NotCalibrated` when its family has no
    fit (no public measurement passed the rules). A fitted family whose metrics are not validated
    still answers, with no band ("not validated")."""
    fam = family_of(gpu)
    ok = committed.fitted_families()
    refused = data.load("serving_model").refused_gpus
    if gpu in refused:
        raise NotCalibrated(f"the serving model refuses {gpu}: {refused[gpu]}")
    if fam is None or fam not in ok:
        raise NotCalibrated(f"no public Kimi K3 measurements calibrate the serving model for {gpu} "
                            f"(family {fam or 'none'}); calibrated families: {', '.join(ok)}")
    params, b = committed.fitted(fam)
    return fam, params, b


#: how far another speculative setting puts a run: past any workload's distance, so a run with the question's
#: own setting always comes first, and another only where the family has too few
SPEC_APART = 100.0


def nearest(gpu: str, work: Workload, spec: Spec, k: int = 3, engine: str = "sglang") -> tuple:
    """The ``k`` public observations nearest to a question: distance = |ln c ratio| + |ln I
    ratio| + |ln O ratio| + 1 for another GPU + 1 for another engine, within the GPU's family, runs
    with the question's speculative setting first (newcomer 15: a DSpark run at τ=1.25 listed beside a
    question without DSpark, its x0.12 miss unexplained). → tuple of dicts (id, source, gpu, layout, workload, kind, value,
    fitted: the fit's value for that run as it ran, its harness, block and build, so a reader sees the
    model's miss there and how much of a gap to the question's own answer is the question's settings);
    a figure two rows of one run share (its out and total tok/s) is listed once."""
    fam = family_of(gpu)

    def dist(o):
        return (abs(math.log(o.concurrency / work.concurrency)) + abs(math.log(o.input_len / work.input_len))
                + abs(math.log(o.output_len / work.output_len)) + (o.gpu != gpu) + (o.engine != engine)
                + SPEC_APART * ((o.spec != "none") != spec.on))

    pts, seen = [], set()
    for o in sorted((o for o in committed.fitted_observations() if o.family == fam), key=lambda o: (dist(o), o.id)):
        # one figure once: a run's out and total tok/s rows are the same output tok/s
        key = (o.layout, o.input_len, o.output_len, o.concurrency, o.spec, o.accept_len, o.kind, round(o.value, 1))
        if key not in seen:
            seen.add(key)
            pts.append(o)
            if len(pts) == k:
                break
    return tuple({"id": o.id, "source": o.source, "gpu": o.gpu, "layout": o.layout, "engine": o.engine,
                  "workload": f"{o.input_len}/{o.output_len} c{o.concurrency}"
                              # (newcomers 48-50: "τ" never explained)
                              + (f" DSpark accepting {o.accept_len:g}" if o.spec != "none" else ""),
                  "kind": o.kind, "value": o.value, "fitted": o.fitted,
                  "normalisation": o.normalisation or "", "concurrency": o.concurrency, "admitted": o.admitted,
                  "input_len": o.input_len, "output_len": o.output_len,
                  "accept_len": o.accept_len if o.spec != "none" else None} for o in pts)


DOMAIN_FACTOR = domain.DOMAIN_FACTOR


def domain_gaps(gpu: str, dep: Deployment, work: Workload, metric: str = "decode",
                prefill_attention: str = "fast", engine: Engine = SGLANG, harness: Harness = COHORT_HARNESS,
                variants=(), kv_dtype: str = "bf16", spec: Spec | None = None) -> tuple[str, ...]:
    """Where a question leaves the family's validated domain for one ``metric``
    (:func:`k3lab.serving.domain.gaps`); empty when inside."""
    return domain.gaps(gpu, dep, work, metric, prefill_attention, engine, harness, variants, kv_dtype, spec)


def predict(cfg: ModelConfig, dep: Deployment, work: Workload, spec: Spec = NO_SPEC, variants=(),
            kv_dtype: str = "bf16", mem_fraction: float | None = None, nics_per_node: int | None = None,
            accept_range: tuple[float, float] | None = None, prefill_attention: str = "fast",
            engine: Engine = SGLANG, harness: Harness | None = None) -> Prediction:
    """The model at ``work`` (see the module docstring): ``work.concurrency`` clients, of which the
    engine runs what it admits (``concurrency``; the rest queue and their wait is in the TTFT);
    ValueError when not one request fits. ``accept_range``: with DSpark, the (low, high) acceptance
    lengths the answer's intervals must span (the model runs at each; ``spec.accept_len`` stays the
    central value). ``prefill_attention``: ``fast`` (the default kernels today) or ``fallback``
    (finding 3's Triton fallback on ROCm). ``engine`` and ``harness``: :mod:`k3lab.serving.engines`
    (default: sglang; the harness None: the engine's usual one, sglang's ``bench_serving`` closed loop
    over fixed lengths)."""
    harness = usual_harness(engine.name) if harness is None else harness
    cfg.check_context(work.input_len + work.output_len, f"a request of {work.input_len:,} + {work.output_len:,}")
    fam, params, bands = family_params(dep.gpu)
    I, O = mean_lengths(work.input_len, work.output_len, harness)
    adm = admission(cfg, dep, I + O, spec, variants, kv_dtype, mem_fraction, engine)
    if adm.requests < 1:
        raise ValueError(f"{dep.label}: not one {I + O:,}-token request fits ({adm.why_none})")
    running = min(work.concurrency, adm.requests)

    def run(s):
        return benchmark(cfg, dep, work, params, s, variants, kv_dtype, nics_per_node, prefill_attention, engine,
                         harness, adm.requests)

    t = run(spec)
    spread, rng = {}, ()
    if spec.on and accept_range:
        lo, hi = sorted(float(a) for a in accept_range)
        ends = [run(Spec(spec.algorithm, a, spec.block)) for a in (lo, hi)]
        for kind, get in (("output_tok_s", lambda x: x.output_tok_s), ("tpot_ms", lambda x: x.tpot_s * 1e3),
                          ("itl_ms", lambda x: x.step_s * 1e3), ("ttft_ms", lambda x: x.ttft_s * 1e3)):
            vals = [get(x) for x in ends]
            spread[kind] = (min(vals), max(vals))
        rng = (lo, hi)
    w = Workload(work.input_len, work.output_len, running)
    where = dict(engine=engine, harness=harness, variants=variants, kv_dtype=kv_dtype)
    return Prediction(layout=dep.label, gpu=dep.gpu, family=fam, variants=tuple(variants),
                      input_len=w.input_len, output_len=w.output_len, concurrency_asked=work.concurrency,
                      concurrency=running, admitted=adm.requests, spec=spec.algorithm,
                      accept_len=spec.accept_len, tpot_ms=t.tpot_s * 1e3, ttft_ms=t.ttft_s * 1e3,
                      itl_ms=t.step_s * 1e3, output_tok_s=t.output_tok_s, num_gpus=dep.num_gpus,
                      num_nodes=dep.num_nodes, bands=dict(bands), params=params,
                      nearest=nearest(dep.gpu, w, spec, engine=engine.name),
                      # the decode speed is that of the requests running (w); the TTFT holds the queue of all asked
                      outside=domain_gaps(dep.gpu, dep, w, "dspark" if spec.on else "decode", spec=spec, **where),
                      ttft_outside=domain_gaps(dep.gpu, dep, work, "ttft", prefill_attention, **where), spread=spread,
                      accept_range=rng, admission_note=adm.why(I + O), engine=engine.name,
                      regime=regime(engine, harness), harness=harness)


def curve(cfg: ModelConfig, dep: Deployment, input_len: int, output_len: int, spec: Spec = NO_SPEC,
          variants=(), concurrencies=SWEEP, kv_dtype: str = "bf16", mem_fraction: float | None = None,
          nics_per_node: int | None = None, max_running: int | None = None,
          accept_range: tuple[float, float] | None = None, prefill_attention: str = "fast",
          engine: Engine = SGLANG, harness: Harness | None = None) -> list[Prediction]:
    """:func:`predict` at each concurrency of ``concurrencies`` the engine admits (the first one
    above the admission limit is replaced by the limit itself). ``max_running``: a lower cap on
    requests in flight (whole deployment), e.g. what a state-pool setting leaves."""
    harness = usual_harness(engine.name) if harness is None else harness
    I, O = mean_lengths(input_len, output_len, harness)
    adm = admission(cfg, dep, I + O, spec, variants, kv_dtype, mem_fraction, engine)
    limit = adm.requests if max_running is None else min(adm.requests, data.check_count("max_running", max_running))
    over = limit and any(c > limit for c in concurrencies)  # the first one above the limit becomes the limit
    cs = sorted({c for c in concurrencies if c <= limit} | ({limit} if over else set()))
    return [predict(cfg, dep, Workload(input_len, output_len, c), spec, variants, kv_dtype, mem_fraction, nics_per_node,
                    accept_range, prefill_attention, engine, harness) for c in cs]


def peak(cfg: ModelConfig, dep: Deployment, input_len: int, output_len: int, spec: Spec = NO_SPEC,
         variants=(), concurrencies=SWEEP, **kw) -> Prediction:
    """The prediction with the highest output tok/s over :func:`curve`."""
    pts = curve(cfg, dep, input_len, output_len, spec, variants, concurrencies, **kw)
    if not pts:
        raise ValueError(f"{dep.label}: not one {input_len + output_len:,}-token request fits")
    return max(pts, key=lambda p: (p.output_tok_s, -p.concurrency))


def differences(n: dict, p: Prediction) -> list[str]:
    """What sets a nearest public run ``n`` (a row of :attr:`Prediction.nearest`) apart from ``p``'s
    question, each as words: its layout, its lengths, the requests that ran at once (its clients, or fewer
    where its pools bound them), its DSpark acceptance, its engine; empty when none differs."""
    d = []
    if n["layout"] != p.layout:
        d.append(f"its layout {n['layout']}")
    if "input_len" in n and (n["input_len"], n["output_len"]) != (p.input_len, p.output_len):
        # (attack 6: a 1024/1024 run beside a 1024/400 question said only its concurrency differed)
        d.append(f"{n['input_len']:,} in / {n['output_len']:,} out (yours {p.input_len:,} / {p.output_len:,})")
    ran = min(n["concurrency"], n["admitted"]) if n.get("admitted") else None
    if ran is not None and ran != p.concurrency:  # its clients, or fewer where its pools bound them (newcomer 15:
        # "c32 ... 22 running" read as a contradiction)
        d.append(f"{ran:,} of its {n['concurrency']:,} clients running at once (yours {p.concurrency:,})"
                 if ran < n["concurrency"] else f"{ran:,} running (yours {p.concurrency:,})")
    if (n.get("accept_len") is not None) != p.spec_on:
        d.append(f"DSpark at {n['accept_len']:g} tokens per step (yours without)" if not p.spec_on else
                 "no speculative decoding (yours DSpark)")
    elif n.get("accept_len") is not None and abs(n["accept_len"] - p.accept_len) > 1e-9:
        d.append(f"acceptance {n['accept_len']:g} (yours {p.accept_len:g})")
    if n.get("engine") and n["engine"] != p.engine:
        d.append(f"engine {n['engine']}")
    return d
