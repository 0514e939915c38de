"""Which GPU operations of a dump can be linked to their launching cuda call, computed here
from the dump's own events, independently of the recorder's and the reader's join.

An op is linkable when CUPTI's API record of its correlation id starts inside a recorded
launching cuda call (a launch, graph, copy or memset call, any depth) on the same thread; the
call it must be linked to is the outermost such call.
"""
import collections
import re

LAUNCHING = re.compile(r"Launch|Memcpy|Memset|Graph")
GPU_OPS = ("gpu_kernel", "gpu_memcpy", "gpu_memset")
KINDS = "cuda_api,gpu_api," + ",".join(GPU_OPS)


def outermost_calls(calls, points):
    """For each time in POINTS, the start of the outermost call of CALLS ((ts, end) of one
    thread, which nest) containing it, or None."""
    calls = [(t0, -t1) for t0, t1 in sorted((t0, -t1) for t0, t1 in calls)]  # outer first
    out, stack, i = {}, [], 0
    for t in sorted(set(points)):
        while i < len(calls) and calls[i][0] <= t:
            while stack and stack[-1][1] < calls[i][0]:
                stack.pop()
            stack.append(calls[i])
            i += 1
        while stack and stack[-1][1] < t:
            stack.pop()
        out[t] = stack[0][0] if stack else None
    return out


def analyse(events):
    """{"ops", "linkable", "linked", "linked_outermost", "link_<kind>"...} and the first few
    linkable ops not linked (or not to the outermost call)."""
    calls, apis, ops = collections.defaultdict(list), {}, []
    launching = {}  # a call's name -> whether it launches (a few hundred names, 10^5 calls)
    for e in events:  # only what is needed is kept, as tuples: real traces have 10^5 ops
        k = e["kind"]
        if k == "cuda_api":
            name = e["name"]
            if name not in launching:
                launching[name] = bool(LAUNCHING.search(name))
            if launching[name]:
                calls[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        elif k == "gpu_api":
            apis[(e["pid"], e["args"]["correlation"])] = (e["pid"], e["tid"], e["ts"])
        elif k in GPU_OPS:
            a = e["args"]
            ops.append((e["pid"], e["tid"], a["correlation"], a.get("link"), a.get("call_ts")))
    points = collections.defaultdict(list)
    for pid, tid, ts in apis.values():
        points[(pid, tid)].append(ts)
    outer = {}
    for key, pts in points.items():
        for t, c in outermost_calls(calls.get(key, []), pts).items():
            outer[(key, t)] = c
    st, bad = collections.Counter(), []
    if ops:
        st["ops"] = len(ops)
    for pid, tid, corr, link, call_ts in ops:
        st["link_" + link] += 1
        a = apis.get((pid, corr))
        call = a and outer.get(((a[0], a[1]), a[2]))
        if not call:
            continue
        st["linkable"] += 1
        if link == "cuda":
            st["linked"] += 1
            if call_ts == call and tid == a[1]:
                st["linked_outermost"] += 1
                continue
        if len(bad) < 3:  # as the failure message shows them
            bad.append((dict(pid=pid, tid=tid, args=dict(correlation=corr, link=link,
                                                          call_ts=call_ts)),
                        dict(pid=a[0], tid=a[1], ts=a[2]), call))
    return st, bad
