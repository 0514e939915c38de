"""What tests/e2e/test_commands*.py share: every example command README.md and docs/USAGE.md
show, extracted from them, and a session that runs such a command as written against real
workloads.

A command runs as the docs write it, through bash, in a directory of its own, with only what
a machine of ours cannot have substituted: `sudo` (we are root), `bpfsight` for the build's,
a real process for PID 4242 (the job the scenario started), the file the previous command
wrote for `run.bst`, a real program for `python3 train.py` and `./train`, short durations for
`-d 30s` (a scenario does not wait half a minute) and for the 1 s between `top -b -n N`'s
frames (`-i 200ms`: the frames are the same, five of them in a second), a temporary directory
for /opt/bpfsight.
"""
import os
import re
import shlex
import signal
import subprocess
import time

import pymods
from helpers import BPFSIGHT, BUILD, Skip, check, eq, need_root, spawn, tmpdir, workload

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = (os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "USAGE.md"))
WORKLOADS = os.path.join(ROOT, "tests", "workloads")
# Debian's python3 (a symlink to python3.11: its comm is "python3", as a user's job's is),
# with Debian's torch (make deps installs python3-torch).
DEBIAN_PY = "/usr/bin/python3"
# What a family records nothing without, as options for `record` (pyfunc: the functions to
# time; -t pyfunc alone is refused).
FAMILY_NEEDS = {"pyfunc": " --python-functions pytorch"}
CUDART = "/usr/local/cuda/lib64/libcudart.so"

# Words that make a command a synopsis (a form to fill in), not an example to run.
PLACEHOLDER = re.compile(r"\b(PID|FILE|OUT|CMD|DUR|VERSION|KEY|DIR|NAME|FORMAT|REPORT|SIZE|"
                         r"ADDR|PORT|LIST|ARGS|OPTIONS|COMMAND|N|K|P|RANK_FILES)\b|\.\.\.|[|\[]")


def _strip_comment(line):
    """A shell line without its trailing `# comment`: (code, comment)."""
    m = re.search(r"(^|\s)#\s?(.*)$", line)
    if not m:
        return line.rstrip(), ""
    return line[:m.start()].rstrip(), m.group(2).strip()


def _readme_examples(path):
    """The ```sh blocks' command lines (continuations joined), each with its comment."""
    text = open(path).read()
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        pending = ""
        for line in block.splitlines():
            code, comment = _strip_comment(line)
            if not code:
                if out and comment and not pending:
                    out[-1] = (out[-1][0], out[-1][1] + " " + comment)
                continue
            if code.endswith("\\"):
                pending += code[:-1].rstrip() + " "
                continue
            out.append((pending + code.strip(), comment))
            pending = ""
    return out


