"""Fit the serving model on the public measurements and write data/serving_fit.yaml.

    python benchmarks/serving_fit.py          (or: make serving-fit)

Takes about a minute on 2 cores: one least-squares fit per family, and one more per source for
the leave-one-source-out validation (k3lab.serving.calibration). The output is committed; k3lab
refuses it when an input file changed since.
"""

from __future__ import annotations

import datetime
import sys

from k3lab.paths import data_dir
from k3lab.serving import calibration, committed


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python benchmarks/serving_fit.py  (no arguments)", file=sys.stderr)
        return 2
    date = datetime.date.today().isoformat()
    committed.write_fit(data_dir() / "serving_fit.yaml", date, "python benchmarks/serving_fit.py")
    print(calibration.summary().to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
