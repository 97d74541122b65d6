"""The public start-up logs of Kimi K3 servers (``data/public_startup_logs.yaml``) beside
k3lab's prediction for the settings each states (finding 1): weights per rank, KV and state
pools, running requests. :func:`startup_table` for notebook 01; :func:`setting_logs` for M5.

Units: GiB per rank, KiB per token, MiB per request, tokens, requests.
"""

from __future__ import annotations

from .. import data, memory
from ..model.pool_sizing import MiB
from ..schemas import STARTUP_QUANTITIES
from ..specs import GiB, ModelConfig, parse_layout


def _startup_prediction(cfg, log: dict, dep, var) -> tuple[object, str]:
    """k3lab's figure for one public start-up log's quantity under ``var`` → (value, how);
    value None (and how, why) where the weights do not load at that setting."""
    q = log["quantity"]
    if q not in STARTUP_QUANTITIES:
        raise ValueError(f"data/public_startup_logs.yaml: log {log['id']}: quantity {q!r} is not one k3lab predicts")
    p = memory.fit(cfg, dep, log["mem_fraction"], log["kv_dtype"], variants=var,
                   slots_per_request=log["slots_per_request"])
    resident = p.weights_bytes_per_gpu + p.other_resident_bytes_per_gpu
    if q == "loaded_weights_gib_per_rank":
        return round(resident / GiB, 1), "weights + vision tower" + (" + DSpark draft" if "dspark" in var else "")
    if q == "kv_bytes_per_token":
        return round(p.kv_bytes_per_token / 1024, 1), "KiB per token"
    if q == "kda_state_mib_per_request":
        return round(p.kda_state_bytes_per_request / MiB, 1), "MiB per request (one state slot)"
    if not p.weights_fit:
        return None, "not predicted: the weights leave no pool at this setting"
    pools = p.state_pool_bytes_per_gpu + p.kv_pool_bytes_per_gpu
    return {"max_running_requests": (p.max_running_requests, ""),
            "max_total_num_tokens": (p.max_kv_tokens, ""),
            "kv_state_pools_gib_per_rank": (round(pools / GiB, 1), "KDA state + KV pools"),
            "avail_mem_gib_after_pools": (round((p.capacity_bytes_per_gpu - resident - pools) / GiB, 1),
                                          "capacity - weights - pools (no start-up overhead)")}[q]


def _startup_settings(log: dict, dep) -> list[tuple[tuple, str]]:
    """(variants, label) for each setting one log is predicted under: the variants it states,
    with and without each one it leaves open (with first; the label says ``no X`` for an open
    one left out). ValueError for a name k3lab.memory.fit does not know, or an AMD log that
    leaves ``SGLANG_AITER_K3_OPT`` unsaid (neither stated nor open)."""
    stated, open_ = tuple(log["variants"]), tuple(log["open_variants"])
    where = f"data/public_startup_logs.yaml: log {log['id']}"
    bad = sorted(set(stated + open_) - set(memory.FIT_VARIANTS))
    if bad:
        raise ValueError(f"{where}: unknown variant(s) {bad}; known: {', '.join(memory.FIT_VARIANTS)}")
    if dep.gpu_spec.vendor == "amd" and not ({"aiter-k3-opt", "aiter-moe-pad"} & set(stated) or "aiter-k3-opt" in open_):
        raise ValueError(f"{where}: an AMD log must say whether SGLANG_AITER_K3_OPT was set (aiter-k3-opt or "
                         "aiter-moe-pad in variants) or leave it open (aiter-k3-opt in open_variants)")
    options = [(stated, stated)]
    for v in open_:
        options = [(o + (v,), lab + (v,)) for o, lab in options] + [(o, lab + (f"no {v}",)) for o, lab in options]
    return [(o, ", ".join(lab) or "sglang default") for o, lab in options]


