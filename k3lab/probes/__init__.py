"""Experiments against a real installed sglang (run in .venv-sglang): what a release does
when it meets the article's states. Not patches a user applies (those are in ``k3lab.patches``)."""
