"""Speculative verification (chain rejection sampling) for DSpark on K3.

:func:`verify_chain` — a chain verifier: ``n`` draft tokens are checked left to right
   against the target distributions (``n + 1`` rows per request: one per draft position
   plus the bonus). Draft token ``x`` at position ``i`` is accepted with probability
   ``min(1, p_i(x) / q_i(x))``; at the first rejection a token is drawn from
   ``normalise(max(p_i - q_i, 0))``; if all are accepted a bonus token is drawn from
   ``p_n``. With ``draft_probs=None`` the draft is a point mass (``q_i = one-hot(x_i)``),
   as in sglang's DFlash/DSpark target-only verification (``dflash_utils.py``, 0.5.16:
   ``draft_probs`` all zeros, "sampled from relu(q - p)"). The emitted tokens are then
   distributed exactly as the target (Leviathan et al. 2023, Chen et al. 2023). The target
   rows are whatever the caller's renorm produced, so a chi-square test over many seeded
   draws (:func:`chi_square_gof`) tells a correct renorm from a wrong one.

DSpark's speed-up is the serving model's (:mod:`k3lab.serving`, validated on public runs), not
this module's.
"""

from __future__ import annotations

import math

import torch

from .model.step import StepBytes, expected_distinct_experts, step_bytes  # noqa: F401  (re-exported)




def verify_chain(target_probs: torch.Tensor, draft_tokens: torch.Tensor,
                 draft_probs: torch.Tensor | None = None,
                 generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Chain speculative verification with rejection sampling.

    target_probs: ``[B, n + 1, V]`` rows summing to 1 (the target after temperature and
    top-k/top-p renorm). draft_tokens: int ``[B, n]``. draft_probs: ``[B, n, V]`` or None
    (point-mass draft). Returns ``(accept_len [B] int64 in [0, n], tokens [B, n + 1])``:
    the accepted drafts, then the one token drawn at the first rejection (or the bonus),
    padded with -1.
    """
    if target_probs.dim() != 3:
        raise ValueError(f"target_probs must be [B, n+1, V], got {tuple(target_probs.shape)}")
    B, n1, V = target_probs.shape
    if draft_tokens.shape != (B, n1 - 1):
        raise ValueError(f"draft_tokens must be [B, n] = {(B, n1 - 1)}, got {tuple(draft_tokens.shape)}")
    if draft_probs is not None and draft_probs.shape != (B, n1 - 1, V):
        raise ValueError(f"draft_probs must be [B, n, V] = {(B, n1 - 1, V)}, got {tuple(draft_probs.shape)}")
    n = n1 - 1
    dev = target_probs.device
    p_all = target_probs.to(torch.float64)
    tokens = torch.full((B, n + 1), -1, dtype=torch.int64, device=dev)
    accept_len = torch.zeros(B, dtype=torch.int64, device=dev)
    active = torch.ones(B, dtype=torch.bool, device=dev)
    rows = torch.arange(B, device=dev)
    for i in range(n):
        x = draft_tokens[:, i].to(torch.int64)
        p = p_all[:, i]
        if draft_probs is None:
            q = torch.zeros_like(p).scatter_(1, x.unsqueeze(1), 1.0)
        else:
            q = draft_probs[:, i].to(torch.float64)
        px, qx = p[rows, x], q[rows, x]
        u = torch.rand(B, generator=generator, dtype=torch.float64, device=dev)
        accept = active & (u * qx < px)  # u < p/q without dividing by q
        reject = active & ~accept
        tokens[accept, i] = x[accept]
        accept_len += accept.to(torch.int64)
        if bool(reject.any()):
            resid = (p - q).clamp_min(0.0)[reject]
            tot = resid.sum(dim=1, keepdim=True)
            resid = torch.where(tot > 0, resid / tot.clamp_min(1e-300), p[reject])
            tokens[reject, i] = torch.multinomial(resid, 1, generator=generator).squeeze(1)
        active = accept
    if bool(active.any()):
        tokens[active, n] = torch.multinomial(p_all[active, n], 1, generator=generator).squeeze(1)
    return accept_len, tokens


def first_token_counts(target_row: torch.Tensor, draft_tokens: list[int], draws: int,
                       seed: int = 0, draft_probs: torch.Tensor | None = None) -> torch.Tensor:
    """Histogram ``[V]`` of the first emitted token over ``draws`` seeded verifications.

    target_row: ``[V]`` — the same target at every position (one context), repeated over
    ``n + 1`` positions; draft_tokens: the ``n`` proposed tokens (same for every draw).
    """
    V = target_row.shape[0]
    n = len(draft_tokens)
    tp = target_row.to(torch.float64).expand(draws, n + 1, V)
    dt = torch.tensor(draft_tokens, dtype=torch.int64).expand(draws, n)
    dp = None if draft_probs is None else draft_probs.to(torch.float64).expand(draws, n, V)
    g = torch.Generator().manual_seed(seed)
    _, toks = verify_chain(tp, dt, dp, generator=g)
    return torch.bincount(toks[:, 0], minlength=V)


def chi_square_gof(counts: torch.Tensor, expected_probs: torch.Tensor) -> tuple[float, int, float]:
    """Pearson chi-square goodness of fit → (statistic, degrees of freedom, p-value).

    counts ``[V]`` observed; expected_probs ``[V]`` summing to 1. Bins with zero expected
    probability must be empty (any count there gives statistic inf, p-value 0). The p-value
    is the chi-square survival function, ``Q(df/2, x/2)`` (``torch.special.gammaincc``).
    """
    counts = counts.to(torch.float64)
    e = expected_probs.to(torch.float64) * counts.sum()
    support = e > 0
    if bool((counts[~support] > 0).any()):
        return math.inf, int(support.sum()) - 1, 0.0
    x = float((((counts - e) ** 2)[support] / e[support]).sum())
    df = int(support.sum()) - 1
    if df <= 0:
        return x, df, 1.0
    p = float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                      torch.tensor(x / 2, dtype=torch.float64)))
    return x, df, p
