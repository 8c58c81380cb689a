#!/usr/bin/env python3
"""bench_plot_check.py CLFORMER SOURCE_DIR: `clformer bench plot` and
`clformer bench db` on a small made-up results tree (two v1 reports of two
made-up devices under vendor/device folders, one pre-v1 report beside
them): every chart is written, parses as XML (Python's parser) and carries
the right series (one per v1 report, the pre-v1 one left out, said);
the sweeps have their points where the reports put them (attention against
n, one panel per r; GEMM against 2mnk; translate against --batch);
`bench db` prints a table of absolute values, one column per v1 report and
no ratio; bad arguments get a clear error. Then, cheaply, that
bench/results/TABLE.md is what `bench db bench/results` prints now (not
stale). No device is opened: the reports are files. About a second."""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

CLI, SRC = sys.argv[1], sys.argv[2]
SVG = "{http://www.w3.org/2000/svg}"
failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)


def header(device, isa):
    return {"format": "clformer-bench/1", "record": "header", "spread_kind": "(max-min)/median",
            "date": "2026-12-07T00:00:00Z",
            "build": {"version": "0.1.0", "commit": "abc1234", "build_type": "Release", "compiler": "GNU",
                      "options": {"onednn": False, "mpi": False, "mhd": False, "sanitize": False}},
            "host": {"cpu": "Made-up CPU", "isa": isa, "threads": 2, "os": "Linux", "load_average_1m": 0.5,
                     "note": "", "caps": ""},
            "device": {"name": device, "platform": "P", "vendor": "V", "driver": "1", "version": "OpenCL 3.0",
                       "opencl_c": "OpenCL C 1.2", "type": "cpu", "compute_units": 2, "clock_mhz": 1000,
                       "global_mem_bytes": 1 << 30, "local_mem_bytes": 65536, "max_alloc_bytes": 1 << 28,
                       "fp16": False, "subgroups": False, "gemm": "host", "blas_threads": 2},
            "libraries": {"clblast": "1", "openblas": "1"},
            "settings": {"repetitions": 3, "warmup": 0, "quick": True, "command": "all", "weights": "random"}}


def row(bench, case, metric, unit, median, params=""):
    return {"bench": bench, "case": case, "params": params, "metric": metric, "unit": unit, "better": "higher",
            "n": 3, "median": median, "min": median * 0.9, "max": median * 1.1, "spread": 0.2}


def report(device, isa, scale):
    rows = []
    for n in (1024, 2048, 4096):
        for r in (32, 64):
            rows.append(row("attention", "restricted n=%d r=%d" % (n, r), "gflops", "GFLOP/s", scale * n / 100 + r))
    for case, flop in (("attn proj  d=256 m=2048 n=256 k=256", 1), ("square     1024^3 m=1024 n=1024 k=1024", 2)):
        rows.append(row("gemm", case, "gflops", "GFLOP/s", scale * 10 * flop))
    for batch in (1, 8, 32):
        rows.append(row("translate", "greedy beam=1", "sentences_per_s", "sentences/s", scale * batch,
                        "--batch %d" % batch))
    rows.append(row("translate", "memory", "max_rss_mib", "MiB", 500))
    rows[-1]["better"] = "lower"
    return "\n".join(json.dumps(x) for x in [header(device, isa)] + rows) + "\n"


tmp = tempfile.mkdtemp(prefix="bench-plot-check-")
tree = os.path.join(tmp, "results")
for sub, dev, isa, scale in (("acme/alpha", "Alpha Device", "avx2 fma", 1.0),
                              ("zeta/omega", "Omega Device", "avx512f", 2.0)):
    os.makedirs(os.path.join(tree, sub))
    with open(os.path.join(tree, sub, "report.jsonl"), "w") as f:
        f.write(report(dev, isa, scale))
with open(os.path.join(tree, "old.json"), "w") as f:  # pre-v1: no format, left out
    json.dump({"bench": "gemm", "results": [{"name": "x", "gflops": 1.0}]}, f)
out = os.path.join(tmp, "plots")
p = subprocess.run([CLI, "bench", "plot", tree, "-o", out], capture_output=True, text=True, timeout=60)
sys.stderr.write(p.stderr)
check(p.returncode == 0, "bench plot exits 0 (got %d)" % p.returncode)
check("old.json" in p.stderr and "before format v1" in p.stderr, "the pre-v1 report is skipped, saying so")
written = set(p.stdout.split())
expect = ["attention-gflops", "gemm-gflops", "translate-sentences_per_s", "translate-max_rss_mib",
          "sweep-attention-n", "sweep-gemm-size", "sweep-translate-batch"]
