"""bpfsight runs as root and reads what traced processes control (docs/SECURITY.md): their
symbols, the files they map, their shim's batches, their names. These tests play the hostile
process, run by an unprivileged user each test creates, and check that the recorder's work
on it stays bounded."""
import os
import pwd
import re
import select
import shutil
import signal
import struct
import subprocess
import time

from helpers import (BPFSIGHT, Skip, alone, check, dump, eq, need_root, run, spawn, tmpdir,
                     wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 40

HOSTILE = "bpfsight-hostile"
BOMB = workload("demangle_bomb")
FAKE = workload("shim_fake")
# tests/workloads/demangle_bomb.h
BOMB_NAME = ("_Z3hot1PI" + "S_I" * 29 + "iiE" +
             "".join(f"S{c}_E" for c in "0123456789ABCDEFGHIJKLMNOPQRS"))
# A recorder without the demangler's budget grows to ~30 GB on the bomb: it must fail the
# test, not the machine (bpfsight's own address space is well under it).
AS_LIMIT = 4 << 30


def hostile_user():
    """The unprivileged user (created once, no home, no login): (uid, gid)."""
    need_root()
    if not shutil.which("setpriv") or not shutil.which("useradd"):
        raise Skip("no setpriv/useradd")
    try:
        pw = pwd.getpwnam(HOSTILE)
    except KeyError:
        run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
             HOSTILE], check=True)
        pw = pwd.getpwnam(HOSTILE)
    return pw.pw_uid, pw.pw_gid


def as_hostile():
    uid, gid = hostile_user()
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]


def hostile_copy(path):
    """PATH copied where the hostile user can run it: (the copy, its folder)."""
    d = tmpdir()
    os.chmod(d, 0o755)
    dst = os.path.join(d, os.path.basename(path))
    shutil.copy(path, dst)
    os.chmod(dst, 0o755)
    return dst, d


def record_bounded(args, timeout, env=None):
    """bpfsight ARGS with its address space limited: (exit status, stderr, peak RSS in MiB,
    seconds taken). Killed past TIMEOUT (exit status None)."""
    err = os.path.join(tmpdir(), "stderr")

    def limit():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    t0 = time.monotonic()
    with open(err, "w") as f:
        p = subprocess.Popen([BPFSIGHT, *args], stdout=subprocess.DEVNULL, stderr=f,
                             preexec_fn=limit, env=env)
        rc = None
        while time.monotonic() - t0 < timeout:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.05)
        else:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
        p.returncode = rc if rc is not None else -9
    with open(err) as f:
        return rc, f.read(), ru.ru_maxrss / 1024, time.monotonic() - t0


def test_demangler_bomb_in_a_sampled_function():
    """An unprivileged process spins in a function whose symbol demangles to ~30 GB (30 levels
    of nested substitutions), sampled with -t cpu -d 3s: the recording ends (an unbounded
    demangler takes minutes per sample, and its memory), its peak RSS stays under 200 MB, the
    samples name the function mangled, and the recorder says one name was over the budget."""
    exe, d = hostile_copy(BOMB)
    w = spawn(as_hostile() + [exe, "60"])
    pid = int(w.stdout.readline().split()[1])
    out = os.path.join(tmpdir(), "t.bst")
    rc, err, rss, _ = record_bounded(["record", "-o", out, "-t", "cpu", "-p", str(pid), "-d",
                                      "3s"], timeout=90)
    eq(rc, 0, f"record's exit ({err[-600:]})")
    check(rss < 200, f"the recorder's peak RSS: {rss:.0f} MiB")
    check("1 C++ names were over the demangler's budget" in err, f"not counted: {err[-600:]}")
    tops = [e["stack"][0]["func"] for e in dump(out)
            if e["kind"] == "cpu_sample" and e["pid"] == pid and e.get("stack")]
    check(tops.count(BOMB_NAME) > len(tops) / 2,
          f"the hot function, shown mangled: {sorted(set(tops))[:5]} of {len(tops)} samples")
    w.kill()


def test_demangler_bomb_as_a_shim_kernel_name():
    """The same name sent as a GPU kernel's name through the shim channel (gpu is on by
    default under -a and monitor: any user who loads a shim can send one): the kernel record
    keeps the name mangled, the recorder's peak RSS stays under 200 MB."""
    exe, d = hostile_copy(FAKE)
    out = os.path.join(tmpdir(), "t.bst")
    env = dict(os.environ, BPFSIGHT_SHIM=exe)
    rc, err, rss, _ = record_bounded(["record", "-o", out, "-t", "gpu", "--",
                                      *as_hostile(), exe, "bomb"], timeout=90, env=env)
    eq(rc, 0, f"record's exit ({err[-600:]})")
    check(rss < 200, f"the recorder's peak RSS: {rss:.0f} MiB")
    check("1 C++ names were over the demangler's budget" in err, f"not counted: {err[-600:]}")
    kernels = [e["name"] for e in dump(out) if e["kind"] == "gpu_kernel"]
    eq(kernels, [BOMB_NAME], "the kernel, named mangled")


CPU_SPLIT = workload("cpu_split")
UNWIND_QSORT = workload("unwind_qsort")
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"


