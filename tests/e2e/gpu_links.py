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
    calls = sorted(calls, key=lambda c: (c[0], -c[1]))
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
    for e in events:  # only what is needed is kept: real traces have 10^5 ops
        k = e["kind"]
        if k == "cuda_api" and LAUNCHING.search(e["name"]):
            calls[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        elif k == "gpu_api":
            apis[(e["pid"], e["args"]["correlation"])] = dict(pid=e["pid"], tid=e["tid"],
                                                              ts=e["ts"])
        elif k in GPU_OPS:
            a = e["args"]
            ops.append(dict(pid=e["pid"], tid=e["tid"], args=dict(
                correlation=a["correlation"], link=a.get("link"), call_ts=a.get("call_ts"))))
    points = collections.defaultdict(list)
    for a in apis.values():
        points[(a["pid"], a["tid"])].append(a["ts"])
    outer = {}
    for key, pts in points.items():
        for t, c in outermost_calls(calls.get(key, []), pts).items():
            outer[(key, t)] = c
    st, bad = collections.Counter(), []
    for o in ops:
        st["ops"] += 1
        st["link_" + o["args"].get("link", "?")] += 1
        a = apis.get((o["pid"], o["args"]["correlation"]))
        call = a and outer.get(((a["pid"], a["tid"]), a["ts"]))
        if not call:
            continue
        st["linkable"] += 1
        if o["args"].get("link") == "cuda":
            st["linked"] += 1
            if o["args"].get("call_ts") == call and o["tid"] == a["tid"]:
                st["linked_outermost"] += 1
                continue
        if len(bad) < 3:
            bad.append((o, a, call))
    return st, bad
