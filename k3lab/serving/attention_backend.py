"""sglang's ``--attention-backend`` for Kimi K3 on ROCm, as the serving model prices it (finding 3):
what the fast prefill gains over sglang's default at your prompt length, and what padding 12 heads
to 16 costs there.

Every sglang release measured (0.5.16–0.5.23) picks ``triton`` for K3's 12 heads per rank on ROCm
unless told (notebook 03: ``ServerArgs._get_default_attn_backend``, replayed per release);
``aiter`` runs AITER's MLA prefill, which in the releases and patches that pad 12 heads to 16 for
its ASM kernel (0.5.22–0.5.23, ``k3lab-patches``' head pad) computes 4 zero heads. The model prices
a prefill — and a DSpark verify step, which sglang runs in the same extend kernel — with the kernel
the backend runs (:data:`BACKENDS` → :data:`k3lab.serving.model.PREFILL_ATTENTION`), each at the
efficiency fitted on the public runs that used it. Decode is priced the same under both: the fit
does not tell the two decode kernels apart.

The padding's cost (:func:`compare`) is an upper bound: the model with the fast kernel's attention
time raised by a third (16 heads for 12 at the kernel's fitted speed per head). The fitted runs
include padded ones, whose zero heads are already in that speed, so the true cost is at most this.

What 0.5.19–0.5.21 ran instead (12 heads unpadded on AITER's non-fp8 prefill, no public run of it:
the fp8 one is 0.5.22's, ``SGLANG_AITER_FP8_PREFILL_ATTN``) is modelled, not fitted: the same share
of the GPU's bf16 peak as the fast kernel takes of its fp8 peak (:data:`FP8_PREFILL`), so its
attention runs ``fp8 peak / bf16 peak × 12/16`` (×1.5 on the MI355X) the fast kernel's time. An
assumption a GPU can check (``bench`` on 0.5.21 against 0.5.22 with a long prompt), said as one.
Units: ms; output tok/s per deployment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import math

from ..specs import Deployment, ModelConfig
from . import committed
from .engines import SGLANG, Engine, Harness, mean_lengths, usual_harness
from .model import NO_SPEC, Spec, Workload, benchmark
from .predict import Prediction, admission, band_words, family_params, predict

#: sglang's --attention-backend values the model prices on ROCm → its prefill-attention kernel
BACKENDS = {"aiter": "fast", "triton": "fallback"}
#: what sglang picks for Kimi K3 on ROCm when not told (every release measured: notebook 03)
ROCM_DEFAULT = "triton"
#: q heads the fast kernel computes per rank for K3's 12 at TP8 (AITER's ASM prefill takes 16 or more)
PADDED, REAL = 16, 12
#: the assumption the unpadded non-fp8 prefill is priced on (no public run of it)
FP8_PREFILL = "the same share of the bf16 peak as the padded fp8 prefill takes of the fp8 peak"


def unpadded_bf16_efficiency(fast_efficiency: float, gpu_spec) -> float | None:
    """The prefill-attention efficiency (share of the bf16 peak, on the 12 real heads' FLOPs) of
    AITER's unpadded non-fp8 prefill under :data:`FP8_PREFILL`, from the fast kernel's fitted one
    (taken as the padded fp8 kernel's: 16 heads' FLOPs at a share ``u`` of the fp8 peak give
    ``u · fp8/bf16 · 12/16`` in these units): ``fast_efficiency · bf16/fp8 peak · 16/12``; None
    where the spec sheet states no fp8 peak."""
    fp8, bf16 = gpu_spec.dense_fp8_tflops, gpu_spec.dense_bf16_tflops
    if not fp8 or not bf16:
        return None
    return fast_efficiency * bf16 / fp8 * PADDED / REAL


def prefill_attention(dep: Deployment, backend: str | None) -> str:
    """The model's prefill-attention kernel for ``--attention-backend backend`` on ``dep`` (None:
    the fast kernel, the model's default); ValueError for a backend the model does not price or a
    GPU that is not AMD's (the aiter/triton choice is ROCm's; NVIDIA GPUs run their own fast MLA)."""
    if backend is None:
        return "fast"
    if backend not in BACKENDS:
        raise ValueError(f"--attention-backend {backend!r}: the model prices {' or '.join(BACKENDS)} (ROCm)")
    if dep.gpu_spec.vendor != "amd":
        raise ValueError(f"--attention-backend {backend}: the aiter/triton choice is ROCm's (finding 3); on "
                         f"{dep.gpu.upper()} the model prices its own fast MLA prefill kernel")
    return BACKENDS[backend]


@dataclass(frozen=True)
class BackendComparison:
    """The question under each backend: ``aiter`` and ``triton`` (:class:`Prediction`), and under
    aiter the 4 zero heads' cost at most (``zero_heads_ttft_ms``, ``zero_heads_tpot_ms``: what they
    add to TTFT and TPOT; TPOT moves where other requests' prefills run between decode steps, or with
    DSpark, whose verify step runs the same kernel)."""

    aiter: Prediction
    triton: Prediction
    zero_heads_ttft_ms: float
    zero_heads_tpot_ms: float
    #: TTFT (ms) of 12 heads unpadded on AITER's non-fp8 prefill (0.5.19–0.5.21), modelled at the fast
    #: kernel's share of peak (:data:`FP8_PREFILL`); None on a GPU whose spec sheet states no fp8 peak
    unpadded_bf16_ttft_ms: float | None = None

    def fp8_gain(self) -> float | None:
        """TTFT of AITER's unpadded non-fp8 prefill over its padded fp8 one (the modelled gain of
        0.5.22's padded fp8 prefill for a 0.5.19–0.5.21 user), or None."""
        u = self.unpadded_bf16_ttft_ms
        return None if u is None or not self.aiter.ttft_ms else u / self.aiter.ttft_ms

    def as_dict(self) -> dict:
        """The comparison as JSON; a TTFT past k3lab's latency cap is null with ``ttft_over_cap`` saying
        why (the cap's rule: such a latency is never printed)."""
        def one(p):
            over = p.over_latency_cap()
            return {"ttft_ms": None if over else p.ttft_ms, "ttft_over_cap": over or None,
                    "tpot_ms": p.tpot_ms if p.decodes else None, "output_tok_s": p.output_tok_s,
                    "ttft_validated": not p.not_validated("ttft_ms"),
                    "ttft_not_validated_why": p.not_validated("ttft_ms")}
        return {"aiter": one(self.aiter), "triton": one(self.triton), "rocm_default": ROCM_DEFAULT,
                "zero_heads_ttft_ms_at_most": self.zero_heads_ttft_ms,
                "zero_heads_tpot_ms_at_most": self.zero_heads_tpot_ms,
                "unpadded_non_fp8_ttft_ms_modelled": self.unpadded_bf16_ttft_ms,
                "unpadded_non_fp8_assumes": FP8_PREFILL}