def debuglink_to(kind):
    """A stripped program of the hostile user whose .gnu_debuglink names prog.debug beside it,
    and prog.debug made KIND by that user ("fifo": a FIFO; "zero": a symlink to /dev/zero;
    "huge": the real debug file made a sparse terabyte, and the program without a build-id,
    so that only the CRC of the whole file could say whether it matches):
    (the program, the debug file's path)."""
    uid, gid = hostile_user()
    prog, d = hostile_copy(CPU_SPLIT)
    prog_dir = os.path.dirname(prog)
    dbg = os.path.join(prog_dir, "cpu_split.debug")
    run(["objcopy", "--only-keep-debug", prog, dbg], check=True)
    run(["strip", "--strip-all", prog], check=True)
    if kind == "huge":
        run(["objcopy", "--remove-section=.note.gnu.build-id", prog], check=True)
    run(["objcopy", f"--add-gnu-debuglink={dbg}", prog], check=True)
    os.chown(prog_dir, uid, gid)
    if kind == "huge":
        os.chown(dbg, uid, gid)
        run(as_hostile() + ["truncate", "-s", "1T", dbg], check=True)
        return prog, dbg
    os.unlink(dbg)
    make = ["mkfifo", dbg] if kind == "fifo" else ["ln", "-s", "/dev/zero", dbg]
    run(as_hostile() + make, check=True)
    return prog, dbg


def test_debuglinks_naming_a_fifo_a_device_or_a_sparse_terabyte_are_skipped():
    """Three stripped programs of an unprivileged user, sampled in one recording (-d 2s): the
    .gnu_debuglink of one names a FIFO its user made beside it, of another a symlink to
    /dev/zero; the third has no build-id and its debug file is a valid one made a sparse
    terabyte. The recording ends: the FIFO's open blocked until a writer came, -d or not
    (it is never opened for reading now: its type is read from an O_PATH open first), and
    the terabyte's CRC read zeros for minutes (not read past 1 GiB now). Each is skipped, and
    the recorder says why."""
    if not shutil.which("objcopy"):
        raise Skip("no objcopy (binutils)")
    whats = {"fifo": "a FIFO, not a regular file",
             "zero": "a character device, not a regular file",
             "huge": "over 1 GiB with no build-id to compare"}
    dbgs, pids = {}, []
    for kind in whats:
        prog, dbgs[kind] = debuglink_to(kind)
        w = spawn(as_hostile() + [prog, "split", "60"])
        pids.append(int(w.stdout.readline().split()[1]))
    out = os.path.join(tmpdir(), "t.bst")
    # Before, the FIFO's open() never returned: any bound tells the two apart; 60 s leaves a
    # loaded machine's start of a recording room.
    rc, err, _, took = record_bounded(["record", "-o", out, "-t", "cpu", "-p",
                                       ",".join(map(str, pids)), "-d", "2s"], timeout=60)
    eq(rc, 0, f"record's exit after {took:.0f} s ({err[-600:]})")
    for kind, what in whats.items():
        check(f"{dbgs[kind]}: skipped as a debug file: {what}" in err,
              f"{kind}: the reason it was skipped: {err[-800:]}")
    sampled = {e["pid"] for e in dump(out) if e["kind"] == "cpu_sample"}
    eq(sampled & set(pids), set(pids), "the programs were sampled")


def named_process(comm):
    """A process of the hostile user that names itself COMM (bytes), then sleeps in 10 ms
    steps (nanosleep calls: series of its own in monitor -t osrt): (it, its pid)."""
    py = ("import ctypes, os, time\n"
          f"ctypes.CDLL(None).prctl(15, {comm!r}, 0, 0, 0)\n"
          "print('pid', os.getpid(), flush=True)\n"
          "while True: time.sleep(0.01)\n")
    w = spawn(as_hostile() + ["/usr/bin/python3", "-c", py])
    return w, int(w.stdout.readline().split()[1])


def test_monitor_comm_with_invalid_utf8_passes_promtool():
    """A comm of bytes that are not UTF-8 ("bad\\xff\\xfename"): its label value has U+FFFD
    for each, the scrape passes `promtool check metrics` (which refused it before), and a
    Prometheus server scraping the monitor stores the series."""
    from monitor_prom import PROMTOOL, Monitor, Prometheus
    if not os.path.exists(PROMTOOL):
        raise Skip("needs Debian's prometheus package (make deps installs it)")
    w, pid = named_process(b"bad\xff\xfename")
    mon = Monitor("-t", "osrt", "-p", str(pid), "--osrt-threshold", "0")
    want = f'pid="{pid}",comm="bad\ufffd\ufffdname"'
    text = ""

    def served():
        nonlocal text
        text = mon.metrics()
        return want in text

    wait_for(served, 20, f"{want} in the scrape")
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                          capture_output=True)
    eq(lint.returncode, 0, f"promtool check metrics: {lint.stdout}{lint.stderr}")
    # A Prometheus server scrapes it (up is 1 only for a scrape it accepted) and has the series.
    prom = Prometheus(mon.target)
    wait_for(lambda: prom.query(f'bpfsight_syscalls_total{{pid="{pid}"}}'), 20,
             "Prometheus: the process's series")
    eq({r["metric"]["comm"] for r in prom.query(f'bpfsight_syscalls_total{{pid="{pid}"}}')},
       {"bad\ufffd\ufffdname"}, "the comm label Prometheus stored")
    prom.stop()
    w.kill()
    mon.stop()


