"""What a patch checks on the installed code before it changes anything: the function it relies on
is there with the parameters it calls it by.

Under ``--force`` (a release or build the patch was not written for, a K3 branch image among them)
this is what stands between the patch and a silent mis-binding: the version says nothing, the code
does. Standard library only.
"""

from __future__ import annotations

import inspect


def signature_gap(owner: str, fn, params: tuple[str, ...], leading: bool = True) -> str | None:
    """None if ``fn`` is a function taking ``params`` (its first parameters, in order, when
    ``leading``; anywhere among them otherwise), else what is missing, in words, naming ``owner``."""
    if fn is None:
        return f"{owner} is missing"
    if not callable(fn):
        return f"{owner} is not a function"
    try:
        have = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return f"{owner} has no readable signature"
    ok = have[:len(params)] == list(params) if leading else all(p in have for p in params)
    if ok:
        return None
    want = f"({', '.join(params)}, …)" if leading else f"parameters {', '.join(params)}"
    return f"{owner} takes ({', '.join(have)}), not {want}"
