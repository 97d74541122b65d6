"""The article's performance claims put to the validated serving model (findings 2, 3 and 4).

Each question is asked at the article's own workload (``data/article_table.yaml``: 1,024 in /
400 out) and settings, under every reading the article leaves open — a *reading* is one
(prediction, band) pair that :func:`k3lab.claims.rules.rule_validated_model` spans:

- **throughput** (T1–T3, :func:`table_readings`): the best output tok/s over the concurrencies a
  sweep tries that the pools admit (:func:`k3lab.serving.predict.peak`; the article says
  "peaked"), or at the concurrency the article names (the MI355X's c64 after the fix); with and
  without DSpark, since the article says the fix raised the peak but not which rows ran it;
  DSpark at the spread of acceptance lengths the field measured (:func:`k3lab.serving.field.accept_range`); the B200's
  two nodes under both readings of its ~195 Gb/s RoCE (a NIC per GPU, or one per node).
- **speculative speed-ups** (S6, S7, :func:`spec_speedups`): DSpark over no DSpark at one
  request, and at each side's peak, on 8×MI355X; their band is the model's out-of-source error
  on the public spec / no-spec ratios (:func:`ratio_band`), not on single figures.
- **prefill** (P5, P6, :func:`prefill_question`): the 172k-token cold prefill on 8×MI355X.

Every reading carries whether it lies in the model's validated domain
(:func:`k3lab.serving.predict.domain_gaps`). Units follow each claim: tok/s per node (one node
here) or per deployment; speed-ups as factors; prefill in tok/s per TP8 instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data
from ..specs import Deployment, load_model
from ..throughput import article_table, article_workload
from . import calibration, committed, field
from .model import NO_SPEC, Spec, Workload
from .predict import Prediction, peak, predict

#: the article's ROCm setting: SGLANG_AITER_K3_OPT=1 (its 191 GiB per GPU, finding 1)
ARTICLE_AMD_VARIANTS = ("aiter-k3-opt",)
#: the MI355X's GPU family (its public runs' DSpark acceptance: k3lab.serving.field.accept_range)
_MI355X_FAMILY = "amd-cdna4"
@dataclass(frozen=True)
class Reading:
    """One way to read a claim, answered by the model: ``value`` in the claim's unit, ``band``
    the validated error (log factor; None where the metric is not validated), ``in_domain``
    whether the question lies where the model is validated."""

    label: str
    value: float
    band: float | None
    in_domain: bool
    prediction: Prediction | None = None
    note: str = ""

    @property
    def validated(self) -> bool:
        return self.band is not None

    @property
    def low(self) -> float:
        return math.nan if self.band is None else self.value * math.exp(-self.band)

    @property
    def high(self) -> float:
        return math.nan if self.band is None else self.value * math.exp(self.band)


def variants_for(dep: Deployment) -> tuple:
    """The article's sglang switches for a deployment (K3_OPT on AMD GPUs)."""
    return ARTICLE_AMD_VARIANTS if dep.gpu_spec.vendor == "amd" else ()


def _spec_settings(family: str | None = None):
    _, lo, hi, _ = field.accept_range(family)
    return [("no DSpark", NO_SPEC), (f"DSpark τ={lo:.2f}", Spec("dspark", round(lo, 2))),
            (f"DSpark τ={hi:.2f}", Spec("dspark", round(hi, 2)))]


def table_readings(row_id: str, per: str) -> list[Reading]:
    """The readings of one row of the article's table (``mi355x_tp8``, ``b300_tp8_dcp``,
    ``b200_tp16``) in tok/s ``per`` ``"node"`` or ``"deployment"``."""
    cfg = load_model("kimi-k3")
    row = article_table()[row_id]
    dep = row.deployment
    w = article_workload()
    I, O = w["input_len_tokens"], w["output_len_tokens"]
    var = variants_for(dep)
    nets = [(None, "")]
    if dep.num_nodes > 1:
        inp = data.load("serving_model")
        nets = [(inp.scale_out_nics_per_node.value, f", {inp.scale_out_nics_per_node.value} NICs/node"),
                (inp.scale_out_nics_per_node_pessimistic.value,
                 f", {inp.scale_out_nics_per_node_pessimistic.value} NIC/node")]
    out = []
    from .observations import family_of

    for slabel, spec in _spec_settings(family_of(dep.gpu)):
        for nics, nlabel in nets:
            if row.concurrency:
                p = predict(cfg, dep, Workload(I, O, int(row.concurrency)), spec, var, nics_per_node=nics)
                where = f"at c{p.concurrency}" + (f" (asked c{int(row.concurrency)})" if p.concurrency < row.concurrency else "")
            else:
                p = peak(cfg, dep, I, O, spec, var, nics_per_node=nics)
                where = f"peak at c{p.concurrency}"
            v = p.output_tok_s_per_node if per == "node" else p.output_tok_s
            out.append(Reading(f"{slabel}{nlabel}, {where}", v, p.band, p.in_domain, p,
                               "; ".join(p.outside)))
    return out


