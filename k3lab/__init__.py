"""k3lab: a reproducibility study of serving Kimi K3 with sglang on AMD MI355X.

One module per finding (``memory``, ``sampling``/``spec_decode``, ``attention``,
``throughput``/``bench``) over shared plumbing (``paths``, ``io``, ``specs``, ``claims``,
``pipeline``). Notebooks under ``notebooks/`` are thin narratives over these modules.
"""

__version__ = "0.1.0"
