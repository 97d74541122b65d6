"""What a model is made of: every weight tensor from the config, its dtype, and the sums.

One *tensor inventory* (:func:`inventory`) lists every weight tensor of the text model with
its shape (from the config), how many layers carry it, its checkpoint storage, the
component it belongs to and the sglang tensor name it is sharded by
(``data/sglang_sharding.yaml``). Parameter counts and checkpoint bytes are sums over that one
inventory, and per-rank bytes (:mod:`k3lab.model.sharding`) too, so they cannot drift apart.

Storage comes from the config's quantisation section (:mod:`k3lab.model.quant`), not from
the model's name: Kimi K3's compressed-tensors MXFP4 routed experts, DeepSeek-V3's and
Kimi K2's FP8 128×128 blocks with fp32 scales.

Units: parameters are counts; bytes are bytes. Shapes are HF ``[out, in]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import data
from .config import ModelConfig
from . import quant

#: The component keys of :attr:`ParamCount.breakdown`, in a fixed order.
COMPONENTS = (
    "embed_tokens", "lm_head", "dense_mlp", "mla_attention", "kda_attention", "router",
    "latent_projections", "shared_experts", "routed_experts", "norms_and_attn_res", "mtp",
)


@dataclass(frozen=True)
class Tensor:
    """One weight tensor kind of the model.

    ``shape``: the full (unsharded) shape of ONE copy. ``layers``: the 0-based decoder
    layers that carry a copy (empty for tensors outside the layers; ``stage`` says where
    those live: ``first`` = embedding, ``last`` = lm_head and final norms, ``mtp`` = the
    multi-token-prediction module a checkpoint may ship). ``per_layer_copies``: copies
    within one layer (896 for each routed-expert matrix of K3). ``dtype``: checkpoint
    storage (``mxfp4`` includes its E8M0 scales; ``fp8`` block-quantised weights carry a
    separate ``scale`` tensor). ``rank_dtype``: what sglang keeps in memory where it
    converts. ``kind``: ``param`` (counted as a parameter), ``scale`` (quantisation
    scales: checkpoint bytes, not parameters) or ``runtime`` (a copy sglang makes after
    loading: per-rank bytes only). ``linear``: an ``nn.Linear`` weight, the only kind a
    quantisation scheme applies to. ``active_fraction``: (used, of) per token.
    """

    name: str
    component: str
    shape: tuple[int, ...]
    layers: tuple[int, ...]
    dtype: str
    per_layer_copies: int = 1
    rank_dtype: str | None = None
    stage: str = "layer"
    kind: str = "param"
    linear: bool = False
    active_fraction: tuple[int, int] = (1, 1)
    scale_of: str | None = field(default=None, compare=False)

    @property
    def is_param(self) -> bool:
        return self.kind == "param"

    @property
    def in_checkpoint(self) -> bool:
        return self.kind in ("param", "scale")

    @property
    def copies(self) -> int:
        """Copies in the whole model (layers × per-layer copies; 1 for non-layer tensors)."""
        n = len(self.layers) if self.stage == "layer" else 1
        return n * self.per_layer_copies

    @property
    def numel_one(self) -> int:
        return math.prod(self.shape)

    @property
    def numel(self) -> int:
        """Elements in the whole model."""
        return self.numel_one * self.copies


def layer_sets(cfg: ModelConfig):
    """0-based layer index sets: all, MLA, KDA, dense-MLP, MoE."""
    n = cfg.num_hidden_layers
    every = tuple(range(n))
    mla = tuple(sorted(i - 1 for i in cfg.full_attn_layers))
    kda = tuple(sorted(i - 1 for i in cfg.kda_layers))
    dense = tuple(range(cfg.first_k_dense_replace))
    moe = tuple(range(cfg.first_k_dense_replace, n))
    return every, mla, kda, dense, moe


def _block(cfg: ModelConfig, mla, kda, dense, moe, every, stage="layer", prefix="") -> list[Tensor]:
    """The tensors of decoder blocks over the given layer sets (``stage='mtp'``: the MTP block)."""
    h = cfg.hidden_size
    nh = cfg.num_attention_heads
    qk = cfg.qk_head_dim
    lat, moe_i = cfg.routed_expert_hidden_size, cfg.moe_intermediate_size
    shared_i = cfg.moe_intermediate_size * cfg.num_shared_experts
    e, k = cfg.num_experts, cfg.num_experts_per_token
    proj = cfg.linear_attn_num_heads * cfg.linear_attn_head_dim
    comp = (lambda c: "mtp") if stage == "mtp" else (lambda c: c)

    def T(name, c, shape, layers, dtype="bf16", **kw):
        return Tensor(prefix + name, comp(c), shape, layers, dtype, stage=stage, **kw)

    out = []
    if dense:
        out += [T("dense_mlp.gate_up_proj", "dense_mlp", (2 * cfg.intermediate_size, h), dense, linear=True),
                T("dense_mlp.down_proj", "dense_mlp", (h, cfg.intermediate_size), dense, linear=True)]
    out += [
        T("mla.q_a_proj", "mla_attention", (cfg.q_lora_rank, h), mla, linear=True),
        T("mla.kv_a_proj_with_mqa", "mla_attention", (cfg.kv_lora_rank + cfg.qk_rope_head_dim, h), mla, linear=True),
        T("mla.q_a_layernorm", "mla_attention", (cfg.q_lora_rank,), mla),
        T("mla.kv_a_layernorm", "mla_attention", (cfg.kv_lora_rank,), mla),
        T("mla.q_b_proj", "mla_attention", (nh * qk, cfg.q_lora_rank), mla, linear=True),
        T("mla.kv_b_proj", "mla_attention", (nh * (cfg.qk_nope_head_dim + cfg.v_head_dim), cfg.kv_lora_rank), mla, linear=True),
        T("mla.o_proj", "mla_attention", (h, nh * cfg.v_head_dim), mla, linear=True),
    ]
    if cfg.mla_use_output_gate:
        out.append(T("mla.g_proj", "mla_attention", (nh * cfg.v_head_dim, h), mla, linear=True))
    # sglang splits kv_b_proj into contiguous w_kc / w_vc copies after loading (absorbed
    # decode) and keeps kv_b_proj for prefill → a second bf16 copy per rank.
    out.append(T("mla.w_kc_w_vc (runtime copy of kv_b_proj)", "mla_attention",
                 (nh * (cfg.qk_nope_head_dim + cfg.v_head_dim), cfg.kv_lora_rank), mla, kind="runtime"))
    if kda:
        lin_h, lin_d = cfg.linear_attn_num_heads, cfg.linear_attn_head_dim
        out += [
            T("kda.q_k_v_g_proj", "kda_attention", (4 * proj, h), kda, linear=True),
            T("kda.b_proj", "kda_attention", (lin_h, h), kda, linear=True),
            T("kda.f_a_proj", "kda_attention", (lin_d, h), kda, linear=True),
            T("kda.f_b_proj", "kda_attention", (proj, lin_d), kda, linear=True),
            T("kda.o_proj", "kda_attention", (h, proj), kda, linear=True),
            T("kda.qkv_conv1d", "kda_attention", (3 * proj, cfg.short_conv_kernel_size), kda, "fp32"),
            T("kda.A_log", "kda_attention", (lin_h,), kda, "fp32"),
            T("kda.dt_bias", "kda_attention", (proj,), kda, "fp32"),
            T("kda.o_norm", "kda_attention", (lin_d,), kda),
        ]
    out += [
        T("moe.gate.weight", "router", (e, h), moe),
        # fp32 in the published checkpoints (DeepSeek-V3 / Kimi K2 per-tensor listings; Kimi K3's
        # 133,163,520-byte layer-92 payload in data/model/storage_overrides.yaml), fp32 in sglang too
        T("moe.gate.e_score_correction_bias", "router", (e,), moe, "fp32"),
    ]
    if cfg.has_latent_moe:
        out += [T("moe.routed_expert_down_proj", "latent_projections", (lat, h), moe, linear=True),
                T("moe.routed_expert_up_proj", "latent_projections", (h, lat), moe, linear=True)]
        if cfg.latent_moe_use_norm:
            out.append(T("moe.routed_expert_norm", "latent_projections", (lat,), moe))
    if cfg.num_shared_experts:
        out += [T("moe.shared_experts.gate_up_proj", "shared_experts", (2 * shared_i, h), moe, linear=True),
                T("moe.shared_experts.down_proj", "shared_experts", (h, shared_i), moe, linear=True)]
    out += [
        T("moe.experts.w13 (gate+up)", "routed_experts", (2 * moe_i, lat), moe,
          per_layer_copies=e, active_fraction=(k, e), linear=True),
        T("moe.experts.w2 (down)", "routed_experts", (lat, moe_i), moe,
          per_layer_copies=e, active_fraction=(k, e), linear=True),
        T("layer.input_layernorm+post_attention_layernorm", "norms_and_attn_res", (2, h), every),
    ]
    if cfg.attn_res:
        out += [T("layer.attn_res_norms (self_attention, mlp)", "norms_and_attn_res", (2, h), every),
                T("layer.attn_res_projs (self_attention, mlp; H→1)", "norms_and_attn_res", (2, h), every)]
    return out


@data.cached  # storage from data/model/storage_overrides.yaml: cleared with the loader's cache
def inventory(cfg: ModelConfig) -> tuple[Tensor, ...]:
    """Every weight tensor of the text model, with shapes from ``cfg`` and storage from its
    quantisation section; fp8 block scales follow their weight as ``kind='scale'`` tensors.

    Shapes follow the checkpoint's tensor names as read by sglang (``kimi_k3.py``,
    ``deepseek_v2.py``). A vision tower is not in the text config and is not counted. An
    MTP module (``num_nextn_predict_layers``) is listed with ``stage='mtp'``: part of the
    checkpoint, loaded by sglang only as a speculative draft.
    """
    h, v = cfg.hidden_size, cfg.vocab_size
    every, mla, kda, dense, moe = layer_sets(cfg)
    out = [Tensor("embed_tokens", "embed_tokens", (v, h), (), "bf16", stage="first"),
           Tensor("lm_head", "lm_head", (v, h), (), "bf16", stage="last")]
    out += _block(cfg, mla, kda, dense, moe, every)
    if cfg.attn_res:
        out.append(Tensor("model.output_attn_res_norm+proj", "norms_and_attn_res", (2, h), (), "bf16", stage="last"))
    out.append(Tensor("model.norm", "norms_and_attn_res", (h,), (), "bf16", stage="last"))
    for j in range(cfg.num_nextn_predict_layers):
        pre = f"mtp{j}."
        one = (0,)  # one copy of each block tensor; MLA + MoE, as the MTP block of DeepSeek-V3
        out += [Tensor(pre + "embed_tokens", "mtp", (v, h), (), "bf16", stage="mtp"),
                Tensor(pre + "shared_head.head", "mtp", (v, h), (), "bf16", stage="mtp"),
                Tensor(pre + "eh_proj", "mtp", (h, 2 * h), (), "bf16", stage="mtp", linear=True),
                Tensor(pre + "enorm+hnorm+shared_head.norm", "mtp", (3, h), (), "bf16", stage="mtp")]
        out += [Tensor(t.name, t.component, t.shape, (), t.dtype, t.per_layer_copies, t.rank_dtype,
                       "mtp", t.kind, t.linear, t.active_fraction)
                for t in _block(cfg, one, (), (), one, one, stage="mtp", prefix=pre)]
    return tuple(quant.apply(cfg, out))


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts (plain counts, not bytes).

    ``total``: every checkpoint parameter of the text model, MTP module included.
    ``total_without_mtp``: the same without it (DeepSeek-V3's "671B" vs "685B").
    ``active``: parameters touched per token, **excluding the input embedding** (a lookup
    reads one row, it is not a matmul) and **including lm_head**, MTP excluded.
    ``active_with_embedding`` adds the whole embedding table; ``active_excluding_
    embeddings`` drops lm_head as well. Routed experts count ``top_k / num_experts``.
    ``breakdown`` / ``active_breakdown``: component → count (keys :data:`COMPONENTS`).
    """

    total: int
    total_without_mtp: int
    active: int
    active_with_embedding: int
    active_excluding_embeddings: int
    breakdown: dict = field(default_factory=dict)
    active_breakdown: dict = field(default_factory=dict)


