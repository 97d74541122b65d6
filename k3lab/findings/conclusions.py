"""The article's conclusions, judged: the claims a reader acts on and the ones it makes about
its sources — M14–M15 (finding 1), S11–S12 (finding 2), T20–T22 (finding 4).

- M14: the MI355X's edge over the B200 "is not faster silicon" (``data/hardware.yaml``);
- M15: Kimi K3 as "one of the first open models where HBM capacity decides which GPU" (the
  study's own :func:`k3lab.memory.plan` on the earlier open models of ``data/model``);
- S11: "the only way to speed up decode is an external draft model" (the n-gram speculative
  decoding sglang ships, ``data/sglang_serving_rules.yaml``);
- S12: "no custom kernels were needed" (the two fixes, run on real sglang code);
- T20, T21: the bottom line, "the direction is hard to argue with" (the MI355X ahead of the
  B300 on perf/$), under every independent price source that prices both GPUs, at the
  article's own throughput (T20) and on the serving model (T21), through
  :func:`k3lab.decision.decide`: a refit of the serving model flows through;
- T22: the outlet that "could not independently re-verify" the numbers (a claim about a source).

Each function returns :class:`~k3lab.claims.Record` s for the finding module of its notebook.
Units: TFLOPS and TB/s per GPU, GB (1e9 B), tok/s per GPU, $/GPU-hour; a lead is a fraction.
"""

from __future__ import annotations

import math

from .. import claims, data, decision, memory, prices
from ..specs import ModelConfig, load_gpu, load_model
from ..throughput import article_table

#: the earlier open models of data/model the study can fit, and the two 8-GPU nodes of the same
#: compute (H100 and H200: the same dense TFLOPS) that differ by HBM
EARLIER_MODELS = ("deepseek-v3", "kimi-k2")
SAME_COMPUTE_NODES = ("h100", "h200")


def _silicon(a: str, b: str) -> dict:
    """``a`` ÷ ``b`` per GPU: dense compute at each precision both list, HBM bandwidth, usable HBM."""
    ga, gb = load_gpu(a), load_gpu(b)
    out = {f"dense {p}": getattr(ga, f"dense_{p}_tflops") / getattr(gb, f"dense_{p}_tflops")
           for p in ("fp4", "fp8", "bf16") if getattr(ga, f"dense_{p}_tflops") and getattr(gb, f"dense_{p}_tflops")}
    out["HBM bandwidth"] = ga.hbm_bw_tb_s / gb.hbm_bw_tb_s
    out["usable HBM"] = ga.usable_hbm_gb / gb.usable_hbm_gb
    return out