def test_monitor_one_slow_client_stalls_no_scrape():
    """A client connects and sends one byte every 4 s: a scrape meanwhile answers within 3 s
    (the old server served one connection at a time and answered nobody until the slow
    client was done: ~9 h for its 8 KiB), and the server closes the slow client 2 s after it
    came (its request's deadline). Then 40 clients connect and send nothing (more than the 32
    connections served at once): a scrape still answers within 3 s."""
    import socket
    from monitor_prom import Monitor, get
    w, pid = named_process(b"sleeper")
    mon = Monitor("-t", "osrt", "-p", str(pid))
    host, port = mon.target.rsplit(":", 1)

    def scrape(what):
        t = time.monotonic()
        text = get(mon.url, timeout=30)
        took = time.monotonic() - t
        check("bpfsight_" in text, f"{what}: {text[:200]!r}")
        # A real bound: the scrape's own work is milliseconds; the old server made it wait
        # for the slow client's whole request (forever at this pace).
        check(took < 3, f"{what} took {took:.1f} s")

    slow = socket.create_connection((host, int(port)))
    t0 = time.monotonic()
    slow.sendall(b"G")
    scrape("a scrape behind a slow client")
    closed_at = None
    slow.settimeout(4)
    for _ in range(4):
        try:
            if slow.recv(1) == b"":
                closed_at = time.monotonic() - t0
                break
            slow.sendall(b"E")
        except socket.timeout:
            slow.sendall(b"E")
        except OSError:
            closed_at = time.monotonic() - t0
            break
    check(closed_at is not None, "the slow client was never closed")
    # Not before its deadline (2 s of the server's clock from after this connect), and not
    # after its 8 KiB at 4 s a byte: at the deadline, give or take this loop's 4 s steps.
    check(1.9 <= closed_at < 12, f"the slow client was closed after {closed_at:.1f} s")
    slow.close()
    idle = [socket.create_connection((host, int(port))) for _ in range(40)]
    scrape("a scrape behind 40 idle connections")
    for s in idle:
        s.close()
    w.kill()
    mon.stop()


# An escape sequence that turns the terminal red, a bell, and a C1 control (CSI, U+009B).
EVIL = b"e\x1b[31mvil\x07\xc2\x9b"


def test_text_output_escapes_control_characters():
    """A process of the unprivileged user names itself with an escape sequence, a bell and a
    C1 control (EVIL) and runs with one in its command line: the recorder's messages and
    verdict line, stats (verdict and tables), info and top show each as '?', as dump's JSON
    escapes them: nothing of them reaches the terminal."""
    py = ("import ctypes, time\n"
          f"ctypes.CDLL(None).prctl(15, {EVIL!r}, 0, 0, 0)\n"
          "t = time.time()\n"
          "while time.time() - t < 1.5: pass\n")
    out = os.path.join(tmpdir(), "t.bst")
    arg = EVIL.decode("utf-8", "surrogateescape")
    shown = "e?[31mvil??"
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "cpu,sched", "--",
                        *as_hostile(), "/usr/bin/python3", "-c", py, arg],
                       capture_output=True, timeout=120)
    eq(p.returncode, 0, f"record's exit ({p.stderr[-600:]})")
    outputs = {"record": p.stderr,
               "stats": run_bytes(["stats", out]),
               "info": run_bytes(["info", out]),
               "top": run_bytes(["top", "-n", "1", out])}
    for what, text in outputs.items():
        for bad in (b"\x1b", b"\x07", b"\xc2\x9b"):
            check(bad not in text, f"{what} printed {bad!r}: {text[:1500]!r}")
    check(re.search(rb"verdict: [^\n]*" + re.escape(f"{shown} (main thread".encode()), p.stderr),
          f"the recorder's verdict names the thread: {p.stderr[-600:]!r}")
    check(f"{shown} (main thread".encode() in outputs["stats"], "stats' verdict")
    check(f"python3 -c".encode() in outputs["info"] and shown.encode() in outputs["info"],
          f"info's target: {outputs['info'][:800]!r}")


def run_bytes(args):
    p = subprocess.run([BPFSIGHT, *args], capture_output=True, timeout=60)
    eq(p.returncode, 0, f"{args}: {p.stderr[-400:]!r}")
    return p.stdout + p.stderr


SHIM = os.path.abspath(os.path.join(os.path.dirname(BPFSIGHT), "libbpfsight-shim.so"))


def need_shim():
    if not os.path.exists(SHIM):
        raise Skip("no libbpfsight-shim.so (built only with CUPTI headers: set CUDA_HOME)")


def test_shim_install_refuses_a_directory_another_user_owns():
    """The unprivileged user makes DIR (in a sticky, world-writable parent, as /tmp is) and
    plants the very library in it: shim --install DIR refuses, says why, and names no file
    for jobs to load (that user could rewrite it later: every job would run their code)."""
    need_shim()
    uid, gid = hostile_user()
    d = tmpdir()
    os.chmod(d, 0o1777)
    lib_dir = os.path.join(d, "lib")
    run(as_hostile() + ["mkdir", lib_dir], check=True)
    run(as_hostile() + ["cp", SHIM, os.path.join(lib_dir, "libbpfsight-shim.so")], check=True)
    p = run([BPFSIGHT, "shim", "--install", lib_dir])
    eq(p.returncode, 1, f"exit ({p.stdout}{p.stderr})")
    check("INJECTION64_PATH" not in p.stdout, f"a path was given: {p.stdout}")
    check("is not root's (or yours), or others can write it" in p.stderr, p.stderr)
    eq(os.stat(os.path.join(lib_dir, "libbpfsight-shim.so")).st_uid, uid, "left as it was")
    # Its parent writable by others (not sticky): refused too.
    mine = os.path.join(tmpdir(), "open")
    os.mkdir(mine)
    os.chmod(mine, 0o777)
    p = run([BPFSIGHT, "shim", "--install", os.path.join(mine, "lib")])
    eq(p.returncode, 1, f"under a world-writable parent: {p.stdout}{p.stderr}")


