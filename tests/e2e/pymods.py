"""Whether a Python interpreter has a module, asked without importing it.

The tests that need Debian's torch ask before each workload they start; importing torch to
ask took 1.5 s of CPU each time (about a minute of make check's CPU in all). find_spec looks
the module up where `import` would (the interpreter's own sys.path and finders) and runs none
of its code. A module that is there but fails to import fails the test that runs it, as it
should, rather than skipping it."""
import functools
import os
import subprocess

_FIND = ("import importlib.util, sys\n"
         "sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))\n")


@functools.lru_cache(maxsize=None)
def has(py, *modules):
    """Does the interpreter PY have every one of MODULES (top-level names: a dotted name's
    lookup imports its parent)?"""
    check = [m for m in modules if "." in m]
    if check:
        raise ValueError(f"top-level modules only: {check}")
    if not py or not os.path.exists(py):
        return False
    return subprocess.run([py, "-c", _FIND, *modules], capture_output=True,
                          timeout=60).returncode == 0


_FILE = ("import importlib.util, os, sys\n"
         "s = importlib.util.find_spec(sys.argv[1])\n"
         "path = os.path.realpath(os.path.join(os.path.dirname(s.origin), *sys.argv[3:]))\n"
         "print(path)\n"
         "if sys.argv[2] == 'read':\n"
         "    print(open(path).read(), end='')\n")


def package_file(py, module, *parts, read=False):
    """PARTS' path in top-level package MODULE's directory (symlinks resolved) as the
    interpreter PY sees it, found without importing MODULE: PY may be another root's python
    (make check-torch-versions runs one chrooted), so PY itself resolves the path and, with
    READ, reads the file: (path, its text or None)."""
    p = subprocess.run([py, "-c", _FILE, module, "read" if read else "path", *parts],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"{py}: {module}'s {'/'.join(parts)}: {p.stderr[-400:]}")
    path, _, text = p.stdout.partition("\n")
    return path, (text if read else None)
