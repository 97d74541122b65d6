"""Finding 4: what a GPU-hour costs, by source, kind and quality, and what power adds.

``data/prices.yaml`` holds every price once, in US dollars per GPU-hour, under a *tier*
(one source) of a *kind* (the article's own figures, on-demand list prices, reserved terms,
market indices and quotes, cost models), each with its *quality* (what the number is: a
provider's list price, a committed term, a market index, a second-hand quote, a cost model's
estimate, a placeholder) and the evidence. A price is one figure or, where its source gives only a
range (Ornn's B300 index, 5.00–7.25), a range: both ends are kept (``usd_low``/``usd_high``), a pair
with a range is a range of price ratios (:func:`price_pairs`), and a table that needs one figure
shows the range's middle beside its ends — never one end alone. **One rule** says which prices meet a rental rate
(:func:`is_rental_evidence`: an independent price of a rental quality; a placeholder never is),
used by T5, T18, T20, T21, ``compare`` and the decision box alike. Two GPUs' prices are
compared as a pair (:func:`price_pairs`): of one source and date where one exists, else
across sources of the same kind, labelled so. Electricity is an assumption swept by the notebook: board power ×
PUE × $/kWh added to each GPU-hour. A caller may override prices per GPU
(``usd_per_gpu_hour={"mi355x": 2.0}``, the notebook parameter of the same name) — shown as
the tier ``override``.

Units: $/GPU-hour, $/hour per deployment, W, $/kWh, tok/s per deployment.
"""

from __future__ import annotations

from . import data, limits
from .data import check_count, check_finite
from .spelling import did_you_mean
from .specs import known_gpus, load_gpu
from .throughput import article_table, tok_s_per_dollar_hour, usd_per_million_tokens

OVERRIDE_TIER = "override"


#: the qualities of a price a GPU-hour is rented at: a provider's list price or committed term, a
#: rental index, a quote (cost models and placeholders are not; the article's own are not independent)
RENTAL_QUALITIES = ("provider_list", "committed_term", "market_index", "second_hand_quote")


def is_rental_evidence(quality: str, independent: bool = True) -> bool:
    """**The one rule** deciding which prices meet a rental rate: an independent price whose quality
    is one of :data:`RENTAL_QUALITIES`. A placeholder (a figure its own source marks as a stand-in)
    is never evidence; a cost model's tier is not a price anyone rents at; the article's prices are
    what is being checked."""
    return bool(independent) and quality in RENTAL_QUALITIES


def prices(overrides: dict | None = None):
    """All prices as a DataFrame: tier, kind, independent, gpu, usd_per_gpu_hour (a range's middle),
    usd_low, usd_high (a range's ends; both the figure otherwise), is_range, quality, rental
    (:func:`is_rental_evidence`), provider, source, source_date, note (the evidence); plus one
    ``override`` row per GPU in ``overrides`` (GPU → $/GPU-hour)."""
    import pandas as pd

    doc = data.load("prices")
    rows = []
    for p in doc.prices:
        tier = doc.tiers[p.tier]
        src = doc.sources[tier.source]
        lo, hi = p.usd_range
        rows.append({"tier": p.tier, "kind": tier.kind, "independent": tier.independent, "gpu": p.gpu,
                     "usd_per_gpu_hour": (lo + hi) / 2, "usd_low": lo, "usd_high": hi, "is_range": lo != hi,
                     "quality": p.quality,
                     "rental": is_rental_evidence(p.quality, tier.independent), "provider": p.provider or "",
                     "source": tier.source, "source_date": src.date, "note": p.evidence})
    for gpu, v in sorted((overrides or {}).items()):
        if gpu not in known_gpus():
            raise ValueError(f"price override for unknown GPU {gpu!r}{did_you_mean(gpu, known_gpus())}; known GPUs: "
                             f"{', '.join(known_gpus())}")
        usd = float(limits.check("usd_per_gpu_hour", v, f"usd_per_gpu_hour[{gpu}]"))
        rows.append({"tier": OVERRIDE_TIER, "kind": "override", "independent": False, "gpu": gpu,
                     "usd_per_gpu_hour": usd, "usd_low": usd, "usd_high": usd, "is_range": False,
                     "quality": "override", "rental": False, "provider": "", "source": "user",
                     "source_date": "", "note": "given as a parameter"})
    order = {t: i for i, t in enumerate([*doc.tiers, OVERRIDE_TIER])}
    df = pd.DataFrame(rows)
    df["_o"] = df["tier"].map(order)
    return df.sort_values(["_o", "gpu"], kind="stable").drop(columns="_o").reset_index(drop=True)


