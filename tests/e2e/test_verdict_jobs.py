"""The verdict's first lines on real jobs attached as the README shows (`record -p`, the
default families): the claim a user needs first, for the job as a whole (docs/USAGE.md,
"Verdict"). Each job measures what it can of its own truth.

- A Python web service bound by the GIL (http.server's ThreadingHTTPServer, a thread per
  request, 8 clients): GIL-bound, for its busiest waiter and for the process with its pool of
  request threads, the handler named as what the holders ran."""
import os
import re
import subprocess
import time

from helpers import BPFSIGHT, check, eq, need_root, run, spawn, tmpdir
from test_gil import need_pyenv

# For tests/run_tests.py: about how long these tests take on CI's machine.
SECONDS = 15

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE_PY = os.path.realpath(os.path.join(HERE, "..", "workloads", "gil_service.py"))


def verdict_lines(path):
    """stats' verdict block, a line per claim (--wide: no wrapping)."""
    p = run([BPFSIGHT, "stats", path, "--wide"], check=True)
    block = next((b for b in p.stdout.split("\n\n") if b.startswith("Verdict:")), "")
    rest = p.stdout.split(block, 1)[1].split("\n\n", 2)[1] if block else ""
    return block, rest.splitlines()


def test_gil_bound_service_is_claimed_for_the_process():
    need_root()
    py = need_pyenv(11)
    server = spawn([py, SERVICE_PY, "server"])
    client = None
    try:
        m = re.match(r"ready pid (\d+) port (\d+)", server.stdout.readline())
        check(m, "the server's first line")
        pid = int(m.group(1))
        client = spawn([py, SERVICE_PY, "client", m.group(2)])
        time.sleep(1)
        path = os.path.join(tmpdir(), "service.bst")
        p = run([BPFSIGHT, "record", "-p", str(pid), "-d", "3s", "-o", path], timeout=120)
        eq(p.returncode, 0, p.stderr[-600:])
        head, claims = verdict_lines(path)
        check(head.startswith("Verdict: GIL-bound: "), f"{head}\n" + "\n".join(claims))
        proc = [c for c in claims if re.match(
            rf" \* GIL +\d+\.\d% +python3\S* \(pid {pid}\): its (\d+) threads waited for the "
            r"GIL .* of their .*; (\d+) of them lived under half the recording \(a pool\)", c)]
        check(proc, "a claim for the process and its pool:\n" + "\n".join(claims))
        check(any(re.search(r"the holders were running (Handler\.do_GET|serve_one) "
                            r"\(gil_service\.py:\d+\)", c) for c in claims),
              "the handler named as the holders' code:\n" + "\n".join(claims))
    finally:
        if client:
            client.kill()
        server.kill()
