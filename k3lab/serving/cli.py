"""``python -m k3lab predict``: the validated serving model for one deployment and workload.

Prints TPOT, TTFT, the decode step and output tok/s (whole deployment, per node, per GPU), each
with the band the model's out-of-source validation error gives, the concurrency the pools admit,
and the public measurements nearest to the question. It is a model: nothing runs on a GPU.
Exit status 0; 2 with one line for a bad argument or a question the model cannot answer.
"""

from __future__ import annotations

import math
import os
import sys

from ..cli_parser import OneLineParser
from ..io import json_text
from ..limits import arg, help_text
from ..model.sharding import VARIANTS
from ..specs import Deployment, known_gpus, load_model, parse_layout
from . import field
from .model import SPEC_ALGORITHMS, Spec, Workload
from .predict import Prediction, predict

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
    ap.add_argument("--concurrency", type=arg("requests", "--concurrency"), required=True,
                    help=help_text("requests in flight (whole deployment)", "requests"))
    ap.add_argument("--spec", default="none", choices=SPEC_ALGORITHMS, help="speculative decoding (default none)")
    ap.add_argument("--accept-len", type=arg("accept_len", "--accept-len"), default=None,
                    help=help_text("tokens emitted per verify step with --spec dspark; default: the median of the "
                                   "acceptance lengths public Kimi K3 runs measured, the band spanning their "
                                   "10th-90th percentiles", "accept_len"))
    ap.add_argument("--kv-dtype", default="bf16", choices=("bf16", "fp8"))
    ap.add_argument("--json", action="store_true", help="print JSON")
    return ap


def _deployment(args) -> tuple[Deployment, tuple]:
    """The deployment and the sglang switches: from --layout (one notation with compare and the
    notebooks; a trailing ``[a, b]`` names settings) or from --gpu/--gpus/--tp/--pp/--dcp."""
    variants = tuple(args.variant)
    if args.layout is not None:
        if any(getattr(args, k) is not None for k in ("gpu", "gpus", "tp")) or args.pp != 1 or args.dcp != 1:
            raise ValueError("give either --layout or --gpu/--gpus/--tp (with --pp/--dcp), not both")
        text, bracket, setting = args.layout.partition("[")
        if bracket:  # '... [' alone is a setting left open, not none
            if not setting.rstrip().endswith("]"):
                raise ValueError(f"--layout {args.layout!r}: a setting is written [name, ...] at the end")
            variants += tuple(v.strip() for v in setting.rstrip()[:-1].split(",") if v.strip())
        return parse_layout(text), variants
    missing = [f"--{k}" for k in ("gpu", "gpus", "tp") if getattr(args, k) is None]
    if missing:
        raise ValueError(f"give --layout, or all of --gpu, --gpus and --tp (missing {', '.join(missing)})")
    if args.gpu.lower() not in known_gpus():
        raise ValueError(f"unknown GPU {args.gpu!r}; known GPUs: {', '.join(known_gpus())}")
    return Deployment(args.gpu.lower(), args.gpus, args.tp, args.pp, dcp=args.dcp), variants


def _spec(args) -> tuple[Spec, tuple | None, str]:
    """(the speculative setting, the acceptance range its answer spans, how it was chosen)."""
    if args.spec == "none":
        if args.accept_len is not None:
            raise ValueError("--accept-len needs --spec dspark")
        return Spec(), None, ""
    if args.accept_len is not None:
        return Spec(args.spec, args.accept_len), None, f"{args.accept_len:g} tokens per verify step (--accept-len)"
    mid, lo, hi, n = field.accept_range()
    return (Spec(args.spec, mid), (lo, hi),
            f"{mid:g} tokens per verify step, the median of {n} public Kimi K3 runs (band spans their "
            f"10th-90th percentiles, {lo:g}-{hi:g}; --accept-len sets one)")


