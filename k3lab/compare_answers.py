"""What a comparison answers (:mod:`k3lab.compare` computes its rows): per price source the
cheapest layout that holds the request (:func:`answers`), the price ratio at which two of its
layouts cost the same per token (:func:`breakeven`, :func:`reading`), and your own prices judged
against it (:func:`user_verdict`). The decision's MI355X/B300 break-even is :func:`breakeven` on
the comparison's rows (:mod:`k3lab.decision`).

Columns read: ``usd_per_hour[<tier>]`` ($/hour for the whole deployment) and
``usd_per_million_tokens[<tier>]`` (+ ``_low`` / ``_high``: $ per million output tokens), named
by :data:`HOUR_PREFIX` and :data:`MTOK_PREFIX`; tok/s of output for the whole deployment.
"""

from __future__ import annotations

from . import prices

HOUR_PREFIX, MTOK_PREFIX = "usd_per_hour", "usd_per_million_tokens"
#: ``priced_by`` of a row priced at the user's ``--tok-s``, and what its latency is then
USER_TOK_S = "your --tok-s"
LATENCY_UNKNOWN = "latency unknown at your --tok-s (the model's concurrency and TPOT belong to its own rate)"


def _ranked(cand, tier: str):
    """Holding rows priced under ``tier`` in the order the answers take them: a prediction inside
    the model's validated domain first, then the lowest $/M output tokens, $/hour, GPUs, name."""
    cand = cand.assign(_out=~cand["model_in_domain"].astype(bool) & (cand["priced_by"] == "model"))
    return cand.sort_values(["_out", f"{MTOK_PREFIX}[{tier}]", f"{HOUR_PREFIX}[{tier}]", "num_gpus", "layout"],
                            kind="stable")


