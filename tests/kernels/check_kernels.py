#!/usr/bin/env python3
"""make check-kernels: the host's build tested on the other kernels Debian packages.

For each kernel series Debian's apt sources offer as linux-image-X-amd64 (the newest ABI of
each: 6.1 and 6.12 on Debian 12), downloads the package (apt-get download, cached in
build/kernels/), packs a busybox initramfs with the virtio and 9p modules of that package,
and boots it under QEMU (TCG: no KVM needed; -smp 2). The VM mounts the host's root
read-only over 9p and runs, chrooted into it, `bpfsight record --features` and the
end-to-end tests of each family (tests/kernels/guest.sh) against the host's build. Prints a
table kernel x family -> pass/fail with the failures' reasons; exits 1 if any failed.

  tests/kernels/check_kernels.py [--build DIR] [--kernels 6.1,6.12] [--families osrt,sched]
                                 [--timeout SECONDS] [--command CMD]
(as root; the features and the kernel each needs: user/record/kernel_features.h). --command
runs CMD in the checkout instead of the tests (e.g. bench/stop_time.py) and prints its output.

What is tested where: make check (the host's kernel) runs every path with every feature, and
tests/e2e/test_fallbacks.py the fallbacks forced (osrt and sched on raw_tp + hashes + the CO-RE
task state, cuda and gil on perf-event uprobes, gil without bpf_loop, exact counts each; the
refusals without ring buffer or attach cookies). This script boots the kernels Debian 12's apt
offers (6.1, the newest ABI, and 6.12) in QEMU without KVM (TCG, -smp 2, 4 GiB): the busybox
initramfs loads the package's virtio and 9p modules, mounts the host's root read-only over 9p
(tmpfs on /tmp and /run; /sys/fs/bpf, debugfs, tracefs mounted), chroots into it and runs the
families' e2e tests against the host's build (guest.sh). It prints the kernel's
`record --features` and a table kernel x family -> pass / FAIL with the failing tests' reasons
and seconds; logs in build/kernels/out/PACKAGE/ (console.log, one log per family); the package
and the initramfs are cached in build/kernels/ (never committed). KERNELS=6.1,
FAMILIES=osrt,sched, FAMILY_TIMEOUT=900 narrow it. The guest runs with
BPFSIGHT_TEST_SLOWDOWN=10 (helpers.SLOWDOWN): the few bounds a ten times slower machine cannot
meet (a dlopen probed within 300 ms, steps of a torch loop in 3 s) scale with it, exact counts
never. What the VM cannot do is left out by the patterns (e.g. `bpfsight shim`'s default
directory on the read-only root). Under multi-threaded TCG, 6.12 once oopsed on an int3 in
__schedule while perf_event_open patched a jump label (a TCG cross-vCPU code-patching
artefact): QEMU_TCG=single runs both vCPUs on one host thread. 5.15, 5.14 and 5.10 have no
Debian 12 package: for them the feature table, from the kernel sources, and the forced
fallbacks are the evidence. Run times and the last results: bench/RESULTS.md, "make
check-kernels".
"""
import argparse
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# What runs on each kernel: name -> run_tests.py -k patterns (substrings of FILE:TEST; the
# colon keeps test_osrt from matching test_fallbacks:test_osrt_...) [@ the environment to
# run them in]. "fallbacks" runs key families again with their fallbacks forced.
FAMILIES = {
    "osrt": "test_osrt:,test_osrt_churn:,test_osrt_final:,test_osrt_modes:",
    "sched": "test_sched:",
    "proc": "test_lifecycle:,test_target_lifetime:",
    "cuda": "test_cuda:",
    "nccl": "test_nccl:",
    "gil": "test_gil:",
    "stacks": "test_cpu:,test_stacks_,test_py_stacks:,test_ucall_stack:",
    "nvtx": "test_nvtx:",
    "mem": "test_mem:",
    "cublas": "test_cublas:",
    "cudnn": "test_cudnn:",
    "blas": "test_blas:",
    "torch_stacks": "test_torch_stacks:",
    "shim": "test_shim:,test_shim_link:",
    "exports": "test_export_",
    "fallbacks": "test_fallbacks:",
}

