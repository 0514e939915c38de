"""A running `bpfsight monitor` and a real Prometheus server scraping it, for the monitor tests.

Prometheus (prom_server.py) runs on 127.0.0.1 with a free port, a 250 ms scrape interval, a
temporary storage dir and no other configuration; the tests ask its HTTP API (/api/v1/query)
what a dashboard would.

Prometheus finds its targets at its scrape manager's first reload, 5 s after it starts. So a
test process has one server scraping one port; every Monitor of the process listens there (one
at a time), and each test waits only for a scrape of its own monitor. The runner starts that
server with the run and hands it to the jobs that run alone and ask it (prom_server.ENV):
their first test has it scraping already. Another process starts its own, with the first test
that needs it.
"""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import helpers
import prom_server
from helpers import BPFSIGHT, Skip, check, wait_for

PROMETHEUS = prom_server.PROMETHEUS
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

_handed = prom_server.handed()
_scraped_port = _handed and _handed[0]


def scraped_port():
    """The port this process's monitors listen on and its Prometheus scrapes."""
    global _scraped_port
    if _scraped_port is None:
        _scraped_port = prom_server.pick_scraped_port()
    return _scraped_port


LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metric(text, line):
    """The value of the sample LINE (name{labels}) in an exposition TEXT, or None: the sample
    of that name whose labels include LINE's (a process's job_name and role need not be
    given)."""
    name, _, want = line.partition("{")
    want = dict(LABEL.findall(want))
    for l in text.splitlines():
        lname, _, rest = l.partition("{")
        if l.startswith("#") or (lname if rest else l.split()[0]) != name:
            continue
        labels = dict(LABEL.findall(rest.rpartition("}")[0])) if rest else {}
        if all(labels.get(k) == v for k, v in want.items()) and \
                set(labels) - set(want) <= {"job_name", "role"}:
            return float(l.split()[-1])
    return None


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Monitor:
    """bpfsight monitor OPTS on 127.0.0.1 (the scraped port); ready once its probes are live."""

    def __init__(self, *opts):
        self.p = subprocess.Popen([BPFSIGHT, "monitor", "-l", f"127.0.0.1:{scraped_port()}",
                                   *opts],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        helpers._procs.append(self.p)
        self.lines = []
        self.url = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(60) or self.p.poll() is not None or not self.url:
            raise AssertionError(f"monitor not ready: {self.stderr[-800:]}")
        self.target = self.url.split("/")[2]

    def _read(self):
        for line in self.p.stderr:
            self.lines.append(line)
            if "recording" in line and "Ctrl-C" in line:
                self.url = [w for w in line.split() if w.startswith("http://")][0]
                self._ready.set()
        self._ready.set()

    @property
    def stderr(self):
        return "".join(self.lines)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Send SIG; the exit status, once its last words are read."""
        self.p.send_signal(sig)
        rc = self.p.wait(timeout)
        self._reader.join(5)
        return rc

    def metrics(self):
        return get(self.url)


_server = _handed and _handed[1]


def start_prometheus():
    """Start this process's server now (when it has none running), so that its first reload
    runs while the test starts its workloads."""
    global _server
    if os.path.exists(PROMETHEUS) and (_server is None or _server[0].poll() is not None):
        p, base, log, stop = prom_server.start(scraped_port())
        atexit.register(stop)
        _server = p, base, log


class Prometheus:
    """The process's Prometheus server scraping TARGET (a Monitor's) every 250 ms, ready once
    it has scraped it since this call (an earlier test's monitor was there before)."""

    def __init__(self, target):
        if not os.path.exists(PROMETHEUS):
            raise Skip("needs Debian's prometheus package (make deps installs it)")
        check(target == f"127.0.0.1:{scraped_port()}", f"{target}: not a Monitor's")
        since = time.time()
        start_prometheus()
        self.p, self.base, self.log = _server
        wait_for(self.ready, 60, "prometheus ready")
        wait_for(lambda: self.target_up(since), 30, "prometheus's first scrape of the monitor")

    def ready(self):
        if self.p.poll() is not None:
            with open(self.log) as f:
                raise AssertionError(f"prometheus exited: {f.read()[-600:]}")
        try:
            return "Ready" in get(self.base + "/-/ready", 2)
        except OSError:
            return False

    def target_up(self, since):
        r = self.query("up")
        return bool(r) and r[0]["value"][1] == "1" and self.value("timestamp(up)") >= since

    def query(self, q):
        """The result vector of instant query Q: [{"metric": {...}, "value": [t, "v"]}]."""
        url = self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        r = json.loads(get(url))
        check(r["status"] == "success", f"{q}: {r}")
        return r["data"]["result"]

    def value(self, q):
        """The single value of Q, or None when the vector is empty."""
        r = self.query(q)
        check(len(r) <= 1, f"{q}: {len(r)} series: {r[:3]}")
        return float(r[0]["value"][1]) if r else None

    def stop(self):
        """Done with it: the server goes on for the process's next test (it ends with the
        process)."""
