"""``python -m k3lab.probes.sglang_k3_build …``: build one rank (the child; see :mod:`.child`)."""

from .child import child_main

raise SystemExit(child_main())
