"""Finding 1: Kimi K3's parameters, checkpoint bytes, per-GPU shard, KV / state, and fit.

Everything here is derived from the published config (``k3lab.specs.load_model``) and
the hardware table (``k3lab.specs.load_gpu``), never from the article.

One *tensor inventory* (:func:`inventory`) lists every weight tensor of the text model
with its shape (from the config), how many layers carry it, its checkpoint dtype, and how
sglang shards it under tensor parallelism (the rule and its citation live in
``data/sglang_sharding.yaml``). Parameter counts, checkpoint bytes and per-rank bytes are
all sums over that one inventory, so they cannot drift apart.

Units: parameters are counts; bytes are bytes (``GB`` = 1e9 B, ``GiB`` = 2**30 B, from
:mod:`k3lab.specs`); tokens are tokens. ``tp`` = tensor-parallel ranks, ``pp`` =
pipeline stages; "per rank" = per GPU.

Public API (names other modules rely on):

- :func:`count_params` → :class:`ParamCount` (``.total``, ``.active``, ``.breakdown``)
- :func:`checkpoint_bytes`, :func:`routed_expert_bytes`
- :func:`weights_bytes_per_gpu`, :func:`non_expert_bytes_per_gpu`, :func:`shard_table`
- :func:`kv_bytes_per_token`, :func:`kda_state_bytes_per_request`
- :func:`plan` → :class:`Plan`
- :func:`cli_main` (``python -m k3lab fit …``)
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from dataclasses import asdict, dataclass, field

import yaml

from .paths import data_path
from .specs import GB, GiB, GPU, ModelConfig, known_gpus, load_gpu, load_model

# --------------------------------------------------------------------------- dtypes

#: bytes per element of each storage dtype. MXFP4 (OCP Microscaling): 32 FP4 (E2M1)
#: values share one 8-bit E8M0 scale → 4 bits + 8/32 bits = 4.25 bits = 17/32 byte.
MXFP4_BLOCK = 32
BYTES_PER_ELEMENT = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0, "mxfp4": 17 / 32}
KV_DTYPES = ("bf16", "fp8")
STATE_DTYPES = ("fp32", "bf16")

#: The component keys of :attr:`ParamCount.breakdown`, in a fixed order.
COMPONENTS = (
    "embed_tokens", "lm_head", "dense_mlp", "mla_attention", "kda_attention", "router",
    "latent_projections", "shared_experts", "routed_experts", "norms_and_attn_res",
)

#: Sharding rules used in ``data/sglang_sharding.yaml``.
SHARD_RULES = ("column", "row", "vocab", "replicated", "moe_intermediate")


def _nbytes(numel: int, dtype: str) -> int:
    """Bytes of ``numel`` elements stored as ``dtype`` (MXFP4 needs whole 32-blocks)."""
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(BYTES_PER_ELEMENT)}")
    if dtype == "mxfp4":
        if numel % MXFP4_BLOCK:
            raise ValueError(f"MXFP4 tensor of {numel} elements is not a whole number of 32-blocks")
        return numel // 2 + numel // MXFP4_BLOCK
    return int(numel * BYTES_PER_ELEMENT[dtype])


# --------------------------------------------------------------------------- inventory


@dataclass(frozen=True)
class Tensor:
    """One weight tensor kind of the model.

    ``shape`` is the full (unsharded) shape of ONE copy, ``layers`` the 0-based decoder
    layer indices that carry a copy (empty for embeddings / final norms, which live on
    the first or last pipeline stage, see ``stage``). ``per_layer_copies`` counts copies
    within one layer (896 for each routed-expert matrix). ``dtype`` is the checkpoint
    storage dtype; ``rank_dtype`` what sglang keeps in memory (differs only where sglang
    converts, e.g. the router correction bias to fp32). ``is_param`` is False for
    runtime-only buffers sglang derives after loading (they are in per-rank bytes but not
    in parameter counts or the checkpoint).
    """

    name: str
    component: str
    shape: tuple[int, ...]
    layers: tuple[int, ...]
    dtype: str
    per_layer_copies: int = 1
    rank_dtype: str | None = None
    stage: str = "layer"  # "layer", "first" (embedding) or "last" (lm_head, final norm)
    is_param: bool = True
    active_fraction: tuple[int, int] = (1, 1)  # (used, of) per token, e.g. (16, 896)

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


def _layers(cfg: ModelConfig):
    """0-based layer index sets: all, MLA, KDA, dense-MLP, MoE."""
    n = cfg.num_hidden_layers
    every = tuple(range(n))
    mla = tuple(i - 1 for i in cfg.full_attn_layers)
    kda = tuple(i - 1 for i in cfg.kda_layers)
    dense = tuple(range(cfg.first_k_dense_replace))
    moe = tuple(range(cfg.first_k_dense_replace, n))
    return every, tuple(sorted(mla)), tuple(sorted(kda)), dense, moe


@functools.lru_cache(maxsize=None)
def inventory(cfg: ModelConfig) -> tuple[Tensor, ...]:
    """Every weight tensor of the K3 text model, with shapes from ``cfg``.

    Shapes follow the checkpoint's tensor names (HF layout [out, in]) as read by
    sglang's ``kimi_k3.py`` (see ``data/sglang_sharding.yaml``). The vision tower
    (MoonViT) is not in the published text config and is not counted.
    """
    h, v = cfg.hidden_size, cfg.vocab_size
    every, mla, kda, dense, moe = _layers(cfg)
    nh = cfg.num_attention_heads
    qk = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    kv_a_out = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    lin_h, lin_d = cfg.linear_attn_num_heads, cfg.linear_attn_head_dim
    proj = lin_h * lin_d
    lat, moe_i = cfg.routed_expert_hidden_size, cfg.moe_intermediate_size
    shared_i = cfg.moe_intermediate_size * cfg.num_shared_experts
    e, k = cfg.num_experts, cfg.num_experts_per_token
    T = Tensor
    out = [
        T("embed_tokens", "embed_tokens", (v, h), (), "bf16", stage="first"),
        T("lm_head", "lm_head", (v, h), (), "bf16", stage="last"),
        # layer 0: dense MLP
        T("dense_mlp.gate_up_proj", "dense_mlp", (2 * cfg.intermediate_size, h), dense, "bf16"),
        T("dense_mlp.down_proj", "dense_mlp", (h, cfg.intermediate_size), dense, "bf16"),
        # MLA layers (incl. the output gate)
        T("mla.q_a_proj", "mla_attention", (cfg.q_lora_rank, h), mla, "bf16"),
        T("mla.kv_a_proj_with_mqa", "mla_attention", (kv_a_out, h), mla, "bf16"),
        T("mla.q_a_layernorm", "mla_attention", (cfg.q_lora_rank,), mla, "bf16"),
        T("mla.kv_a_layernorm", "mla_attention", (cfg.kv_lora_rank,), mla, "bf16"),
        T("mla.q_b_proj", "mla_attention", (nh * qk, cfg.q_lora_rank), mla, "bf16"),
        T("mla.kv_b_proj", "mla_attention", (nh * (cfg.qk_nope_head_dim + cfg.v_head_dim), cfg.kv_lora_rank), mla, "bf16"),
        T("mla.o_proj", "mla_attention", (h, nh * cfg.v_head_dim), mla, "bf16"),
    ]
    if cfg.mla_use_output_gate:
        out.append(T("mla.g_proj", "mla_attention", (nh * cfg.v_head_dim, h), mla, "bf16"))
    out += [
        # runtime copy: sglang splits kv_b_proj into w_kc / w_vc contiguous copies after
        # loading (absorbed decode) and keeps kv_b_proj for prefill → a second copy.
        T("mla.w_kc_w_vc (runtime copy of kv_b_proj)", "mla_attention",
          (nh * (cfg.qk_nope_head_dim + cfg.v_head_dim), cfg.kv_lora_rank), mla, "bf16", is_param=False),
        # KDA layers
        T("kda.q_k_v_g_proj", "kda_attention", (4 * proj, h), kda, "bf16"),
        T("kda.b_proj", "kda_attention", (lin_h, h), kda, "bf16"),
        T("kda.f_a_proj", "kda_attention", (lin_d, h), kda, "bf16"),
        T("kda.f_b_proj", "kda_attention", (proj, lin_d), kda, "bf16"),
        T("kda.o_proj", "kda_attention", (h, proj), kda, "bf16"),
        T("kda.qkv_conv1d", "kda_attention", (3 * proj, cfg.short_conv_kernel_size), kda, "fp32"),
        T("kda.A_log", "kda_attention", (lin_h,), kda, "fp32"),
        T("kda.dt_bias", "kda_attention", (proj,), kda, "fp32"),
        T("kda.o_norm", "kda_attention", (lin_d,), kda, "bf16"),
        # MoE layers: router, latent projections, shared and routed experts
        T("moe.gate.weight", "router", (e, h), moe, "bf16"),
        T("moe.gate.e_score_correction_bias", "router", (e,), moe, "bf16", rank_dtype="fp32"),
        T("moe.routed_expert_down_proj", "latent_projections", (lat, h), moe, "bf16"),
        T("moe.routed_expert_up_proj", "latent_projections", (h, lat), moe, "bf16"),
    ]
    if cfg.latent_moe_use_norm:
        out.append(T("moe.routed_expert_norm", "latent_projections", (lat,), moe, "bf16"))
    out += [
        T("moe.shared_experts.gate_up_proj", "shared_experts", (2 * shared_i, h), moe, "bf16"),
        T("moe.shared_experts.down_proj", "shared_experts", (h, shared_i), moe, "bf16"),
        T("moe.experts.w13 (gate+up)", "routed_experts", (2 * moe_i, lat), moe, "mxfp4",
          per_layer_copies=e, active_fraction=(k, e)),
        T("moe.experts.w2 (down)", "routed_experts", (lat, moe_i), moe, "mxfp4",
          per_layer_copies=e, active_fraction=(k, e)),
        # norms and attention-residual projections (attn_res_block_size)
        T("layer.input_layernorm+post_attention_layernorm", "norms_and_attn_res", (2, h), every, "bf16"),
    ]
    if cfg.raw.get("text_config", cfg.raw).get("attn_res_block_size") is not None:
        out += [
            T("layer.attn_res_norms (self_attention, mlp)", "norms_and_attn_res", (2, h), every, "bf16"),
            T("layer.attn_res_projs (self_attention, mlp; H→1)", "norms_and_attn_res", (2, h), every, "bf16"),
            T("model.output_attn_res_norm+proj", "norms_and_attn_res", (2, h), (), "bf16", stage="last"),
        ]
    out.append(T("model.norm", "norms_and_attn_res", (h,), (), "bf16", stage="last"))
    return tuple(out)


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts (plain counts, not bytes).

    ``total``: every checkpoint parameter of the text model.
    ``active``: parameters touched per token, **excluding the input embedding**
    (an embedding lookup reads one row, it is not a matmul) and **including lm_head**.
    ``active_with_embedding`` adds the whole embedding table; ``active_excluding_
    embeddings`` drops lm_head as well. Routed experts count ``top_k / num_experts``.
    ``breakdown`` / ``active_breakdown``: component → count (keys :data:`COMPONENTS`).
    """

    total: int
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
    active_all = sum(act.values())
    return ParamCount(
        total=total,
        active=active_all - act["embed_tokens"],
        active_with_embedding=active_all,
        active_excluding_embeddings=active_all - act["embed_tokens"] - act["lm_head"],
        breakdown=tot,
        active_breakdown=act,
    )