def answers(df) -> list[dict]:
    """Per price source of the comparison: the cheapest layout that holds the request (fits with
    sglang's defaults or with the state-pool setting its row names) — lowest $/M output tokens at
    the priced throughput (the serving model's, or the user's ``--tok-s``), then lowest $/hour —
    among the rows that source prices with evidence (a placeholder price is never evidence:
    :mod:`k3lab.prices`) and that have a throughput; a model prediction inside its validated domain
    goes before one outside it. A source that leaves a *contender* unpriced (a GPU whose holding
    layouts have a throughput and that some source prices) names no winner: ``not_priced`` lists
    those GPUs and the layout is only the cheapest of what it prices. Computed on every row before
    ``--top``. → list of dicts tier, kind, date, rental (its prices meet a rental rate:
    :func:`k3lab.prices.is_rental_evidence`), not_priced, placeholder (GPUs it prices with a
    placeholder), layout, label, setting, fits_with, priced_with (the radix-cache-off setting a
    row is priced under, :func:`k3lab.compare._past_the_cache`; "" if none), usd_per_hour, usd_per_million_tokens (+ _low,
    _high), priced_by, the latency it was priced at (:func:`latency`), cheaper_outside (the cheapest row
    outside the validated domain where it is cheaper than the one named: layout, usd_per_million_tokens;
    else None), unpriced (the
    cheapest-per-hour holding layout when no row has a throughput); layout None when the source
    prices no holding layout with a throughput."""
    if "answers" in df.attrs and df.attrs.get("answers_for") == tuple(df["layout"]):
        return df.attrs["answers"]  # compare_rows' frame (perhaps cut by --top): answers over every row
    pr = prices.prices(df.attrs.get("overrides"))
    evidence = pr[pr["quality"] != "placeholder"]
    out = []
    hold = df[df["holds"].astype(bool)] if len(df) else df
    tiers = df.attrs["tiers"]
    priced = {t: set(evidence[evidence["tier"] == t]["gpu"]) for t in tiers}
    with_tok = set(hold[hold["priced_tok_s"].notna()]["gpu"]) if len(hold) else set()
    contenders = {g for g in with_tok if any(g in priced[t] for t in tiers)}
    for t in tiers:
        col, mcol = f"{HOUR_PREFIX}[{t}]", f"{MTOK_PREFIX}[{t}]"
        sub = pr[pr["tier"] == t]
        kind = "override" if t == prices.OVERRIDE_TIER else (sub["kind"].iloc[0] if len(sub) else "")
        date = "" if t == prices.OVERRIDE_TIER or sub.empty else str(sub["source_date"].iloc[0])
        head = {"tier": t, "kind": kind, "date": date, "rental": bool(sub["rental"].any()),
                "not_priced": sorted(contenders - priced[t]),
                "placeholder": sorted(set(sub[sub["quality"] == "placeholder"]["gpu"]) & with_tok),
                "cheaper_outside": None}
        held = hold[hold[col].notna() & hold["gpu"].isin(priced[t])] if len(hold) else hold
        cand = held[held[mcol].notna()] if len(held) else held
        if cand.empty:
            cheap = held.sort_values([col, "num_gpus", "layout"], kind="stable").iloc[0] if len(held) else None
            out.append({**head, "layout": None,
                        "unpriced": None if cheap is None else {"layout": cheap["layout"],
                                                                "usd_per_hour": float(cheap[col]),
                                                                "why": cheap["model_note"] or "no throughput"}})
            continue
        ranked = _ranked(cand, t)
        r = ranked.iloc[0]
        # a row outside the validated domain ranks after every row inside it, cheaper or not: named where it is
        # cheaper at the model's centre (attack 6: "cheapest at the model's centre" beside a cheaper one)
        out_cheaper = ranked[ranked["_out"] & (ranked[mcol] < r[mcol])] if not r["_out"] else ranked.iloc[:0]
        head["cheaper_outside"] = (None if out_cheaper.empty else
                                   {"layout": out_cheaper.iloc[0]["layout"],
                                    "usd_per_million_tokens": float(out_cheaper.iloc[0][mcol])})
        out.append({**head, "layout": r["layout"], "label": r["label"],
                    "setting": r["setting"], "fits_with": r["fits_with"],
                    "priced_with": r.get("priced_with") or "", "usd_per_hour": float(r[col]),
                    "usd_per_million_tokens": float(r[mcol]),
                    "usd_per_million_tokens_low": float(r[f"{MTOK_PREFIX}_low[{t}]"]),
                    "usd_per_million_tokens_high": float(r[f"{MTOK_PREFIX}_high[{t}]"]),
                    "priced_by": r["priced_by"], "model_in_domain": bool(r["model_in_domain"]), **latency(r, t)})
    return out


def latency(r, tier: str) -> dict:
    """Where row ``r`` of a comparison was priced: concurrency, TPOT and TTFT there (ms, the model's
    central values; ttft_validated: TTFT has a validated band), and under an SLO the band's slow
    edge (slow_concurrency, 0 without one) with its $/M output tokens under ``tier``, and its fast
    edge the same way (fast_concurrency, usd_per_million_tokens_fast); None where a
    value is missing (JSON-ready). A row priced at the user's ``--tok-s`` has no latency
    (``latency_unknown`` says why): the model's point is another rate's."""
    f = lambda k: float(r[k]) if k in r and r[k] == r[k] else None  # noqa: E731
    n = lambda k: 0 if f(k) is None else int(f(k))  # noqa: E731
    if r.get("priced_by") == USER_TOK_S:  # the model's point is not the user's: at their rate the latency is unknown
        return {"concurrency": 0, "tpot_ms": None, "ttft_ms": None, "ttft_validated": False, "slow_concurrency": 0,
                "usd_per_million_tokens_slow": None, "fast_concurrency": 0, "usd_per_million_tokens_fast": None,
                "latency_unknown": LATENCY_UNKNOWN}
    return {"concurrency": n("model_concurrency"), "tpot_ms": f("model_tpot_ms"),
            "ttft_ms": f("model_ttft_ms"), "ttft_validated": bool(r.get("model_ttft_validated", False)),
            "slow_concurrency": n("slow_concurrency"),
            "usd_per_million_tokens_slow": f(f"{MTOK_PREFIX}_slow[{tier}]"),
            "fast_concurrency": n("fast_concurrency"),
            "usd_per_million_tokens_fast": f(f"{MTOK_PREFIX}_fast[{tier}]")}


