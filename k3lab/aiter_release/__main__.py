"""``python -m k3lab.aiter_release``: print the head rules derived from the installed release."""

from . import main

main()