def compare(cfg: ModelConfig, dep: Deployment, work: Workload, spec: Spec = NO_SPEC, variants=(),
            kv_dtype: str = "bf16", mem_fraction: float | None = None, accept_range=None, engine: Engine = SGLANG,
            harness: Harness | None = None) -> BackendComparison | None:
    """:class:`BackendComparison` of a question on an AMD deployment (None on another vendor's)."""
    if dep.gpu_spec.vendor != "amd":
        return None
    kw = dict(variants=variants, kv_dtype=kv_dtype, mem_fraction=mem_fraction, accept_range=accept_range,
              engine=engine, harness=harness)
    fast = predict(cfg, dep, work, spec, prefill_attention="fast", **kw)
    slow = predict(cfg, dep, work, spec, prefill_attention="fallback", **kw)
    harness = usual_harness(engine.name) if harness is None else harness
    _, params, _ = family_params(dep.gpu)
    I, O = mean_lengths(work.input_len, work.output_len, harness)
    adm = admission(cfg, dep, I + O, spec, variants, kv_dtype, mem_fraction, engine).requests
    # 16 heads' time for 12 at the fitted speed per head: the attention term a third longer
    padded = replace(params, prefill_attention_efficiency=params.prefill_attention_efficiency * REAL / PADDED)
    t = benchmark(cfg, dep, work, padded, spec, variants, kv_dtype, None, "fast", engine, harness, adm)
    eff = unpadded_bf16_efficiency(params.prefill_attention_efficiency, dep.gpu_spec)
    bf16 = None if eff is None else benchmark(
        cfg, dep, work, replace(params, prefill_attention_efficiency=eff), spec, variants, kv_dtype, None, "fast",
        engine, harness, adm).ttft_s * 1e3
    return BackendComparison(fast, slow, max(0.0, t.ttft_s * 1e3 - fast.ttft_ms),
                             max(0.0, t.tpot_s * 1e3 - fast.tpot_ms), bf16)


def nearest_fallback_ttft(family: str, input_len: int, concurrency: int):
    """The public TTFT run of ``family`` on the Triton fallback (``prefill_attention`` ``fallback``
    in the committed fit) nearest the question: least |ln prompt ratio| + |ln concurrency ratio|,
    runs without DSpark first (a draft's own prefill is not in them), then the id. A row of the
    committed fit (``value`` measured, ``fitted`` the model's value, ms), or None without one."""
    runs = [o for o in committed.fitted_observations()
            if o.family == family and o.prefill_attention == "fallback" and o.kind == "ttft_ms"]
    key = lambda o: (abs(math.log(o.input_len / input_len)) + abs(math.log(o.concurrency / concurrency)),  # noqa: E731
                     o.spec != "none", o.id)
    return min(runs, key=key, default=None)


def _ms(v: float) -> str:
    return f"{v:,.0f} ms" if v < 1e4 else f"{v / 1e3:,.1f} s"


