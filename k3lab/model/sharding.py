"""How sglang lays a model's tensors out over ranks: per-rank bytes for TP / PP / EP / DP.

The rules per tensor (column / row / vocab parallel, replicated, the fused MoE's expert
split) are ``data/sglang_sharding.yaml``, read from sglang 0.5.23's model code (file and
class cited per tensor) and checked tensor by tensor against sglang's real Kimi K3 module
built on the meta device (``tests/sglang/test_sglang_k3_rank_bytes.py``).

What a rank holds also depends on sglang's switches and the platform; :class:`Setting`
carries them, named as sglang names them (release 0.5.23):

- ``platform``: ``rocm`` (AMD, the AITER MoE path: ``SGLANG_USE_AITER=1``, as the article's
  setup and sglang's ROCm images run it; without it 0.5.23's ``Mxfp4MoEMethod`` takes the
  triton-kernels path, which aligns to 64 and would not pad K3's 384) or ``cuda`` (NVIDIA);
- ``SGLANG_AITER_K3_OPT`` (:data:`VARIANTS` ``aiter-k3-opt``): on ROCm, AITER aligns the
  per-rank expert intermediate to 128 instead of 256 (``layers/quantization/mxfp4.py``
  ``Mxfp4MoEMethod.create_weights``; 384 → 512 at TP8 without it). On SM100/SM103
  (flashinfer_mxfp4) the alignment is 128, on other CUDA GPUs 128 as well (Marlin);
- zero expert biases: ``create_weights`` allocates bf16 ones whenever the platform is not
  HIP (``with_bias or not _is_hip``), although the checkpoint has none; on SM100/SM103 the
  flashinfer_mxfp4 branch of ``process_weights_after_loading`` turns them into fp32 and adds
  fp32 ``gemm1_alpha`` / ``gemm1_beta`` / ``gemm1_clamp_limit`` of one value per local expert;
- ``--ep-size N`` (``ep``): whole experts per rank (``num_experts / N``), the intermediate
  not split; with an all-to-all backend (``--moe-a2a-backend deepep|mori|…``, ``ep-a2a``)
  the shared experts are replicated as well (``KimiK3MoE._shared_experts_tp1``);
- ``--enable-dp-attention --dp-size N`` (``dp-attention``): attention weights and the
  input embedding replicated (attention-TP size 1; ``get_embedding_tp_kwargs``).

Units: bytes. ``tp`` = tensor-parallel ranks, ``pp`` = pipeline stages; "per rank" = per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data
from ..spelling import did_you_mean
from ..specs import ModelConfig
from . import quant
from .inventory import Tensor, inventory

SHARD_RULES = ("column", "row", "vocab", "replicated", "moe_intermediate")
#: attention-side tensor groups that DP attention replicates
DP_ATTENTION_COMPONENTS = ("mla_attention", "kda_attention")

#: layout switches as ``python -m k3lab fit --variant NAME`` takes them.
VARIANTS = {
    "aiter-moe-pad": "ROCm default (SGLANG_USE_AITER=1), made explicit: AITER aligns the per-rank expert intermediate to 256 "
                     "(sglang 0.5.23 mxfp4.py Mxfp4MoEMethod.create_weights; 384 -> 512 at TP8)",
    "aiter-k3-opt": "SGLANG_AITER_K3_OPT=1 on ROCm: align to 128 instead (384 stays 384 at TP8)",
    "ep": "--ep-size <tp> (no all-to-all backend): whole experts per rank, the expert intermediate not split",
    "ep-a2a": "--ep-size <tp> --moe-a2a-backend <deepep|mori|...>: as ep, and the shared experts replicated "
              "(kimi_k3.py KimiK3MoE._shared_experts_tp1)",
    "dp-attention": "--enable-dp-attention --dp-size <tp>: attention weights and the input embedding "
                    "replicated on every rank (attention-TP size 1)",
}


@dataclass(frozen=True)
class Setting:
    """What besides the layout decides per-rank bytes: the platform and sglang's switches."""

    platform: str = "cuda"
    sm100: bool = False
    aiter_k3_opt: bool = False
    ep: bool = False
    ep_a2a: bool = False
    dp_attention: bool = False

    def __post_init__(self):
        if self.platform not in ("cuda", "rocm"):
            raise ValueError(f"platform must be 'cuda' or 'rocm', got {self.platform!r}")
        if self.aiter_k3_opt and self.platform != "rocm":
            raise ValueError("the variant aiter-k3-opt (SGLANG_AITER_K3_OPT) applies to ROCm GPUs only")

    @property
    def moe_intermediate_align(self) -> int:
        """Per-rank expert intermediate alignment of sglang 0.5.23's MXFP4 MoE method."""
        if self.platform == "rocm":
            return 128 if self.aiter_k3_opt else 256
        return 128

    @property
    def zero_expert_biases(self) -> bool:
        return self.platform != "rocm"

    @property
    def flashinfer_postload(self) -> bool:
        """SM100/103 with the flashinfer_mxfp4 runner (Kimi K3's default there). An all-to-all
        EP backend needs another runner (deep_gemm): flashinfer_mxfp4 has no fused a2a path in
        0.5.23 (``NotImplementedError`` at start-up), so its post-load changes do not apply."""
        return self.sm100 and not self.ep_a2a


