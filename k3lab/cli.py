"""``python -m k3lab <command>``: the study's command line.

Commands register themselves in :data:`COMMANDS` (name → (help, module:function)); each
function takes ``argv`` (the arguments after the command) and returns an exit code.
Modules are imported only when their command runs, so ``python -m k3lab --help`` is fast.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "reproduce": ("run every notebook with papermill under a profile", "k3lab.pipeline:main"),
    "report": ("render results/report.html from results/", "k3lab.report:main"),
    "fit": ("memory fit of Kimi K3 on a GPU configuration", "k3lab.memory:cli_main"),
    "serve": ("apply the k3lab patches, then run sglang's server in this process", "k3lab.patches.serve:main"),
    "bench": ("drive sglang.bench_serving over a concurrency sweep (live)", "k3lab.live.bench_serving:cli_main"),
}


def _usage() -> str:
    lines = ["usage: python -m k3lab <command> [args...]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (help_, _) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"k3lab: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    mod_name, func_name = COMMANDS[name][1].split(":")
    func = getattr(importlib.import_module(mod_name), func_name)
    return int(func(rest) or 0)
