"""How each tensor is stored, read from the config's quantisation section.

Two schemes occur in the model family:

- ``compressed-tensors`` (Kimi K3): ``config_groups`` name the module types a group
  quantises (``targets: ["Linear"]``) and its format (MXFP4: 4-bit E2M1 values in groups
  of 32 sharing one 8-bit E8M0 scale = 17 bytes per 32 values, OCP MX v1.0); ``ignore``
  lists module-name patterns (``re:`` regexes) that stay BF16. A trimmed config without
  ``config_groups`` falls back to the note it carries (routed experts only).
- ``fp8`` with ``weight_block_size`` (DeepSeek-V3, Kimi K2): every ``nn.Linear`` weight in
  E4M3 (1 byte) with one fp32 ``weight_scale_inv`` per 128 × 128 block, except the modules
  in ``modules_to_not_convert``.

The checkpoint's module names are needed to match ``ignore`` patterns; :data:`HF_MODULES`
gives one sample name per inventory tensor (a layer and expert 0) in the published Kimi K3
checkpoint's naming (``self_attn.*`` for MLA and KDA, ``mlp.*`` for the dense MLP,
``block_sparse_moe.*`` for the MoE side). Where a checkpoint stores a tensor differently
from the literal reading of its config, ``data/model/storage_overrides.yaml`` says so, with
the evidence, and :func:`apply` takes that last.
"""

from __future__ import annotations

import dataclasses
import math
import re

from .. import data

#: bytes per element of each storage dtype; ``mxfp4`` includes its E8M0 scale (4.25 bits).
MXFP4_BLOCK = 32
BYTES_PER_ELEMENT = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0, "mxfp4": 17 / 32, "uint8": 1.0}

#: inventory tensor name (without an ``mtpN.`` prefix) → a sample checkpoint module name.
#: A fused tensor maps to the modules it fuses (gate+up).
HF_MODULES: dict[str, tuple[str, ...]] = {
    "dense_mlp.gate_up_proj": ("model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"),
    "dense_mlp.down_proj": ("model.layers.0.mlp.down_proj",),
    "mla.q_a_proj": ("model.layers.3.self_attn.q_a_proj",),
    "mla.kv_a_proj_with_mqa": ("model.layers.3.self_attn.kv_a_proj_with_mqa",),
    "mla.q_b_proj": ("model.layers.3.self_attn.q_b_proj",),
    "mla.kv_b_proj": ("model.layers.3.self_attn.kv_b_proj",),
    "mla.o_proj": ("model.layers.3.self_attn.o_proj",),
    "mla.g_proj": ("model.layers.3.self_attn.g_proj",),
    "kda.q_k_v_g_proj": ("model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.k_proj",
                         "model.layers.1.self_attn.v_proj", "model.layers.1.self_attn.g_proj"),
    "kda.b_proj": ("model.layers.1.self_attn.b_proj",),
    "kda.f_a_proj": ("model.layers.1.self_attn.f_a_proj",),
    "kda.f_b_proj": ("model.layers.1.self_attn.f_b_proj",),
    "kda.o_proj": ("model.layers.1.self_attn.o_proj",),
    "moe.routed_expert_down_proj": ("model.layers.1.block_sparse_moe.routed_expert_down_proj",),
    "moe.routed_expert_up_proj": ("model.layers.1.block_sparse_moe.routed_expert_up_proj",),
    "moe.shared_experts.gate_up_proj": ("model.layers.1.block_sparse_moe.shared_experts.gate_proj",
                                        "model.layers.1.block_sparse_moe.shared_experts.up_proj"),
    "moe.shared_experts.down_proj": ("model.layers.1.block_sparse_moe.shared_experts.down_proj",),
    "moe.experts.w13 (gate+up)": ("model.layers.1.block_sparse_moe.experts.0.w1",
                                  "model.layers.1.block_sparse_moe.experts.0.w3"),
    "moe.experts.w2 (down)": ("model.layers.1.block_sparse_moe.experts.0.w2",),
    "eh_proj": ("model.layers.61.eh_proj",),
}


