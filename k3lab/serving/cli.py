"""``python -m k3lab predict``: the validated serving model for one deployment and workload.

Prints TPOT, TTFT, the decode step and output tok/s (whole deployment, per node, per GPU), each
with the band the model's out-of-source validation error gives, the concurrency the pools admit,
and the public measurements nearest to the question. It is a model: nothing runs on a GPU.
Exit status 0; 2 with one line for a bad argument or a question the model cannot answer.
"""

from __future__ import annotations

import math
import sys
import textwrap

from ..cli_parser import OneLineParser
from ..io import json_text
from ..limits import arg, help_text
from ..model.sharding import VARIANTS
from ..setting_traps import full_context_setting, setting_traps
from ..spelling import did_you_mean
from ..throughput import usd_per_million_tokens
from ..specs import Deployment, known_gpus, load_model, parse_layout
from . import attention_backend, dspark_answer, field, measured_bounds, slo
from .engines import ARRIVALS, ENGINES, LENGTHS, Engine, Harness, admission
from .model import SPEC_ALGORITHMS, Spec, Workload, block_tokens
from .observations import family_of, metric_of
from .predict import Prediction, band_words, differences, predict
from .slo import SLO

MODELS = ("kimi-k3",)


def _parser() -> OneLineParser:
    ap = OneLineParser(prog="python -m k3lab predict",
                       description="Serving-model prediction (a MODEL fitted on public Kimi K3 measurements, "
                                   "with its validated error band; nothing here measures a GPU).")
    ap.add_argument("--model", default="kimi-k3", help="kimi-k3 (the only model public measurements calibrate)")
    ap.add_argument("--layout", default=None,
                    help="the deployment as compare prints it, e.g. '8xmi355x tp8 [aiter-k3-opt]' or '16xb200 tp8 pp2' "
                         "(instead of --gpu/--gpus/--tp/--pp/--dcp; a [setting] adds its --variant)")
    ap.add_argument("--gpu", default=None, help="a GPU of data/hardware.yaml, e.g. mi355x, b300, b200")
    ap.add_argument("--gpus", type=arg("gpus", "--gpus"), default=None, help=help_text("GPUs in the deployment", "gpus"))
    ap.add_argument("--tp", type=arg("parallel", "--tp"), default=None, help=help_text("tensor-parallel size", "parallel"))
    ap.add_argument("--pp", type=arg("parallel", "--pp"), default=1,
                    help=help_text("pipeline-parallel size (default 1)", "parallel"))
    ap.add_argument("--dcp", type=arg("parallel", "--dcp"), default=1,
                    help=help_text("decode context parallel size (default 1)", "parallel"))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME",
                    help="an sglang switch, repeatable (see `python -m k3lab fit --help-variants`)")
    ap.add_argument("--input-len", type=arg("tokens", "--input-len"), required=True,
                    help=help_text("prompt tokens per request", "tokens"))
    ap.add_argument("--output-len", type=arg("tokens", "--output-len"), required=True,
                    help=help_text("output tokens per request", "tokens"))
    ap.add_argument("--concurrency", type=arg("requests", "--concurrency"), default=None,
                    help=help_text("requests in flight (whole deployment); without it, give a latency target and "
                                   "the answer is the highest concurrency that meets it", "requests"))
    slo.add_arguments(ap)
    ap.add_argument("--spec", default="none", choices=SPEC_ALGORITHMS, help="speculative decoding (default none)")
    ap.add_argument("--accept-len", type=arg("accept_len", "--accept-len"), default=None,
                    help=help_text("tokens emitted per verify step with --spec dspark; default: the median "
                                   "acceptance of the GPU family's public Kimi K3 runs on natural text (the lower "
                                   "group where repeated-prompt benchmarks form a higher one), the band spanning "
                                   "that group", "accept_len"))
    ap.add_argument("--block-size", type=arg("draft_tokens", "--block-size"), default=None,
                    help=help_text("DSpark draft tokens per step (sglang --speculative-dspark-block-size; default: "
                                   "the draft's, 7; public runs draft 2 to 8, so at most 64: past it a verify step "
                                   "is a prefill of every request)", "draft_tokens"))
    ap.add_argument("--attention-backend", default=None, choices=tuple(attention_backend.BACKENDS),
                    help="sglang's --attention-backend on an AMD GPU: aiter (AITER's fast MLA prefill, 12 heads padded "
                         "to 16; the default priced) or triton (sglang's ROCm default for Kimi K3, the slow fallback); "
                         "either way the output prices the other beside it")
    ap.add_argument("--kv-dtype", default="bf16", choices=("bf16", "fp8"))
    ap.add_argument("--engine", default="sglang", choices=ENGINES,
                    help="the serving engine: its scheduler and admission defaults (default sglang)")
    ap.add_argument("--max-running-requests", type=arg("requests", "--max-running-requests"), default=None,
                    help=help_text("the engine's request limit as the run sets it (sglang --max-running-requests, "
                                   "vLLM/ATOM --max-num-seqs; default: the engine's)", "requests"))
    ap.add_argument("--mamba-full-memory-ratio", type=arg("ratio", "--mamba-full-memory-ratio"), default=None,
                    metavar="R", help=help_text("sglang's state-pool memory : KV memory (default 0.9): the setting "
                                                "quote and compare name for a B300 to hold a full-context request; "
                                                "it sets how many requests run", "ratio"))
    ap.add_argument("--max-mamba-cache-size", type=arg("requests", "--max-mamba-cache-size"), default=None,
                    metavar="N", help=help_text("sglang's state-pool slots (instead of the ratio; 5 a request with "
                                                "the radix cache)", "requests"))
    ap.add_argument("--disable-radix-cache", action="store_true",
                    help="sglang's --disable-radix-cache: one state slot a request, no prefix caching; with "
                         "--max-running-requests M the state pool is M slots (what quote and compare name when "
                         "a latency target wants more requests than the radix cache leaves room for)")
    ap.add_argument("--max-batched-tokens", type=arg("tokens", "--max-batched-tokens"), default=None,
                    help=help_text("tokens a forward pass takes (sglang --chunked-prefill-size, vLLM "
                                   "--max-num-batched-tokens)", "tokens"))
    ap.add_argument("--mem-fraction", type=arg("fraction", "--mem-fraction"), default=None,
                    help=help_text("the engine's memory fraction (sglang --mem-fraction-static, vLLM "
                                   "--gpu-memory-utilization)", "fraction"))
    ap.add_argument("--arrival", default=None, choices=ARRIVALS,
                    help="how the benchmark sends requests (closed_loop: c clients started together; default: the "
                         "engine's usual harness, data/serving_model.yaml)")
    ap.add_argument("--lengths", default=None, choices=LENGTHS,
                    help="prompt and output lengths: fixed, uniform (with --range-ratio), dataset (default: the "
                         "engine's usual harness: fixed for sglang and vLLM, uniform 0.8 for ATOM's recipes)")
    ap.add_argument("--range-ratio", type=arg("range_ratio", "--range-ratio"), default=None,
                    help=help_text("with --lengths uniform: the low end as a share of the stated length (e.g. 0.8)",
                                   "range_ratio"))
    ap.add_argument("--usd-per-gpu-hour", action="append", default=[], metavar="GPU=PRICE",
                    help="your $/GPU-hour for the layout's GPU (as quote and compare take it): adds $/M output tokens "
                         "beside the tok/s (and to the DSpark summary table)")
    ap.add_argument("--brief", action="store_true",
                    help="the answer only: the latency to expect, whether DSpark pays and its table (with --spec "
                         "dspark), the price, the setting traps and the prediction's table; not the reasons behind "
                         "them (newcomers 40-41: 'about 50 dense lines')")
    ap.add_argument("--json", action="store_true", help="print JSON")
    return ap