#: a price of yours above this multiple of the highest known for its GPU is named (a node's price?)
SUSPICIOUS_FACTOR = 2.0


def price_warnings(overrides: dict | None) -> list[str]:
    """One sentence per price of yours (GPU → $/GPU-hour) above :data:`SUSPICIOUS_FACTOR` × the
    highest price ``data/prices.yaml`` knows for that GPU: most often a node's price (8 GPUs)
    typed as a GPU's. Nothing for a GPU without a known price."""
    pr = prices()
    out = []
    for gpu, v in sorted((overrides or {}).items()):
        known = pr[pr["gpu"] == gpu]
        if known.empty:
            continue
        top = known.loc[known["usd_high"].idxmax()]
        if v > SUSPICIOUS_FACTOR * top["usd_high"]:
            out.append(f"your {gpu.upper()} price ${v:,.2f}/GPU-hour is more than {SUSPICIOUS_FACTOR:g}x the highest "
                       f"known (${top['usd_high']:,.2f}, {top['tier']}): a node price? Prices are per GPU-hour "
                       f"(an 8-GPU node at ${v:,.2f}/hour is ${v / 8:,.2f} per GPU-hour)")
    return out


def check_priced_are_asked(typed: list[str], gpus: list[str] | None, command: str) -> None:
    """Raise ValueError (one line) where a ``--usd-per-gpu-hour GPU=PRICE`` of ``typed`` prices a GPU
    the ``--gpu`` list ``gpus`` leaves out: a price is a question about its GPU, never dropped
    silently nor judged unseen. Nothing without a ``--gpu`` list."""
    for item in typed:
        g = item.partition("=")[0].strip().lower()
        if gpus and g not in gpus:
            raise ValueError(f"--usd-per-gpu-hour {item} prices {g.upper()}, which the {command} was not asked about "
                             f"(--gpu {' --gpu '.join(gpus)}): add --gpu {g}, or drop that price")


def rental_prices(gpu: str | None = None):
    """The prices :func:`is_rental_evidence` admits (of ``gpu``, or every GPU), lowest (low end) first."""
    pr = prices()
    mine = pr[pr["rental"] & ((pr["gpu"] == gpu) if gpu else True)]
    return mine.sort_values(["usd_low", "tier"], kind="stable").reset_index(drop=True)


def tiers() -> list[str]:
    """Tier names in the order of ``data/prices.yaml``."""
    return list(data.load("prices").tiers)


def price(gpu: str, tier: str) -> float:
    """$/GPU-hour of ``gpu`` in ``tier`` (a range's middle: :func:`price_range` gives its ends);
    ValueError if that tier has no price for it."""
    lo, hi = price_range(gpu, tier)
    return (lo + hi) / 2


def price_range(gpu: str, tier: str) -> tuple[float, float]:
    """(low, high) $/GPU-hour of ``gpu`` in ``tier``, the same twice for a single figure;
    ValueError if that tier has no price for it."""
    doc = data.load("prices")
    if tier not in doc.tiers:
        raise ValueError(f"unknown price tier {tier!r}; known: {', '.join(doc.tiers)}")
    for p in doc.prices:
        if p.tier == tier and p.gpu == gpu:
            return p.usd_range
    raise ValueError(f"price tier {tier!r} has no price for GPU {gpu!r}")


