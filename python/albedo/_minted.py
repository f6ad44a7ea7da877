"""The methods minted from the tool list: ``mcp.<server>.<tool>(**arguments)``."""

from __future__ import annotations

import inspect
import keyword
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Optional

from ._errors import Error
from ._names import mint
from ._types import Operation, Result

if TYPE_CHECKING:
    from ._client import Mcp

ToolMethod = Callable[..., Awaitable[Result]]

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


def _signature(schema: dict[str, Any]) -> inspect.Signature:
    """Keyword-only parameters for the schema's properties (what help() and an editor show); ``**more`` when others go."""
    found = schema.get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    params: list[inspect.Parameter] = []
    odd = False
    for key, spec in props.items():
        if not isinstance(key, str) or not key.isidentifier() or key.startswith("_") or keyword.iskeyword(key):
            odd = True
            continue
        kind = spec.get("type") if isinstance(spec, dict) else None
        note = _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any
        default = inspect.Parameter.empty if key in required else (spec.get("default") if isinstance(spec, dict) else None)
        params.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=note))
    params.sort(key=lambda p: p.default is not inspect.Parameter.empty)
    if odd or schema.get("additionalProperties") is not False:
        rest = next(n for n in ("arguments", "more", "kwargs", "others") if n not in props)
        params.append(inspect.Parameter(rest, inspect.Parameter.VAR_KEYWORD, annotation=Any))
    return inspect.Signature(params, return_annotation=Result)


def _method(mcp: "Mcp", op: Operation, py: str, owner: str) -> ToolMethod:
    async def method(**arguments: Any) -> Result:
        return await mcp.call(op.name, arguments)

    method.__name__ = py
    method.__qualname__ = f"{owner}.{py}"
    method.__doc__ = op.description or f"The tool {op.tool!r} of server {op.server!r}."
    try:
        method.__signature__ = _signature(op.inputSchema)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 (any schema the signature cannot hold)
        pass  # a schema no signature can show: help() shows (**arguments)
    method.operation = op  # type: ignore[attr-defined]
    return method


class Server:
    """One server's operations as methods (``mcp.files.read_file(path=...)``); ``server["raw-name"]`` reaches any of them."""

    def __init__(self, mcp: "Mcp", name: str, py: str, ops: list[Operation]) -> None:
        self.__name = name
        self.__by_raw: dict[str, ToolMethod] = {}
        self.__unminted: dict[str, str] = {}
        self.__minted: list[str] = []
        minted, left = mint([op.tool for op in ops], taken=set(dir(Server)) | set(vars(self)))
        by_tool = {op.tool: op for op in ops}
        for py_tool, raw in minted.items():
            fn = _method(mcp, by_tool[raw], py_tool, py)
            setattr(self, py_tool, fn)
            self.__minted.append(py_tool)
            self.__by_raw[raw] = fn
        for raw, why in left.items():
            self.__by_raw[raw] = _method(mcp, by_tool[raw], "tool", py)
            self.__unminted[raw] = why

    def __getitem__(self, tool: str) -> ToolMethod:
        try:
            return self.__by_raw[tool]
        except KeyError:
            why = f"server {self.__name!r} has no tool {tool!r} in this session"
            raise Error("ALBEDO_NOT_FOUND", why, outcome="not_run") from None

    def __iter__(self) -> Iterator[Operation]:
        return iter([fn.operation for fn in self.__by_raw.values()])  # type: ignore[attr-defined]

    def __dir__(self) -> list[str]:
        return sorted(self.__minted)

    def __len__(self) -> int:
        return len(self.__by_raw)

    def __getattr__(self, name: str) -> Any:
        # Only for names not found: say what there is instead of a bare AttributeError.
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"server {self.__name!r} has no method {name!r} (its tools: {sorted(self.__by_raw)})")

    def __repr__(self) -> str:
        return f"<albedo server {self.__name!r}: {len(self.__by_raw)} operations>"

    def left(self) -> dict[str, str]:
        """What of this server was not minted, and why."""
        return dict(self.__unminted)


def server_namespaces(
    mcp: "Mcp", ops: list[Operation], taken: list[str]
) -> tuple[dict[str, Server], dict[str, Server], dict[str, str]]:
    """Python name → Server, raw name → Server, and what was not minted (``server`` or ``server/tool`` → why)."""
    groups: dict[str, list[Operation]] = {}
    for op in ops:
        groups.setdefault(op.server, []).append(op)
    minted, left = mint(groups, taken=taken)
    py_of = {raw: py for py, raw in minted.items()}
    by_raw = {raw: Server(mcp, raw, py_of.get(raw, "server"), group) for raw, group in groups.items()}
    unminted: dict[str, str] = dict(left)
    for raw, server in by_raw.items():
        for tool, why in Server.left(server).items():
            unminted[f"{raw}/{tool}"] = why
    return {py: by_raw[raw] for py, raw in minted.items()}, by_raw, unminted


def close_matches(name: str, names: list[str]) -> Optional[list[str]]:
    import difflib

    return difflib.get_close_matches(name, names, n=3, cutoff=0.6) or None