#: the line a --brief answer ends with: what the full one adds
BRIEF_TAIL = ("  (--brief: the answer only; without it the reasons follow: whether DSpark pays and why, the nearest public "
              "runs and checks, the acceptance groups, the model's domain and parameters)")


def through_table(lines: list[str]) -> list[str]:
    """:func:`format_prediction`'s ``lines`` after its first two (header and workload) through its table: the
    model's family and bands, the admission and domain notes, the table and its notes; not the nearest public
    runs or the model's parameters behind it."""
    i = next(k for k, x in enumerate(lines) if k > 2 and x.rstrip().endswith("band"))
    j = next((k for k in range(i, len(lines)) if not lines[k].strip()), len(lines))
    return lines[2:j]


def price_line(p: Prediction, usd: float, op=None, target: SLO | None = None) -> str:
    """'  price: $5.04/M output tokens at $3.00/GPU-h (band $3.90-$6.51)': the prediction's cost, with
    the band where its tok/s has one that holds here; under a latency ``target`` whose operating point ``op``
    has both band edges, the quote's band first, its ends at the edges' concurrencies ("band at your target
    $3.08-$9.04, c121 to c41; at c76 itself $3.90-$6.51": newcomer 55)."""
    iv = p.interval("output_tok_s")
    m = lambda tok_s: f"${usd_per_million_tokens(tok_s, p.num_gpus, usd):,.2f}"  # noqa: E731
    band = f" (band {m(iv[1])}-{m(iv[0])})" if p.band_holds() else " (no band here)"
    if (p.band_holds() and op is not None and op.slow is not None and op.fast is not None and target is not None
            and not slow_outside(op, target) and op.point is not None and op.point.concurrency == p.concurrency):
        band = (f" (band at your target {m(op.fast_tok_s)}-{m(op.slow_tok_s)}, c{op.fast.concurrency:,} to "
                f"c{op.slow.concurrency:,}; at c{p.concurrency:,} itself {m(iv[1])}-{m(iv[0])})")
    return (f"  price: ${usd_per_million_tokens(p.output_tok_s, p.num_gpus, usd):,.2f}/M output tokens at ${usd:,.2f}/GPU-h"
            + band + (" with DSpark" if p.spec_on else ""))


