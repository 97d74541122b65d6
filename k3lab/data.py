"""The one loader of ``data/``: every input parsed once, checked by its schema (:mod:`k3lab.schemas`).

``load("hardware")`` → the checked document of ``data/hardware.yaml``; every file of
``data/`` that k3lab reads has a name in :data:`SCHEMAS` (name → (path under ``data/``,
schema)) and goes through the same steps. A mistake in any of them raises
:class:`DataError` with one line naming the file and the field:

1. read (:mod:`k3lab.readers`): UTF-8 text, valid YAML / JSON / JSONL / CSV, **no key twice**
   in any mapping (``data/prices.yaml: duplicate key 'usd_per_gpu_hour' (lines 40 and 41)``),
   in JSON every number finite and every byte count a non-negative integer;
2. check against the file's schema: finite numbers, signs and ranges, required keys,
   types, no unknown keys (``data/hardware.yaml: gpus.mi355x.hbm_bw_tb_s.value: must be a
   finite number > 0``), rules across fields;
3. facts that two files hold must agree (:func:`cross_checks`).

What a load returns, by kind: a YAML document → its frozen pydantic model; a JSON
document → the parsed dict, typed by its schema's ``TypedDict`` (treat it as read-only:
it is cached); a CSV table → a pandas DataFrame of the converted rows (a copy); a JSONL
stream → its list of records. Consumers trust these and do not check them again.

:func:`read` checks a file of a known kind at any path (a live run's fresh measurement)
the same way, :func:`read_measured` a file by its schema alone (the GPU benchmark's folders,
named by the device that wrote them, are found under ``measured/`` and registered here);
:func:`check_all` loads every input (``reproduce`` does it before any notebook runs). Files
under ``data/`` that are not inputs are listed in :data:`NOT_INPUTS`.
"""

from __future__ import annotations

import functools
import math
import re
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from . import readers
from .limits import as_number
from .paths import DATA_DIR, REPO_ROOT, data_dir
from .readers import DataError  # noqa: F401  (the loader's error, raised by every step)
from .schemas import (METHODS, PRICE_KINDS, PRICE_UNIT, ArticlePrefill, ArticleTable, Claims,  # noqa: F401
                      DraftModel, Hardware, PredictionSeals, Predictions, Prices, PublicLinks, PublicMeasurements, ServingFit,
                      ServingModel, ServingRules, ServingValidation,
                      Sharding, StartupLogs, StorageOverrides, UpstreamChanges)
from .schemas.files import JsonFile, Lines, Table, adapter
from .schemas.serving import PREDICTION_SEALS
from .schemas.gpu_bench import committed as gpu_bench_files
from .schemas.measured import AttentionHeads, BenchServing, Meta, TopkRenorm, TopkTies
from .schemas.model import ModelConfigFile, PublishedModels
from .schemas.transcripts import AiterProbe, RankBytes, ReleaseMatrix, TopkRepro

# --------------------------------------------------------------------------- the inputs

MEASURED = "measured/cpu-2core"