for name in expect:
    path = os.path.join(out, name + ".svg")
    check(path in written and os.path.isfile(path), "%s.svg written and named on stdout" % name)
check(len(written) == len(expect), "no other chart (%d written)" % len(written))


def parse(name):
    try:
        return ET.parse(os.path.join(out, name + ".svg")).getroot()
    except (ET.ParseError, OSError) as e:
        check(False, "%s.svg is well-formed XML (%s)" % (name, e))
        return None


def texts(root):
    return [t.text or "" for t in root.iter(SVG + "text")]


for name in expect:
    root = parse(name)
    if root is None:
        continue
    check(root.tag == SVG + "svg", "%s.svg is an <svg> document" % name)
    legend = [t for t in texts(root) if "Alpha Device" in t or "Omega Device" in t]
    check(len(legend) == 2, "%s.svg names both v1 reports' devices once each (%d)" % (name, len(legend)))
    check(not any("old.json" in t for t in texts(root)), "%s.svg leaves the pre-v1 report out" % name)

root = parse("attention-gflops")
if root is not None:  # one bar per device per case: 6 cases x 2 devices
    check(len([r for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None]) == 12,
          "attention-gflops.svg: 12 bars")
root = parse("sweep-attention-n")
if root is not None:
    groups = root.findall(SVG + "g")
    check(len(groups) == 4, "sweep-attention-n.svg: a line per device in each of 2 panels (r=32, r=64): %d" %
          len(groups))
    check(all(len(g.find(SVG + "polyline").get("points").split()) == 3 for g in groups),
          "each line has the 3 points n = 1024, 2048, 4096")
    check(any(t.strip() == "restricted r=32" for t in texts(root)), "a panel named for r=32, n taken out")
    check(sorted({g.get("data-series").split(",")[0] for g in groups}) == ["Alpha Device", "Omega Device"],
          "the lines are the two devices")
root = parse("sweep-translate-batch")
if root is not None:
    tips = [t.text for g in root.findall(SVG + "g") for c in g.findall(SVG + "circle") for t in [c.find(SVG + "title")]]
    check(sorted(tips) == sorted(["1: 1", "8: 8", "32: 32", "1: 2", "8: 16", "32: 64"]),
          "translate's points are (batch, sentences/s) of each device: %s" % tips)
root = parse("sweep-gemm-size")
if root is not None:
    tips = sorted(c.find(SVG + "title").text for c in root.iter(SVG + "circle"))
    check(tips == sorted(["2.68435e+08: 10", "2.14748e+09: 20", "2.68435e+08: 20", "2.14748e+09: 40"]),
          "GEMM's points are (2mnk, GFLOP/s): %s" % tips)

p = subprocess.run([CLI, "bench", "db", tree], capture_output=True, text=True, timeout=60)
check(p.returncode == 0, "bench db exits 0 (got %d)" % p.returncode)
lines = p.stdout.splitlines()
head = [l for l in lines if l.startswith("| bench |")]
check(len(head) == 1 and head[0].rstrip().endswith("| A | B |"), "db: one column per v1 report, no ratio: %s" % head)
check(any("Alpha Device" in l and "acme/alpha/report.jsonl" in l for l in lines), "db names column A's report")
cells = "| %.4g ±20%% | %.4g ±20%% |" % (4096 / 100 + 64, 2 * 4096 / 100 + 64)
check(any(l.startswith("| attention | restricted n=4096 r=64 |") and cells in l for l in lines),
      "db: absolute medians with their spread, side by side (%s)" % cells)
check("before format v1" in p.stderr, "db skips the pre-v1 report, saying so")

for args, words in ((["bench", "plot", tree], "-o DIR is missing"),
                    (["bench", "plot", tree, "-o", os.path.join(tree, "old.json", "x")], "cannot make the folder"),
                    (["bench", "db", tree, "--format", "csv"], "only md")):
    p = subprocess.run([CLI] + args, capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and words in p.stderr, "%s: exit 2 saying '%s'" % (" ".join(args[:2]), words))

# the README's table is generated: bench/results/TABLE.md is what db prints now
table = os.path.join(SRC, "bench", "results", "TABLE.md")
p = subprocess.run([CLI, "bench", "db", "bench/results"], capture_output=True, text=True, timeout=60, cwd=SRC)
with open(table) as f:
    check(p.returncode == 0 and p.stdout == f.read(),
          "bench/results/TABLE.md is not stale (regenerate: clformer bench db bench/results > bench/results/TABLE.md)")

subprocess.run(["rm", "-rf", tmp])
print("%d failed" % len(failures) if failures else "all passed")
sys.exit(1 if failures else 0)