# The modules the initramfs loads (Debian builds them as modules), with those they depend
# on as far as a version has them; load_order() sorts them by their "depends=".
MODULES = ["virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev",
           "virtio_pci", "netfs", "fscache", "9pnet", "9pnet_virtio", "9p"]


def log(msg):
    print(f"  KERNELS  {msg}", flush=True)


def kernels_offered():
    """{series: package}: the newest generic amd64 image of each series apt knows."""
    out = subprocess.run(["apt-cache", "search", "--names-only", r"^linux-image-[0-9].*-amd64$"],
                         capture_output=True, text=True, check=True).stdout
    best = {}
    for line in out.splitlines():
        pkg = line.split()[0]
        if re.search(r"-(cloud|rt)-amd64$", pkg):
            continue
        nums = tuple(int(n) for n in re.findall(r"\d+", pkg[len("linux-image-"):]))
        series = f"{nums[0]}.{nums[1]}"
        if series not in best or nums > best[series][0]:
            best[series] = (nums, pkg)
    return {s: p for s, (_, p) in sorted(best.items(), key=lambda kv: kv[1][0])}


def fetch(pkg, cache):
    """The package's vmlinuz and the modules MODULES names, extracted once into cache/PKG."""
    dest = os.path.join(cache, pkg)
    if os.path.exists(os.path.join(dest, "complete")):
        return dest
    debs = os.path.join(cache, "debs")
    os.makedirs(debs, exist_ok=True)
    if not glob.glob(os.path.join(debs, pkg + "_*.deb")):
        log(f"apt-get download {pkg}")
        subprocess.run(["apt-get", "download", "-q", pkg], cwd=debs, check=True,
                       stdout=subprocess.DEVNULL)
    deb = glob.glob(os.path.join(debs, pkg + "_*.deb"))[0]
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["dpkg-deb", "-x", deb, tmp], check=True)
    os.makedirs(os.path.join(dest, "modules"), exist_ok=True)
    shutil.copy(glob.glob(os.path.join(tmp, "boot", "vmlinuz-*"))[0],
                os.path.join(dest, "vmlinuz"))
    for m in MODULES:
        found = [p for p in glob.glob(os.path.join(tmp, "lib", "modules", "*", "kernel", "**",
                                                   m + ".ko*"), recursive=True)]
        if not found:
            continue  # built in, or not needed by this version
        data = open(found[0], "rb").read()
        if found[0].endswith(".xz"):
            data = subprocess.run(["xz", "-dc"], input=data, capture_output=True,
                                  check=True).stdout
        elif found[0].endswith(".zst"):
            data = subprocess.run(["zstd", "-dc"], input=data, capture_output=True,
                                  check=True).stdout
        with open(os.path.join(dest, "modules", m + ".ko"), "wb") as f:
            f.write(data)
    shutil.rmtree(tmp)
    open(os.path.join(dest, "complete"), "w").close()
    return dest


def load_order(kdir):
    """The modules kdir has, each after those its .modinfo "depends=" names."""
    deps = {}
    for m in MODULES:
        path = os.path.join(kdir, "modules", m + ".ko")
        if os.path.exists(path):
            found = re.search(rb"\0depends=([^\0]*)\0", open(path, "rb").read())
            deps[m] = [d for d in (found.group(1).decode().split(",") if found else []) if d]
    order = []

    def visit(m):
        if m in order or m not in deps:
            return
        for d in deps[m]:
            visit(d)
        order.append(m)
    for m in deps:
        visit(m)
    return order


