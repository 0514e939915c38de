#!/usr/bin/env python3
"""Which folder may include which: every #include "..." of user/ and bpf/ checked against the
tables of docs/ARCHITECTURE.md's "Layers" section, the one place the rules are written.

Headers are included by file name (every user/ folder is on the quote path), so a header's
folder is where the one file of that name lies. A file may include its own folder's headers,
those of the layers its row names, and bpf/'s contract headers (its *.h but *.bpf.h) anywhere;
a *.bpf.h or vmlinux.h only in bpf/, whose files include nothing of user/; a skeleton
(NAME.skel.h, generated from bpf/NAME.bpf.c) where its row says "skeletons". A row whose
"may include" says "the row's earlier folders" is ordered: each of its folders may include the
folders listed before it in the row, never one after it. And no include circle crosses a
folder: folder A including B (through any file) and B including A, however long the way
round, is named with one include of each step. Each problem is one line naming the file, the
include and the rule; the exit status is 1 when there is one.

  tools/check_layers.py [--root DIR] [--doc FILE]
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
TICKS = re.compile(r"`([^`]+)`")
DOC = "docs/ARCHITECTURE.md"
ORDERED = "the row's earlier folders"
RULE = f'{DOC}, "Layers"'


def tables(doc):
    """The markdown tables of the "## Layers" section: {first header cell: [rows of cells]}."""
    out, cur, inside = {}, None, False
    with open(doc) as f:
        for line in f:
            if line.startswith("## "):
                inside = line.startswith("## Layers")
                cur = None
                continue
            if not inside or not line.startswith("|"):
                cur = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cur is None:
                cur = out.setdefault(cells[0], [])
            elif not set("".join(cells)) <= set("-: "):
                cur.append(cells)
    return out


class Rules:
    def __init__(self, doc):
        t = tables(doc)
        need = ("layer", "plug-ins of", "family")
        missing = [k for k in need if k not in t]
        if missing:
            raise SystemExit(f"{doc}: no table starting with {missing} in its Layers section")
        self.layer_of = {}  # folder or "families/*" -> layer name
        self.may = {}  # layer -> set of layer names and rule words
        self.rank = {}  # folder -> its place in its row (ordered rows: who comes first)
        for layer, folders, may in t["layer"]:
            for i, f in enumerate(TICKS.findall(folders)):
                self.layer_of[f] = layer
                self.rank[f] = i
            self.may[layer] = {w.strip() for w in may.split(",") if w.strip()}
        self.plugins = {}  # header -> folder that offers it
        for folder, headers in t["plug-ins of"]:
            for h in TICKS.findall(headers):
                self.plugins[h] = TICKS.findall(folder)[0]
        self.pairs = {(TICKS.findall(a)[0], TICKS.findall(b)[0]) for a, b, *_ in t["family"]}
        # core header -> the types of the layers above it names by pointer (plug-in tables)
        self.named = {TICKS.findall(h)[0]: set(TICKS.findall(types))
                      for h, types, *_ in t.get("core header", [])}
        self.pending = {}  # (file under user/, header) -> used
        for file, headers, *_ in t.get("file", []):  # pending exceptions, when there are any
            for h in TICKS.findall(headers):
                self.pending[(TICKS.findall(file)[0], h)] = False

    def layer(self, folder):
        if folder in self.layer_of:
            return self.layer_of[folder]
        if folder.startswith("families/") and "families/*" in self.layer_of:
            return self.layer_of["families/*"]
        return None


def sources(root):
    """(path relative to ROOT, folder) of every C file and header of user/ and bpf/."""
    for top in ("user", "bpf"):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    rel = os.path.relpath(os.path.join(d, f), root)
                    folder = "bpf" if top == "bpf" else os.path.relpath(d, os.path.join(root,
                                                                                          "user"))
                    yield rel, folder


def check(root, doc):
    rules = Rules(doc)
    problems = []
    where = {}  # header name -> folder
    files = list(sources(root))
    for rel, folder in files:
        name = os.path.basename(rel)
        if name.endswith(".h"):
            if name in where:
                problems.append(f"{rel}: a second {name} (also in {where[name]}): headers are "
                                f"included by name, so each name is one file")
            where[name] = folder
    folders = {folder for _, folder in files if folder != "bpf"}
    for folder in sorted(folders):
        if not rules.layer(folder):
            problems.append(f"user/{folder}/: a folder in no row of the layers table ({RULE})")
    for h, folder in sorted(rules.plugins.items()):
        if where.get(h) != folder:
            problems.append(f"{RULE}: plug-in header {h} is not in user/{folder}/")
    for a, b in sorted(rules.pairs):
        for fam in (a, b):
            if f"families/{fam}" not in folders:
                problems.append(f"{RULE}: family pair {a} -> {b}: no user/families/{fam}/")

    nincludes = 0
    edges = {}  # (folder, folder) -> the first include that makes it: "file:line"
    for rel, folder in files:
        with open(os.path.join(root, rel), errors="replace") as f:
            lines = f.readlines()
        for lineno, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            nincludes += 1
            why = allowed(rules, rel, folder, m.group(1), where)
            if why:
                problems.append(f'{rel}:{lineno}: #include "{m.group(1)}": {why}')
            to = where.get(os.path.basename(m.group(1)))
            if to and to != folder and "bpf" not in (to, folder):
                edges.setdefault((folder, to), f"{rel}:{lineno}")
    problems += circles(edges)
    problems += core_names(root, files, rules)
    for (file, h), used in sorted(rules.pending.items()):
        if not used:
            problems.append(f'{RULE}: the pending exception user/{file} -> {h} is gone: remove '
                            f'it from the table')
    return problems, len(files), nincludes


STRUCT_DEF = re.compile(r"^\s*(?:typedef\s+)?struct\s+(\w+)\s*\{", re.M)
STRUCT_DECL = re.compile(r"^struct\s+(\w+);", re.M)


def core_names(root, files, rules):
    """Core names a type of a layer above it only where the table says so (a plug-in table
    by pointer, in family.h), and the table lists only what core still names."""
    out, defined = [], {}
    for rel, folder in files:
        with open(os.path.join(root, rel), errors="replace") as f:
            for name in STRUCT_DEF.findall(f.read()):
                defined.setdefault(name, folder)
    for rel, folder in files:
        if folder != "core" or not rel.endswith(".h"):
            continue
        h = os.path.basename(rel)
        with open(os.path.join(root, rel), errors="replace") as f:
            text = f.read()
        listed = rules.named.get(h, set())
        for name in sorted(set(STRUCT_DECL.findall(text))):
            where = defined.get(name)
            if where in (None, "core", "lib", "bpf") or name in listed:
                continue
            out.append(f"{rel}: struct {name} (user/{where}/) is named by core, which is below "
                       f"it: a plug-in table core may name is listed in the core header table "
                       f"({RULE})")
        for name in sorted(listed - set(STRUCT_DECL.findall(text))):
            out.append(f"{RULE}: {h} no longer names struct {name}: remove it from the core "
                       f"header table")
    return out


def circles(edges):
    """An include circle across folders, once per circle: each step with one include of it."""
    out, graph = [], {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    index, low, stack, on, comps = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(set(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    for comp in comps:
        start = min(comp)
        path, seen = [start], {start}
        while True:  # a way round: from each folder, the first of the circle it includes
            nxt = sorted(w for w in graph[path[-1]] if w in comp)
            step = next((w for w in nxt if w not in seen), start if start in nxt else nxt[0])
            if step in seen:
                path.append(step)
                break
            path.append(step)
            seen.add(step)
        ring = path[path.index(path[-1]):]
        steps = "; ".join(f"{a} -> {b} ({edges[(a, b)]})" for a, b in zip(ring, ring[1:]))
        out.append(f"include circle across folders: {steps} ({RULE})")
    return out


def who(folder, layer):
    """A folder as messages name it: with its layer when that is another name."""
    return folder if folder == layer else f"{folder} ({layer})"


def allowed(rules, rel, folder, inc, where):
    """None when FOLDER's file REL may include INC, else the rule it breaks."""
    name = os.path.basename(inc)
    if folder == "bpf":
        if name == "vmlinux.h" or where.get(name) == "bpf":
            return None
        return f"bpf/ includes only bpf/ headers ({RULE})"
    src = rules.layer(folder)
    if not src:
        return f"{folder} is in no row of the layers table ({RULE})"
    if name.endswith(".skel.h"):
        if "skeletons" in rules.may.get(src, ()):
            return None
        return (f"{who(folder, src)} loads no BPF program: a skeleton is for the rows that say "
                f"skeletons ({RULE})")
    if name == "vmlinux.h" or name.endswith(".bpf.h"):
        return f"{name} is BPF's own: only bpf/ includes it ({RULE})"
    if name not in where:
        return "no header of that name in user/ or bpf/"
    to = where[name]
    if to == "bpf" or to == folder:
        return None
    key = (os.path.relpath(rel, "user"), name)
    if key in rules.pending:
        rules.pending[key] = True
        return None
    dst = rules.layer(to)
    may = rules.may.get(src, set())
    if not dst:
        return f"{to} is in no row of the layers table ({RULE})"
    if src == dst and src != "family":
        if src in may:
            return None
        if ORDERED in may:
            if rules.rank[to] < rules.rank[folder]:
                return None
            return (f"{to} comes after {folder} in the {src} row, which is ordered: a {src} "
                    f"folder includes only those before it ({RULE})")
        return f"{folder} and {to} are both {src}, which do not include each other ({RULE})"
    if src == dst == "family":
        a, b = folder.split("/", 1)[1], to.split("/", 1)[1]
        if "family pairs" in may and (a, b) in rules.pairs:
            return None
        return (f"family {a} includes family {b}, which is not a listed pair (a family builds "
                f"on another's records only where the table says so: {RULE})")
    if dst in may:
        return None
    if "plug-ins" in may and rules.plugins.get(name) == to:
        return None
    offered = sorted(h for h, f in rules.plugins.items() if f == to)
    if "plug-ins" in may and offered:
        return (f"{who(folder, src)} may include only {to}'s plug-in headers "
                f"({', '.join(offered)}), not {to}/{name} ({RULE})")
    return (f"{who(folder, src)} may not include {who(to, dst)}; {src} may include: "
            f"{', '.join(sorted(may)) or 'nothing of user/'} ({RULE})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--root", default=here, help="the checkout (default: this one)")
    ap.add_argument("--doc", help=f"the document with the tables (default: ROOT/{DOC})")
    args = ap.parse_args()
    problems, nfiles, nincludes = check(args.root, args.doc or os.path.join(args.root, DOC))
    for p in problems:
        print(p)
    if problems:
        print(f"layers: {len(problems)} problems in {nfiles} files", file=sys.stderr)
        return 1
    print(f"layers: {nincludes} includes of {nfiles} files follow {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
