"""``python -m k3lab fit``: the memory fit of one deployment, as a person or a program reads it.

What the output means: memory per GPU (the heaviest rank), tokens and requests per replica
(one sglang server of tp × pp GPUs; ``--gpus`` beyond tp × pp are further replicas, and the
totals over them are printed too). The header names the sglang 0.5.23 settings the figures
assume: the platform and ``--variant`` switches (none by default: sglang's own defaults on that
platform), ``--mem-fraction-static``, the KV dtype, the state-pool flags, and the start-up
memory held before the weights load (``--init-overhead-gib``, 0 unless given, so the pools are
an upper bound). When a request of ``--context`` tokens does not fit, the lines after the
verdict name the state-pool settings under which it would
(:func:`k3lab.model.pool_settings.search_settings`), or say that none does.

Exit status: 0 when a plan was printed (whether or not the request fits, so scripts written
before ``--check`` keep working); with ``--check``, 0 when the request fits under the settings
given and 1 when it does not; 2 for bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys

from . import data, io, memory
from .cli_parser import OneLineParser
from .limits import arg, help_text
from .model.capacity import KV_DTYPES, STATE_DTYPES
from .specs import GB, GiB, known_gpus, known_models, load_gpu, load_model

RELEASE = "0.5.23"

#: one line per ``--variant`` for ``--help`` (what each does in full: ``--help-variants``)
VARIANT_SUMMARIES = {
    "aiter-moe-pad": "ROCm: AITER aligns each expert's intermediate to 256 (sglang's ROCm default)",
    "aiter-k3-opt": "ROCm: SGLANG_AITER_K3_OPT=1, aligned to 128 (sglang's MI35x recipe)",
    "ep": "--ep-size <tp>: whole experts per GPU",
    "ep-a2a": "--ep-size <tp> with an all-to-all backend (deepep, mori, ...)",
    "dp-attention": "--enable-dp-attention --dp-size <tp>",
    "dspark": "the DSpark draft (weights, its own KV; sglang's 48 requests, the pools may admit fewer)",
}

EXIT_STATUS = ("exit status: 0 = a plan was printed; with --check, 0 = the request fits and 1 = it "
               "does not; 2 = bad input")


class _HelpVariants(argparse.Action):
    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(help_variants())
        parser.exit(0)


def help_variants() -> str:
    """What every ``--variant`` does in sglang 0.5.23 (``--help-variants``)."""
    return "\n\n".join(f"{k}\n  {v}" for k, v in memory.FIT_VARIANTS.items())


def _parser(gpus: list[str]) -> argparse.ArgumentParser:
    width = max(map(len, VARIANT_SUMMARIES))
    epilog = "\n".join([
        "variants (--variant NAME, repeatable; --help-variants says what each does):",
        *(f"  {k:<{width}}  {v}" for k, v in VARIANT_SUMMARIES.items()),
        "state pool (sglang 0.5.23 KVCacheConfigurator, three branches): --max-mamba-cache-size N, else",
        "  --disable-radix-cache with --max-running-requests M, else --mamba-full-memory-ratio R (0.9).",
        "Tokens and requests are per replica (tp x pp GPUs); memory is per GPU.",
        EXIT_STATUS,
    ])
    ap = OneLineParser(prog="python -m k3lab fit", formatter_class=argparse.RawDescriptionHelpFormatter,
                 description=f"Memory fit of a model on a GPU configuration under sglang {RELEASE}.", epilog=epilog)
    ap.add_argument("--help-variants", action=_HelpVariants, help="what each --variant does, then exit")
    ap.add_argument("--model", default="kimi-k3", help=f"{', '.join(known_models())} (default kimi-k3)")
    ap.add_argument("--gpu", required=True, help=", ".join(gpus))
    ap.add_argument("--gpus", type=arg("gpus", "--gpus"), required=True, help=help_text("number of GPUs", "gpus"))
    ap.add_argument("--tp", type=arg("parallel", "--tp"), required=True, help=help_text("tensor-parallel size", "parallel"))
    ap.add_argument("--pp", type=arg("parallel", "--pp"), default=1,
                    help=help_text("pipeline-parallel size (default 1)", "parallel"))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME", help="an sglang switch (list below)")
    ap.add_argument("--mem-fraction", type=arg("fraction", "--mem-fraction"), default=0.9,
                    help=help_text("--mem-fraction-static (default 0.9)", "fraction"))
    ap.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES)
    ap.add_argument("--state-dtype", default="fp32", choices=STATE_DTYPES)
    ap.add_argument("--context", type=arg("tokens", "--context"), default=None,
                    help=help_text("request length in tokens (default and ceiling: the model's max)", "tokens"))
    ap.add_argument("--hbm-gb", type=arg("hbm_gb", "--hbm-gb"), default=None,
                    help=help_text("usable HBM per GPU in GB (1e9 B), overriding data/", "hbm_gb"))
    ap.add_argument("--max-running-requests", type=arg("requests", "--max-running-requests"), default=None,
                    metavar="M", help=help_text("sglang's cap on running requests (default: none; sglang sets 48 with dspark); "
                                                "what runs is the lower of the cap and what the state pool's slots "
                                                "allow (the output's 'max running requests')",
                                                "requests"))
    ap.add_argument("--mamba-full-memory-ratio", type=arg("ratio", "--mamba-full-memory-ratio"), default=None,
                    metavar="R", help=help_text("state-pool memory : KV memory (sglang's default 0.9)", "ratio"))
    ap.add_argument("--max-mamba-cache-size", type=arg("requests", "--max-mamba-cache-size"), default=None,
                    metavar="N", help=help_text("state-pool slots", "requests"))
    ap.add_argument("--disable-radix-cache", action="store_true",
                    help="no prefix cache: 1 state slot per request")
    ap.add_argument("--init-overhead-gib", type=arg("overhead_gib", "--init-overhead-gib"), default=0.0, metavar="GIB",
                    help=help_text("GiB per GPU held before the weights load (default 0: the pools are an upper "
                                   "bound)", "overhead_gib"))
    ap.add_argument("--check", action="store_true", help="exit 1 when the request does not fit")
    ap.add_argument("--json", action="store_true", help="print the plan as JSON")
    return ap


# --------------------------------------------------------------------------- what the output says


def replicas_phrase(p: memory.Plan) -> str:
    """``1 replica of TP8 (8 GPUs)`` / ``2 replicas of TP8 (8 GPUs each)``."""
    shape = f"TP{p.tp}" + (f"×PP{p.pp}" if p.pp > 1 else "")
    per = p.tp * p.pp
    return (f"1 replica of {shape} ({per} GPUs)" if p.replicas == 1
            else f"{p.replicas} replicas of {shape} ({per} GPUs each)")


def _variants_phrase(p: memory.Plan) -> str:
    names = ", ".join(p.variants) if p.variants else "none"
    if not p.moe_intermediate_per_gpu:
        return f"variants: {names}"
    moe, pad = p.moe_intermediate_per_gpu, p.moe_intermediate_padded_per_gpu
    experts = f"expert intermediate {moe} → {pad} per GPU" if pad != moe else f"expert intermediate {moe} per GPU"
    if p.platform != "rocm":
        return f"variants: {names} ({experts})"
    if "aiter-k3-opt" in p.variants:
        return f"variants: {names} ({experts}; sglang's ROCm default pads it to {-(-moe // 256) * 256})"
    return f"variants: {names} (sglang's ROCm default: {experts}; the article's aiter-k3-opt keeps {moe})"


def state_pool_phrase(p: memory.Plan) -> str:
    """The state-pool settings in effect, as sglang's flags, with which branch sizes the pool."""
    if not p.has_state_pool:
        return "no state pool (no linear-attention layers)" + (
            "; radix cache off" if p.state_pool_settings.disable_radix_cache else "")
    st = p.state_pool_settings
    radix = "radix cache off" if st.disable_radix_cache else "radix cache on"
    spr = f"{p.slots_per_request} state slot{'s' if p.slots_per_request != 1 else ''} per request"
    if p.pp > 1 and not st.disable_radix_cache:
        spr += " (PP turns the overlap scheduler off)"
    if st.branch == "explicit":
        how = f"--max-mamba-cache-size {st.max_mamba_cache_size}"
    elif st.branch == "from_max_running_requests":
        how = f"--disable-radix-cache --max-running-requests {st.max_running_requests} (one slot per request)"
    else:
        how = f"--mamba-full-memory-ratio {st.ratio:g}" + ("" if st.mamba_full_memory_ratio is not None
                                                           else " (sglang's default)")
    return f"state pool: {how}, {radix}, {spr} ({st.branch} branch)"