def setting_for(gpu_vendor: str, variants=(), arch: str | None = None) -> Setting:
    """The :class:`Setting` of a GPU vendor (``amd`` → ROCm; ``arch`` sm100/sm103 → the
    Blackwell flashinfer_mxfp4 path) with named variants applied.

    ValueError for an unknown variant or a combination that cannot hold (both AITER
    alignments, an AITER switch on an NVIDIA GPU)."""
    variants = list(variants or ())
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}{did_you_mean(unknown[0], VARIANTS)}; known: "
                         f"{', '.join(VARIANTS)}")
    platform = "rocm" if gpu_vendor == "amd" else "cuda"
    if "aiter-moe-pad" in variants and "aiter-k3-opt" in variants:
        raise ValueError("variants aiter-moe-pad and aiter-k3-opt contradict each other (256 vs 128 alignment)")
    if platform != "rocm" and any(v.startswith("aiter-") for v in variants):
        raise ValueError("the aiter-* variants apply to ROCm (AMD) GPUs only")
    if "ep" in variants and "ep-a2a" in variants:
        raise ValueError("give one of the variants ep and ep-a2a (ep-a2a is ep with an all-to-all backend)")
    return Setting(platform=platform, sm100=platform == "cuda" and arch in ("sm100", "sm103"),
                   aiter_k3_opt="aiter-k3-opt" in variants,
                   ep="ep" in variants or "ep-a2a" in variants, ep_a2a="ep-a2a" in variants,
                   dp_attention="dp-attention" in variants)


def layout_rules():
    """``data/sglang_sharding.yaml`` (validated by :mod:`k3lab.data`): tensor name → rule."""
    return data.load("sharding")


