#!/usr/bin/env python3
"""make check-torch-versions: the torch family against every torch release Debian packages.

For each Debian suite (bookworm: torch 1.13, trixie: 2.6, sid: the newest), builds a root
folder from that suite's packages alone (apt-get download of python3-torch's dependency
closure and dash, each unpacked with dpkg-deb: no maintainer script runs, so the usrmerge
links and the BLAS/LAPACK alternatives are made by hand), cached in build/torch-roots/VERSION/
(rebuilt when the suite's packages change). Then, per release:

  layout  tests/torch/layout.cpp compiled against that release's libtorch-dev headers (the
          real installed ones, generated headers included) prints the offsets, sizes and tags
          the shim reads; they must equal the release's row of cupti-shim/shim_torch_lib.c's
          table (and the shim's fixed assumptions: a 40-byte RecordFunctionCallback with the
          scopes at 24, 16-byte IValues, Tensor's tag 1).
  tests   the torch e2e tests (tests/e2e/test_torch.py and test_torch_concrete.py: ops, shapes
          and concrete inputs equal torch.profiler's in the same job, -p --inject with
          --capture-range=steps, a refused version, a wrong layout caught, a first op
          holding kwargs passing the check) run by the host's
          bpfsight against that release's python3, chrooted into the root
          (BPFSIGHT_TORCH_PYTHON names a wrapper that does it). The root sees the checkout at
          its own path, /tmp and /run/bpfsight (where the recorder puts the shim) bind-mounted,
          /proc and /dev: the shim the recorder preloads or injects is the host's build.

Prints a table release x (layout, tests) -> pass / FAIL with the reasons; exits 1 if any
failed. Not part of make check (CI's 8 minutes): a first run downloads ~700 MB of packages
(cached in build/torch-roots/debs/) and takes minutes per release.

  tests/torch/check_torch_versions.py [--build DIR] [--suites bookworm,trixie,sid]
                                      [-k PATTERN]    (as root: chroot, mount, BPF)
  tests/torch/check_torch_versions.py --headers VERSION=DIR [--headers ...]

--headers compares the table with any release's headers (a libtorch archive's include/, a
wheel's torch/include/): no root, no tests, no root privileges; how the releases Debian does
not package were checked (docs/TORCH.md "Versions").
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TABLE = os.path.join(ROOT, "cupti-shim", "shim_torch_lib.c")
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SUITES = ["bookworm", "trixie", "sid"]
TESTS = ["test_torch:", "test_torch_concrete:", "test_pyfunc:test_pyfunc_torch_compile"]
# The table's columns after the version and the note (struct torch_layout's order).
COLUMNS = ["num_scopes", "thread_id", "scope", "needs_inputs", "fn_index", "seq", "inputs",
           "fwd_tid", "impl_sizes", "impl_numel", "tag_double", "tag_int", "tag_bool",
           "tag_list", "list_vector"]
# What the shim's code takes as given in every version (cupti-shim/shim_torch.h).
FIXED = {"rfcb_size": 40, "rfcb_scopes": 24, "ivalue_size": 16, "tag_tensor": 1}
# Headers of other packages that a release's torch headers include (1.13: gflags, glog).
HEADER_DEPS = ("libgflags-dev", "libgoogle-glog-dev")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


class Apt:
    """apt-get on one suite, with its own lists, cache and an empty dpkg status."""

    def __init__(self, base, suite):
        self.dir = os.path.join(base, "apt-" + suite)
        for d in ("lists/partial", "cache/archives/partial", "etc"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        with open(os.path.join(self.dir, "etc", "sources.list"), "w") as f:
            f.write(f"deb [signed-by={KEYRING}] {MIRROR} {suite} main\n")
        open(os.path.join(self.dir, "status"), "a").close()
        self.conf = os.path.join(self.dir, "apt.conf")
        with open(self.conf, "w") as f:
            for k, v in (("Dir::Etc::sourcelist", "etc/sources.list"),
                         ("Dir::Etc::sourceparts", "/nonexistent"),
                         ("Dir::State::Lists", "lists"), ("Dir::Cache", "cache"),
                         ("Dir::State::status", "status")):
                f.write(f'{k} "{os.path.join(self.dir, v)}";\n')
            f.write('APT::Install-Recommends "false";\n')

    def get(self, *args, **kw):
        return sh(["apt-get", "-c", self.conf, "-q", *args], **kw)

    def closure(self, *pkgs):
        """{package: version} that installing PKGS on an empty system takes."""
        out = self.get("-s", "install", *pkgs)
        return dict(re.findall(r"^Inst (\S+) \((\S+)", out, re.M))

    def depends(self, pkg):
        out = sh(["apt-cache", "-c", self.conf, "depends", pkg])
        return re.findall(r"Depends: (\S+)", out)

    def download(self, pkgs, into):
        """The .debs of PKGS ({name: version}) into INTO (kept: a cache); their paths."""
        os.makedirs(into, exist_ok=True)
        want = {p: os.path.join(into, f"{p}_{v.replace(':', '%3a')}_") for p, v in pkgs.items()}
        have = os.listdir(into)
        missing = [f"{p}={pkgs[p]}" for p, pre in want.items()
                   if not any(os.path.join(into, h).startswith(pre) for h in have)]
        if missing:
            self.get("download", *missing, cwd=into)
            have = os.listdir(into)
        return [os.path.join(into, h) for p, pre in want.items() for h in have
                if os.path.join(into, h).startswith(pre)]


def unpack(debs, into):
    for d in debs:
        sh(["dpkg-deb", "-x", d, into])


def build_root(apt, base, suite):
    """The root of SUITE's torch, built or reused; (torch version, its folder)."""
    pkgs = apt.closure("python3-torch", "dash")
    version = pkgs["python3-torch"].split("+")[0]
    major_minor = ".".join(version.split(".")[:2])
    top = os.path.join(base, major_minor)
    root, dev = os.path.join(top, "root"), os.path.join(top, "dev")
    stamp = os.path.join(top, "packages")
    listing = "".join(f"{p} {v}\n" for p, v in sorted(pkgs.items()))
    if os.path.exists(stamp) and open(stamp).read() == listing:
        return version, top
    print(f"{suite}: torch {version}: {len(pkgs)} packages", flush=True)
    shutil.rmtree(top, ignore_errors=True)
    os.makedirs(root)
    debs = os.path.join(base, "debs")
    unpack(apt.download(pkgs, debs), root)
    for d in ("bin", "sbin", "lib", "lib64"):  # usrmerge: base-files' links, made by hand
        if not os.path.lexists(os.path.join(root, d)):
            os.symlink("usr/" + d, os.path.join(root, d))
    lib = os.path.join(root, "usr/lib/x86_64-linux-gnu")
    for alt in ("blas/libblas.so.3", "lapack/liblapack.so.3"):  # update-alternatives' links
        if os.path.exists(os.path.join(lib, alt)):
            os.symlink(alt, os.path.join(lib, os.path.basename(alt)))
    for d in ("proc", "dev", "tmp", "run/bpfsight", ROOT.lstrip("/")):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    dev_pkgs = apt.closure("libtorch-dev")
    headers = {p: dev_pkgs[p] for p in ("libtorch-dev",) + HEADER_DEPS
               if p in dev_pkgs and (p == "libtorch-dev" or p in apt.depends("libtorch-dev"))}
    os.makedirs(dev)
    unpack(apt.download(headers, debs), dev)
    with open(os.path.join(top, "python"), "w") as f:
        f.write("#!/bin/sh\n# python3 of the root, in the caller's directory\n"
                f'exec chroot "{root}" /bin/sh -c \'cd "$0" 2>/dev/null || cd /; '
                'exec /usr/bin/python3 "$@"\' "$PWD" "$@"\n')
    os.chmod(os.path.join(top, "python"), 0o755)
    with open(stamp, "w") as f:
        f.write(listing)
    return version, top