def settings_summary(p: memory.Plan) -> dict:
    """The sglang settings a plan assumes, for the header and ``--json``."""
    st = p.state_pool_settings
    return {
        "release": RELEASE, "platform": p.platform, "variants": list(p.variants),
        "variants_note": _variants_phrase(p), "mem_fraction_static": p.mem_fraction,
        "kv_cache_dtype": p.kv_dtype, "page_size": p.page_size, "state_pool": state_pool_phrase(p),
        "max_running_requests": st.max_running_requests, "init_overhead_gib": p.init_overhead_bytes / GiB,
    }


def _options_lines(p: memory.Plan) -> list[str]:
    if not p.weights_fit or p.fits:
        return []
    if p.fits_with_defaults:
        return ["  it fits with sglang's default state pool (drop --mamba-full-memory-ratio, "
                "--max-mamba-cache-size and --disable-radix-cache)"]
    levers = "  other levers: more GPUs, --kv-dtype fp8, a shorter --context, or a --variant"
    if not p.has_state_pool:
        return ["  no state-pool setting applies (no linear-attention layers)", levers]
    if not p.fit_options:
        return ["  no state-pool setting makes it fit (each of sglang's three branches searched)", levers]
    # (newcomer 48: "408 running requests, 1 request of 1,048,576 tokens" read as both at once): each a limit alone
    head = (f"  it fits with one of these state-pool settings (each limit alone, per replica: running requests at most "
            f"({p.max_running_requests:,} as configured), and {p.context_tokens:,}-token requests held; `quote` says "
            "how many of yours run beside a held one):")
    best = p.best_option
    width = max(len(o.flags) for o in p.fit_options)
    rows = []
    for o in p.fit_options:
        tail = "; no prefix caching" if o.settings.disable_radix_cache else ""
        mark = "  ← k3lab's pick" if o is best and len(p.fit_options) > 1 else ""
        rows.append(f"    {o.flags:<{width}}  {o.max_running_requests:>5,} running requests at most; holds "
                    f"{o.full_context_requests:,} request{'s' if o.full_context_requests != 1 else ''} of {p.context_tokens:,} tokens{tail}{mark}")
    return [head, *rows]


