"""A PEP 517 build backend in the standard library alone: builds the ``albedo`` wheel (pure Python, no dependency).

It exists so that ``pip install ./python`` works where no package index can be reached (pip would otherwise fetch
setuptools to build). It reads the name and version from pyproject.toml and packs ``albedo/`` as it is.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import zipfile
from typing import Any, Optional

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project() -> dict[str, Any]:
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11 on

        return dict(tomllib.loads(raw.decode())["project"])
    except ImportError:
        # 3.10: the few plain `key = "value"` lines of [project] are all it reads.
        section = raw.decode().split("[project]", 1)[1].split("\n[", 1)[0]
        return dict(re.findall(r'^([\w-]+) = "([^"]*)"$', section, re.M))


def _metadata(p: dict[str, Any]) -> str:
    return (
        f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\nSummary: {p['description']}\n"
        f"Requires-Python: {p['requires-python']}\n"
    )


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _files() -> list[tuple[str, bytes]]:
    out = []
    root = os.path.join(HERE, "albedo")
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".pyc"):
                continue
            full = os.path.join(folder, n)
            with open(full, "rb") as f:
                out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), f.read()))
    return out


def get_requires_for_build_wheel(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


get_requires_for_build_editable = get_requires_for_build_wheel


def _wheel(wheel_directory: str, editable: bool) -> str:
    p = _project()
    dist = f"{p['name']}-{p['version']}"
    info = f"{dist}.dist-info"
    name = f"{dist}-py3-none-any.whl"
    files = [(f"{p['name']}.pth", (HERE + "\n").encode())] if editable else _files()
    files += [
        (f"{info}/METADATA", _metadata(p).encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: albedo_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = [_record_line(n, d) for n, d in files] + [f"{info}/RECORD,,"]
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            z.writestr(n, d)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return name


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    return _wheel(wheel_directory, editable=False)


def build_editable(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    return _wheel(wheel_directory, editable=True)
