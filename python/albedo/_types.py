"""The records the binding hands out: operations, results, events, the context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Operation:
    """A live operation of the session: a server's tool, or its ``read_resource`` / ``get_prompt``.

    ``name`` is the advertised (provider-safe, stable) name, ``server`` and ``tool`` the server's and the raw
    tool's names (``server/tool`` calls it too), ``kind`` ``"tool"``, ``"read_resource"`` or ``"get_prompt"``.
    """

    name: str
    server: str
    tool: str
    kind: str
    description: str
    inputSchema: dict[str, Any] = field(repr=False)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The parameter schema (JSON Schema), as the session normalised it."""
        return self.inputSchema


@dataclass(frozen=True)
class Result:
    """A call's result, as the server sent it. A tool that reports an error sets ``isError``; it does not raise."""

    content: list[dict[str, Any]]
    structuredContent: Optional[dict[str, Any]]
    isError: bool
    raw: dict[str, Any] = field(repr=False)

    @property
    def text(self) -> str:
        """The text blocks of ``content``, joined by new lines."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")

    @staticmethod
    def of(raw: Any) -> "Result":
        if not isinstance(raw, dict):
            raw = {}
        content = raw.get("content")
        structured = raw.get("structuredContent")
        return Result(
            content=[b for b in content if isinstance(b, dict)] if isinstance(content, list) else [],
            structuredContent=structured if isinstance(structured, dict) else None,
            isError=raw.get("isError") is True,
            raw=raw,
        )


@dataclass(frozen=True)
class Event:
    """One of the session's events: ``server_state``, ``warning``, ``capabilities_changed``, ``catalogue_refreshed``,
    ``server_probed``, ``session_closed``. ``data`` is its JSON; ``id`` what a reconnect resumes after."""

    type: str
    data: dict[str, Any]
    id: Optional[str]


@dataclass(frozen=True)
class Context:
    """The session's MCP context text for a system prompt: ``text`` is the one kept since the last compaction
    (taken at generation ``contextGeneration``), so a prompt cache holds; ``generation`` is the session's now."""

    text: str
    generation: int
    contextGeneration: int