def memory_records(cfg: ModelConfig | None = None) -> list[claims.Record]:
    """M14 (not faster silicon) and M15 (one of the first models capacity decides)."""
    cfg = load_model("kimi-k3") if cfg is None else cfg
    R = claims.judge
    t = article_table()
    mi, b2 = t["mi355x_tp8"], t["b200_tp16"]
    gap = (mi.tok_s / mi.num_gpus) / (b2.tok_s / b2.num_gpus)
    r = _silicon("mi355x", "b200")
    compute = [v for k, v in r.items() if k.startswith("dense")]
    out = [R("M14", "datasheets (data/hardware.yaml), MI355X ÷ B200 per GPU: "
                    + ", ".join(f"{k} {v:.2f}x" for k, v in r.items())
                    + f"; the article's table gives {gap:.2f}x the tok/s per GPU ({mi.tok_s:g}/{mi.num_gpus} against "
                      f"{b2.tok_s:g}/{b2.num_gpus}): at most {max(compute):.2f}x of it can be faster compute, none "
                      "faster memory, which bounds decode",
             value=f"compute {min(compute):.2f}-{max(compute):.2f}x, bandwidth {r['HBM bandwidth']:.2f}x, "
                   f"capacity {r['usable HBM']:.2f}x",
             holds=r["HBM bandwidth"] <= 1 and max(compute) < gap,
             correction="the MI355X's silicon explains most of the gap in the article's table",
             notes="'it is having enough memory to stay on a single node': 8×B200 cannot load the weights at all (M11); "
                   "two nodes are forced by the size, TP16 is not (T14)")]
    fits = {m: {g: memory.plan(load_model(m), g, 8, 8) for g in SAME_COMPUTE_NODES} for m in EARLIER_MODELS}
    hg = {g: load_gpu(g) for g in SAME_COMPUTE_NODES}
    decided = [m for m, f in fits.items() if not f[SAME_COMPUTE_NODES[0]].weights_fit and f[SAME_COMPUTE_NODES[1]].weights_fit]

    def line(m, f):
        return f"{m}: " + ", ".join(f"8×{g.upper()} " + ("loads" if p.weights_fit else "does not load")
                                    + (f" ({p.max_kv_tokens:,} KV tokens)" if p.weights_fit else "")
                                    for g, p in f.items())

    out.append(R("M15", f"k3lab.memory.plan (TP8, mem_fraction 0.9, bf16 KV) on the earlier open models of data/model: "
                        + "; ".join(line(m, f) for m, f in fits.items())
                        + f". The two nodes have the same dense compute (BF16 {hg['h100'].dense_bf16_tflops:g} / "
                          f"{hg['h200'].dense_bf16_tflops:g} TFLOPS per GPU) and differ by HBM ("
                          f"{hg['h100'].usable_hbm_gb:.0f} / {hg['h200'].usable_hbm_gb:.0f} GB usable)",
                 value=f"capacity decided for {len(decided)} of {len(fits)} earlier models ({', '.join(decided) or 'none'})",
                 holds=not decided,
                 correction=f"HBM capacity already decided which 8-GPU node could serve {' and '.join(decided)}: neither "
                            "loads on 8×H100, both on 8×H200 of the same compute; what is new with K3 is the size of the "
                            f"node it needs ({memory.checkpoint_bytes(cfg) / 1e12:.2f} TB of weights: 288 GB-class GPUs)",
                 notes="the earlier models' configs are their published ones (data/model/README.md); the study holds no "
                       "release dates, so 'first' is judged against the two earlier models it can fit"))
    return out


def spec_records(doc: dict, probe: dict | None = None) -> list[claims.Record]:
    """S11 (only an external draft model) and S12 (no custom kernels). ``doc``: the real-sglang
    top-k transcript (:func:`k3lab.probes.topk_repro.load_transcript`); ``probe``: sglang's AITER
    backend probe (``data/measured/cpu-2core/sglang_aiter_probe.json``)."""
    probe = data.load("sglang_aiter_probe") if probe is None else probe
    R = claims.judge
    ng = data.load("serving_rules").rules["ngram_speculative_decoding"]
    rel = [v for v, h in ng.holds.items() if h]
    out = [R("S11", f"sglang {', '.join(ng.holds)} read here: {ng.statement} holds in "
                    f"{', '.join(rel) or 'none'} ({ng.where}; checked against the real releases by "
                    "tests/sglang/test_serving_rules.py)",
             value=f"n-gram speculative decoding, no draft model ({', '.join(rel)})" if rel else "none without a draft",
             holds=not rel,
             correction=f"sglang {', '.join(rel)} ship n-gram speculative decoding (--speculative-algorithm NGRAM), which "
                        "drafts from the request's own tokens and needs no draft tensors; an external draft model "
                        "(DSpark) is one way, not the only one",
             notes="sglang 0.5.23 names it among the verify paths of hybrid (state-space) models like K3's KDA "
                   "layers (srt/arg_groups/mamba_hook.py, validate_mamba_extra_buffer: 'eagle/ngram/dspark/dflash all "
                   "verify through prepare_mamba_track_for_verify'); what n-gram drafting gains on the article's random "
                   "1,024-token prompts (repetition is what it feeds on), and whether its kernels build for gfx950, are "
                   "not measured here")]
    patched = [r for r in doc["rows"] if r["state"] == "patched"]
    fix1 = bool(patched) and all(r["outcome"] == "ok" and r["matches_reference"] for r in patched)
    pad = probe["prefill_12_heads_patched"]
    fix2 = bool(pad["ok"] and pad["bitwise_equal_to_reference"])
    out.append(R("S12", f"the two fixes, as k3lab.patches applies them to real sglang {doc['sglang_version']}: the top-k "
                        f"renorm in plain PyTorch returns the reference target on all {len(patched)} request mixes "
                        f"(S5, measured); zero-padding 12 heads to {pad['kernel_heads'][0]} through sglang's real "
                        f"forward_extend gives the unpadded output bit for bit (P4, emulated: stand-in kernels); no new "
                        "kernel in either",
                 value="a missing definition and a shape mismatch, no new kernel" if fix1 and fix2 else "a fix failed",
                 holds=fix1 and fix2,
                 correction="one of the two fixes fails without a new kernel",
                 notes="emulated: the padded AITER kernel is a labelled stand-in on this CPU. 'An afternoon' is not "
                       "measurable here. Upstream sglang fixed the missing definition with a Triton top-k kernel "
                       "(PR #32641, S3) and accepts 12 heads in its AITER backend from 0.5.19 (P3): a kernel was "
                       "written there, though none is needed"))
    return out