SCHEMAS: dict[str, tuple[str, type]] = {
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
    "public_links": ("public_links.yaml", PublicLinks),
    "serving_fit": ("serving_fit.yaml", ServingFit),
    "serving_validation": ("serving_validation.yaml", ServingValidation),
    "serving_rules": ("sglang_serving_rules.yaml", ServingRules),
    # the published model configs (k3lab.specs.MODEL_FILES)
    "kimi_k3_config": ("model/kimi_k3_config.json", ModelConfigFile),
    "kimi_k2_config": ("model/kimi_k2_config.json", ModelConfigFile),
    "deepseek_v3_config": ("model/deepseek_v3_config.json", ModelConfigFile),
    "published_models": ("model/published.yaml", PublishedModels),
    # measured here (benchmarks/), each with the meta file of the run that wrote it
    "attention_heads": (f"{MEASURED}/attention_heads.csv", AttentionHeads),
    "attention_heads_meta": (f"{MEASURED}/attention_heads.meta.json", Meta),
    "bench_live_smoke": (f"{MEASURED}/bench_live_smoke.jsonl", BenchServing),
    "bench_live_smoke_meta": (f"{MEASURED}/bench_live_smoke.meta.json", Meta),
    "topk_renorm": (f"{MEASURED}/topk_renorm.csv", TopkRenorm),
    "topk_renorm_ties": (f"{MEASURED}/topk_renorm_ties.csv", TopkTies),
    "topk_renorm_meta": (f"{MEASURED}/topk_renorm.meta.json", Meta),
    "sglang_topk_repro": (f"{MEASURED}/sglang_topk_repro.json", TopkRepro),
    "sglang_topk_repro_meta": (f"{MEASURED}/sglang_topk_repro.meta.json", Meta),
    "sglang_aiter_probe": (f"{MEASURED}/sglang_aiter_probe.json", AiterProbe),
    "sglang_release_matrix": (f"{MEASURED}/sglang_release_matrix.json", ReleaseMatrix),
    "sglang_release_matrix_meta": (f"{MEASURED}/sglang_release_matrix.meta.json", Meta),
    "sglang_k3_rank_bytes": (f"{MEASURED}/sglang_0523_k3_rank_bytes.json", RankBytes),
    "sglang_k3_rank_bytes_meta": (f"{MEASURED}/sglang_0523_k3_rank_bytes.meta.json", Meta),
}
# the GPU benchmark's runs (benchmarks/gpu/run.py), one folder per device kind: found, not listed
SCHEMAS.update(gpu_bench_files(DATA_DIR / "measured"))
#: the serving model's predictions on record (k3lab.serving.score), one file per recording: found, not listed
PREDICTIONS_DIR = "predictions"
SCHEMAS["prediction_seals"] = (f"{PREDICTIONS_DIR}/{PREDICTION_SEALS}", PredictionSeals)
SCHEMAS.update({f"predictions@{p.stem}": (f"{PREDICTIONS_DIR}/{p.name}", Predictions)
                for p in sorted((DATA_DIR / PREDICTIONS_DIR).glob("*.yaml")) if p.name != PREDICTION_SEALS})

#: files under ``data/`` that k3lab never reads, and why
NOT_INPUTS: dict[str, str] = {
    "model/README.md": "documentation of data/model/ for people; no k3lab code reads it",
}


def _where(path) -> str:
    """How errors name a file: ``data/<path under the data folder>`` (also for a copy under
    K3LAB_DATA), else its path in the repository, else its name (never an absolute path)."""
    p = Path(path).resolve()
    for root, prefix in ((data_dir(), "data/"), (REPO_ROOT, "")):
        try:
            return prefix + str(p.relative_to(root))
        except ValueError:
            pass
    return p.name


def read_yaml(path, where: str | None = None) -> Any:
    """Parse one YAML file (UTF-8, valid YAML, no duplicate keys); DataError naming it."""
    return readers.read_yaml(path, where or _where(path))


# --------------------------------------------------------------------------- checking


def _clean_loc(loc, doc) -> tuple:
    """``loc`` without pydantic's union-member tags (``machine.MachineInfo.cores`` →
    ``machine.cores``): the parts found by walking ``doc``, and a last part naming a key
    that is missing or unknown."""
    out, cur = [], doc
    for i, part in enumerate(loc):
        if isinstance(cur, dict) and part in cur:
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, (dict, list)) and i == len(loc) - 1:
            out.append(part)
    return tuple(out)


