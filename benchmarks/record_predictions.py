"""Record the serving model's predictions for the deployments no public run has measured.

    python benchmarks/record_predictions.py          (after `make serving-fit`)

Writes data/predictions/<today>-model-v<N>.yaml from the committed fit (k3lab.serving.score);
refuses to overwrite an existing recording: predictions on record are never edited, and
`python -m k3lab score` scores them against public figures added later.
"""

from __future__ import annotations

import datetime
import sys

from k3lab.paths import data_dir
from k3lab.pipeline import git_commit
from k3lab.serving import committed, score


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python benchmarks/record_predictions.py  (no arguments)", file=sys.stderr)
        return 2
    date = datetime.date.today().isoformat()
    path = data_dir() / "predictions" / f"{date}-model-v{committed.MODEL_VERSION}.yaml"
    path.parent.mkdir(exist_ok=True)
    doc = score.record(date, git_commit(), "python benchmarks/record_predictions.py")
    try:
        score.write_record(path, doc)
    except ValueError as e:
        print(f"record_predictions: {e}", file=sys.stderr)
        return 2
    print(f"recorded {len(doc['predictions'])} predictions in data/predictions/{path.name} (of "
          f"{len(score.questions())} questions; the others a public run has measured)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