def test_shim_install_replaces_a_file_another_user_owns():
    """In root's own directory, a byte-identical library that the unprivileged user owns
    (planted earlier): shim --install replaces it with a root-owned file nobody else can
    write, and names that."""
    need_shim()
    uid, gid = hostile_user()
    d = tmpdir()
    os.chmod(d, 0o755)
    lib = os.path.join(d, "libbpfsight-shim.so")
    shutil.copy(SHIM, lib)
    os.chown(lib, uid, gid)
    planted = os.stat(lib).st_ino
    p = run([BPFSIGHT, "shim", "--install", d, "-e"])
    eq(p.returncode, 0, f"exit ({p.stderr})")
    eq(p.stdout.splitlines()[0], f"export CUDA_INJECTION64_PATH={lib}", "the path given")
    st = os.stat(lib)
    eq((st.st_uid, st.st_mode & 0o777), (0, 0o755), "owner and mode")
    check(st.st_ino != planted, "a new file, not the planted one")
    with open(lib, "rb") as a, open(SHIM, "rb") as b:
        check(a.read() == b.read(), "the shim's bytes")


def chroot_with_run_link(owner_is_hostile):
    """A root for a chroot: /bin/spin (a loop in its own code: a safe point to inject at)
    and the libraries it needs, and run -> /etc (absolute:
    resolved from outside the chroot, it is the host's /etc). OWNER_IS_HOSTILE: the
    unprivileged user owns the root directory (and made all of it), else root does (a
    container image's own link): the root's path."""
    uid, gid = hostile_user()
    spin, d = hostile_copy(BOMB)
    if owner_is_hostile:
        os.chown(d, uid, gid)
    root = os.path.join(d, "root")
    files = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]
    steps = [["mkdir", "-p", root + "/lib/x86_64-linux-gnu", root + "/lib64", root + "/bin"]]
    steps += [["cp", f, root + f] for f in files] + [["cp", spin, root + "/bin/spin"]]
    steps += [["ln", "-s", "/etc", root + "/run"]]
    for s in steps:
        run((as_hostile() if owner_is_hostile else []) + s, check=True)
    return root


def inject_into_chroot(owner_is_hostile):
    """--inject into /bin/spin in an unprivileged user's `unshare -Urm` chroot of that root:
    (the recorder's stderr, the target's pid)."""
    need_shim()
    if not shutil.which("unshare") or not shutil.which("chroot"):
        raise Skip("needs unshare and chroot")
    check(not os.path.exists("/etc/bpfsight"), "/etc/bpfsight exists before the test")
    root = chroot_with_run_link(owner_is_hostile)
    w = spawn(as_hostile() + ["unshare", "-Urm", "chroot", root, "/bin/spin", "60"])
    eq(w.stdout.readline().split()[0], "pid", "the chrooted program's first line")
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-p", str(w.pid), "-t", "gpu", "--inject", "-d",
             "2s"], timeout=120)
    w.kill()
    written = os.path.exists("/etc/bpfsight")
    if written:
        shutil.rmtree("/etc/bpfsight")
    check(not written, f"root wrote into the host's /etc through the chroot's run link: "
                       f"{p.stderr[-600:]}")
    return p.stderr, w.pid, root


def check_injected_inside(owner_is_hostile):
    err, pid, root = inject_into_chroot(owner_is_hostile)
    check(f"--inject: pid {pid}: thread" in err, f"injected: {err[-800:]}")
    shims = os.listdir(os.path.join(root, "tmp", "bpfsight"))
    eq(len(shims), 1, f"the shim in the chroot's /tmp/bpfsight: {shims}")
    st = os.stat(os.path.join(root, "tmp", "bpfsight", shims[0]))
    eq((st.st_uid, st.st_mode & 0o777), (0, 0o755), "the shim's owner and mode")


def test_inject_into_a_chroot_the_user_owns_writes_inside_it():
    """The chroot's root directory is the unprivileged user's, its run a link to /etc: the
    link is not followed (/etc/bpfsight is not made, nothing is written outside the root);
    the shim goes to the chroot's own /tmp/bpfsight (made by root in the user's tree: only
    that user's processes load it), and the process is injected."""
    check_injected_inside(True)


def test_inject_into_a_chroot_writes_inside_it():
    """The same in a root-owned chroot (an image whose run links to /etc)."""
    check_injected_inside(False)


