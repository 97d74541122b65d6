"""``python -m k3lab <command>``: the study's command line.

Commands register themselves in :data:`COMMANDS` (name → (help, module:function)); each
function takes ``argv`` (the arguments after the command) and returns an exit code.
Modules are imported only when their command runs, so ``python -m k3lab --help`` is fast.
A user's mistake (a bad argument, a broken data file, a path that cannot be written) ends
in one line on stderr and exit status 2; Ctrl-C in one line and 130 (``K3LAB_DEBUG=1``
shows the traceback instead). A reader that stops reading (``| head -1``) is no mistake: the
command goes on quietly and exits with the status it documents (:class:`QuietStdout`).
"""

from __future__ import annotations

import importlib
import os
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "reproduce": ("run every notebook with papermill under a profile", "k3lab.pipeline:main"),
    "report": ("render results/report.html from results/", "k3lab.report:main"),
    "fit": ("memory fit of a model on a GPU configuration", "k3lab.fit_cli:main"),
    "compare": ("every GPU x layout that holds a request, priced on the serving model: the cheapest per price source", "k3lab.compare_view:cli_main"),
    "quote": ("a renter's answer on one screen: per GPU the cheapest layout at your latency target, $/M with its "
              "band, the verdict on your prices", "k3lab.quote:cli_main"),
    "predict": ("serving-model TPOT, TTFT and tok/s for a deployment and workload, with its validated band",
                "k3lab.serving.cli:cli_main"),
    "score": ("the serving model's predictions on record scored against the public figures added since",
              "k3lab.serving.score:cli_main"),
    "serve": ("apply the k3lab patches, then run sglang's server in this process", "k3lab_patches.serve:main"),
    "bench": ("drive sglang.bench_serving over a concurrency sweep (live)", "k3lab.live.bench_serving:cli_main"),
}


class QuietStdout:
    """``sys.stdout`` for one command: when the reader of the pipe went away (``| head``), its
    writes and flushes go to ``/dev/null`` from then on (Python's documented BrokenPipeError
    recipe, "Note on SIGPIPE" in the ``signal`` module's docs) instead of raising, so the
    command finishes and returns the exit status it documents (``fit --check``: 0 or 1), with
    nothing on stderr; the interpreter's last flush then succeeds too. Everything else is the
    wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream

    def _gone(self) -> None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()
            self._stream.flush()  # what was buffered goes to /dev/null now

    def __getattr__(self, name):
        return getattr(self._stream, name)


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
    stdout = sys.stdout
    if name != "serve":  # serve hands this process to sglang's server, its stdout as it is
        sys.stdout = QuietStdout(stdout)
    try:
        func = getattr(importlib.import_module(mod_name), func_name)
        return int(func(rest) or 0)
    except KeyboardInterrupt:
        print(f"k3lab {name}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OverflowError, OSError) as e:  # a user's mistake (bad data file, a number past range): one line
        if os.environ.get("K3LAB_DEBUG"):
            raise
        print(f"k3lab {name}: error: {e}", file=sys.stderr)
        return 2
    finally:
        sys.stdout.flush()  # what is still buffered, through QuietStdout
        sys.stdout = stdout
