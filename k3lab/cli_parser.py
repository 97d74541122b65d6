"""The argument parser every ``python -m k3lab`` command uses: a usage mistake is one line on
stderr and exit status 2 (argparse would print the whole usage too)."""

from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"k3lab {self.prog.split()[-1]}: error: {message}", file=sys.stderr)
        raise SystemExit(2)
