"""Finding 4: throughput, performance per dollar, cost per million tokens, power.

Units (every name says which):

- ``tok_s``: output tokens per second **for the whole deployment** (all ``num_gpus``
  GPUs together) unless a name says ``per_gpu`` or ``per_node``;
- ``usd_per_gpu_hour``: US dollars for one GPU for one hour;
- ``tok_s_per_dollar_hour``: the article's "tok/s/$" = deployment tok/s divided by the
  deployment's $/hour (952 / (8 × 2.50) = 47.6);
- ``usd_per_million_tokens``: InferenceX's definition,
  $/GPU-hour × 1e6 / (tok/s per GPU × 3600);
- power in W (board power per GPU), electricity in $/kWh, PUE dimensionless (≥ 1).

Data: ``data/article_table.yaml`` (the article's self-reported table) and
``data/prices.yaml`` (prices by tier, source and date). Nothing here types in a result.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import yaml

from .paths import data_path
from .specs import known_gpus, load_gpu

SECONDS_PER_HOUR = 3600.0
TOK_S_UNITS = ("tok/s per deployment", "tok/s per node", "tok/s per GPU")
PRICE_UNIT = "USD/GPU-hour"


# --------------------------------------------------------------------------- checks


def _positive(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if v <= 0:
        raise ValueError(f"{name} must be positive, got {v!r}")
    return float(v)


def _non_negative(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    return float(v)


def _gpu_count(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if v <= 0:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return v


# --------------------------------------------------------------------------- core formulas


def tok_s_per_gpu(tok_s: float, num_gpus: int) -> float:
    """Deployment tok/s → tok/s per GPU."""
    return _positive("tok_s", tok_s) / _gpu_count("num_gpus", num_gpus)


def deployment_usd_per_hour(num_gpus: int, usd_per_gpu_hour: float) -> float:
    """$/hour of ``num_gpus`` GPUs at ``usd_per_gpu_hour`` each."""
    return _gpu_count("num_gpus", num_gpus) * _positive("usd_per_gpu_hour", usd_per_gpu_hour)


def tok_s_per_dollar_hour(tok_s: float, num_gpus: int, usd_per_gpu_hour: float) -> float:
    """The article's "tok/s/$": deployment tok/s ÷ deployment $/hour.

    ``tok_s`` is for all ``num_gpus`` GPUs together (tok/s per deployment).
    Example: 952 tok/s on 8 GPUs at 2.50 $/GPU-hour → 952 / 20 = 47.6.
    """
    return _positive("tok_s", tok_s) / deployment_usd_per_hour(num_gpus, usd_per_gpu_hour)


def tokens_per_dollar(tok_s: float, num_gpus: int, usd_per_gpu_hour: float) -> float:
    """Output tokens bought by one US dollar = tok/s/$ × 3600 s/h."""
    return tok_s_per_dollar_hour(tok_s, num_gpus, usd_per_gpu_hour) * SECONDS_PER_HOUR


def usd_per_million_tokens(tok_s: float, num_gpus: int, usd_per_gpu_hour: float) -> float:
    """InferenceX's cost per million output tokens:
    $/GPU-hour × 1e6 / (tok/s per GPU × 3600)."""
    per_gpu = tok_s_per_gpu(tok_s, num_gpus)
    return _positive("usd_per_gpu_hour", usd_per_gpu_hour) * 1e6 / (per_gpu * SECONDS_PER_HOUR)


def to_deployment_tok_s(value: float, unit: str, num_gpus: int, gpus_per_node: int) -> float:
    """Convert a throughput in ``unit`` (one of :data:`TOK_S_UNITS`) to tok/s per deployment."""
    v = _positive("throughput", value)
    n = _gpu_count("num_gpus", num_gpus)
    g = _gpu_count("gpus_per_node", gpus_per_node)
    if n % g:
        raise ValueError(f"num_gpus={n} is not a whole number of {g}-GPU nodes")
    if unit == "tok/s per deployment":
        return v
    if unit == "tok/s per node":
        return v * (n // g)
    if unit == "tok/s per GPU":
        return v * n
    raise ValueError(f"unknown throughput unit {unit!r}; expected one of {TOK_S_UNITS}")


# --------------------------------------------------------------------------- electricity


def electricity_usd_per_gpu_hour(board_power_w: float, pue: float, usd_per_kwh: float) -> float:
    """Electricity cost of one GPU for one hour: W/1000 × PUE × $/kWh."""
    p = _positive("board_power_w", board_power_w)
    pue = _positive("pue", pue)
    if pue < 1:
        raise ValueError(f"pue must be >= 1 (facility power / IT power), got {pue}")
    return p / 1000.0 * pue * _non_negative("usd_per_kwh", usd_per_kwh)


def joules_per_token(tok_s: float, num_gpus: int, board_power_w: float) -> float:
    """Board energy per output token (J/token) = num_gpus × W / deployment tok/s."""
    return _gpu_count("num_gpus", num_gpus) * _positive("board_power_w", board_power_w) / _positive("tok_s", tok_s)


def breakeven_usd_per_kwh(a: dict, b: dict, pue: float) -> float | None:
    """The $/kWh at which deployment ``a``'s perf/$ equals ``b``'s, power included.

    ``a``/``b``: dicts with ``tok_s`` (deployment), ``num_gpus``, ``usd_per_gpu_hour``,
    ``board_power_w``. Cost per hour of a deployment = n × (price + W/1000 × PUE × k).
    Solves tA / (nA (pA + wA u)) = tB / (nB (pB + wB u)) for u = PUE × k / 1000 ($/Wh),
    linear in u. Returns k in $/kWh, or None when no crossing exists at k ≥ 0
    (the ordering at k = 0 then holds for every electricity price, or never held).
    """
    _positive("pue", pue)
    ta, tb = _positive("a.tok_s", a["tok_s"]), _positive("b.tok_s", b["tok_s"])
    na, nb = _gpu_count("a.num_gpus", a["num_gpus"]), _gpu_count("b.num_gpus", b["num_gpus"])
    pa, pb = _positive("a.usd_per_gpu_hour", a["usd_per_gpu_hour"]), _positive("b.usd_per_gpu_hour", b["usd_per_gpu_hour"])
    wa, wb = _positive("a.board_power_w", a["board_power_w"]), _positive("b.board_power_w", b["board_power_w"])
    # per-GPU throughputs make the n's cancel into the equation below
    xa, xb = ta / na, tb / nb
    # xa (pb + wb u) = xb (pa + wa u)  →  u (xa wb − xb wa) = xb pa − xa pb
    denom = xa * wb - xb * wa
    num = xb * pa - xa * pb
    if denom == 0:
        return None
    u = num / denom
    if u < 0:
        return None
    return u * 1000.0 / pue


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class TableRow:
    """One row of the article's table, with throughput normalised to tok/s per deployment."""

    id: str
    label: str
    gpu: str
    num_gpus: int
    gpus_per_node: int
    tp: int
    pp: int
    dcp: int
    tok_s: float
    usd_per_gpu_hour: float
    tok_s_per_dollar_hour_claimed: float
    concurrency: int | None
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def num_nodes(self) -> int:
        return self.num_gpus // self.gpus_per_node

    @property
    def tok_s_per_node(self) -> float:
        return self.tok_s / self.num_nodes

    @property
    def tok_s_per_gpu(self) -> float:
        return self.tok_s / self.num_gpus


