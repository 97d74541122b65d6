"""Which GPU × layout holds a request, what it costs, and which is cheapest (``python -m k3lab
compare`` prints it: :mod:`k3lab.compare_view`).

For one model (``data/model/``) and every GPU of ``data/hardware.yaml``, the candidate
layouts are ``num_gpus`` ∈ {8, 16, 32} (and 4 on a GPU whose scale-up domain holds more
than 8 GPUs, e.g. GB200 NVL72), each as TP = ``num_gpus`` and, for 16 and 32, as
TP8 × PP(``num_gpus``/8), under each sglang setting of :func:`settings_for` (sglang's
defaults; on AMD GPUs also sglang's MI35x recipe setting ``SGLANG_AITER_K3_OPT=1``, which the
article's 191 GiB implies, side by side). Each gets:

- the memory fit of :func:`k3lab.memory.plan` (sglang 0.5.23's pool sizing) for one request of
  ``context_tokens``, and the state-pool setting under which it fits if the defaults do not;
- its output tok/s from the serving model validated on public measurements
  (:func:`k3lab.serving.predict.peak`: the best admitted concurrency, no speculative decoding,
  at ``input_len`` / ``output_len``), with the model's validated band — or the user's own
  measured tok/s per GPU (``tok_s``, ``--tok-s GPU=TOKS``), which then prices the row instead;
- the decode roofline (:func:`k3lab.roofline.bound`), kept as a column: an UPPER BOUND, never
  a throughput;
- $/hour and $/M output tokens under every price source of :mod:`k3lab.prices`.

:func:`k3lab.compare_answers.answers` names, per price source, the cheapest layout that holds
the request — the line the report's decision box repeats (:mod:`k3lab.report`); its
:func:`~k3lab.compare_answers.breakeven` is the price ratio at which two of its layouts cost the
same per token, and :func:`~k3lab.compare_answers.user_verdict` judges your own prices against
it. Both are computed on every row before ``top`` cuts the listing.

Units: GiB (2**30 B) per GPU; tokens; requests; $/GPU-hour for prices, $/hour for a whole
deployment (``num_gpus`` × $/GPU-hour); tok/s of output for the whole deployment unless a
name says per GPU; $ per million output tokens.
"""

from __future__ import annotations

import math

from . import data, memory, prices, roofline
from .compare_answers import HOUR_PREFIX, MTOK_PREFIX, USER_TOK_S, answers, user_verdict
from .model.capacity import KV_DTYPES
from .model.sharding import check_parallel, setting_for
from .spelling import did_you_mean
from .specs import GiB, Deployment, ModelConfig, known_gpus, load_gpu, load_model
from .throughput import article_workload, usd_per_million_tokens

GPU_COUNTS = (8, 16, 32)
#: a scale-up domain larger than this also gets a 4-GPU candidate
LARGE_DOMAIN_GPUS = 8
#: the layouts the default listing shows: a full-context request fits with sglang's default
#: state pool, or only with a state-pool setting (``fits_with`` names it; k3lab.memory.Plan.verdict)
LISTED_VERDICTS = ("fits with defaults", "fits only with a setting")
#: the article's ROCm setting, shown beside sglang's default on AMD GPUs
ARTICLE_AMD_SETTING = ("aiter-k3-opt",)
SORTS = ("gpus", "cost")
MODEL_NOTE = ("model tok/s, TPOT, TTFT: the serving model fitted on public Kimi K3 measurements (k3lab.serving), "
              "no speculative decoding, means at the concurrency the latency line says; the band is its "
              "out-of-source validation error. roofline: an upper bound, never a throughput. Nothing here was "
              "measured on a GPU")


def settings_for(gpu: str, variants=(), model: str = "kimi-k3") -> list[tuple]:
    """The sglang settings a GPU is compared under: the user's ``variants`` if any (the aiter-*
    ones on AMD GPUs only); otherwise sglang's defaults, and for Kimi K3 on AMD GPUs also sglang's
    MI35x recipe setting SGLANG_AITER_K3_OPT=1 (:data:`ARTICLE_AMD_SETTING`, a switch of sglang's K3
    path: the article names no switch, its 191 GiB implies this one)."""
    amd = load_gpu(gpu).vendor == "amd"
    if variants:
        return [tuple(v for v in variants if amd or not v.startswith("aiter-"))]
    return [(), ARTICLE_AMD_SETTING] if amd and model == "kimi-k3" else [()]


