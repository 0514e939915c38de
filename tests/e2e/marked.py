"""What the tests of Python workloads with marked lines share (tests/workloads/torch_mem.py,
mem_lines.py): Debian's torch they run on, and the lines that end in "# NAME" markers, as
the reports' rows name them."""
import os

import pymods
from helpers import Skip, eq, need_root

PY = "/usr/bin/python3"


def need_torch():
    need_root()
    if not pymods.has(PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (apt-get install python3-torch)")


class Marked:
    """A workload file whose lines end in "# NAME" markers."""

    def __init__(self, name):
        self.path = os.path.realpath(os.path.join(os.path.dirname(__file__), "..",
                                                  "workloads", name))

    def line(self, name):
        """The line that ends in "# NAME"."""
        with open(self.path) as f:
            found = [i + 1 for i, l in enumerate(f) if l.rstrip().endswith(f"# {name}")]
        eq(len(found), 1, f"one line marked {name}")
        return found[0]

    def at(self, rows, name):
        """The rows of line NAME (a report's func, file and line)."""
        return [r for r in rows if r["line"] == self.line(name) and r["file"] and
                os.path.realpath(r["file"]) == self.path]