def _article_leads() -> list[tuple]:
    """At the article's own throughput, per independent price source that prices both GPUs of
    :data:`k3lab.decision.PAIR` (:func:`k3lab.prices.perf_per_dollar_by_tier`; no model): (tier,
    kind, price ratio MI355X ÷ B300, the MI355X's perf/$ lead as a fraction)."""
    table = article_table()
    a, b = (table[k].label for k in decision.PAIR)
    out = []
    for tier, g in prices.perf_per_dollar_by_tier().groupby("tier", sort=False):
        by = g.set_index("config")
        if g["kind"].iloc[0] in ("article", prices.OVERRIDE_TIER) or not {a, b} <= set(by.index):
            continue
        out.append((tier, str(g["kind"].iloc[0]), by.loc[a, "usd_per_gpu_hour"] / by.loc[b, "usd_per_gpu_hour"],
                    by.loc[a, "tok_s_per_dollar_hour"] / by.loc[b, "tok_s_per_dollar_hour"] - 1))
    return out


def _model_leads(b: decision.Breakeven) -> list[tuple]:
    """On the serving model, per source of ``b`` (:func:`k3lab.decision.decide`'s break-even):
    (tier, kind, (low, mid, high) lead of the MI355X, the two families' bands combined)."""
    return [(tier, kind, (b.model_low / r - 1, b.model / r - 1, b.model_high / r - 1))
            for tier, kind, _date, _pm, _pb, r, _reading in b.sources]


def _count(leads) -> str:
    """'ahead under a, behind under b, too close to call under c of n sources' (empty parts left out)."""
    ahead = sum(lo > 0 for lo, _ in leads)
    behind = sum(hi < 0 for _, hi in leads)
    parts = [f"{w} under {n}" for w, n in (("ahead", ahead), ("behind", behind),
                                            ("too close to call", len(leads) - ahead - behind)) if n]
    return ", ".join(parts) + f" of {len(leads)} sources"


def _span(leads) -> str:
    """'+5.9%' or '-10.2% to +0.6%'."""
    lo, hi = min(leads), max(leads)
    return f"{lo:+.1%}" if lo == hi else f"{lo:+.1%} to {hi:+.1%}"


def _market_pair() -> str:
    """The lowest MI355X and B300 market figures, from two sources, as a price ratio (not paired)."""
    pr = prices.prices()
    m = pr[(pr["kind"] == "market") & pr["independent"]]
    lo = {g: m[m["gpu"] == g].sort_values("usd_per_gpu_hour").iloc[0] for g in ("mi355x", "b300") if (m["gpu"] == g).any()}
    if len(lo) < 2:
        return "no market figure prices both GPUs"
    r = lo["mi355x"]["usd_per_gpu_hour"] / lo["b300"]["usd_per_gpu_hour"]
    return (f"the market figures of the two GPUs come from two sources ({lo['mi355x']['source']}, "
            f"{lo['b300']['source']}: ratio {r:.3f}) and are not paired here")


def _unvalidated_pair() -> list[tuple[str, str]]:
    """(GPU, why) for each of the article's two GPUs whose serving-model decode speed is not validated."""
    from ..serving import committed
    from ..serving.observations import family_of

    out = []
    for g in ("mi355x", "b300"):
        fam = family_of(g)
        if fam not in committed.fitted_families():
            out.append((g, "no fit"))
            continue
        b = committed.fitted_bands(fam)["decode"]
        if not b.validated:
            out.append((g, f"decode speed not validated on {fam} ({b.why_not})"))
    return out


