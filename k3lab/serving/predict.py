"""What the validated serving model says about one question, and how sure it is.

:func:`predict` answers a deployment × workload × speculative setting with TPOT, TTFT and
output tok/s (whole deployment, per node, per GPU), each with the band its family's
out-of-sample error gives (:func:`k3lab.serving.committed.fitted`), the concurrency actually
admitted (capped by what sglang 0.5.23's pools hold for the request length: finding 1's
:func:`k3lab.memory.fit`, never by hand), and the public measurements nearest to the question.
:func:`peak` is the best output tok/s over the concurrencies a sweep would try (:data:`SWEEP`),
among those the pools admit — the reading of the article's "peaked at".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import data, memory
from ..specs import Deployment, ModelConfig
from . import committed
from .model import spans_nodes
from .model import NO_SPEC, FamilyParams, Spec, Workload, benchmark
from .observations import family_of, metric_of

#: concurrencies a benchmark sweep tries (powers of two and the article's c24 / c48 / c96)
SWEEP = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


class NotCalibrated(ValueError):
    """The GPU's family has no validated parameters (too few public measurements)."""


@dataclass(frozen=True)
class Admission:
    """Requests of ``context_tokens`` the deployment's pools hold at once (whole deployment):
    ``replicas × min(max_running_requests, max_kv_tokens // context)`` of sglang's start-up
    sizing, with the draft's memory and its 48-request default when DSpark is on."""

    requests: int
    max_running_requests_per_replica: int
    kv_requests_per_replica: int
    replicas: int
    variants: tuple

    def why(self, context_tokens: int) -> str:
        """What binds the admission, in words (sglang 0.5.23's start-up sizing, ``k3lab fit``)."""
        per = f"{self.max_running_requests_per_replica:,} per replica"
        if self.kv_requests_per_replica < self.max_running_requests_per_replica:
            return (f"the KV pool holds {self.kv_requests_per_replica:,} requests of {context_tokens:,} tokens per "
                    f"replica (sglang 0.5.23's start-up sizing; `python -m k3lab fit` shows it)")
        draft = ", DSpark's draft setting --max-running-requests 48" if "dspark" in self.variants else ""
        return (f"sglang's request slots bind: {per} (--max-running-requests, capped by the KDA state pool at its "
                f"default --mamba-full-memory-ratio{draft}); a public run at higher concurrency set larger pools "
                "(--max-running-requests with --max-mamba-cache-size: `python -m k3lab fit --help-variants`)")


def admission(cfg: ModelConfig, dep: Deployment, context_tokens: int, spec: Spec = NO_SPEC, variants=(),
              kv_dtype: str = "bf16", mem_fraction: float = 0.9) -> Admission:
    """:class:`Admission` of ``dep`` for requests of ``context_tokens`` (input + output)."""
    var = tuple(sorted(set(variants) | ({"dspark"} if spec.on else set())))
    p = memory.fit(cfg, dep, mem_fraction, kv_dtype, context_tokens=context_tokens, variants=var)
    if not p.weights_fit:
        return Admission(0, 0, 0, dep.replicas, var)
    kv = p.max_kv_tokens // context_tokens
    return Admission(dep.replicas * min(p.max_running_requests, kv), p.max_running_requests, kv, dep.replicas, var)


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

    KINDS = ("output_tok_s", "tpot_ms", "ttft_ms", "itl_ms")

    @property
    def in_domain(self) -> bool:
        """The question's speed (decode, or DSpark) lies where the family's public measurements
        validate the model (:func:`domain_gaps` found nothing)."""
        return not self.outside

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
             "bands_log": dict(self.bands), "validated": {k: self.validated(k) for k in self.KINDS},
             "in_validated_domain": self.in_domain, "outside_validated_domain": list(self.outside),
             "ttft_outside_validated_domain": list(self.ttft_outside),
             "params": {k: getattr(self.params, k) for k in FamilyParams.NAMES}}
        per = {"output_tok_s": ("output_tok_s", 1.0), "output_tok_s_per_node": ("output_tok_s", 1 / self.num_nodes),
               "output_tok_s_per_gpu": ("output_tok_s", 1 / self.num_gpus)}
        for k in ("tpot_ms", "ttft_ms", "itl_ms", "output_tok_s", "output_tok_s_per_node", "output_tok_s_per_gpu"):
            kind, sc = per.get(k, (k, 1.0))
            iv = self.interval(kind, sc)
            d[k] = getattr(self, k)
            d[f"{k}_low"], d[f"{k}_high"] = (None, None) if iv is None else iv
        d["nearest_measurements"] = [dict(n) for n in self.nearest]
        return d


