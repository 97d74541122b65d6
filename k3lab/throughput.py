"""Finding 4: the article's throughput table, and the formulas of performance per dollar.

Units (every name says which):

- ``tok_s``: output tokens per second **for the whole deployment** (all ``num_gpus`` GPUs)
  unless a name says ``per_gpu`` or ``per_node``;
- ``usd_per_gpu_hour``: US dollars for one GPU for one hour;
- ``tok_s_per_dollar_hour``: the article's "tok/s/$" = deployment tok/s divided by the
  deployment's $/hour (952 / (8 × 2.50) = 47.6);
- ``usd_per_million_tokens``: InferenceX's definition, $/GPU-hour × 1e6 / (tok/s per GPU × 3600).

Data: ``data/article_table.yaml`` (the article's self-reported table; its prices live once,
in ``data/prices.yaml`` under the article tier). Prices by source: :mod:`k3lab.prices`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import data
from .data import check_count, check_finite
from .specs import Deployment

SECONDS_PER_HOUR = 3600.0
TOK_S_UNITS = ("tok/s per deployment", "tok/s per node", "tok/s per GPU")


# --------------------------------------------------------------------------- formulas


def tok_s_per_gpu(tok_s: float, num_gpus: int) -> float:
    """Deployment tok/s → tok/s per GPU."""
    return check_finite("tok_s", tok_s) / check_count("num_gpus", num_gpus)


def deployment_usd_per_hour(num_gpus: int, usd_per_gpu_hour: float) -> float:
    """$/hour of ``num_gpus`` GPUs at ``usd_per_gpu_hour`` each."""
    return check_count("num_gpus", num_gpus) * check_finite("usd_per_gpu_hour", usd_per_gpu_hour)


def tok_s_per_dollar_hour(tok_s: float, num_gpus: int, usd_per_gpu_hour: float) -> float:
    """The article's "tok/s/$": deployment tok/s ÷ deployment $/hour.

    Example: 952 tok/s on 8 GPUs at 2.50 $/GPU-hour → 952 / 20 = 47.6.
    """
    return check_finite("tok_s", tok_s) / deployment_usd_per_hour(num_gpus, usd_per_gpu_hour)


def tokens_per_dollar(tok_s: float, num_gpus: int, usd_per_gpu_hour: float) -> float:
    """Output tokens bought by one US dollar = tok/s/$ × 3600 s/h."""
    return tok_s_per_dollar_hour(tok_s, num_gpus, usd_per_gpu_hour) * SECONDS_PER_HOUR


def usd_per_million_tokens(tok_s: float, num_gpus: int, usd_per_gpu_hour: float) -> float:
    """InferenceX's cost per million output tokens: $/GPU-hour × 1e6 / (tok/s per GPU × 3600)."""
    per_gpu = tok_s_per_gpu(tok_s, num_gpus)
    return check_finite("usd_per_gpu_hour", usd_per_gpu_hour) * 1e6 / (per_gpu * SECONDS_PER_HOUR)


