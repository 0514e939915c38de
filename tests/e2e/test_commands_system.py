"""The documented commands that trace the whole machine (README.md): -a, the flight recorder,
monitor and top of every process, run as written (tests/e2e/commands.py); and -a with every
family. Alone: a system-wide recording traces the other tests' processes."""
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request

from commands import FAMILY_NEEDS, Session
from helpers import BPFSIGHT, check, eq, info, run, wait_for

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 25
ALONE = "system-wide recordings, monitor and top: the other tests' processes would be traced"

SYSTEM = ["sudo bpfsight record -o run.bst -a -d 10s",
          "sudo bpfsight record -a --flight-recorder=60s -o fr.bst --trigger 'gil:*>100ms'",
          "sudo bpfsight monitor",
          "sudo bpfsight top -b -n 5 > top.txt"]
CLAIMED = SYSTEM
WORK = os.path.join(os.path.dirname(__file__), "..", "workloads", "gil_work.py")


def test_the_whole_system():
    s = Session()
    try:
        t0 = time.monotonic_ns()
        s.run(SYSTEM[0])
        wall = time.monotonic_ns() - t0
        i = info(s.last)
        eq(i["target"], "system-wide", "-a")
        # -d 2s (commands.py's): at least 2 s; at most the command's own run, whatever the
        # load (a loaded machine delays the stop, not the duration's start).
        check(1.99e9 <= i["duration_ns"] <= wall, f"-d 2s: {i['duration_ns']} in {wall} ns")
    finally:
        s.close()


def test_flight_recorder_dumps_a_long_gil_wait():
    """It records until stopped; a thread waiting 300 ms for the GIL (gil_work.py hold) is the
    trigger: fr-1.bst, the last minute up to it."""
    s = Session()
    try:
        line = s.command(SYSTEM[1])
        p = subprocess.Popen(["bash", "-c", "exec " + line], cwd=s.dir, text=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = []
        reader = threading.Thread(target=lambda: err.extend(p.stderr), daemon=True)
        reader.start()
        wait_for(lambda: "Ctrl-C to stop" in "".join(err), 60, "the flight recorder live")
        # -a probes a process that starts while it records once its exec has been read and
        # its interpreter found (USAGE.md, "System-wide"): on a loaded machine a job's first wait
        # may come before that, so jobs are started one after the other until one is seen.
        def dumped():
            if "flight recorder: wrote" in "".join(err):
                return True
            if not s.jobs or s.jobs[-1].poll() is not None:
                s.start(["python3", WORK, "hold", "300"])
            return False
        wait_for(dumped, 60, f"the dump: {''.join(err)[-500:]}")
        p.send_signal(signal.SIGINT)
        eq(p.wait(60), 0, "".join(err)[-500:])
        reader.join(10)
        dump = os.path.join(s.dir, "fr-1.bst")
        check("gil" in info(dump)["families"].split(","), "fr-1.bst, a whole trace")
    finally:
        s.close()


def test_monitor_serves_metrics():
    s = Session()
    try:
        line = s.command(SYSTEM[2])
        p = subprocess.Popen(["bash", "-c", "exec " + line], cwd=s.dir, text=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        first = p.stderr.readline()
        check("http://127.0.0.1:9464/metrics" in first, first)
        with urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=30) as r:
            text = r.read().decode()
        check(re.search(r"^bpfsight_\w+", text, re.M), text[:300])
        p.send_signal(signal.SIGTERM)
        eq(p.wait(60), 0, p.stderr.read()[-300:])
    finally:
        s.close()


def test_top_of_every_process():
    s = Session()
    try:
        p = s.run(SYSTEM[3])
        with open(os.path.join(s.dir, "top.txt")) as f:
            frames = [fr for fr in f.read().split("\n\n") if fr.strip()]
        eq(len(frames), 5, "five frames")
        check(all(fr.startswith("top - ") for fr in frames), frames[0][:200])
        check("5 frames shown" in p.stderr, p.stderr)
    finally:
        s.close()


def test_system_wide_with_every_family():
    s = Session()
    try:
        every = run([BPFSIGHT, "__complete", "families"]).stdout.split()
        needs = "".join(FAMILY_NEEDS.get(f, "") for f in every)
        s.run(f"bpfsight record -a -t {','.join(every)} -d 1s -o all.bst{needs}")
        eq(sorted(info(s.last)["families"].split(",")), sorted(["proc"] + every), "-t every one")
    finally:
        s.close()
