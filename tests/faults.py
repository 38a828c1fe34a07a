"""Crashes injected by the tests, not by the code under test: a Python process that replaces
one function of ours with one that kills the process at once (exit ``DIED``), then runs the
code of the test. The production modules carry no fault hooks."""

from __future__ import annotations

import sys

DIED = 99

_PATCH = """
import importlib, os
_owner = importlib.import_module({module!r})
for _name in {path!r}[:-1]:
    _owner = getattr(_owner, _name)
_original = getattr(_owner, {path!r}[-1])
def _dying(*args, **kwargs):
    if {after!r}:
        _original(*args, **kwargs)
    os._exit({died})
setattr(_owner, {path!r}[-1], _dying)
"""


def python_dying_at(target: str, code: str, *, after: bool = False) -> list[str]:
    """The command line of a Python process that runs ``code`` with ``target``
    (``package.module:Name.attribute``) replaced by a function that exits at once with
    ``DIED`` — before the original runs, or right after its first call when ``after``."""
    module, _, attribute = target.partition(":")
    patch = _PATCH.format(module=module, path=attribute.split("."), after=after, died=DIED)
    return [sys.executable, "-c", patch + code]


#: ``code`` for :func:`python_dying_at`: ``findata refresh``, as the command runs it
REFRESH = "from findata.cli import app\napp(['refresh'], prog_name='findata')\n"