_ROW_KEYS = ("id", "label", "gpu", "num_gpus", "gpus_per_node", "tp", "pp", "dcp", "tok_s",
             "tok_s_unit", "usd_per_gpu_hour", "tok_s_per_dollar_hour", "concurrency")


def parse_table(doc: dict, where: str = "article table") -> dict[str, TableRow]:
    """Validate an article-table document (the shape of ``data/article_table.yaml``)."""
    if not isinstance(doc, dict) or "configs" not in doc or "source" not in doc:
        raise ValueError(f"{where}: expected top-level 'source' and 'configs'")
    gpus = known_gpus()
    out: dict[str, TableRow] = {}
    for i, row in enumerate(doc["configs"]):
        missing = [k for k in _ROW_KEYS if k not in row]
        if missing:
            raise ValueError(f"{where}: config #{i} ({row.get('id')!r}) lacks {missing}")
        rid = row["id"]
        if rid in out:
            raise ValueError(f"{where}: duplicate config id {rid!r}")
        if row["gpu"] not in gpus:
            raise ValueError(f"{where}: config {rid!r}: unknown GPU {row['gpu']!r}; known GPUs: {', '.join(gpus)}")
        n = _gpu_count(f"{rid}.num_gpus", row["num_gpus"])
        g = _gpu_count(f"{rid}.gpus_per_node", row["gpus_per_node"])
        for k in ("tp", "pp", "dcp"):
            _gpu_count(f"{rid}.{k}", row[k])
        if row["tp"] * row["pp"] != n:
            raise ValueError(f"{where}: config {rid!r}: tp × pp = {row['tp'] * row['pp']} != num_gpus {n}")
        try:
            tok = to_deployment_tok_s(row["tok_s"], row["tok_s_unit"], n, g)
        except ValueError as e:
            raise ValueError(f"{where}: config {rid!r}: {e}") from None
        c = row["concurrency"]
        if c is not None:
            _gpu_count(f"{rid}.concurrency", c)
        out[rid] = TableRow(
            id=rid, label=str(row["label"]), gpu=row["gpu"], num_gpus=n, gpus_per_node=g,
            tp=row["tp"], pp=row["pp"], dcp=row["dcp"], tok_s=tok,
            usd_per_gpu_hour=_positive(f"{rid}.usd_per_gpu_hour", row["usd_per_gpu_hour"]),
            tok_s_per_dollar_hour_claimed=_positive(f"{rid}.tok_s_per_dollar_hour", row["tok_s_per_dollar_hour"]),
            concurrency=c, raw=dict(row))
    return out