#: how a row under sglang's own defaults names its setting
DEFAULT_SETTING = "sglang defaults"


def setting_label(variants) -> str:
    return ", ".join(variants) if variants else DEFAULT_SETTING


def pair_layouts(df) -> tuple[str, str] | None:
    """A comparison's rows for the article's two GPUs: the 8×MI355X TP8 node under
    :data:`ARTICLE_AMD_SETTING` and the 8×B300 TP8 node under sglang's defaults (the layouts of
    :func:`compare_rows`), or None if either is not listed."""
    rows = {(r["gpu"], r["num_gpus"], r["tp"], r["pp"], r["setting"]): r["layout"] for r in df.to_dict("records")}
    a = rows.get(("mi355x", 8, 8, 1, setting_label(ARTICLE_AMD_SETTING)))
    b = rows.get(("b300", 8, 8, 1, DEFAULT_SETTING))
    return (a, b) if a and b else None


def candidate_layouts(gpu: str) -> list[tuple[int, int, int]]:
    """(num_gpus, tp, pp) candidates for ``gpu``: TP = num_gpus for 8, 16, 32 GPUs, TP8×PP2 and
    TP8×PP4, and TP4 on 4 GPUs when the GPU's scale-up domain exceeds 8 GPUs."""
    out = [(4, 4, 1)] if load_gpu(gpu).scale_up_domain_gpus > LARGE_DOMAIN_GPUS else []
    for n in GPU_COUNTS:
        out.append((n, n, 1))
        if n > 8:
            out.append((n, 8, n // 8))
    return out


def layout_name(num_gpus: int, tp: int, pp: int) -> str:
    """A layout without its GPU, as the fit matrix's column: ``8 GPUs TP8``, ``16 GPUs TP8×PP2``."""
    return f"{num_gpus} GPUs TP{tp}" + (f"×PP{pp}" if pp > 1 else "")


def check_context_holds(context_tokens: int | None, input_len: int | None, output_len: int | None,
                        names: tuple[str, str, str] = ("--context", "--input-len", "--output-len")) -> None:
    """ValueError (one line) when one request of the workload (tokens in + out) is longer than the
    request the fit must hold (``context_tokens``): every layout would be priced on requests it
    was never asked to hold. ``None`` lengths: the article's workload (said so); ``None`` context:
    the model's maximum (nothing to check). ``names``: how the user gave the three (flags, or a
    profile's parameters)."""
    if context_tokens is None:
        return
    w = article_workload()
    i = w["input_len_tokens"] if input_len is None else input_len
    o = w["output_len_tokens"] if output_len is None else output_len
    if i + o > context_tokens:
        unset = "" if input_len is not None and output_len is not None else ", the article's workload where unset"
        raise ValueError(f"{names[0]} {context_tokens:,} is below one request of the workload: {names[1]} + "
                         f"{names[2]} = {i:,} + {o:,} = {i + o:,}{unset}")


def _check_inputs(cfg, context_tokens, kv_dtype, mem_fraction, variants, input_len, output_len) -> int:
    """Validate what a user gives once, so a per-layout ValueError can only mean "cannot shard"."""
    if not isinstance(cfg, ModelConfig):
        raise ValueError(f"cfg must be a model config (k3lab.specs.load_model), got {type(cfg).__name__}")
    ctx = cfg.max_position_embeddings if context_tokens is None else context_tokens
    cfg.check_context(data.check_count("context_tokens", ctx), "context")
    if kv_dtype not in KV_DTYPES:
        raise ValueError(f"kv_dtype must be one of {', '.join(KV_DTYPES)}, got {kv_dtype!r}")
    data.check_finite("mem_fraction", mem_fraction)
    if not 0 < mem_fraction <= 1:
        raise ValueError(f"mem_fraction must be in (0, 1], got {mem_fraction!r}")
    setting_for("amd", variants)  # unknown names and contradictions fail here, once, not per layout
    total = data.check_count("input_len", input_len) + data.check_count("output_len", output_len)
    if total > cfg.max_position_embeddings:  # the flags (profiles: input_len, output_len) named, with their sum
        raise ValueError(f"--input-len {input_len:,} + --output-len {output_len:,} = {total:,} tokens per request "
                         f"exceeds {cfg.name}'s maximum of {cfg.max_position_embeddings:,} (max_position_embeddings)")
    check_context_holds(context_tokens, input_len, output_len, ("context_tokens", "input_len", "output_len"))
    return ctx


#: the name a renter types (and every table prints) for the override tier, your --usd-per-gpu-hour
YOURS = "yours"


def _price_table(tiers, overrides) -> tuple[list[str], dict]:
    """(tiers in order, {(tier, gpu): ($/GPU-hour, low, high)}) for the chosen tiers (a price given as
    a range: its middle and its ends; a single figure three times); the override tier (your prices) first."""
    pr = prices.prices(overrides)
    known = prices.tiers()
    if tiers is None:
        chosen = list(known)
    else:
        # "yours" is how every table names your prices (k3lab.compare_view): the same tier as "override"
        for t in tiers:
            if t in (prices.OVERRIDE_TIER, YOURS) and not overrides:
                raise ValueError(f"price tier {t!r} is your own prices: give them with --usd-per-gpu-hour GPU=PRICE")
        chosen = list(dict.fromkeys(prices.OVERRIDE_TIER if t == YOURS else t for t in tiers))
        for t in chosen:
            if t not in known and t != prices.OVERRIDE_TIER:
                raise ValueError(f"unknown price tier {t!r}{did_you_mean(t, [*known, YOURS])}; known: "
                                 f"{', '.join(known)}, and {YOURS} (your --usd-per-gpu-hour)")
    if overrides:  # the user's own prices first: what they asked about leads every list and table
        chosen = [prices.OVERRIDE_TIER, *(t for t in chosen if t != prices.OVERRIDE_TIER)]
    table = {(r.tier, r.gpu): (float(r.usd_per_gpu_hour), float(r.usd_low), float(r.usd_high))
             for r in pr.itertuples() if r.tier in chosen}
    return chosen, table


def _reason(p: memory.Plan, ctx: int) -> str:
    if not p.weights_fit:
        return (f"weights do not fit: {p.weights_bytes_per_gpu / GiB:.1f} GiB per GPU leave no KV pool in "
                f"{p.capacity_bytes_per_gpu / GiB:.1f} GiB usable at mem_fraction {p.mem_fraction:g}")
    if not p.fits and p.verdict == "fits only with a setting":
        # newcomer 26: "no request fits" beside "fits with --mamba-full-memory-ratio 0.795" read as a contradiction
        return (f"at sglang's defaults no {ctx:,}-token request fits (the KV pool holds {p.max_kv_tokens:,} tokens); "
                "the setting under 'fits with' holds it")
    if not p.fits:
        return f"no {ctx:,}-token request fits: the KV pool holds {p.max_kv_tokens:,} tokens"
    return ""


def state_pool_cap(p: memory.Plan) -> int | None:
    """Requests in flight (whole deployment) that the state-pool setting under which a full-context
    request fits leaves (its ``--max-running-requests``, per replica × replicas); None when the
    defaults hold the request (or nothing does)."""
    return p.best_option.max_running_requests * p.replicas if p.verdict == "fits only with a setting" else None


#: the serving model's columns of a row without a throughput
NO_MODEL = {"model_tok_s": math.nan, "model_tok_s_low": math.nan, "model_tok_s_high": math.nan, "model_concurrency": 0,
            "model_in_domain": False, "model_tpot_ms": math.nan, "model_ttft_ms": math.nan,
            "model_ttft_validated": False, "slow_concurrency": 0, "slow_tok_s": math.nan, "fast_concurrency": 0,
            "fast_tok_s": math.nan, "model_capped_by": ""}


def _throughput(cfg, dep, variants, input_len, output_len, kv_dtype, mem_fraction, max_running=None, slo=None,
                engine=None) -> dict:
    """The serving model's operating point for one row (:func:`k3lab.serving.slo.operating_point`:
    its peak, or under ``slo`` the highest concurrency it meets, and the band's slow edge) → the
    columns of :data:`NO_MODEL` and model_note; NaN with a reason where the model is not calibrated
    for the GPU or model, no request of the workload fits, or none meets the SLO. ``max_running``:
    the requests in flight a state-pool setting leaves (whole deployment), when the row holds the
    full-context request only under that setting; ``engine``: its :class:`k3lab.serving.engines.Engine`
    (sglang's defaults when None)."""
    from .serving.predict import NotCalibrated
    from .serving.slo import NO_SLO, operating_point

    if cfg.name != "kimi-k3":
        return {**NO_MODEL, "model_note": "the serving model is calibrated on Kimi K3 measurements only"}
    try:
        op = operating_point(cfg, dep, input_len, output_len, slo or NO_SLO, variants=variants, kv_dtype=kv_dtype,
                             mem_fraction=mem_fraction, max_running=max_running,
                             **({} if engine is None else {"engine": engine}))
    except NotCalibrated:
        return {**NO_MODEL, "model_note": f"no public measurements calibrate the serving model for {dep.gpu.upper()}"}
    except data.DataError:
        raise  # a broken or stale fit is the news, never a row without a model (and exit 0)
    except ValueError as e:
        return {**NO_MODEL, "model_note": str(e)}
    p = op.point
    if p is None:
        return {**NO_MODEL, "model_note": op.why}
    over = p.over_latency_cap()
    if over:  # predict's cap: such a latency is never printed, nor priced
        return {**NO_MODEL, "model_note": over}
    iv = p.interval("output_tok_s")
    if iv is None:  # a metric without a usable band prices nothing
        return {**NO_MODEL, "model_concurrency": p.concurrency,
                "model_note": f"the serving model's decode speed is not validated for {p.family}"}
    return {"model_tok_s": p.output_tok_s, "model_tok_s_low": iv[0], "model_tok_s_high": iv[1],
            "model_concurrency": p.concurrency, "model_in_domain": p.in_domain, "model_tpot_ms": p.tpot_ms,
            "model_ttft_ms": p.ttft_ms, "model_ttft_validated": p.validated("ttft_ms"),
            "slow_concurrency": 0 if op.slow is None else op.slow.concurrency, "slow_tok_s": op.slow_tok_s,
            "fast_concurrency": 0 if op.fast is None else op.fast.concurrency, "fast_tok_s": op.fast_tok_s,
            # under a latency target, what stopped the concurrency below it: the requests the state-pool
            # setting leaves, or what the pools admit ("" when the target did)
            "model_capped_by": ("" if not op.capped else "setting" if max_running is not None and op.limit == max_running
                                else "pools"),
            "model_note": "; ".join(p.outside)}


#: the columns :func:`_past_the_cache` adds: the state-pool flags the row is priced under, and what
#: keeping the radix cache (the setting ``fits_with`` names) gives where they differ
PRICED_WITH = {"priced_with": "", "cache_concurrency": 0, "cache_tok_s": math.nan, "cache_tpot_ms": math.nan}


def _past_the_cache(cfg, dep, variants, input_len, output_len, kv_dtype, mem_fraction, slo, p, row) -> dict:
    """The columns of :data:`PRICED_WITH` for a row (its ``_throughput`` columns already in ``row``).

    Under a latency target, a row that holds the full-context request (with sglang's defaults or a
    state-pool setting) and stopped below the target because its pools admit no more
    (``model_capped_by``) is priced instead under sglang's radix-cache-off branch,
    ``--disable-radix-cache --max-running-requests M`` (one state slot a request instead of five, so
    the same memory admits more: the fit's third option,
    :func:`k3lab.model.pool_settings.search_settings`, or :func:`k3lab.memory.radix_off_room` where
    the defaults hold it), M at most where the pools still hold M of the workload's requests (the
    slots come out of the KV pool) and then the concurrency the target allows — both nodes at the
    target's latency, not one at its pools' — when that runs more requests; the row's model columns
    are then that operating point's, and ``cache_*`` keep what the setting with prefix caching gives.
    ``priced_with`` is ``""`` where the row is priced as ``fits_with`` says. The serving model is
    fitted on benchmark runs that reuse no prefix, so prefix caching's gain on real traffic is in
    neither number."""
    out = dict(PRICED_WITH)
    if not (slo.active and row.get("model_capped_by") and p.verdict in LISTED_VERDICTS and cfg.has_kda):
        return out
    off = [o for o in p.fit_options if o.branch == "from_max_running_requests"]
    m = (off[0].max_running_requests if off else 0) if p.fit_options else memory.radix_off_room(
        cfg, dep, mem_fraction, kv_dtype, p.context_tokens, variants)
    if m * p.replicas <= row["model_concurrency"]:
        return out
    from .serving.engines import Engine, admission

    # the state pool's M slots come out of the KV pool: past some M the KV pool no longer holds M of the
    # workload's requests, so the most that run is the largest M (up to the room) whose pools hold M of them
    def runs_all(k: int) -> bool:
        return admission(cfg, dep, input_len + output_len, variants=variants, kv_dtype=kv_dtype, mem_fraction=mem_fraction,
                         engine=Engine(max_running_requests=k, disable_radix_cache=True)).requests >= k * p.replicas

    if not runs_all(m):
        lo, hi = 1, m   # runs_all(1) holds where one request of the workload fits at all
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if runs_all(mid) else (lo, mid)
        m = lo
    if m * p.replicas <= row["model_concurrency"]:
        return out
    alt = _throughput(cfg, dep, variants, input_len, output_len, kv_dtype, mem_fraction, m * p.replicas, slo,
                      Engine(max_running_requests=m, disable_radix_cache=True))
    if not alt["model_concurrency"] > row["model_concurrency"] or not alt["model_tok_s"] == alt["model_tok_s"]:
        return out
    out.update(cache_concurrency=row["model_concurrency"], cache_tok_s=row["model_tok_s"],
               cache_tpot_ms=row["model_tpot_ms"],
               priced_with=f"--disable-radix-cache --max-running-requests {-(-alt['model_concurrency'] // p.replicas)}")
    if alt["fast_concurrency"] > alt["model_concurrency"]:
        # the band's fast edge under the --max-running-requests the row names, which admits no more than its point
        # (newcomers 57-58: "111§ (33-408)" beside "--max-running-requests 111"): there, the band's fast end
        alt = {**alt, "fast_concurrency": alt["model_concurrency"], "fast_tok_s": alt["model_tok_s_high"]}
    return {**alt, **out}


def full_context_pricing(cfg, dep: Deployment, variants=(), input_len: int = 1024, output_len: int = 400,
                         kv_dtype: str = "bf16", mem_fraction: float = 0.9, slo=None) -> dict | None:
    """How ``compare`` and ``quote`` price ``dep`` for a request of the model's full context beside
    the workload under ``slo`` (their row's own computation: the setting the fit names,
    :func:`state_pool_cap`, then :func:`_past_the_cache`) → ``{"flags": the sglang state-pool flags
    ("" where sglang's defaults hold it), "concurrency": requests in flight (whole deployment),
    "tpot_ms": the model's TPOT there}``; None where nothing holds such a request or the model
    prices no concurrency. What ``predict`` at sglang's defaults points at, so that its price and
    the quote's can be told apart (newcomer 26: $6.77 at c87 without the request, $5.96 at c111
    with it)."""
    vs = tuple(sorted(set(variants)))
    p = memory.plan(cfg, dep.gpu, dep.num_gpus, dep.tp, mem_fraction, kv_dtype, pp=dep.pp,
                    context_tokens=cfg.max_position_embeddings, variants=vs)
    if p.verdict not in LISTED_VERDICTS or not p.weights_fit:
        return None
    row = _throughput(cfg, dep, vs, input_len, output_len, kv_dtype, mem_fraction, state_pool_cap(p), slo)
    row.update(_past_the_cache(cfg, dep, vs, input_len, output_len, kv_dtype, mem_fraction, slo, p, row))
    if not row.get("model_concurrency"):
        return None
    flags = row["priced_with"] or (p.best_option.flags if p.verdict == "fits only with a setting" else "")
    return {"flags": flags, "concurrency": int(row["model_concurrency"]), "tpot_ms": float(row["model_tpot_ms"])}


def compare_rows(cfg, context_tokens=None, kv_dtype="bf16", mem_fraction=0.9, variants=(), tiers=None,
                 overrides=None, include_all=False, gpus=None, usd_per_kwh=None, input_len=None, output_len=None,
                 tok_s=None, sort="gpus", top=None, slo=None):
    """Every GPU × candidate layout × sglang setting for ``cfg`` → DataFrame.

    ``cfg``: a :class:`~k3lab.specs.ModelConfig` (or a model name). ``context_tokens``: the
    request length the fit is judged at (tokens; default the model's maximum). ``variants``:
    sglang switches for every row (default :func:`settings_for`: sglang's defaults, and on AMD
    GPUs sglang's K3_OPT recipe setting beside them). ``tiers``: price tiers (default all of
    ``data/prices.yaml``); ``overrides``: GPU → $/GPU-hour (tier ``override``). ``input_len`` /
    ``output_len``: the workload of the throughput columns (default the article's 1,024 / 400).
    ``tok_s``: GPU → output tok/s per GPU the user measured; it prices that GPU's rows instead of
    the model. ``include_all``: also rows that do not hold the request (``reason`` says why) and
    layouts the model cannot shard; without it, the rows of :data:`LISTED_VERDICTS`. ``gpus``: only
    these GPUs. ``slo``: a :class:`k3lab.serving.slo.SLO`; each row is then priced at the highest
    concurrency whose modelled latency meets it, and at the band's slow and fast edges (columns
    ``_slow``, ``_fast``; default: at its peak, no edges). ``usd_per_kwh``: adds ``power_usd_per_hour``
    (board power × the middle PUE of ``data/prices.yaml`` × $/kWh, whole deployment). ``sort``: ``gpus`` (fewest GPUs, then least
    weight per GPU) or ``cost`` (lowest $/M output tokens under the first chosen tier that prices
    the row, then $/hour). ``top``: keep the first N rows after sorting.

    Columns: layout (``8xmi355x tp8 [aiter-k3-opt]``: the row's id), gpu, num_gpus, tp, pp, nodes,
    label, setting, shardable, weights_gib_per_gpu, weights_fit, max_kv_tokens,
    full_context_requests (with sglang's default state pool), full_context_requests_with_setting
    (under the setting fits_with names; the defaults' count where it names none), fits (with sglang's default state pool), fits_with (``defaults``, the
    state-pool flags under which the request fits, ``no setting``, ``weights do not fit`` or
    ``cannot shard``), holds (fits with defaults or a setting), reason, model_tok_s (+ _low,
    _high), model_concurrency, model_in_domain, model_tpot_ms and model_ttft_ms (the latency at the
    priced point; model_ttft_validated: TTFT has a validated band), slow_concurrency and slow_tok_s
    (the slow edge under an SLO: 0 / NaN without one), fast_concurrency and fast_tok_s (its fast edge,
    never past what the row's setting admits), model_capped_by (under an SLO, ``setting`` or
    ``pools`` when what is admitted, not the target, set the concurrency; ``""`` otherwise),
    priced_with, cache_concurrency, cache_tok_s, cache_tpot_ms (:func:`_past_the_cache`: the
    radix-cache-off setting a row is priced under where the target wants more requests than the
    setting with prefix caching admits, and what that one gives; ``""`` / 0 / NaN otherwise),
    moe_intermediate_per_gpu and moe_intermediate_padded_per_gpu (an expert's MXFP4 intermediate on
    one GPU, and as sglang pads it: why a setting may change nothing), model_note, user_tok_s, priced_tok_s (what the
    $/M columns use), priced_by (``model`` / ``your --tok-s`` / ``—``), roofline_bound_tok_s (UPPER
    BOUND at the model's concurrency), one ``usd_per_hour[<tier>]`` and ``usd_per_million_tokens
    [<tier>]`` (with ``_low`` / ``_high`` from the model's band, ``_slow`` / ``_fast`` at its edges) per
    tier (NaN: no price).
    ``df.attrs`` holds the inputs. ValueError (one line) for an unknown model, variant, tier or
    GPU, or a bad number.
    """
    import pandas as pd

    cfg = load_model(cfg) if isinstance(cfg, str) else cfg
    variants = tuple(sorted(set(variants or ())))
    w = article_workload()
    input_len = w["input_len_tokens"] if input_len is None else input_len
    output_len = w["output_len_tokens"] if output_len is None else output_len
    ctx = _check_inputs(cfg, context_tokens, kv_dtype, mem_fraction, variants, input_len, output_len)
    from .serving.slo import NO_SLO, SLO

    slo = NO_SLO if slo is None else slo
    if not isinstance(slo, SLO):
        raise ValueError(f"slo must be a k3lab.serving.slo.SLO, got {type(slo).__name__}")
    slo.check_decodes(output_len)   # as predict refuses it: a TPOT limit of one output token prices nothing
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
    if top is not None:
        data.check_count("top", top)
    chosen, price = _price_table(tiers, overrides)
    all_gpus = known_gpus()
    unknown = sorted(set(gpus or ()) - set(all_gpus))
    if unknown:
        raise ValueError(f"unknown GPU(s) {unknown}{did_you_mean(unknown[0], all_gpus)}; known GPUs: {', '.join(all_gpus)}")
    tok_s = {k.lower(): data.check_finite(f"tok_s[{k}]", v) for k, v in (tok_s or {}).items()}
    bad = sorted(set(tok_s) - set(all_gpus))
    if bad:
        raise ValueError(f"--tok-s for unknown GPU(s) {bad}{did_you_mean(bad[0], all_gpus)}; known GPUs: "
                         f"{', '.join(all_gpus)}")
    rows, seen = [], 0
    pue = prices.middle_pue()
    for gpu in (g for g in all_gpus if gpus is None or g in gpus):
        for n, tp, pp in candidate_layouts(gpu):
            dep = Deployment(gpu, n, tp, pp)
            for vs in settings_for(gpu, variants, cfg.name):
                seen += 1
                lay = f"{n}x{gpu} tp{tp}" + (f" pp{pp}" if pp > 1 else "") + (f" [{', '.join(vs)}]" if vs else "")
                row = {"layout": lay, "gpu": gpu, "num_gpus": n, "tp": tp, "pp": pp, "nodes": dep.num_nodes,
                       "label": dep.label, "setting": setting_label(vs)}
                try:
                    check_parallel(cfg, tp, pp)
                except ValueError as e:
                    if include_all:
                        rows.append({**row, "shardable": False, "weights_gib_per_gpu": math.nan,
                                     "weights_fit": False, "max_kv_tokens": 0, "full_context_requests": 0,
                                     "full_context_requests_with_setting": 0, **PRICED_WITH,
                                     "fits": False, "fits_with": "cannot shard", "holds": False, "reason": str(e)})
                    continue
                p = memory.plan(cfg, gpu, n, tp, mem_fraction, kv_dtype, pp=pp, context_tokens=ctx, variants=vs)
                if p.verdict not in LISTED_VERDICTS and not include_all:
                    continue
                row.update({"shardable": True, "weights_gib_per_gpu": p.weights_bytes_per_gpu / GiB,
                            "weights_fit": bool(p.weights_fit), "max_kv_tokens": int(p.max_kv_tokens),
                            "full_context_requests": int(p.max_full_context_requests),
                            # under the setting fits_with names (the defaults' count where it names none)
                            "full_context_requests_with_setting": int(
                                p.best_option.full_context_requests if p.fit_setting else p.max_full_context_requests),
                            "fits": bool(p.fits),
                            "fits_with": p.fits_with, "holds": p.verdict in LISTED_VERDICTS,
                            "reason": _reason(p, ctx), "_w": p.weights_bytes_per_gpu,
                            "moe_intermediate_per_gpu": int(p.moe_intermediate_per_gpu),
                            "moe_intermediate_padded_per_gpu": int(p.moe_intermediate_padded_per_gpu)})
                cap = state_pool_cap(p)
                row.update(_throughput(cfg, dep, vs, input_len, output_len, kv_dtype, mem_fraction, cap, slo)
                           if p.weights_fit else {**NO_MODEL, "model_note": "weights do not fit"})
                row.update(_past_the_cache(cfg, dep, vs, input_len, output_len, kv_dtype, mem_fraction, slo, p, row))
                c = row.get("model_concurrency") or 0
                if c < 1 and p.weights_fit:  # no serving model (another model, an uncalibrated GPU): bound at what the pools admit
                    from .serving.predict import admission

                    c = admission(cfg, dep, input_len + output_len, variants=vs, kv_dtype=kv_dtype,
                                  mem_fraction=mem_fraction).requests
                row["roofline_bound_tok_s"] = (roofline.bound(dep, c, cfg=cfg, context_tokens=input_len + output_len / 2)
                                               if c >= 1 else math.nan)
                user = tok_s.get(gpu) if p.weights_fit else None  # nothing to price where the weights do not load
                row["user_tok_s"] = math.nan if user is None else user * n
                if user is not None:
                    row.update({"priced_tok_s": user * n, "priced_by": USER_TOK_S, "_lo": user * n, "_hi": user * n,
                                "_slow": math.nan, "_fast": math.nan})
                elif row.get("model_tok_s") == row.get("model_tok_s"):
                    row.update({"priced_tok_s": row["model_tok_s"], "priced_by": "model", "_lo": row["model_tok_s_low"],
                                "_hi": row["model_tok_s_high"], "_slow": row["slow_tok_s"], "_fast": row["fast_tok_s"]})
                else:
                    row.update({"priced_tok_s": math.nan, "priced_by": "—", "_lo": math.nan, "_hi": math.nan,
                                "_slow": math.nan, "_fast": math.nan})
                if usd_per_kwh is not None:
                    row["power_usd_per_hour"] = n * prices.electricity_usd_per_gpu_hour(
                        load_gpu(gpu).board_power_w, pue, usd_per_kwh)
                for t in chosen:
                    mid, lo, hi = price.get((t, gpu), (None, None, None))
                    row[f"{HOUR_PREFIX}[{t}]"] = math.nan if mid is None else n * mid
                    # the $/M band: the model's fast edge at the price's low end, its slow edge at the high end
                    for key, v, usd in (("", row["priced_tok_s"], mid), ("_low", row["_hi"], lo),
                                        ("_high", row["_lo"], hi), ("_slow", row["_slow"], mid),
                                        ("_fast", row["_fast"], mid)):
                        row[f"{MTOK_PREFIX}{key}[{t}]"] = (math.nan if usd is None or not v == v
                                                            else usd_per_million_tokens(v, n, usd))
                rows.append(row)
    base = ["layout", "gpu", "num_gpus", "tp", "pp", "nodes", "label", "setting", "shardable", "weights_gib_per_gpu",
            "weights_fit", "max_kv_tokens", "full_context_requests", "full_context_requests_with_setting", "fits",
            "fits_with", "holds", "reason", "moe_intermediate_per_gpu", "moe_intermediate_padded_per_gpu",
            *NO_MODEL, "model_note", *PRICED_WITH, "user_tok_s", "priced_tok_s", "priced_by", "roofline_bound_tok_s"]
    priced = [f"{pre}[{t}]" for pre in (HOUR_PREFIX, MTOK_PREFIX, MTOK_PREFIX + "_low", MTOK_PREFIX + "_high",
                                         MTOK_PREFIX + "_slow", MTOK_PREFIX + "_fast") for t in chosen]
    power = ["power_usd_per_hour"] if usd_per_kwh is not None else []
    df = pd.DataFrame(rows, columns=[*base, "_w", *power, *priced])
    df["_w"] = df["_w"].astype(float).fillna(float("inf"))
    if sort == "cost" and len(df):
        df["_c"] = _first_priced(df, chosen, MTOK_PREFIX)
        df["_h"] = _first_priced(df, chosen, HOUR_PREFIX)
        df = df.sort_values(["_c", "_h", "num_gpus", "_w", "layout"], kind="stable", na_position="last")
        df = df.drop(columns=["_c", "_h"])
    else:
        df = df.sort_values(["num_gpus", "_w", "gpu", "tp", "setting"], kind="stable")
    df = df.drop(columns="_w").reset_index(drop=True)
    df.attrs.update({"tiers": chosen, "overrides": dict(overrides or {}), "slo": slo.as_dict()})
    full_answers = answers(df)  # on every row: --top only shortens the listing
    yours = user_verdict(df)
    holding = int(df["holds"].astype(bool).sum()) if len(df) else 0
    if top is not None:
        df = df.head(top).reset_index(drop=True)
    df.attrs.update({"answers": full_answers, "answers_for": tuple(df["layout"]), "your_prices": yours,
                     "holding": holding, "model": cfg.name, "context_tokens": ctx, "kv_dtype": kv_dtype,
                     "mem_fraction": float(mem_fraction), "variants": list(variants), "tiers": chosen,
                     "input_len": input_len, "output_len": output_len, "include_all": include_all,
                     "usd_per_kwh": usd_per_kwh, "pue": pue, "candidates": seen, "sort": sort, "top": top,
                     "tok_s": dict(tok_s), "overrides": dict(overrides or {}), "slo": slo.as_dict()})
    return df


def _first_priced(df, chosen, prefix):
    """Per row, the value of ``prefix`` under the first chosen tier that prices it (NaN if none)."""
    import numpy as np

    out = np.full(len(df), np.nan)
    for t in reversed(chosen):
        col = df[f"{prefix}[{t}]"].to_numpy(dtype=float)
        out = np.where(np.isnan(col), out, col)
    return out


def tier_columns(df, prefix: str = HOUR_PREFIX) -> dict[str, str]:
    """{tier: column name} of one price family (``usd_per_hour``, ``usd_per_million_tokens`` or
    its ``_low`` / ``_high``)."""
    return {c[len(prefix) + 1:-1]: c for c in df.columns if c.startswith(prefix + "[")}