def _overhead_hint(model: str) -> str:
    """'; one public start-up log implies 2.9 GiB (...)' for the 0 GiB line (newcomer 15: what overhead is
    realistic?), or "" (:func:`k3lab.findings.startup_logs.overhead_hint`)."""
    from .findings.startup_logs import overhead_hint
    from .specs import load_model

    hint = overhead_hint(load_model(model))
    return f"; {hint}" if hint else ""


def format_plan(p: memory.Plan, model: str) -> str:
    """A plan as the lines a person reads: memory per GPU (GiB with GB beside it), tokens and
    requests per replica (and over all replicas), the settings in the header."""
    gib = lambda b: f"{b / GiB:8.1f} GiB ({b / GB:7.1f} GB)"  # noqa: E731
    ovh = p.init_overhead_bytes / GiB
    lines = [
        f"{model} on {p.label}: {replicas_phrase(p)}; memory per GPU, tokens and requests per replica",
        f"sglang {RELEASE} settings ({p.platform}): --mem-fraction-static {p.mem_fraction:g}, KV cache {p.kv_dtype}, "
        f"{p.page_size}-token pages",
        f"  {_variants_phrase(p)}",
        f"  {state_pool_phrase(p)}",
        f"  start-up (init) overhead assumed: {ovh:.1f} GiB per GPU (--init-overhead-gib"
        + (f"; with 0 the pools are an upper bound{_overhead_hint(model)})" if ovh == 0 else ")"),
        f"  capacity per GPU        {gib(p.capacity_bytes_per_gpu)}",
        f"  weights per GPU         {gib(p.weights_bytes_per_gpu)}  (heaviest rank)",
    ]
    if p.vision_bytes_per_gpu:
        lines.append(f"  vision tower per GPU    {gib(p.vision_bytes_per_gpu)}  (replicated on every GPU)")
    if p.draft_bytes_per_gpu:
        lines.append(f"  DSpark draft per GPU    {gib(p.draft_bytes_per_gpu)}")
    lines.append(f"  reserve per GPU         {gib(p.reserve_bytes_per_gpu)}  (1 - mem_fraction {p.mem_fraction:g})")
    if p.mm_reserve_bytes_per_gpu:
        lines.append(f"  multimodal reserve      {gib(p.mm_reserve_bytes_per_gpu)}  (sglang's SGLANG_VLM_CACHE_SIZE_MB)")
    if p.has_state_pool:
        lines += [f"  KDA state pool per GPU  {gib(p.state_pool_bytes_per_gpu)}  ({p.state_slots:,} slots)"]
    lines += [f"  KV pool per GPU         {gib(p.kv_pool_bytes_per_gpu)}",
              f"  KV per token per GPU    {p.kv_bytes_per_token:,} B ({p.kv_dtype}, MLA layers on the rank)"]
    if p.has_state_pool:
        lines.append(f"  state per slot per GPU  {p.kda_state_bytes_per_request:,} B "
                     f"({p.state_dtype} recurrent + bf16 conv)")
    if p.pool_note:
        lines.append(f"  no pools: {p.pool_note}")
    req = f"{p.context_tokens:,}-token requests"
    rows = [("max KV tokens", p.max_kv_tokens, p.max_kv_tokens_total, "  (sglang's max_total_num_tokens)"),
            ("max running requests", p.max_running_requests, p.max_running_requests_total, ""),
            (req, p.max_full_context_requests, p.max_full_context_requests_total, "")]
    w = max(len(r[0]) for r in rows)
    if p.replicas == 1:
        lines.append("  per replica (1 replica):")
        lines += [f"    {name:<{w}}  {v:>11,}{note}" for name, v, _, note in rows]
    else:
        lines.append(f"  per replica ({p.replicas} replicas):{' ' * max(0, w - 24)}   per replica   all replicas")
        lines += [f"    {name:<{w}}  {v:>11,}    {t:>11,}{note}" for name, v, t, note in rows]
    fits = "yes" if p.fits else "no"
    lines.append(f"  weights fit: {'yes' if p.weights_fit else 'no'};  a {p.context_tokens:,}-token request fits: {fits}"
                 + ("" if p.fits or not p.weights_fit else f"  ({p.verdict})"))
    return "\n".join(lines + _options_lines(p))