def _first_error(where: str, e: ValidationError, doc=None) -> DataError:
    """One line for a validation error: the first, or the most specific error under the same
    field (for a union: the member's value rule over another member's "wrong type"), with
    its field path as in the file."""
    errs = e.errors(include_url=False)
    if doc is None:
        locs = [tuple(x["loc"]) for x in errs]
    else:
        locs = [_clean_loc(x["loc"], doc) for x in errs]
    # pydantic's first error, or a more specific one below the same field (a union member's)
    same = [i for i in range(len(errs)) if locs[i][:len(locs[0])] == locs[0]]
    best = max(same, key=lambda i: (len(locs[i]), not errs[i]["type"].endswith("_type"), -i))
    err, loc = errs[best], ".".join(str(x) for x in locs[best])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number",
                       "float_type", "int_type", "float_parsing", "bool_type", "string_type", "literal_error",
                       "string_pattern_mismatch", "string_too_short", "too_short", "too_long"):
        msg = f"{msg} (got {err.get('input')!r})"
    others = {loc for loc in locs if loc != locs[best][:len(loc)]}  # not the same field's union alternatives
    more = f" (and {len(others)} more)" if others else ""
    return DataError(f"{where}: {loc + ': ' if loc else ''}{msg}{more}")


def _rule(where: str, e: ValueError) -> DataError:
    return DataError(f"{where}: {e}")


def validate(name: str, doc: Any, where: str | None = None):
    """Check an already-parsed document (a YAML or JSON file's) against the schema of
    ``name`` (see :data:`SCHEMAS`) → the model (YAML) or ``doc`` itself (JSON)."""
    if name not in SCHEMAS:
        raise DataError(f"unknown data file {name!r}; known: {', '.join(SCHEMAS)}")
    fname, schema = SCHEMAS[name]
    where = where or f"data/{fname}"
    if not isinstance(doc, dict):
        raise DataError(f"{where}: expected a mapping at the top level, got {type(doc).__name__}")
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            return schema.model_validate(doc)
        except ValidationError as e:
            raise _first_error(where, e, doc) from None
    return _check_json(schema, doc, where)


def _check_json(schema: type[JsonFile], doc: Any, where: str):
    try:
        adapter(schema.schema).validate_python(doc)
    except ValidationError as e:
        raise _first_error(where, e, doc) from None
    try:
        schema.check(doc)
    except ValueError as e:
        raise _rule(where, e) from None
    return doc


def _cell(value: str, hint, where: str, col: str):
    """One CSV cell → the type its column declares (int, float, bool, str); ``n/a`` → None
    where the column allows None (``X | None``)."""
    if type(None) in typing.get_args(hint):
        if value == "n/a":
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    base = typing.get_origin(hint) is typing.Annotated and typing.get_args(hint)[0] or hint
    try:
        if base is bool:
            if value not in ("True", "False"):
                raise ValueError
            return value == "True"
        if base is int:
            return int(value)
        if base is float:  # an integer-looking cell stays an int, as pandas reads it (1 → int64 column)
            return int(value) if re.fullmatch(r"[+-]?\d+", value) else float(value)
    except ValueError:
        want = {bool: "True or False", int: "an integer", float: "a number"}[base]
        raise DataError(f"{where}: {col}: must be {want} (got {value!r})") from None
    return value


def _read_table(schema: type[Table], path, where: str):
    import pandas as pd

    header, body = readers.read_csv(path, where)
    hints = typing.get_type_hints(schema.row, include_extras=True)
    cols = list(hints)
    missing = [c for c in cols if c not in header]
    if missing:
        raise DataError(f"{where}: line 1: missing column(s) {missing}")
    unknown = [c for c in header if c not in hints]
    if unknown:
        raise DataError(f"{where}: line 1: unknown column(s) {unknown} (known: {', '.join(cols)})")
    rows = []
    for n, cells in body:
        raw = dict(zip(header, cells))
        row = {c: _cell(raw[c], hints[c], f"{where}: line {n}", c) for c in cols}
        try:
            adapter(schema.row).validate_python(row)
        except ValidationError as e:
            raise _first_error(f"{where}: line {n}", e, row) from None
        rows.append((n, row))
    try:
        schema.check(rows)
    except ValueError as e:
        raise _rule(where, e) from None
    # None ("n/a") as pandas reads it: a missing value
    return pd.DataFrame([{c: (math.nan if v is None else v) for c, v in r.items()} for _, r in rows], columns=cols)


