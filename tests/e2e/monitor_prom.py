"""A running `bpfsight monitor` and a real Prometheus server scraping it, for the monitor tests.

Prometheus is Debian's `prometheus` package (`make deps`), started on 127.0.0.1 with a free
port, a 1 s scrape interval, a temporary storage dir and no other configuration; the tests ask
its HTTP API (/api/v1/query) what a dashboard would.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import urllib.parse
import urllib.request

import helpers
from helpers import BPFSIGHT, Skip, check, tmpdir, wait_for

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Monitor:
    """bpfsight monitor OPTS on 127.0.0.1 (a free port); ready once its probes are live."""

    def __init__(self, *opts):
        self.p = subprocess.Popen([BPFSIGHT, "monitor", "-l", "127.0.0.1:0", *opts],
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


class Prometheus:
    """A Prometheus server scraping TARGET (host:port) every second."""

    def __init__(self, target):
        if not os.path.exists(PROMETHEUS):
            raise Skip("needs Debian's prometheus package (make deps installs it)")
        d = tmpdir()
        cfg = os.path.join(d, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: bpfsight\n"
                    f"    static_configs:\n      - targets: ['{target}']\n")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = os.path.join(d, "prometheus.log")
        with open(self.log, "w") as log:
            self.p = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}",
                                       f"--storage.tsdb.path={os.path.join(d, 'data')}",
                                       f"--web.listen-address=127.0.0.1:{self.port}"],
                                      stdout=subprocess.DEVNULL, stderr=log)
        helpers._procs.append(self.p)
        wait_for(self.ready, 60, "prometheus ready")
        wait_for(self.target_up, 30, "prometheus's first scrape of the monitor")

    def ready(self):
        if self.p.poll() is not None:
            with open(self.log) as f:
                raise AssertionError(f"prometheus exited: {f.read()[-600:]}")
        try:
            return "Ready" in get(self.base + "/-/ready", 2)
        except OSError:
            return False

    def target_up(self):
        r = self.query("up")
        return bool(r) and r[0]["value"][1] == "1"

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
        self.p.terminate()
        self.p.wait(30)