def count_params(cfg: ModelConfig) -> ParamCount:
    """Total and active parameters of ``cfg``, with a per-component breakdown."""
    tot = dict.fromkeys(COMPONENTS, 0)
    act = dict.fromkeys(COMPONENTS, 0)
    for t in inventory(cfg):
        if not t.is_param:
            continue
        tot[t.component] += t.numel
        used, of = t.active_fraction
        act[t.component] += t.numel * used // of
    total = sum(tot.values())
    active_all = sum(act.values()) - act["mtp"]
    return ParamCount(
        total=total, total_without_mtp=total - tot["mtp"],
        active=active_all - act["embed_tokens"],
        active_with_embedding=active_all,
        active_excluding_embeddings=active_all - act["embed_tokens"] - act["lm_head"],
        breakdown=tot, active_breakdown=act,
    )


def checkpoint_bytes(cfg: ModelConfig, by_component: bool = False):
    """Bytes of the checkpoint as stored (quantised weights with their scales, the rest in
    their checkpoint dtype). Returns an int, or a dict component → bytes."""
    d = dict.fromkeys(COMPONENTS, 0)
    for t in inventory(cfg):
        if t.in_checkpoint:
            d[t.component] += quant.nbytes(t.numel_one, t.dtype, t.shape) * t.copies
    return d if by_component else sum(d.values())


def routed_expert_bytes(cfg: ModelConfig) -> int:
    """Bytes of ONE routed expert in ONE layer as stored (weights and their scales):
    gate + up (latent → intermediate) and down (intermediate → latent)."""
    return sum(quant.nbytes(t.numel_one, t.dtype, t.shape) for t in inventory(cfg)
               if t.component == "routed_experts" and t.stage == "layer")
