"""The first stacks are as whole as the last (issue 51): every file's unwind table is loaded
before a stack can need it (docs/STACKS.md, "When a file gets its table"), and tables are kept
across recordings (its "The tables' store"). Workloads: tests/workloads/unwind_qsort.c and
lib/unwind_dl.c, built -O2 -fomit-frame-pointer, whose cudaStreamQuery calls all come at once
(no pause for a table to be built after a first cut stack); Debian's torch for an OOM."""
import os
import re
import signal

import pymods
import test_unwind_stacks as unw
from helpers import (ROOT, Recorder, Skip, check, dump, eq, info, need_root, record, run,
                     spawn, tell, tmpdir, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

CALLS = 40
DL_LIB = workload("lib/libunwind_dl.so")
DL_CALLERS = ["dl_compare", "LIBC", "dl_level", "dl_run", "main", "LIBC", "_start"]
DEBIAN_PY = "/usr/bin/python3.11"
MEM_ALLOC = os.path.join(ROOT, "tests", "workloads", "mem_alloc.py")
LINE = re.compile(r"unwind tables: (\d+) files?, [\d.]+ MiB of rows of the \d+ MiB reserved, "
                  r"(\d+) built in (\d+) ms, (\d+) read from the store in \d+ ms; (\d+) files? "
                  r"without one")


def need_cudart():
    need_root()
    if not os.path.exists(unw.CUDART):
        raise Skip(f"{unw.CUDART} is not installed")


def query_stacks(out):
    return [unw.shape(r["stack"]) for r in dump(out)
            if r.get("name") == "cudaStreamQuery" and "stack" in r]


def all_whole(out, callers=unw.CALLERS, what="stacks"):
    """Every call's stack is the program's whole chain, the first one included."""
    stacks = query_stacks(out)
    eq(len(stacks), CALLS, f"{what}: cudaStreamQuery calls with a stack")
    eq([i for i, s in enumerate(stacks) if s != callers], [],
       f"{what}: calls whose stack is not whole (the first: {stacks[0]})")


def burst():
    p, out = record([unw.PROG, "burst", unw.CUDART, str(CALLS)], "-t", "cuda",
                    "--stacks=cuda:0")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    return p, out


def test_calls_at_once_after_a_launch_are_whole_from_the_first():
    """And every system call of the program from its exec on, the loader's first ones
    included (ld.so's entry code has no CFI: its END row ends their stacks)."""
    need_cudart()
    p, out = record([unw.PROG, "burst", unw.CUDART, str(CALLS)], "-t", "cuda,osrt",
                    "--stacks=cuda:0,osrt:0", "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    all_whole(out, what="launch")
    recs = dump(out)
    pid, exec_ts = next((r["pid"], r["ts"]) for r in recs if r["kind"] == "exec")
    calls = [r for r in recs if r["kind"] == "syscall" and r["pid"] == pid and
             r["ts"] > exec_ts and "stack" in r]
    check(len(calls) > 20, f"{len(calls)} system calls with a stack")
    cut = [(r["name"], [f.get("func") for f in r["stack"]]) for r in calls
           if any(f.get("func", "").startswith("[unwind stopped") for f in r["stack"])]
    eq(cut[:3], [], f"system calls cut ({len(cut)} of {len(calls)})")


def test_calls_at_once_after_an_attach_are_whole_from_the_first():
    """The program has its libraries loaded and waits; the recorder attaches (-p), and its
    SIGUSR1 line is the program's cue: 40 calls at once."""
    need_cudart()
    job = spawn([unw.PROG, "wait", unw.CUDART, str(CALLS)])
    eq(job.stdout.readline().split()[0], "ready", "the program waits")
    r = Recorder("-t", "cuda", "--stacks=cuda:0", "-p", str(job.pid))
    r.wait_ready()
    job.send_signal(signal.SIGUSR1)
    eq(job.wait(60), 0, "the program ends well")
    eq(r.wait(60), 0, r.stderr[-600:])
    all_whole(r.out, what="attach")


def test_a_forked_child_is_whole_from_its_first_call():
    """The child has its parent's tables from its first instruction (BPF copies them at the
    fork), not from when the recorder reads the fork."""
    need_cudart()
    p, out = record([unw.PROG, "fork", unw.CUDART, str(CALLS)], "-t", "cuda", "--stacks=cuda:0")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    all_whole(out, what="forked child")


def test_a_library_dlopened_and_called_at_once_is_whole_from_its_first_call():
    need_cudart()
    p, out = record([unw.PROG, "dlopen", DL_LIB, unw.CUDART, str(CALLS)], "-t", "cuda",
                    "--stacks=cuda:0")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    all_whole(out, DL_CALLERS, "dlopen")


def test_an_oom_right_after_an_attach_has_its_whole_stack():
    """Debian's torch: the job asks for 1 PiB at once once the recorder is live (-p): the OOM,
    the job's one event, names its Python line and every native frame down to _start."""
    need_root()
    if not pymods.has(DEBIAN_PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (make deps)")
    job = spawn([DEBIAN_PY, MEM_ALLOC, "oom", "--wait"])
    pid = int(re.search(r'"pid": (\d+)', job.stdout.readline()).group(1))
    r = Recorder("-t", "mem", "-p", str(pid))
    r.wait_ready()
    tell(job, "go")
    check('"oom"' in job.stdout.readline(), "the job's allocation failed")
    eq(r.stop(), 0, r.stderr[-600:])  # its frames named while the job lives
    job.stdin.close()
    eq(job.wait(60), 0, "the job ends well")
    ooms = [e for e in dump(r.out) if e["kind"] == "mem_oom"]
    eq(len(ooms), 1, "one OOM")
    funcs = [f.get("func", "") for f in ooms[0]["stack"]]
    check(not any(f.startswith("[unwind stopped") for f in funcs), f"a cut stack: {funcs}")
    eq(funcs[-1], "_start", f"the outermost frame: {funcs}")
    check("c10::ProfiledCPUMemoryReporter::OutOfMemory(unsigned long)" in funcs[:2],
          f"the innermost: {funcs[:3]}")
    py = [(f["func"], f["line"]) for f in ooms[0]["stack"] if "line" in f]
    eq([f for f, _ in py], ["oom", "main", "<module>"], "its Python frames")
    eq(py[0][1], [n for n, t in enumerate(open(MEM_ALLOC), 1)
                  if t.rstrip().endswith("# OOM")][0], "its line")
    check(funcs.index("Py_BytesMain") > funcs.index("<module>"), "the interpreter's main below")


def said(p):
    m = LINE.search(p.stderr)
    check(m, f"no unwind tables line: {p.stderr[-600:]}")
    return dict(zip(("files", "built", "build_ms", "read", "without"), map(int, m.groups())))


def test_a_second_recording_builds_no_table_and_a_spoiled_entry_is_built_again():
    """A store of its own: the first recording builds every table and keeps it (root's, 0600,
    in a 0700 folder); the second reads them all and builds none (0 ms); an entry whose rows
    were changed and one another user owns are refused, said, and built again, the stacks
    whole all the same; the next recording reads those two again."""
    need_cudart()
    store = os.path.join(tmpdir(), "cache")
    old = os.environ.get("BPFSIGHT_CACHE_DIR")
    os.environ["BPFSIGHT_CACHE_DIR"] = store
    try:
        first = said(burst()[0])
        entries = sorted(os.listdir(os.path.join(store, "unwind")))
        check(first["built"] >= 4 and first["read"] == 0, f"first: {first}")
        eq(len(entries), first["built"], f"one entry per table built: {entries}")
        st = os.stat(os.path.join(store, "unwind"))
        eq((st.st_uid, st.st_mode & 0o777), (0, 0o700), "the store's folder")
        for e in entries:
            st = os.stat(os.path.join(store, "unwind", e))
            eq((st.st_uid, st.st_mode & 0o777), (0, 0o600), f"{e}")

        p, out = burst()
        second = said(p)
        eq((second["built"], second["build_ms"], second["read"], second["files"]),
           (0, 0, first["built"], first["files"]), f"second: {second}")
        u = info(out)["unwind_tables"]
        eq((u["built"], u["from_store"], u["store_refused"]), (0, first["built"], 0),
           "info's unwind tables")
        all_whole(out, what="from the store")

        # The program's own entry spoiled (a row's byte), libc's given to another user.
        prog_id = build_id(unw.PROG)
        libc_id = build_id("/lib/x86_64-linux-gnu/libc.so.6")
        spoiled = os.path.join(store, "unwind", prog_id + ".rows")
        with open(spoiled, "r+b") as f:
            f.seek(-5, os.SEEK_END)
            b = f.read(1)
            f.seek(-5, os.SEEK_END)
            f.write(bytes([b[0] ^ 0x40]))
        os.chown(os.path.join(store, "unwind", libc_id + ".rows"), 65534, 65534)
        p, out = burst()
        third = said(p)
        eq((third["built"], third["read"]), (2, first["built"] - 2), f"third: {third}")
        refused = re.findall(r"the stored table of (\S+) was refused \(([^)]*)\): built again",
                             p.stderr)
        eq(sorted((os.path.basename(f), why) for f, why in refused),
           [("libc.so.6", "another user owns it or may write it"),
            ("unwind_qsort", "its rows' checksum does not match")], "the refusals said")
        all_whole(out, what="beside refused entries")
        eq(os.stat(os.path.join(store, "unwind", libc_id + ".rows")).st_uid, 0,
           "libc's entry written again, root's")
        fourth = said(burst()[0])
        eq((fourth["built"], fourth["read"]), (0, first["built"]), f"fourth: {fourth}")
    finally:
        if old is None:
            os.environ.pop("BPFSIGHT_CACHE_DIR", None)
        else:
            os.environ["BPFSIGHT_CACHE_DIR"] = old


def build_id(path):
    """The GNU build id of ELF file PATH, in hex (its .note.gnu.build-id)."""
    m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", path], check=True).stdout)
    check(m, f"{path} has no build id")
    return m.group(1)


def test_a_program_built_with_frame_pointers_is_walked_by_them():
    """Every file gets its table before its first stack, but one built with frame pointers
    (tests/workloads/syscall_callers.c: every function sets one up) is walked by them, as
    before tables: no rows loaded for it, its stacks as whole (docs/STACKS.md)."""
    need_root()
    p, out = record([workload("syscall_callers"), "single", "3"], "-t", "osrt",
                    "--stacks=osrt:0", "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    eq(info(out)["unwind_tables"]["files_frame_pointers"], 1, "files walked by frame pointers")
    naps = [[f["func"] for f in e["stack"]] for e in dump(out)
            if e.get("name") == "clock_nanosleep" and "stack" in e]
    eq(len(naps), 3, "the program's sleeps")
    for s in naps:
        eq(s[:5], ["clock_nanosleep", "nanosleep", "sleeper", "calls", "main"], "a sleep's stack")
        eq(s[-1], "_start", "the outermost frame")
