# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""--python-functions' cost (section "Python functions" of bench/RESULTS.md; docs/USAGE.md).

For each interpreter, bench/pyfunc_loop.py times f() and g() untraced and f() under a hook
written in Python (a sys.monitoring tool's callbacks on 3.12+, a sys.setprofile function
before); then `bpfsight record -p PID -t pyfunc --python-functions __main__:f --inject`
attaches, and once the shim says it traces f, the job times f() traced and g() untraced while
the recording is on. Prints
ns per call: what tracing adds per traced call (traced - untraced) against what the Python
hook adds (python - untraced), and what untraced code pays while recording (recording_g -
untraced_g).

    sudo python3 bench/bench_pyfunc.py [--build build]     # ~1 min
"""
import argparse
import json
import os
import re
import signal
import subprocess
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PYENV = os.path.expanduser("~/.pyenv/versions")


def interpreters():
    out = []
    for minor in range(8, 14):
        for d in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else ():
            if d.startswith(f"3.{minor}."):
                out.append((f"pyenv {d}", os.path.join(PYENV, d, "bin", "python3")))
    for name, path in (("Debian 3.11", "/usr/bin/python3.11"),
                       ("Debian 3.14", "/opt/cpython/3.14/bin/python3.14")):
        if os.path.exists(path):
            out.append((name, path))
    return out


def one(bpfsight, py, out):
    job = subprocess.Popen([py, os.path.join(HERE, "pyfunc_loop.py")], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    json.loads(job.stdout.readline())  # its untraced and Python-hook phases are done
    rec = subprocess.Popen([bpfsight, "record", "-o", out, "--force", "-p", str(job.pid),
                            "-t", "pyfunc", "--python-functions", "__main__:f", "--inject"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    traced = threading.Event()

    def read():
        for line in rec.stderr:
            if re.search(r": 1 code objects traced$", line.rstrip()):
                traced.set()
        traced.set()

    threading.Thread(target=read, daemon=True).start()
    traced.wait(60)
    job.stdin.write("go\n")
    job.stdin.flush()
    res = json.loads(job.stdout.readline())
    job.wait(60)
    rec.send_signal(signal.SIGINT)
    rec.wait(60)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    a = ap.parse_args()
    bpfsight = os.path.join(a.build, "bpfsight")
    print("| interpreter | untraced call | traced call (+ns) | Python hook (+ns) | untraced call "
          "while recording (+ns) |")
    print("|---|---|---|---|---|")
    for name, py in interpreters():
        r = one(bpfsight, py, "/tmp/bench_pyfunc.bst")
        u = r["untraced_f"]
        print(f"| {name} | {u:.0f} ns | {r['traced_f']:.0f} (+{r['traced_f'] - u:.0f}) | "
              f"{r['python_f']:.0f} (+{r['python_f'] - u:.0f}) | {r['recording_g']:.0f} "
              f"(+{r['recording_g'] - r['untraced_g']:.0f}) |", flush=True)


if __name__ == "__main__":
    main()
