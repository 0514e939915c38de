"""A running `bpfsight monitor` and a real Prometheus server scraping it, for the monitor tests.

Prometheus is Debian's `prometheus` package (`make deps`), started on 127.0.0.1 with a free
port, a 1 s scrape interval, a temporary storage dir and no other configuration; the tests ask
its HTTP API (/api/v1/query) what a dashboard would.

Prometheus finds its targets at its scrape manager's first reload, 5 s after it starts
(2.42 has no setting for it). So a test process starts one server, with the first test that
needs it, scraping one port; every Monitor of the process listens there (one at a time), and
each test waits only for a scrape of its own monitor.
"""
import atexit
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
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


_scraped_port = None


def scraped_port():
    """The port this process's monitors listen on and its Prometheus scrapes: below the
    ephemeral range, so no connection's local port takes it between two monitors."""
    global _scraped_port
    while _scraped_port is None:
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the monitor binds
            try:
                s.bind(("127.0.0.1", port))
                _scraped_port = port
            except OSError:
                pass
    return _scraped_port


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


def _die_with_parent():
    ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: never outlives the tests


def _start_server():
    """This process's Prometheus server, scraping the monitors' port every second."""
    d = tempfile.mkdtemp(prefix="bpfsight-test-prometheus-")
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: bpfsight\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{scraped_port()}']\n")
    port = free_port()
    log = os.path.join(d, "prometheus.log")
    with open(log, "w") as out:
        p = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}",
                              f"--storage.tsdb.path={os.path.join(d, 'data')}",
                              f"--web.listen-address=127.0.0.1:{port}"],
                             stdout=subprocess.DEVNULL, stderr=out, preexec_fn=_die_with_parent)

    def stop():
        p.terminate()
        p.wait(30)
        shutil.rmtree(d, True)
    atexit.register(stop)
    return p, f"http://127.0.0.1:{port}", log


_server = None


def start_prometheus():
    """Start this process's server now (when there is none), so that its first reload runs
    while the test starts its workloads."""
    global _server
    if os.path.exists(PROMETHEUS) and (_server is None or _server[0].poll() is not None):
        _server = _start_server()


class Prometheus:
    """The process's Prometheus server scraping TARGET (a Monitor's) every second, ready once
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