def family_params(gpu: str) -> tuple[str, FamilyParams, dict]:
    """(family, fitted parameters, bands per metric) for a GPU from the committed fit
    (:func:`k3lab.serving.committed.fitted`); :class:`NotCalibrated` when its family has no
    fit (no public measurement passed the rules). A fitted family whose metrics are not validated
    still answers, with no band ("not validated")."""
    fam = family_of(gpu)
    ok = committed.fitted_families()
    if fam is None or fam not in ok:
        raise NotCalibrated(f"no public Kimi K3 measurements calibrate the serving model for {gpu} "
                            f"(family {fam or 'none'}); calibrated families: {', '.join(ok)}")
    params, b = committed.fitted(fam)
    return fam, params, b


def nearest(gpu: str, work: Workload, spec: Spec, k: int = 3) -> tuple:
    """The ``k`` public observations nearest to a question: distance = |ln c ratio| + |ln I
    ratio| + |ln O ratio| + 1 for another GPU + 1 for another speculative setting, within the
    GPU's family. → tuple of dicts (id, source, gpu, layout, workload, kind, value)."""
    fam = family_of(gpu)

    def dist(o):
        return (abs(math.log(o.concurrency / work.concurrency)) + abs(math.log(o.input_len / work.input_len))
                + abs(math.log(o.output_len / work.output_len)) + (o.gpu != gpu) + ((o.spec != "none") != spec.on))

    pts = sorted((o for o in committed.fitted_observations() if o.family == fam), key=lambda o: (dist(o), o.id))
    return tuple({"id": o.id, "source": o.source, "gpu": o.gpu, "layout": o.layout,
                  "workload": f"{o.input_len}/{o.output_len} c{o.concurrency}"
                              + (f" DSpark τ={o.accept_len:g}" if o.spec != "none" else ""),
                  "kind": o.kind, "value": o.value} for o in pts[:k])


#: how far beyond its observations (a factor on lengths and concurrency) the band is taken to hold
DOMAIN_FACTOR = 2.0


def domain_gaps(gpu: str, dep: Deployment, work: Workload, metric: str = "decode",
                prefill_attention: str = "fast") -> tuple[str, ...]:
    """Where a question leaves the family's validated domain for one ``metric`` (decode, TTFT or
    DSpark, :data:`k3lab.serving.observations.METRICS`): a prompt length or a concurrency more
    than :data:`DOMAIN_FACTOR` beyond the family's observations of that metric (for TTFT, those
    with the same prefill attention kernel: a kernel's speed at 8k says little of it at 172k), or
    a deployment spanning nodes over scale-out when no observation of the family does. The
    output length is not a regime of its own: it only weighs prefill against decode. Empty when
    inside. The band is an out-of-sample error measured inside; outside it says nothing."""
    fam = family_of(gpu)
    fam_obs = [o for o in committed.fitted_observations() if o.family == fam]
    obs = [o for o in fam_obs if o.metric == metric
           and (metric != "ttft" or o.prefill_attention == prefill_attention)]
    if not obs:
        what = {"ttft": f"TTFT with the {prefill_attention} prefill kernel", "dspark": "DSpark"}.get(metric, "decode speed")
        return (f"no public measurement of {what} on this family",)
    out = []
    for name, v, lo, hi in (("input length", work.input_len, min(o.input_len for o in obs), max(o.input_len for o in obs)),
                            ("concurrency", work.concurrency, 1, max(o.concurrency for o in obs))):
        if not lo / DOMAIN_FACTOR <= v <= hi * DOMAIN_FACTOR:
            out.append(f"{name} {v:,} is outside the measured {lo:,}-{hi:,} (x{DOMAIN_FACTOR:g})")
    if spans_nodes(dep) and not any(o.spans_nodes for o in fam_obs):
        out.append("it spans nodes over scale-out; no public measurement of the family does")
    return tuple(out)


