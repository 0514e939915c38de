"""What tracers touch in a process, read from outside as a user would (test_beside.py,
test_shim's Valgrind test).

A uprobe is an int3 the kernel writes into the process's own copy of a code page: that page of
the file's executable mapping is then the process's (smaps' "Anonymous", pagemap's flags), and
its bytes differ from the file's where the int3s are. And a tracer that
holds a uprobe not limited to its own processes writes it into every process that maps the
file: a uprobe_multi link with pid 0 (its fdinfo says the pid), or a perf-event uprobe (the
kernel's BPF_TASK_FD_QUERY says what a perf event's program is on), whose pid nothing says
(counted as one)."""
import ctypes
import os
import subprocess
import threading
import time

PAGE = 4096


def written_code(pid):
    """{path: [file offsets of the bytes that differ from the file]} over PID's executable file
    mappings: its int3s. Only the pages the process has its own copy of are read (smaps says
    which mappings have some, /proc/PID/pagemap which pages: present, not the file's): a page
    written once keeps its copy after a probe is taken out, with the file's bytes again."""
    maps, path, execs = [], None, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):  # a mapping's header line
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                execs = "x" in parts[1] and path.startswith("/")
                lo, hi = (int(x, 16) for x in first.split("-"))
                off = int(parts[2], 16)
            elif first == "Anonymous:" and execs and int(line.split()[1]):
                maps.append((lo, hi, off, path))
    out = {}
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap, open(f"/proc/{pid}/mem", "rb") as mem:
        for lo, hi, off, path in maps:
            pagemap.seek(lo // PAGE * 8)
            entries = pagemap.read((hi - lo) // PAGE * 8)
            with open(path, "rb") as f:
                for i in range(len(entries) // 8):
                    e = int.from_bytes(entries[8 * i:8 * i + 8], "little")
                    if not e >> 63 & 1 or e >> 61 & 1:  # not present, or the file's page
                        continue
                    mem.seek(lo + i * PAGE)
                    f.seek(off + i * PAGE)
                    got, want = mem.read(PAGE), f.read(PAGE)
                    diff = [off + i * PAGE + j for j, (a, b) in enumerate(zip(got, want))
                            if a != b]
                    if diff:
                        out.setdefault(path, []).extend(diff)
    return out


_libc = ctypes.CDLL(None, use_errno=True)
NR_BPF, BPF_TASK_FD_QUERY = 321, 20  # x86-64
BPF_FD_TYPE_UPROBE, BPF_FD_TYPE_URETPROBE = 4, 5


def perf_fd_type(pid, fd):
    """What the BPF program on perf event FD of PID is attached to (BPF_FD_TYPE_*), or -1."""
    # union bpf_attr's task_fd_query: pid, fd, flags, buf_len, buf, prog_id, fd_type,
    # probe_offset, probe_addr
    attr = (ctypes.c_uint32 * 14)()
    attr[0], attr[1] = pid, fd
    if _libc.syscall(NR_BPF, BPF_TASK_FD_QUERY, attr, ctypes.c_uint(ctypes.sizeof(attr))):
        return -1
    return attr[7]


def global_probes(ignore=()):
    """[(pid, comm, what)]: the tracers but IGNORE's pids holding a uprobe that may be on every
    process that maps its file: a perf-event uprobe, or a uprobe_multi link whose fdinfo says
    pid 0, which is also what it says of a link limited to a process that has exited (a
    recording closes those as it reads their exit: own_links tells them apart by time)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in ignore:
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            # any process, not only TRACERS': a full run once found a twin written 34 of
            # libcudart's int3s (its recorder places 120) while no TRACERS process held a
            # uprobe; who placed them is not known
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                # a perf event's program (bpftrace's probes; a detached teardown's events)
                if target == "anon_inode:[perf_event]" and perf_fd_type(int(pid), int(fd)) in (
                        BPF_FD_TYPE_UPROBE, BPF_FD_TYPE_URETPROBE):
                    found.append((int(pid), comm, "a perf-event uprobe"))
                if target != "anon_inode:bpf_link":
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
                kind = info.get("link_type", "").strip()
                if (kind in ("uprobe_multi", "uretprobe_multi") and
                        info.get("pid", "0").strip() == "0") or \
                        info.get("event_type", "").strip() in ("uprobe", "uretprobe"):
                    found.append((int(pid), comm, f"{kind} {info.get('path', '').strip()}"))
        except OSError:
            continue  # ended meanwhile
    return found


QUIET = 3  # s


def code_goes(pid, seconds):
    """Whether PID's written code (written_code) comes back to its files' bytes within SECONDS:
    int3s a recording that still runs put there stay; those of a tracer whose probes are being
    taken out go (a link or perf event closed is invisible from then on, and its probes come
    out one by one: half a minute for a fallback recording's thousands under load)."""
    from helpers import SLOWDOWN
    end = time.monotonic() + seconds * SLOWDOWN
    while time.monotonic() < end:
        if not os.path.exists(f"/proc/{pid}") or not written_code(pid):
            return True
        time.sleep(0.1)
    return False


def run_untouched(cmds, what, during=None, ok=None, budget=180, passing=None):
    """Run CMDS at once and return [(cmd, returncode, (stdout, stderr))] and what DURING()
    returned while they ran. A run OK(results, during's) says is not fine, while another
    tracer held a uprobe that may be on every process (watched every 50 ms), proves nothing:
    it is made again once they are gone, for BUDGET seconds; then None, None (the caller says
    so: a Skip). So is one PASSING(results, during's) says was touched by probes that went by
    themselves (a description; a tracer's probes being taken out after its descriptors are
    closed, which nothing else shows). A run not fine otherwise is returned, for the caller to
    fail."""
    from helpers import SLOWDOWN  # the runner's helpers, imported once a test runs
    end = time.monotonic() + budget * SLOWDOWN
    quiet_since = time.monotonic()
    while time.monotonic() < end:
        # A tracer's uprobes outlive its last descriptor while the kernel takes them out (a
        # grace period each): a run starts once none has been seen for QUIET seconds.
        if global_probes():
            quiet_since = time.monotonic()
        if time.monotonic() - quiet_since < QUIET:
            time.sleep(0.05)
            continue
        seen, done = [], threading.Event()

        def watch():
            while not done.is_set():
                seen.extend(global_probes())
                done.wait(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  errors="replace") for c in cmds]
        got = during() if during else None
        results = [(c, p.returncode, out) for c, p, out in
                   ((c, p, p.communicate(timeout=300)) for c, p in zip(cmds, procs))]
        done.set()
        watcher.join()
        if not seen and not (ok and ok(results, got)) and passing:
            went = passing(results, got)
            if went:
                seen.append(went)
        if not seen or (ok and ok(results, got)):
            return results, got
        print(f"  {what}: another tracer held uprobes meanwhile ({seen[0]}): again, once they "
              "are gone")
        quiet_since = time.monotonic()
    return None, None


def own_links(pid, settle=1.5):
    """[(link type, pid it is limited to (0: none), path)] of the uprobe links process PID
    holds (its fdinfo). A link said to be limited to pid 0 is one on every process only if it
    is still there SETTLE seconds later: a link limited to a process that exited says pid 0
    too, until the recording has read the exit and closed it."""
    def links():
        out = {}
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf_link":
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            except OSError:
                continue  # closed meanwhile
            kind = info.get("link_type", "").strip()
            if kind in ("uprobe_multi", "uretprobe_multi"):
                out[info["link_id"].strip()] = (kind, int(info["pid"]),
                                                info.get("path", "").strip())
            elif info.get("event_type", "").strip() in ("uprobe", "uretprobe"):
                out[info["link_id"].strip()] = (info["event_type"].strip(), 0,
                                                info.get("name", "").strip())
        return out
    first = links()
    if any(l[1] == 0 for l in first.values()):
        time.sleep(settle)
        later = links()
        first = {k: v for k, v in first.items() if v[1] != 0 or k in later}
    return list(first.values())