def test_variables_naming_files_are_ignored_under_sudo():
    """Run by sudo for another user (SUDO_UID), with that user's BPFSIGHT_SHIM (a library of
    theirs) and BPFSIGHT_CACHE_DIR: both are ignored, and said so; CMD gets the shim bpfsight
    carries, and nothing is written into the user's cache directory."""
    need_shim()
    uid, gid = hostile_user()
    d = tmpdir()
    os.chown(d, uid, gid)
    theirs = os.path.join(d, "libmine.so")
    shutil.copy(SHIM, theirs)
    os.chown(theirs, uid, gid)
    cache = os.path.join(d, "cache")
    cmd = ["sh", "-c", 'echo "cuda=$CUDA_INJECTION64_PATH"']
    env = dict(os.environ, SUDO_UID=str(uid), BPFSIGHT_SHIM=theirs, BPFSIGHT_CACHE_DIR=cache)
    p = run([BPFSIGHT, "record", "-o", os.path.join(tmpdir(), "t.bst"), "-t", "gpu,cpu", "--",
             *cmd], env=env)
    eq(p.returncode, 0, f"exit ({p.stderr[-400:]})")
    got = p.stdout.strip()
    check(got.startswith("cuda=/run/bpfsight/libbpfsight-shim-") and theirs not in got,
          f"CMD's shim: {got}")
    for var in ("BPFSIGHT_SHIM", "BPFSIGHT_CACHE_DIR"):
        eq(p.stderr.count(f"{var} is ignored: bpfsight runs with another user's privileges"),
           1, f"{var} said once: {p.stderr[-600:]}")
    check(not os.path.exists(cache), "the user's cache directory written")


KEPT_CAPS = ("cap_bpf", "cap_perfmon", "cap_sys_ptrace", "cap_dac_read_search")


def test_records_as_an_unprivileged_user_with_four_capabilities():
    """docs/PRODUCTION.md's unit runs the monitor as a user of its own with CAP_BPF,
    CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, not as root: so run, a recording of
    another user's process (system calls, scheduling, CPU samples with their stacks, the
    Python and CUDA families' probes) works, with those four capabilities and no other."""
    if not shutil.which("capsh"):
        raise Skip("needs capsh (libcap2-bin)")
    uid, gid = hostile_user()
    w = spawn([CPU_SPLIT, "split", "30"])
    pid = int(w.stdout.readline().split()[1])
    d = tmpdir()
    os.chown(d, uid, gid)
    out = os.path.join(d, "t.bst")
    caps = ",".join(KEPT_CAPS)
    p = run(["capsh", f"--caps={caps}+eip cap_setpcap,cap_setuid,cap_setgid+ep", "--keep=1",
             f"--user={HOSTILE}", f"--addamb={caps}", "--", "-c",
             f'grep CapEff /proc/self/status >&2; exec "$0" "$@"', BPFSIGHT, "record", "-o",
             out, "-p", str(pid), "-t", "osrt,sched,gil,cuda,cpu", "-d", "2s"], timeout=120)
    w.kill()
    eq(p.returncode, 0, f"record's exit ({p.stderr[-600:]})")
    eff = int(p.stderr.split("CapEff:")[1].split()[0], 16)
    eq(eff, sum(1 << {"cap_dac_read_search": 2, "cap_sys_ptrace": 19, "cap_perfmon": 38,
                      "cap_bpf": 39}[c] for c in KEPT_CAPS), "the recorder's capabilities")
    check("(families: proc,osrt,sched,cpu,gil,cuda)" in p.stderr, p.stderr[-600:])
    samples = [e for e in dump(out) if e["kind"] == "cpu_sample" and e["pid"] == pid]
    check(samples and all(e.get("stack") for e in samples), "CPU samples with their stacks")


CAP_NUM = {"cap_dac_override": 1, "cap_dac_read_search": 2, "cap_sys_ptrace": 19,
           "cap_sys_admin": 21, "cap_sys_nice": 23, "cap_sys_resource": 24, "cap_perfmon": 38,
           "cap_bpf": 39, "cap_checkpoint_restore": 40}
# user/record/privileges.c
RECORDER_CAPS = ("cap_bpf", "cap_perfmon", "cap_sys_ptrace", "cap_dac_read_search",
                 "cap_checkpoint_restore", "cap_sys_resource", "cap_sys_nice")
# user/uprobe/uprobe_broker.c: perf-event uprobes need cap_sys_admin (since 6.16)
BROKER_CAPS = ("cap_sys_admin", "cap_sys_ptrace", "cap_dac_read_search",
               "cap_checkpoint_restore")


def status_fields(path):
    with open(path) as f:
        return dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)


