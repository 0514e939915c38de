"""A real Prometheus server (Debian's `prometheus`, `make deps`) scraping one port of
127.0.0.1, for the monitor tests (monitor_prom.py). No import of helpers: the test runner
starts one too, before the jobs that run alone (run_tests.py), and hands it to them.

Prometheus finds its targets at its scrape manager's first reload, 5 s after it starts
(2.42 has no setting for it): a server started long before a test needs it has them.
"""
import ctypes
import os
import shutil
import subprocess
import tempfile

from free_ports import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
# How often it scrapes: a test waits a scrape for its monitor's first values and another for
# each change it looks for (the staleness of a series gone from the exposition too), so this
# is most of what the monitor tests wait. 250 ms scrapes of a monitor cost it and Prometheus
# little (bench/RESULTS.md, "make check time").
SCRAPE_INTERVAL = "250ms"
# The environment variable that hands a running server to the runner's workers:
# "PORT PID BASE-URL LOG".
ENV = "BPFSIGHT_TEST_PROMETHEUS"


def pick_scraped_port():
    """A port for the monitors to listen on and Prometheus to scrape: below the ephemeral
    range, so no connection's local port takes it between two monitors (free_ports.py)."""
    return free_port()


def _die_with_parent():
    ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: never outlives its starter


def start(scraped):
    """A server scraping 127.0.0.1:SCRAPED every SCRAPE_INTERVAL: (its Popen, its base URL, its
    log file, stop() that ends it and removes its files)."""
    d = tempfile.mkdtemp(prefix="bpfsight-test-prometheus-")
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write(f"global:\n  scrape_interval: {SCRAPE_INTERVAL}\n"
                f"  evaluation_interval: {SCRAPE_INTERVAL}\n"
                "scrape_configs:\n  - job_name: bpfsight\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{scraped}']\n")
    port = free_port()  # Prometheus's own
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
    return p, f"http://127.0.0.1:{port}", log, stop


class Handed:
    """A server another process started (ENV), as much of a Popen as a test asks of it."""

    def __init__(self, pid):
        self.pid = pid

    def poll(self):
        """None while it runs (an exited one is its starter's zombie until reaped)."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return 1 if f.read().rsplit(")", 1)[1].split()[0] in "ZX" else None
        except OSError:
            return 1


def handed():
    """(scraped port, (Handed, base URL, log)) of the server in ENV, or None."""
    v = os.environ.get(ENV, "").split()
    if len(v) != 4:
        return None
    return int(v[0]), (Handed(int(v[1])), v[2], v[3])
