"""Server-Sent Events, parsed as the HTML standard says (§9.2.6), fed bytes as they arrive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ._errors import Error

#: The longest line an event stream may send (an event's data line): bounds what a stream holds in memory.
MAX_LINE = 16 << 20


@dataclass(frozen=True)
class RawEvent:
    event: str
    data: str
    id: Optional[str]


class SseParser:
    """Bytes in, events out. ``last_id`` is the last event id seen (what ``Last-Event-ID`` sends on reconnect)."""

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: list[str] = []
        self.last_id: Optional[str] = None
        self.retry_ms: Optional[int] = None
        self._first = True

    def feed(self, chunk: bytes) -> list[RawEvent]:
        self._buf += chunk
        if len(self._buf) > MAX_LINE:
            raise Error("ALBEDO_TOO_LARGE", f"an event stream's line is longer than {MAX_LINE} bytes")
        out: list[RawEvent] = []
        while True:
            # A line ends at CRLF, LF or CR; a CR at the very end may be the first half of a CRLF yet to come.
            lf, cr = self._buf.find(b"\n"), self._buf.find(b"\r")
            if cr == len(self._buf) - 1:
                cr = -1
            cut = min(lf, cr) if lf >= 0 and cr >= 0 else max(lf, cr)
            if cut < 0:
                return out
            line = self._buf[:cut]
            skip = 2 if self._buf[cut] == 0x0D and self._buf[cut + 1 : cut + 2] == b"\n" else 1
            self._buf = self._buf[cut + skip :]
            text = line.decode("utf-8", "replace")
            if self._first:
                text = text.removeprefix("\ufeff")
                self._first = False
            ev = self._line(text)
            if ev:
                out.append(ev)

    def _line(self, line: str) -> Optional[RawEvent]:
        if line == "":
            if not self._data:
                self._event = ""
                return None
            ev = RawEvent(self._event or "message", "\n".join(self._data), self.last_id)
            self._event, self._data = "", []
            return ev
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None