def test_a_root_recorder_keeps_only_the_capabilities_it_needs():
    """record -p as root: once attached, every thread of the recorder holds only what
    recording needs (RECORDER_CAPS, of those root has) in its permitted, effective and
    bounding sets, none inheritable or ambient, and no_new_privs: an exec gives nothing back;
    every thread is under the seccomp filter, and a denied call is refused. Launch mode's CMD,
    forked before, keeps all of root's."""
    need_root()
    from helpers import Recorder
    w = spawn([CPU_SPLIT, "split", "30"])
    pid = int(w.stdout.readline().split()[1])
    rec = Recorder("-p", str(pid), "-t", "cpu,osrt,gil", "-d", "20s")
    rec.wait_ready()
    mine = status_fields("/proc/self/status")
    have = int(mine["CapBnd"], 16)
    want = sum(1 << CAP_NUM[c] for c in RECORDER_CAPS) & have
    tasks, seen = os.listdir(f"/proc/{rec.p.pid}/task"), 0
    for t in tasks:
        try:
            st = status_fields(f"/proc/{rec.p.pid}/task/{t}/status")
        except (FileNotFoundError, ProcessLookupError):
            continue  # a worker that ended since the list (a table build, a file's reads)
        seen += 1
        got = {k: int(st[k], 16) for k in ("CapPrm", "CapEff", "CapBnd", "CapInh", "CapAmb")}
        eq(got["CapEff"], want, f"thread {t}'s effective set")
        eq((got["CapPrm"], got["CapBnd"], got["CapInh"], got["CapAmb"]),
           (got["CapEff"], got["CapEff"], 0, 0), f"thread {t}'s other sets")
        eq(st["NoNewPrivs"].strip(), "1", f"thread {t}: no_new_privs")
        eq(st["Seccomp"].strip(), "2", f"thread {t}: the seccomp filter (privileges.c)")
    check(seen >= 2, f"the recorder's threads: {tasks}, {seen} of them still there")
    # The uprobe broker: a child that keeps cap_sys_admin, holds only its socket, and runs
    # under an allow-list (Seccomp: 2).
    kids = [int(k) for k in open(f"/proc/{rec.p.pid}/task/{rec.p.pid}/children").read().split()]
    brokers = [k for k in kids if open(f"/proc/{k}/comm").read().strip() == "bpfsight-uprobe"]
    eq(len(brokers), 1, f"the recorder's uprobe broker among its children {kids}")
    st = status_fields(f"/proc/{brokers[0]}/status")
    eq({k: int(st[k], 16) for k in ("CapEff", "CapPrm", "CapBnd")},
       dict.fromkeys(("CapEff", "CapPrm", "CapBnd"),
                     sum(1 << CAP_NUM[c] for c in BROKER_CAPS) & have), "the broker's sets")
    eq((st["Seccomp"].strip(), st["NoNewPrivs"].strip()), ("2", "1"), "the broker's filter")
    fds = os.listdir(f"/proc/{brokers[0]}/fd")
    eq([os.readlink(f"/proc/{brokers[0]}/fd/{fd}")[:7] for fd in fds], ["socket:"],
       "the broker's descriptors: its socket alone")
    rec.stop()
    w.kill()
    check("Permission denied" not in rec.stderr, f"every probe attached: {rec.stderr[-600:]}")
    cmd = ["sh", "-c", "grep CapEff /proc/self/status"]
    p = run([BPFSIGHT, "record", "-v", "-o", os.path.join(tmpdir(), "t.bst"), "-t", "osrt",
             "--", *cmd])
    eq(p.returncode, 0, p.stderr[-400:])
    eq(p.stdout.split(), ["CapEff:", mine["CapEff"]], "CMD's capabilities: root's")
    # The recorder calls execveat once filtered: refused (without the filter: ENOENT); CMD,
    # forked before, ran sh and grep.
    check("seccomp filter installed: execveat refused (EPERM)" in p.stderr, p.stderr[-600:])


@alone("it sets kernel.perf_event_paranoid, the machine's, for its recording")
def test_a_paranoid_kernel_keeps_cap_sys_admin_for_perf_events():
    """perf_event_paranoid above 2 (Debian's and Ubuntu's default 3, whose patch refuses every
    perf_event_open without cap_sys_admin): the recorder keeps cap_sys_admin, so the cpu
    family's sampling timers open once it has dropped the rest (Debian 12's 6.1 refused them
    with EACCES: make check-kernels), and needs no uprobe broker. This kernel reads 3 as 2:
    the capability kept is what is checked here; the samples, on a kernel with the patch."""
    need_root()
    from helpers import Recorder
    path = "/proc/sys/kernel/perf_event_paranoid"
    old = open(path).read().strip()
    w = spawn([CPU_SPLIT, "split", "30"])
    try:
        with open(path, "w") as f:
            f.write("3")
        pid = int(w.stdout.readline().split()[1])
        out = os.path.join(tmpdir(), "paranoid.bst")
        rec = Recorder("-p", str(pid), "-t", "cpu,gil", "-d", "20s", out=out)
        rec.wait_ready()
        have = int(status_fields("/proc/self/status")["CapBnd"], 16)
        want = sum(1 << CAP_NUM[c] for c in RECORDER_CAPS + ("cap_sys_admin",)) & have
        eq(int(status_fields(f"/proc/{rec.p.pid}/status")["CapEff"], 16), want,
           "the recorder's effective set: cap_sys_admin kept")
        kids = open(f"/proc/{rec.p.pid}/task/{rec.p.pid}/children").read().split()
        eq([k for k in kids if open(f"/proc/{k}/comm").read().strip() == "bpfsight-uprobe"], [],
           "no uprobe broker: the recorder opens its uprobes itself")
        eq(rec.stop(), 0, f"the recorder: {rec.stderr[-600:]}")
        check(any(e["kind"] == "cpu_sample" for e in dump(out)), "cpu samples")
    finally:
        with open(path, "w") as f:
            f.write(old)
        w.kill()


def test_launch_user_runs_cmd_as_that_user():
    """record --user USER -- CMD: CMD runs as USER with USER's groups (and is recorded: its
    exec is in the trace); a user not in /etc/passwd is refused before anything runs;
    --user without CMD is refused."""
    uid, gid = hostile_user()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--user", HOSTILE, "--", "sh", "-c",
             "id -u; id -g; id -G"])
    eq(p.returncode, 0, p.stderr[-400:])
    eq(p.stdout.split(), [str(uid), str(gid), str(gid)], "CMD's uid, gid and groups")
    check(any(e["kind"] == "exec" for e in dump(out)), "CMD recorded")
    p = run([BPFSIGHT, "record", "-o", out + "2", "--user", "1234:5678", "--", "id", "-u"])
    eq((p.returncode, p.stdout.strip()), (0, "1234"), f"UID:GID ({p.stderr[-300:]})")
    p = run([BPFSIGHT, "record", "-o", out + "3", "--user", "no-such-user-here", "--", "id"])
    eq(p.returncode, 1, "an unknown user")
    check("bad --user 'no-such-user-here'" in p.stderr and not p.stdout, p.stderr)
    p = run([BPFSIGHT, "record", "-o", out + "4", "--user", HOSTILE, "-p", str(os.getpid())])
    eq(p.returncode, 1, "--user with -p")
    check("--user is for a launched command" in p.stderr, p.stderr)


