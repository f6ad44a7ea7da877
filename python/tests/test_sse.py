"""The event-stream parser (no daemon)."""

import unittest

from albedo._sse import SseParser


class SseTest(unittest.TestCase):
    def test_split_anywhere(self) -> None:
        text = b"\xef\xbb\xbfevent: a\r\ndata: x\r\ndata: y\r\nid: k-1\r\n\r\n: keep-alive\n\nevent: b\ndata:z\nretry: 250\n\n"
        for size in (1, 2, 3, 7, len(text)):
            p = SseParser()
            events = [e for i in range(0, len(text), size) for e in p.feed(text[i : i + size])]
            self.assertEqual([(e.event, e.data, e.id) for e in events], [("a", "x\ny", "k-1"), ("b", "z", "k-1")], size)
            self.assertEqual(p.last_id, "k-1")
            self.assertEqual(p.retry_ms, 250)

    def test_no_data_no_event(self) -> None:
        p = SseParser()
        self.assertEqual(p.feed(b"event: a\n\nid: 7\n\n"), [])
        self.assertEqual(p.last_id, "7")


if __name__ == "__main__":
    unittest.main()
