"""Where the serving model's bands hold: the validated domain of a GPU family, per metric.

A band is an out-of-sample error measured on the family's public figures of one metric (decode,
TTFT, DSpark: :data:`k3lab.serving.observations.METRICS`); outside what those figures cover it
says nothing, and ``predict`` says so instead of printing it as if measured. A question leaves the
domain of a metric (:func:`gaps`) when the family's figures of that metric have none with

- its **engine** (decode and DSpark: the build's kernels set the step; TTFT is checked by its
  prefill kernel instead), or its **regime** (cohort, staggered, mixed:
  :func:`k3lab.serving.engines.regime`);
- its **layout**: the TP size, pipeline stages, decode-context parallelism, expert parallelism;
  or it spans nodes when fewer than :data:`~k3lab.serving.calibration.MIN_SOURCES` repositories'
  runs of the metric did (the cross-node costs are then fitted on one repository and tested on
  none: leave-one-repository-out can only extrapolate them, :func:`~k3lab.serving.calibration.cross_node_gaps`);
- its **settings**: the sglang switches (``--variant``; not for TTFT, which they do not move), the
  KV dtype, a DSpark block size, an acceptance length outside the measured range;
- a prompt length, a **decode context** (input + output / 2) or a concurrency more than
  :data:`DOMAIN_FACTOR` beyond the measured ones (for TTFT, with the same prefill kernel).

The output length is not a regime of its own (it only weighs prefill against decode), but it
enters the decode context. Rows are those of the committed fit (``data/serving_fit.yaml``).
"""

from __future__ import annotations

from . import committed
from .calibration import MIN_SOURCES
from .engines import Engine, Harness, regime
from .model import block_tokens, spans_nodes
from .observations import family_of

#: how far beyond its observations (a factor on lengths and concurrency) the band is taken to hold
DOMAIN_FACTOR = 2.0


def _range(name: str, v: float, values, low_from_one: bool = False, upper_only: bool = False) -> list[str]:
    lo, hi = (1 if low_from_one else min(values)), max(values)
    if (upper_only or lo / DOMAIN_FACTOR <= v) and v <= hi * DOMAIN_FACTOR:
        return []
    return [f"{name} {v:,.0f} is outside the measured {lo:,.0f}-{hi:,.0f} (x{DOMAIN_FACTOR:g})"]


def gaps(gpu: str, dep, work, metric: str = "decode", prefill_attention: str = "fast", engine: Engine = Engine(),
         harness: Harness = Harness(), variants=(), kv_dtype: str = "bf16", spec=None) -> tuple[str, ...]:
    """Where a question leaves the family's validated domain for ``metric`` (module docstring);
    empty when inside."""
    fam = family_of(gpu)
    fam_obs = [o for o in committed.fitted_observations() if o.family == fam]
    obs = [o for o in fam_obs if o.metric == metric and (metric != "ttft" or o.prefill_attention == prefill_attention)]
    if not obs:
        what = {"ttft": f"TTFT with the {prefill_attention} prefill kernel", "dspark": "DSpark"}.get(metric, "decode speed")
        return (f"no public measurement of {what} on this family",)
    out = []
    # a prompt's prefill runs in the prefill kernel (checked above for TTFT), whatever engine drives it:
    # the engine and its settings enter TTFT through the regime
    if metric != "ttft" and engine.name not in {o.engine for o in obs}:
        out.append(f"engine {engine.name}: no public measurement of {metric} on this family ran it")
    reg = regime(engine, harness)
    if reg not in {o.regime for o in obs}:
        out.append(f"the {reg} regime (engine {engine.name}, {harness.arrival} arrivals, {harness.lengths} lengths): "
                   f"no public measurement of {metric} on this family ran in it")
    if dep.tp not in {o.tp for o in obs}:
        out.append(f"TP{dep.tp}: no public measurement of {metric} on this family used it")
    for what, here, seen in (("pipeline stages", dep.pp > 1, any(o.pp > 1 for o in obs)),
                             ("decode context parallelism", dep.dcp > 1, any(o.dcp > 1 for o in obs)),
                             ("expert parallelism", bool(dep.ep), any(o.ep for o in obs)),
                             ("a KV cache in fp8", kv_dtype == "fp8", any(o.kv_dtype == "fp8" for o in obs))):
        if here and not seen:
            out.append(f"{what}: no public measurement of {metric} on this family used it")
    for v in (sorted(set(variants) - {"dspark"}) if metric != "ttft" else ()):
        if not any(v in o.variants for o in obs):
            out.append(f"setting {v}: no public measurement of {metric} on this family ran it")
    if spans_nodes(dep):
        across = sorted({o.origin for o in obs if o.spans_nodes})
        if len(across) < MIN_SOURCES:
            out.append(f"it spans nodes over scale-out; {metric} runs of the family that do: "
                       + (f"{len(across)} repository ({across[0]}), so its cross-node costs are fitted but not "
                          f"validated on another" if across else "none"))
    out += _range("input length", work.input_len, [o.input_len for o in obs])
    if metric != "ttft":
        out += _range("decode context", work.input_len + work.output_len / 2,  # a shorter one only reads less
                      [o.input_len + o.output_len / 2 for o in obs], upper_only=True)
    out += _range("concurrency", work.concurrency, [o.concurrency for o in obs], low_from_one=True)
    if metric == "dspark" and spec is not None and spec.on:
        acc = [o.accept_len for o in obs]
        if not min(acc) <= spec.accept_len <= max(acc):
            out.append(f"acceptance length {spec.accept_len:g} is outside the measured {min(acc):g}-{max(acc):g}")
        if spec.block is not None and spec.block not in {o.block or block_tokens() for o in obs}:
            out.append(f"DSpark block size {spec.block}: no public measurement on this family used it")
    return tuple(out)

