"""``python -m k3lab_patches verify``: sglang's own speculative verifier, as installed and patched.

Calls the installed sglang's ``build_dflash_verify_target_probs``
(``sglang/srt/speculative/dflash_utils.py``, 0.5.16; DFlash/DSpark verify: the target
distribution the draft tokens are checked against) on the batch that killed the article's
scheduler: requests with ``top_k=20`` mixed with unrestricted ones (:data:`MIX`), which takes
the dense path (softmax, then ``top_k_renorm_prob``). First as installed — on ROCm 0.5.16
that raises ``TypeError: 'NoneType' object is not callable``, on the kimi-k3 branch images
(PR #32621 state) ``NameError: name 'top_k_renorm_prob' is not defined`` — then after
:func:`k3lab_patches.apply`, and compares the patched target with
:func:`reference_target_probs`, a naive per-row reference. Runs on the CPU unless
``--device`` says otherwise; needs no model and no server.

The batch's sampling info is a real ``SamplingBatchInfo`` built from real ``SamplingParams``
(which turn ``top_k=-1`` into ``TOP_K_ALL`` and greedy into ``top_k=1``) the way
``SamplingBatchInfo.from_schedule_batch`` does. The k3lab study's
``k3lab.probes.topk_repro`` runs every request mix through the same helpers.
"""

from __future__ import annotations

import importlib
import sys

DFLASH = "sglang.srt.speculative.dflash_utils"
#: the request mix that takes the dense top-k path: top_k=20 mixed with unrestricted
MIX: list[dict] = [dict(temperature=0.8, top_k=20), dict(temperature=0.8)] * 2
DRAFT_TOKENS = 8  # verify rows per request: a DSpark block of 7 drafts + 1
DEFAULT_VOCAB = 4096  # enough for the dense path; Kimi K3's own is 163,840 (slower on CPU)
#: --vocab's range: the mix asks for top_k=20 (64 leaves room); 2**20 is past every model's
#: vocabulary (Kimi K3: 163,840) and keeps the batch's logits at 128 MB
MIN_VOCAB, MAX_VOCAB = 64, 1 << 20


def sampling_info(requests: list[dict], vocab: int, device="cpu"):
    """A real sglang ``SamplingBatchInfo`` for these requests (tensors on ``device``)."""
    import torch
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
    from sglang.srt.sampling.sampling_params import TOP_K_ALL, SamplingParams

    sps = [SamplingParams(**r) for r in requests]
    return SamplingBatchInfo(
        temperatures=torch.tensor([p.temperature for p in sps], dtype=torch.float, device=device).view(-1, 1),
        top_ps=torch.tensor([p.top_p for p in sps], dtype=torch.float, device=device),
        top_ks=torch.tensor([p.top_k for p in sps], dtype=torch.int32, device=device),
        min_ps=torch.tensor([p.min_p for p in sps], dtype=torch.float, device=device),
        is_all_greedy=all(p.top_k <= 1 for p in sps),
        is_any_greedy=any(p.top_k <= 1 for p in sps),
        need_top_p_sampling=any(p.top_p != 1.0 for p in sps),
        need_top_k_sampling=any(p.top_k != TOP_K_ALL for p in sps),
        need_min_p_sampling=any(p.min_p > 0 for p in sps),
        vocab_size=vocab, device=str(device))