def startup_table(cfg: ModelConfig):
    """Public start-up figures (``data/public_startup_logs.yaml``) beside k3lab's prediction
    for the settings each states; a log whose settings k3lab cannot model says why
    (``predict: false``: no prediction, the reason in ``settings_unknown``).

    A switch a log leaves open (``open_variants``: e.g. whether ``SGLANG_AITER_K3_OPT`` was set
    on an MI355X, whether the DSpark draft was loaded) is predicted both ways (one row each,
    ``setting``), never only the way that happens to match; where all give the same figure,
    one row says ``either``."""
    import pandas as pd

    doc = data.load("startup_logs")
    rows = []
    for log in (x.model_dump() for x in doc.logs):
        dep = parse_layout(log["layout"])
        options = _startup_settings(log, dep)
        src = doc.sources[log["source"]]
        base = {"log": log["id"], "source": f"{src.title.split(':')[0]} ({src.date})",
                "quantity": log["quantity"], "reported": log["value"]}
        tail = {"settings_unknown": log["unknown"]}
        if not log["predict"]:
            rows.append({**base, "setting": "", "predicted": None, "error_pct": None, **tail,
                         "note": "not predicted (see settings_unknown)"})
            continue
        preds = [(label, *_startup_prediction(cfg, log, dep, var)) for var, label in options]
        if len({p for _, p, _ in preds}) == 1 and len(preds) > 1:
            preds = [(", ".join((*log["variants"], "either")), preds[0][1], preds[0][2])]
        for label, pred, how in preds:
            err = None if pred is None else round(100 * (pred - log["value"]) / log["value"], 1)
            rows.append({**base, "setting": label, "predicted": pred, "error_pct": err, **tail, "note": how})
    return pd.DataFrame(rows)


def setting_logs(cfg: ModelConfig) -> str:
    """What the public MI35x start-up logs say of the SGLANG_AITER_K3_OPT setting behind M5/M7:
    each log predicted with it, beside k3lab's figure without it where the log leaves it open
    (:func:`startup_table`)."""
    t = startup_table(cfg)
    t = t[t.setting.str.contains("aiter-k3-opt") & t.predicted.notna()]
    by = {}
    for r in t.itertuples():
        by.setdefault((r.log, r.reported), []).append(f"{r.predicted:g} {'without' if 'no aiter' in r.setting else 'with'}")
    return "public MI35x start-up logs: " + "; ".join(f"{log} {rep:g} against k3lab's {' / '.join(p)} it"
                                                         for (log, rep), p in by.items())


def implied_init_overhead(cfg: ModelConfig, step_gib: float = 0.1, most_gib: float = 16.0) -> list[dict]:
    """The start-up overhead per GPU that the public logs of running requests imply: for each log of
    ``max_running_requests`` k3lab predicts (its stated settings, none left open), the least overhead,
    in ``step_gib`` steps up to ``most_gib``, at which :func:`k3lab.memory.fit` admits no more than the
    log reports, with the log's own state slots a request. → [{"log", "layout", "reported", "at_zero", "gib",
    "slots_per_request"}] (gib None where even ``most_gib``
    admits more; 0.0 where no overhead is needed). A derived guide, not a measurement: each log's other
    unknowns (its ``unknown``) stay."""
    out = []
    for log in (x.model_dump() for x in data.load("startup_logs").logs):
        if log["quantity"] != "max_running_requests" or not log["predict"] or log["open_variants"]:
            continue
        dep = parse_layout(log["layout"])
        fit = lambda gib: memory.fit(cfg, dep, log["mem_fraction"], log["kv_dtype"],  # noqa: E731
                                     variants=tuple(log["variants"]), slots_per_request=log["slots_per_request"],
                                     init_overhead_bytes=int(round(gib * GiB))).max_running_requests
        steps = [round(i * step_gib, 6) for i in range(int(round(most_gib / step_gib)) + 1)]
        gib = next((g for g in steps if fit(g) <= log["value"]), None)
        out.append({"log": log["id"], "layout": log["layout"], "reported": int(log["value"]), "at_zero": fit(0.0),
                    "gib": gib, "slots_per_request": log["slots_per_request"]})
    return out


def overhead_hint(cfg: ModelConfig) -> str:
    """'one public start-up log implies 2.9 GiB (cookbook_h200_tp16: 98 running on 16xh200 tp16 ep with 4
    state slots a request, 110 at 0 GiB)': :func:`implied_init_overhead` in a clause, for a line that
    assumes 0 GiB; "" without one."""
    found = [x for x in implied_init_overhead(cfg) if x["gib"]]
    # the log's own state slots a request (attack 6: fit's 5 gave 88 at 0 GiB, not the 110 the line cited)
    return "; ".join(f"one public start-up log implies {x['gib']:.1f} GiB ({x['log']}: {x['reported']} running on "
                     f"{x['layout']} with {x['slots_per_request']} state slots a request, {x['at_zero']} at 0 GiB)"
                     for x in found[:1])