def ratio_band() -> tuple[float | None, int]:
    """(band, pairs): the band that promises 90% on the out-of-source error of public DSpark /
    no-DSpark ratios (:func:`k3lab.serving.calibration.covering`: None with fewer than 9 pairs) —
    pairs of one GPU, layout, workload, concurrency and kind, with and without DSpark, each predicted
    by the fit that left its own repository out (every family pooled: the ratio tests the draft and
    verify terms, which all families share). None without enough pairs, or where the band is wider
    than :data:`k3lab.serving.calibration.MAX_BAND_FACTOR` (not validated, like any metric)."""
    rows = {r.id: r for f in committed.fitted_families() for r in committed.fitted_validation(f)
            if r.split == calibration.SPLITS[0]}
    obs = {o.id: o for o in committed.fitted_observations()}
    key = lambda o: (o.gpu, o.layout, o.input_len, o.output_len, o.concurrency, o.kind)
    spec = {key(o): o for o in obs.values() if o.spec != "none"}
    errs = []
    for o in obs.values():
        s = spec.get(key(o)) if o.spec == "none" else None
        if s is None or o.id not in rows or s.id not in rows:
            continue
        errs.append(abs(rows[s.id].log_error - rows[o.id].log_error))
    if not errs:
        return None, 0
    b = calibration.covering(errs)
    return (None if b is None or math.exp(b) > calibration.MAX_BAND_FACTOR else b), len(errs)


def _article_mi355x():
    """The article's MI355X question: (cfg, 8×MI355X TP8 deployment, input, output tokens, its
    sglang switches)."""
    dep = article_table()["mi355x_tp8"].deployment
    w = article_workload()
    return load_model("kimi-k3"), dep, w["input_len_tokens"], w["output_len_tokens"], variants_for(dep)


def _speedups(taus):
    """DSpark / no DSpark at each τ of ``taus`` on the article's MI355X question → (rows of tau,
    single, peak, peak_concurrency; the no-DSpark peak prediction)."""
    cfg, dep, I, O, var = _article_mi355x()
    base1 = predict(cfg, dep, Workload(I, O, 1), NO_SPEC, var).output_tok_s
    base_pk = peak(cfg, dep, I, O, NO_SPEC, var)
    out = []
    for t in taus:
        s1 = predict(cfg, dep, Workload(I, O, 1), Spec("dspark", float(t)), var).output_tok_s
        sp = peak(cfg, dep, I, O, Spec("dspark", float(t)), var)
        out.append({"tau": float(t), "single": s1 / base1, "peak": sp.output_tok_s / base_pk.output_tok_s,
                    "peak_concurrency": sp.concurrency})
    return out, base_pk


def spec_speedups() -> dict:
    """DSpark / no DSpark on 8×MI355X TP8 (the article's setting) at the article's workload, at
    the field's acceptance range: ``single`` (one request) and ``peak`` (each side at its own best
    admitted concurrency), lists of (τ, factor) and (τ, factor, concurrency); ``band``
    (:func:`ratio_band`), ``pairs``, ``accept`` (low, high, runs), ``implied_single`` (the τ that
    gives the article's 2.2×), ``base_peak_concurrency`` (the no-DSpark peak's)."""
    _, lo, hi, n = field.accept_range(_MI355X_FAMILY)
    rows, base_pk = _speedups((round(lo, 2), round(hi, 2)))
    band, pairs = ratio_band()
    return {"single": [(r["tau"], r["single"]) for r in rows],
            "peak": [(r["tau"], r["peak"], r["peak_concurrency"]) for r in rows],
            "band": band, "pairs": pairs, "accept": (lo, hi, n),
            "base_peak_concurrency": base_pk.concurrency, "implied_single": implied_accept(2.2)}


def implied_accept(speedup: float) -> float | None:
    """The DSpark acceptance length at which the model's single-request speed-up on 8×MI355X
    equals ``speedup`` (bisection over [1, block + 1]); None if out of reach."""
    cfg, dep, I, O, var = _article_mi355x()
    base = predict(cfg, dep, Workload(I, O, 1), NO_SPEC, var).output_tok_s

    def f(t):
        return predict(cfg, dep, Workload(I, O, 1), Spec("dspark", t), var).output_tok_s / base - speedup

    a, b = 1.0, 8.0
    if f(a) > 0 or f(b) < 0:
        return None
    for _ in range(40):
        m = (a + b) / 2
        a, b = (m, b) if f(m) < 0 else (a, m)
    return (a + b) / 2


def prefill_question(context_tokens: int, row_id: str = "mi355x_tp8", prefill_attention: str = "fast") -> Prediction:
    """The model at one cold prefill of ``context_tokens`` on a row of the article's table
    (default 8×MI355X TP8, with K3_OPT), one output token: its TTFT and what lies outside the
    validated domain. ``prefill_attention``: ``fast`` (AITER's MLA prefill, after the article's
    fix) or ``fallback`` (the Triton extend-attention before it)."""
    dep = article_table()[row_id].deployment
    return predict(load_model("kimi-k3"), dep, Workload(context_tokens, 1, 1), NO_SPEC, variants_for(dep),
                   prefill_attention=prefill_attention)


def speedup_curve(taus) -> list[dict]:
    """DSpark / no DSpark on 8×MI355X TP8 (the article's setting, workload) at each acceptance
    length of ``taus``: ``single`` (one request) and ``peak`` (each side at its best admitted
    concurrency), with the peak concurrency of the DSpark side. → list of dicts (tau, single,
    peak, peak_concurrency)."""
    return _speedups(taus)[0]