def _deployment(args) -> tuple[Deployment, tuple]:
    """The deployment and the sglang switches: from --layout (one notation with compare and the
    notebooks; a trailing ``[a, b]`` names settings) or from --gpu/--gpus/--tp/--pp/--dcp."""
    variants = tuple(args.variant)
    if args.layout is not None:
        if any(getattr(args, k) is not None for k in ("gpu", "gpus", "tp")) or args.pp != 1 or args.dcp != 1:
            raise ValueError("give either --layout or --gpu/--gpus/--tp (with --pp/--dcp), not both")
        text, settings = layout_settings(args.layout)
        variants += settings
    else:
        missing = [f"--{k}" for k in ("gpu", "gpus", "tp") if getattr(args, k) is None]
        if missing:
            raise ValueError(f"give --layout, or all of --gpu, --gpus and --tp (missing {', '.join(missing)})")
        if args.gpu.lower() not in known_gpus():
            raise ValueError(f"unknown GPU {args.gpu!r}{did_you_mean(args.gpu, known_gpus())}; known GPUs: "
                             f"{', '.join(known_gpus())}")
    twice = sorted({v for v in variants if variants.count(v) > 1})
    if twice:  # the second says nothing the first did not: a typo of another, most likely
        raise ValueError(f"setting {twice[0]} given twice (--layout's [...] and --variant name each setting once)")
    if args.layout is not None:
        return parse_layout(text), variants
    return Deployment(args.gpu.lower(), args.gpus, args.tp, args.pp, dcp=args.dcp), variants


def layout_settings(layout: str) -> tuple[str, tuple]:
    """``'8xmi355x tp8 [a, b]'`` → (``'8xmi355x tp8 '``, ``('a', 'b')``): one ``[...]`` group at
    the end, each setting once; ValueError in one line naming what is wrong otherwise."""
    text, bracket, group = layout.partition("[")
    if not bracket:
        return text, ()
    body, close, after = group.partition("]")
    if not close or after.strip():  # '... [' left open, '[a] [b]', '[a] tp8'
        raise ValueError(f"--layout {layout!r}: " + ("one [...] settings group per layout, at its end"
                                                     if close else "a setting is written [name, ...] at the end"))
    names = tuple(v.strip() for v in body.split(","))
    if not all(names):
        raise ValueError(f"--layout {layout!r}: an empty name in its [...] settings group")
    return text, names


def _spec(args, gpu: str) -> tuple[Spec, tuple | None, str]:
    """(the speculative setting, the acceptance range its answer spans, how it was chosen): DSpark
    without --accept-len takes the GPU family's own public runs (every run's where it has none)."""
    if args.spec == "none":
        if args.accept_len is not None or args.block_size is not None:
            typed = [f for f, v in (("--accept-len", args.accept_len), ("--block-size", args.block_size)) if v is not None]
            raise ValueError(f"{' and '.join(typed)} need{'s' if len(typed) == 1 else ''} --spec dspark")
        return Spec(), None, ""
    if args.output_len == 1:  # the first token comes from the prefill: no decode step for a draft to speed up
        raise ValueError("--spec dspark with --output-len 1: one output token comes from the prefill alone, with no "
                         "decode step for a draft to speed up; DSpark cannot change it (drop --spec)")
    block = args.block_size
    top = None if block is None else block + 1  # a verify step emits the accepted drafts and one bonus token
    if args.accept_len is not None:
        if top is not None and args.accept_len > top:
            raise ValueError(f"--accept-len {args.accept_len:.10g} is more than --block-size {block} allows: a verify "
                             f"step emits at most {top} tokens ({block} drafts + the bonus token)")
        return (Spec(args.spec, args.accept_len, block), None, f"{args.accept_len:g} tokens per verify step (--accept-len)")
    fam = family_of(gpu)
    g = field.plan_accept(fam)
    mid, lo, hi = g["median"], g["low"], g["high"]
    whose = f"{fam}'s own" if g["of"] < len(field.accept_lengths()) else "every family's"
    if top is not None and mid > top:
        raise ValueError(f"--block-size {block} allows at most {top} tokens per verify step ({block} drafts + the bonus "
                         f"token), below the {mid:g} public Kimi K3 runs accept (median): give --accept-len (at most "
                         f"{top}) with it")
    capped = top is not None and hi > top  # runs that drafted more accepted more than this block can
    hi = min(hi, top) if capped else hi
    # (newcomer 47: "the median of the lower group" was jargon): which runs, by what splits them (plan_accept)
    which = (f"the median of the {g['runs']} of {g['of']} public Kimi K3 runs ({whose}) on prompts that do not "
             f"repeat, what real traffic gets; the range spans those {g['runs']}" if g["grouped"] else
             f"the median of {g['runs']} public Kimi K3 runs ({whose}); the range spans them")
    return (Spec(args.spec, mid, block), (lo, hi),
            f"{mid:g} tokens per verify step, {which}, {lo:g}-{hi:g}"
            + (f", the top capped at what --block-size {block} allows" if capped else "") + "; --accept-len sets one")


