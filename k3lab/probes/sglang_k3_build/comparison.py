"""sglang 0.5.23's bytes per rank vs k3lab's sharding model, tensor by tensor.

:data:`NAME_MAP` maps each sglang parameter pattern to the k3lab inventory tensor it
stores (:func:`k3lab_name`); :func:`k3lab_rank_bytes` / :func:`k3lab_stage_bytes` ask
:mod:`k3lab.model.sharding` (``rank_rows``, ``stage_weights_bytes`` with a ``Setting``
from :func:`k3lab_setting`) for k3lab's side; :func:`sglang_group_bytes` /
:func:`sglang_rank_bytes` read sglang's side from a compact case; :func:`compare` puts
them side by side and :func:`cause` says why a tensor differs.
"""

from __future__ import annotations

import re

from ...model import sharding
from ...specs import load_model
from .layouts import LAYOUTS

#: sglang 0.5.23 parameter pattern (see :func:`pattern_of`) → k3lab inventory tensor name
#: (``k3lab.memory.inventory(load_model('kimi-k3'))`` ``Tensor.name``). Regexes, matched in
#: order; the MXFP4 weight and its E8M0 scales map to one k3lab tensor (k3lab's 17/32 byte
#: per element includes the scale). Zero biases map to k3lab's "<name> zero bias (runtime)"
#: rows of ``k3lab.model.sharding.rank_rows``.
NAME_MAP = (
    (r"^model\.embed_tokens\.weight$", "embed_tokens"),
    (r"^lm_head\.weight$", "lm_head"),
    (r"^model\.layers\.\{dense\}\.mlp\.gate_up_proj\.weight$", "dense_mlp.gate_up_proj"),
    (r"^model\.layers\.\{dense\}\.mlp\.down_proj\.weight$", "dense_mlp.down_proj"),
    # MLA: q_a_proj and kv_a_proj_with_mqa are one fused ReplicatedLinear in sglang
    (r"^model\.layers\.\{mla\}\.self_attn\.fused_qkv_a_proj_with_mqa\.weight$",
     "mla.q_a_proj + mla.kv_a_proj_with_mqa"),
    (r"^model\.layers\.\{mla\}\.self_attn\.q_a_layernorm\.weight$", "mla.q_a_layernorm"),
    (r"^model\.layers\.\{mla\}\.self_attn\.kv_a_layernorm\.weight$", "mla.kv_a_layernorm"),
    (r"^model\.layers\.\{mla\}\.self_attn\.q_b_proj\.weight$", "mla.q_b_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.kv_b_proj\.weight$", "mla.kv_b_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.o_proj\.weight$", "mla.o_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.g_proj\.weight$", "mla.g_proj"),
    (r"^model\.layers\.\{mla\}\.self_attn\.w_[kv]c$", "mla.w_kc_w_vc (runtime copy of kv_b_proj)"),
    # KDA
    (r"^model\.layers\.\{kda\}\.self_attn\.fused_qkvg_proj\.weight$", "kda.q_k_v_g_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.b_proj\.weight$", "kda.b_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.f_a_proj\.weight$", "kda.f_a_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.f_b_proj\.weight$", "kda.f_b_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.o_proj\.weight$", "kda.o_proj"),
    (r"^model\.layers\.\{kda\}\.self_attn\.qkv_conv1d\.weight$", "kda.qkv_conv1d"),
    (r"^model\.layers\.\{kda\}\.self_attn\.A_log$", "kda.A_log"),
    (r"^model\.layers\.\{kda\}\.self_attn\.dt_bias$", "kda.dt_bias"),
    (r"^model\.layers\.\{kda\}\.self_attn\.o_norm\.weight$", "kda.o_norm"),
    # MoE
    (r"^model\.layers\.\{moe\}\.mlp\.gate\.weight$", "moe.gate.weight"),
    (r"^model\.layers\.\{moe\}\.mlp\.gate\.e_score_correction_bias$", "moe.gate.e_score_correction_bias"),
    (r"^model\.layers\.\{moe\}\.mlp\.routed_expert_down_proj\.weight$", "moe.routed_expert_down_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.routed_expert_up_proj\.weight$", "moe.routed_expert_up_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.routed_expert_norm\.weight$", "moe.routed_expert_norm"),
    (r"^model\.layers\.\{moe\}\.mlp\.shared_experts\.gate_up_proj\.weight$", "moe.shared_experts.gate_up_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.shared_experts\.down_proj\.weight$", "moe.shared_experts.down_proj"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w13_weight(_scale)?$", "moe.experts.w13 (gate+up)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w2_weight(_scale)?$", "moe.experts.w2 (down)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w13_weight_bias$", "moe.experts.w13 (gate+up) zero bias (runtime)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.w2_weight_bias$", "moe.experts.w2 (down) zero bias (runtime)"),
    (r"^model\.layers\.\{moe\}\.mlp\.experts\.gemm1_(alpha|beta|clamp_limit)$",
     "moe.experts gemm1_alpha+beta+clamp_limit (runtime)"),
    # norms and attention-residual projections
    (r"^model\.layers\.\{\*\}\.(input_layernorm|post_attention_layernorm)\.weight$",
     "layer.input_layernorm+post_attention_layernorm"),
    (r"^model\.layers\.\{\*\}\.(self_attention_res_norm|mlp_res_norm)\.weight$",
     "layer.attn_res_norms (self_attention, mlp)"),
    (r"^model\.layers\.\{\*\}\.(self_attention_res_proj|mlp_res_proj)\.weight$",
     "layer.attn_res_projs (self_attention, mlp; H→1)"),
    (r"^model\.output_attn_res_(norm|proj)\.weight$", "model.output_attn_res_norm+proj"),
    (r"^model\.norm\.weight$", "model.norm"),
)
_NAME_MAP = tuple((re.compile(p), n) for p, n in NAME_MAP)
#: Fused in sglang, separate in k3lab: compared as one group.
FUSED_GROUPS = {"mla.q_a_proj + mla.kv_a_proj_with_mqa": ("mla.q_a_proj", "mla.kv_a_proj_with_mqa")}


def k3lab_name(pattern: str) -> str | None:
    """The k3lab inventory tensor (or fused group) a sglang tensor pattern belongs to;
    None when k3lab has no counterpart."""
    for rx, name in _NAME_MAP:
        if rx.match(pattern):
            return name
    return None


# --------------------------------------------------------------------------- comparison

def k3lab_setting(layout: str, plat_key: str) -> dict:
    """The switches of one case as ``k3lab.model.sharding.Setting`` takes them:
    ``platform`` (cuda | rocm), ``sm100``, ``aiter_k3_opt``, ``ep``, ``ep_a2a``, ``dp_attention``."""
    lay = LAYOUTS[layout]
    return {"platform": "rocm" if plat_key.startswith("rocm") else "cuda", "sm100": plat_key.startswith("cuda-sm100"),
            "aiter_k3_opt": plat_key.endswith("+k3opt"),
            "ep": lay.ep > 1, "ep_a2a": lay.ep > 1 and lay.a2a != "none",
            "dp_attention": lay.dp_attention}


def k3lab_rows(tp: int, pp: int, stage: int, setting: dict, cfg=None) -> tuple[list[dict], str]:
    """k3lab's per-tensor rows on one rank of ``stage`` (runtime rows included) and a label
    of what was called: ``k3lab.model.sharding.rank_rows(cfg, tp, pp, stage,
    Setting(**setting))``."""
    cfg = load_model("kimi-k3") if cfg is None else cfg
    st = sharding.Setting(**setting)
    return sharding.rank_rows(cfg, tp, pp, stage, st), f"model.sharding.rank_rows({st})"


def k3lab_rank_bytes(tp: int, pp: int, stage: int, setting: dict, cfg=None) -> tuple[dict, str]:
    """k3lab's bytes per inventory tensor on one rank (fused groups of :data:`FUSED_GROUPS`
    summed) and the label of the k3lab call (see :func:`k3lab_rows`)."""
    rows, label = k3lab_rows(tp, pp, stage, setting, cfg)
    out: dict[str, int] = {}
    for r in rows:
        out[r["tensor"]] = out.get(r["tensor"], 0) + int(r["rank_bytes"])
    for group, parts in FUSED_GROUPS.items():
        out[group] = sum(out.pop(p, 0) for p in parts)
    return out, label



def k3lab_stage_bytes(tp: int, pp: int, setting: dict, cfg=None) -> list[int]:
    """k3lab's weight bytes per rank of each stage: ``k3lab.model.sharding.
    stage_weights_bytes(cfg, tp, pp, Setting(**setting))``."""
    cfg = load_model("kimi-k3") if cfg is None else cfg
    return list(sharding.stage_weights_bytes(cfg, tp, pp, sharding.Setting(**setting)))


def sglang_group_bytes(case: dict) -> dict:
    """Compact case → bytes per k3lab tensor name (sglang's side); unmapped patterns are
    kept under their own pattern prefixed ``sglang-only:``."""
    out: dict[str, int] = {}
    for r in case["tensors"]:
        key = r.get("k3lab_tensor") or k3lab_name(r["name"]) or f"sglang-only: {r['name']}"
        out[key] = out.get(key, 0) + int(r["bytes"])
    proc = case.get("process_weights_after_loading") or {}
    if proc.get("ran"):  # SM100 flashinfer_mxfp4: biases become fp32, SiTU params appear
        for name, d in proc["delta_bytes_rank_by_tensor"].items():
            key = k3lab_name(name) or f"sglang-only: {name}"
            out[key] = out.get(key, 0) + int(d)
    return out


def sglang_rank_bytes(case: dict) -> int:
    """sglang's weight bytes on the rank once loaded: parameters + buffers of the meta
    build, the tensors ``post_load_weights`` adds (w_kc / w_vc) and the change made by the
    experts' ``process_weights_after_loading`` where it could be run (SM100)."""
    proc = case.get("process_weights_after_loading") or {}
    return (case["totals"]["bytes"] + case["post_load"]["runtime_bytes"]
            + (proc.get("delta_bytes_rank", 0) if proc.get("ran") else 0))


def compare(case: dict, layout: str, plat_key: str, cfg=None) -> list[dict]:
    """Per k3lab tensor (group): sglang 0.5.23's bytes on this rank once loaded
    (:func:`sglang_group_bytes`) vs k3lab's (:func:`k3lab_rank_bytes` with
    :func:`k3lab_setting`). Rows sorted by tensor; ``diff = k3lab − sglang``."""
    lay = LAYOUTS[layout]
    stage = int(case["resolved"]["pp_rank"])
    k3, label = k3lab_rank_bytes(lay.tp, lay.pp, stage, k3lab_setting(layout, plat_key), cfg)
    sg = sglang_group_bytes(case)
    rows = []
    for name in sorted(set(k3) | set(sg)):
        a, b = k3.get(name, 0), sg.get(name, 0)
        rows.append({"tensor": name, "k3lab_bytes": a, "sglang_bytes": b, "diff_bytes": a - b,
                     "k3lab_call": label})
    return rows


def cause(tensor: str, layout: str, plat_key: str) -> str:
    """Why sglang 0.5.23 and k3lab's model differ for ``tensor`` in this case (read from the
    0.5.23 source; used in test messages and the report)."""
    lay = LAYOUTS[layout]
    if "zero bias" in tensor:
        if plat_key == "cuda-sm100" and lay.ep == 1:
            return ("SM100 flashinfer_mxfp4: mxfp4.py Mxfp4MoEMethod.process_weights_after_loading "
                    "(use_flashinfer branch) converts the zero biases to float32 before shuffling "
                    "and re-registers them, so they hold 4 B/element, not k3lab's bf16 2 B")
        if plat_key.startswith("rocm"):
            return ("mxfp4.py Mxfp4MoEMethod.create_weights allocates w13_weight_bias / "
                    "w2_weight_bias only when `with_bias or not _is_hip`; KimiK3MoE builds the "
                    "experts without biases, so ROCm holds none (k3lab adds them everywhere: "
                    "data/sglang_sharding.yaml options.mxfp4_zero_bias, cited from 0.5.16)")
        if lay.ep > 1 and "w2" in tensor:
            return ("w2_weight_bias is [num_local_experts, hidden] = [112, 3584] under EP8, not "
                    "[896, 3584]: k3lab's ep_a2a variant sizes the bias from the TP split of all "
                    "896 experts (model.sharding.rank_rows: bias elements = shape[0] of the TP shard)")
        return "zero-bias shape differs (mxfp4.py Mxfp4MoEMethod.create_weights)"
    if tensor == "embed_tokens" and lay.dp_attention:
        return ("vocab_parallel_embedding.py get_embedding_tp_kwargs: under DP attention the "
                "input embedding is split over the attention-TP group (use_attn_tp_group=True); "
                f"attn_tp = {lay.tp // lay.dp} here, so each rank holds "
                f"1/{lay.tp // lay.dp} of the 163840x7168 table, not 1/{lay.tp} "
                "(k3lab's dp_attention variant keeps the vocab rule over tp)")
    if tensor.startswith("moe.experts.w"):
        return ("per-rank expert intermediate padding: mxfp4.py Mxfp4MoEMethod.create_weights "
                "rounds it up to 128 (SM100 flashinfer_mxfp4), 256 (AITER) or 128 (AITER with "
                "SGLANG_AITER_K3_OPT=1); k3lab's layout pads to options.moe_intermediate_pad_to")
    if tensor.startswith("sglang-only:"):
        return "a tensor k3lab does not model"
    return "see the per-tensor shapes in the committed transcript"
