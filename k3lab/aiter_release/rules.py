"""The public queries over AITER's head rules: all rules, one rule, accepts, and the TP table.

:func:`head_rules` derives every family × arch :class:`~k3lab.aiter_release.families.HeadRule`
from an installed release (cached per folder and head dims); :func:`rule` and
:func:`accepts` look one up; :func:`tp_table` tabulates heads per rank, acceptance and the
padding each TP degree would need.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..data import check_count
from .families import FAMILIES, HeadRule, derive_all
from .files import AITER_PIN, ARCHS, Release, dist_version, installed_release


@lru_cache(maxsize=8)
def _rules_cached(folder: str, version: str, qk_head_dim: int, v_head_dim: int) -> tuple[HeadRule, ...]:
    return derive_all(Release(version, Path(folder)), qk_head_dim, v_head_dim)


def _release(release_dir) -> Release:
    if isinstance(release_dir, Release):
        return release_dir
    if release_dir is None:
        return installed_release()
    folder = Path(release_dir)
    return installed_release(dist_version(folder) if folder.is_dir() else AITER_PIN, folder)


def head_rules(release_dir=None, qk_head_dim: int = 192, v_head_dim: int = 128) -> tuple[HeadRule, ...]:
    """Derive every family × arch head rule from an installed release → tuple of :class:`HeadRule`.

    ``release_dir``: a :class:`Release`, a folder (a ``pip --target`` install), or None for
    :func:`installed_release`. ``qk_head_dim``/``v_head_dim``: the MHA-form prefill head dims
    the flash-attention families are judged for (Kimi K3: 192 / 128). A missing file raises
    :class:`ReleaseFileMissing` naming it; a check the parser does not recognise raises
    ValueError naming the file and line, rather than guessing.
    """
    rel = _release(release_dir)
    return _rules_cached(str(rel.folder), rel.version, int(qk_head_dim), int(v_head_dim))


def rule(family: str, arch: str, release_dir=None) -> HeadRule:
    """The :class:`HeadRule` of one family on one arch (ValueError for unknown names)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown kernel family {family!r}; known: {', '.join(FAMILIES)}")
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; known: {', '.join(ARCHS)}")
    for r in head_rules(release_dir):
        if r.family == family and r.arch == arch:
            return r
    raise AssertionError("unreachable: every family has a rule per arch")  # pragma: no cover


def accepts(family: str, arch: str, heads: int, release_dir=None) -> bool:
    """Whether ``heads`` q heads per rank are accepted by ``family`` on ``arch``."""
    return rule(family, arch, release_dir).accepts(heads)


def tp_table(total_heads: int = 96, tps=(1, 2, 4, 8, 16, 32), release_dir=None,
             families=FAMILIES):
    """Per TP degree × family × arch: heads per rank, accepted, smallest accepted padding.

    Columns: ``tp``, ``heads_per_rank`` (q heads per GPU = total_heads / tp), ``family``,
    ``arch``, ``accepted`` (bool), ``padded_heads`` (smallest accepted count ≥ heads per
    rank, or None when the family has none), ``extra_attention_flops_pct``
    ((padded − real) / real × 100, the attention FLOPs spent on zero heads). → pandas DataFrame.
    """
    total_heads = check_count("heads per rank", total_heads)
    rules = {(r.family, r.arch): r for r in head_rules(release_dir)}
    rows = []
    for tp in tps:
        tp = check_count("heads per rank", tp)
        if total_heads % tp:
            raise ValueError(f"TP {tp} does not divide {total_heads} heads")
        n = total_heads // tp
        for fam in families:
            for arch in ARCHS:
                r = rules[(fam, arch)]
                m = r.padded(n)
                rows.append({"tp": tp, "heads_per_rank": n, "family": fam, "arch": arch,
                             "accepted": r.accepts(n), "padded_heads": m,
                             "extra_attention_flops_pct": None if m is None else round(100.0 * (m - n) / n, 4)})
    df = pd.DataFrame(rows)
    df["padded_heads"] = df["padded_heads"].astype("Int64")
    df["extra_attention_flops_pct"] = df["extra_attention_flops_pct"].astype("Float64")
    return df