def check_parallel(cfg: ModelConfig, tp: int, pp: int = 1) -> None:
    """ValueError unless ``tp`` splits the heads and expert intermediate and ``pp`` the layers."""
    data.check_count("tp", tp)
    data.check_count("pp", pp)
    if cfg.num_attention_heads % tp:
        raise ValueError(f"tp={tp} does not divide the {cfg.num_attention_heads} attention heads of {cfg.name}")
    if cfg.has_kda and cfg.linear_attn_num_heads % tp:
        raise ValueError(f"tp={tp} does not divide the {cfg.linear_attn_num_heads} KDA heads of {cfg.name}")
    inter = cfg.moe_intermediate_size
    if inter % tp or (inter // tp) % quant.MXFP4_BLOCK:
        raise ValueError(f"tp={tp}: the expert intermediate size {inter} of {cfg.name} must split into whole "
                         f"{quant.MXFP4_BLOCK}-element blocks per rank")
    if pp > cfg.num_hidden_layers:
        raise ValueError(f"pp={pp} exceeds the {cfg.num_hidden_layers} layers of {cfg.name}")


def pp_stages(cfg: ModelConfig, pp: int) -> list[tuple[int, int]]:
    """Layer ranges [start, end) of each pipeline stage, as sglang 0.5.23's
    ``srt/distributed/utils.py`` ``get_pp_indices`` splits them (the last ``n % pp`` stages
    get one extra layer; ``SGLANG_PP_LAYER_PARTITION`` unset)."""
    check_parallel(cfg, 1, pp)
    n = cfg.num_hidden_layers
    base, rem = divmod(n, pp)
    out, start = [], 0
    for r in range(pp):
        size = base + (1 if r >= pp - rem else 0)
        out.append((start, start + size))
        start += size
    return out


def _split(dim: int, tp: int, rule: str, vocab_pad: int, what: str) -> int:
    """Elements along the split dimension on the heaviest rank."""
    if rule == "vocab":
        padded = -(-dim // vocab_pad) * vocab_pad
        if padded % tp:
            raise ValueError(f"tp={tp} does not divide the padded vocabulary {padded}")
        return padded // tp
    if dim % tp:
        raise ValueError(f"tp={tp} does not divide dimension {dim} of {what} ({rule}-parallel)")
    return dim // tp


def _rule_for(t: Tensor, rules):
    key = t.scale_of or t.name
    spec = rules.tensors.get(key)
    if spec is None:
        raise ValueError(f"data/sglang_sharding.yaml has no rule for tensor {key!r}")
    return spec


def rank_rows(cfg: ModelConfig, tp: int, pp: int, stage: int, setting: Setting = Setting(),
              runtime: bool = True) -> list[dict]:
    """Per-tensor rows for one rank of pipeline ``stage``: rule, shape and bytes on the rank.

    ``runtime=False`` keeps only checkpoint tensors in their checkpoint dtype (no runtime
    copies, no zero biases, no dtype conversions, no padding): the pure shard, so at
    tp = pp = 1 it sums to the checkpoint. MTP tensors are not loaded by a target model.
    """
    rules = layout_rules()
    opts = rules.options
    vocab_pad = opts.vocab_padding
    lo, hi = pp_stages(cfg, pp)[stage]
    s = quant.scheme(cfg)
    rows = []
    for t in inventory(cfg):
        if t.stage == "mtp" or (not runtime and not t.in_checkpoint):
            continue
        spec = _rule_for(t, rules)
        if t.stage == "first":
            n_here = 1 if stage == 0 else 0
        elif t.stage == "last":
            n_here = 1 if stage == pp - 1 else 0
        else:
            n_here = sum(1 for i in t.layers if lo <= i < hi)
        copies = n_here * t.per_layer_copies
        rule = spec.rule
        group = spec.group
        if setting.dp_attention and (t.component in DP_ATTENTION_COMPONENTS or group == "embed"):
            rule = "replicated"
        if setting.ep_a2a and t.component == "shared_experts":
            rule = "replicated"
        shape = list(t.shape)
        base_shape = list(next((u.shape for u in inventory(cfg) if u.name == t.scale_of), t.shape)) \
            if t.kind == "scale" else shape
        if rule == "moe_intermediate" and setting.ep:
            # whole experts, E / ep of them on each rank; the intermediate is not split
            if t.per_layer_copies % tp:
                raise ValueError(f"ep={tp} does not divide the {t.per_layer_copies} experts of {cfg.name}")
            copies = copies // tp
            pad_to = setting.moe_intermediate_align if runtime and t.dtype == "mxfp4" else 1
            d, parts = spec.dim, spec.parts
            per = base_shape[d] // parts
            base_shape[d] = -(-per // pad_to) * pad_to * parts
        elif rule != "replicated":
            d, parts = spec.dim, spec.parts
            if base_shape[d] % parts:
                raise ValueError(f"{t.name}: dim {d} ({base_shape[d]}) is not {parts} equal parts")
            per = _split(base_shape[d] // parts, tp, rule, vocab_pad, t.name)
            if rule == "moe_intermediate" and runtime and t.dtype == "mxfp4":
                # the alignment is Mxfp4MoEMethod's; the per-expert scales follow their weight
                align = setting.moe_intermediate_align
                per = -(-per // align) * align
            base_shape[d] = per * parts
        if t.kind == "scale":
            shape = [quant.block_scale_numel(tuple(base_shape), s["block"])]
        else:
            shape = base_shape
        dtype = (t.rank_dtype or t.dtype) if runtime else t.dtype
        rank_bytes = quant.nbytes(math.prod(shape), dtype) * copies
        rows.append({"tensor": t.name, "component": t.component, "rule": rule, "copies_on_rank": copies,
                     "rank_shape": "x".join(map(str, shape)), "dtype": dtype, "rank_bytes": rank_bytes,
                     "cite": spec.cite, "kind": t.kind})
        if runtime and setting.zero_expert_biases and t.component == "routed_experts" and t.kind == "param" \
                and t.dtype == "mxfp4":
            # sglang 0.5.23 Mxfp4MoEMethod.create_weights: bf16 w13_weight_bias [E, 2·I_pad] and
            # w2_weight_bias [E, H_latent] whenever not HIP, although the checkpoint has none.
            bias, bdt = shape[0], ("fp32" if setting.flashinfer_postload else "bf16")
            rows.append({"tensor": t.name + " zero bias (runtime)", "component": t.component,
                         "rule": rule, "copies_on_rank": copies, "rank_shape": str(bias), "dtype": bdt,
                         "rank_bytes": quant.nbytes(bias, bdt) * copies, "cite": opts.mxfp4_zero_bias_cite,
                         "kind": "runtime"})
            if setting.flashinfer_postload and t.name.startswith("moe.experts.w13"):
                # flashinfer_mxfp4 post-load: gemm1_alpha / _beta / _clamp_limit, fp32 [E_local] each
                rows.append({"tensor": "moe.experts gemm1_alpha+beta+clamp_limit (runtime)", "component": t.component,
                             "rule": rule, "copies_on_rank": copies, "rank_shape": "3", "dtype": "fp32",
                             "rank_bytes": 3 * 4 * copies, "cite": opts.flashinfer_postload_cite,
                             "kind": "runtime"})
    return rows


def stage_bytes(cfg: ModelConfig, tp: int, pp: int, stage: int, setting: Setting = Setting(),
                exclude=(), runtime: bool = True) -> int:
    return sum(r["rank_bytes"] for r in rank_rows(cfg, tp, pp, stage, setting, runtime)
               if r["component"] not in exclude)


def stage_weights_bytes(cfg: ModelConfig, tp: int = 8, pp: int = 1, setting: Setting = Setting(),
                        runtime: bool = True) -> list[int]:
    """Weight bytes per rank of each pipeline stage (list of length ``pp``)."""
    check_parallel(cfg, tp, pp)
    return [stage_bytes(cfg, tp, pp, s, setting, runtime=runtime) for s in range(pp)]


def heaviest_stage(cfg: ModelConfig, tp: int, pp: int = 1, setting: Setting = Setting()) -> int:
    """Index of the pipeline stage whose ranks hold the most weight bytes."""
    sizes = stage_weights_bytes(cfg, tp, pp, setting)
    return max(range(pp), key=lambda s: (sizes[s], -s))


def weights_bytes_per_gpu(cfg: ModelConfig, tp: int = 8, pp: int = 1, setting: Setting = Setting(),
                          runtime: bool = True) -> int:
    """Weight bytes on the heaviest rank under TP=``tp`` (× PP=``pp``), replicated tensors
    included. ``runtime=True`` also counts what sglang adds after loading (w_kc/w_vc copies,
    zero expert biases off ROCm, fp32 router bias, MoE padding); ``runtime=False`` is the
    pure shard of the checkpoint (at tp = pp = 1 it equals the checkpoint without MTP)."""
    return max(stage_weights_bytes(cfg, tp, pp, setting, runtime))


def shard_table(cfg: ModelConfig, tp: int = 8, pp: int = 1, setting: Setting = Setting()):
    """Per tensor on the heaviest rank: checkpoint bytes, an even 1/(tp·pp) share, bytes on
    the rank, and the gap (rank − share). → DataFrame (tensor, component, rule, dtype,
    rank_shape, checkpoint_bytes, even_share_bytes, rank_bytes, gap_bytes, cite)."""
    import pandas as pd

    stage = heaviest_stage(cfg, tp, pp, setting)  # checks tp and pp against the model first
    ckpt = {t.name: (quant.nbytes(t.numel_one, t.dtype) * t.copies if t.in_checkpoint else 0)
            for t in inventory(cfg)}
    out = []
    for r in rank_rows(cfg, tp, pp, stage, setting):
        c = ckpt.get(r["tensor"], 0)
        out.append({"tensor": r["tensor"], "component": r["component"], "rule": r["rule"],
                    "dtype": r["dtype"], "rank_shape": r["rank_shape"], "checkpoint_bytes": c,
                    "even_share_bytes": c / (tp * pp), "rank_bytes": r["rank_bytes"],
                    "gap_bytes": r["rank_bytes"] - c / (tp * pp), "cite": r["cite"]})
    return pd.DataFrame(out)