def quote_pricing(cfg, dep: Deployment, variants, args, target: SLO) -> str | None:
    """Where sglang's defaults hold no full-context request but a setting does: the setting and
    concurrency ``quote`` and ``compare`` price this layout at under ``target``
    (:func:`k3lab.compare.full_context_pricing`), and how to get those numbers here (newcomer 26: three
    B300 prices for one question, predict's at the defaults among them, none saying which); None where
    they price it at sglang's defaults or not at all."""
    from ..compare import full_context_pricing

    fc = full_context_pricing(cfg, dep, variants, args.input_len, args.output_len, args.kv_dtype,
                              args.mem_fraction or 0.9, target)
    if fc is None or not fc["flags"]:
        return None
    return (f"`quote` and `compare` price {dep.label} for a {cfg.max_position_embeddings:,}-token request beside "
            f"yours at {target.label()} with {fc['flags']}: c{fc['concurrency']:,} (add those flags here for its "
            "numbers)")


def _your_setting(cfg, dep, variants, args, engine: Engine, dspark: bool, p: Prediction) -> str:
    """What the user's state-pool flags (and --max-running-requests) do here, in one sentence: whether a
    request of the model's full context fits with them, the requests it runs, and where the state pool
    admits fewer than the --max-running-requests asked, by how many (:func:`k3lab.memory.fit`)."""
    from .. import memory

    vs = tuple(sorted({*variants, "dspark"})) if dspark else tuple(sorted(set(variants)))
    full = memory.fit(cfg, dep, args.mem_fraction or 0.9, args.kv_dtype, context_tokens=cfg.max_position_embeddings,
                      variants=vs, mamba_full_memory_ratio=engine.mamba_full_memory_ratio,
                      max_mamba_cache_size=engine.max_mamba_cache_size, disable_radix_cache=engine.disable_radix_cache,
                      max_running_requests=engine.max_running_requests)
    flags = " ".join(f for f in (engine.state_pool_flags(), "" if engine.max_running_requests is None
                                 else f"--max-running-requests {engine.max_running_requests}") if f)
    out = (f"with your {flags}, {dep.label}{' with DSpark' if dspark else ''} "
           + (f"holds a {cfg.max_position_embeddings:,}-token request" if full.fits else
              f"holds no {cfg.max_position_embeddings:,}-token request")
           + f" and runs {p.concurrency:,} of your {p.concurrency_asked:,} requests at once")
    adm = admission(cfg, dep, args.input_len + args.output_len, dspark, variants, args.kv_dtype, engine,
                    args.mem_fraction)
    asked = engine.max_running_requests
    if asked is not None and adm.max_running_requests_per_replica < asked:
        out += (f"; the state pool admits {adm.max_running_requests_per_replica:,} of your --max-running-requests "
                f"{asked:,} per replica" + ("" if engine.disable_radix_cache or engine.max_mamba_cache_size else
                                            " (5 state slots a request with the radix cache: --disable-radix-cache "
                                            "takes 1)"))
    return out


def slow_outside(op, target: SLO) -> bool:
    """Whether an operating point's slow edge lies outside the model's validated domain for a metric
    the target limits: a slow edge is the band's, and there the table prints no band, so neither is
    an edge said (it read "c6 at the band's slow edge" above "No band holds here")."""
    # (or no band at all for the speed: DSpark on a family where it is not validated printed "nan tok/s": attack 7)
    return op is not None and op.slow is not None and bool(
        op.slow.gaps("output_tok_s") or (target.max_ttft_ms is not None and op.slow.gaps("ttft_ms"))
        or op.slow.interval("output_tok_s") is None)


def slo_lines(p: Prediction, target: SLO, op=None) -> list[str]:
    """What the latency target says of ``p``: met or missed, and (``op``, an operating point) the
    highest concurrency that meets it, at the model's value and at its band's slow edge."""
    if not target.active:
        return []
    miss = target.misses(p)
    out = [f"  latency target {target.label()}: " + ("met at the model's value" if not miss else
                                                      f"missed ({'; '.join(miss)})")]
    if op is not None:
        best = "none" if op.point is None else f"c{op.point.concurrency:,}"
        edge = (("none (no validated band here)" if op.slow.interval("output_tok_s") is None else
                 "none (outside the model's validated domain: no band there)") if slow_outside(op, target) else
                f"c{op.slow.concurrency:,} ({op.slow_tok_s:,.0f} tok/s)" if op.slow is not None
                else f"none ({op.slow_why})")
        fast = ("" if op.fast is None or op.slow is None or slow_outside(op, target) else
                f", c{op.fast.concurrency:,} ({op.fast_tok_s:,.0f} tok/s) at its fast edge")
        out.append(f"  highest concurrency that meets it: {best} at the model's value; {edge} at the band's slow edge"
                   + fast)
    return out


