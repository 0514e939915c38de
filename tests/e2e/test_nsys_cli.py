"""An nsys user's command line: the lines nsys's PyTorch material copies, with `nsys profile`
replaced by `bpfsight record` or `bpfsight profile`, run on a real CUDA program here (the
real libcudart, no GPU: every call fails, every probe fires) and record what they name;
nsys's option values are never taken for the command; nsys's report names work in stats."""
import os
import sqlite3
import subprocess

from helpers import BPFSIGHT, check, dump, eq, info, need_root, run, stats, tmpdir, workload
from test_cuda import API_SHARED, need_cuda

SECONDS = 20

# (what nsys's material calls it, its options but -o and the command)
LINES = [
    ("quick sweep", ["-t", "cuda,nvtx,osrt,cudnn,cublas", "-w", "true"]),
    ("typical", ["-w", "true", "-t", "cuda,nvtx,osrt,cudnn,cublas", "-s", "none", "-f", "true",
                 "-x", "true"]),
    ("targeted", ["--trace=cuda,nvtx", "--capture-range=cudaProfilerApi",
                  "--capture-range-end=stop"]),
    ("deep dive", ["--trace=cuda,nvtx,osrt,cudnn,cublas", "--cudabacktrace=all",
                   "--python-backtrace=cuda", "--pytorch=autograd-shapes-nvtx",
                   "--cuda-memory-usage=true", "--sampling-frequency=1000",
                   "-s", "process-tree"]),
    ("every backtrace", ["-t", "cuda", "--cudabacktrace=all:0", "--python-backtrace=cuda"]),
    ("classic", ["-w", "true", "-t", "cuda,nvtx,osrt,cudnn,cublas", "-s", "cpu",
                 "--capture-range=cudaProfilerApi", "--stop-on-range-end=true",
                 "--cudabacktrace=true", "-x", "true"]),
]

# The families each line records: record keeps its meaning of -t and takes nsys's other
# options; profile reads -t as nsys (cuda: the calls and the GPU work) with its defaults
# (CPU sampling, context switches).
FAMILIES = {
    "record": {
        "quick sweep": "proc,osrt,cuda,nvtx,cublas,cudnn",
        "typical": "proc,osrt,cuda,nvtx,cublas,cudnn",
        "targeted": "proc,cuda,nvtx",
        "deep dive": "proc,osrt,cpu,cuda,nvtx,torch,mem,cublas,cudnn",
        "every backtrace": "proc,cuda",
        "classic": "proc,osrt,cpu,cuda,nvtx,cublas,cudnn",
    },
    "profile": {
        "quick sweep": "proc,osrt,sched,cpu,cuda,gpu,nvtx,cublas,cudnn",
        "typical": "proc,osrt,sched,cuda,gpu,nvtx,cublas,cudnn",
        "targeted": "proc,sched,cpu,cuda,gpu,nvtx",
        "deep dive": "proc,osrt,sched,cpu,cuda,gpu,nvtx,torch,mem,cublas,cudnn",
        "every backtrace": "proc,sched,cpu,cuda,gpu",
        "classic": "proc,osrt,sched,cpu,cuda,gpu,nvtx,cublas,cudnn",
    },
}


def fams(trace):
    return set(info(trace)["families"].split(","))


def test_nsys_lines_record_what_they_name():
    """Each line, both verbs, on cuda_api_shared (3 rounds): exit 0, the families it names,
    the program's calls (all 18 launches, or the 3 profiler ranges' where the line captures
    by cudaProfilerApi), CUDA calls' stacks where it asks --cudabacktrace (nsys's threshold)."""
    need_cuda(API_SHARED)
    for verb in ("record", "profile"):
        for name, opts in LINES:
            out = os.path.join(tmpdir(), "t.bst")
            p = run([BPFSIGHT, verb, *opts, "-o", out, API_SHARED, "3"], timeout=120)
            eq(p.returncode, 0, f"{verb} {name}: exit ({p.stderr[-600:]})")
            eq(fams(out), set(FAMILIES[verb][name].split(",")), f"{verb} {name}: families")
            rep = {r["name"]: r["count"] for r in stats(out, "cuda_api_sum")["cuda_api_sum"]}
            eq(rep.get("cudaLaunchKernel"), 18, f"{verb} {name}: launches")
            captured = any("cudaProfilerApi" in o for o in opts)
            check(captured == ("cudaMalloc" not in rep), f"{verb} {name}: capture {rep}")
            if "cudabacktrace" in " ".join(opts):  # nsys's threshold: 80 us, or :0
                cuda = [e for e in dump(out) if e["kind"] == "cuda_api"]
                least = 0 if "--cudabacktrace=all:0" in opts else 80000
                check(cuda, f"{verb} {name}: CUDA calls")
                eq([bool(e.get("stack")) for e in cuda], [e["dur"] >= least for e in cuda],
                   f"{verb} {name}: the stacks of the calls of {least} ns or more")
            if "--capture-range-end=stop" in opts or "--stop-on-range-end=true" in opts:
                check("bpfsight keeps recording after a range ends" in p.stderr, p.stderr)


