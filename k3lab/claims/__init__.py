"""The claims registry, the verdict rules, the per-notebook recorder and the ledger.

Every claim of the article lives in ``data/claims.yaml`` with the article's value, its unit,
the **method** k3lab checks it by, the **rule** that turns what was found into a verdict,
and the **tolerance** that rule uses. A notebook (through its finding module) hands numbers
to :meth:`Recorder.judge`; the rule named in the registry decides the verdict, capped by the
method. Nothing else in k3lab or in a notebook writes a verdict.

Methods (:data:`METHODS`): ``measured`` (ran here on real code or hardware), ``derived``
(computed independently from primary sources), ``cited`` (a third party's public measurement
of the claim's setting, its differences named: measured, but not here), ``arithmetic`` (recomputed from the
article's own numbers), ``emulated`` (real code in a state the study built), ``modelled``
(an analytic model with assumptions; the band or bound is stated), ``unchecked``.

Verdicts (:data:`VERDICTS`): what a rule decides (:data:`RULE_VERDICTS`), capped by the
method (:func:`cap`), each counted as one of seven base verdicts (:data:`BASE_VERDICTS`, through
:func:`base_verdict`). Rules cut both ways: mirrored evidence gives the mirrored verdict at the same
strength (:data:`STRENGTH`; ``tests/test_claims_symmetry.py``). A negative verdict needs evidence as
strong as a positive one, and carries the kind of correction (:data:`CORRECTION_KINDS`) and the
author's strongest reply with why the verdict stands (:func:`rebuttal`):

- ``reproduced``: an independent check (method ``measured`` or ``derived``) agrees within
  the stated tolerance. Nothing else can reach it.
- ``consistent``: the evidence agrees but cannot establish the claim by its method
  (``arithmetic`` on the article's own numbers, a ``cited`` measurement made by someone else,
  a ``modelled`` band that is narrow enough to tell the claim from its negation, a range of
  independent prices that places a rate but cannot establish it, evidence that reaches only
  part of the claim). Two qualified forms: ``consistent (rounded inputs)`` (arithmetic that
  agrees only on the article's own *rounded* inputs, its 48 / 33, while the exact computation
  rounds to another number) and ``consistent (emulated)`` (real code in a state the study built).
- ``inconsistent with the emulation`` / ``with the model`` / ``with public measurements`` /
  ``with the evidence`` (base ``inconsistent``): an emulation, a model, a third party's
  measurement, or evidence that can place but not establish (a few independent prices, a proxy,
  the article's throughput at independent prices) disagrees. It can no more show the article
  wrong than its agreement could show it right, so it never reads ``discrepancy`` or
  ``corrected`` (:data:`METHOD_QUALIFIED`); a correction it finds stays in the notes.
- ``turns on the price``: readings split, the claim holding under some and reversed under
  others (T20, T21: the direction of perf/$ under different price pairs); never a reversal.
- ``discrepancy``: independent evidence (or the article's own numbers) disagrees; the
  evidence gives the size of the difference.
- ``corrected``: the article's statement is wrong in a way independent evidence (or its own
  numbers) pins down (its unit, a contradiction with its own numbers, what really happens instead).
- ``not reproducible here``: nothing here can confirm or refute it (an upper or lower bound, a
  band too wide, a setting the article leaves unstated, hardware we lack); the notes say what
  live mode measures.

"About N" (one rule, :func:`same_as_stated`): a number the article gives as "about",
"roughly", "near", "around" or "~" agrees when the value rounds half up to it at the last
significant digit it was written with (``tolerance: {digits: true}`` in data/claims.yaml;
the rounding rule reads the same digits).

Layout: :mod:`~k3lab.claims.rules` (the rules and the cap), :mod:`~k3lab.claims.registry`
(the claims and the columns), :mod:`~k3lab.claims.record` (judging, recording),
:mod:`~k3lab.claims.ledger` (reading the records back, the ledger). Everything public is
re-exported here: ``from k3lab import claims; claims.judge(...)``.
"""

from __future__ import annotations

from .ledger import (corrections_by_kind, ledger, plain_answer, read_records, verdict_literals,
                     verdicts_by_method)
from .record import Record, Recorder, judge, rebuttal, verdict
from .registry import (LEDGER_COLUMNS, LEDGER_VIEW, METHODS, RECORD_COLUMNS, SUMMARY_COLUMNS, Claim, get,
                       registry)
from .tolerance import tolerance_interval
from .rules import (BAND_MAX_RATIO, BASE_VERDICTS, CORRECTION_KINDS, INCONSISTENT_EVIDENCE, INDEPENDENT,
                    METHOD_QUALIFIED, NEGATIVE_BASE, QUALIFIED, RULE_VERDICTS, RULES, SELF_CHECK_RULES, STRENGTH, TURNS,
                    VERDICTS, agrees, base_verdict, cap, decimals_of, is_negative, round_half_up, same_as_stated,
                    stated_exponent)

__all__ = ["BAND_MAX_RATIO", "BASE_VERDICTS", "CORRECTION_KINDS", "INCONSISTENT_EVIDENCE", "INDEPENDENT",
           "METHOD_QUALIFIED", "NEGATIVE_BASE", "QUALIFIED", "RULE_VERDICTS", "LEDGER_COLUMNS", "LEDGER_VIEW", "METHODS",
           "RECORD_COLUMNS", "RULES", "SELF_CHECK_RULES", "STRENGTH", "SUMMARY_COLUMNS", "TURNS", "VERDICTS", "Claim",
           "Record", "Recorder", "agrees", "base_verdict", "cap", "corrections_by_kind", "decimals_of", "get", "is_negative",
           "judge", "ledger", "plain_answer", "read_records", "rebuttal", "registry", "round_half_up", "same_as_stated",
           "stated_exponent", "tolerance_interval", "verdict", "verdict_literals", "verdicts_by_method"]