def hbm_unit_note(gpu: str, hbm_gb: float | None) -> str:
    """One note line when ``--hbm-gb`` is the GPU's label read in the wrong unit (the MI355X's
    "288 GB" is 288 GiB, 309.2 GB: ``--hbm-gb 288`` leaves the weights 21 GB short), else ""."""
    if hbm_gb is None:
        return ""
    g = load_gpu(gpu)
    if g.hbm_label_unit != "GiB" or hbm_gb != g.hbm_label_gb:
        return ""
    return (f"note: --hbm-gb {hbm_gb:g} reads the {g.short}'s \"{g.hbm_label_gb:g} GB\" label as GB (1e9 B), but "
            f"that label is {g.hbm_label_gb:g} GiB ({g.hbm_label_gb * GiB / GB:,.1f} GB); the driver exposes "
            f"{g.usable_hbm_gb:,.1f} GB (data/hardware.yaml, what fit uses without --hbm-gb)")


def main(argv: list[str] | None = None) -> int:
    """``python -m k3lab fit --gpu mi355x --gpus 8 --tp 8 [--check] [--json] …`` → exit status
    as the module docstring says."""
    try:
        gpus = known_gpus()
    except data.DataError as e:
        print(f"k3lab fit: error: {e}", file=sys.stderr)
        return 2
    args = _parser(gpus).parse_args(argv)
    try:
        cfg = load_model(args.model)
        if args.context is not None:
            cfg.check_context(args.context, "--context")
        p = memory.plan(cfg, args.gpu, args.gpus, args.tp, args.mem_fraction, args.kv_dtype, pp=args.pp,
                        state_dtype=args.state_dtype, context_tokens=args.context, variants=args.variant,
                        hbm_gb=args.hbm_gb, init_overhead_bytes=int(args.init_overhead_gib * GiB),
                        max_running_requests=args.max_running_requests,
                        mamba_full_memory_ratio=args.mamba_full_memory_ratio,
                        max_mamba_cache_size=args.max_mamba_cache_size,
                        disable_radix_cache=args.disable_radix_cache)
    except (ValueError, OverflowError) as e:
        print(f"k3lab fit: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    note = hbm_unit_note(args.gpu, args.hbm_gb)
    if args.json:
        d = p.as_dict()
        d["sglang_settings"] = settings_summary(p)
        if note:
            d["hbm_gb_note"] = note
        print(io.json_text(d))
    else:
        print(format_plan(p, cfg.name) + (f"\n{note}" if note else ""))
    return (0 if p.fits else 1) if args.check else 0