#: how a nearest public figure's kind reads (the deployment's output tok/s after the normalisation it names)
NEAREST_KINDS = {"output_tok_s": "output tok/s (deployment)", "tpot_ms": "TPOT ms", "ttft_ms": "TTFT ms"}


def _differs(n: dict, p: Prediction) -> str:
    """'; differs from your question in: its layout TP8+DCP8, 22 running (yours 32)': what sets a
    nearest run's fitted value apart from the question's own answer (empty when nothing listed does)."""
    d = differences(n, p)
    out = f"; differs from your question in: {', '.join(d)}" if d else ""
    # a run the fit misses by more than the band of its metric (that run's kind and speculative setting)
    b = p.bands.get(metric_of(n["kind"], n.get("accept_len") is not None))
    miss = abs(math.log(n["fitted"] / n["value"])) if n["value"] > 0 and n["fitted"] > 0 else 0.0
    if b is not None and miss > b:
        out += f"; beyond the band (x{math.exp(b):.2f}): a run the fit does not explain"
    elif b is None and miss > math.log(2):
        out += "; a miss beyond x2 (no validated band here): a run the fit does not explain"
    return out


#: a benchmark harness's arrivals (:data:`k3lab.serving.engines.ARRIVALS`) and the model's regimes
#: (:data:`k3lab.serving.engines.REGIMES`) in words
ARRIVAL_WORDS = {"closed_loop": "each client sends its next request when one ends", "ramped": "clients ramped one by one",
                 "rate": "requests at a set rate", "burst": "every request sent at once"}
REGIME_WORDS = {"cohort": "run in step", "staggered": "arrive spread out", "mixed": "ride prompts in decode steps"}