def lines(c: BackendComparison, priced: str, given: bool = True) -> list[str]:
    """Three or four lines for ``predict``: which backend was priced and what the other gives; the ratio's
    standing (each TTFT's band, the ratio only the fit's central estimate) beside the nearest public
    Triton-fallback TTFT run with the model's value for it (:func:`nearest_fallback_ttft`: its miss
    where a user can see it); the padding's cost at most; and, where the spec sheet gives an fp8
    peak, what 0.5.19–0.5.21's unpadded non-fp8 prefill takes instead (modelled: :data:`FP8_PREFILL`)
    (``priced``: ``aiter`` or ``triton``; ``given``: the user named it, else k3lab's default, said as one)."""
    from ..limits import CAPS

    a, t = c.aiter, c.triton
    mark = lambda p: " (not validated here)" if p.not_validated("ttft_ms") else ""  # noqa: E731
    # newcomer 28: Triton's TTFT at 172,000 in and 32 clients printed as 1,702,414 ms, past the cap k3lab states for
    # every latency it reads (predict refuses the priced backend's there): said as past the cap, its ratio a bound
    cap = CAPS["latency_ms"].high
    over = not t.ttft_ms <= cap
    tri = (f"more than {cap:,.0f} ms with triton (past k3lab's latency cap: {CAPS['latency_ms'].why})" if over else
           f"{t.ttft_ms:,.0f} ms with triton{mark(t)}")
    # (newcomer 61: "aiter priced (--attention-backend aiter; ...)" with no flag given read as the flag being set)
    how = (f"--attention-backend {priced}" if given else
           f"k3lab's default, served with --attention-backend {priced}")
    head = (f"  attention backend: {priced} priced ({how}; sglang's ROCm default for K3 is "
            f"{ROCM_DEFAULT}): TTFT {a.ttft_ms:,.0f} ms with aiter{mark(a)}, {tri} "
            f"(triton takes {'more than ' if over else ''}x{min(t.ttft_ms, cap) / a.ttft_ms:.2f} aiter's)")
    if abs(t.tpot_ms - a.tpot_ms) > 0.05:
        why = ("the verify step runs the same kernel" if a.spec != "none" else
               "other requests' prefills run between decode steps")
        head += f"; TPOT {a.tpot_ms:,.1f} vs {t.tpot_ms:,.1f} ms ({why})"
    ratio, ba, bt = t.ttft_ms / a.ttft_ms, a.band_of("ttft_ms"), t.band_of("ttft_ms")
    if over:
        band = (f"  each TTFT {band_words(ba)}; triton's past the cap, only the bound x{cap / a.ttft_ms:.2f} is said"
                if ba is not None else "  TTFT has no validated band here; triton's past the cap")
    elif ba is None or bt is None:
        band = f"  TTFT has no validated band here: x{ratio:.2f} is the model's central estimate, unbanded"
    else:  # both TTFTs come from one fit: their errors are not independent, so the ratio has no band of its own
        both = math.exp(ba + bt)
        band = (f"  each TTFT {band_words(ba)}; both come from one fit, so x{ratio:.2f} is its central estimate "
                f"(with the two at opposite edges: x{ratio / both:.2f}-x{ratio * both:.2f})")
    near = nearest_fallback_ttft(a.family, a.input_len, a.concurrency)
    if near is not None:
        band += (f"; nearest public Triton-fallback TTFT: {near.id} ({near.input_len:,} in, c{near.concurrency}, "
                 f"{near.gpu.upper()}): measured {_ms(near.value)}, the model puts it at {_ms(near.fitted)} "
                 f"(x{near.fitted / near.value:.2f} the measurement)")
        if near.fitted > near.value and a.ttft_ms and ratio > 1 and not over:
            # a reading, not a refit: were the model's Triton TTFT as high over this prompt as over that run
            band += (f"; were the Triton TTFT as far over here as there, the gain would be "
                     f"x{ratio * near.value / near.fitted:.2f}")
    cost = (f"  padding 12 heads to 16 for aiter's prefill costs at most {c.zero_heads_ttft_ms:,.0f} ms of aiter's TTFT "
            f"(+{c.zero_heads_ttft_ms / a.ttft_ms:.1%})"
            + (f" and {c.zero_heads_tpot_ms:,.1f} ms of TPOT (the prefills between decode steps)"
               if c.zero_heads_tpot_ms > 0.05 else "")
            # (newcomer 31: "pays nothing" beside the ledger's undecided P7: the flag swaps the decode kernel too)
            + "; the decode kernel itself pays nothing for it, but --attention-backend aiter moves decode off Triton "
              "too, which no model here times (claim P7)")
    g = c.fp8_gain()
    # newcomers 44-46: the padded fp8 prefill's gain over what 0.5.19-0.5.21 ran was unpriced
    older = [] if g is None else [
        f"  sglang 0.5.19-0.5.21 ran the 12 heads unpadded on AITER's non-fp8 prefill instead: TTFT "
        f"{_ms(c.unpadded_bf16_ttft_ms)}, x{g:.2f} the padded fp8's (modelled at {FP8_PREFILL}; no public run of it)"]
    return [head, band, cost] + older