def electricity_assumptions() -> dict:
    """The electricity sweep of ``data/prices.yaml`` (PUE values, $/kWh range and example)."""
    e = data.load("prices").electricity_assumptions
    return {"pue": list(e.pue), "usd_per_kwh_range": list(e.usd_per_kwh_range),
            "usd_per_kwh_example": e.usd_per_kwh_example}


def middle_pue() -> float:
    """The middle of ``data/prices.yaml``'s PUE sweep: the one PUE a single $/hour figure uses."""
    pues = sorted(electricity_assumptions()["pue"])
    return pues[len(pues) // 2]


def electricity_usd_per_gpu_hour(board_power_w: float, pue: float, usd_per_kwh: float) -> float:
    """Electricity cost of one GPU for one hour: W / 1000 × PUE × $/kWh."""
    p = check_finite("board_power_w", board_power_w)
    if check_finite("pue", pue) < 1:
        raise ValueError(f"pue must be >= 1 (facility power / IT power), got {pue}")
    k = check_finite("usd_per_kwh", usd_per_kwh, positive=False)
    if k < 0:
        raise ValueError(f"usd_per_kwh must be >= 0, got {usd_per_kwh!r}")
    return p / 1000.0 * pue * k


def joules_per_token(tok_s: float, num_gpus: int, board_power_w: float) -> float:
    """Board energy per output token (J/token) = num_gpus × W / deployment tok/s."""
    return check_count("num_gpus", num_gpus) * check_finite("board_power_w", board_power_w) / check_finite("tok_s", tok_s)


def breakeven_usd_per_kwh(a: dict, b: dict, pue: float) -> float | None:
    """The $/kWh at which deployment ``a``'s perf/$ equals ``b``'s, power included.

    ``a``/``b``: dicts with ``tok_s`` (deployment), ``num_gpus``, ``usd_per_gpu_hour``,
    ``board_power_w``. Cost per hour = n × (price + W/1000 × PUE × k). Solves
    tA / (nA (pA + wA u)) = tB / (nB (pB + wB u)) for u = PUE·k/1000 ($/Wh), linear in u.
    Returns k in $/kWh, or None when no crossing exists at k ≥ 0.
    """
    if check_finite("pue", pue) < 1:
        raise ValueError(f"pue must be >= 1 (facility power / IT power), got {pue}")
    xa = check_finite("a.tok_s", a["tok_s"]) / check_count("a.num_gpus", a["num_gpus"])
    xb = check_finite("b.tok_s", b["tok_s"]) / check_count("b.num_gpus", b["num_gpus"])
    pa, pb = check_finite("a.usd_per_gpu_hour", a["usd_per_gpu_hour"]), check_finite("b.usd_per_gpu_hour", b["usd_per_gpu_hour"])
    wa, wb = check_finite("a.board_power_w", a["board_power_w"]), check_finite("b.board_power_w", b["board_power_w"])
    # per-GPU throughputs make the n's cancel: xa (pb + wb u) = xb (pa + wa u)
    denom = xa * wb - xb * wa
    if denom == 0:
        return None
    u = (xb * pa - xa * pb) / denom
    return None if u < 0 else u * 1000.0 / pue


def perf_per_dollar_by_tier(overrides: dict | None = None):
    """perf/$ and $/M tokens of each article config under every tier that prices its GPU.

    Columns: tier, kind, quality, rental (:func:`is_rental_evidence`), config, gpu, usd_per_gpu_hour
    (a range's middle), usd_low, usd_high, is_range, tok_s_per_dollar_hour, usd_per_million_tokens
    (at usd_per_gpu_hour), source, source_date. Only the article's throughputs are used.
    """
    import pandas as pd

    pr = prices(overrides)
    rows = []
    for r in article_table().values():
        for p in pr[pr["gpu"] == r.gpu].itertuples():
            rows.append({"tier": p.tier, "kind": p.kind, "quality": p.quality, "rental": p.rental,
                         "config": r.label, "gpu": r.gpu,
                         "usd_per_gpu_hour": p.usd_per_gpu_hour, "usd_low": p.usd_low, "usd_high": p.usd_high,
                         "is_range": p.is_range,
                         "tok_s_per_dollar_hour": tok_s_per_dollar_hour(r.tok_s, r.num_gpus, p.usd_per_gpu_hour),
                         "usd_per_million_tokens": usd_per_million_tokens(r.tok_s, r.num_gpus, p.usd_per_gpu_hour),
                         "source": p.source, "source_date": p.source_date})
    order = {t: i for i, t in enumerate([*tiers(), OVERRIDE_TIER])}
    df = pd.DataFrame(rows)
    return df.sort_values(by="tier", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def rental_rate_range(gpu: str) -> dict:
    """Where a rental rate of ``gpu`` can sit by the prices :func:`is_rental_evidence` admits: from
    the lowest to the highest. No discount widens it (the data holds committed-term discounts for a
    few GPUs and providers only, :func:`committed_discounts`, none for every GPU). Keys: low, high,
    n_prices, dates, low_quality, low_evidence (what the lowest price is). ValueError if ``gpu``
    has no such price."""
    mine = rental_prices(gpu)
    if mine.empty:
        raise ValueError(f"no independent rental price ({'/'.join(RENTAL_QUALITIES)}) for {gpu} in data/prices.yaml")
    lo = mine.iloc[0]
    return {"low": float(lo["usd_low"]), "high": float(mine["usd_high"].max()),
            "n_prices": len(mine), "dates": sorted(set(mine["source_date"])), "low_quality": str(lo["quality"]),
            "low_evidence": f"{lo['note']}, {lo['source_date']}"}


def price_check():
    """Each article price against the independent rental prices of the same GPU
    (:func:`rental_rate_range`): like with like, the article's prices are rental rates, so they
    meet list prices, committed terms, indices and quotes, never a cost model's tier (shown
    separately by :func:`perf_per_dollar_by_tier`), a placeholder or the article's own "rate checks".
    Columns: gpu, article_usd_per_gpu_hour, n_prices, other_min, other_max, within_range, lowest_is."""
    import pandas as pd

    pr = prices()
    art = pr[pr["tier"] == data.load("article_table").price_tier]
    rows = []
    for g, a in zip(art["gpu"], art["usd_per_gpu_hour"]):
        r = rental_rate_range(g)
        rows.append({"gpu": g, "article_usd_per_gpu_hour": a, "n_prices": r["n_prices"],
                     "other_min": r["low"], "other_max": r["high"], "within_range": bool(r["low"] <= a <= r["high"]),
                     "lowest_is": f"{r['low_quality'].replace('_', ' ')} ({r['low_evidence']})"})
    return pd.DataFrame(rows)


def committed_discounts():
    """How far a committed term sits below the same provider's on-demand list price for the
    same GPU, from ``data/prices.yaml`` itself: one row per (gpu, provider) priced both ways.
    Columns: gpu, provider, on_demand_usd_per_gpu_hour, reserved_usd_per_gpu_hour, discount
    (fraction below list)."""
    import pandas as pd

    pr = prices()
    pr = pr[~pr["is_range"]]
    od = pr[(pr["quality"] == "provider_list") & (pr["provider"] != "")]
    rs = pr[(pr["quality"] == "committed_term") & (pr["provider"] != "")]
    rows = []
    for r in rs.itertuples():
        for o in od[(od["gpu"] == r.gpu) & (od["provider"] == r.provider)].itertuples():
            rows.append({"gpu": r.gpu, "provider": r.provider, "on_demand_usd_per_gpu_hour": o.usd_per_gpu_hour,
                         "reserved_usd_per_gpu_hour": r.usd_per_gpu_hour,
                         "discount": 1 - r.usd_per_gpu_hour / o.usd_per_gpu_hour})
    return pd.DataFrame(rows, columns=["gpu", "provider", "on_demand_usd_per_gpu_hour", "reserved_usd_per_gpu_hour",
                                       "discount"])


def price_pairs(a: str = "mi355x", b: str = "b300", overrides: dict | None = None) -> list[dict]:
    """The two GPUs' rental prices as pairs, like with like (the prices :func:`is_rental_evidence`
    admits): per kind of rental price, the tiers that price both (one source and date: ``paired``
    True); for a kind no tier prices both, every cross-source pair of that kind (``paired`` False,
    labelled with both sources and dates). Your ``overrides`` of both GPUs come first (kind
    ``override``). Each: kind, label, paired, a_tier, b_tier, a_usd, b_usd (per GPU-hour; a range's
    middle), a_low, a_high, b_low, b_high (a range's ends), ratio (a ÷ b at the middles), ratio_low
    (a_low ÷ b_high), ratio_high (a_high ÷ b_low), is_range, date, and ``name``: who priced them, in
    words ("Oracle's list prices", "TensorWave's quote against Ornn's index"). A price given as a range
    pairs as a range of ratios: never one end of a range against another source's figure."""
    pr = prices(overrides)
    out = []
    ov = pr[pr["tier"] == OVERRIDE_TIER].set_index("gpu")
    if {a, b} <= set(ov.index):
        out.append(_pair("override", "your prices", True, OVERRIDE_TIER, OVERRIDE_TIER, ov.loc[a], ov.loc[b], ""))
    rent = pr[pr["rental"]]
    for kind in dict.fromkeys(rent["kind"]):
        k = rent[rent["kind"] == kind]
        ka, kb = k[k["gpu"] == a], k[k["gpu"] == b]
        same = sorted(set(ka["tier"]) & set(kb["tier"]), key=list(pr["tier"]).index)
        if same:
            for t in same:
                x, y = ka[ka["tier"] == t].iloc[0], kb[kb["tier"] == t].iloc[0]
                out.append(_pair(kind, f"{t} ({kind}, {x['source_date']}, one source{_ranges(x, y, a, b)})", True, t,
                                 t, x, y, x["source_date"]))
            continue
        for _, x in ka.iterrows():
            for _, y in kb.iterrows():
                out.append(_pair(kind, f"{x['tier']} / {y['tier']} ({kind}, {x['source_date']} / {y['source_date']}, "
                                       f"cross-source{_ranges(x, y, a, b)})", False, x["tier"], y["tier"], x, y,
                                 f"{x['source_date']} / {y['source_date']}"))
    return out


def _ranges(x, y, a: str, b: str) -> str:
    """', B300 a range $5.00-$7.25' for the GPUs of a pair priced as a range (empty when neither is)."""
    return "".join(f", {g.upper()} a range ${r['usd_low']:.2f}-${r['usd_high']:.2f}"
                   for g, r in ((a, x), (b, y)) if r["is_range"])


#: what a price of each quality is called in a sentence
QUALITY_WORDS = {"provider_list": "list price", "committed_term": "committed term", "market_index": "index",
                 "second_hand_quote": "quote", "override": "price"}


def _name(x, y) -> str:
    """Who priced a pair, in words: "Oracle's list prices", "TensorWave's quote against Ornn's index"."""
    who = [(r["provider"] or r["tier"], QUALITY_WORDS.get(r["quality"], r["quality"].replace("_", " "))) for r in (x, y)]
    if x["tier"] == OVERRIDE_TIER:
        return "your prices"
    if who[0] == who[1]:
        return f"{who[0][0]}'s {who[0][1]}s"
    return " against ".join(f"{p}'s {q}" for p, q in who)


def _pair(kind, label, paired, ta, tb, x, y, date) -> dict:
    """One pair from two rows of :func:`prices` (``x`` of GPU a, ``y`` of GPU b)."""
    al, ah, bl, bh = (float(v) for v in (x["usd_low"], x["usd_high"], y["usd_low"], y["usd_high"]))
    pa, pb = float(x["usd_per_gpu_hour"]), float(y["usd_per_gpu_hour"])
    return {"kind": kind, "label": label, "name": _name(x, y), "paired": bool(paired), "a_tier": ta, "b_tier": tb,
            "a_usd": pa, "b_usd": pb,
            "a_low": al, "a_high": ah, "b_low": bl, "b_high": bh, "ratio": pa / pb, "ratio_low": al / bh,
            "ratio_high": ah / bl, "is_range": bool(x["is_range"] or y["is_range"]), "date": date}


def price_ratio_by_tier(num: str = "b300", den: str = "mi355x"):
    """$/GPU-hour of ``num`` ÷ ``den`` in every tier that prices both."""
    import pandas as pd

    pr = prices()
    rows = []
    for tier in tiers():
        a, b = pr[(pr["tier"] == tier) & (pr["gpu"] == num)], pr[(pr["tier"] == tier) & (pr["gpu"] == den)]
        if len(a) and len(b):
            rows.append({"tier": tier, "kind": a["kind"].iloc[0],
                         "ratio": float(a["usd_per_gpu_hour"].iloc[0] / b["usd_per_gpu_hour"].iloc[0])})
    return pd.DataFrame(rows)


def _deployment_cost(config_id: str, usd_per_gpu_hour: float, board_power_w: float | None = None) -> dict:
    r = article_table()[config_id]
    w = load_gpu(r.gpu).board_power_w if board_power_w is None else board_power_w
    return {"tok_s": r.tok_s, "num_gpus": r.num_gpus, "usd_per_gpu_hour": usd_per_gpu_hour, "board_power_w": w}


def power_breakevens(a_id: str = "mi355x_tp8", b_id: str = "b300_tp8_dcp", pue_values=None,
                     board_power_w: dict | None = None):
    """Breakeven $/kWh (where ``a``'s perf/$ lead over ``b`` vanishes) per tier × PUE.

    Board power per GPU from ``data/hardware.yaml`` unless ``board_power_w`` maps a GPU to
    another figure. Columns: tier, pue, lead_at_zero_power (a's perf/$ ÷ b's − 1),
    breakeven_usd_per_kwh (NaN: no crossing at any price of electricity).
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
    for tier in tiers():
        pa, pb = pr[(pr["tier"] == tier) & (pr["gpu"] == a.gpu)], pr[(pr["tier"] == tier) & (pr["gpu"] == b.gpu)]
        if pa.empty or pb.empty:
            continue
        da = _deployment_cost(a_id, float(pa["usd_per_gpu_hour"].iloc[0]), bw.get(a.gpu))
        db = _deployment_cost(b_id, float(pb["usd_per_gpu_hour"].iloc[0]), bw.get(b.gpu))
        lead = (tok_s_per_dollar_hour(da["tok_s"], da["num_gpus"], da["usd_per_gpu_hour"])
                / tok_s_per_dollar_hour(db["tok_s"], db["num_gpus"], db["usd_per_gpu_hour"]) - 1)
        for pue in pues:
            k = breakeven_usd_per_kwh(da, db, pue)
            rows.append({"tier": tier, "pue": float(pue), "lead_at_zero_power": lead,
                         "breakeven_usd_per_kwh": float("nan") if k is None else k})
    return pd.DataFrame(rows)


def perf_per_dollar_with_power(config_id: str, usd_per_gpu_hour: float, pue: float, usd_per_kwh,
                               board_power_w: float | None = None):
    """tok/s per ($/hour) of an article config with electricity added, for each $/kWh given."""
    import numpy as np

    d = _deployment_cost(config_id, usd_per_gpu_hour, board_power_w)
    ks = np.asarray(list(usd_per_kwh), dtype=float)
    return np.array([tok_s_per_dollar_hour(d["tok_s"], d["num_gpus"],
                                           usd_per_gpu_hour + electricity_usd_per_gpu_hour(d["board_power_w"], pue, float(k)))
                     for k in ks])