def predict(cfg: ModelConfig, dep: Deployment, work: Workload, spec: Spec = NO_SPEC, variants=(),
            kv_dtype: str = "bf16", mem_fraction: float = 0.9, nics_per_node: int | None = None,
            accept_range: tuple[float, float] | None = None, prefill_attention: str = "fast") -> Prediction:
    """The model at ``work`` (see the module docstring). A concurrency above what the pools
    admit is lowered to it (``concurrency`` < ``concurrency_asked``); ValueError when not one
    request fits. ``accept_range``: with DSpark, the (low, high) acceptance lengths the answer's
    intervals must span (the model runs at each; ``spec.accept_len`` stays the central value).
    ``prefill_attention``: ``fast`` (sglang's default kernels today) or ``fallback`` (finding 3's
    Triton fallback on ROCm)."""
    cfg.check_context(work.input_len + work.output_len, f"a request of {work.input_len:,} + {work.output_len:,}")
    fam, params, bands = family_params(dep.gpu)
    adm = admission(cfg, dep, work.input_len + work.output_len, spec, variants, kv_dtype, mem_fraction)
    if adm.requests < 1:
        raise ValueError(f"{dep.label}: not one {work.input_len + work.output_len:,}-token request fits "
                         f"(weights {'do not load' if adm.max_running_requests_per_replica == 0 else 'load, pools hold none'})")
    w = Workload(work.input_len, work.output_len, min(work.concurrency, adm.requests))

    def run(s):
        return benchmark(cfg, dep, w, params, s, variants, kv_dtype, nics_per_node, prefill_attention)

    t = run(spec)
    spread, rng = {}, ()
    if spec.on and accept_range:
        lo, hi = sorted(float(a) for a in accept_range)
        ends = [run(Spec(spec.algorithm, a)) for a in (lo, hi)]
        for kind, get in (("output_tok_s", lambda x: x.output_tok_s), ("tpot_ms", lambda x: x.tpot_s * 1e3),
                          ("itl_ms", lambda x: x.step_s * 1e3), ("ttft_ms", lambda x: x.ttft_s * 1e3)):
            vals = [get(x) for x in ends]
            spread[kind] = (min(vals), max(vals))
        rng = (lo, hi)
    return Prediction(layout=dep.label, gpu=dep.gpu, family=fam, variants=tuple(variants),
                      input_len=w.input_len, output_len=w.output_len, concurrency_asked=work.concurrency,
                      concurrency=w.concurrency, admitted=adm.requests, spec=spec.algorithm,
                      accept_len=spec.accept_len, tpot_ms=t.tpot_s * 1e3, ttft_ms=t.ttft_s * 1e3,
                      itl_ms=t.step_s * 1e3, output_tok_s=t.output_tok_s, num_gpus=dep.num_gpus,
                      num_nodes=dep.num_nodes, bands=dict(bands), params=params, nearest=nearest(dep.gpu, w, spec),
                      outside=domain_gaps(dep.gpu, dep, w, "dspark" if spec.on else "decode"),
                      ttft_outside=domain_gaps(dep.gpu, dep, w, "ttft", prefill_attention), spread=spread,
                      accept_range=rng, admission_note=adm.why(work.input_len + work.output_len))


def curve(cfg: ModelConfig, dep: Deployment, input_len: int, output_len: int, spec: Spec = NO_SPEC,
          variants=(), concurrencies=SWEEP, kv_dtype: str = "bf16", mem_fraction: float = 0.9,
          nics_per_node: int | None = None, max_running: int | None = None,
          accept_range: tuple[float, float] | None = None, prefill_attention: str = "fast") -> list[Prediction]:
    """:func:`predict` at each concurrency of ``concurrencies`` the pools admit (the first one
    above the admission limit is replaced by the limit itself). ``max_running``: a lower cap on
    requests in flight (whole deployment), e.g. what a state-pool setting leaves."""
    adm = admission(cfg, dep, input_len + output_len, spec, variants, kv_dtype, mem_fraction)
    limit = adm.requests if max_running is None else min(adm.requests, data.check_count("max_running", max_running))
    over = limit and any(c > limit for c in concurrencies)  # the first one above the limit becomes the limit
    cs = sorted({c for c in concurrencies if c <= limit} | ({limit} if over else set()))
    return [predict(cfg, dep, Workload(input_len, output_len, c), spec, variants, kv_dtype, mem_fraction, nics_per_node,
                    accept_range, prefill_attention) for c in cs]


def peak(cfg: ModelConfig, dep: Deployment, input_len: int, output_len: int, spec: Spec = NO_SPEC,
         variants=(), concurrencies=SWEEP, **kw) -> Prediction:
    """The prediction with the highest output tok/s over :func:`curve`."""
    pts = curve(cfg, dep, input_len, output_len, spec, variants, concurrencies, **kw)
    if not pts:
        raise ValueError(f"{dep.label}: not one {input_len + output_len:,}-token request fits")
    return max(pts, key=lambda p: (p.output_tok_s, -p.concurrency))