def read(name: str, path=None):
    """The file of kind ``name`` at ``path`` (default: its place under ``data/``), read and
    checked (not cached, no cross-checks) → model / dict / DataFrame / list of records."""
    if name not in SCHEMAS:
        raise DataError(f"unknown data file {name!r}; known: {', '.join(SCHEMAS)}")
    rel, schema = SCHEMAS[name]
    path = data_dir() / rel if path is None else Path(path)
    where = _where(path)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        if schema is Predictions:  # the folder first: a link there would be read (and named) as its target
            seals = Path(path).parent / PREDICTION_SEALS
            readers.refuse_strays(seals.parent, _where(seals).rsplit("/", 1)[0],
                                  {PREDICTION_SEALS, *read("prediction_seals", seals).recorded}, _where(seals),
                                  f"the folder holds only the recordings {PREDICTION_SEALS} registers "
                                  "(`make record-predictions` writes both)")
        doc = validate(name, readers.read_yaml(path, where), where)
        if schema is Predictions:
            _as_recorded(path, where)
        return doc
    if issubclass(schema, Table):
        return _read_table(schema, path, where)
    if issubclass(schema, Lines):
        return parse_lines(name, readers.read_text(path, where).splitlines(), where)
    if issubclass(schema, JsonFile):
        return validate(name, readers.read_json(path, where, schema.allow_infinity), where)
    raise TypeError(f"SCHEMAS[{name!r}]: unknown schema kind {schema!r}")


def _as_recorded(path: Path, where: str) -> None:
    """A recording of predictions is the file ``make record-predictions`` wrote: its sha256 is the
    one the registry beside it (:data:`PREDICTION_SEALS`) holds; DataError (one line) otherwise."""
    import hashlib

    seals = Path(path).parent / PREDICTION_SEALS
    recorded = read("prediction_seals", seals).recorded
    if Path(path).name not in recorded:
        raise DataError(f"{where}: not in {_where(seals)} (a recording is registered when `make record-predictions` "
                        f"writes it)")
    if hashlib.sha256(Path(path).read_bytes()).hexdigest() != recorded[Path(path).name]:
        raise DataError(f"{where}: edited since it was recorded (its sha256 is not the one {_where(seals)} holds); "
                        f"predictions on record are never edited: restore it, or record anew")


def read_measured(schema: type, path):
    """A measurement at any path checked by ``schema`` (a :class:`Table` or :class:`JsonFile`):
    the GPU benchmark's files, whose folders are named by the device that wrote them."""
    where = _where(path)
    if issubclass(schema, Table):
        return _read_table(schema, path, where)
    return _check_json(schema, readers.read_json(path, where, schema.allow_infinity), where)


def parse_lines(name: str, lines, where: str) -> list[dict]:
    """JSONL ``lines`` (text) checked as the stream kind ``name`` (e.g. ``bench_live_smoke``)."""
    schema = SCHEMAS[name][1]
    out = []
    for n, rec in readers.parse_jsonl(lines, where, schema.allow_infinity):
        try:
            out.append(schema.check_record(rec, f"{where}:line {n}"))
        except ValueError as e:
            raise DataError(str(e)) from None
    if not out:
        raise DataError(f"{where}: {schema.empty}")
    return out


def required_keys(name: str) -> list[str]:
    """The keys (columns, for a table) a file of kind ``name`` must have at its top level."""
    schema = SCHEMAS[name][1]
    if issubclass(schema, BaseModel):
        return [k for k, f in schema.model_fields.items() if f.is_required()]
    return schema.required()


# --------------------------------------------------------------------------- cached loads

_CACHES: list = []


def cached(fn):
    """``functools.lru_cache`` for something derived from ``data/``: cleared with the
    loader's own cache by :func:`clear_cache` (tests point K3LAB_DATA at edited copies)."""
    c = functools.lru_cache(maxsize=None)(fn)
    _CACHES.append(c)
    return c


_LOADED: dict[str, Any] = {}


def _load_one(name: str):
    if name not in SCHEMAS:
        raise DataError(f"unknown data file {name!r}; known: {', '.join(SCHEMAS)}")
    if name not in _LOADED:
        _LOADED[name] = read(name)
    return _LOADED[name]


