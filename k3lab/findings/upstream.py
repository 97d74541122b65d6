"""What upstream changed per sglang release, and the pull request behind it
(``data/sglang_upstream_changes.yaml``), as a column beside a finding's half of the release matrix."""

from __future__ import annotations

from .. import data


def changes_by_release(finding: str) -> dict[str, str]:
    """release → "PR #n (confidence): change; …" for one finding (``spec_decode``, ``prefill``,
    ``memory``); a change without a known PR reads "PR not found: change"."""
    out: dict[str, list[str]] = {}
    for c in data.load("upstream_changes").changes:
        if c.finding != finding:
            continue
        pr = f"PR #{c.pr} ({c.confidence})" if c.pr is not None else "PR not found"
        out.setdefault(c.release, []).append(f"{pr}: {c.change}")
    return {r: "; ".join(v) for r, v in out.items()}


def with_upstream_column(df, finding: str):
    """``df`` (one row per release, column ``sglang``) with a column ``upstream change (PR)``."""
    by = changes_by_release(finding)
    return df.assign(**{"upstream change (PR)": [by.get(v, "") for v in df["sglang"]]})