def slow_edge_unknown(slo: dict | None, ttft_validated: bool) -> bool:
    """Whether a row's missing slow edge is unknown rather than missed: the latency target ``slo`` (a
    comparison's ``attrs["slo"]``) limits TTFT, which has no validated band for the row (``ttft_validated``
    False), so at the band's slow edge nothing can be said (:meth:`k3lab.serving.slo.SLO.misses` gives None
    there; newcomer 42: NVIDIA TTFT "not validated" yet "misses it even at one request")."""
    return bool((slo or {}).get("max_ttft_ms")) and not ttft_validated


def breakeven(df, a: str, b: str) -> dict | None:
    """Where layout ``a``'s perf/$ equals layout ``b``'s, both rows of the comparison ``df`` (the
    throughput it prices them at): a's $/GPU-hour ÷ b's at equal $/M output tokens = a's tok/s per
    GPU ÷ b's, with the two bands combined the conservative way (a low against b high). Keys:
    a, b (layouts), ratio, low, high (None where a band is missing), a_band and b_band (each row's
    own factor on that side: a's central ÷ its low end, b's high end ÷ its central; their product is
    ratio ÷ low; None without a band, or where either row lies outside the model's validated domain),
    priced_by. None when either row is missing or has no throughput."""
    rows = df.set_index("layout") if len(df) else None
    if rows is None or a not in rows.index or b not in rows.index:
        return None
    ra, rb = rows.loc[a], rows.loc[b]
    per = lambda r, k: float(r[k]) / float(r["num_gpus"])  # noqa: E731
    if not (ra["priced_tok_s"] == ra["priced_tok_s"] and rb["priced_tok_s"] == rb["priced_tok_s"]):
        return None
    ratio = per(ra, "priced_tok_s") / per(rb, "priced_tok_s")
    # a band only where both rows have one: priced by the model inside its validated domain (a row outside it
    # prints "no band", and the pair's verdict must not lean on the family's band either)
    banded = all(r["priced_by"] == "model" and r["model_tok_s_low"] == r["model_tok_s_low"]
                 and bool(r.get("model_in_domain", True)) for r in (ra, rb))
    low = per(ra, "model_tok_s_low") / per(rb, "model_tok_s_high") if banded else None
    high = per(ra, "model_tok_s_high") / per(rb, "model_tok_s_low") if banded else None
    return {"a": a, "b": b, "ratio": ratio, "low": low, "high": high,
            "a_band": per(ra, "priced_tok_s") / per(ra, "model_tok_s_low") if banded else None,
            "b_band": per(rb, "model_tok_s_high") / per(rb, "priced_tok_s") if banded else None,
            "priced_by": ra["priced_by"] if ra["priced_by"] == rb["priced_by"] else f"{ra['priced_by']} / {rb['priced_by']}"}


def reading(price_ratio: float, be: dict, ratio_high: float | None = None) -> str:
    """Which of the two layouts of a break-even ``be`` is cheaper per token at a price ratio (a's
    $/GPU-hour ÷ b's): below the band's low end a, above its high end b, inside it too close to
    call (without a band: against the ratio alone, said as the model's values, not validated). A pair of prices given as a range is a range of
    ratios (``price_ratio`` its low end, ``ratio_high`` its high end): one side only when the whole
    range says so; a range across the band's edge turns on where in its range the price sits."""
    lo, hi = (be["low"], be["high"]) if be["low"] is not None else (be["ratio"], be["ratio"])
    r_lo, r_hi = price_ratio, price_ratio if ratio_high is None else ratio_high
    a, b = be["a"], be["b"]
    if be["low"] is None and ratio_high is None:  # no band: the model's centre only, never "cheaper" outright
        at = "the model's values" if be.get("priced_by", "model") == "model" else "the tok/s it is priced at"
        return f"{a if r_lo < lo else b} cheaper per token at {at} (no band: not validated)"
    if r_hi < lo:
        return f"{a} cheaper per token"
    if r_lo > hi:
        return f"{b} cheaper per token"
    if r_lo < lo or r_hi > hi:  # a range of ratios across the band's edge
        ends = (f"{a} cheaper" if r_lo < lo else "too close to call", f"{b} cheaper" if r_hi > hi else "too close to call")
        return f"turns on where the price sits in its range: {ends[0]} at a ratio of {r_lo:.2f}, {ends[1]} at {r_hi:.2f}"
    return "too close to call (inside the model's band)"