def test_nsys_values_are_never_the_command():
    """-f true (nsys's --force-overwrite), -w true, -x true: values, not the program; -f
    alone is bpfsight's --force; repeated --trace options add up; nsys's short -t names."""
    need_cuda(API_SHARED)
    d = tmpdir()
    out = os.path.join(d, "t.bst")
    open(out, "w").close()
    for verb in ("record", "profile"):
        p = run([BPFSIGHT, verb, "-f", "true", "-x", "true", "-w", "true", "--trace=osrt",
                 "--trace=python-gil", "-o", out, API_SHARED, "1"], timeout=120)
        eq(p.returncode, 0, f"{verb}: exit ({p.stderr[-600:]})")
        eq(info(out)["target"], f"launch: {API_SHARED} 1", f"{verb}: the program launched")
        check({"osrt", "gil"} <= fams(out), f"{verb}: both --trace lists ({fams(out)})")
    p = run([BPFSIGHT, "record", "-f", "-o", out, "-t", "osrt", API_SHARED, "1"])
    eq(p.returncode, 0, f"-f alone overwrites ({p.stderr[-300:]})")


def test_nsys_trace_names_mean_the_same_in_record_and_profile():
    """An nsys -t name bpfsight has not itself records the same families under both verbs
    (one table: nsys_args.h): cuda-hw is the calls and the GPU work, python-gil gil, the
    -verbose forms their family; bpfsight's own names keep their meaning under record."""
    need_cuda(API_SHARED)
    cases = [("cuda-hw", "cuda,gpu", "cuda,gpu"), ("python-gil", "gil", "gil"),
             ("cublas-verbose", "cublas", "cublas"), ("cudnn-verbose", "cudnn", "cudnn"),
             ("cuda", "cuda", "cuda,gpu")]
    for name, rec, prof in cases:
        for verb, want in (("record", rec), ("profile", prof)):
            out = os.path.join(tmpdir(), "t.bst")
            p = run([BPFSIGHT, verb, "-t", name, "-s", "none", "-o", out, API_SHARED, "1"],
                    timeout=120)
            eq(p.returncode, 0, f"{verb} -t {name}: exit ({p.stderr[-600:]})")
            got = fams(out) - {"proc", "sched"}  # profile adds nsys's context switches
            eq(got, set(want.split(",")), f"{verb} -t {name}: families")
    p = run([BPFSIGHT, "record", "-t", "mpi", "-o", os.path.join(tmpdir(), "x.bst"),
             API_SHARED, "1"])
    eq(p.returncode, 1, "record -t mpi: refused")
    check("nsys traces mpi; bpfsight has no family for it" in p.stderr, p.stderr)


def test_nsys_options_without_equivalent_are_named():
    """An nsys option or -t name bpfsight has no equivalent for: exit 1, the option named;
    nothing launched."""
    d = tmpdir()
    mark = os.path.join(d, "ran")
    for opts, words in ((["--cuda-graph-trace=node"], "--cuda-graph-trace: nsys's option"),
                        (["-t", "cuda,mpi"], "-t mpi: nsys traces mpi; bpfsight has no family"),
                        (["-y", "5"], "-y: nsys's option has no bpfsight equivalent"),
                        (["--capture-range=nvtx"], "needs --nvtx-capture=NAME")):
        for verb in ("record", "profile"):
            p = run([BPFSIGHT, verb, *opts, "-o", os.path.join(d, "x.bst"), "touch", mark])
            eq(p.returncode, 1, f"{verb} {opts}: exit")
            check(words in p.stderr, f"{verb} {opts}: {p.stderr}")
            check(not os.path.exists(mark), f"{verb} {opts}: nothing launched")


def test_stats_takes_nsys_report_names_and_output():
    """nsys's older report names are ours; its trace reports name what does their job; -o
    writes the tables to a new file."""
    need_cuda(API_SHARED)
    d = tmpdir()
    out = os.path.join(d, "t.bst")
    p = run([BPFSIGHT, "record", "-t", "cuda,osrt", "-o", out, API_SHARED, "1"], timeout=120)
    eq(p.returncode, 0, p.stderr[-300:])
    old = stats(out, "cudaapisum,osrtsum")
    eq(sorted(old), ["cuda_api_sum", "osrt_sum"], "nsys 2021's names")
    p = run([BPFSIGHT, "stats", out, "-r", "cuda_gpu_trace"])
    eq(p.returncode, 1, "an nsys trace report")
    check("`bpfsight dump FILE`" in p.stderr, p.stderr)
    table = os.path.join(d, "tables.txt")
    p = run([BPFSIGHT, "stats", out, "-r", "cuda_api_sum", "-o", table])
    eq((p.returncode, p.stdout), (0, ""), "-o: nothing on stdout")
    with open(table) as f:
        check("cudaLaunchKernel" in f.read(), "the table in the file")
    p = run([BPFSIGHT, "stats", out, "-r", "cuda_api_sum", "-o", table])
    eq(p.returncode, 1, "-o never overwrites")


