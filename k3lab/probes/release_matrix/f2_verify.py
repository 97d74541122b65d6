"""Finding 2 per release: the DFlash/DSpark verify path's renorm bindings and how it treats ties.

The verify function is ``build_dflash_verify_target_probs`` in
``sglang/srt/speculative/dflash_utils.py`` (renamed ``build_speculative_verify_target_probs``
in 0.5.22; from 0.5.23 the renorm names are resolved in
``sglang/kernels/ops/sampling/renorm.py`` and imported into ``dflash_utils``). For each of
three platforms (CUDA, HIP, CPU, emulated by :mod:`.emulation`) :func:`finding2`

* records what ``top_k_renorm_prob``, ``top_p_renorm_prob`` and
  ``tree_speculative_sampling_target_only`` are bound to in the module the verify
  function reads (``dflash_utils``), and ``_DFLASH_SAMPLING_VERIFY_AVAILABLE``;
* runs the real verify function on every request mix of notebook 02
  (:data:`k3lab.probes.topk_repro.MIXES`, real ``SamplingParams`` / ``SamplingBatchInfo``)
  twice: on seeded random logits (compared with
  :func:`k3lab.probes.topk_repro.reference_target_probs`) and on logits with ties placed at
  the top-k pivot (ranks k-2 … k+1 of each top-k row share one value) or straddling the
  top-p cut (a group of 20 equal probabilities across which the cumulative mass crosses p),
  compared with two naive references: tie-keeping (FlashInfer's threshold semantics,
  keep every entry >= pivot) and rank-mask (keep exactly k, or the shortest prefix
  reaching p). The path (sparse ``torch.topk`` or dense ``softmax`` + renorm) is observed
  by wrapping the module's ``F.softmax``.

On HIP the real sglang Triton wrappers (``kernels/ops/sampling/renorm_triton.py``) do import
and are what gets bound (recorded), but they refuse CPU tensors, so for the verify run the
module's names are re-pointed at k3lab stand-ins (recorded as ``run_with``). What a
stand-in shows: which name is bound and whether the path crashes; a dense-path
"tie-keeping" result on CUDA/HIP is the stand-in's semantics (FlashInfer's, which sglang's
Triton kernels document too), not a measurement of the GPU kernel. The CPU column and every
sparse-path result run sglang's own code only.

sglang is imported inside functions: this runs in the child, on the release ``PYTHONPATH``
selected, and the package must import without sglang.
"""

from __future__ import annotations

import torch

from ... import sampling
from .. import topk_repro
from ..topk_repro import DFLASH, _SoftmaxSpy
from .emulation import PLATFORMS, _stand_in, emulated_platform
from .record import _MISSING, _error, describe

VERIFY_FUNCTIONS = ("build_dflash_verify_target_probs", "build_speculative_verify_target_probs")
BOUND_NAMES = ("top_k_renorm_prob", "top_p_renorm_prob", "tree_speculative_sampling_target_only")
TIE_GROUP = 20            # equal probabilities straddling the top-p cut


def _verify_function(mod):
    for n in VERIFY_FUNCTIONS:
        if hasattr(mod, n):
            return n, getattr(mod, n)
    raise RuntimeError(f"{DFLASH} has none of {VERIFY_FUNCTIONS}")


def bindings(mod) -> dict:
    out = {n: describe(mod.__dict__.get(n, _MISSING)) for n in BOUND_NAMES}
    out["_DFLASH_SAMPLING_VERIFY_AVAILABLE"] = bool(mod.__dict__.get("_DFLASH_SAMPLING_VERIFY_AVAILABLE", False))
    return out


def _runnable(mod) -> dict:
    """Re-point GPU-only renorm kernels (Triton wrappers) at k3lab stand-ins → what ran."""
    run_with = {}
    for n, fn in (("top_k_renorm_prob", sampling.top_k_renorm_prob),
                  ("top_p_renorm_prob", sampling.top_p_renorm_prob)):
        obj = mod.__dict__.get(n, _MISSING)
        d = describe(obj)
        if obj is _MISSING or obj is None or d.startswith("stand-in") or d.startswith("LazyImport"):
            run_with[n] = "as bound"
        else:
            setattr(mod, n, _stand_in(d, fn))
            run_with[n] = f"stand-in for {d}"
    return run_with