def _usage_examples(path):
    """USAGE.md's examples: prompts in its code blocks ("$ CMD"), and commands in its prose
    that are whole (no placeholder, not a message quoted, not a bare command name)."""
    text = open(path).read()
    out = []
    for block in re.findall(r"```\w*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:].strip(), "docs/USAGE.md"))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for cmd in re.findall(r"`((?:sudo )?bpfsight [^`]+)`", prose):
        words = cmd.split()
        if PLACEHOLDER.search(cmd) or re.match(r"(sudo )?bpfsight [\w-]+:", cmd):
            continue  # a synopsis, or a message quoted
        if len(words) == 2 and not words[1].startswith("-"):
            continue  # a command named in a sentence: `bpfsight merge`
        out.append((cmd, "docs/USAGE.md"))
    return out


def examples():
    """{command: comment} of every example README.md and docs/USAGE.md show."""
    found = {}
    for cmd, comment in _readme_examples(DOCS[0]) + _usage_examples(DOCS[1]):
        found.setdefault(cmd, comment)
    return found


class Session:
    """A scenario's directory, its jobs, and the last trace its commands wrote."""

    def __init__(self):
        need_root()
        self.dir = tmpdir()
        self.jobs = []
        self.last = None  # what run.bst stands for: the last trace written
        self.env = dict(os.environ)
        # (regex, replacement) of what else this scenario substitutes: a server's port
        self.subs = []

    # ---- jobs: real workloads a command attaches to ----

    def start(self, args, env=None, ready=None):
        """A job; READY (a regex) waits for its first stdout line to match. Returns it."""
        p = spawn(args, env=env or self.env, cwd=self.dir)
        self.jobs.append(p)
        if ready:
            line = p.stdout.readline()
            check(re.search(ready, line), f"{args[0]} not ready: {line!r} {p.stderr.read()[-300:]}"
                  if p.poll() is not None else f"{args[0]}: {line!r}")
        return p

    def python_job(self):
        """GIL-bound: three CPU-bound Python threads (pyenv's python3, symbols or not)."""
        return self.start(["python3", os.path.join(WORKLOADS, "gil_work.py"), "cpu", "3", "300"])

    def blocking_job(self):
        """A Python thread that sleeps 20 ms at a time (off-CPU, >= 1 ms) beside a spinner."""
        return self.start(["python3", os.path.join(WORKLOADS, "gil_work.py"), "io", "10000",
                           "20"])

    def torch_job(self, sleep=0.01):
        """A CPU PyTorch job training on a DataLoader with two worker processes; SLEEP seconds
        after each step (some 80 steps a second: a job the command attaches to need not take
        a core from the other tests while the scenario waits), None for none."""
        need_torch()
        pace = ["--sleep", str(sleep)] if sleep else []
        return self.start([DEBIAN_PY, os.path.join(WORKLOADS, "torch_loader.py"), "--seconds",
                           "300", *pace], ready=r'"workers"')

    def cuda_job(self):
        """A thread calling the real libcudart (no GPU: every call fails fast, probes fire)."""
        need_cuda()
        return self.start([workload("cuda_paced"), CUDART, "10"], ready=r"^pid \d+")

    def close(self):
        for p in self.jobs:
            if p.poll() is None:
                p.kill()
            p.wait(30)

    # ---- commands ----

    def command(self, cmd, pid=None, train=None):
        """CMD as bash would run it here, with what this machine cannot have substituted."""
        subs = [(r"^sudo ", ""), (r"(^|[\s(])sudo ", r"\1"),
                (r"(^|[\s(\"$])bpfsight ", rf"\1{shlex.quote(BPFSIGHT)} "),
                (r"(^|\s)build/bpfsight ", rf"\1{shlex.quote(BPFSIGHT)} "),
                (r"-d (30|10)s\b", "-d 2s"), (r"\b(top -b -n \d+)", r"\1 -i 200ms"),
                (r"/opt/bpfsight", os.path.join(self.dir, "opt"))]
        if pid is not None:
            subs.append((r"\b4242\b", str(pid)))
        if self.last:
            subs.append((r"(?<![\w/])run\.bst\b", shlex.quote(self.last)))
        if train:
            subs.append((r"(python3 train\.py|\./train)\b", train))
        subs += self.subs
        for a, b in subs:
            cmd = re.sub(a, b, cmd)
        return cmd

    def run(self, cmd, pid=None, train=None, timeout=180, ok=True):
        """Run documented CMD; its status must be 0 unless OK is False. Remembers the trace
        it wrote. Returns the CompletedProcess (stdout, stderr as text)."""
        line = self.command(cmd, pid, train)
        p = subprocess.run(["bash", "-c", line], cwd=self.dir, env=self.env, text=True,
                           capture_output=True, timeout=timeout)
        if ok:
            eq(p.returncode, 0, f"`{cmd}` ran as `{line}`: {p.stderr[-800:]}")
        m = re.findall(r"wrote (\S+\.bst):", p.stderr)
        if m:
            self.last = os.path.join(self.dir, m[-1])
        return p

    def run_until(self, cmd, seen, pid=None, sig=signal.SIGINT, timeout=120):
        """Run a command that runs until stopped: stop it with SIG once its stdout or stderr
        holds SEEN (a regex). Returns (status, stdout, stderr)."""
        line = self.command(cmd, pid)
        p = subprocess.Popen(["bash", "-c", "exec " + line], cwd=self.dir, env=self.env,
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = [], []
        import threading
        readers = [threading.Thread(target=lambda s=s, b=b: b.extend(s), daemon=True)
                   for s, b in ((p.stdout, out), (p.stderr, err))]
        for t in readers:
            t.start()
        deadline = time.monotonic() + timeout
        while not re.search(seen, "".join(out) + "".join(err)):
            if p.poll() is not None or time.monotonic() > deadline:
                p.kill()
                raise AssertionError(f"`{cmd}` never showed {seen!r}: {''.join(err)[-800:]}")
            time.sleep(0.1)
        p.send_signal(sig)
        rc = p.wait(60)
        for t in readers:
            t.join(10)
        return rc, "".join(out), "".join(err)


def need_torch():
    if not pymods.has(DEBIAN_PY, "torch"):
        raise Skip(f"no torch for {DEBIAN_PY} (make deps installs python3-torch)")


def need_cuda():
    if not os.path.exists(CUDART) or not os.path.exists(workload("cuda_paced")):
        raise Skip(f"no CUDA toolkit ({CUDART}) or CUDA workloads (make test-build)")
