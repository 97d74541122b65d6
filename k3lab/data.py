"""The one loader of ``data/*.yaml``: every file parsed once, validated by its schema (:mod:`k3lab.schemas`).

``load("hardware")`` → the validated document of ``data/hardware.yaml`` (a frozen pydantic
model). Every file goes through the same steps, and a mistake in any of them raises
:class:`DataError` with one line naming the file and the field:

1. read as UTF-8 and parse as YAML (``data/hardware.yaml: not valid YAML (line 12: ...)``);
2. validate against the file's schema below: finite numbers, positive where physical,
   units in the field names or checked against a fixed unit, no unknown keys
   (``data/hardware.yaml: gpus.mi355x.hbm_bw_tb_s.value: must be a finite number > 0``);
3. check that every ``source:`` names an entry of the file's ``sources`` with a date.

Facts are stored once. Where two files must agree (the article's numbers as claims in
``claims.yaml`` and as model inputs in ``article_table.yaml``), :func:`cross_checks` says
so in one place; :func:`load` runs it for every file that takes part.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .paths import REPO_ROOT, data_dir


class DataError(ValueError):
    """A data file that cannot be used as it is; the message names the file and the field."""


from .schemas import (METHODS, PRICE_KINDS, PRICE_UNIT, ArticlePrefill, ArticleTable, Claims,  # noqa: F401
                      DraftModel, Hardware, Prices, PublicMeasurements, ServingFit, ServingModel, ServingRules,
                      Sharding, StartupLogs, StorageOverrides, UpstreamChanges)


# --------------------------------------------------------------------------- loading

SCHEMAS: dict[str, tuple[str, type[BaseModel]]] = {
    "hardware": ("hardware.yaml", Hardware),
    "prices": ("prices.yaml", Prices),
    "article_table": ("article_table.yaml", ArticleTable),
    "article_prefill": ("article_prefill.yaml", ArticlePrefill),
    "claims": ("claims.yaml", Claims),
    "serving_model": ("serving_model.yaml", ServingModel),
    "sharding": ("sglang_sharding.yaml", Sharding),
    "storage_overrides": ("model/storage_overrides.yaml", StorageOverrides),
    "dspark_draft": ("model/kimi_k3_dspark_draft.yaml", DraftModel),
    "startup_logs": ("public_startup_logs.yaml", StartupLogs),
    "upstream_changes": ("sglang_upstream_changes.yaml", UpstreamChanges),
    "public_measurements": ("public_measurements.yaml", PublicMeasurements),
    "serving_fit": ("serving_fit.yaml", ServingFit),
    "serving_rules": ("sglang_serving_rules.yaml", ServingRules),
}


def _where(path: Path) -> str:
    """How errors name a data file: ``data/<name>`` (also for a copy under K3LAB_DATA)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return f"data/{Path(path).name}"


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; DataError naming the file for missing, non-UTF-8 or bad YAML."""
    where = _where(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DataError(f"{where}: file missing") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{where}: not UTF-8 text (byte {e.start})") from None
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: 5x faster
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise DataError(f"{where}: not valid YAML ({line}{getattr(e, 'problem', None) or e})") from None


def _first_error(where: str, e: ValidationError) -> DataError:
    errs = e.errors(include_url=False)
    err = errs[0]
    loc = ".".join(str(x) for x in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] in ("greater_than", "finite_number", "float_type", "int_type", "float_parsing"):
        msg = f"{msg} (got {err.get('input')!r})"
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    return DataError(f"{where}: {loc + ': ' if loc else ''}{msg}{more}")


def validate(name: str, doc: Any, where: str | None = None) -> BaseModel:
    """Validate an already-parsed document against the schema of ``name`` (see :data:`SCHEMAS`)."""
    if name not in SCHEMAS:
        raise DataError(f"unknown data file {name!r}; known: {', '.join(SCHEMAS)}")
    fname, schema = SCHEMAS[name]
    where = where or f"data/{fname}"
    if not isinstance(doc, dict):
        raise DataError(f"{where}: expected a mapping at the top level, got {type(doc).__name__}")
    try:
        return schema.model_validate(doc)
    except ValidationError as e:
        raise _first_error(where, e) from None


@functools.lru_cache(maxsize=None)
def _load_one(name: str) -> BaseModel:
    if name not in SCHEMAS:
        raise DataError(f"unknown data file {name!r}; known: {', '.join(SCHEMAS)}")
    path = data_dir() / SCHEMAS[name][0]
    return validate(name, read_yaml(path), _where(path))


#: Files whose facts are used by other files (see :func:`cross_checks`).
CROSS_CHECKED = ("hardware", "prices", "article_table", "claims")


@functools.lru_cache(maxsize=None)
def _cross_checked() -> bool:
    cross_checks(**{n: _load_one(n) for n in CROSS_CHECKED})
    return True


def load(name: str) -> BaseModel:
    """The validated document of ``data/<file>`` for ``name`` (cached; see :data:`SCHEMAS`)."""
    doc = _load_one(name)
    if name in CROSS_CHECKED:
        _cross_checked()
    return doc


def cross_checks(**given) -> None:
    """Facts that live in one file and are used by another must agree.

    - every GPU named in prices.yaml, article_table.yaml and serving_model.yaml exists in
      hardware.yaml;
    - the article's numbers that are claims (claims.yaml) and model inputs
      (article_table.yaml: tok/s per node, tok/s per $/hour; prices.yaml: $/GPU-hour) agree,
      so editing one without the other fails here.
    ``given`` holds documents being validated (so a file is not loaded while loading itself).
    """
    def get(n):
        return given[n] if n in given else _load_one(n)

    gpus = set(get("hardware").gpus)
    pr = get("prices")
    for i, p in enumerate(pr.prices):
        if p.gpu not in gpus:
            raise DataError(f"data/prices.yaml: prices.{i}.gpu: unknown GPU {p.gpu!r} "
                            f"(known in data/hardware.yaml: {', '.join(sorted(gpus))})")
    table = get("article_table")
    if table.price_tier not in pr.tiers:
        raise DataError(f"data/article_table.yaml: price_tier: {table.price_tier!r} is not a tier "
                        f"of data/prices.yaml")
    for i, c in enumerate(table.configs):
        if c.gpu not in gpus:
            raise DataError(f"data/article_table.yaml: configs.{i}.gpu: unknown GPU {c.gpu!r}")
        if not any(p.tier == table.price_tier and p.gpu == c.gpu for p in pr.prices):
            raise DataError(f"data/prices.yaml: tier {table.price_tier!r} has no price for "
                            f"{c.gpu}, which data/article_table.yaml needs")
    reg = {c.id: c for c in get("claims").claims}
    # The article's table appears twice: T1-T3 (throughput) and T6 (tok/s per $/hour).
    by_id = {c.id: c for c in table.configs}
    for cfg_id, cid in (("mi355x_tp8", "T1"), ("b300_tp8_dcp", "T2"), ("b200_tp16", "T3")):
        if cfg_id in by_id and cid in reg and float(reg[cid].claimed) != by_id[cfg_id].tok_s:
            raise DataError(f"data/claims.yaml: {cid}.claimed ({reg[cid].claimed}) disagrees with "
                            f"data/article_table.yaml configs.{cfg_id}.tok_s ({by_id[cfg_id].tok_s:g})")
    if "T6" in reg:
        want = " / ".join(f"{by_id[k].tok_s_per_dollar_hour:g}" for k in ("mi355x_tp8", "b300_tp8_dcp", "b200_tp16"))
        if str(reg["T6"].claimed) != want:
            raise DataError(f"data/claims.yaml: T6.claimed ({reg['T6'].claimed}) disagrees with "
                            f"data/article_table.yaml tok_s_per_dollar_hour ({want})")
    if "T5" in reg:
        art = {p.gpu: p.usd_per_gpu_hour for p in pr.prices if p.tier == table.price_tier}
        want = " / ".join(f"{art[g]:.2f}" for g in ("mi355x", "b300", "b200") if g in art)
        if str(reg["T5"].claimed) != want:
            raise DataError(f"data/claims.yaml: T5.claimed ({reg['T5'].claimed}) disagrees with "
                            f"data/prices.yaml tier {table.price_tier!r} ({want})")


#: caches of other modules built from data files (registered with :func:`on_clear_cache`)
_DEPENDENT_CACHES: list = []


def on_clear_cache(fn):
    """Register ``fn`` (an ``lru_cache``'d function, or any callable with ``cache_clear``) to be
    cleared with the data caches; returns ``fn`` (usable as a decorator under ``lru_cache``)."""
    _DEPENDENT_CACHES.append(fn)
    return fn


def clear_cache() -> None:
    """Forget every loaded file and every cache built from one (tests that edit data files call this)."""
    _load_one.cache_clear()
    _cross_checked.cache_clear()
    for fn in _DEPENDENT_CACHES:
        fn.cache_clear()


def check_finite(name: str, v, positive: bool = True) -> float:
    """A user-given number: finite (and > 0 unless ``positive=False``) → float, else ValueError."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{name} must be positive, got {v!r}")
    return float(v)


def check_count(name: str, v) -> int:
    """A user-given count: a positive int (not a bool) → int, else ValueError."""
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return v
