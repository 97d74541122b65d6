"""Which sglang release has the bugs the patches fix: the release matrix's verdicts, shipped as data.

``release_verdicts.json`` (beside this module) holds one row per sglang release the k3lab study
measured, oldest first: ``{"sglang": "0.5.16", "topk_renorm": true, "aiter_head_pad": true}``,
``true`` meaning that release has the bug the patch of that name fixes, and two release facts:
``kimi_k3_module`` (the release ships Kimi K3's model module) and ``hip_default_attention_k3_tp8``
(the attention backend it picks on HIP for Kimi K3's 12 heads per rank). It is written by the
study from its measured release matrix (``data/measured/cpu-2core/sglang_release_matrix.json``,
``benchmarks/sglang_release_matrix.py``; ``k3lab.release_status.patch_verdicts``), and a study
test fails when the two disagree, so the verdicts have one source. Standard library only.

Versions are ordered as PEP 440 orders them, for the subset sglang uses: a release
(``0.5.16``), a post-release (``0.5.15.post1``), a pre-release (``0.5.17rc1``), a development
build (``0.5.17.dev12``) and a local label (``+g1a2b3c4``, ``+rocm700``). A *build* — a version
with a ``.devN`` or ``+local`` part, which is what ``setuptools-scm`` gives an sglang installed
from a git checkout (a branch image) — is not a release the matrix measured; :func:`lookup`
judges it by the newest measured release at or below it (:func:`built_on`).
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

VERDICTS = "release_verdicts.json"

_VERSION = re.compile(
    r"v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc)(?P<pre_n>\d*))?"
    r"(?:[-_.]?post(?P<post>\d*))?"
    r"(?:[-_.]?dev(?P<dev>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?",
    re.IGNORECASE)
_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}


def parse(version: str) -> dict:
    """``version`` → its parts ``{epoch, release, pre, post, dev, local}``; ValueError if not PEP 440
    (a leading ``v`` and an epoch ``N!`` are PEP 440's: ``v0.5.23`` is ``0.5.23``, ``0!0.5.23`` too,
    ``1!0.5.23`` comes after every release of epoch 0, which is every sglang release)."""
    m = _VERSION.fullmatch(str(version).strip())
    if not m:
        raise ValueError(f"{version!r} is not a PEP 440 version")
    release = tuple(int(x) for x in m["release"].split("."))
    while len(release) > 1 and release[-1] == 0:  # 0.5 == 0.5.0
        release = release[:-1]
    pre = (_PRE_ORDER[m["pre"].lower()], int(m["pre_n"] or 0)) if m["pre"] else None
    post = int(m["post"] or 0) if m["post"] is not None else None
    dev = int(m["dev"] or 0) if m["dev"] is not None else None
    return {"epoch": int(m["epoch"] or 0), "release": release, "pre": pre, "post": post, "dev": dev,
            "local": m["local"].lower() if m["local"] else None}


def version_key(version: str) -> tuple:
    """Sort key in PEP 440 order (``0.5.17.dev3 < 0.5.17rc1 < 0.5.17 < 0.5.17+g1 < 0.5.17.post1``).

    ValueError for a string that is not a version.
    """
    v = parse(version)
    if v["pre"] is None and v["post"] is None and v["dev"] is not None:
        pre = (-1, 0)  # X.devN comes before every pre-release of X
    else:
        pre = v["pre"] if v["pre"] is not None else (3, 0)
    post = -1 if v["post"] is None else v["post"]
    dev = (0, v["dev"]) if v["dev"] is not None else (1, 0)
    local = () if v["local"] is None else tuple(
        (1, int(p), "") if p.isdigit() else (0, 0, p) for p in re.split(r"[-_.]", v["local"]))
    return (v["epoch"], v["release"], pre, post, dev, (v["local"] is not None, local))


def is_build(version: str) -> bool:
    """A development build, a locally labelled one or a post-release (``.devN``, ``+local``,
    ``.postN``): not a release the matrix measures, judged by the measured release below it (a
    post-release of a measured release is that release rebuilt: ``0.5.19.post1`` is judged by
    0.5.19, as ``0.5.19+rocm`` is)."""
    try:
        v = parse(version)
    except ValueError:
        return False
    return v["dev"] is not None or v["local"] is not None or v.get("post") is not None


@functools.lru_cache(maxsize=1)
def load() -> dict:
    """The shipped verdicts ``{"source": …, "rows": [{"sglang": …, <patch>: bool}, …]}``."""
    text = resources.files(__package__).joinpath(VERDICTS).read_text(encoding="utf-8")
    return json.loads(text)


def built_on(version: str, doc: dict | None = None) -> str | None:
    """For a build: the newest measured release at or below it (None if there is none)."""
    doc = load() if doc is None else doc
    key = version_key(version)
    below = [r["sglang"] for r in doc["rows"] if version_key(r["sglang"]) <= key]
    return below[-1] if below else None


def lookup(version: str, doc: dict | None = None) -> dict:
    """The verdict row for ``version``.

    A measured release → its row. A build (:func:`is_build`) → the row of the release it is
    built on, with ``"built_on"`` naming that release. Anything else (a release the matrix
    never measured, a string that is not a version) → ``{"sglang": version, "status":
    "unknown"}``: nothing is inferred for it.
    """
    doc = load() if doc is None else doc
    try:
        key = version_key(version)
    except ValueError:
        key = None
    for row in doc["rows"]:  # by PEP 440 equality: v0.5.23, 0.5.23.0 and 0!0.5.23 are 0.5.23
        if row["sglang"] == version or (key is not None and version_key(row["sglang"]) == key):
            return row
    base = built_on(version, doc) if is_build(version) else None
    if base is not None:
        return {**next(r for r in doc["rows"] if r["sglang"] == base), "built_on": base}
    return {"sglang": version, "status": "unknown",
            "reason": "release not in the matrix (not measured); nothing is inferred for it"}


def measured(doc: dict | None = None) -> list[str]:
    """The releases the verdicts cover, oldest first."""
    return [r["sglang"] for r in (load() if doc is None else doc)["rows"]]