def table():
    """cupti-shim/shim_torch_lib.c's rows: {version: {column: value}}."""
    text = open(TABLE).read()
    rows = {}
    for ver, nums in re.findall(r'\{\s*"(\d+\.\d+)",\s*"[^"]*",\s*([0-9xa-fA-F,\s]+)\}', text):
        vals = [int(v, 0) for v in nums.replace("\n", " ").split(",") if v.strip()]
        rows[ver] = dict(zip(COLUMNS, vals))
    return rows


def check_layout(include, exe, row):
    """'' when the headers under INCLUDE give ROW, else why not (EXE: layout.cpp built)."""
    err = ""
    for std in ("c++20", "c++17"):
        p = subprocess.run(["g++", f"-std={std}", "-O1", "-w", "-DNDEBUG", "-I", include,
                            "-Wl,--unresolved-symbols=ignore-all", "-o", exe,
                            os.path.join(HERE, "layout.cpp")], capture_output=True, text=True)
        if p.returncode == 0:
            break
        err = p.stderr
    else:
        return "layout.cpp does not compile: " + err[-300:]
    real = json.loads(sh([exe]))
    if row is None:
        return f"no row in shim_torch_lib.c; the headers give {real}"
    want = dict(row, **FIXED, rfcb_needs_inputs=FIXED["rfcb_scopes"] + row["num_scopes"])
    bad = [f"{k} {want[k]:#x} (headers: {real[k]:#x})" for k in want if real.get(k) != want[k]]
    return "; ".join(bad)


