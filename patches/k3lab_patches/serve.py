"""``python -m k3lab_patches serve [--force] -- <sglang launch_server arguments>``.

(The k3lab study's ``python -m k3lab serve`` is the same command.) Applies the k3lab patches
(:func:`k3lab_patches.apply`), then runs sglang's own server
entry point in this same process, exactly as ``python -m sglang.launch_server <args>``
would (``sglang/launch_server.py``, 0.5.16: ``load_plugins()``, ``prepare_server_args``,
``run_server``, then ``kill_process_tree`` of the children). ``K3LAB_PATCHES=1`` is set
in the environment first, so the scheduler processes sglang spawns re-apply the patches
through k3lab's sglang plugin (:mod:`k3lab_patches.plugin`).

Everything after ``--`` goes to sglang untouched. Before it, k3lab's own options:
``--force`` (apply a patch to a release or build that has the bug but that the patch was not
written for: ``needed, untested`` in :func:`k3lab_patches.status`) and ``--dry-run``
(apply, print what would run, do not start the server).
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Sequence

from . import plugin

USAGE = ("usage: python -m k3lab_patches serve [--force] [--dry-run] -- <sglang launch_server args>\n"
         "  e.g. python -m k3lab_patches serve -- --model-path moonshotai/Kimi-K3 --tp 8 \\\n"
         "         --speculative-algorithm DSPARK --speculative-draft-model-path <draft>")
K3LAB_OPTIONS = ("--force", "--dry-run")


def split_argv(argv: Sequence[str]) -> tuple[dict, list[str]]:
    """``[k3lab options] -- [sglang args]`` → ({force, dry_run}, sglang args, untouched).

    ValueError for an unknown k3lab option or a missing ``--`` before sglang's arguments.
    """
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        mine, theirs = argv[:cut], argv[cut + 1:]
    else:
        mine, theirs = argv, []
    unknown = [a for a in mine if a not in K3LAB_OPTIONS]
    if unknown:
        raise ValueError(f"unknown k3lab_patches serve option(s) {unknown}; sglang's arguments go "
                         f"after '--'.\n{USAGE}")
    return {"force": "--force" in mine, "dry_run": "--dry-run" in mine}, theirs


def run_sglang_server(args: list[str]) -> int:
    """sglang's ``launch_server`` main, in this process (0.5.16's sequence, not its code)."""
    from sglang.launch_server import run_server
    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.utils import kill_process_tree

    load_plugins()
    server_args = prepare_server_args(args)
    try:
        run_server(server_args)
    finally:
        kill_process_tree(os.getpid(), include_parent=False)
    return 0


def main(argv: Sequence[str] | None = None,
         runner: Callable[[list[str]], int] | None = None) -> int:
    """Entry point of ``python -m k3lab_patches serve``; ``runner`` replaces the server in tests."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip() + "\n\n" + USAGE)
        return 0
    try:
        opts, sglang_args = split_argv(argv)
    except ValueError as e:
        print(f"k3lab_patches serve: error: {e}", file=sys.stderr)
        return 2
    if not sglang_args:
        print(f"k3lab_patches serve: error: no sglang arguments after '--'\n{USAGE}", file=sys.stderr)
        return 2
    from . import UnsupportedSglangVersion, apply  # the package imports this module

    os.environ[plugin.ENV_ENABLE] = "1"
    if opts["force"]:
        os.environ[plugin.ENV_FORCE] = "1"
    try:
        patched = apply(force=opts["force"])
    except (UnsupportedSglangVersion, RuntimeError, ImportError, AttributeError) as e:
        # a refusal, or sglang's backend failing to import: one line (apply rolled back)
        print(f"k3lab_patches serve: error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        return 2
    print(f"[k3lab] patched: {', '.join(patched) or 'nothing (already bound)'}", file=sys.stderr)
    if opts["dry_run"]:
        print("[k3lab] dry run: would run sglang.launch_server " + " ".join(sglang_args))
        return 0
    return int((runner or run_sglang_server)(sglang_args) or 0)