def fitted_lean(a: str, b: str) -> float | None:
    """How far the committed serving fit overrates GPU ``a``'s speed against GPU ``b``'s on the
    public runs it was fitted to (a factor: the median fit ÷ measured of a's own decode runs over b's,
    :func:`k3lab.serving.committed.own_runs_reading`; above 1 it favours a). In sample, so not a
    validation: it says which way, and how far, the centre of a verdict already leans. None where
    either GPU has no public run of its own."""
    from .serving.committed import own_runs_reading

    ra, rb = own_runs_reading(a)[0], own_runs_reading(b)[0]
    return None if ra is None or rb is None else ra / rb


def user_verdict(df) -> dict | None:
    """Your own prices (``--usd-per-gpu-hour``, the ``override`` tier) judged: the layout the answer
    names at your prices against the first on another GPU you priced (the runner-up, ranked the same
    way: :func:`_ranked`), your price
    ratio against their break-even band (:func:`breakeven`), and the runner-up's $/M with its band;
    ``fitted_lean``: :func:`fitted_lean` of the two GPUs (None unless both are priced by the model);
    ``slow_usd_per_million_tokens``: both at their band's slow edge under a latency target. None without your prices on two GPUs that hold the request."""
    if "your_prices" in df.attrs and df.attrs.get("answers_for") == tuple(df["layout"]):
        return df.attrs["your_prices"]  # compare_rows' frame (perhaps cut by --top): judged on every row
    t = prices.OVERRIDE_TIER
    col, mcol = f"{HOUR_PREFIX}[{t}]", f"{MTOK_PREFIX}[{t}]"
    if col not in df.columns:
        return None
    c = _ranked(df[df["holds"].astype(bool) & df[mcol].notna()], t)
    if c.empty:
        return None
    first = c.iloc[0]
    other = c[c["gpu"] != first["gpu"]]
    if other.empty:
        return None
    second = other.iloc[0]
    be = breakeven(df, first["layout"], second["layout"])
    if be is None:
        return None
    ov = df.attrs.get("overrides") or {}
    ratio = ov[first["gpu"]] / ov[second["gpu"]]
    m = lambda r, k: float(r[f"{MTOK_PREFIX}{k}[{t}]"])  # noqa: E731
    return {"fitted_lean": fitted_lean(first["gpu"], second["gpu"]) if be["priced_by"] == "model" else None,
            "first": first["layout"], "second": second["layout"], "first_usd_per_gpu_hour": ov[first["gpu"]],
            "second_usd_per_gpu_hour": ov[second["gpu"]], "price_ratio": ratio, "breakeven": be,
            "reading": reading(ratio, be),
            "first_in_domain": bool(first["model_in_domain"]), "second_in_domain": bool(second["model_in_domain"]),
            "first_usd_per_million_tokens": (m(first, ""), m(first, "_low"), m(first, "_high")),
            "second_usd_per_million_tokens": (m(second, ""), m(second, "_low"), m(second, "_high")),
            # under a latency target, each at the concurrency that still meets it if the model is as slow as its
            # band allows (None without a target, or where even one request misses it there)
            "slow_usd_per_million_tokens": tuple(None if not v == v else v
                                                 for v in (m(first, "_slow"), m(second, "_slow"))),
            # per GPU, whether its slow edge is unknown rather than missed (slow_edge_unknown)
            "slow_no_band": tuple(slow_edge_unknown(df.attrs.get("slo"), bool(r.get("model_ttft_validated", True)))
                                  for r in (first, second))}
