"""The README opens with the article's bottom line, then its "Choosing hardware for Kimi K3" section
shows real, current outputs.

Each command is shown in README.md as ``$ python -m k3lab <args>`` followed by its output,
verbatim; these tests run the same command and fail when the README's copy is stale (paste
the new output). The decision sentences under it are ``k3lab.decision.headline``'s.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from k3lab.paths import REPO_ROOT

#: the commands of the section, exactly as README.md shows them after ``$ python -m k3lab ``
SHOWN = [
    "quote --input-len 8192 --output-len 1024 --usd-per-gpu-hour mi355x=3 --usd-per-gpu-hour b300=5.5 --max-tpot 50",
    "compare --gpu mi355x --gpu b300 --top 3 --price-tier quoted_rates --price-tier rental_index",
    'predict --layout "8xmi355x tp8 [aiter-k3-opt]" --input-len 1024 --output-len 400 --max-tpot 50',
    "fit --gpu mi355x --gpus 8 --tp 8 --variant aiter-k3-opt",
]


def _readme() -> str:
    return (REPO_ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("shown", SHOWN, ids=lambda s: s.split()[0])
def test_readme_hardware_example_is_current(shown):
    """``$ python -m k3lab <args>`` and its whole output stand verbatim in a README code block."""
    out = subprocess.run([sys.executable, "-m", "k3lab", *shlex.split(shown)],
                         capture_output=True, text=True, check=True, cwd=REPO_ROOT).stdout
    assert f"$ python -m k3lab {shown}\n{out.strip()}\n```" in _readme(), \
        f"README.md's output of `python -m k3lab {shown}` is stale: paste the current one"


def test_readme_opens_with_the_renters_answer_then_the_bottom_line_then_the_hardware_answer():
    """A newcomer reads the renter's answer on one screen (issue 38: the quote, within the first 40 lines), the
    article's bottom line judged, then the three commands, before "## Reproduce"; reference material lives
    under docs/ and the README stays a front door (issue 31: at most ~250 lines)."""
    text = _readme()
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads[:3] == ["## Renting GPUs for Kimi K3: the answer on one screen", "## The article's bottom line, judged",
                         "## Choosing hardware for Kimi K3: the answer in three commands"]
    first = "\n".join(text.splitlines()[:40])
    assert "$ python -m k3lab quote " in first and "verdict: At your prices" in first
    assert heads.index("## Reproduce") > 1 and "## Test" in heads
    assert len(text.splitlines()) <= 250
    for doc in ("findings", "serving-model", "cli", "reproduce", "operators", "gpu-benchmarks", "glossary", "layout"):
        assert f"(docs/{doc}.md)" in text and (REPO_ROOT / "docs" / f"{doc}.md").exists(), doc


def _section(text: str, head: str) -> str:
    assert f"## {head}" in text
    return text.split(f"## {head}", 1)[1].split("\n## ", 1)[0]


def test_readme_answers_whether_the_padding_is_still_needed():
    para = _section(_readme(), "Is the 12→16 head padding still needed, and at what cost?")
    assert "16/12 = 1.33×" in para and "0.5.19" in para
    # issue 38: the release, and the flag without which no release runs the fast kernel for K3 on ROCm
    assert "--attention-backend aiter" in para and "--force" in para


def test_readme_answers_whether_speculative_decoding_still_crashes():
    """Q5 names the releases (from the release matrix: the crash in 0.5.16, fixed in 0.5.17), the branch
    images' NameError, the backend flag, and that a K3 image needs --force."""
    para = _section(_readme(), "Does speculative decoding still crash on ROCm?")
    assert "Not from sglang 0.5.17" in para and "NameError: name 'top_k_renorm_prob' is not defined" in para
    assert "--force" in para and "--attention-backend aiter" in para and "k3lab_patches status" in para


def test_readme_decision_headline_is_current():
    """The decision sentences the README quotes are what k3lab.decision says now."""
    from k3lab import decision

    lines = decision.headline(decision.decide("kimi-k3", input_len=1024, output_len=400))
    text = _readme()
    missing = [x for x in lines if x not in text]
    assert not missing, f"README.md's decision sentences are stale: {missing}"
