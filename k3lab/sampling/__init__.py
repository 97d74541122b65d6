"""Finding 2's top-k / top-p renorm, and the baselines the study compares it with.

The renorm itself — :func:`top_k_renorm_prob`, :func:`top_p_renorm_prob` and their checks —
is what an operator installs into sglang, so it lives in the ``k3lab-patches`` distribution
(``patches/k3lab_patches/sampling.py``, FlashInfer semantics, dtype policy and bad input
described there) and is re-exported here unchanged: ``k3lab.sampling.top_k_renorm_prob`` *is*
``k3lab_patches.sampling.top_k_renorm_prob``. (A package folder rather than ``sampling.py``
so that git follows the old file to its new place.)

Here, for the benchmark and the tie study only: :func:`top_k_sort_fix`, the article's
"sort, masked_fill, divide" fix, and :func:`top_k_rank_mask`, a rank-mask renorm (keep
exactly k entries by rank), the behaviour sglang 0.5.23's torch fallback documents
(``_dflash_top_k_renorm_prob``).
"""

from __future__ import annotations

import torch

from k3lab_patches.sampling import *  # noqa: F401,F403  (the one implementation)
from k3lab_patches.sampling import NORM_EPS, _acc_dtype, _top_k_plan, per_row_k  # noqa: F401


def top_k_sort_fix(probs: torch.Tensor, top_k) -> torch.Tensor:
    """The article's fix as described: full sort, masked_fill, divide (threshold semantics).

    Sort each row descending, read the k-th value as the pivot, ``masked_fill`` what is
    below it with 0, divide by the kept sum. Same output as :func:`top_k_renorm_prob`; the
    cost is a full ``O(vocab log vocab)`` sort of every row. No input validation.
    """
    rows, vocab = probs.shape
    k = per_row_k(top_k, rows, vocab, device=probs.device)
    sorted_vals = torch.sort(probs, dim=-1, descending=True).values
    pivot = sorted_vals.gather(1, (k - 1).unsqueeze(1))
    pivot = torch.where((k >= vocab).unsqueeze(1), torch.zeros_like(pivot), pivot)
    x = probs.to(_acc_dtype(probs.dtype))
    x = x.masked_fill(probs < pivot, 0.0)
    return (x / x.sum(dim=-1, keepdim=True).clamp_min(NORM_EPS)).to(probs.dtype)


def top_k_rank_mask(probs: torch.Tensor, top_k) -> torch.Tensor:
    """Rank-mask renorm: keep exactly the first k entries of ``torch.topk``, drop the rest.

    The behaviour sglang 0.5.23's torch fallback documents (``dflash_utils.py``,
    ``_dflash_top_k_renorm_prob``): ``topk`` with the batch's largest k, zero ranks >= each
    row's k, divide by the kept sum, scatter back. Where ties straddle the pivot, which of
    the tied entries survive depends on ``torch.topk``'s order, and the rest are dropped.
    Computed in the input dtype, as the fallback does. No input validation.
    """
    rows, vocab = probs.shape
    k = per_row_k(top_k, rows, vocab, device=probs.device)
    kmax = int(k.max())
    vals, idx = torch.topk(probs, kmax, dim=-1)
    ranks = torch.arange(kmax, device=probs.device).unsqueeze(0)
    vals = vals.masked_fill(ranks >= k.unsqueeze(1), 0.0)
    vals = vals / vals.sum(dim=-1, keepdim=True)
    return torch.zeros_like(probs).scatter_(1, idx, vals)


def kept_counts(renormed: torch.Tensor) -> torch.Tensor:
    """Entries kept per row (nonzero) → int64 ``[rows]``."""
    return (renormed != 0).sum(dim=-1)


def tie_straddles(probs: torch.Tensor, top_k) -> torch.Tensor:
    """Rows where threshold and rank semantics differ → bool ``[rows]``.

    They differ exactly when the (k+1)-th largest value equals the k-th (a tie straddles
    the pivot), for restricted rows. Read from one ``torch.topk`` of ``max k + 1``.
    """
    rows, vocab = probs.shape
    k = per_row_k(top_k, rows, vocab, device=probs.device)
    restricted = k < vocab
    if not bool(restricted.any()):
        return restricted
    kk = torch.where(restricted, k, torch.ones_like(k))
    vals = torch.topk(probs, int(kk.max()) + 1, dim=-1).values
    at = vals.gather(1, (kk - 1).unsqueeze(1)).squeeze(1)
    after = vals.gather(1, kk.unsqueeze(1)).squeeze(1)
    return restricted & (at == after)
