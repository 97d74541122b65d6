"""The committed form of a probe record: tensors grouped per pattern, layer index → layer kind.

:func:`compact` turns a child's full record (one row per tensor) into what the transcript
commits: one row per tensor pattern (``model.layers.{mla}.self_attn.o_proj.weight``) with
its layers as ranges, copies, bytes, and the k3lab tensor it maps to; the ROCm flag flips
shortened; the one-layer ``process_weights_after_loading`` change scaled to the rank.
:func:`rank_totals` reads the totals of a full record.
"""

from __future__ import annotations

import re

from .comparison import k3lab_name
from .config import project_text_config

#: Modules whose flipped flags the compact record lists by name (the rest are counted).
FLAG_MODULES_SHOWN = ("sglang.srt.models.kimi_k3.", "sglang.srt.models.deepseek_v2.",
                       "sglang.srt.layers.quantization.mxfp4.",
                       "sglang.srt.layers.quantization.compressed_tensors.compressed_tensors.",
                       "sglang.srt.layers.moe.fused_moe_triton.layer.",
                       "sglang.srt.layers.moe.ep_moe.layer.", "sglang.srt.layers.linear.",
                       "sglang.srt.layers.layernorm.", "sglang.srt.layers.quantization.unquant.")

_LAYER = re.compile(r"^model\.layers\.(\d+)\.")


def _ranges(ix: list[int]) -> str:
    """[1, 2, 3, 5] → '1-3,5'."""
    out, i = [], 0
    ix = sorted(ix)
    while i < len(ix):
        j = i
        while j + 1 < len(ix) and ix[j + 1] == ix[j] + 1:
            j += 1
        out.append(str(ix[i]) if i == j else f"{ix[i]}-{ix[j]}")
        i = j + 1
    return ",".join(out)


def layer_kinds(text_config: dict | None = None) -> dict[int, dict]:
    """0-based layer index → {'attn': 'mla'|'kda', 'ffn': 'dense'|'moe'} from the config."""
    tc = text_config or project_text_config()
    lac = tc["linear_attn_config"]
    full = {i - 1 for i in lac["full_attn_layers"]}
    dense = int(tc.get("first_k_dense_replace", 0))
    return {i: {"attn": "mla" if i in full else "kda", "ffn": "dense" if i < dense else "moe"}
            for i in range(int(tc["num_hidden_layers"]))}


def pattern_of(name: str, kinds: dict[int, dict]) -> tuple[str, int | None]:
    """'model.layers.7.self_attn.o_proj.weight' → ('model.layers.{mla}.self_attn.o_proj.weight', 7):
    the layer index becomes the layer's kind where it matters (attention / FFN type)."""
    m = _LAYER.match(name)
    if not m:
        return name, None
    i = int(m.group(1))
    rest = name[m.end():]
    if rest.startswith("self_attn."):
        tag = kinds[i]["attn"]
    elif rest.startswith("mlp."):
        tag = kinds[i]["ffn"]
    else:
        tag = "*"
    return f"model.layers.{{{tag}}}.{rest}", i


def compact(doc: dict) -> dict:
    """A probe record grouped per tensor pattern (layer index → layer kind): each row
    has the pattern, layers (ranges), shape, dtype, kind, copies, bytes per copy and in
    total. Deterministic; what the benchmark commits."""
    kinds = layer_kinds()
    groups: dict[tuple, dict] = {}

    def add(rows):
        for r in rows:
            pat, i = pattern_of(r["name"], kinds)
            key = (pat, tuple(r["shape"]), r["dtype"], r["kind"])
            g = groups.setdefault(key, {"name": pat, "shape": list(r["shape"]), "dtype": r["dtype"],
                                        "kind": r["kind"], "numel": r["numel"],
                                        "bytes_each": r["bytes"], "layers": [], "copies": 0,
                                        "bytes": 0})
            g["copies"] += 1
            g["bytes"] += r["bytes"]
            if i is not None:
                g["layers"].append(i)

    add(doc["tensors"])
    post = doc.get("post_load", {})
    add(post.get("runtime_tensors", []))
    rows = []
    for key in sorted(groups):
        g = groups[key]
        g["layers"] = _ranges(g["layers"])
        g["k3lab_tensor"] = k3lab_name(g["name"])
        rows.append(g)
    keep = ("sglang_version", "platform", "platform_label", "env", "server_args", "world_rank",
            "resolved", "flipped_flags", "stubs")
    out = {k: doc.get(k) for k in keep}
    # the ROCm flag flips, shortened to the modules that build the model's weights
    flips = doc.get("flipped_flags") or []
    out["flipped_flags"] = [f for f in flips if any(m in f for m in FLAG_MODULES_SHOWN)]
    out["flipped_flags_total"] = len(flips)
    out["tensors"] = rows
    out["totals"] = dict(doc["totals"])
    out["post_load"] = {k: v for k, v in post.items() if k != "runtime_tensors"}
    proc = doc.get("process_weights_after_loading") or {"ran": False}
    out["process_weights_after_loading"] = _compact_process(proc, kinds)
    if post.get("ran"):
        # storage that post_load_weights' merges add beyond the merged weights (the
        # KDA [f_a | b] buffer is padded to a multiple of 8 rows: kimi_k3.py
        # _merge_weights_as_views(pad_rows_to=8) from _merge_bfa_weights)
        out["post_load"]["merge_padding_bytes"] = (
            post["resident_bytes"] - doc["totals"]["bytes"] - post["runtime_bytes"])
    return out


def _compact_process(proc: dict, kinds: dict) -> dict:
    """The one-layer ``process_weights_after_loading`` record with layer-free names and the
    bytes change per tensor pattern for the whole rank (× MoE layers on the rank)."""
    if not proc.get("ran"):
        return {k: v for k, v in proc.items()}
    n = int(proc["moe_layers_on_rank"])

    def rows(rs):
        return [{**{k: r[k] for k in ("shape", "dtype", "numel", "bytes")},
                 "name": pattern_of(r["name"], kinds)[0]} for r in rs]

    before, after = rows(proc["before"]), rows(proc["after"])
    b = {r["name"]: r["bytes"] for r in before}
    a = {r["name"]: r["bytes"] for r in after}
    delta = {k: (a.get(k, 0) - b.get(k, 0)) * n for k in sorted(set(a) | set(b))
             if a.get(k, 0) != b.get(k, 0)}
    return {"ran": True, "moe_layers_on_rank": n, "stubs": proc.get("stubs", []),
            "before": before, "after": after, "delta_bytes_per_layer": proc["delta_bytes_per_layer"],
            "delta_bytes_rank_by_tensor": delta,
            "delta_bytes_rank": proc["delta_bytes_per_layer"] * n}


def rank_totals(doc: dict) -> dict:
    """Totals of a full (uncompacted) probe record: parameters + buffers, and resident
    after ``post_load_weights``."""
    post = doc.get("post_load", {})
    return {"bytes": doc["totals"]["bytes"], "resident_after_post_load_bytes": post.get("resident_bytes")}