def _block_scale_shape(shape: tuple[int, ...], block: tuple[int, int]) -> tuple[int, int]:
    out, inp = shape[-2], shape[-1]
    return (-(-out // block[0]), -(-inp // block[1]))


def nbytes(numel: int, dtype: str, shape: tuple[int, ...] | None = None) -> int:
    """Bytes of ``numel`` elements stored as ``dtype`` (MXFP4 needs whole 32-blocks)."""
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(BYTES_PER_ELEMENT)}")
    if dtype == "mxfp4":
        if numel % MXFP4_BLOCK:
            raise ValueError(f"MXFP4 tensor of {numel} elements is not a whole number of 32-blocks")
        return numel // 2 + numel // MXFP4_BLOCK
    return int(numel * BYTES_PER_ELEMENT[dtype])


def scheme(cfg) -> dict:
    """The config's quantisation as k3lab reads it → {name, ...}.

    ``{"name": "none"}``, ``{"name": "mxfp4", "ignore": [regex…], "targets": [...]}`` or
    ``{"name": "fp8_block", "block": (128, 128), "skip": [...]}``. ValueError naming the
    field for a section the inventory does not understand.
    """
    q = cfg.quantization or {}
    where = f"model config {cfg.name!r}: quantization_config"
    method = q.get("quant_method")
    if not q or method is None:
        return {"name": "none"}
    if method == "compressed-tensors":
        groups = q.get("config_groups")
        if groups is None:
            # a trimmed config (data/model/README.md): its note says routed experts only
            return {"name": "mxfp4", "targets": ["Linear"], "ignore": None, "routed_only": True}
        if not isinstance(groups, dict) or len(groups) != 1:
            raise ValueError(f"{where}.config_groups: expected one group, got {groups!r:.80}")
        g = next(iter(groups.values()))
        w = g.get("weights") or {}
        fmt = g.get("format", q.get("format"))
        if not (w.get("num_bits") == 4 and w.get("type") == "float" and w.get("group_size") == 32) \
                or "mxfp4" not in str(fmt):
            raise ValueError(f"{where}.config_groups: only MXFP4 (4-bit float, group 32) is understood, "
                             f"got format {fmt!r}, weights {w!r:.120}")
        pats = []
        for p in q.get("ignore") or []:
            pats.append(re.compile(p[3:]) if p.startswith("re:") else re.compile(re.escape(p) + r"$"))
        return {"name": "mxfp4", "targets": list(g.get("targets") or []), "ignore": pats, "routed_only": False}
    if method == "fp8":
        block = q.get("weight_block_size")
        if not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)):
            raise ValueError(f"{where}.weight_block_size: expected [rows, cols] block sizes, got {block!r}")
        return {"name": "fp8_block", "block": tuple(block),
                "skip": list(q.get("modules_to_not_convert") or q.get("ignored_layers") or [])}
    raise ValueError(f"{where}.quant_method: {method!r} is not understood "
                     f"(k3lab reads compressed-tensors MXFP4 and fp8 block quantisation)")


def _quantised(s: dict, t) -> bool:
    if not t.linear:
        return False
    base = t.name.split(".", 1)[1] if t.name.startswith("mtp") else t.name
    modules = HF_MODULES.get(base)
    if modules is None:
        raise ValueError(f"no checkpoint module name known for tensor {t.name!r} (k3lab.model.quant.HF_MODULES)")
    if s["name"] == "mxfp4":
        if s["routed_only"]:
            return t.component == "routed_experts" or (t.component == "mtp" and "experts.w" in t.name)
        hits = [any(p.match(m) for p in s["ignore"]) for m in modules]
        if any(hits) and not all(hits):
            raise ValueError(f"{t.name}: the ignore list splits its fused modules {modules}")
        return not hits[0]
    # fp8 blocks: every Linear but the listed modules
    return not any(skip in m for skip in s["skip"] for m in modules)


def storage_overrides() -> dict:
    """``data/model/storage_overrides.yaml`` → model name → {tensor: dtype}."""
    return {m: {o.tensor: o.dtype for o in rows} for m, rows in data.load("storage_overrides").overrides.items()}


def apply(cfg, tensors: list) -> list:
    """Set each tensor's checkpoint dtype from the config, then the stated overrides; add
    fp8 block-scale tensors."""
    s = scheme(cfg)
    over = storage_overrides().get(cfg.name, {})
    unknown = sorted(set(over) - {t.name for t in tensors})
    if unknown:
        raise data.DataError(f"data/model/storage_overrides.yaml: {cfg.name}: no such tensor(s) {unknown}")
    out = []
    for t in tensors:
        if t.name in over:
            out.append(dataclasses.replace(t, dtype=over[t.name]))
            continue
        if s["name"] == "none" or not _quantised(s, t):
            out.append(t)
            continue
        if s["name"] == "mxfp4":
            if t.shape[-1] % MXFP4_BLOCK:
                raise ValueError(f"{t.name}: input dim {t.shape[-1]} is not a whole number of 32-blocks")
            out.append(dataclasses.replace(t, dtype="mxfp4"))
        else:
            out.append(dataclasses.replace(t, dtype="fp8"))
            out.append(dataclasses.replace(t, name=t.name + ".weight_scale_inv", dtype="fp32",
                                           shape=_block_scale_shape(t.shape, s["block"]),
                                           kind="scale", linear=False, scale_of=t.name,
                                           active_fraction=t.active_fraction))
    return out


def block_scale_numel(rank_shape: tuple[int, ...], block: tuple[int, int]) -> int:
    """Scale entries of a rank's shard of a block-quantised weight (blocks do not straddle ranks)."""
    return math.prod(_block_scale_shape(rank_shape, block))