class Mounts:
    """The root's view of the host: the checkout, /tmp, /run/bpfsight, /proc, /dev."""

    def __init__(self, root):
        self.root, self.done = root, []

    def __enter__(self):
        os.makedirs("/run/bpfsight", exist_ok=True)
        for src, dst, how in ((None, "proc", ["-t", "proc", "proc"]), ("/dev", "dev", ["--rbind"]),
                              ("/tmp", "tmp", ["--bind"]),
                              ("/run/bpfsight", "run/bpfsight", ["--bind"]),
                              (ROOT, ROOT.lstrip("/"), ["--bind"])):
            target = os.path.join(self.root, dst)
            sh(["mount", *how, *([src] if src else []), target])
            self.done.append(target)
        return self

    def __exit__(self, *exc):
        for target in reversed(self.done):
            if subprocess.run(["umount", "-R", target], capture_output=True).returncode:
                subprocess.run(["umount", "-R", "-l", target], capture_output=True)


def run_tests(build, top, patterns):
    """[(pattern, 'N passed, M failed', failures)]"""
    env = dict(os.environ, BPFSIGHT_TORCH_PYTHON=os.path.join(top, "python"))
    out = []
    for pat in patterns:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "run_tests.py"),
                            "--build", build, "--no-unit", "--no-fuzz", "-k", pat],
                           capture_output=True, text=True, env=env)
        summary = re.findall(r"^(\d+ passed, \d+ failed(?:, \d+ skipped)?)$", p.stdout + p.stderr,
                             re.M)
        fails = re.findall(r"^FAIL (.*)$", p.stdout + p.stderr, re.M)
        out.append((pat, summary[-1] if summary else f"exit {p.returncode}", fails,
                    p.returncode))
    return out


def check_headers(pairs, build):
    """--headers: each VERSION=DIR against the table; 0 when all equal."""
    rows, bad = table(), 0
    os.makedirs(build, exist_ok=True)
    for pair in pairs:
        version, _, include = pair.partition("=")
        mm = ".".join(version.split(".")[:2])
        why = check_layout(include, os.path.join(build, "torch-layout"), rows.get(mm))
        bad += bool(why)
        print(f"{version:24} {'FAIL: ' + why if why else 'equal to the table'}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("-k", dest="patterns", default=",".join(TESTS),
                    help="run_tests.py patterns, comma-separated")
    ap.add_argument("--headers", action="append", default=[], metavar="VERSION=DIR",
                    help="only compare the table with the headers in DIR (a libtorch "
                         "archive's include/, a wheel's torch/include/) of torch VERSION")
    args = ap.parse_args()
    if args.headers:
        sys.exit(check_headers(args.headers, os.path.abspath(args.build)))
    if os.geteuid():
        sys.exit("check-torch-versions: needs root (chroot, mount, BPF)")
    build = os.path.abspath(args.build)
    base = os.path.join(build, "torch-roots")
    rows = table()
    results, failed = [], False
    for suite in args.suites.split(","):
        apt = Apt(base, suite)
        try:
            apt.get("update")
            version, top = build_root(apt, base, suite)
        except subprocess.CalledProcessError as e:
            results.append((suite, "?", f"root not built: {e.cmd[:4]}: {e.stderr[-300:]}", []))
            failed = True
            continue
        mm = ".".join(version.split(".")[:2])
        layout = check_layout(os.path.join(top, "dev", "usr", "include"),
                              os.path.join(top, "layout"), rows.get(mm))
        with Mounts(os.path.join(top, "root")):
            tests = run_tests(build, top, args.patterns.split(","))
        failed |= bool(layout) or any(rc for *_, rc in tests)
        results.append((suite, version, layout, tests))
    print(f"\n{'suite':10} {'torch':8} {'layout':8} tests")
    for suite, version, layout, tests in results:
        print(f"{suite:10} {version:8} {'FAIL' if layout else 'pass':8} "
              + "; ".join(f"{pat} {summary}" for pat, summary, _, _ in tests))
        if layout:
            print(f"    layout: {layout}")
        for _, _, fails, _ in tests:
            for f in fails:
                print(f"    {f[:300]}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
