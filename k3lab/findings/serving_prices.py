"""Notebook 04's serving-model prices, at the run's latency target: what its "Your GPUs and
layouts" and "Cost at matched interactivity" sections show, computed once here so the notebook
stays a narrative.

:func:`at_latency` prices the run's layouts on the serving model at its SLO (or each at its peak),
asks :func:`k3lab.decision.decide` the run's question (:func:`k3lab.decision.question`, which the
notebook writes for the report's decision box: one number per question), and draws the cost
against interactivity of the MI355X and B300 nodes (:mod:`k3lab.findings.interactivity`).
Units: $/GPU-hour, $ per million output tokens, ms, output tok/s per deployment.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import decision
from . import field, interactivity


@dataclass
class LatencyPrices:
    """``table``: :func:`k3lab.findings.field.model_perf_per_dollar` of the run's layouts;
    ``question``: the decision's arguments; ``text``: what the notebook prints; ``view``: the
    table pivoted by price source; ``cost``: :func:`k3lab.findings.interactivity.cost_curves`
    (None when no source prices both GPUs) at ``cost_prices`` (label, {gpu: $/GPU-hour}), read at
    the TPOT limits ``levels``."""

    table: object
    question: dict
    text: str
    view: object
    cost: list | None
    cost_prices: tuple | None
    levels: list

    def cost_table(self):
        return interactivity.curves_table(self.cost or [])

    def cost_figure(self, workload: str):
        from ..figures.field import interactivity_figure

        return interactivity_figure(self.cost, self.cost_prices[0], self.levels, workload)


def at_latency(deps, params) -> LatencyPrices:
    """The serving model's prices of ``deps`` at the run's latency target (module docstring), the
    decision over every candidate layout with the same question, and the pair's cost against
    interactivity. ``params``: notebook 04's checked parameters (:class:`k3lab.nbparams.Params`):
    model, input_len, output_len, mem_fraction, usd_per_gpu_hour, context_tokens (0: the model's
    maximum), max_tpot_ms, max_ttft_ms, min_tok_s_per_user (0: no limit), and kv_dtype and
    usd_per_kwh, taken only when the run changed them (:func:`k3lab.findings.field.user_serving_settings`:
    the CLI's bf16 KV and no electricity otherwise)."""
    from ..serving.slo import SLO

    kv_dtype, usd_per_kwh = field.user_serving_settings(params.changed, params["kv_dtype"], params["usd_per_kwh"])
    slo = SLO.of(params["max_tpot_ms"], params["max_ttft_ms"], params["min_tok_s_per_user"])
    model, input_len, output_len = params["model"], params["input_len"], params["output_len"]
    mem_fraction, overrides = params["mem_fraction"], params["usd_per_gpu_hour"]
    context_tokens = params["context_tokens"] or None
    peaks = field.model_peaks(deps, input_len, output_len, kv_dtype=kv_dtype, mem_fraction=mem_fraction, slo=slo)
    table = field.model_perf_per_dollar(peaks, overrides, usd_per_kwh)
    said = (f"serving-model settings: KV {kv_dtype}, electricity ${usd_per_kwh:g}/kWh, {slo.label()}; " + "; ".join(
        f"{d.label}: " + (f"{p.output_tok_s:,.0f} tok/s at c{p.concurrency} (TPOT {p.tpot_ms:,.0f} ms, "
                          f"TTFT {p.ttft_ms:,.0f} ms)" if p else why) for d, p, why in peaks))
    q = decision.question(model, context_tokens, input_len=input_len, output_len=output_len, kv_dtype=kv_dtype,
                          mem_fraction=mem_fraction, overrides=overrides or None, slo=slo)
    d = decision.decide(**q)
    text = "\n".join([said, "", *decision.headline(d)[:-1], "", *decision.answer_lines(d)[1:-1]])
    view = (table.assign(tok_s=table.tok_s.round()).pivot_table(
        index=["layout", "setting", "concurrency", "tpot_ms", "ttft_ms", "tok_s", "in_domain"], columns="tier",
        values="usd_per_million_tokens").round(2) if len(table) else table)
    paired = interactivity.paired_prices(overrides)
    cost = interactivity.cost_curves(input_len, output_len, paired[1], kv_dtype=kv_dtype) if paired else None
    levels = interactivity.matched_levels(cost) if cost else []
    if paired:
        text += (f"\n\ncost against interactivity priced at {paired[0]}: " + ", ".join(
            f"{g.upper()} ${v:.2f}" for g, v in paired[1].items()) + "/GPU-hour; TPOT limits both nodes reach: "
                 + (", ".join(f"{x:g}" for x in levels) + " ms" if levels else "none"))
    else:
        text += "\n\nno price source prices both the MI355X and the B300: no cost-against-interactivity figure"
    return LatencyPrices(table, q, text, view, cost, paired, levels)
