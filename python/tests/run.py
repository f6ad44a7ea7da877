"""Runs every suite and prints, on stdout, one JSON line per test: {"test", "verdict", "detail"} (for tap)."""

from __future__ import annotations

import json
import os
import sys
import unittest
from typing import Any


class Recorder(unittest.TextTestResult):
    verdicts: dict[str, tuple[str, str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.verdicts = {}

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self.verdicts[test.id()] = ("ok", "")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self.verdicts[test.id()] = ("FAIL", self.failures[-1][1])

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self.verdicts[test.id()] = ("ERROR", self.errors[-1][1])

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self.verdicts[test.id()] = ("skipped", reason)


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    suite = unittest.defaultTestLoader.discover(here, top_level_dir=os.path.dirname(here))
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2, resultclass=Recorder).run(suite)
    assert isinstance(result, Recorder)
    for test, (verdict, detail) in sorted(result.verdicts.items()):
        print(json.dumps({"test": test, "verdict": verdict, "detail": detail}))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