def initramfs(kdir):
    """busybox, the modules in load order and init.sh as /init, as a gzipped newc cpio."""
    out = os.path.join(kdir, "initramfs.cpio.gz")
    init = os.path.join(HERE, "init.sh")
    if os.path.exists(out) and os.path.getmtime(out) > os.path.getmtime(init):
        return out
    stage = os.path.join(kdir, "stage")
    shutil.rmtree(stage, ignore_errors=True)
    for d in ("bin", "proc", "sys", "dev", "modules"):
        os.makedirs(os.path.join(stage, d))
    shutil.copy("/bin/busybox", os.path.join(stage, "bin", "busybox"))
    shutil.copy(init, os.path.join(stage, "init"))
    mods = load_order(kdir)
    for m in mods:
        shutil.copy(os.path.join(kdir, "modules", m + ".ko"), os.path.join(stage, "modules"))
    with open(os.path.join(stage, "modules", "order"), "w") as f:
        f.write("\n".join(mods) + "\n")
    files = subprocess.run(["find", "."], cwd=stage, capture_output=True, text=True,
                           check=True).stdout
    cpio = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=stage, input=files.encode(),
                          capture_output=True, check=True).stdout
    with open(out, "wb") as f:
        f.write(gzip.compress(cpio, 6))
    shutil.rmtree(stage)
    return out


def boot(kdir, outdir, build, families, limit, command=None):
    """One VM: every family's tests in turn, or COMMAND. Returns the console log."""
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    guest_out = "/tmp/kernels-out"
    specs = " ".join(f"'{n}={FAMILIES[n]}'" for n in families)
    with open(os.path.join(outdir, "run.sh"), "w") as f:
        if command:
            f.write(f"cd {ROOT} && timeout {limit} sh -c '{command}' >{guest_out}/command.log "
                    "2>&1\n")
        else:
            f.write(f"exec {os.path.join(HERE, 'guest.sh')} {guest_out} {build} {limit} "
                    f"{specs}\n")
    # QEMU_TCG=single: one host thread for both vCPUs (6.12 once oopsed on an int3 of a
    # jump-label patch made while the other vCPU ran it, under multi-threaded TCG).
    tcg = os.environ.get("QEMU_TCG", "multi")
    cmd = ["qemu-system-x86_64", "-accel", f"tcg,thread={tcg}", "-smp", "2", "-m", "4096",
           "-cpu", "max", "-nographic", "-no-reboot", "-nic", "none",
           "-kernel", os.path.join(kdir, "vmlinuz"), "-initrd", initramfs(kdir),
           # no_timer_check: under a loaded TCG the IO-APIC timer check can miss its ticks
           # and panic the boot ("IO-APIC + timer doesn't work").
           "-append", f"console=ttyS0 quiet panic=-1 no_timer_check "
                      f"bpfsight.run={guest_out}/run.sh",
           "-fsdev", "local,id=host,path=/,readonly=on,multidevs=remap,security_model=none",
           "-device", "virtio-9p-pci,fsdev=host,mount_tag=host",
           "-fsdev", f"local,id=out,path={outdir},security_model=none",
           "-device", "virtio-9p-pci,fsdev=out,mount_tag=out"]
    # Each family is bounded inside the VM; this bounds a VM that never gets that far.
    total = 120 + limit * (1 if command else
                           sum(len(FAMILIES[n].split("@")[0].split(",")) for n in families))
    with open(os.path.join(outdir, "console.log"), "w") as con:
        try:
            subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=con, stderr=subprocess.STDOUT,
                           timeout=total)
        except subprocess.TimeoutExpired:
            con.write(f"\ncheck-kernels: the VM ran past {total} s and was killed\n")
    return open(os.path.join(outdir, "console.log"), errors="replace").read()


