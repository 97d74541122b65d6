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


def check(params: dict) -> None:
    """ValueError (one line naming the parameter) for a value the study cannot use."""
    for name, value in params.items():
        if name in CHECKS:
            CHECKS[name](name, value)
    ctx, model = params.get("context_tokens"), params.get("model")
    if ctx and model is not None:  # 0: the model's maximum
        from .specs import load_model

        load_model(model).check_context(ctx, "parameter 'context_tokens'")
    if ctx and "input_len" in params and "output_len" in params:  # notebook 04 prices that workload at ctx
        from .compare import check_context_holds

        check_context_holds(ctx, params["input_len"], params["output_len"],
                            ("parameter 'context_tokens'", "input_len", "output_len"))
