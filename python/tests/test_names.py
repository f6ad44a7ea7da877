"""The Python-safe names rule (no daemon)."""

import unittest

from albedo._names import mint, python_name


class NamesTest(unittest.TestCase):
    def test_rule(self) -> None:
        self.assertEqual(python_name("get-sum"), "get_sum")
        self.assertEqual(python_name("files.v2"), "files_v2")
        self.assertEqual(python_name("2fa"), "_2fa")
        self.assertEqual(python_name("class"), "class_")
        self.assertEqual(python_name("import"), "import_")
        self.assertEqual(python_name("café"), "caf_")
        self.assertEqual(python_name("match"), "match", "soft keywords are names")
        self.assertIsNone(python_name("__init__"))
        self.assertIsNone(python_name("_request"), "the binding's own names start with _: none is minted")
        self.assertIsNone(python_name("-x"))
        self.assertIsNone(python_name(""))
        self.assertEqual(python_name("call", taken=["call", "tools"]), "call_")

    def test_collisions_are_not_minted(self) -> None:
        minted, left = mint(["my-files", "my_files", "notes", "__x"])
        self.assertEqual(minted, {"notes": "notes"})
        self.assertEqual(sorted(left), ["__x", "my-files", "my_files"])


if __name__ == "__main__":
    unittest.main()
