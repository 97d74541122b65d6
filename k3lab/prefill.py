"""Finding 3: a time-to-first-token model for a long cold prefill, before and after padding.

Per TP rank, a cold prefill of ``S`` tokens costs (Amdahl-style, two parts)::

    TTFT(S) = S · t_rest  +  F_attn(S, h) / R_attn

* ``F_attn(S, h)``: MLA attention FLOPs, MHA form (q/k 192, v 128), causal, ``h`` heads per
  rank, summed over the model's 24 MLA layers (:func:`attention_flops_per_rank`);
* ``t_rest``: seconds per token for everything else (projections, MoE, KDA layers, …),
  constant in ``S``. Its FLOPs are 2 per active parameter per token (``k3lab.memory``)
  plus the KDA state updates (:func:`rest_flops_per_token_per_rank`);
* ``R_attn``: the attention kernel's effective FLOP rate (FLOP/s per GPU): Triton before,
  AITER's ASM kernel after, which then runs on 16 heads instead of 12.

The article gives 51 s at 172k tokens before, "4–7k → ~13k tok/s" and "2–3×". The model
is fit to those (:func:`fit_article`) and the implied kernel efficiencies are compared
with the hardware's peaks; :func:`flop_share` is the first-principles part that needs no
article number. Decode is discussed in :func:`decode_attention_intensity`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import attention as A
from . import data
from .data import check_count
from .model.inventory import count_params


@dataclass(frozen=True)
class ArticlePrefill:
    """The article's prefill figures (``data/prefill/article_prefill.yaml``)."""

    context_tokens: int
    ttft_before_s: float
    ttft_b300_s: float
    tok_s_before_low: float
    tok_s_before_high: float
    tok_s_after: float
    speedup_low: float
    speedup_high: float
    tp: int
    source: str


def load_article() -> ArticlePrefill:
    """The article's prefill figures (``data/article_prefill.yaml``, validated by the loader)."""
    d = data.load("article_prefill")
    return ArticlePrefill(
        context_tokens=int(d.context_tokens.value), ttft_before_s=d.ttft_s_mi355x_before.value,
        ttft_b300_s=d.ttft_s_b300.value, tok_s_before_low=d.prefill_tok_s_before_low.value,
        tok_s_before_high=d.prefill_tok_s_before_high.value, tok_s_after=d.prefill_tok_s_after.value,
        speedup_low=d.ttft_speedup_low.value, speedup_high=d.ttft_speedup_high.value,
        tp=int(d.tp.value), source=d.source.title)


# --------------------------------------------------------------------------- FLOPs

def heads_per_rank(cfg, tp: int) -> int:
    """Attention heads each rank holds at tensor parallelism ``tp``."""
    check_count("tp", tp)
    if cfg.num_attention_heads % tp:
        raise ValueError(f"tp={tp} does not divide {cfg.num_attention_heads} attention heads")
    return cfg.num_attention_heads // tp


def attention_flops_per_rank(seq_len: int, cfg, tp: int = 8, heads: int | None = None) -> int:
    """MLA attention FLOPs of one rank for a cold causal prefill of ``seq_len`` tokens.

    ``heads``: heads the kernel runs (default: the real heads per rank; pass 16 for the
    padded kernel). Sum over ``cfg.num_mla_layers`` layers; MHA form, q/k head dim
    ``cfg.qk_head_dim``, v ``cfg.v_head_dim``. → int FLOPs.
    """
    h = heads_per_rank(cfg, tp) if heads is None else heads
    if seq_len < 0:
        raise ValueError(f"seq_len must be >= 0, got {seq_len}")
    return cfg.num_mla_layers * A.attention_flops(seq_len, h, cfg.qk_head_dim, cfg.v_head_dim)


def kda_flops_per_token(cfg) -> int:
    """KDA (linear attention) state FLOPs per token, whole model: state update kᵀv and read qS.

    2 matmul-like products of d_k × d_v per head, 2 FLOPs per MAC, over the KDA layers
    (chunked-form intra-chunk terms are of the same order and ignored: < 1 % of the total).
    """
    d = cfg.linear_attn_head_dim
    return 2 * 2 * cfg.linear_attn_num_heads * d * d * cfg.num_kda_layers


def active_params(cfg) -> int:
    """Active parameters per token (``k3lab.model.inventory.count_params(cfg).active``)."""
    return int(count_params(cfg).active)


def rest_flops_per_token_per_rank(cfg, tp: int = 8, active: int | None = None) -> float:
    """Everything but MLA attention, FLOPs per token per rank: (2·active + KDA state) / tp.

    ``active``: active parameters per token (default :func:`active_params`). The work of a
    TP8 instance is assumed split evenly over its ranks.
    """
    heads_per_rank(cfg, tp)
    n = active_params(cfg) if active is None else int(active)
    if n <= 0:
        raise ValueError(f"active parameters must be positive, got {n}")
    return (2.0 * n + kda_flops_per_token(cfg)) / tp


def flop_share(seq_len: int, cfg, tp: int = 8, heads: int | None = None,
               active: int | None = None) -> float:
    """Fraction of a rank's prefill FLOPs that is MLA attention at ``seq_len`` (0..1)."""
    fa = attention_flops_per_rank(seq_len, cfg, tp, heads)
    fr = rest_flops_per_token_per_rank(cfg, tp, active) * seq_len
    return fa / (fa + fr) if fa + fr else 0.0


# --------------------------------------------------------------------------- the model