def throughput_records(d: decision.Decision | None = None) -> list[claims.Record]:
    """T20 and T21 (the bottom line, at the article's throughput and on the serving model) and
    T22 (the outlet). ``d``: :func:`k3lab.decision.decide` for Kimi K3 (computed when None)."""
    d = decision.decide("kimi-k3") if d is None else d
    R = claims.judge
    rows = _article_leads()
    if not rows:
        raise data.DataError("data/prices.yaml: no independent price source prices both the MI355X and the B300")
    leads = [a for *_, a in rows]
    art = [(x, x) for x in leads]
    mi = next(x for x in d.article_prices if x[0] == "mi355x")
    t = article_table()
    per_gpu = (t[decision.PAIR[0]].tok_s / t[decision.PAIR[0]].num_gpus) / (t[decision.PAIR[1]].tok_s / t[decision.PAIR[1]].num_gpus)
    by_kind = {}
    for _, k, _, a in rows:
        by_kind.setdefault(k, []).append(a)
    kinds = "; ".join(f"{k.replace('_', '-')} {_span(v)}" for k, v in by_kind.items())
    reversed_by = sorted({k for _, k, _, a in rows if a < 0})
    out = [R("T20", f"the article's own throughput (MI355X ÷ B300 per GPU {per_gpu:.3f}: the MI355X wins perf/$ below "
                    "that price ratio) under every independent price source that prices both GPUs, price ratio and "
                    "the MI355X's lead: " + "; ".join(f"{tr} ({k}) {r:.3f}: {a:+.1%}" for tr, k, r, a in rows),
             value=f"{_span(leads)} ({_count(art)})", leads=art,
             correction=f"the direction turns on the price: at independent prices the article's own throughput gives "
                        f"the MI355X {min(leads):+.0%} to {max(leads):+.0%}, and its "
                        f"~45% needs its own ${mi[1]:.2f}, below every independent MI355X rental price "
                        f"(${mi[2]:.2f}-${mi[3]:.2f}, T5)",
             notes="the prices are independent (data/prices.yaml), the throughput the article's: its argument redone at "
                   f"other prices. By kind of price: {kinds}; the reversals come from {', '.join(reversed_by) or 'none'}"
                   + (" prices (InferenceX's B300 rows are 1.2x its B200, a placeholder as its source's code comment "
                      "says, data/prices.yaml)" if "cost_model" in reversed_by else "") + f"; {_market_pair()}")]
    b = d.breakeven
    if b is None:  # the serving model's speed is not validated for one of the two GPUs: it decides nothing
        why = "; ".join(f"{g.upper()}: {w}" for g, w in _unvalidated_pair())
        out.append(R("T21", f"the serving model's peaks cannot price the pair: {why}",
                     bound="model: not validated for the pair", leads=[(-1.0, math.inf)],
                     notes="without a validated model on both sides the lead is unknown (recorded as the open "
                           "interval from -100% up): the direction is judged on the article's throughput (T20) only"))
        out.append(R("T22", "the article names no outlet, and none was found in any source searched (2026-12-02); what it "
                            "could not re-verify is judged here: 952 (T1), $2.50 vs $6.00 (T5), 1.65x (T4)",
                     notes="a statement about a source, like M13: live mode cannot check it either"))
        return out
    mrows = _model_leads(b)
    mod = [(lo, hi) for *_, (lo, _, hi) in mrows]
    out.append(R("T21", f"the serving model's peaks ({b.model_setting}, {b.workload}): MI355X ÷ B300 per GPU {b.model:.3f} "
                        f"({b.model_low:.3f}-{b.model_high:.3f}, the two families' bands combined), under the same "
                        "sources, the MI355X's lead: "
                        + "; ".join(f"{tr} {m:+.0%} ({lo:+.0%} to {hi:+.0%})" for tr, _, (lo, m, hi) in mrows),
                 bound=f"model: {_count(mod)}", leads=mod,
                 notes="no speculative decoding on either side; the model's band, not the prices, leaves open: "
                       + (", ".join(f"{tr} ({k})" for tr, k, (lo, _, hi) in mrows if lo <= 0 <= hi) or "no source")))
    out.append(R("T22", "the article names no outlet, and none was found in any source searched (2026-12-02); what it "
                        "could not re-verify is judged here: 952 (T1), $2.50 vs $6.00 (T5), 1.65x (T4)",
                 notes="a statement about a source, like M13: live mode cannot check it either"))
    return out