#: Files whose facts are used by other files (see :func:`cross_checks`).
CROSS_CHECKED = ("hardware", "prices", "article_table", "article_prefill", "claims")


@functools.lru_cache(maxsize=None)
def _cross_checked() -> bool:
    cross_checks(**{n: _load_one(n) for n in CROSS_CHECKED})
    return True


def load(name: str):
    """The checked contents of ``data/<file>`` for ``name`` (cached; see :data:`SCHEMAS`).
    A DataFrame comes as a copy; a dict is the cached one (read-only by convention)."""
    doc = _load_one(name)
    if name in CROSS_CHECKED:
        _cross_checked()
    return doc.copy() if hasattr(doc, "iloc") else doc


def check_all() -> list[str]:
    """Load every input of :data:`SCHEMAS` and run the cross-checks (the door of ``reproduce``:
    a broken file stops it before anything runs) → the names checked."""
    for name in SCHEMAS:
        _load_one(name)
    _cross_checked()
    return list(SCHEMAS)


def cross_checks(**given) -> None:
    """Facts that live in one file and are used by another must agree.

    - every GPU named in prices.yaml, article_table.yaml and serving_model.yaml exists in
      hardware.yaml;
    - the article's numbers that are claims (claims.yaml) and model inputs
      (article_table.yaml: tok/s per node, tok/s per $/hour; prices.yaml: $/GPU-hour;
      article_prefill.yaml: the prefill rates and the TTFT speed-up) agree, so editing one
      without the other fails here.
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
    ap = get("article_prefill")
    pre = {"P5": [ap.prefill_tok_s_before_low, ap.prefill_tok_s_before_high, ap.prefill_tok_s_after],
           "P6": [ap.ttft_speedup_low, ap.ttft_speedup_high],
           "P8": [ap.prefill_tok_s_before_low, ap.prefill_tok_s_before_high]}
    for cid, quoted in pre.items():
        if cid in reg:
            want = [q.value for q in quoted]
            got = stated_numbers(reg[cid].claimed)
            if got != want:
                raise DataError(f"data/claims.yaml: {cid}.claimed ({reg[cid].claimed}) disagrees with "
                                f"data/article_prefill.yaml ({' / '.join(f'{v:g}' for v in want)})")
    if "T5" in reg:
        art = {p.gpu: p.usd_per_gpu_hour for p in pr.prices if p.tier == table.price_tier}
        want = " / ".join(f"{art[g]:.2f}" for g in ("mi355x", "b300", "b200") if g in art)
        if str(reg["T5"].claimed) != want:
            raise DataError(f"data/claims.yaml: T5.claimed ({reg['T5'].claimed}) disagrees with "
                            f"data/prices.yaml tier {table.price_tier!r} ({want})")


_STATED = re.compile(r"^~?(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?(k?)$")


def stated_numbers(claimed) -> list[float] | None:
    """The numbers in an article's wording of a range: ``"4-7k / ~13k"`` → [4000, 7000,
    13000], ``"2-3"`` → [2, 3]; None for other wording."""
    out = []
    for part in str(claimed).split(" / "):
        m = _STATED.match(part.strip())
        if not m:
            return None
        scale = 1000 if m.group(3) else 1
        out += [float(g) * scale for g in m.groups()[:2] if g is not None]
    return out


def clear_cache(*names: str) -> None:
    """Forget the loaded files (all, or only ``names``), the cross-checks, and everything
    :func:`cached` derived from them (tests that edit data files call this)."""
    for n in names or list(_LOADED):
        _LOADED.pop(n, None)
    _cross_checked.cache_clear()
    for c in _CACHES:
        c.cache_clear()


def check_finite(name: str, v, positive: bool = True) -> float:
    """A user-given number (NumPy's too): finite (and > 0 unless ``positive=False``) → float."""
    v = as_number(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{name} must be positive, got {v!r}")
    return float(v)


def check_count(name: str, v) -> int:
    """A user-given count: a positive int (not a bool; ``np.int64`` too) → int, else ValueError."""
    v = as_number(v, integer=True)
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return v