def checkpoint_bytes(cfg: ModelConfig, by_component: bool = False):
    """Bytes of the checkpoint: MXFP4 (4.25 bits) for routed experts, BF16 elsewhere
    (fp32 for the KDA conv / A_log / dt_bias vectors, as sglang keeps them).

    Assumption (stated in ``data/model/README.md``): only the routed experts are
    quantized; the latent down/up projections, shared experts, router and attention are
    BF16 (``kimi_k3.py`` comments: "the checkpoint quantizes only the MoE experts").
    Returns an int, or a dict component → bytes with ``by_component=True``.
    """
    d = dict.fromkeys(COMPONENTS, 0)
    for t in inventory(cfg):
        if t.is_param:
            d[t.component] += _nbytes(t.numel, t.dtype)
    return d if by_component else sum(d.values())


def routed_expert_bytes(cfg: ModelConfig) -> int:
    """Bytes of ONE routed expert in ONE layer as stored (MXFP4 incl. E8M0 scales):
    gate + up (latent → intermediate) and down (intermediate → latent)."""
    return sum(_nbytes(t.numel_one, t.dtype) for t in inventory(cfg) if t.component == "routed_experts")


# --------------------------------------------------------------------------- sharding


@functools.lru_cache(maxsize=None)
def sharding_layout() -> dict:
    """``data/sglang_sharding.yaml``: tensor name → {rule, dim, cite}, plus sources."""
    with open(data_path("sglang_sharding.yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or "tensors" not in doc or "sources" not in doc:
        raise ValueError("data/sglang_sharding.yaml: expected top-level 'sources' and 'tensors'")
    for name, row in doc["tensors"].items():
        if row.get("rule") not in SHARD_RULES:
            raise ValueError(f"data/sglang_sharding.yaml: {name}: rule must be one of {SHARD_RULES}")
        if row.get("source") not in doc["sources"]:
            raise ValueError(f"data/sglang_sharding.yaml: {name}: unknown source {row.get('source')!r}")
    return doc


def _check_parallel(cfg: ModelConfig, tp: int, pp: int = 1) -> None:
    for name, v in (("tp", tp), ("pp", pp)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    heads = cfg.num_attention_heads
    if heads % tp:
        raise ValueError(f"tp={tp} does not divide the {heads} attention heads of {cfg.name}")
    if cfg.linear_attn_num_heads % tp:
        raise ValueError(f"tp={tp} does not divide the {cfg.linear_attn_num_heads} KDA heads")
    inter = cfg.moe_intermediate_size
    if inter % tp or (inter // tp) % MXFP4_BLOCK:
        raise ValueError(f"tp={tp}: the expert intermediate size {inter} must split into whole "
                         f"{MXFP4_BLOCK}-element MXFP4 blocks per rank")
    if pp > cfg.num_hidden_layers:
        raise ValueError(f"pp={pp} exceeds the {cfg.num_hidden_layers} layers")


def _shard_len(dim: int, tp: int, rule: str, vocab_pad: int) -> int:
    """Elements along the split dimension on the heaviest rank."""
    if rule == "vocab":
        padded = -(-dim // vocab_pad) * vocab_pad
        if padded % tp:
            raise ValueError(f"tp={tp} does not divide the padded vocabulary {padded}")
        return padded // tp
    if dim % tp:
        raise ValueError(f"tp={tp} does not divide dimension {dim} ({rule}-parallel)")
    return dim // tp


def pp_stages(cfg: ModelConfig, pp: int) -> list[tuple[int, int]]:
    """Layer ranges [start, end) of each pipeline stage, as sglang's ``get_pp_indices``
    splits them (0.5.16 ``srt/distributed/utils.py``: the last ``n % pp`` stages get one
    extra layer)."""
    _check_parallel(cfg, 1, pp)
    n = cfg.num_hidden_layers
    base, rem = divmod(n, pp)
    out, start = [], 0
    for r in range(pp):
        size = base + (1 if r >= pp - rem else 0)
        out.append((start, start + size))
        start += size
    return out


def _rank_rows(cfg: ModelConfig, tp: int, pp: int, stage: int, layout: dict,
               runtime: bool = True) -> list[dict]:
    """Per-tensor rows for one rank of pipeline ``stage``: full and per-rank bytes.

    ``runtime=False`` keeps only checkpoint parameters in their checkpoint dtype (no
    runtime copies, no zero biases, no dtype conversions): the pure shard.
    """
    opts = layout.get("options", {})
    vocab_pad = int(opts.get("vocab_padding", 64))
    mxfp4_bias = runtime and bool(opts.get("mxfp4_zero_bias", False))
    moe_pad = int(opts.get("moe_intermediate_pad_to", 1) or 1)
    lo, hi = pp_stages(cfg, pp)[stage]
    rows = []
    for t in inventory(cfg):
        if not runtime and not t.is_param:
            continue
        spec = layout["tensors"].get(t.name)
        if spec is None:
            raise ValueError(f"data/sglang_sharding.yaml has no rule for tensor {t.name!r}")
        if t.stage == "first":
            n_here = 1 if stage == 0 else 0
        elif t.stage == "last":
            n_here = 1 if stage == pp - 1 else 0
        else:
            n_here = sum(1 for i in t.layers if lo <= i < hi)
        n_here *= t.per_layer_copies
        rule = spec["rule"]
        shape = list(t.shape)
        if rule != "replicated":
            # dim ``d`` concatenates ``parts`` equal pieces (e.g. gate+up), each split by tp
            d, parts = int(spec["dim"]), int(spec.get("parts", 1))
            if shape[d] % parts:
                raise ValueError(f"{t.name}: dim {d} ({shape[d]}) is not {parts} equal parts")
            per = _shard_len(shape[d] // parts, tp, rule, vocab_pad)
            if rule == "moe_intermediate":
                per = -(-per // moe_pad) * moe_pad
            shape[d] = per * parts
        dtype = (t.rank_dtype or t.dtype) if runtime else t.dtype
        rank_bytes = _nbytes(math.prod(shape), dtype) * n_here
        rows.append({"tensor": t.name, "component": t.component, "rule": rule,
                     "copies_on_rank": n_here, "rank_shape": "x".join(map(str, shape)),
                     "dtype": dtype, "rank_bytes": rank_bytes, "cite": spec.get("cite", ""),
                     "is_param": t.is_param})
        if mxfp4_bias and t.component == "routed_experts":
            # sglang 0.5.16 Mxfp4MoEMethod.create_weights allocates bf16 biases
            # w13_weight_bias [E, 2·I/tp] and w2_weight_bias [E, H_latent] even when the
            # checkpoint has none (with_bias=False): zeros, but resident.
            bias_elems = shape[0]
            rows.append({"tensor": t.name + " zero bias (runtime)", "component": t.component,
                         "rule": rule, "copies_on_rank": n_here, "rank_shape": str(bias_elems),
                         "dtype": "bf16", "rank_bytes": 2 * bias_elems * n_here,
                         "cite": opts.get("mxfp4_zero_bias_cite", ""), "is_param": False})
    return rows


def shard_table(cfg: ModelConfig, tp: int = 8, pp: int = 1, layout: dict | None = None):
    """Per tensor group: checkpoint bytes, an even 1/(tp·pp) share, bytes on the
    heaviest rank, and the gap (rank − share). Returns a pandas DataFrame.

    Columns: tensor, component, rule, dtype, rank_shape, checkpoint_bytes,
    even_share_bytes, rank_bytes, gap_bytes, cite. ``rank_bytes`` is for the pipeline
    stage with the most weight bytes.
    """
    import pandas as pd

    _check_parallel(cfg, tp, pp)
    layout = sharding_layout() if layout is None else layout
    stage = heaviest_stage(cfg, tp, pp, layout)
    rows = _rank_rows(cfg, tp, pp, stage, layout)
    ckpt = {t.name: (_nbytes(t.numel, t.dtype) if t.is_param else 0) for t in inventory(cfg)}
    ranks = tp * pp
    out = []
    for r in rows:
        c = ckpt.get(r["tensor"], 0)
        share = c / ranks
        out.append({"tensor": r["tensor"], "component": r["component"], "rule": r["rule"],
                    "dtype": r["dtype"], "rank_shape": r["rank_shape"],
                    "checkpoint_bytes": c, "even_share_bytes": share,
                    "rank_bytes": r["rank_bytes"], "gap_bytes": r["rank_bytes"] - share,
                    "cite": r["cite"]})
    return pd.DataFrame(out)


def _stage_bytes(cfg, tp, pp, stage, layout, exclude=(), runtime=True) -> int:
    return sum(r["rank_bytes"] for r in _rank_rows(cfg, tp, pp, stage, layout, runtime)
               if r["component"] not in exclude)


def heaviest_stage(cfg: ModelConfig, tp: int, pp: int = 1, layout: dict | None = None) -> int:
    """Index of the pipeline stage whose ranks hold the most weight bytes."""
    layout = sharding_layout() if layout is None else layout
    sizes = [_stage_bytes(cfg, tp, pp, s, layout) for s in range(pp)]
    return max(range(pp), key=lambda s: (sizes[s], -s))


def weights_bytes_per_gpu(cfg: ModelConfig, tp: int = 8, pp: int = 1, layout: dict | None = None,
                          runtime: bool = True) -> int:
    """Weight bytes on the heaviest rank under TP=``tp`` (× PP=``pp``), replicated
    tensors included (see ``data/sglang_sharding.yaml``).

    ``runtime=True`` (default) also counts what sglang adds after loading (w_kc/w_vc
    copies, MXFP4 zero biases, fp32 router bias); ``runtime=False`` is the pure shard of
    the checkpoint, so at tp=pp=1 it equals :func:`checkpoint_bytes`.
    """
    _check_parallel(cfg, tp, pp)
    layout = sharding_layout() if layout is None else layout
    return max(_stage_bytes(cfg, tp, pp, s, layout, runtime=runtime) for s in range(pp))

def stage_weights_bytes(cfg: ModelConfig, tp: int = 8, pp: int = 1, layout: dict | None = None,
                        runtime: bool = True) -> list[int]:
    """Weight bytes per rank of each pipeline stage (list of length ``pp``)."""
    _check_parallel(cfg, tp, pp)
    layout = sharding_layout() if layout is None else layout
    return [_stage_bytes(cfg, tp, pp, s, layout, runtime=runtime) for s in range(pp)]


def non_expert_bytes_per_gpu(cfg: ModelConfig, tp: int = 8, layout: dict | None = None) -> int:
    """Bytes per rank (PP=1) of everything except the routed experts."""
    _check_parallel(cfg, tp)
    layout = sharding_layout() if layout is None else layout
    return _stage_bytes(cfg, tp, 1, 0, layout, exclude=("routed_experts",))


# --------------------------------------------------------------------------- KV and state


def _check_dtype(name: str, v: str, allowed) -> str:
    if v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {v!r}")
    return v


def kv_bytes_per_token(cfg: ModelConfig, kv_dtype: str = "bf16", layers=None) -> int:
    """MLA latent cache bytes per token per rank, over all MLA layers (or ``layers``,
    0-based indices, e.g. one pipeline stage's).

    Each MLA layer caches one 576-wide vector per token (kv_lora_rank 512 + rope slot
    64); it is NOT split by TP: every TP rank keeps the whole latent (sglang
    ``MLATokenToKVPool``). KDA layers keep no per-token cache.
    """
    _check_dtype("kv_dtype", kv_dtype, KV_DTYPES)
    mla = set(_layers(cfg)[1])
    n = len(mla) if layers is None else len(mla & set(layers))
    width = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    return int(n * width * BYTES_PER_ELEMENT[kv_dtype])


def kda_state_bytes_per_request(cfg: ModelConfig, tp: int = 8, state_dtype: str = "fp32",
                                conv_dtype: str = "bf16", layers=None) -> int:
    """KDA recurrent + short-conv state per request per rank, over all KDA layers
    (or the 0-based ``layers`` of one pipeline stage).

    Per layer and rank (sglang 0.5.16 ``configs/mamba_utils.py`` KimiLinearStateShape):
    recurrent state ``heads/tp × head_dim × head_dim`` in ``state_dtype`` (fp32 default,
    ``SGLANG_MAMBA_SSM_DTYPE``) and conv state ``(kernel − 1) × 3·heads·head_dim/tp`` in
    ``conv_dtype`` (bf16 default, ``SGLANG_MAMBA_CONV_DTYPE``).
    """
    _check_dtype("state_dtype", state_dtype, STATE_DTYPES)
    _check_dtype("conv_dtype", conv_dtype, STATE_DTYPES)
    _check_parallel(cfg, tp)
    kda = set(_layers(cfg)[2])
    n = len(kda) if layers is None else len(kda & set(layers))
    h, d = cfg.linear_attn_num_heads // tp, cfg.linear_attn_head_dim
    recurrent = h * d * d * BYTES_PER_ELEMENT[state_dtype]
    conv = (cfg.short_conv_kernel_size - 1) * 3 * h * d * BYTES_PER_ELEMENT[conv_dtype]
    return int(n * (recurrent + conv))


# --------------------------------------------------------------------------- fit plans


@dataclass(frozen=True)
class Plan:
    """The memory fit of one configuration, per GPU (bytes unless named otherwise).

    sglang's rule (0.5.16 ``mem_cache/kv_cache_configurator.py``
    ``_profile_available_bytes``): the KV pool gets what is free after loading the
    weights minus a reserve of ``(1 − mem_fraction) × capacity`` kept for activations,
    CUDA graphs and the allocator. So ``kv_pool = mem_fraction × capacity − weights``.
    The pool holds the MLA latent cache (per token) and the KDA state (per request).

    ``fits``: the weights fit beside the reserve AND the pool holds at least one request
    of the full context (``context_tokens``, default the model's 1,048,576).
    ``max_kv_tokens``: tokens of MLA cache the pool holds beside one request's KDA
    state (the longest single context). ``max_full_context_requests``: concurrent
    full-context requests (KV + KDA state each). With PP the stage that runs out first
    binds; ``weights_bytes_per_gpu`` is the heaviest stage's.
    """

    gpu: str
    num_gpus: int
    tp: int
    pp: int
    replicas: int
    mem_fraction: float
    kv_dtype: str
    state_dtype: str
    capacity_bytes_per_gpu: int
    weights_bytes_per_gpu: int
    reserve_bytes_per_gpu: int
    kv_pool_bytes_per_gpu: int
    kv_bytes_per_token: int
    kda_state_bytes_per_request: int
    context_tokens: int
    max_kv_tokens: int
    max_full_context_requests: int
    weights_fit: bool
    fits: bool
    stage_weights_bytes: tuple = ()
    weights_by_component: dict = field(default_factory=dict)

    @property
    def free_bytes_per_gpu(self) -> int:
        """Capacity left after weights, reserve and the KV pool (0 unless weights don't fit)."""
        return self.capacity_bytes_per_gpu - self.weights_bytes_per_gpu - self.reserve_bytes_per_gpu - self.kv_pool_bytes_per_gpu

    def as_dict(self) -> dict:
        d = asdict(self)
        d["stage_weights_bytes"] = list(self.stage_weights_bytes)
        d["free_bytes_per_gpu"] = self.free_bytes_per_gpu
        return d


def _resolve_gpu(gpu) -> GPU:
    if isinstance(gpu, GPU):
        return gpu
    return load_gpu(gpu)  # ValueError listing the known GPUs


def plan(cfg: ModelConfig, gpu, num_gpus: int, tp: int, mem_fraction: float = 0.9,
         kv_dtype: str = "bf16", pp: int = 1, state_dtype: str = "fp32",
         context_tokens: int | None = None, layout: dict | None = None) -> Plan:
    """Fit ``cfg`` on ``num_gpus`` × ``gpu`` (a name or a :class:`GPU`) at TP=``tp``,
    PP=``pp``; ``num_gpus`` must be a multiple of ``tp × pp`` (the rest are replicas).

    ``mem_fraction`` is sglang's ``--mem-fraction-static`` in (0, 1]. Raises ValueError
    for an unknown GPU, non-positive counts, a TP that does not divide the heads, or a
    ``mem_fraction`` outside (0, 1].
    """
    g = _resolve_gpu(gpu)
    for name, v in (("num_gpus", num_gpus), ("tp", tp), ("pp", pp)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if isinstance(mem_fraction, bool) or not isinstance(mem_fraction, (int, float)) \
            or math.isnan(mem_fraction) or not 0 < mem_fraction <= 1:
        raise ValueError(f"mem_fraction must be in (0, 1], got {mem_fraction!r}")
    if num_gpus % (tp * pp):
        raise ValueError(f"num_gpus={num_gpus} is not a multiple of tp×pp={tp * pp}")
    _check_parallel(cfg, tp, pp)
    _check_dtype("kv_dtype", kv_dtype, KV_DTYPES)
    _check_dtype("state_dtype", state_dtype, STATE_DTYPES)
    ctx = cfg.max_position_embeddings if context_tokens is None else context_tokens
    if isinstance(ctx, bool) or not isinstance(ctx, int) or ctx <= 0:
        raise ValueError(f"context_tokens must be a positive integer, got {ctx!r}")
    layout = sharding_layout() if layout is None else layout

    cap = g.usable_hbm_bytes
    reserve = int(round((1 - mem_fraction) * cap))
    stages = pp_stages(cfg, pp)
    weights = stage_weights_bytes(cfg, tp, pp, layout)
    per_stage = []
    for s, (lo, hi) in enumerate(stages):
        layers = range(lo, hi)
        pool = max(0, cap - reserve - weights[s])
        kv_tok = kv_bytes_per_token(cfg, kv_dtype, layers=layers)
        state = kda_state_bytes_per_request(cfg, tp, state_dtype, layers=layers)
        tokens = max(0, (pool - state) // kv_tok) if kv_tok else 0
        full = pool // (ctx * kv_tok + state) if (ctx * kv_tok + state) else 0
        per_stage.append((full, tokens, pool, kv_tok, state, s))
    # the binding stage: fewest full-context requests, then fewest tokens
    full, tokens, pool, kv_tok, state, s_bind = min(per_stage, key=lambda r: (r[0], r[1], -r[5]))
    heavy = max(range(pp), key=lambda s: (weights[s], -s))
    weights_fit = all(cap - reserve - w > 0 for w in weights)
    by_comp = dict.fromkeys(COMPONENTS, 0)
    for r in _rank_rows(cfg, tp, pp, heavy, layout):
        by_comp[r["component"]] += r["rank_bytes"]
    return Plan(
        gpu=g.key, num_gpus=num_gpus, tp=tp, pp=pp, replicas=num_gpus // (tp * pp),
        mem_fraction=float(mem_fraction), kv_dtype=kv_dtype, state_dtype=state_dtype,
        capacity_bytes_per_gpu=cap, weights_bytes_per_gpu=weights[heavy],
        reserve_bytes_per_gpu=reserve,
        kv_pool_bytes_per_gpu=min(p[2] for p in per_stage),
        kv_bytes_per_token=kv_tok, kda_state_bytes_per_request=state, context_tokens=ctx,
        max_kv_tokens=int(tokens) if weights_fit else 0,
        max_full_context_requests=int(full) if weights_fit else 0,
        weights_fit=weights_fit, fits=bool(weights_fit and full >= 1),
        stage_weights_bytes=tuple(weights), weights_by_component=by_comp,
    )


# --------------------------------------------------------------------------- CLI


def _fmt_plan(p: Plan) -> str:
    gib = lambda b: f"{b / GiB:8.1f} GiB ({b / GB:7.1f} GB)"  # noqa: E731
    lines = [
        f"Kimi K3 on {p.num_gpus} x {p.gpu}  (TP{p.tp}" + (f" x PP{p.pp}" if p.pp > 1 else "")
        + (f", {p.replicas} replicas" if p.replicas > 1 else "") + ")",
        f"  capacity per GPU      {gib(p.capacity_bytes_per_gpu)}",
        f"  weights per GPU       {gib(p.weights_bytes_per_gpu)}  (heaviest rank)",
        f"  reserve per GPU       {gib(p.reserve_bytes_per_gpu)}  (1 - mem_fraction {p.mem_fraction:g})",
        f"  KV pool per GPU       {gib(p.kv_pool_bytes_per_gpu)}",
        f"  KV per token per GPU  {p.kv_bytes_per_token:,} B ({p.kv_dtype}, MLA layers on the rank)",
        f"  KDA state per request {p.kda_state_bytes_per_request:,} B ({p.state_dtype} recurrent state + bf16 conv)",
        f"  max KV tokens         {p.max_kv_tokens:,}",
        f"  {p.context_tokens:,}-token requests  {p.max_full_context_requests:,}",
        f"  weights fit: {'yes' if p.weights_fit else 'no'};  fits with a full-context request: "
        f"{'yes' if p.fits else 'no'}",
    ]
    return "\n".join(lines)


def cli_main(argv: list[str] | None = None) -> int:
    """``python -m k3lab fit --gpu mi355x --gpus 8 --tp 8 [--pp 1] [--mem-fraction 0.9]
    [--kv-dtype bf16|fp8] [--state-dtype fp32|bf16] [--hbm-gb N] [--json]``."""
    ap = argparse.ArgumentParser(prog="python -m k3lab fit",
                                 description="Memory fit of Kimi K3 on a GPU configuration.")
    ap.add_argument("--gpu", required=True, help=f"one of: {', '.join(known_gpus())}")
    ap.add_argument("--gpus", type=int, required=True, help="number of GPUs")
    ap.add_argument("--tp", type=int, required=True, help="tensor-parallel size")
    ap.add_argument("--pp", type=int, default=1, help="pipeline-parallel size (default 1)")
    ap.add_argument("--mem-fraction", type=float, default=0.9, help="sglang --mem-fraction-static")
    ap.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES)
    ap.add_argument("--state-dtype", default="fp32", choices=STATE_DTYPES)
    ap.add_argument("--hbm-gb", type=float, default=None,
                    help="override usable HBM per GPU in GB (e.g. 192 for the article's B200)")
    ap.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = ap.parse_args(argv)
    try:
        g = load_gpu(args.gpu)
        if args.hbm_gb is not None:
            g = g.with_hbm_gb(args.hbm_gb)
        p = plan(load_model("kimi-k3"), g, args.gpus, args.tp, args.mem_fraction,
                 args.kv_dtype, pp=args.pp, state_dtype=args.state_dtype)
    except ValueError as e:
        print(f"k3lab fit: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(p.as_dict(), indent=2, sort_keys=True) if args.json else _fmt_plan(p))
    return 0


# --------------------------------------------------------------------------- layout variants

#: Switches a user may flip that change the per-GPU figure materially.
VARIANTS = {
    "default": "data/sglang_sharding.yaml as read: plain TP, no expert padding",
    "moe_pad256": "per-rank expert intermediate rounded up to 256 (sglang 0.5.16 Mxfp4MoEMethod "
                  "on AITER and on SM100 FlashInfer): 384 -> 512 at TP8",
    "ep_a2a": "expert parallelism with an all-to-all backend (DeepEP / MegaMoE): whole experts "
              "per rank (same bytes), shared experts replicated (kimi_k3.py _shared_experts_tp1)",
    "dp_attention": "full DP attention (attn_tp = 1): attention weights replicated on every rank",
}


def layout_variant(name: str = "default") -> dict:
    """A copy of :func:`sharding_layout` with one switch flipped (see :data:`VARIANTS`)."""
    if name not in VARIANTS:
        raise ValueError(f"unknown layout variant {name!r}; known: {', '.join(VARIANTS)}")
    lay = {**sharding_layout()}
    lay["options"] = dict(lay.get("options", {}))
    lay["tensors"] = {k: dict(v) for k, v in lay["tensors"].items()}
    if name == "moe_pad256":
        lay["options"]["moe_intermediate_pad_to"] = 256
    elif name == "ep_a2a":
        for k in ("moe.shared_experts.gate_up_proj", "moe.shared_experts.down_proj"):
            lay["tensors"][k]["rule"] = "replicated"
    elif name == "dp_attention":
        for k, v in lay["tensors"].items():
            if k.startswith(("mla.", "kda.")):
                v["rule"] = "replicated"
    return lay


# --------------------------------------------------------------------------- notebook helpers

def study_configurations() -> tuple:
    """The configurations of the study: (label, gpu key, HBM override in GB or None,
    num_gpus, tp, pp).

    The B200 appears twice at TP8: with its HGX usable capacity (``usable_hbm_gb``) and
    with the article's "192GB per GPU", which is the B200's physical HBM (``hbm_gb`` in
    ``data/hardware.yaml``) used as if all of it were usable. Both numbers and the labels
    come from the hardware table.
    """
    b200 = load_gpu("b200")
    return (
        ("8×MI355X TP8", "mi355x", None, 8, 8, 1),
        ("8×B300 TP8", "b300", None, 8, 8, 1),
        (f"8×B200 TP8 (HGX, {b200.usable_hbm_gb:g} GB usable)", "b200", None, 8, 8, 1),
        (f"8×B200 TP8 (article's {b200.hbm_gb:g} GB)", "b200", b200.hbm_gb, 8, 8, 1),
        ("16×B200 TP16", "b200", None, 16, 16, 1),
        ("16×B200 TP8×PP2", "b200", None, 16, 8, 2),
        ("8×H200 TP8", "h200", None, 8, 8, 1),
    )


def __getattr__(name: str):
    # ``memory.CONFIGURATIONS`` stays available; it is built from data/hardware.yaml on use
    if name == "CONFIGURATIONS":
        return study_configurations()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: How the figure groups the components of the weights.
WEIGHT_GROUPS = {
    "routed experts (MXFP4)": ("routed_experts",),
    "attention (69 KDA + 24 MLA)": ("kda_attention", "mla_attention"),
    "shared experts, router, latent proj.": ("shared_experts", "router", "latent_projections"),
    "embeddings + lm_head": ("embed_tokens", "lm_head"),
    "dense MLP, norms": ("dense_mlp", "norms_and_attn_res"),
}


def params_frame(cfg: ModelConfig):
    """Per component: total and active parameters (1e9) and checkpoint bytes (GB)."""
    import pandas as pd

    pc, ck = count_params(cfg), checkpoint_bytes(cfg, by_component=True)
    rows = [{"component": c, "params_B": pc.breakdown[c] / 1e9,
             "active_params_B": pc.active_breakdown[c] / 1e9 if c != "embed_tokens" else 0.0,
             "checkpoint_GB": ck[c] / GB} for c in COMPONENTS]
    rows.append({"component": "total", "params_B": pc.total / 1e9,
                 "active_params_B": pc.active / 1e9, "checkpoint_GB": checkpoint_bytes(cfg) / GB})
    return pd.DataFrame(rows)


def gap_frame(cfg: ModelConfig, tp: int = 8, layout: dict | None = None):
    """Checkpoint/tp vs what one rank holds, per component (GiB), with the sharding rules."""
    import pandas as pd

    t = shard_table(cfg, tp, layout=layout)
    g = t.groupby("component", sort=False).agg(
        checkpoint_GB=("checkpoint_bytes", "sum"), even_share_GiB=("even_share_bytes", "sum"),
        rank_GiB=("rank_bytes", "sum"), gap_GiB=("gap_bytes", "sum"),
        rules=("rule", lambda s: ", ".join(sorted(set(s))))).reset_index()
    g["checkpoint_GB"] /= GB
    for c in ("even_share_GiB", "rank_GiB", "gap_GiB"):
        g[c] /= GiB
    tot = {"component": "total", "checkpoint_GB": g.checkpoint_GB.sum(),
           "even_share_GiB": g.even_share_GiB.sum(), "rank_GiB": g.rank_GiB.sum(),
           "gap_GiB": g.gap_GiB.sum(), "rules": ""}
    return pd.concat([g, pd.DataFrame([tot])], ignore_index=True)


def configuration_plans(cfg: ModelConfig, kv_dtype: str = "bf16", mem_fraction: float = 0.9,
                        configurations=None) -> list[tuple[str, Plan]]:
    """(label, :class:`Plan`) for each configuration (default: :func:`study_configurations`)."""
    out = []
    if configurations is None:
        configurations = study_configurations()
    for label, key, hbm, n, tp, pp in configurations:
        g = load_gpu(key)
        if hbm is not None:
            g = g.with_hbm_gb(hbm)
        out.append((label, plan(cfg, g, n, tp, mem_fraction, kv_dtype, pp=pp)))
    return out


def fit_frame(cfg: ModelConfig, mem_fraction: float = 0.9):
    """One row per configuration: capacity, weights, KV pool (GiB per GPU), and the
    max context / concurrent 1M-token requests for bf16 and fp8 KV (fp32 KDA state)."""
    import pandas as pd

    rows = []
    bf = configuration_plans(cfg, "bf16", mem_fraction)
    f8 = configuration_plans(cfg, "fp8", mem_fraction)
    for (label, p), (_, q) in zip(bf, f8):
        rows.append({
            "configuration": label, "capacity_GiB": p.capacity_bytes_per_gpu / GiB,
            "weights_GiB": p.weights_bytes_per_gpu / GiB, "reserve_GiB": p.reserve_bytes_per_gpu / GiB,
            "kv_pool_GiB": p.kv_pool_bytes_per_gpu / GiB, "weights_fit": p.weights_fit,
            "max_context_tokens_bf16": p.max_kv_tokens, "requests_1M_bf16": p.max_full_context_requests,
            "max_context_tokens_fp8": q.max_kv_tokens, "requests_1M_fp8": q.max_full_context_requests,
            "fits_1M": p.fits})
    return pd.DataFrame(rows)


def fit_figure(plans: list[tuple[str, Plan]]):
    """Stacked bars of per-GPU memory (GiB): weights by group, reserve, KV pool, free;
    a black tick marks each GPU's usable capacity. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    colors = ["#1f4e79", "#2e86c1", "#85c1e9", "#7d3c98", "#bbbbbb"]
    fig, ax = plt.subplots(figsize=(11, 5.6))
    x = range(len(plans))
    bottoms = [0.0] * len(plans)

    def stack(vals, **kw):
        ax.bar(x, vals, bottom=bottoms, width=0.62, edgecolor="white", linewidth=0.5, **kw)
        for i, v in enumerate(vals):
            bottoms[i] += v

    for (name, comps), col in zip(WEIGHT_GROUPS.items(), colors):
        stack([sum(p.weights_by_component[c] for c in comps) / GiB for _, p in plans], color=col, label=name)
    stack([p.reserve_bytes_per_gpu / GiB if p.weights_fit else 0 for _, p in plans],
          color="#f5b041", label="reserve (1 − mem_fraction)")
    stack([p.kv_pool_bytes_per_gpu / GiB for _, p in plans], color="#27ae60", label="KV pool (MLA cache + KDA state)")
    stack([max(0, p.free_bytes_per_gpu) / GiB for _, p in plans], color="#eafaf1", label="free")
    for i, (_, p) in enumerate(plans):
        cap = p.capacity_bytes_per_gpu / GiB
        ax.plot([i - 0.38, i + 0.38], [cap, cap], color="black", linewidth=2.2)
        if p.fits:
            txt = f"fits: {p.max_kv_tokens / 1e6:.2f}M tok\n{p.max_full_context_requests}× 1M req"
            col = "#1e8449"
        elif p.weights_fit:
            txt = f"weights fit,\n{p.max_kv_tokens / 1e6:.2f}M tok < 1M"
            col = "#b9770e"
        else:
            txt = f"weights alone\n{p.weights_bytes_per_gpu / GiB:.0f} > {cap:.0f} GiB"
            col = "#c0392b"
        ax.text(i, max(cap, bottoms[i]) + 4, txt, ha="center", va="bottom", fontsize=8.5, color=col)
    ax.set_xticks(list(x))
    ax.set_xticklabels([lbl.replace(" (", "\n(") for lbl, _ in plans], fontsize=8.5)
    ax.set_ylabel("memory per GPU (GiB = 2³⁰ B)")
    ax.set_ylim(0, max(max(bottoms), max(p.capacity_bytes_per_gpu / GiB for _, p in plans)) * 1.22)
    ax.set_title("Kimi K3 per-GPU memory under sglang TP sharding "
                 f"(mem_fraction {plans[0][1].mem_fraction:g}, {plans[0][1].kv_dtype} KV, black tick = usable HBM)",
                 fontsize=10.5)
    ax.legend(fontsize=8, loc="upper right", ncol=2, framealpha=0.95)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
