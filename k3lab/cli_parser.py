"""The argument parser every ``python -m k3lab`` command uses: a usage mistake is one line on
stderr and exit status 2 (argparse would print the whole usage too); the operator's package
defines that part (:mod:`k3lab_patches.oneline`, whose commands meet the same standard). Flags are
never abbreviated (``allow_abbrev=False``: ``--price`` is not silently ``--price-tier``), and an
unknown flag is named first, with the nearest known one — before argparse would report a
required flag as missing because the user misspelt it (``--concurency``)."""

from __future__ import annotations

import sys

from k3lab_patches.oneline import OneLineParser as _OneLineParser

from .spelling import did_you_mean


class OneLineParser(_OneLineParser):
    """``hints``: flag a user may type → what to say instead (e.g. ``--price``: the two flags it
    could mean; ``--spec``: the command that answers it), for names too far from any flag for
    "did you mean" or that belong to another command; printed in brackets after the flag."""

    prefix = "k3lab"

    def __init__(self, *args, hints: dict | None = None, **kw):
        super().__init__(*args, **kw)
        self.hints = dict(hints or {})

    def parse_known_args(self, args=None, namespace=None):
        argv = list(sys.argv[1:] if args is None else args)
        known = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        for tok in argv:
            if tok == "--":  # what follows belongs to another program
                break
            flag = tok.split("=", 1)[0]
            if tok.startswith("--") and flag not in known:
                # compared without the dashes, which every flag shares and which would make any two look alike
                # a flag whose words hold every word typed (--mamba-ratio: --mamba-full-memory-ratio) is the one
                # meant, however far apart the spellings are
                words = set(flag[2:].split("-"))
                holds = [k for k in known if words <= set(k[2:].split("-"))]
                hint = (f" ({self.hints[flag]})" if flag in self.hints else
                        f" (did you mean '{holds[0]}'?)" if len(holds) == 1 else
                        did_you_mean(flag[2:], [k[2:] for k in known]).replace(" '", " '--"))
                self.error(f"unknown flag {flag}{hint}")
        return super().parse_known_args(argv, namespace)