def reference_target_probs(logits, requests: list[dict], draft: int):
    """Independent, naive per-row target: softmax(logits/T) → top-k → top-p (ties kept).

    When any request of the batch has a top-k, every row is renormalised (sum in float64)
    after the top-k step, also rows with k >= vocab, as FlashInfer's semantics say.

    logits ``[bs*draft, vocab]`` float32 → ``[bs, draft, vocab]``. A Python loop over rows
    (a full sort for top-p); greedy (T == 0) is sglang's convention: T = 1, top_k = 1.
    """
    import torch
    from sglang.srt.sampling.sampling_params import TOP_K_ALL, SamplingParams

    sps = [SamplingParams(**r) for r in requests]
    any_top_k = any(sp.top_k != TOP_K_ALL for sp in sps)
    vocab = logits.shape[1]
    out = torch.empty_like(logits)
    for i in range(logits.shape[0]):
        sp = sps[i // draft]
        p = torch.softmax(logits[i] / sp.temperature, dim=-1)  # float32, as sglang's
        if sp.top_k < vocab:  # the k-th largest value (the k largest, unsorted: no sort of the whole row)
            pivot = torch.topk(p, sp.top_k, sorted=False).values.min()
            p = torch.where(p >= pivot, p, torch.zeros_like(p))
        if any_top_k:  # the batch's top-k renorm also renormalises its k >= vocab rows
            p = (p.double() / p.double().sum()).float()
        if sp.top_p < 1.0:
            s = torch.sort(p, descending=True).values
            c = torch.cumsum(s.double(), 0)
            n = int(torch.searchsorted(c, torch.tensor([sp.top_p], dtype=torch.float64,
                                                       device=c.device) * c[-1]))
            p = torch.where(p >= s[min(n, vocab - 1)], p, torch.zeros_like(p))
            p = p / p.sum()
        out[i] = p
    return out.view(-1, draft, vocab)


def logits_for(n_requests: int, vocab: int, draft: int = DRAFT_TOKENS, seed: int = 0):
    """Seeded float32 logits ``[n_requests*draft, vocab]`` (standard normal × 3), on the CPU."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randn(n_requests * draft, vocab, generator=g) * 3.0


def run_verifier(logits, requests: list[dict], draft: int = DRAFT_TOKENS):
    """sglang's ``build_dflash_verify_target_probs`` on ``logits`` as the installed module is bound."""
    mod = importlib.import_module(DFLASH)
    return mod.build_dflash_verify_target_probs(
        next_token_logits=logits, sampling_info=sampling_info(requests, logits.shape[1], logits.device),
        draft_token_num=draft, bs=len(requests))


def verify(vocab: int = DEFAULT_VOCAB, device: str = "cpu", force: bool = False) -> dict:
    """As installed, then patched → ``{sglang, as_installed, patched, matches_reference,
    max_abs_diff}``. Raises what :func:`k3lab_patches.apply` raises (e.g. UpstreamFixed)."""
    import torch

    from . import apply, sglang_version

    logits = logits_for(len(MIX), vocab).to(device)
    try:
        run_verifier(logits, MIX)
        before = "ok"
    except Exception as e:  # the point: what the scheduler died of
        before = f"{type(e).__name__}: {e}"
    patched = apply(force=force)
    got = run_verifier(logits, MIX)
    want = reference_target_probs(logits, MIX, DRAFT_TOKENS)
    return {"sglang": sglang_version(), "as_installed": before, "patched": patched,
            "matches_reference": bool(torch.equal(got != 0, want != 0)
                                      and torch.allclose(got, want, atol=1e-6, rtol=1e-5)),
            "max_abs_diff": float((got - want).abs().max())}


def usable_device(text: str) -> str:
    """``text`` when torch can put a tensor on that device here; ValueError in one line otherwise
    (``cuda`` on a build or a machine without one: torch's own answer is an AssertionError; no torch
    at all, a bare venv with the wheel installed --no-deps: attack 7 met a traceback there)."""
    try:
        import torch
    except ImportError:
        raise ValueError("verify needs torch (and sglang): run it in the image that serves Kimi K3, where both are "
                         "installed") from None

    try:
        dev = torch.device(text)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"--device {text!r} is not a torch device (cpu, cuda, cuda:1, ...)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {text}: this torch ({torch.__version__}) sees no CUDA or ROCm device here; "
                         f"leave --device out to verify on the CPU")
    if dev.type == "meta":
        raise ValueError("--device meta holds no values to compare; use cpu or a GPU")
    try:
        torch.empty(1, device=dev)
    except (RuntimeError, AssertionError, ValueError) as e:
        raise ValueError(f"--device {text}: not usable here ({str(e).splitlines()[0] if str(e) else type(e).__name__})")\
            from None
    return text


def main(argv=None) -> int:
    """0: the patched verifier matches the reference (or nothing needs patching); 1: it does
    not; 2: a usage mistake or a patch refused (one line on stderr)."""
    from . import UnsupportedSglangVersion, UpstreamFixed
    from .oneline import OneLineParser, bounded_int

    ap = OneLineParser(prog="python -m k3lab_patches verify", description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=bounded_int(MIN_VOCAB, MAX_VOCAB, "the mix asks for top_k=20; no model's "
                                                "vocabulary is larger"),
                    default=DEFAULT_VOCAB, help=f"vocabulary of the test batch ({MIN_VOCAB:,} to {MAX_VOCAB:,})")
    ap.add_argument("--device", default="cpu", help="torch device of the test batch (default cpu)")
    ap.add_argument("--force", action="store_true", help="as serve --force (an untested release or build)")
    a = ap.parse_args(argv)
    try:
        usable_device(a.device)
    except ValueError as e:
        print(f"k3lab_patches verify: error: {e}", file=sys.stderr)
        return 2
    try:
        r = verify(a.vocab, a.device, a.force)
    except UpstreamFixed as e:
        print(f"k3lab_patches verify: nothing to patch: {e}")
        return 0
    except (UnsupportedSglangVersion, RuntimeError, ImportError, AttributeError) as e:
        print(f"k3lab_patches verify: error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return 2
    print(f"sglang {r['sglang']}, batch: top_k=20 mixed with unrestricted, {len(MIX)} requests x "
          f"{DRAFT_TOKENS} rows, vocab {a.vocab}, device {a.device}")
    print(f"as installed: {r['as_installed']}")
    print(f"patched: {', '.join(r['patched']) or 'nothing newly bound'}")
    verdict = "ok" if r["matches_reference"] else "MISMATCH"
    print(f"patched verifier vs reference: {verdict} (max abs diff {r['max_abs_diff']:.2e})")
    return 0 if r["matches_reference"] else 1