def tie_logits(requests: list[dict], vocab: int, draft: int, seed: int = 0):
    """Seeded logits ``[len(requests)*draft, vocab]`` with ties at each row's pivot.

    Rows with top-k < vocab: ranks k-2 … k+1 (0-based k-1 is the pivot) take the pivot's
    value. Rows with only top-p < 1: probabilities (after temperature) of 4 head entries
    (0.30, 0.20, 0.12, 0.08), then :data:`TIE_GROUP` equal entries of 0.0135 each (the cut
    for p = 0.9 or 0.95 falls inside the group), the rest equal; logits = T·log(prob), in a
    seeded random order. Other rows: the random logits.
    """
    from sglang.srt.sampling.sampling_params import SamplingParams   # child: release on PYTHONPATH

    sps = [SamplingParams(**r) for r in requests]
    out = topk_repro.logits_for(len(requests), vocab, draft, seed).clone()
    g = torch.Generator().manual_seed(seed + 1)
    for i in range(out.shape[0]):
        sp = sps[i // draft]
        if sp.top_k < vocab:
            k = int(sp.top_k)
            order = torch.argsort(out[i], descending=True)
            out[i, order[max(k - 2, 0):min(k + 2, vocab)]] = out[i, order[k - 1]].clone()
        elif sp.top_p < 1.0:
            head = [0.30, 0.20, 0.12, 0.08]
            rest = vocab - len(head) - TIE_GROUP
            if rest <= 0:
                raise ValueError(f"vocab {vocab} too small for the top-p tie design")
            probs = torch.tensor(head + [0.0135] * TIE_GROUP + [0.03 / rest] * rest, dtype=torch.float64)
            cum_head, p = sum(head), float(sp.top_p)
            n_in_group = (p - cum_head) / 0.0135
            if not (0.5 < n_in_group < TIE_GROUP - 0.5) or abs(n_in_group - round(n_in_group)) < 0.1:
                raise ValueError(f"top_p {p} does not cut inside the tie group")
            row = (sp.temperature * torch.log(probs)).to(torch.float32)
            out[i] = row[torch.randperm(vocab, generator=g)]
    return out


def rank_reference(logits, requests: list[dict], draft: int):
    """Naive per-row target with a rank mask: top-k keeps exactly k, top-p the shortest prefix.

    Same steps as :func:`k3lab.probes.topk_repro.reference_target_probs` (softmax(logits/T)
    → top-k → renormalise the batch's rows when any row has a top-k → top-p), but which of
    several tied entries is kept is left to ``torch.sort`` (compare sorted rows).
    """
    # child: release on PYTHONPATH
    from sglang.srt.sampling.sampling_params import TOP_K_ALL, SamplingParams

    params = [SamplingParams(**r) for r in requests]
    renorm_all = any(sp.top_k != TOP_K_ALL for sp in params)   # the batch's top-k renorm
    rows = [_rank_masked(torch.softmax(row / params[i // draft].temperature, dim=-1),
                         params[i // draft], renorm_all) for i, row in enumerate(logits)]
    return torch.stack(rows).view(-1, draft, logits.shape[1])


def _rank_masked(p, sp, renorm_all: bool):
    """One row of :func:`rank_reference` from its probabilities ``p`` and SamplingParams ``sp``."""
    if sp.top_k < p.shape[0]:
        p = _kept(p, torch.sort(p, descending=True, stable=True).indices[: int(sp.top_k)])
    if renorm_all:
        p = (p.double() / p.double().sum()).float()
    if sp.top_p < 1.0:
        s, idx = torch.sort(p, descending=True, stable=True)
        c = torch.cumsum(s.double(), 0)
        n = int(torch.searchsorted(c, torch.tensor([sp.top_p], dtype=torch.float64) * c[-1]))
        p = _kept(p, idx[: n + 1])
        p = p / p.sum()
    return p


def _kept(p, idx):
    """``p`` with every entry outside ``idx`` zeroed."""
    keep = torch.zeros_like(p, dtype=torch.bool)
    keep[idx] = True
    return torch.where(keep, p, torch.zeros_like(p))


def _same(a, b) -> bool:
    return bool(torch.allclose(a, b, atol=1e-6, rtol=1e-5) and torch.equal(a != 0, b != 0))


def _same_sorted(a, b) -> bool:
    a2, b2 = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    sa = torch.sort(a2, dim=-1, descending=True).values
    sb = torch.sort(b2, dim=-1, descending=True).values
    return bool(torch.allclose(sa, sb, atol=1e-6, rtol=1e-5)
                and torch.equal((a2 != 0).sum(-1), (b2 != 0).sum(-1)))


def _tied_rows(requests: list[dict], vocab: int, draft: int):
    """Bool mask of the verify rows where :func:`tie_logits` placed ties."""
    from sglang.srt.sampling.sampling_params import SamplingParams   # child: release on PYTHONPATH

    sps = [SamplingParams(**r) for r in requests]
    return torch.tensor([sps[i // draft].top_k < vocab or sps[i // draft].top_p < 1.0
                         for i in range(len(requests) * draft)])


def _random_verdict(got, ref, requests: list[dict], draft: int) -> str:
    """How the verifier's target compares with the naive reference on random logits.

    ``matches``; or ``matches except: …`` naming the only differences found, each row's
    common entries agreeing within rtol 1e-3: ``drops tail tokens of top_p=1 rows``
    (sglang's torch top-p, ``top_p_normalize_probs_torch``, zeroes entries whose float32
    exclusive cumulative sum exceeds p, which rounding makes happen at p = 1 in a long
    vocabulary) and ``top-p cut moves by <=2 entries in some rows`` (the same float32
    cumulative sum against the reference's float64 one); else ``differs``.
    """
    from sglang.srt.sampling.sampling_params import SamplingParams   # child: release on PYTHONPATH

    if _same(got, ref):
        return "matches"
    vocab = got.shape[-1]
    g, r = got.reshape(-1, vocab), ref.reshape(-1, vocab)
    sps = [SamplingParams(**q) for q in requests]
    effects = set()
    for i in range(g.shape[0]):
        gi, ri = g[i], r[i]
        if _same(gi, ri):
            continue
        sg, sr = gi != 0, ri != 0
        common = sg & sr
        if not torch.allclose(gi[common], ri[common], rtol=1e-3, atol=1e-7):
            return "differs"
        if sps[i // draft].top_p >= 1.0:
            if bool((sg & ~sr).any()):
                return "differs"
            effects.add("drops tail tokens of top_p=1 rows")
        else:
            if int((sg ^ sr).sum()) > 2:
                return "differs"
            effects.add("top-p cut moves by <=2 entries in some rows")
    return "matches except: " + "; ".join(sorted(effects))


def _run_verify(mod, fn_name: str, requests: list[dict], logits, draft: int):
    vocab = logits.shape[1]
    info = topk_repro.sampling_info(requests, vocab)
    spy = _SoftmaxSpy(mod.F)
    mod.F = spy
    try:
        got = getattr(mod, fn_name)(next_token_logits=logits, sampling_info=info,
                                    draft_token_num=draft, bs=len(requests))
        err = ""
    except Exception as e:  # the point: record what the scheduler would die of
        got, err = None, _error(e)
    finally:
        mod.F = spy._real
    width = spy.widths[0] if spy.widths else None
    path = "dense" if width == vocab else ("sparse" if width else "none")
    return got, err, path, info


def finding2(vocab: int) -> dict:
    draft = topk_repro.DRAFT_TOKENS
    refs = {}
    for mix, requests in topk_repro.MIXES.items():
        rnd = topk_repro.logits_for(len(requests), vocab, draft)
        tie = tie_logits(requests, vocab, draft)
        ref_tie = topk_repro.reference_target_probs(tie, requests, draft)
        ref_rank = rank_reference(tie, requests, draft)
        refs[mix] = (rnd, topk_repro.reference_target_probs(rnd, requests, draft), tie, ref_tie, ref_rank,
                     not _same_sorted(ref_tie, ref_rank))
    binds, verify, run_with, fn_used = {}, {}, {}, None
    for plat in PLATFORMS:
        with emulated_platform(plat) as mod:
            binds[plat] = bindings(mod)
            fn_name, _ = _verify_function(mod)
            fn_used = f"{DFLASH}.{fn_name}"
            run_with[plat] = _runnable(mod)
            rows = {}
            for mix, requests in topk_repro.MIXES.items():
                rnd, ref_rnd, tie, ref_tie, ref_rank, distinguishable = refs[mix]
                got, err, path, info = _run_verify(mod, fn_name, requests, rnd, draft)
                row = {"need_top_k": bool(info.need_top_k_sampling),
                       "need_top_p": bool(info.need_top_p_sampling), "path": path,
                       "outcome": "ok" if got is not None else err.split(":", 1)[0],
                       "error": err, "random_matches_reference": None, "ties": "not run"}
                if got is not None:
                    row["random_matches_reference"] = _random_verdict(got, ref_rnd, requests, draft)
                    got_t, err_t, _, _ = _run_verify(mod, fn_name, requests, tie, draft)
                    if got_t is None:
                        row["ties"] = f"crash: {err_t}"
                    else:
                        sel = _tied_rows(requests, vocab, draft)
                        got_t, ref_t, ref_r = got_t.view(-1, vocab)[sel], ref_tie.view(-1, vocab)[sel], \
                            ref_rank.view(-1, vocab)[sel]
                        is_tie, is_rank = _same(got_t, ref_t), _same_sorted(got_t, ref_r)
                        row["ties"] = ("indistinguishable" if not distinguishable and is_tie
                                       else "tie-keeping" if is_tie
                                       else "rank-mask" if is_rank else "differs from both references")
                rows[mix] = row
            verify[plat] = rows
    return {"verify_function": fn_used, "bindings": binds, "run_with": run_with, "verify": verify,
            "ties_distinguishable": {m: r[5] for m, r in refs.items()}}