@dataclass(frozen=True)
class TTFTModel:
    """TTFT(S) = S · t_rest_s + F_attn(S, kernel_heads) / attn_flop_s (one TP rank)."""

    t_rest_s: float          # seconds per token, non-attention work
    attn_flop_s: float       # effective attention FLOP/s of the kernel, per GPU
    kernel_heads: int        # heads the kernel computes (12 real, or 16 padded)
    cfg: object = field(repr=False, compare=False)
    tp: int = 8
    label: str = ""

    def attention_s(self, seq_len: int) -> float:
        return attention_flops_per_rank(seq_len, self.cfg, self.tp, self.kernel_heads) / self.attn_flop_s

    def ttft_s(self, seq_len: int) -> float:
        """Seconds to the first token for a cold prefill of ``seq_len`` tokens."""
        return seq_len * self.t_rest_s + self.attention_s(seq_len)

    def tok_s(self, seq_len: int) -> float:
        """Average prefill throughput over the request, tokens/s per TP8 instance."""
        return seq_len / self.ttft_s(seq_len)

    def attention_time_share(self, seq_len: int) -> float:
        return self.attention_s(seq_len) / self.ttft_s(seq_len)

    def context_at_tok_s(self, tok_s: float) -> float | None:
        """Context length S at which the average throughput equals ``tok_s`` (None if never).

        S / (S·t_rest + c·S(S+1)) = r, with F_attn = c·S(S+1) → c(S+1) = 1/r − t_rest.
        """
        c = attention_flops_per_rank(1, self.cfg, self.tp, self.kernel_heads) / 2 / self.attn_flop_s
        gap = 1.0 / tok_s - self.t_rest_s
        if gap <= 0:
            return None
        return gap / c - 1.0


def fit_before(cfg, article: ArticlePrefill | None = None, t_rest_s: float | None = None) -> TTFTModel:
    """The Triton-fallback model: ``t_rest`` (default 1/after-rate), attention rate from 51 s.

    With the default ``t_rest_s = 1 / 13k`` the rest of the model runs at the post-fix rate,
    the most favourable reading (after the fix the short-context rate tends to 1/t_rest).
    ValueError if t_rest alone already exceeds the measured TTFT.
    """
    art = article or load_article()
    t_rest = 1.0 / art.tok_s_after if t_rest_s is None else float(t_rest_s)
    s = art.context_tokens
    attn_s = art.ttft_before_s - s * t_rest
    if attn_s <= 0:
        raise ValueError(f"t_rest={t_rest:.3g} s/token leaves no time for attention in "
                         f"{art.ttft_before_s} s at {s} tokens")
    fa = attention_flops_per_rank(s, cfg, art.tp)
    return TTFTModel(t_rest, fa / attn_s, heads_per_rank(cfg, art.tp), cfg, art.tp, "MI355X before (Triton)")


def fit_after(before: TTFTModel, speedup: float, article: ArticlePrefill | None = None) -> TTFTModel:
    """The padded-AITER model that gives ``speedup``× TTFT at the article's context.

    Same ``t_rest``; the attention rate solves TTFT_after = TTFT_before / speedup with the
    kernel on ``padded_heads`` heads. ValueError if the speedup is out of reach even with
    free attention (it would need S·t_rest < TTFT_before / speedup).
    """
    art = article or load_article()
    s = art.context_tokens
    target = before.ttft_s(s) / speedup
    attn_s = target - s * before.t_rest_s
    if attn_s <= 0:
        raise ValueError(f"a {speedup}x TTFT speed-up is out of reach: the non-attention part "
                         f"alone takes {s * before.t_rest_s:.1f} s > {target:.1f} s")
    m = A.padded_heads(before.kernel_heads)
    fa = attention_flops_per_rank(s, before.cfg, before.tp, m)
    return TTFTModel(before.t_rest_s, fa / attn_s, m, before.cfg, before.tp,
                     f"MI355X after (AITER ASM, {m} heads), {speedup:g}x")


def max_speedup(before: TTFTModel, seq_len: int) -> float:
    """TTFT speed-up if attention became free (the Amdahl bound)."""
    return before.ttft_s(seq_len) / (seq_len * before.t_rest_s)


def required_attention_share(speedup: float, kernel_speedup: float = float("inf")) -> float:
    """Attention's share of the before-time needed for ``speedup``× overall (Amdahl).

    ``kernel_speedup``: how much faster attention gets (∞ = free). f = (1 − 1/s)/(1 − 1/k).
    """
    if speedup < 1 or kernel_speedup <= 1:
        raise ValueError("need speedup >= 1 and kernel_speedup > 1")
    return (1 - 1 / speedup) / (1 - 1 / kernel_speedup)


def decode_attention_intensity(cfg, heads: int, kv_bytes_per_elem: int = 2) -> float:
    """FLOPs per byte of latent KV read by absorbed-form MLA decode (one query token).

    Per cached token and layer: read (kv_lora_rank + rope) elements once; every q head does
    QKᵀ over 576 and PV over 512: 2·(576 + 512) FLOPs. → FLOP/byte. Far below a GPU's
    ridge point (peak FLOP/s ÷ HBM B/s), so decode is bound by bytes that do not depend
    on the number of q heads.
    """
    lat = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    return heads * 2 * (lat + cfg.kv_lora_rank) / (lat * kv_bytes_per_elem)


def curves(models, lens) -> "object":
    """TTFT and throughput of several models over context lengths → long DataFrame."""
    import pandas as pd

    rows = []
    for m in models:
        for s in lens:
            rows.append({"model": m.label, "context_tokens": int(s), "ttft_s": m.ttft_s(int(s)),
                         "tok_s": m.tok_s(int(s)), "attention_share": m.attention_time_share(int(s))})
    return pd.DataFrame(rows)