def format_prediction(p: Prediction, accept_note: str = "", flags: tuple = (), after_table: list[str] = (),
                      stated: set = frozenset(), bounds: dict | None = None) -> str:
    """The human-readable answer: header naming the settings (``flags``: sglang flags the question
    set, beside the variants), a table with bands (or "not validated" for a metric without a usable
    band), the domain caveat, ``after_table`` (lines behind the answer, e.g. DSpark's acceptance
    groups: :func:`k3lab.serving.dspark_answer.acceptance_lines`), nearest points (but those whose
    ids are in ``stated``: said above, e.g. by the DSpark answer's "measured" line). ``bounds``: the
    measured (floor, ceiling) ms per latency kind (:mod:`k3lab.serving.measured_bounds`), applied by the
    latency line's rule: a band narrowed to them; where the model's value sits outside them, the measured
    range in its place and the model's value named beside (newcomer 39: "TTFT (ms) 3,317 not validated"
    under "TTFT 3.94-8.86 s (the model's 3.32 s under it)"); where no band holds, the measured range as one."""
    def band_word(kind):
        return band_words(p.band_of(kind))

    # (newcomers 47-48: "cohort regime: closed_loop arrivals" needed docs/serving-model.md): the load in words, the
    # regime's name after them for the docs
    head = [f"kimi-k3 on {p.layout} — {p.engine}; load: {ARRIVAL_WORDS[p.harness.arrival]}, {p.harness.lengths} "
            f"lengths (requests {REGIME_WORDS[p.regime]}: the model's {p.regime} regime), settings: "
            f"{', '.join([*p.variants, *flags]) or 'defaults'}",
            f"  workload: {p.input_len:,} in / {p.output_len:,} out, concurrency {p.concurrency:,}"
            + (f" running (asked {p.concurrency_asked:,}: the engine admits {p.admitted:,}, the rest queue and wait "
               "in the TTFT)" if p.concurrency < p.concurrency_asked else f" (the engine admits {p.admitted:,})")
            + (f", DSpark at {accept_note}" if p.spec_on else ", no speculative decoding"),
            f"  serving model of family {p.family}; bands = the out-of-sample error that holds 90% of public runs "
            f"the fit did not see: {'DSpark' if p.spec_on else 'decode'} {band_word('output_tok_s')}"
            # a band printed beside a table that says "outside its domain" read as two answers (newcomer 14)
            + (" inside its validated domain (not here: below)" if p.outside and p.band_of("output_tok_s") else "")
            + f", TTFT {band_word('ttft_ms')}"]
    if p.concurrency < p.concurrency_asked or (p.concurrency == p.admitted and p.admission_note):
        # also where the question sits right at the cap (newcomer 16: "admits 32" with DSpark, 87 without: why?)
        head.append(f"  the pools admit {p.admitted:,}: {p.admission_note}")
    for what, gaps in ((f"{'DSpark' if p.spec_on else 'decode'} speed", p.outside), ("TTFT", p.ttft_outside)):
        if gaps:  # the band is an error measured inside the domain: outside it, it says nothing
            head.append(f"  {what}: OUTSIDE the validated domain: {'; '.join(gaps)}. No band holds here (the table "
                        "prints none): read the value as the model's extrapolation.")
    if p.outside and not p.ttft_outside and p.band_of("ttft_ms"):   # newcomer 56: a TTFT band beside "outside"
        head.append("  TTFT: inside its validated domain (its public runs cover other prompts and layouts than "
                    "decode's), so its band holds.")
    head.append("")
    rows = [("output tok/s, deployment", "output_tok_s", 1.0, "{:,.0f}"),
            ("output tok/s per node", "output_tok_s", 1 / p.num_nodes, "{:,.0f}"),
            ("output tok/s per GPU", "output_tok_s", 1 / p.num_gpus, "{:,.1f}"),
            ("TPOT (ms)", "tpot_ms", 1.0, "{:,.1f}"), ("TTFT (ms)", "ttft_ms", 1.0, "{:,.0f}"),
            ("decode step (ms)", "itl_ms", 1.0, "{:,.1f}")]
    # under DSpark the table is DSpark's (newcomer 17/18: "plan on" gives the figures without it, the table those with
    # it: easy to quote the wrong one)
    body, bounded = [f"  {'':<26}{'with DSpark' if p.spec_on else 'predicted':>11}  {'band':>21}"], False
    for name, kind, sc, fmt in rows:
        if kind in ("tpot_ms", "itl_ms") and not p.decodes:
            body.append(f"  {name:<26}{'—':>11}  {'no decode step':>21}")
            continue
        iv = p.interval(kind, sc)
        if kind == "output_tok_s" and getattr(p, kind) * sc < 10:  # (attack 6: "0" for 0.5 tok/s) two figures
            fmt = "{:,.2g}"
        outside = p.ttft_outside if kind == "ttft_ms" else p.outside
        band = ("not validated" if iv is None else "outside its domain" if outside
                else f"{fmt.format(iv[0])} – {fmt.format(iv[1])}")
        value, before = fmt.format(getattr(p, kind) * sc), band
        b = [None if x is None else x * sc for x in (bounds or {}).get(kind, (None, None))]   # per node, per GPU
        if any(x is not None for x in b):
            side, (lo, hi) = measured_bounds.bounded(getattr(p, kind) * sc, None if iv is None or outside else iv, *b)
            span = measured_bounds.span_text(lo, hi, lambda x: fmt.format(x))
            if side:   # the model's value is outside what public runs on this setup measured: theirs in its place
                value, band = span.replace("-", "–"), f"measured; model {value}"
            elif iv is not None and not outside:
                band = span.replace("-", " – ")
            elif lo is not None and hi is not None:
                band = f"measured {span.replace('-', '–')}"
            bounded = bounded or band != before
        body.append(f"  {name:<26}{value:>11}  {band:>21}")
    body += [] if p.decodes else [f"  TPOT and decode step: — ({p.NO_DECODE})"]
    body += ["  TPOT, TTFT: narrowed to (or, where the model falls outside, replaced by) what public runs on this setup "
             "measured: the latency line above" + ("; output tok/s to what those latencies allow, c x output / (TTFT + "
                                                   "(output - 1) x TPOT)" if "output_tok_s" in (bounds or {}) else "")
             ] if bounded else []
    near = ["", "  nearest public measurements (same family; the fit's value for each run as it ran, its harness, "
                "block and build, and that over the measurement):"]
    left = [n for n in p.nearest if n["id"] not in stated]
    near = near if left else []
    for n in left:
        norm = n.get("normalisation") or "as published"
        was = "" if norm in ("as published", "deployment") else f"; normalised from the published figure: {norm}"
        near.append(f"    {n['id']}  {n['gpu'].upper()} {n['layout']}  {n['workload']}  {NEAREST_KINDS.get(n['kind'], n['kind'])} "
                    f"{n['value']:,.1f}  (fit {n['fitted']:,.1f}, x{n['fitted'] / n['value']:.2f}{was}{_differs(n, p)})")
    pr = p.params
    tail = ["", f"  A model, not a measurement: weights stream at {pr.hbm_efficiency:.0%} of peak HBM bandwidth, "
                f"GEMMs at {pr.flop_efficiency:.0%} of peak FLOP/s, decode attention reads KV at {pr.kv_efficiency:.0%}, "
                f"{pr.layer_overhead_us:.0f} µs per layer per pass, {pr.request_overhead_ms:.0f} ms per request "
                f"(fitted on public data; means of the benchmark, no percentiles)."]
    return "\n".join(head + body + ([""] + list(after_table) if after_table else []) + near + tail)


