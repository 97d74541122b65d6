"""The argument parser every ``python -m k3lab`` command uses: a usage mistake is one line on
stderr and exit status 2 (argparse would print the whole usage too). The operator's package
defines it (:mod:`k3lab_patches.oneline`, whose commands meet the same standard); the study
names its own commands."""

from __future__ import annotations

from k3lab_patches.oneline import OneLineParser as _OneLineParser


class OneLineParser(_OneLineParser):
    prefix = "k3lab"
