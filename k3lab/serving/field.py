"""What the field measured, for judging a claim: the public figures that match its setting,
and the spread of DSpark's acceptance length across public runs.

A *match* (:func:`matching`) is a public observation (:mod:`k3lab.serving.observations`) of the
same GPU, the same GPU count and TP, the same input and output lengths and the same
speculative setting (on or off) as the claim, of the kind the claim states; its concurrency is
free (the article gives a peak). Such a figure can be *cited*: it was measured, but not here.
A figure at another workload or layout is context for the notes, never a verdict.
"""

from __future__ import annotations

import re

from .. import data
from .calibration import quantile
from .committed import fitted_observations


def matching(gpu: str, num_gpus: int, tp: int, input_len: int, output_len: int, spec_on: bool,
             kind: str = "output_tok_s") -> list:
    """Public observations (rows of the committed fit) that match a claim's setting exactly."""
    return [o for o in fitted_observations()
            if o.gpu == gpu and o.kind == kind and o.input_len == input_len and o.output_len == output_len
            and (o.spec != "none") == spec_on and o.layout.startswith(f"{num_gpus}×{gpu.upper()} TP{tp}")]


def accept_lengths(family: str | None = None) -> list[tuple[str, float]]:
    """:func:`k3lab.serving.observations.measured_accept_lengths` as the committed fit recorded them (``data/serving_fit.yaml``,
    refused when stale): the same list without parsing the 1.6 MB of public measurements, so that
    ``predict`` stays quick. ``family``: only that GPU family's runs (its kernels and its public
    runs' prompts), where it has any; every run's otherwise."""
    from .committed import fitted_accept_lengths

    rows = fitted_accept_lengths()
    mine = [r for r in rows if family is not None and r.family == family]
    return [(r.id, r.value) for r in (mine or rows)]


#: percentiles of the field's measured acceptance lengths that bound a DSpark question
ACCEPT_PERCENTILES = (0.1, 0.9)


def accept_range(family: str | None = None) -> tuple[float, float, float, int]:
    """(median, low, high, runs): the median and the 10th / 90th percentiles of the DSpark
    acceptance lengths public Kimi K3 runs measured (:func:`accept_lengths`: the GPU family's own
    where it has any), rounded to 0.01 token: what a DSpark question uses when it states none (the
    article states none either)."""
    vals = [v for _, v in accept_lengths(family)]
    if not vals:
        raise data.DataError("data/public_measurements.yaml: no measured DSpark acceptance length")
    mid, lo, hi = (round(quantile(vals, q), 2) for q in (0.5, *ACCEPT_PERCENTILES))
    return mid, max(1.0, lo), hi, len(vals)


#: consecutive acceptance lengths (sorted) this far apart (a factor) split the field's runs into two groups
GROUP_GAP = 1.5


def accept_groups(family: str | None = None) -> list[dict]:
    """The field's DSpark acceptance lengths (:func:`accept_lengths`, the family's own where it has
    any) in groups: split at the widest gap between consecutive values when it exceeds
    :data:`GROUP_GAP` (acceptance follows the prompts: a draft guesses a repetitive output far
    better than natural text), one group otherwise. → list of dicts, lowest first: low, high,
    median (tokens per verify step), runs, and prompts: what its runs prompted with (the first clause
    of ``dataset`` in ``data/public_measurements.yaml``, "not stated" without one) → the sources
    that did."""
    vals = sorted(accept_lengths(family), key=lambda x: (x[1], x[0]))
    if not vals:
        return []
    ratios = [(b[1] / a[1], i + 1) for i, (a, b) in enumerate(zip(vals, vals[1:]))]
    gap, at = max(ratios, default=(1.0, len(vals)))
    parts = [vals[:at], vals[at:]] if gap > GROUP_GAP else [vals]
    by_id = {m.id: m for m in data.load("public_measurements").measurements}

    def prompts(m) -> str:
        return "not stated" if not m.dataset else re.split(r", |; | \(", m.dataset)[0].strip()

    out = []
    for part in parts:
        srcs = {}
        for i, _ in part:
            m = by_id.get(i)
            if m is not None and m.source not in srcs.setdefault(prompts(m), []):
                srcs[prompts(m)].append(m.source)
        out.append({"low": part[0][1], "high": part[-1][1], "median": round(quantile([v for _, v in part], 0.5), 2),
                    "runs": len(part), "prompts": srcs})
    return out


def plan_accept(family: str | None = None) -> dict:
    """The acceptance length a DSpark question plans on when it states none: where the family's
    runs split into groups by their prompts (:func:`accept_groups`), the lower group's (natural
    text, agent traces, code: what real traffic gets; the higher one comes from benchmarks that
    repeat a prompt), else the one group's. → dict: median, low, high (tokens per verify step), runs
    (in that group), of (the family's runs), grouped (whether a higher group was set aside)."""
    gs = accept_groups(family)
    if not gs:
        raise data.DataError("data/public_measurements.yaml: no measured DSpark acceptance length")
    g = gs[0]
    return {"median": g["median"], "low": g["low"], "high": g["high"], "runs": g["runs"],
            "of": sum(x["runs"] for x in gs), "grouped": len(gs) > 1}


def figure(measurement_id: str):
    """One public measurement by id (a validated entry of ``data/public_measurements.yaml``);
    DataError naming the file when no entry has that id."""
    for m in data.load("public_measurements").measurements:
        if m.id == measurement_id:
            return m
    raise data.DataError(f"data/public_measurements.yaml: no measurement with id {measurement_id!r}")


def spec_pairs(kind: str = "output_tok_s", concurrency: int | None = None) -> list[tuple]:
    """Public DSpark-vs-no-DSpark pairs: figures of one GPU, layout, workload, concurrency and
    kind measured with and without DSpark by one project (the same repository: one build and
    harness), the DSpark figure of the same source preferred (the run measured with it), optionally
    at one ``concurrency`` (:func:`k3lab.serving.observations.observations`, read from
    ``data/public_measurements.yaml``) → list of (no-DSpark Observation, DSpark Observation,
    speed-up: DSpark ÷ no-DSpark tok/s, or no-DSpark ÷ DSpark ms), sorted by GPU, layout and ids."""
    from .observations import observations

    def key(o):
        return (o.origin, o.gpu, o.deployment.label, o.workload.input_len, o.workload.output_len,
                o.workload.concurrency, o.kind)

    obs = [o for o in observations() if o.kind == kind
           and (concurrency is None or o.workload.concurrency == concurrency)]
    spec = {}
    for o in obs:
        if o.spec.algorithm == "dspark":
            spec.setdefault(key(o), []).append(o)
    out = []
    for o in obs:
        cands = spec.get(key(o), []) if o.spec.algorithm == "none" else []
        if cands:
            s = next((c for c in cands if c.source == o.source), cands[0])
            out.append((o, s, s.value / o.value if kind.endswith("tok_s") else o.value / s.value))
    return sorted(out, key=lambda p: (p[0].gpu, p[0].deployment.label, p[0].id, p[1].id))
