"""Version strings of sglang releases: their order (PEP 440, standard library only).

The one implementation is ``k3lab_patches.releases.version_key`` (the patches an operator
installs order releases and git builds with it too); re-exported here for the study.
"""

from __future__ import annotations

from k3lab_patches.releases import version_key  # noqa: F401  (re-exported)
