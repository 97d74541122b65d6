"""``python -m k3lab_patches <status | verify | serve> …``: the operator's commands.

* ``status``: the installed sglang's version and, per patch, ``needed`` / ``needed,
  untested`` (``--force`` required) / ``fixed in X`` / ``unknown`` (:func:`k3lab_patches.status`).
* ``verify [--device D] [--vocab N] [--force]``: sglang's speculative verifier as installed,
  then patched, against a reference (:mod:`k3lab_patches.verify`).
* ``serve [--force] [--dry-run] -- <sglang launch_server args>``: apply, then run sglang's
  server in this process (:mod:`k3lab_patches.serve`).
"""

from __future__ import annotations

import sys

USAGE = "usage: python -m k3lab_patches {status | verify [--device D] [--vocab N] [--force] | serve [--force] [--dry-run] -- <sglang args>}"


def status_main(argv) -> int:
    """Print each patch's status for the installed sglang → 0 (2 if sglang is missing)."""
    from . import _patches, sglang_version, status

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
        print(f"  {p.name}: {status(p, version)}  ({p.fixed_by})")
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