@functools.lru_cache(maxsize=None)
def _load_yaml(name: str) -> dict:
    with open(data_path(name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def article_table() -> dict[str, TableRow]:
    """The article's table (``data/article_table.yaml``), by config id."""
    return parse_table(_load_yaml("article_table.yaml"), "data/article_table.yaml")


def article_workload() -> dict:
    """The benchmark workload of the article's table (input/output lengths in tokens)."""
    return dict(_load_yaml("article_table.yaml")["workload"])


def measured_points():
    """Every throughput point the article gives, one row per (config, concurrency).

    Columns: point, config, label, gpu, num_gpus, concurrency (NaN if unstated),
    tok_s (per deployment), tok_s_per_gpu, derivation. Derived points (e.g. the peak
    before the top-k fix) are computed here from their base row and the article's factor.
    """
    import pandas as pd

    table = article_table()
    doc = _load_yaml("article_table.yaml")
    rows = []
    for r in table.values():
        rows.append({"point": r.id, "config": r.id, "label": r.label, "gpu": r.gpu,
                     "num_gpus": r.num_gpus, "concurrency": r.concurrency, "tok_s": r.tok_s,
                     "tok_s_per_gpu": r.tok_s_per_gpu, "derivation": "article table"})
    for d in doc.get("derived_points", []) or []:
        base = table.get(d.get("base"))
        if base is None:
            raise ValueError(f"data/article_table.yaml: derived point {d.get('id')!r} names unknown base {d.get('base')!r}")
        f = _positive(f"{d['id']}.divide_by", d["divide_by"])
        tok = base.tok_s / f
        rows.append({"point": d["id"], "config": base.id, "label": d["label"], "gpu": base.gpu,
                     "num_gpus": base.num_gpus, "concurrency": d.get("concurrency"), "tok_s": tok,
                     "tok_s_per_gpu": tok / base.num_gpus,
                     "derivation": f"{base.id} tok/s / {f:g}"})
    df = pd.DataFrame(rows)
    df["concurrency"] = df["concurrency"].astype("Float64")
    return df


def parse_prices(doc: dict, where: str = "prices") -> "pd.DataFrame":  # noqa: F821
    """Validate a prices document (the shape of ``data/prices.yaml``) → DataFrame
    (tier, gpu, usd_per_gpu_hour, source, source_date, description)."""
    import pandas as pd

    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a mapping")
    unit = doc.get("unit")
    if unit != PRICE_UNIT:
        raise ValueError(f"{where}: prices must be in {PRICE_UNIT!r}, got unit {unit!r}")
    sources, tiers = doc.get("sources") or {}, doc.get("tiers") or {}
    for t, spec in tiers.items():
        if spec.get("source") not in sources:
            raise ValueError(f"{where}: tier {t!r} cites unknown source {spec.get('source')!r}")
        if not sources[spec["source"]].get("date"):
            raise ValueError(f"{where}: source {spec['source']!r} has no date")
    gpus = known_gpus()
    rows, seen = [], set()
    for i, p in enumerate(doc.get("prices") or []):
        for k in ("tier", "gpu", "usd_per_gpu_hour"):
            if k not in p:
                raise ValueError(f"{where}: price #{i} lacks {k!r}")
        if set(p) - {"tier", "gpu", "usd_per_gpu_hour"}:
            raise ValueError(f"{where}: price #{i} has unexpected keys {sorted(set(p) - {'tier', 'gpu', 'usd_per_gpu_hour'})}"
                             f" (prices are in {PRICE_UNIT} only)")
        if p["tier"] not in tiers:
            raise ValueError(f"{where}: price #{i} names unknown tier {p['tier']!r}")
        if p["gpu"] not in gpus:
            raise ValueError(f"{where}: price #{i}: unknown GPU {p['gpu']!r}; known GPUs: {', '.join(gpus)}")
        if (p["tier"], p["gpu"]) in seen:
            raise ValueError(f"{where}: duplicate price for {p['gpu']} in tier {p['tier']}")
        seen.add((p["tier"], p["gpu"]))
        src = tiers[p["tier"]]["source"]
        rows.append({"tier": p["tier"], "gpu": p["gpu"],
                     "usd_per_gpu_hour": _positive(f"{where}: price #{i}", p["usd_per_gpu_hour"]),
                     "source": src, "source_date": str(sources[src]["date"]),
                     "description": tiers[p["tier"]].get("description", "")})
    df = pd.DataFrame(rows)
    order = {t: i for i, t in enumerate(tiers)}
    df["_o"] = df["tier"].map(order)
    return df.sort_values(["_o", "gpu"], kind="stable").drop(columns="_o").reset_index(drop=True)


def prices():
    """All prices of ``data/prices.yaml`` as a DataFrame (see :func:`parse_prices`)."""
    return parse_prices(_load_yaml("prices.yaml"), "data/prices.yaml")


def price_tiers() -> list[str]:
    """Tier names in the order of ``data/prices.yaml``."""
    return list(_load_yaml("prices.yaml")["tiers"])


def electricity_assumptions() -> dict:
    """The electricity sweep (PUE values, $/kWh range) of ``data/prices.yaml``."""
    return dict(_load_yaml("prices.yaml")["electricity_assumptions"])


def price(gpu: str, tier: str) -> float:
    """$/GPU-hour of ``gpu`` in ``tier``; ValueError if that tier has no price for it."""
    df = prices()
    if tier not in set(df["tier"]):
        raise ValueError(f"unknown price tier {tier!r}; known: {', '.join(price_tiers())}")
    hit = df[(df["tier"] == tier) & (df["gpu"] == gpu)]
    if hit.empty:
        raise ValueError(f"price tier {tier!r} has no price for GPU {gpu!r}")
    return float(hit["usd_per_gpu_hour"].iloc[0])


# --------------------------------------------------------------------------- tables


def recompute_table():
    """The article's table recomputed from its own throughput and price columns.

    One row per config: tok/s (deployment, per node, per GPU), $/hour, tok/s/$ (exact,
    the article's), tokens per $, $/M tokens (InferenceX).
    """
    import pandas as pd

    rows = []
    for r in article_table().values():
        rows.append({
            "config": r.label, "gpu": r.gpu, "num_gpus": r.num_gpus,
            "tok_s_deployment": r.tok_s, "tok_s_per_node": r.tok_s_per_node,
            "tok_s_per_gpu": r.tok_s_per_gpu, "usd_per_gpu_hour": r.usd_per_gpu_hour,
            "usd_per_hour_deployment": deployment_usd_per_hour(r.num_gpus, r.usd_per_gpu_hour),
            "tok_s_per_dollar_hour": tok_s_per_dollar_hour(r.tok_s, r.num_gpus, r.usd_per_gpu_hour),
            "tok_s_per_dollar_hour_article": r.tok_s_per_dollar_hour_claimed,
            "tokens_per_dollar": tokens_per_dollar(r.tok_s, r.num_gpus, r.usd_per_gpu_hour),
            "usd_per_million_tokens": usd_per_million_tokens(r.tok_s, r.num_gpus, r.usd_per_gpu_hour),
        })
    return pd.DataFrame(rows)


def perf_per_dollar_by_tier():
    """perf/$ and $/M tokens of each article config under every price tier that prices its GPU.

    Columns: tier, config, gpu, usd_per_gpu_hour, tok_s_per_dollar_hour,
    usd_per_million_tokens, source, source_date.
    """
    import pandas as pd

    pr = prices()
    rows = []
    for tier in price_tiers():
        for r in article_table().values():
            hit = pr[(pr["tier"] == tier) & (pr["gpu"] == r.gpu)]
            if hit.empty:
                continue
            p = float(hit["usd_per_gpu_hour"].iloc[0])
            rows.append({"tier": tier, "config": r.label, "gpu": r.gpu, "usd_per_gpu_hour": p,
                         "tok_s_per_dollar_hour": tok_s_per_dollar_hour(r.tok_s, r.num_gpus, p),
                         "usd_per_million_tokens": usd_per_million_tokens(r.tok_s, r.num_gpus, p),
                         "source": hit["source"].iloc[0], "source_date": hit["source_date"].iloc[0]})
    return pd.DataFrame(rows)


def _deployment(row: TableRow, usd_per_gpu_hour: float, board_power_w: float | None = None) -> dict:
    w = load_gpu(row.gpu).board_power_w if board_power_w is None else board_power_w
    return {"tok_s": row.tok_s, "num_gpus": row.num_gpus, "usd_per_gpu_hour": usd_per_gpu_hour,
            "board_power_w": w}


def power_breakevens(a_id: str = "mi355x_tp8", b_id: str = "b300_tp8_dcp", pue_values=None,
                     board_power_w: dict | None = None):
    """Breakeven $/kWh (where ``a``'s perf/$ lead over ``b`` vanishes) per tier × PUE.

    Board power per GPU from ``data/hardware.yaml`` unless ``board_power_w`` maps a GPU
    key to another figure (e.g. the article's 1,200 W B200). Columns: tier, pue,
    lead_at_zero_power (a's perf/$ ÷ b's − 1), breakeven_usd_per_kwh (NaN: no crossing).
    """
    import pandas as pd

    table = article_table()
    for k in (a_id, b_id):
        if k not in table:
            raise ValueError(f"unknown config {k!r}; known: {', '.join(table)}")
    a, b = table[a_id], table[b_id]
    pues = electricity_assumptions()["pue"] if pue_values is None else list(pue_values)
    bw = board_power_w or {}
    pr = prices()
    rows = []
    for tier in price_tiers():
        pa = pr[(pr["tier"] == tier) & (pr["gpu"] == a.gpu)]
        pb = pr[(pr["tier"] == tier) & (pr["gpu"] == b.gpu)]
        if pa.empty or pb.empty:
            continue
        da = _deployment(a, float(pa["usd_per_gpu_hour"].iloc[0]), bw.get(a.gpu))
        db = _deployment(b, float(pb["usd_per_gpu_hour"].iloc[0]), bw.get(b.gpu))
        lead = (tok_s_per_dollar_hour(da["tok_s"], da["num_gpus"], da["usd_per_gpu_hour"])
                / tok_s_per_dollar_hour(db["tok_s"], db["num_gpus"], db["usd_per_gpu_hour"]) - 1)
        for pue in pues:
            k = breakeven_usd_per_kwh(da, db, pue)
            rows.append({"tier": tier, "pue": float(pue), "lead_at_zero_power": lead,
                         "breakeven_usd_per_kwh": float("nan") if k is None else k})
    return pd.DataFrame(rows)


def perf_per_dollar_with_power(config_id: str, tier: str, pue: float, usd_per_kwh,
                               board_power_w: float | None = None):
    """tok/s per ($/hour) of a config with electricity added, for each $/kWh in ``usd_per_kwh``."""
    import numpy as np

    row = article_table()[config_id]
    p = price(row.gpu, tier)
    w = load_gpu(row.gpu).board_power_w if board_power_w is None else board_power_w
    ks = np.asarray(list(usd_per_kwh), dtype=float)
    return np.array([tok_s_per_dollar_hour(row.tok_s, row.num_gpus,
                                           p + electricity_usd_per_gpu_hour(w, pue, float(k)))
                     for k in ks])


# --------------------------------------------------------------------------- rounding verdicts


def decimals_of(claimed) -> int:
    """Decimal places a number was stated with (48 → 0, 1.65 → 2, 0.333 → 3)."""
    x = _non_negative("claimed", abs(claimed) if isinstance(claimed, (int, float)) else claimed)
    s = repr(x)
    if "e" in s or "." not in s:
        return 0
    frac = s.split(".")[1]
    return 0 if frac == "0" else len(frac)


def _round_half_up(x: float, nd: int) -> float:
    q = 10.0 ** nd
    return math.floor(x * q + 0.5) / q


def rounding_verdict(claimed: float, exact: float, from_rounded: float | None = None,
                     own_inputs: bool = False) -> str:
    """Verdict for a number the article states to some precision.

    ``reproduced``: the exact value, rounded (half up) to the claim's stated decimals,
    equals the claim. ``consistent``: it does not, but the same computation on the
    article's own *rounded* inputs (``from_rounded``) does: the article rounded first.
    ``discrepancy`` otherwise, or ``corrected`` when ``own_inputs`` says the exact value
    comes from the article's own inputs (the article contradicts itself).
    """
    nd = decimals_of(claimed)
    if _round_half_up(exact, nd) == _round_half_up(float(claimed), nd):
        return "reproduced"
    if from_rounded is not None and _round_half_up(from_rounded, nd) == _round_half_up(float(claimed), nd):
        return "consistent"
    return "corrected" if own_inputs else "discrepancy"


def article_ratios():
    """The article's ratios recomputed from its table, each with a verdict.

    Columns: claim_id, what, claimed, exact, from_rounded, verdict, note.
    ``exact`` uses the table's throughputs and prices; ``from_rounded`` uses the
    article's rounded tok/s/$ column (48 / 33 / 7) where the article seems to have.
    """
    import pandas as pd

    from . import claims

    t = article_table()
    m, b3, b2 = t["mi355x_tp8"], t["b300_tp8_dcp"], t["b200_tp16"]
    pm = tok_s_per_dollar_hour(m.tok_s, m.num_gpus, m.usd_per_gpu_hour)
    p3 = tok_s_per_dollar_hour(b3.tok_s, b3.num_gpus, b3.usd_per_gpu_hour)
    p2 = tok_s_per_dollar_hour(b2.tok_s, b2.num_gpus, b2.usd_per_gpu_hour)
    rm, r3, r2 = m.tok_s_per_dollar_hour_claimed, b3.tok_s_per_dollar_hour_claimed, b2.tok_s_per_dollar_hour_claimed
    rows = []

    def add(cid, what, claimed, exact, from_rounded=None, note="", own_inputs=False):
        rows.append({"claim_id": cid, "what": what, "claimed": float(claimed), "exact": exact,
                     "from_rounded": float("nan") if from_rounded is None else from_rounded,
                     "verdict": rounding_verdict(claimed, exact, from_rounded, own_inputs),
                     "note": note})

    add("T4", "B300 / MI355X tok/s per node", claims.get("T4").claimed, b3.tok_s_per_node / m.tok_s_per_node)
    for cid_part, row, exact, claimed in (("MI355X", m, pm, rm), ("B300", b3, p3, r3), ("B200", b2, p2, r2)):
        add("T6", f"{cid_part} tok/s per $/hour", claimed, exact)
    add("T7", "MI355X perf/$ lead over B300, %", claims.get("T7").claimed, (pm / p3 - 1) * 100,
        (rm / r3 - 1) * 100, "the article divided its rounded 48 by 33")
    add("T8", "MI355X perf/$ ÷ B200 perf/$, x", claims.get("T8").claimed, pm / p2, rm / r2,
        "the article divided its rounded 48 by 7")
    add("T9", "B300 $/GPU-h ÷ MI355X $/GPU-h, x", claims.get("T9").claimed,
        b3.usd_per_gpu_hour / m.usd_per_gpu_hour)
    add("T10", "MI355X $/GPU-h ÷ B300 $/GPU-h (fraction)", claims.get("T10").claimed,
        m.usd_per_gpu_hour / b3.usd_per_gpu_hour, None,
        "'a third' contradicts the article's own '2.4x cheaper' (1/2.4 = 0.417)", own_inputs=True)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures


ARTICLE_TIERS = ("article", "article_rate_check")


def price_check():
    """Each article price against the independent tiers' prices for the same GPU.

    Independent means not taken from the article: the ``article_rate_check`` tier (the
    article's own "independent rate checks", copied from its text) is excluded too, so the
    article is never checked against itself.

    Columns: gpu, article_usd_per_gpu_hour, other_min, other_max, within_public_range,
    and the B300 ÷ MI355X price ratio per tier is in :func:`price_ratio_by_tier`.
    """
    import pandas as pd

    pr = prices()
    rows = []
    for gpu in sorted(set(pr[pr["tier"] == "article"]["gpu"])):
        art = price(gpu, "article")
        other = pr[(pr["gpu"] == gpu) & ~pr["tier"].isin(ARTICLE_TIERS)]["usd_per_gpu_hour"]
        rows.append({"gpu": gpu, "article_usd_per_gpu_hour": art, "other_min": float(other.min()),
                     "other_max": float(other.max()),
                     "within_public_range": bool(other.min() <= art <= other.max())})
    return pd.DataFrame(rows)


def price_ratio_by_tier(num: str = "b300", den: str = "mi355x"):
    """$/GPU-hour of ``num`` ÷ ``den`` in every tier that prices both."""
    import pandas as pd

    rows = []
    for tier in price_tiers():
        try:
            rows.append({"tier": tier, "ratio": price(num, tier) / price(den, tier)})
        except ValueError:
            continue
    return pd.DataFrame(rows)


def perf_per_dollar_figure(df):
    """Bars of tok/s per $/hour and $/M tokens per config, grouped by price tier."""
    import matplotlib.pyplot as plt
    import numpy as np

    tiers = [t for t in price_tiers() if t in set(df["tier"])]
    configs = list(dict.fromkeys(df["config"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    width = 0.8 / len(configs)
    x = np.arange(len(tiers))
    for metric, ax, title in (("tok_s_per_dollar_hour", axes[0], "tok/s per $/hour (higher is better)"),
                              ("usd_per_million_tokens", axes[1], "$ per million output tokens (lower is better)")):
        for i, cfg in enumerate(configs):
            vals = [df[(df["tier"] == t) & (df["config"] == cfg)][metric] for t in tiers]
            ys = [float(v.iloc[0]) if len(v) else np.nan for v in vals]
            ax.bar(x + (i - (len(configs) - 1) / 2) * width, ys, width, label=cfg)
        ax.set_xticks(x, [t.replace("_", "\n") for t in tiers], fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    from matplotlib.ticker import FuncFormatter

    axes[1].set_yscale("log")
    axes[1].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes[1].yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if v in (3, 5, 20, 50) else ""))
    axes[0].legend(fontsize=8)
    fig.suptitle("The article's throughputs under each price source ($/GPU-hour, see data/prices.yaml)", fontsize=11)
    fig.tight_layout()
    return fig


def power_figure(tiers=("article", "inferencex_3yr_rental"), pue: float = 1.3,
                 a_id: str = "mi355x_tp8", b_id: str = "b300_tp8_dcp"):
    """perf/$ vs electricity price for two configs under a few price tiers (board power
    from data/hardware.yaml × PUE), with the breakeven $/kWh marked."""
    import matplotlib.pyplot as plt
    import numpy as np

    lo, hi = electricity_assumptions()["usd_per_kwh_range"]
    table = article_table()
    fig, axes = plt.subplots(1, len(tiers), figsize=(5.5 * len(tiers), 3.8), squeeze=False)
    for ax, tier in zip(axes[0], tiers):
        be = power_breakevens(a_id, b_id, [pue])
        k_star = float(be[be["tier"] == tier]["breakeven_usd_per_kwh"].iloc[0])
        top = max(hi, k_star * 1.15) if np.isfinite(k_star) else hi
        ks = np.linspace(lo, top, 121)
        for cid in (a_id, b_id):
            ax.plot(ks, perf_per_dollar_with_power(cid, tier, pue, ks), label=table[cid].label)
        if np.isfinite(k_star):
            ax.axvline(k_star, color="k", ls="--", lw=1)
            lo_y, hi_y = ax.get_ylim()
            ax.annotate(f"MI355X lead vanishes\nat {k_star:.2f} $/kWh", (k_star, lo_y + 0.55 * (hi_y - lo_y)),
                        xytext=(8, 0), textcoords="offset points", ha="left", fontsize=8)
        ax.set_title(f"prices: {tier}, PUE {pue:g} (assumed)", fontsize=10)
        ax.set_xlabel("electricity, $/kWh")
        ax.set_ylabel("tok/s per $/hour")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
