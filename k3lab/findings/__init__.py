"""The findings, judged: one module per finding turns what k3lab derives or replays into
the claims ledger's records (verdicts by the rules of :mod:`k3lab.claims`) and the tables
its notebook shows."""
