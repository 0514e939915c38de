#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What the tests' Prometheus server (tests/e2e/prom_server.py) costs at a scrape interval:
its CPU and a system-wide monitor's while it scrapes the monitor, and its own with nothing
listening (the runner's server through the jobs run together, before the alone lane).

    sudo python3 bench/bench_prom_scrape.py [--build build] [--rounds 2] [--secs 30]
        [--intervals 1s,250ms]

Each round takes every interval in turn: `bpfsight monitor -a -t osrt --top 100000` (as
test_monitor's) and a server scraping it, 8 s for its first reload, then the CPU seconds
(utime + stime, /proc/PID/stat) of both over --secs; then the server alone over --secs.
"""
import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "e2e"))
import prom_server  # noqa: E402


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def measure(build, interval, secs, with_monitor):
    prom_server.SCRAPE_INTERVAL = interval
    port = prom_server.pick_scraped_port()
    mon = None
    if with_monitor:
        mon = subprocess.Popen([os.path.join(build, "bpfsight"), "monitor", "-a", "-t", "osrt",
                                "--top", "100000", "-l", f"127.0.0.1:{port}"],
                               stderr=subprocess.DEVNULL)
    p, _, _, stop = prom_server.start(port)
    try:
        time.sleep(8)  # the server's first reload, the monitor's start
        before = [cpu_s(x.pid) for x in (p, mon) if x]
        time.sleep(secs)
        return [cpu_s(x.pid) - b for x, b in zip((p, mon) if mon else (p,), before)]
    finally:
        if mon:
            mon.send_signal(signal.SIGTERM)
            mon.wait(30)
        stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--secs", type=float, default=30)
    ap.add_argument("--intervals", default="1s,250ms")
    a = ap.parse_args()
    for r in range(a.rounds):
        for iv in a.intervals.split(","):
            prom, mon = measure(a.build, iv, a.secs, True)
            alone, = measure(a.build, iv, a.secs, False)
            print(f"round {r + 1} {iv}: scraping monitor -a: prometheus {prom:.2f} CPU-s, "
                  f"monitor {mon:.2f} CPU-s; nothing listening: prometheus {alone:.2f} CPU-s "
                  f"(in {a.secs:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
