"""What values the study's notebook parameters may take, beyond their types.

:mod:`k3lab.nbparams` checks a parameter's type against its default; :func:`check` then
checks the values of the parameters the study's notebooks share by name (``model``,
``gpus``, ``layouts``, ``context_tokens``, prices, lengths, ...) the way the code the
notebook calls would, so ``reproduce`` refuses a bad value of any notebook before the
first one runs, and a notebook run by hand fails in its second cell the same way. A name
not listed here is checked by type only.
"""

from __future__ import annotations

from . import limits
from .readers import DataError


def _one_of(name: str, value, known) -> None:
    if value not in known:
        raise ValueError(f"parameter {name!r}: unknown {value!r}; known: {', '.join(map(str, known))}")


def _gpus(name: str, value) -> None:
    from .specs import known_gpus

    for g in value:
        _one_of(name, str(g).lower(), known_gpus())


def _layouts(name: str, value) -> None:
    from .specs import parse_layout

    for text in value:
        try:
            parse_layout(text)
        except DataError:
            raise
        except ValueError as e:
            raise ValueError(f"parameter {name!r}: {e}") from None


def _variants(name: str, value) -> None:
    from .memory import FIT_VARIANTS

    for v in value:
        _one_of(name, v, list(FIT_VARIANTS))


def _prices(name: str, value) -> None:
    for gpu, usd in value.items():
        _gpus(name, [gpu])
        limits.check("usd_per_gpu_hour", usd, f"parameter {name!r}[{gpu!r}]")


def _concurrencies(name: str, value) -> None:
    from .live.bench_serving import parse_concurrencies

    try:
        parse_concurrencies(value)
    except ValueError as e:
        raise ValueError(f"parameter {name!r}: {e}") from None


def _model(name: str, value) -> None:
    from .specs import known_models

    _one_of(name, str(value).lower(), known_models())


def _capped(kind: str):
    return lambda name, value: limits.check(kind, value, f"parameter {name!r}")


CHECKS = {
    "mode": lambda name, value: _one_of(name, value, ("offline", "live")),
    "model": _model,
    "gpus": _gpus,
    "layouts": _layouts,
    "variants": _variants,
    "kv_dtype": lambda name, value: _one_of(name, value, ("bf16", "fp8")),
    "context_tokens": _capped("tokens_or_zero"),
    "mem_fraction": _capped("fraction"),
    "usd_per_gpu_hour": _prices,
    "usd_per_kwh": _capped("usd_per_kwh"),
    "input_len": _capped("tokens"),
    "output_len": _capped("tokens"),
    "concurrencies": _concurrencies,
    "max_tpot_ms": _capped("latency_ms_or_zero"),
    "max_ttft_ms": _capped("latency_ms_or_zero"),
    "min_tok_s_per_user": _capped("tok_s_per_user_or_zero"),
}


def normalised(params: dict) -> dict:
    """``params`` with GPU and model names as the code takes them (lower case), as the CLI reads
    ``--usd-per-gpu-hour MI355X=3``: ``gpus``, the keys of ``usd_per_gpu_hour``, ``model``. The
    pipeline checks these values and the notebook runs on them (:func:`k3lab.nbparams.check`), so a
    name the check accepts is one the notebook can use."""
    out = dict(params)
    if isinstance(out.get("gpus"), (list, tuple)):
        out["gpus"] = [g.lower() if isinstance(g, str) else g for g in out["gpus"]]
    if isinstance(out.get("usd_per_gpu_hour"), dict):
        out["usd_per_gpu_hour"] = {k.lower() if isinstance(k, str) else k: v for k, v in out["usd_per_gpu_hour"].items()}
    if isinstance(out.get("model"), str):
        out["model"] = out["model"].lower()
    return out


def check(params: dict) -> None:
    """ValueError (one line naming the parameter) for a value the study cannot use: each by
    :data:`CHECKS` (on :func:`normalised` names), then against the model's context
    (``max_position_embeddings``): ``context_tokens``, and a request of ``input_len`` +
    ``output_len`` tokens, as the notebook's pricing and ``compare`` refuse them."""
    params = normalised(params)
    for name, value in params.items():
        if name in CHECKS:
            CHECKS[name](name, value)
    model = params.get("model")
    if model is None:
        return
    from .specs import load_model

    ctx = params.get("context_tokens")
    if ctx:  # 0: the model's maximum
        load_model(model).check_context(ctx, "parameter 'context_tokens'")
    lens = params.get("input_len"), params.get("output_len")
    if all(isinstance(n, int) for n in lens):
        load_model(model).check_context(lens[0] + lens[1], f"parameters 'input_len' + 'output_len' ({lens[0]:,} + "
                                                           f"{lens[1]:,}): a request")
    if ctx and "input_len" in params and "output_len" in params:  # notebook 04 prices that workload at ctx
        from .compare import check_context_holds

        check_context_holds(ctx, params["input_len"], params["output_len"],
                            ("parameter 'context_tokens'", "input_len", "output_len"))