def beyond_latency_caps(p: Prediction) -> None:
    """ValueError (one line) when the model's TPOT or TTFT lies past k3lab's latency cap
    (:meth:`Prediction.over_latency_cap`): never printed as a number."""
    over = p.over_latency_cap()
    if over:
        raise ValueError(f"{p.layout}: {over}; ask a smaller question (a shorter prompt or output, fewer requests, "
                         f"a smaller --block-size)")


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab predict --layout '8xmi355x tp8' --input-len I --output-len O --concurrency C …``
    (or ``--gpu G --gpus N --tp T`` for the layout)."""
    args = _parser().parse_args(argv)
    try:
        if args.model not in MODELS:
            raise ValueError(f"the serving model is calibrated on Kimi K3 measurements only; got --model {args.model!r}")
        dep, variants = _deployment(args)
        unknown = sorted(set(variants) - set(VARIANTS))
        if unknown:
            raise ValueError(f"unknown variant(s) {unknown}{did_you_mean(unknown[0], VARIANTS)}; known: "
                             f"{', '.join(VARIANTS)}")
        spec, accept, accept_note = _spec(args, dep.gpu)
        from ..compare_view import _overrides
        from ..prices import price_warnings

        priced = _overrides(args.usd_per_gpu_hour)
        other = sorted(set(priced) - {dep.gpu})
        if other:
            raise ValueError(f"--usd-per-gpu-hour prices {other[0].upper()}, but this layout's GPU is "
                             f"{dep.gpu.upper()}: give {dep.gpu}=PRICE")
        usd = priced.get(dep.gpu)
        for w in price_warnings(priced):
            print(f"k3lab predict: warning: {w}", file=sys.stderr)
        # Engine refuses a state-pool flag beside another engine, and sglang's pool sizing
        # (k3lab.model.pool_settings.StatePoolSettings) a ratio its branch ignores
        engine = Engine(args.engine, args.max_running_requests, args.max_batched_tokens, args.mem_fraction,
                        args.mamba_full_memory_ratio, args.disable_radix_cache, args.max_mamba_cache_size)
        yours = bool(engine.state_pool_flags()) or (args.max_running_requests is not None and args.engine == "sglang")
        if (args.lengths == "uniform") != (args.range_ratio is not None):
            raise ValueError("--range-ratio goes with --lengths uniform (and only with it)")
        harness = (None if args.arrival is None and args.lengths is None
                   else Harness(args.arrival or "closed_loop", args.lengths or "fixed", args.range_ratio))
        target, cfg = slo.from_args(args), load_model(args.model)
        target.check_decodes(args.output_len, "--max-ttft or --concurrency")
        if args.concurrency is None and not target.active:
            raise ValueError("give --concurrency C, or a latency target (--max-tpot MS, --max-ttft MS or "
                             "--min-tok-s-per-user N) to find the highest concurrency that meets it")
        kernel = attention_backend.prefill_attention(dep, args.attention_backend)
        op = slo.operating_point(cfg, dep, args.input_len, args.output_len, target, spec, variants, args.kv_dtype,
                                 args.mem_fraction, accept_range=accept, engine=engine,
                                 harness=harness, prefill_attention=kernel) if target.active else None
        if args.concurrency is None and op.point is None:
            raise ValueError(f"{dep.label}: {op.why}")
        c = op.point.concurrency if args.concurrency is None else args.concurrency
        work = Workload(args.input_len, args.output_len, c)
        p = predict(cfg, dep, work, spec, variants, args.kv_dtype, args.mem_fraction, accept_range=accept,
                    engine=engine, harness=harness, prefill_attention=kernel)
        beyond_latency_caps(p)
        traps = setting_traps(cfg, dep, args.input_len, args.output_len, variants, args.kv_dtype, slo=target,
                              concurrency=args.concurrency, prefill_attention=kernel, engine=engine, spec=spec,
                              harness=harness)
        if not engine.state_pool_flags():
            pool = full_context_setting(cfg, dep, variants, args.kv_dtype, args.mem_fraction or 0.9, p.concurrency_asked,
                                        dspark=spec.on)
            traps += [pool] if pool else []
            there = (quote_pricing(cfg, dep, variants, args, target)
                     if pool and target.active and args.concurrency is None and not spec.on else None)
            traps += [there] if there else []
        backends = attention_backend.compare(cfg, dep, work, spec, variants, args.kv_dtype, args.mem_fraction,
                                             accept, engine, harness)
        ds = (dspark_answer.answer(cfg, dep, work, spec, variants, args.kv_dtype, args.mem_fraction, kernel, engine,
                                   harness) if spec.on else None)
        # what public runs on this very setup measured, as floors and ceilings (newcomer 34: NVIDIA TTFT has no band, and "3.3 s"
        # could be off either way; the same layout and lengths measured more at half the concurrency)
        block = (spec.block or block_tokens()) if spec.on else None
        # (newcomer 35: "one plan-on line with bounds for both latencies"): DSpark's TPOT spans its acceptance
        # group where no band holds
        span = (() if ds is None or not ds.span else
                ((ds.span[2].tpot_ms, ds.span[1].tpot_ms), " across its acceptance; no band"))
        # the setting asked first (newcomer 36: "open with the DSpark answer")
        floor_rows = ([("", p)] if ds is None else
                      [(f"with DSpark at {p.accept_len:g}", p, *span), ("without DSpark", ds.plain)])
        latency = measured_bounds.parts(floor_rows, kernel, args.kv_dtype, block)
        # under DSpark the answer opens with each setting's latency whether or not public runs bound it (newcomer 40:
        # "open with a three-line answer: the TPOT to plan on, the TTFT range, whether DSpark pays")
        expect = ([] if ds is None else measured_bounds.texts(floor_rows, kernel, args.kv_dtype, block),
                  measured_bounds.source(floor_rows, kernel, args.kv_dtype, block))

        def bounds_of(q: Prediction) -> dict:   # a row of the DSpark table: its measured (floor, ceiling), ms by kind
            fl, ce = (measured_bounds.floors(q, kernel, args.kv_dtype, block),
                      measured_bounds.ceilings(q, kernel, args.kv_dtype, block))
            out = {k: (getattr(fl.get(k), "value", None), getattr(ce.get(k), "value", None)) for k in {*fl, *ce}}
            rate = measured_bounds.throughput(q, out)   # what the latencies' bounds allow the output rate
            return {**out, "output_tok_s": rate} if rate else out
    except (ValueError, OverflowError) as e:
        print(f"k3lab predict: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        text = json_text({**p.as_dict(), "slo": target.as_dict(), "slo_met": not target.misses(p),
                           "slo_concurrency": None if op is None or op.point is None else op.point.concurrency,
                           "slo_slow_edge_concurrency": None if op is None or op.slow is None
                           or slow_outside(op, target) else op.slow.concurrency,
                           "slo_fast_edge_concurrency": None if op is None or op.fast is None or op.slow is None
                           or slow_outside(op, target) else op.fast.concurrency,
                           "setting_traps": traps,
                           "your_setting": _your_setting(cfg, dep, variants, args, engine, spec.on, p) if yours
                           else None,
                           "measured_bounds": measured_bounds.as_dict(p, kernel, args.kv_dtype, block),
                           "attention_backend": None if backends is None else {
                               "priced": args.attention_backend or "aiter", **backends.as_dict()},
                           **({} if ds is None else {**ds.as_dict(), "plan_on": dspark_answer.plan_on(p, ds)}),
                           **({} if usd is None else {"usd_per_gpu_hour": usd, "usd_per_million_output_tokens":
                                                      usd_per_million_tokens(p.output_tok_s, p.num_gpus, usd)})})
    else:
        flags = (engine.state_pool_flags(),) if engine.state_pool_flags() else ()
        after = [] if ds is None else dspark_answer.acceptance_lines(p, ds)
        stated = set() if ds is None else dspark_answer.named_runs(p)
        lines = format_prediction(p, accept_note, flags, after, stated, bounds_of(p)).split("\n")  # the target and the traps under the workload line
        # newcomer 21: the DSpark answer came after a four-line setting trap: it comes first, under the target
        said = (textwrap.wrap(" ".join(latency), width=118, initial_indent="  ", subsequent_indent="    ")
                if latency[0] and ds is None else [])
        # which prefill kernel was priced (the user's flag, or k3lab's default said as one), the other beside it
        kernels = ([] if backends is None else attention_backend.lines(
            backends, args.attention_backend or "aiter", args.attention_backend is not None))
        if args.brief:   # the answer, not its reasons (newcomers 40-41)
            print("\n".join(lines[:2] + slo_lines(p, target, op)
                            + ([] if ds is None else dspark_answer.lines(p, ds, usd=usd, target=target, latency=expect,
                                                                     bounds_of=bounds_of, brief=True, kernel=kernel,
                                                                     kv_dtype=args.kv_dtype))
                            + ([price_line(p, usd, op, target)] if usd is not None and ds is None else [])
                            + [f"  a setting that changes the answer: {t}" for t in traps]
                            # which prefill kernel was priced, and the other beside it (newcomer 42: "--brief never
                            # shows which backend was priced")
                            + kernels
                            + said + ([] if ds is not None else through_table(lines))
                            + textwrap.wrap(BRIEF_TAIL, width=118, subsequent_indent="    ")))
            return 0
        text = "\n".join(lines[:2] + slo_lines(p, target, op)
                         + ([] if ds is None else dspark_answer.lines(p, ds, usd=usd, target=target, latency=expect,
                                                                  bounds_of=bounds_of, kernel=kernel,
                                                                  kv_dtype=args.kv_dtype))
                         + ([price_line(p, usd, op, target)] if usd is not None and ds is None else [])
                         + [f"  a setting that changes the answer: {t}" for t in traps]
                         + ([f"  your setting: {_your_setting(cfg, dep, variants, args, engine, spec.on, p)}"]
                            if yours else [])  # the user's own state-pool setting: what it does
                         + kernels
                         + said + lines[2:])
    print(text)  # a closed pipe (`| head`) is k3lab.cli.QuietStdout's
    return 0
