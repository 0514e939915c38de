#!/usr/bin/env python3
"""monitor --ship's CPU beside monitor's: three monitors side by side over the same seconds
of the same machine (-a -t osrt, loadgen making getppid calls at a fixed rate, the other
processes of the machine as they are), one without --ship, one shipping every 10 s (the
default) and one every 1 s, to a real clickhouse-server (tests/e2e/clickhouse_server.py's);
each monitor's CPU (user + system, wait4's rusage) and what it shipped.

    python3 bench/bench_monitor_ship.py --build build [--seconds 60]

Not part of `make bench` (it needs clickhouse-server and root); prints a markdown table for
bench/RESULTS.md's "ClickHouse" section."""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=int, default=60)
    a = ap.parse_args()
    os.environ["BPFSIGHT_BUILD"] = os.path.abspath(a.build)
    import helpers
    from clickhouse_server import ClickHouse
    bpf = os.path.join(a.build, "bpfsight")
    ch = ClickHouse()
    spool = os.path.join(helpers.tmpdir(), "spool")
    runs = {"monitor": [], "--ship, 10s": ["--ship-interval", "10s"],
            "--ship, 1s": ["--ship-interval", "1s"]}
    procs = {}
    try:
        load = subprocess.Popen([os.path.join(a.build, "bench", "loadgen"), "-t", "1", "-r",
                                 "20000", "-d", str(a.seconds + 10)],
                                stdout=subprocess.DEVNULL)
        for name, opts in runs.items():
            ship = ["--ship", ch.url("bench"), "--ship-spool", spool] + opts if opts else []
            procs[name] = subprocess.Popen([bpf, "monitor", "-l", "127.0.0.1:0", "-a", "-t",
                                            "osrt", "-d", f"{a.seconds}s"] + ship,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                           text=True)
        out = {}
        for name, p in procs.items():
            err = p.stderr.read()
            _, status, ru = os.wait4(p.pid, 0)
            if status:
                sys.exit(f"{name}: exit status {status}: {err[-600:]}")
            m = re.search(r"--ship: (\d+) intervals spooled, (\d+) shipped \((\d+) rows\), "
                          r"(\d+) dropped", err)
            out[name] = (ru.ru_utime + ru.ru_stime, m.groups() if m else None)
        load.wait()
        base = out["monitor"][0]
        print(f"| monitor -a -t osrt -d {a.seconds}s | CPU (user + system) | beside monitor "
              "| intervals shipped | rows shipped | rows per interval |")
        print("|---|---|---|---|---|---|")
        for name, (cpu, shipped) in out.items():
            s = (f"| {name} | {cpu:.2f} s | {cpu - base:+.2f} s "
                 f"({(cpu - base) / a.seconds * 100:+.2f}% of a core) |")
            if shipped:
                per = int(shipped[2]) // max(1, int(shipped[1]))
                s += f" {shipped[1]} | {shipped[2]} | {per} |"
            else:
                s += " | | |"
            print(s)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
        ch.stop()


if __name__ == "__main__":
    main()
