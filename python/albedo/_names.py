"""The Python-safe names of servers and tools, for ``mcp.<server>.<tool>()``.

The rule, applied to a server's name and to each of its tools' raw names:

1. every character that is not an ASCII letter, digit or ``_`` becomes ``_``
   (``get-sum`` → ``get_sum``, ``files.v2`` → ``files_v2``);
2. a name that starts with a digit gets ``_`` in front (``2fa`` → ``_2fa``);
3. a Python keyword gets ``_`` after it (``class`` → ``class_``), and so does
   a name the object already has for itself (a server called ``call`` is
   ``mcp.call_``: ``mcp.call`` stays the method);
4. a name that starts with ``_`` (after rule 1: ``-x`` too) is not minted: those
   are Python's and the binding's own;
5. names that come to the same Python name (``my-files`` and ``my_files``)
   are none of them minted: which one was meant cannot be guessed.

What is not minted is still reached by item access, ``mcp["my-files"]["read"]``,
or by ``mcp.call("my-files/read", ...)``; ``mcp.unminted`` says why each was left.
"""

from __future__ import annotations

import keyword
import re
from typing import Iterable, Optional

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def python_name(raw: str, taken: Iterable[str] = ()) -> Optional[str]:
    """The Python-safe name of ``raw`` (rules 1–4); None when it is not minted. ``taken``: the object's own names."""
    name = _NOT_IDENT.sub("_", raw)
    if not name or name.startswith("_"):
        return None
    if name[0].isdigit():
        # `_` and a digit: no name of the binding's own (nor Python's) starts so.
        name = "_" + name
    if keyword.iskeyword(name) or name in set(taken):
        name += "_"
    return name


def mint(raws: Iterable[str], taken: Iterable[str] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """Python name → raw name for the names that are minted, and raw name → why for those that are not (rule 5 too)."""
    own = set(taken)
    by_py: dict[str, list[str]] = {}
    left: dict[str, str] = {}
    for raw in raws:
        py = python_name(raw, own)
        if py is None:
            left[raw] = "not a name Python can hold as an attribute"
        else:
            by_py.setdefault(py, []).append(raw)
    minted: dict[str, str] = {}
    for py, group in by_py.items():
        if len(group) == 1:
            minted[py] = group[0]
        else:
            for raw in group:
                others = ", ".join(repr(o) for o in group if o != raw)
                left[raw] = f"its Python name {py!r} is also that of {others}"
    return minted, left