def verdict(logfile):
    """(passed, 'pass (N tests)' or 'FAIL: reasons') from one family's run_tests logs."""
    if not os.path.exists(logfile):
        return False, "FAIL: did not run (see console.log)"
    text = open(logfile, errors="replace").read()
    runs = re.findall(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$", text, re.M)
    rcs = re.findall(r"^# rc (\d+) after (\d+) s", text, re.M)
    secs = sum(int(s) for _, s in rcs)
    fails = [l[5:] for l in text.splitlines() if l.startswith("FAIL ")]
    skips = [l[5:] for l in text.splitlines() if l.startswith("SKIP ")]
    passed = sum(int(p) for p, _, _ in runs)
    if fails or len(runs) < len(rcs) or any(rc not in ("0",) for rc, _ in rcs):
        why = "; ".join(f[:300] for f in fails) or f"no summary line (rc {rcs}, timed out?)"
        return False, f"FAIL ({passed} passed, {len(fails)} failed, {secs} s): {why}"
    extra = f", {len(skips)} skipped: " + "; ".join(s[:160] for s in skips[:3]) if skips else ""
    return True, f"pass ({passed} passed{extra}, {secs} s)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--kernels", default=os.environ.get("KERNELS", ""),
                    help="series to test, e.g. 6.1 (default: every series offered)")
    ap.add_argument("--families", default=os.environ.get("FAMILIES", ",".join(FAMILIES)))
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("FAMILY_TIMEOUT", 900)),
                    help="seconds each -k pattern may run in the VM")
    ap.add_argument("--command", help="run this in the checkout instead of the tests")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("check-kernels: needs root (BPF in the VM runs as the host's root user)")
    for tool in ("qemu-system-x86_64", "cpio"):
        if not shutil.which(tool):
            sys.exit(f"check-kernels: no {tool}: apt-get install qemu-system-x86 busybox-static "
                     "cpio (make deps)")
    if not os.path.exists("/bin/busybox"):
        sys.exit("check-kernels: no /bin/busybox: apt-get install busybox-static")
    build = os.path.abspath(args.build)
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        sys.exit(f"check-kernels: unknown families {unknown}; known: {', '.join(FAMILIES)}")
    offered = kernels_offered()
    wanted = [s for s in args.kernels.split(",") if s] or list(offered)
    missing = [s for s in wanted if s not in offered]
    if missing:
        sys.exit(f"check-kernels: no Debian package for {missing}; apt offers "
                 f"{', '.join(offered)} (apt-get update?)")
    cache = os.path.join(build, "kernels")
    rows, ok = [], True
    for series in wanted:
        pkg = offered[series]
        kdir = fetch(pkg, cache)
        outdir = os.path.join(cache, "out", pkg + ("-command" if args.command else ""))
        log(f"boot {pkg}: {', '.join(families)}")
        t0 = time.time()
        console = boot(kdir, outdir, build, families, args.timeout, args.command)
        uname = open(os.path.join(outdir, "uname")).read().strip() \
            if os.path.exists(os.path.join(outdir, "uname")) else "?"
        log(f"{pkg}: uname {uname}, {time.time() - t0:.0f} s in the VM "
            f"(console: {os.path.join(outdir, 'console.log')})")
        if args.command:
            res = os.path.join(outdir, "command.log")
            print(open(res).read() if os.path.exists(res) else console[-2000:])
            ok &= os.path.exists(res)
            continue
        feats = os.path.join(outdir, "features")
        if os.path.exists(feats):
            for line in open(feats):
                log(f"  {line.rstrip()}")
        elif "init: up" not in console:
            rows.append((pkg, "boot", False, "FAIL: the VM did not come up: " +
                         " | ".join(console.strip().splitlines()[-5:])))
            ok = False
            continue
        for fam in families:
            good, why = verdict(os.path.join(outdir, fam + ".log"))
            ok &= good
            rows.append((pkg, fam, good, why))
    print()
    w = max(len(r[0]) for r in rows) if rows else 10
    for pkg, fam, _, why in rows:
        print(f"{pkg:<{w}}  {fam:<9}  {why}")
    print(f"check-kernels: {'all passed' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
