"""The schema of every file under ``data/``, one class per document (pydantic models for
the YAML files; for JSON, CSV and JSONL the kinds of :mod:`.files`).

Loaded and checked by :mod:`k3lab.data` (which turns a validation error into one line
naming the file and the field). Conventions: a physical quantity is ``{value, source}``
with ``value`` finite and positive; ``source`` names an entry of the file's ``sources``
(checked for every file with a ``sources`` table); units are in the field names.

One module per family of files: :mod:`.base` (field types, sources), :mod:`.market`
(hardware, prices), :mod:`.article` (the article's table, claims, prefill figures),
:mod:`.serving` (serving model), :mod:`.sglang` (sharding, storage overrides, draft,
start-up logs, upstream changes, serving rules), :mod:`.public` (public measurements) —
re-exported here — and, imported by :mod:`k3lab.data`
directly, :mod:`.model` (the published model configs), :mod:`.measured` (the CSV tables,
bench_serving JSONL, ``*.meta.json``) and :mod:`.transcripts` (the sglang transcripts).
"""

from __future__ import annotations

from .base import (Count, Fraction, Label, NonNegative, NonNegativeInt, Num, NumOrNone, Positive, PositiveInt, Source, Text)  # noqa: F401
from .market import (Electricity, GpuEntry, Hardware, Link, PRICE_KINDS, PRICE_UNIT, Price, Prices, PublicLink,  # noqa: F401
                     PublicLinks, Tier)
from .article import (ArticlePrefill, ArticleTable, ClaimEntry, Claims, DerivedPoint, METHODS, Quoted, TableConfig, Tolerance,
                      Workload)  # noqa: F401
from .public import Measurement, PublicMeasurements, PublicSource, SpecSetting  # noqa: F401
from .serving import (Assumed, ExtraDeployment, PredictionSeals, Predictions, ServingFit, ServingModel, ServingValidation)  # noqa: F401
from .sglang import (STARTUP_QUANTITIES, DraftModel, Override, ServingRule, ServingRules, ShardOptions, ShardRule,
                     Sharding, StartupLog, StartupLogs, StorageOverrides, UpstreamChange, UpstreamChanges)  # noqa: F401

