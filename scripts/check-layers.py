#!/usr/bin/env python3
"""check-layers.py: the library's file-level dependency graph, its cycles
and its layer violations (issue 49).

    scripts/check-layers.py BUILD_DIR [SOURCE_DIR]

Reads the objects of host/ that BUILD_DIR's clformer_objects target built
(BUILD_DIR/CMakeFiles/clformer_objects.dir/host/**.o) with one `nm` call:
file A depends on file B when A refers to a symbol B defines. Then:

  - cycles: files that depend on each other, directly or around a longer
    loop (a strongly connected component of more than one file), each with
    the symbols that close it: A calls B and B calls A means neither can be
    read, tested or replaced without the other;
  - layers: a file that refers to a folder above its own. The order is read
    from the map at the top of SOURCE_DIR/docs/ARCHITECTURE.md (each
    host/ folder is built only from those below it; folders named on one
    line, `host/ops/,` then `host/attention/`, share a rank), so the page
    and the check cannot drift apart;
  - header cycles: host/ headers that #include each other, around any loop.

Exits 1 when it finds any of these, and when it cannot read its input
(too few objects, no map), so that a broken build folder never passes as
clean; objects whose source is gone (a stale build folder) are skipped.
Before reading anything it runs its cycle finder on a graph with a known
cycle, so that a finder that found nothing would fail rather than pass.
Label `host` in tests/CMakeLists.txt (layers_check); a second or two.
"""
import os
import re
import subprocess
import sys


def sccs(graph):
    """Strongly connected components of graph (node -> set of nodes) with
    more than one node, each sorted; Tarjan's algorithm, iterative."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def selftest():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    got = sccs(g)
    if got != [["a", "b", "c"]]:
        sys.exit(f"check-layers: the cycle finder is broken: {got} for a graph whose one cycle is a, b, c")


def read_objects(objdir, src):
    objs = []
    for dirpath, _, names in os.walk(os.path.join(objdir, "host")):
        objs += [os.path.join(dirpath, n) for n in names if n.endswith(".o")]
    # an object whose source was deleted since it was built says nothing
    objs = [o for o in objs if os.path.isfile(os.path.join(src, os.path.relpath(o, objdir)[: -len(".o")]))]
    if len(objs) < 50:
        sys.exit(f"check-layers: only {len(objs)} objects under {objdir}/host: build the library first")
    objs.sort()
    res = subprocess.run(["nm", "-A", "-P", *objs], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"check-layers: nm failed: {res.stderr.strip()}")
    defined, undefined = {}, {}
    for line in res.stdout.splitlines():
        # "path.o: name type [value size]"
        path, _, rest = line.partition(": ")
        parts = rest.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        f = os.path.relpath(path, objdir)[: -len(".o")]
        if kind == "U":
            undefined.setdefault(f, set()).add(name)
        elif kind in "TDBRCGSVW" and not name.startswith("_Z"):
            # C++'s weak template instantiations are defined in every
            # object that uses them: they say nothing about our files
            if kind in "VW":
                continue
            defined.setdefault(name, f)
    graph, why = {}, {}
    for f in set(undefined) | set(defined.values()):
        graph.setdefault(f, set())
    for f, names in undefined.items():
        for n in sorted(names):
            g = defined.get(n)
            if g and g != f:
                graph[f].add(g)
                why.setdefault((f, g), []).append(n)
    return graph, why


def read_ranks(src):
    """host folder -> rank (0 = the bottom) from ARCHITECTURE.md's map."""
    path = os.path.join(src, "docs", "ARCHITECTURE.md")
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        sys.exit(f"check-layers: {e}")
    order, joined = [], False
    for line in lines:
        if line.startswith("## "):
            break
        m = re.match(r"^    (host/[a-z_]+)/(,?)", line)
        if not m:
            continue
        if joined:
            order[-1].append(m.group(1))
        else:
            order.append([m.group(1)])
        joined = m.group(2) == ","
    ranks = {}
    for r, folders in enumerate(reversed(order)):
        for f in folders:
            ranks[f] = r
    if len(ranks) < 8:
        sys.exit(f"check-layers: only {len(ranks)} host/ folders in the map of {path}: {sorted(ranks)}")
    return ranks


def header_graph(src):
    """host/ header -> the host/ headers it #includes (quoted includes,
    resolved beside the file, then under host/)."""
    host = os.path.join(src, "host")
    graph = {}
    for dirpath, _, names in os.walk(host):
        for n in names:
            if not n.endswith(".h"):
                continue
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, src)
            graph[rel] = set()
            for line in open(p, encoding="utf-8"):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                for cand in (os.path.join(dirpath, m.group(1)), os.path.join(host, m.group(1))):
                    if os.path.isfile(cand) and cand.endswith(".h"):
                        graph[rel].add(os.path.relpath(os.path.normpath(cand), src))
                        break
    return graph


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: check-layers.py BUILD_DIR [SOURCE_DIR]")
    selftest()
    build = sys.argv[1]
    src = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    graph, why = read_objects(os.path.join(build, "CMakeFiles", "clformer_objects.dir"), src)
    ranks = read_ranks(src)
    bad = 0

    cycles = sccs(graph)
    for comp in cycles:
        bad += 1
        print(f"cycle: {' <-> '.join(comp)}")
        for a in comp:
            for b in comp:
                if (a, b) in why:
                    names = why[(a, b)]
                    more = f" (+{len(names) - 3})" if len(names) > 3 else ""
                    print(f"    {a} -> {b}: {', '.join(names[:3])}{more}")

    for (a, b), names in sorted(why.items()):
        fa, fb = os.path.dirname(a), os.path.dirname(b)
        if fa == fb:
            continue
        if fa not in ranks or fb not in ranks:
            bad += 1
            print(f"layer: {a} -> {b}: a folder the map of docs/ARCHITECTURE.md does not name")
        elif ranks[fb] >= ranks[fa]:
            bad += 1
            print(f"layer: {a} -> {b} ({', '.join(names[:3])}): {fb}/ is not below {fa}/")

    for comp in sccs(header_graph(src)):
        bad += 1
        print(f"header cycle: {' <-> '.join(comp)}")

    nedges = sum(len(v) for v in graph.values())
    if bad:
        print(f"check-layers: {bad} problem(s) in {len(graph)} files, {nedges} file-to-file dependencies")
        return 1
    print(f"check-layers: {len(graph)} files, {nedges} file-to-file dependencies: no cycle, "
          f"every dependency points down the map ({len(ranks)} host/ folders), "
          "no header cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
