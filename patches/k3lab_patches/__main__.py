"""``python -m k3lab_patches <status | verify | serve> …``: the operator's commands.

* ``status``: the installed sglang's version and, per patch, ``needed`` / ``needed,
  untested`` (``--force`` required) / ``fixed in X`` / ``unknown`` (:func:`k3lab_patches.status`),
  with the release that fixed it upstream; whether the release can run Kimi K3 and which attention
  backend it picks for it on ROCm (:func:`k3lab_patches.release_facts`).
* ``verify [--device D] [--vocab N] [--force]``: sglang's speculative verifier as installed,
  then patched, against a reference (:mod:`k3lab_patches.verify`).
* ``serve [--force] [--dry-run] -- <sglang launch_server args>``: apply, then run sglang's
  server in this process (:mod:`k3lab_patches.serve`).
"""

from __future__ import annotations

import sys

USAGE = "usage: python -m k3lab_patches {status | verify [--device D] [--vocab N] [--force] | serve [--force] [--dry-run] -- <sglang args>}"


def status_line(p, version: str) -> str:
    """One patch's status with the release that fixed it upstream (the way out without a patch)."""
    from . import status, upstream_fix

    s = status(p, version)
    if s.startswith("needed"):
        fix = upstream_fix(p, version)
        way = (f"; fixed upstream in sglang {fix}: upgrading removes the need" if fix else "; no measured release fixes it")
        return f"{s}{' (apply with --force)' if s == 'needed, untested' else ''}{way} ({p.fixed_by})"
    if s.startswith("fixed in"):
        return f"not needed: {s} ({p.fixed_by})"
    return f"{s}: this release is not in the measured matrix; nothing is inferred, the patch refuses"


def status_main(argv) -> int:
    """Print each patch's status for the installed sglang, the release that fixed each upstream,
    and what the release means for Kimi K3 → 0 (2 if sglang is missing)."""
    from . import _patches, force_note, release_facts, sglang_version

    if argv:
        print(f"k3lab_patches status: error: no arguments expected, got {argv}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        version = sglang_version()
    except RuntimeError as e:
        print(f"k3lab_patches status: error: {e}", file=sys.stderr)
        return 2
    print(f"sglang {version}")
    for p in _patches():
        print(f"  {p.name}: {status_line(p, version)}")
    for fact in release_facts(version):
        print(f"  {fact}")
    print(f"note: {force_note()}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip() + "\n\n" + USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "status":
        return status_main(rest)
    if cmd == "verify":
        from .verify import main as verify_main

        return verify_main(rest)
    if cmd == "serve":
        from .serve import main as serve_main

        return serve_main(rest)
    print(f"k3lab_patches: unknown command {cmd!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
