"""The committed transcript of the real-sglang experiments (replayed by notebook 02) is
regenerated here and must equal what is committed, so it cannot go stale silently."""

import json

from k3lab.paths import MEASURED_DIR
from k3lab.probes import topk_repro

COMMITTED = MEASURED_DIR / "cpu-2core" / "sglang_topk_repro.json"


def test_transcript_matches_committed():
    fresh = json.loads(json.dumps(topk_repro.transcript(), sort_keys=True, default=str))
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert fresh == committed, "re-run: .venv-sglang/bin/python benchmarks/sglang_topk_repro.py"


def test_transcript_tells_the_story():
    doc = json.loads(COMMITTED.read_text(encoding="utf-8"))
    rows = {(r["state"], r["mix"]): r for r in doc["rows"]}
    mix = "top_k=20 mixed with unrestricted"
    assert rows[("0.5.16", mix)]["outcome"] == "TypeError"
    assert rows[("pr32621", mix)]["outcome"] == "NameError"
    assert rows[("patched", mix)]["outcome"] == "ok" and rows[("patched", mix)]["matches_reference"]
    assert all(r["outcome"] == "ok" and r["matches_reference"] for r in doc["rows"] if r["state"] == "patched")
    assert doc["crash"]["last_line"].endswith("Did you mean: 'top_p_renorm_prob'?")
