"""``python -m k3lab compare``: every GPU × layout that fits a model, smallest first.

For one model (``data/model/``) and every GPU of ``data/hardware.yaml``, the candidate
layouts are ``num_gpus`` ∈ {8, 16, 32} (and 4 on a GPU whose scale-up domain holds more
than 8 GPUs, e.g. GB200 NVL72), each as TP = ``num_gpus`` and, for 16 and 32, as
TP8 × PP(``num_gpus``/8). Each candidate gets the memory fit of :func:`k3lab.memory.plan`
(sglang 0.5.23's pool sizing), its price per hour under every price source of
:mod:`k3lab.prices`, and — a MODEL, never a measurement — the decode roofline's upper bound
on output tok/s (:func:`k3lab.roofline.bound`) and the $/M output tokens at that bound
(a lower bound on what a real run costs).

Units: bytes in the plan, GiB (2**30 B) in the table; tokens; requests; $/GPU-hour for
prices, $/hour for a whole deployment (``num_gpus`` × $/GPU-hour); tok/s for the whole
deployment; $ per million output tokens.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import sys
import textwrap

from . import data, memory, prices, roofline
from .model.capacity import KV_DTYPES
from .model.sharding import VARIANTS, check_parallel, setting_for
from .specs import GiB, Deployment, ModelConfig, known_gpus, known_models, load_gpu, load_model
from .throughput import article_workload, usd_per_million_tokens

GPU_COUNTS = (8, 16, 32)
#: a scale-up domain larger than this also gets a 4-GPU candidate
LARGE_DOMAIN_GPUS = 8
HOUR_PREFIX, MTOK_PREFIX = "usd_per_hour", "usd_per_million_tokens_at_bound"
#: the layouts the default listing shows: a full-context request fits with sglang's default
#: state pool, or only with a state-pool setting (``fits_with`` names it; k3lab.memory.Plan.verdict)
LISTED_VERDICTS = ("fits with defaults", "fits only with a setting")
BOUND_NOTE = ("decode_bound_tok_s is a roofline MODEL: an upper bound on output tok/s for the whole "
              "deployment (k3lab.roofline.bound), never a measurement; $/M tokens at the bound is a "
              "lower bound on cost")


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


def _check_inputs(cfg, context_tokens, kv_dtype, mem_fraction, variants, concurrency) -> int:
    """Validate what a user gives once, so a per-layout ValueError can only mean "cannot shard"."""
    if not isinstance(cfg, ModelConfig):
        raise ValueError(f"cfg must be a model config (k3lab.specs.load_model), got {type(cfg).__name__}")
    ctx = cfg.max_position_embeddings if context_tokens is None else context_tokens
    data.check_count("context_tokens", ctx)
    if ctx > cfg.max_position_embeddings:
        raise ValueError(f"context {ctx:,} tokens exceeds {cfg.name}'s maximum of {cfg.max_position_embeddings:,}")
    if kv_dtype not in KV_DTYPES:
        raise ValueError(f"kv_dtype must be one of {', '.join(KV_DTYPES)}, got {kv_dtype!r}")
    data.check_finite("mem_fraction", mem_fraction)
    if not 0 < mem_fraction <= 1:
        raise ValueError(f"mem_fraction must be in (0, 1], got {mem_fraction!r}")
    setting_for("amd", variants)  # unknown names and contradictions fail here, once, not per layout
    data.check_count("concurrency", concurrency)
    return ctx


def _price_table(tiers, overrides) -> tuple[list[str], dict]:
    """(tiers in order, {(tier, gpu): $/GPU-hour}) for the chosen tiers; override tier last."""
    pr = prices.prices(overrides)
    known = prices.tiers()
    if tiers is None:
        chosen = list(known)
    else:
        chosen = list(dict.fromkeys(tiers))
        for t in chosen:
            if t not in known:
                raise ValueError(f"unknown price tier {t!r}; known: {', '.join(known)}")
    if overrides and prices.OVERRIDE_TIER not in chosen:
        chosen.append(prices.OVERRIDE_TIER)
    table = {(r.tier, r.gpu): float(r.usd_per_gpu_hour) for r in pr.itertuples() if r.tier in chosen}
    return chosen, table


def _reason(p: memory.Plan, ctx: int) -> str:
    if not p.weights_fit:
        return (f"weights do not fit: {p.weights_bytes_per_gpu / GiB:.1f} GiB per GPU leave no KV pool in "
                f"{p.capacity_bytes_per_gpu / GiB:.1f} GiB usable at mem_fraction {p.mem_fraction:g}")
    if not p.fits:
        return f"no {ctx:,}-token request fits: the KV pool holds {p.max_kv_tokens:,} tokens"
    return ""


def compare_rows(cfg, context_tokens=None, kv_dtype="bf16", mem_fraction=0.9, variants=(), tiers=None,
                 overrides=None, concurrency=64, include_all=False, gpus=None, usd_per_kwh=None):
    """Every GPU × candidate layout for ``cfg`` → DataFrame, smallest first.

    ``cfg``: a :class:`~k3lab.specs.ModelConfig` (or a model name). ``context_tokens``: the
    request length the fit is judged at (tokens; default the model's maximum). ``tiers``:
    price tiers (default all of ``data/prices.yaml``); ``overrides``: GPU → $/GPU-hour (tier
    ``override``). ``concurrency``: requests in flight for the decode bound, capped by what the
    KV pool holds at the article's workload context. ``include_all``: also rows that do not fit
    (``reason`` says why) and layouts the model cannot shard (``shardable`` False); without
    it, the rows that fit with the defaults or only with a state-pool setting
    (:data:`LISTED_VERDICTS`). ``gpus``:
    only these GPUs (default all). ``usd_per_kwh``: adds ``power_usd_per_hour``, the
    deployment's electricity (board power × the middle PUE of ``data/prices.yaml`` × $/kWh).

    Columns: gpu, num_gpus, tp, pp, nodes, label, shardable, weights_gib_per_gpu, weights_fit,
    max_kv_tokens, full_context_requests, fits (with sglang's default state pool), fits_with
    (``defaults``, the state-pool flags under which the request fits —
    :attr:`k3lab.memory.Plan.fits_with` — ``no setting``, ``weights do not fit`` or ``cannot
    shard``), reason, decode_bound_tok_s (MODEL),
    bound_concurrency, one ``usd_per_hour[<tier>]`` ($/hour of the deployment) and one
    ``usd_per_million_tokens_at_bound[<tier>]`` per tier (NaN: the tier has no price for that
    GPU). Order: fewest GPUs, then least weight per GPU. ``df.attrs`` holds the inputs.
    ValueError (one line) for an unknown model, variant or tier, or a bad number.
    """
    import pandas as pd

    cfg = load_model(cfg) if isinstance(cfg, str) else cfg
    variants = tuple(sorted(set(variants or ())))
    ctx = _check_inputs(cfg, context_tokens, kv_dtype, mem_fraction, variants, concurrency)
    chosen, price = _price_table(tiers, overrides)
    w = article_workload()
    bound_ctx = w["input_len_tokens"] + w["output_len_tokens"] / 2
    rows, seen = [], 0
    all_gpus = known_gpus()
    unknown = sorted(set(gpus or ()) - set(all_gpus))
    if unknown:
        raise ValueError(f"unknown GPU(s) {unknown}; known GPUs: {', '.join(all_gpus)}")
    pue = prices.middle_pue()
    for gpu in (g for g in all_gpus if gpus is None or g in gpus):
        for n, tp, pp in candidate_layouts(gpu):
            seen += 1
            dep = Deployment(gpu, n, tp, pp)
            row = {"gpu": gpu, "num_gpus": n, "tp": tp, "pp": pp, "nodes": dep.num_nodes, "label": dep.label}
            try:
                check_parallel(cfg, tp, pp)
            except ValueError as e:
                if include_all:
                    rows.append({**row, "shardable": False, "weights_gib_per_gpu": math.nan, "weights_fit": False,
                                 "max_kv_tokens": 0, "full_context_requests": 0, "fits": False,
                                 "fits_with": "cannot shard", "reason": str(e),
                                 "decode_bound_tok_s": math.nan, "bound_concurrency": 0})
                continue
            # ROCm's AITER switches do not exist on another platform: the GPU runs without them
            vs = variants if load_gpu(gpu).vendor == "amd" else tuple(v for v in variants if not v.startswith("aiter-"))
            p = memory.plan(cfg, gpu, n, tp, mem_fraction, kv_dtype, pp=pp, context_tokens=ctx, variants=vs)
            if p.verdict not in LISTED_VERDICTS and not include_all:
                continue
            held = min(concurrency, p.max_running_requests, int(p.max_kv_tokens // bound_ctx))
            tok_s = roofline.bound(dep, held, cfg=cfg, context_tokens=bound_ctx) if p.fits and held >= 1 else math.nan
            row.update({"shardable": True, "weights_gib_per_gpu": p.weights_bytes_per_gpu / GiB,
                        "weights_fit": bool(p.weights_fit), "max_kv_tokens": int(p.max_kv_tokens),
                        "full_context_requests": int(p.max_full_context_requests), "fits": bool(p.fits),
                        "fits_with": p.fits_with, "reason": _reason(p, ctx), "decode_bound_tok_s": tok_s,
                        "bound_concurrency": held if p.fits else 0, "_w": p.weights_bytes_per_gpu})
            if usd_per_kwh is not None:
                row["power_usd_per_hour"] = n * prices.electricity_usd_per_gpu_hour(
                    load_gpu(gpu).board_power_w, pue, usd_per_kwh)
            for t in chosen:
                usd = price.get((t, gpu))
                row[f"{HOUR_PREFIX}[{t}]"] = math.nan if usd is None else n * usd
                row[f"{MTOK_PREFIX}[{t}]"] = (math.nan if usd is None or not tok_s == tok_s
                                              else usd_per_million_tokens(tok_s, n, usd))
            rows.append(row)
    base = ["gpu", "num_gpus", "tp", "pp", "nodes", "label", "shardable", "weights_gib_per_gpu", "weights_fit",
            "max_kv_tokens", "full_context_requests", "fits", "fits_with", "reason", "decode_bound_tok_s",
            "bound_concurrency"]
    priced = [f"{pre}[{t}]" for pre in (HOUR_PREFIX, MTOK_PREFIX) for t in chosen]
    power = ["power_usd_per_hour"] if usd_per_kwh is not None else []
    df = pd.DataFrame(rows, columns=[*base, "_w", *power, *priced])
    df["_w"] = df["_w"].astype(float).fillna(float("inf"))
    df = df.sort_values(["num_gpus", "_w", "gpu", "tp"], kind="stable").drop(columns="_w").reset_index(drop=True)
    df.attrs.update({"model": cfg.name, "context_tokens": ctx, "kv_dtype": kv_dtype,
                     "mem_fraction": float(mem_fraction), "variants": list(variants), "tiers": chosen,
                     "concurrency": concurrency, "bound_context_tokens": bound_ctx, "include_all": include_all,
                     "usd_per_kwh": usd_per_kwh, "pue": pue,
                     "candidates": seen})
    return df


def fit_answer(df) -> str:
    """A comparison (``include_all=True`` for the 8-GPU part) in one sentence: which single 8-GPU
    nodes hold the weights at TP8, and the smallest layouts that also hold a full-context request."""
    a, fits = df.attrs, df[df["fits"]]
    node = df[(df["num_gpus"] == 8) & (df["tp"] == 8) & df["weights_fit"]]
    held = (f"the weights fit one 8-GPU node (TP8) of {', '.join(sorted(node['gpu'].str.upper())) or 'no GPU'}; "
            if a.get("include_all") else "")
    if fits.empty:
        return f"{a['model']}: {held}no candidate layout holds one {a['context_tokens']:,}-token request."
    small = fits[fits["num_gpus"] == fits["num_gpus"].min()]
    more = " …" if len(small) > 4 else ""
    return (f"{a['model']}: {held}the smallest layouts that hold a {a['context_tokens']:,}-token request use "
            f"{small['num_gpus'].iloc[0]} GPUs ({', '.join(small['label'].head(4))}{more}).")


def _fit_cell(r) -> str:
    why = html.escape(r["reason"])
    if not r["shardable"]:
        return f'<td class="na" title="{why}">cannot shard</td>'
    w = f'{r["weights_gib_per_gpu"]:.0f} GiB/GPU'
    if not r["weights_fit"]:
        return f'<td class="no" title="{why}">✗ weights ({w})</td>'
    n = r["max_kv_tokens"]
    kv = f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else f"{n:.0f}"
    only = (f'<br>fits only with <code>{html.escape(r["fits_with"])}</code>'
            if not r["fits"] and r["fits_with"].startswith("--") else "")
    return (f'<td class="{"yes" if r["fits"] else "part"}">✓ weights ({w})<br>'
            f'{r["full_context_requests"]} full-context req · {kv} KV tokens{only}</td>')


def fit_matrix_html(df) -> str:
    """An HTML GPU × layout matrix (rows GPUs, columns layouts) of a comparison made with
    ``include_all=True``; a cell: weights fit (GiB per GPU), full-context requests, max KV tokens.
    CSS classes ``yes`` / ``part`` / ``no`` / ``na`` colour it (see :mod:`k3lab.report`)."""
    a = df.attrs
    cols = [layout_name(n, tp, pp) for n, pp, tp in sorted({(r.num_gpus, r.pp, r.tp) for r in df.itertuples()})]
    cells = {(r["gpu"], layout_name(r["num_gpus"], r["tp"], r["pp"])): r for r in df.to_dict("records")}
    body = "".join(f"<tr><th>{html.escape(g.upper())}</th>" + "".join(
        _fit_cell(cells[(g, c)]) if (g, c) in cells else '<td class="na">—</td>' for c in cols) + "</tr>"
        for g in sorted(set(df["gpu"])))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    tag = '<span class="badge" style="background:#37474f;color:#fff">STUDY · derived</span>'
    var = f', sglang switches {", ".join(a["variants"])} (aiter-* on AMD GPUs only)' if a.get("variants") else ""
    return (f'<p>{html.escape(a["model"])}, requests of {a["context_tokens"]:,} tokens, KV {a["kv_dtype"]}, '
            f'mem_fraction {a["mem_fraction"]:g}{html.escape(var)} {tag} from the published config, datasheets and '
            "sglang 0.5.23's pool sizing. Green: the weights load and a full-context request fits with sglang's default "
            "state pool; amber: the weights load but no full-context request fits with the defaults (the cell names "
            "the state-pool setting under which one does, if any); red: the weights do not fit.</p>"
            f'<table class="fit"><thead><tr><th>GPU</th>{head}</tr></thead><tbody>{body}</tbody></table>')


def tier_columns(df, prefix: str = HOUR_PREFIX) -> dict[str, str]:
    """{tier: column name} of one price family (``usd_per_hour`` or the $/M tokens at the bound)."""
    return {c[len(prefix) + 1:-1]: c for c in df.columns if c.startswith(prefix + "[")}


def to_records(df) -> list[dict]:
    """Rows as JSON-ready dicts; the per-tier columns become dicts ``usd_per_hour`` and
    ``usd_per_million_tokens_at_bound`` (tier → value; tiers without a price are left out)."""
    hour, mtok = tier_columns(df, HOUR_PREFIX), tier_columns(df, MTOK_PREFIX)
    out = []
    for r in df.to_dict("records"):
        d = {k: v for k, v in r.items() if k not in hour.values() and k not in mtok.values()}
        for k, v in d.items():
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
            elif hasattr(v, "item"):
                d[k] = v.item()
        d[HOUR_PREFIX] = {t: float(r[c]) for t, c in hour.items() if r[c] == r[c]}
        d[MTOK_PREFIX] = {t: float(r[c]) for t, c in mtok.items() if r[c] == r[c]}
        out.append(d)
    return out


# --------------------------------------------------------------------------- text


def _fmt_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.rjust(w) if i in right else c.ljust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _money(v) -> str:
    return "—" if not v == v else (f"{v:,.0f}" if v >= 100 else f"{v:,.2f}")


def format_table(df) -> str:
    """The comparison as fixed-width text: a header line, the fit table, $/hour and $/M tokens
    by price source (tiers as lettered columns with a legend), and the MODEL footnote."""
    a = df.attrs
    var = f", variants {', '.join(a['variants'])}" if a.get("variants") else ""
    var += " (aiter-* on AMD GPUs only)" if any(v.startswith("aiter-") for v in a.get("variants", ())) else ""
    fit = df[df["fits"]] if len(df) else df
    n_set = int((~df["fits"] & df["fits_with"].str.startswith("--")).sum()) if len(df) else 0
    lines = [f"model {a['model']}: context {a['context_tokens']:,} tokens, KV {a['kv_dtype']}, "
             f"mem_fraction {a['mem_fraction']:g}{var} (sglang 0.5.23 pool sizing)",
             f"{len(fit)} of {a.get('candidates', len(df))} GPU × layout candidates fit (the weights load and one "
             f"{a['context_tokens']:,}-token request fits), smallest first"
             + (f"; {n_set} more only with the state-pool setting in 'fits with'" if n_set else "")
             + ("; all listed" if a.get("include_all") else "; --all lists the rest with the reason"),
             f"answer: {fit_answer(df)}", ""]
    if df.empty:
        lines.append("nothing fits: try more GPUs, --kv-dtype fp8, a shorter --context or --all")
        return "\n".join(lines)
    hour, mtok = tier_columns(df, HOUR_PREFIX), tier_columns(df, MTOK_PREFIX)
    used = [t for t in a["tiers"] if df[hour[t]].notna().any()]
    code = {t: chr(ord("a") + i) for i, t in enumerate(used)}
    heads = ["#", "layout", "GPUs", "TP", "PP", "nodes", "weights GiB/GPU", "weights fit", "max KV tokens",
             "full-ctx reqs", "fits with", f"MODEL bound tok/s (c<={a['concurrency']})"]
    body = []
    for i, r in enumerate(df.to_dict("records"), 1):
        w = "—" if not r["weights_gib_per_gpu"] == r["weights_gib_per_gpu"] else f"{r['weights_gib_per_gpu']:.1f}"
        b = "—" if not r["decode_bound_tok_s"] == r["decode_bound_tok_s"] else f"{r['decode_bound_tok_s']:,.0f}"
        cells = [str(i), r["label"], str(r["num_gpus"]), str(r["tp"]), str(r["pp"]), str(r["nodes"]), w,
                 "yes" if r["weights_fit"] else "no", f"{r['max_kv_tokens']:,}", f"{r['full_context_requests']:,}",
                 r["fits_with"], b]
        if a.get("include_all"):
            cells.append(r["reason"] or "fits")
        body.append(cells)
    if a.get("include_all"):
        heads.append("fits / reason")
    lines += _fmt_table(heads, body, right={0, 2, 3, 4, 5, 6, 8, 9, 11})
    for title, cols in (("$/hour per deployment (GPUs × $/GPU-hour), by price source", hour),
                        ("$/M output tokens at the MODEL bound (a lower bound on cost, not a measurement)", mtok)):
        lines += ["", title]
        rows = [[str(i), r["label"], *(_money(r[cols[t]]) for t in used)]
                for i, r in enumerate(df.to_dict("records"), 1)]
        lines += _fmt_table(["#", "layout", *(f"[{code[t]}]" for t in used)], rows, right={0, *range(2, 2 + len(used))})
    pr = prices.prices()
    lines += ["", *textwrap.wrap("price sources: " + "; ".join(f"[{code[t]}] {t}" + _tier_kind(pr, t) for t in used),
                                 width=110, subsequent_indent="  "),
              *textwrap.wrap(f"note: {BOUND_NOTE}. The bound is taken at c = --concurrency capped by what the KV "
                             f"pool holds, each request with a {a['bound_context_tokens']:,.0f}-token context "
                             "(the article's workload).", width=110, subsequent_indent="  ")]
    return "\n".join(lines)


def _tier_kind(pr, tier: str) -> str:
    if tier == prices.OVERRIDE_TIER:
        return " (given with --usd-per-gpu-hour)"
    sub = pr[pr["tier"] == tier]
    return "" if sub.empty else f" ({sub['kind'].iloc[0]}, {sub['source_date'].iloc[0]})"


# --------------------------------------------------------------------------- CLI


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the usage too)
        print(f"k3lab compare: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _overrides(items: list[str]) -> dict:
    out = {}
    for s in items:
        gpu, sep, val = s.partition("=")
        if not sep or not gpu:
            raise ValueError(f"--usd-per-gpu-hour expects GPU=PRICE, got {s!r}")
        try:
            price = float(val)
        except ValueError:
            raise ValueError(f"--usd-per-gpu-hour {s!r}: {val!r} is not a number") from None
        if not math.isfinite(price) or price <= 0:
            raise ValueError(f"--usd-per-gpu-hour {s!r}: a price must be a positive finite $/GPU-hour")
        if gpu.lower() in out:
            raise ValueError(f"--usd-per-gpu-hour: GPU {gpu!r} given twice")
        out[gpu.lower()] = price
    return out


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m k3lab compare",
                 description="Every GPU x layout that fits a model, smallest first, with $/hour per price "
                             "source and a decode roofline bound (a MODEL, not a measurement).")
    ap.add_argument("--model", default="kimi-k3", help=f"one of: {', '.join(known_models())} (default kimi-k3)")
    ap.add_argument("--context", type=int, default=None, help="request length in tokens (default: the model's max)")
    ap.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES)
    ap.add_argument("--mem-fraction", type=float, default=0.9, help="sglang --mem-fraction-static (default 0.9)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME",
                    help="an sglang switch, repeatable: " + ", ".join(VARIANTS))
    ap.add_argument("--price-tier", action="append", default=None, metavar="TIER",
                    help="a price source of data/prices.yaml, repeatable (default: all)")
    ap.add_argument("--usd-per-gpu-hour", action="append", default=[], metavar="GPU=PRICE",
                    help="override a GPU's $/GPU-hour (shown as tier 'override'), repeatable")
    ap.add_argument("--concurrency", type=int, default=64, help="requests in flight for the decode bound (default 64)")
    ap.add_argument("--all", action="store_true", help="also list layouts that do not fit, with the reason")
    out = ap.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print a JSON list of rows")
    out.add_argument("--csv", action="store_true", help="print CSV")
    return ap


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab compare [--model M] [--context C] [--json|--csv] …`` → exit 0, or 2 with one line."""
    args = _parser().parse_args(argv)
    try:
        df = compare_rows(load_model(args.model), args.context, args.kv_dtype, args.mem_fraction,
                          tuple(args.variant), args.price_tier, _overrides(args.usd_per_gpu_hour),
                          args.concurrency, args.all)
    except ValueError as e:
        print(f"k3lab compare: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps(to_records(df), indent=2) + "\n"
    elif args.csv:
        text = df.to_csv(index=False, float_format="%.6g", lineterminator="\n")
    else:
        text = format_table(df) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted (Python's documented recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(cli_main(sys.argv[1:]))