def test_launch_under_sudo_says_cmd_runs_as_root_and_user_sudo_is_its_user():
    """As sudo sets them (SUDO_UID, SUDO_GID): record -- CMD runs CMD as root, with a note
    that says so; --user sudo runs it as SUDO_UID:SUDO_GID (with that user's name, so its
    groups); --user sudo without them (not under sudo, or sudo by root) is refused."""
    uid, gid = hostile_user()
    out = os.path.join(tmpdir(), "t.bst")
    sudo = dict(os.environ, SUDO_UID=str(uid), SUDO_GID=str(gid), SUDO_USER=HOSTILE)
    p = run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--", "id", "-u"], env=sudo)
    eq((p.returncode, p.stdout.strip()), (0, "0"), f"CMD as root ({p.stderr[-300:]})")
    check(f"note: id runs as root (bpfsight's user under sudo); --user sudo runs it as the "
          f"user who ran sudo (uid {uid})" in p.stderr, p.stderr[-400:])
    p = run([BPFSIGHT, "record", "-o", out + "2", "-t", "osrt", "--user", "sudo", "--", "sh",
             "-c", "id -u; id -g; id -G"], env=sudo)
    eq(p.returncode, 0, p.stderr[-400:])
    eq(p.stdout.split(), [str(uid), str(gid), str(gid)], "CMD's uid, gid and groups")
    check("runs as root" not in p.stderr, p.stderr[-400:])
    bare = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    for env in (bare, dict(bare, SUDO_UID="0", SUDO_GID="0")):
        p = run([BPFSIGHT, "record", "-o", out + "3", "--user", "sudo", "--", "id"], env=env)
        eq(p.returncode, 1, "--user sudo, not under sudo")
        check("--user sudo: bpfsight was not run by sudo" in p.stderr and not p.stdout,
              p.stderr)
    p = run([BPFSIGHT, "record", "-o", out + "4", "-t", "osrt", "--", "true"], env=bare)
    check("runs as root" not in p.stderr, "no note without sudo")


def sparse_symtab_copy(path, entries):
    """PATH's copy whose .symtab claims ENTRIES entries in a sparse tail of zeros (a few KiB on
    disk, hundreds of MB in size): the program still runs (no segment maps the tail)."""
    dst, d = hostile_copy(path)
    with open(dst, "rb") as f:
        b = bytearray(f.read())
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    for i in range(shnum):
        o = shoff + i * shentsize
        if struct.unpack_from("<I", b, o + 4)[0] == 2:  # SHT_SYMTAB
            off = (len(b) + 4095) & ~4095
            struct.pack_into("<QQ", b, o + 0x18, off, entries * 24)
            with open(dst, "wb") as f:
                f.write(b)
                f.truncate(off + entries * 24)
            return dst
    raise AssertionError(f"{path} has no .symtab")


def test_a_sparse_symbol_table_is_not_read():
    """An unprivileged user's program whose .symtab claims 17M entries in a sparse tail (24 KiB
    on disk), sampled with -t cpu: its symbols are not read, and said so; the recorder's peak
    RSS stays under 200 MB (720 MB before: every claimed entry cost memory)."""
    prog = sparse_symtab_copy(CPU_SPLIT, 17 << 20)
    w = spawn(as_hostile() + [prog, "split", "60"])
    pid = int(w.stdout.readline().split()[1])
    rc, err, rss, _ = record_bounded(["record", "-o", os.path.join(tmpdir(), "t.bst"), "-t",
                                      "cpu", "-p", str(pid), "-d", "2s"], timeout=90)
    w.kill()
    eq(rc, 0, f"record's exit ({err[-600:]})")
    check(rss < 200, f"the recorder's peak RSS: {rss:.0f} MiB")
    check("over 16777216 symbol-table entries: its symbols are not read" in err, err[-600:])