def format_prediction(p: Prediction, accept_note: str = "") -> str:
    """The human-readable answer: header naming the settings, a table with bands (or "not
    validated" for a metric without a usable band), the domain caveat, nearest points."""
    def band_word(kind):
        b = p.band_of(kind)
        return "not validated" if b is None else f"±{math.expm1(b):.0%}"

    head = [f"kimi-k3 on {p.layout} — sglang settings: {', '.join(p.variants) or 'defaults'}",
            f"  workload: {p.input_len:,} in / {p.output_len:,} out, concurrency {p.concurrency:,}"
            + (f" (asked {p.concurrency_asked:,}; the pools admit {p.admitted:,})" if p.concurrency < p.concurrency_asked
               else f" (the pools admit {p.admitted:,})")
            + (f", DSpark at {accept_note}" if p.spec_on else ", no speculative decoding"),
            f"  serving model of family {p.family}; bands = the out-of-sample error that holds 90% of public runs "
            f"the fit did not see: {'DSpark' if p.spec_on else 'decode'} {band_word('output_tok_s')}, "
            f"TTFT {band_word('ttft_ms')}"]
    if p.concurrency < p.concurrency_asked:
        head.append(f"  the pools admit {p.admitted:,}: {p.admission_note}")
    for what, gaps in ((f"{'DSpark' if p.spec_on else 'decode'} speed", p.outside), ("TTFT", p.ttft_outside)):
        if gaps:  # the band is an error measured inside the domain: outside it, it says nothing
            head.append(f"  {what}: OUTSIDE the validated domain: {'; '.join(gaps)}. Its band does not hold here: "
                        "read it as the model's extrapolation.")
    head.append("")
    rows = [("output tok/s, deployment", "output_tok_s", 1.0, "{:,.0f}"),
            ("output tok/s per node", "output_tok_s", 1 / p.num_nodes, "{:,.0f}"),
            ("output tok/s per GPU", "output_tok_s", 1 / p.num_gpus, "{:,.1f}"),
            ("TPOT (ms)", "tpot_ms", 1.0, "{:,.1f}"), ("TTFT (ms)", "ttft_ms", 1.0, "{:,.0f}"),
            ("decode step (ms)", "itl_ms", 1.0, "{:,.1f}")]
    body = [f"  {'':<26}{'predicted':>11}  {'band':>21}"]
    for name, kind, sc, fmt in rows:
        iv = p.interval(kind, sc)
        band = "not validated" if iv is None else f"{fmt.format(iv[0])} – {fmt.format(iv[1])}"
        body.append(f"  {name:<26}{fmt.format(getattr(p, kind) * sc):>11}  {band:>21}")
    near = ["", "  nearest public measurements (same family):"]
    for n in p.nearest:
        near.append(f"    {n['id']}  {n['gpu'].upper()} {n['layout']}  {n['workload']}  {n['kind']} {n['value']:,.1f}")
    pr = p.params
    tail = ["", f"  A model, not a measurement: weights stream at {pr.hbm_efficiency:.0%} of peak HBM bandwidth, "
                f"GEMMs at {pr.flop_efficiency:.0%} of peak FLOP/s, decode attention reads KV at {pr.kv_efficiency:.0%}, "
                f"{pr.layer_overhead_us:.0f} µs per layer per pass, {pr.request_overhead_ms:.0f} ms per request "
                f"(fitted on public data; means of a closed-loop benchmark, no percentiles)."]
    return "\n".join(head + body + near + tail)


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
            raise ValueError(f"unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
        spec, accept, accept_note = _spec(args)
        work = Workload(args.input_len, args.output_len, args.concurrency)
        p = predict(load_model(args.model), dep, work, spec, variants, args.kv_dtype, accept_range=accept)
    except (ValueError, OverflowError) as e:
        print(f"k3lab predict: error: {e}", file=sys.stderr)
        return 2
    try:
        print(json_text(p.as_dict()) if args.json else format_prediction(p, accept_note), flush=True)
    except BrokenPipeError:  # `| head`: the reader has what it wanted (Python's documented recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