def test_nsys_backtrace_chooses_the_unwind():
    """-b fp is --unwind=fp (frame pointers only: no table built, none in the file); -b dwarf
    and -b lbr say that bpfsight's default unwinds by tables and record with them; a bad
    value is refused."""
    need_root()
    spin = workload("unwind_qsort")
    for verb in ("record", "profile"):
        for how, tables, said in (("fp", False, None),
                                  ("dwarf", True, "by unwind tables built from .eh_frame"),
                                  ("lbr", True, "no LBR")):
            out = os.path.join(tmpdir(), "t.bst")
            # A sample in the spin's code without frame pointers is what wants a table.
            p = run([BPFSIGHT, verb, "-b", how, "-t", "cpu", "--sample-rate", "499", "-o", out,
                     spin, "spin", "500"], timeout=120)
            eq(p.returncode, 0, f"{verb} -b {how}: exit ({p.stderr[-600:]})")
            eq("unwind_tables" in info(out), tables, f"{verb} -b {how}: tables in the file")
            check(said is None or said in p.stderr, f"{verb} -b {how}: {p.stderr[-300:]}")
        p = run([BPFSIGHT, verb, "-b", "bogus", "-o", os.path.join(tmpdir(), "x.bst"), "true"])
        eq(p.returncode, 1, f"{verb} -b bogus: exit")
        check("-b bogus: give fp, dwarf, lbr or none" in p.stderr, p.stderr)


SYSCALLS = workload("syscalls")


def test_nsys_output_escapes_stats_and_export():
    """nsys's -o escapes: %p the launched command's pid (the first -p's when attached), %h the
    host, %q{VAR} a variable, %n the first free number, %% a '%'; an unknown one is refused.
    --stats=true prints the reports and --export=sqlite writes STEM.sqlite once the file is
    closed, as nsys does; an existing file's refusal says -f true."""
    need_root()
    d = tmpdir()
    host = os.uname().nodename
    env = dict(os.environ, RUN_TAG="r7")
    p = run([BPFSIGHT, "profile", "-t", "osrt", "-o", os.path.join(d, "prof_%p_%h_%q{RUN_TAG}"),
             "--stats=true", "--export=sqlite", "--", SYSCALLS, "3", "1", "1000"], env=env)
    eq(p.returncode, 0, f"profile: {p.stderr[-600:]}")
    pid = int(next(l.split()[1] for l in p.stdout.splitlines() if l.startswith("pid ")))
    trace = os.path.join(d, f"prof_{pid}_{host}_r7.bst")
    check(os.path.exists(trace), f"{trace} written: {sorted(os.listdir(d))}")
    check(any(e["pid"] == pid for e in dump(trace)), "%p is the launched command's pid")
    check("** OS Runtime Summary (osrt_sum):" in p.stdout, f"--stats=true: {p.stdout[-800:]}")
    db = sqlite3.connect(trace[:-4] + ".sqlite")
    check(db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] > 0,
          "--export=sqlite: the database beside the trace")
    # An existing file: nsys's spelling of the way out.
    q = run([BPFSIGHT, "profile", "-t", "osrt", "-o", trace[:-4], "--", "/bin/true"])
    eq(q.returncode, 1, "an existing file")
    check("use -f true or --force" in q.stderr, q.stderr)
    # %n, %%, and -p's pid.
    for want in ("rep1%.bst", "rep2%.bst"):
        r = run([BPFSIGHT, "record", "-t", "osrt", "-o", os.path.join(d, "rep%n%%.bst"), "--",
                 "/bin/true"])
        eq(r.returncode, 0, r.stderr[-400:])
        check(os.path.exists(os.path.join(d, want)), f"{want}: {sorted(os.listdir(d))}")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        r = run([BPFSIGHT, "record", "-t", "osrt", "-p", str(sleeper.pid), "-d", "300ms",
                 "-o", os.path.join(d, "att_%p.bst")])
        eq(r.returncode, 0, r.stderr[-400:])
        check(os.path.exists(os.path.join(d, f"att_{sleeper.pid}.bst")), sorted(os.listdir(d)))
    finally:
        sleeper.kill()
    bad = run([BPFSIGHT, "record", "-t", "osrt", "-o", os.path.join(d, "x%z"), "--", "/bin/true"])
    eq(bad.returncode, 1, "an unknown escape")
    check("unknown escape '%z'" in bad.stderr, bad.stderr)