def test_a_fuse_file_whose_reads_stall_does_not_hold_the_recording():
    """A program run from a FUSE file system whose server stops answering (OPEN and READ are
    never answered: tests/e2e/fuse_stall.py), sampled with record -t cpu -p PID: Ctrl-C 1.5 s
    in, while the file's first reads wait: they are left behind, said, and the recording stops
    and writes its file (before, the recorder waited in the file's open until the server
    answered, whatever the signal). The recorder's process ends once the server goes away: a
    thread whose request the server has read waits for its answer, uninterruptibly."""
    need_root()
    from fuse_stall import FuseStall
    mnt = os.path.join(tmpdir(), "mnt")
    os.mkdir(mnt)
    with open(CPU_SPLIT, "rb") as f:
        fs = FuseStall(mnt, f.read())
    w = p = None
    err = ""
    try:
        w = spawn([os.path.join(mnt, "prog"), "split", "30"])
        pid = int(w.stdout.readline().split()[1])
        fs.stall()
        out = os.path.join(tmpdir(), "t.bst")
        p = subprocess.Popen([BPFSIGHT, "record", "-o", out, "-t", "cpu", "-p", str(pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        while "wrote " not in err and time.monotonic() - t0 < 60:
            if not select.select([p.stderr], [], [], 1)[0]:
                continue  # nothing said yet (before: the recorder waited in the open)
            chunk = os.read(p.stderr.fileno(), 65536)
            if not chunk:
                break
            err += chunk.decode(errors="replace")
        took = time.monotonic() - t0
        check("wrote " in err, f"the recording stopped and wrote its file: {err[-600:]}")
        check(took < 8, f"the stop took {took:.1f} s")
        check(re.search(re.escape(mnt) + r"/prog: its reads had not ended after [\d.]+ s as the "
                        r"recording stopped \(a FUSE file system that does not answer\?\)", err),
              err[-600:])
        check(os.path.getsize(out) > 0, "the trace file")
    finally:
        if w:
            w.kill()
            w.wait()
        fs.close()
    eq(p.wait(30), 0, f"record's exit once the server is gone ({err[-300:]})")


def eh_frame_pages(path):
    """The file offsets [LO, HI) of the whole pages inside PATH's .eh_frame."""
    out = run(["readelf", "-SW", path], check=True).stdout
    m = re.search(r"\] \.eh_frame\s+PROGBITS\s+[0-9a-f]+ ([0-9a-f]+) ([0-9a-f]+)", out)
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    return (off + 4095) // 4096 * 4096, (off + size) // 4096 * 4096


def read_until(p, err, pattern, timeout):
    """P's stderr read on from ERR until PATTERN shows (not its end: the recorder may not end
    while its builder waits on the server). The text so far."""
    t0 = time.monotonic()
    while not re.search(pattern, err) and time.monotonic() - t0 < timeout:
        if not select.select([p.stderr], [], [], 0.5)[0]:
            continue
        chunk = os.read(p.stderr.fileno(), 65536)
        if not chunk:
            break
        err += chunk.decode(errors="replace")
    return err


def test_a_table_build_whose_reads_never_end_does_not_hold_the_recording():
    """The unwind table of a library whose .eh_frame a FUSE server never serves (the program
    runs: it never reads those pages; the builder does): the recording goes on while the
    build waits - every cudaStreamQuery counted, its stack cut at that libc as without a
    table - and the build is left behind after BPFSIGHT_UNWIND_WAIT_S (2 s here), said, so
    the next process's tables are built: its later calls' stacks reach main through the real
    libc's qsort. (Launch mode holds the first process at its libraries until their tables
    are loaded: the build left behind lets it go.) The recording then ends with its CMD and writes its file; the recorder's
    process ends once the server answers. Before, tables were built in the recorder's loop:
    it waited in the read for good, Ctrl-C and the CMD's end included."""
    need_root()
    from fuse_stall import FuseStall
    mnt = os.path.join(tmpdir(), "mnt")
    os.mkdir(mnt)
    trigger = os.path.join(tmpdir(), "second")
    with open(LIBC, "rb") as f:
        fs = FuseStall(mnt, f.read(), stall_range=eh_frame_pages(LIBC), name="libc.so.6")
    out = os.path.join(tmpdir(), "t.bst")
    rounds = 100
    script = (f"LD_LIBRARY_PATH={mnt} {UNWIND_QSORT} calls {CUDART} {rounds}; "
              f"while [ ! -e {trigger} ]; do sleep 0.05; done; "
              f"{UNWIND_QSORT} calls {CUDART} {rounds}")
    # No store of tables (unwind_store.h): the copy of libc has libc's build id, so the
    # store would give it the table sh's libc left there, and nothing would read the FUSE.
    p = subprocess.Popen([BPFSIGHT, "record", "-o", out, "-t", "cuda", "--stacks",
                          "cuda:0", "--", "sh", "-c", script],
                         env=dict(os.environ, BPFSIGHT_UNWIND_WAIT_S="2", BPFSIGHT_NO_CACHE="1"),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = ""
    try:
        left = (re.escape(mnt) + r"/libc\.so\.6 has not ended in 2 s \(a file system that does "
                r"not answer\?\): left behind")
        err = read_until(p, err, left, 60)
        check(re.search(left, err), f"the build left behind, said: {err[-800:]}")
        with open(trigger, "w"):
            pass
        err = read_until(p, err, r"wrote ", 60)
        check("wrote " in err, f"the recording ended with its CMD: {err[-800:]}")
        calls = {}  # pid -> its calls' stacks, in the order the processes ran
        for r in sorted((r for r in dump(out) if r.get("name") == "cudaStreamQuery"),
                        key=lambda r: r["ts"]):
            calls.setdefault(r["pid"], []).append([f.get("func") for f in r.get("stack", [])])
        eq([len(c) for c in calls.values()], [rounds, rounds], "every call of both processes")
        first, second = calls.items()
        check(all("compare_cb" in s and "main" not in s for s in first[1]),
              f"the first process's stacks stop at its libc (no table): {first[1][-1]}")
        check(all("main" in s and "qsort" in " ".join(map(str, s)) for s in second[1][-10:]),
              f"the second process's last stacks reach main: {second[1][-1]}")
    finally:
        with open(trigger, "w"):
            pass  # the script ends in any case
        fs.close()
        try:
            err += p.communicate(timeout=30)[1].decode(errors="replace")
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
    eq(p.returncode, 0, f"record's exit once the server answers ({err[-300:]})")