def to_deployment_tok_s(value: float, unit: str, num_gpus: int, gpus_per_node: int) -> float:
    """Convert a throughput in ``unit`` (one of :data:`TOK_S_UNITS`) to tok/s per deployment."""
    v = check_finite("throughput", value)
    n, g = check_count("num_gpus", num_gpus), check_count("gpus_per_node", gpus_per_node)
    if n % g:
        raise ValueError(f"num_gpus={n} is not a whole number of {g}-GPU nodes")
    if unit == "tok/s per deployment":
        return v
    if unit == "tok/s per node":
        return v * (n // g)
    if unit == "tok/s per GPU":
        return v * n
    raise ValueError(f"unknown throughput unit {unit!r}; expected one of {TOK_S_UNITS}")


# --------------------------------------------------------------------------- the article's table


@dataclass(frozen=True)
class TableRow:
    """One row of the article's table: a :class:`~k3lab.specs.Deployment`, its throughput
    (tok/s per deployment), its price (the article's $/GPU-hour) and the article's tok/s/$."""

    id: str
    deployment: Deployment
    tok_s: float
    usd_per_gpu_hour: float
    tok_s_per_dollar_hour_claimed: float
    concurrency: int | None

    @property
    def label(self) -> str:
        return self.deployment.label

    @property
    def gpu(self) -> str:
        return self.deployment.gpu

    @property
    def num_gpus(self) -> int:
        return self.deployment.num_gpus

    @property
    def tok_s_per_node(self) -> float:
        return self.tok_s / self.deployment.num_nodes

    @property
    def tok_s_per_gpu(self) -> float:
        return self.tok_s / self.num_gpus


def article_table() -> dict[str, TableRow]:
    """The article's table (``data/article_table.yaml`` + the article tier of prices), by id."""
    doc = data.load("article_table")
    prices = {p.gpu: p.usd_per_gpu_hour for p in data.load("prices").prices if p.tier == doc.price_tier}
    out = {}
    for c in doc.configs:
        dep = Deployment(c.gpu, c.num_gpus, c.tp, c.pp, dcp=c.dcp, gpus_per_node=c.gpus_per_node,
                         id=c.id, label=c.label)
        out[c.id] = TableRow(c.id, dep, to_deployment_tok_s(c.tok_s, c.tok_s_unit, c.num_gpus, c.gpus_per_node),
                             prices[c.gpu], c.tok_s_per_dollar_hour, c.concurrency)
    return out


def article_workload() -> dict:
    """The benchmark workload of the article's table (input / output lengths in tokens)."""
    w = data.load("article_table").workload
    return {"input_len_tokens": w.input_len_tokens, "output_len_tokens": w.output_len_tokens}


def measured_points():
    """Every throughput point the article gives, one row per (config, concurrency).

    Columns: point, config, label, gpu, num_gpus, concurrency (NA if unstated), tok_s (per
    deployment), tok_s_per_gpu, derivation. A derived point (the peak before the top-k fix)
    is its base row's tok/s divided by the article's factor.
    """
    import pandas as pd

    table = article_table()
    rows = [{"point": r.id, "config": r.id, "label": r.label, "gpu": r.gpu, "num_gpus": r.num_gpus,
             "concurrency": r.concurrency, "tok_s": r.tok_s, "tok_s_per_gpu": r.tok_s_per_gpu,
             "derivation": "article table"} for r in table.values()]
    for d in data.load("article_table").derived_points:
        base = table[d.base]
        tok = base.tok_s / d.divide_by
        rows.append({"point": d.id, "config": base.id, "label": d.label, "gpu": base.gpu,
                     "num_gpus": base.num_gpus, "concurrency": d.concurrency, "tok_s": tok,
                     "tok_s_per_gpu": tok / base.num_gpus, "derivation": f"{base.id} tok/s / {d.divide_by:g}"})
    df = pd.DataFrame(rows)
    df["concurrency"] = df["concurrency"].astype("Float64")
    return df


def recompute_table():
    """The article's table recomputed from its own throughput and price columns: tok/s
    (deployment, per node, per GPU), $/hour, tok/s/$ (exact and the article's), tokens per $,
    $/M tokens (InferenceX)."""
    import pandas as pd

    rows = []
    for r in article_table().values():
        rows.append({
            "config": r.label, "gpu": r.gpu, "num_gpus": r.num_gpus,
            "tok_s_deployment": r.tok_s, "tok_s_per_node": r.tok_s_per_node, "tok_s_per_gpu": r.tok_s_per_gpu,
            "usd_per_gpu_hour": r.usd_per_gpu_hour,
            "usd_per_hour_deployment": deployment_usd_per_hour(r.num_gpus, r.usd_per_gpu_hour),
            "tok_s_per_dollar_hour": tok_s_per_dollar_hour(r.tok_s, r.num_gpus, r.usd_per_gpu_hour),
            "tok_s_per_dollar_hour_article": r.tok_s_per_dollar_hour_claimed,
            "tokens_per_dollar": tokens_per_dollar(r.tok_s, r.num_gpus, r.usd_per_gpu_hour),
            "usd_per_million_tokens": usd_per_million_tokens(r.tok_s, r.num_gpus, r.usd_per_gpu_hour),
        })
    return pd.DataFrame(rows)


def article_ratios() -> dict:
    """The ratios the article states, recomputed from its table: exact (from the table's
    throughputs and prices) and from the article's rounded tok/s/$ column.

    Keys: ``b300_over_mi355x`` (tok/s per node), ``perf_per_dollar`` (exact, MI355X / B300
    / B200), ``perf_per_dollar_rounded`` (the article's 48 / 33 / 7), ``lead_vs_b300_pct``
    and ``lead_vs_b300_pct_rounded``, ``vs_b200_x`` / ``_rounded``, ``b300_price_over_mi355x``,
    ``mi355x_price_fraction_of_b300``, ``throughput_given_up_pct``, ``money_saved_pct``.
    """
    t = article_table()
    m, b3, b2 = t["mi355x_tp8"], t["b300_tp8_dcp"], t["b200_tp16"]
    pm, p3, p2 = (tok_s_per_dollar_hour(r.tok_s, r.num_gpus, r.usd_per_gpu_hour) for r in (m, b3, b2))
    rm, r3, r2 = (r.tok_s_per_dollar_hour_claimed for r in (m, b3, b2))
    return {
        "b300_over_mi355x": b3.tok_s_per_node / m.tok_s_per_node,
        "perf_per_dollar": [pm, p3, p2], "perf_per_dollar_rounded": [rm, r3, r2],
        "lead_vs_b300_pct": (pm / p3 - 1) * 100, "lead_vs_b300_pct_rounded": (rm / r3 - 1) * 100,
        "vs_b200_x": pm / p2, "vs_b200_x_rounded": rm / r2,
        "b300_price_over_mi355x": b3.usd_per_gpu_hour / m.usd_per_gpu_hour,
        "mi355x_price_fraction_of_b300": m.usd_per_gpu_hour / b3.usd_per_gpu_hour,
        "throughput_given_up_pct": (1 - m.tok_s_per_node / b3.tok_s_per_node) * 100,
        "money_saved_pct": (1 - m.usd_per_gpu_hour / b3.usd_per_gpu_hour) * 100,
    }
