#!/usr/bin/env python3
"""bpfsight report's page on the real traces (issue 44): the page's size, the CPU time report
takes, and how long chromium (headless, 1280 px) takes to load it: parse, script and the first
layout, measured inside the page (performance.now() at its load event, after a forced layout),
the least of --runs runs. Prints a markdown table for bench/RESULTS.md.

  python3 bench/report_page.py [--build build] [--runs 3] [TRACE...]
"""
import argparse
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import tempfile

PROBE = ("<script>addEventListener('load',function(){document.body.getBoundingClientRect();"
         "var p=document.createElement('pre');p.id='loadms';p.textContent=performance.now();"
         "document.body.appendChild(p)})</script>")


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def load_ms(chromium, page, d):
    with open(page) as f:
        html = f.read().replace("</body>", PROBE + "</body>")
    copy = os.path.join(d, "timed.html")
    with open(copy, "w") as f:
        f.write(html)
    p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={d}/profile", "--window-size=1280,1600", "--dump-dom",
                        "file://" + copy], capture_output=True, text=True, timeout=120)
    return float(re.search(r'<pre id="loadms">([\d.]+)</pre>', p.stdout).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("traces", nargs="*")
    a = ap.parse_args()
    bpfsight = os.path.join(a.build, "bpfsight")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    traces = a.traces or sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "shared", "traces", "*.bst")))
    print("| trace | records | report CPU | page size | chromium load (parse, script, layout) |")
    print("|---|---|---|---|---|")
    for t in traces:
        with tempfile.TemporaryDirectory() as d:
            page = os.path.join(d, "page.html")
            cpu = min(cpu_of([bpfsight, "report", t, "-o", page, "--force"])
                      for _ in range(a.runs))
            info = json.loads(subprocess.run([bpfsight, "info", "--json", t], check=True,
                                             capture_output=True, text=True).stdout)
            ms = min(load_ms(chromium, page, d) for _ in range(a.runs))
            print(f"| {os.path.basename(t)} | {info['records']:,} | {cpu:.2f} s | "
                  f"{os.path.getsize(page) / 1024:,.0f} KB | {ms / 1000:.2f} s |")


if __name__ == "__main__":
    main()
