"""``python -m k3lab.probes.release_matrix --child OUT --expect VERSION``: the child process
that :func:`k3lab.probes.release_matrix.run_release` starts (see :mod:`.child`)."""

import sys

from .child import _child

raise SystemExit(_child(sys.argv[1:]))
