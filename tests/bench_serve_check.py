#!/usr/bin/env python3
"""bench_serve_check.py CLFORMER: `clformer bench serve` briefly on its own
tiny random-weights model (8 sentences of a gzip'd --src, 8 requests a run, 2 search steps,
a 120 s wall budget, 30 s a request): the v1 JSON report parses, names
weights "random", and holds the three scenarios with sane figures
(p50 <= p90 <= p99, rates > 0, the Server verdict agreeing with its p99
and bound, no failed request, the server's resident peak, energy or null); `bench compare` reads the report back; and
the server it started is gone afterwards (no `clformer serve` child left);
a --src of invalid UTF-8 is refused naming its file and line.
No figure is held to a speed: the machine is shared. About 5 s."""
import gzip
import json
import subprocess
import sys
import tempfile
import os
import shutil

CLI = sys.argv[1]
failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)


BOUND_MS = 60000  # generous: a loaded 2-core machine under ASan still passes it
run_tmp = tempfile.mkdtemp(prefix="bench-serve-check-")
# the lines sent come from a gzip'd --src (as data/multi30k's are), in the
# tiny model's words
files_tmp = tempfile.mkdtemp(prefix="bench-serve-src-")  # ours, apart from the one bench serve must empty
src_gz = os.path.join(files_tmp, "src.txt.gz")
with gzip.open(src_gz, "wt", encoding="utf-8") as f:
    for i in range(10):
        f.write(["A dog runs in the park.", "Two people sit near the water.", "",
                 "A young woman plays with a red ball."][i % 4] + "\n")
args = [CLI, "bench", "serve", "--quick", "--src", src_gz, "--lines", "8", "--requests", "8", "--search-steps", "2",
        "--rate", "4", "--p99-bound", str(BOUND_MS), "--seconds", "120", "--timeout", "30", "--format", "json"]
p = subprocess.run(args, capture_output=True, text=True, timeout=240, env=dict(os.environ, TMPDIR=run_tmp))
sys.stderr.write(p.stderr)
check(p.returncode == 0, "bench serve exits 0 (got %d)" % p.returncode)
try:
    rep = json.loads(p.stdout)
except ValueError as e:
    sys.exit("FAIL: the report does not parse: %s\n%s" % (e, p.stdout[:2000]))
check(rep.get("format") == "clformer-bench/1", "format clformer-bench/1")
check(rep.get("settings", {}).get("weights") == "random", "settings.weights is random")
rows = {}
for r in rep.get("rows", []):
    check(r["bench"] == "serve", "row of bench serve: %s" % r["case"])
    rows[(r["case"].split(" tiny")[0], r["metric"])] = r
    if r["median"] is not None:  # null: energy without a counter, checked below
        check(r["min"] <= r["median"] <= r["max"], "%s %s: min <= median <= max" % (r["case"], r["metric"]))


def fig(scenario, metric, unit, better):
    r = rows.get((scenario, metric))
    check(r is not None, "%s has %s" % (scenario, metric))
    if r is None:
        return float("nan")
    check(r["unit"] == unit and r["better"] == better, "%s %s: %s, %s is better" % (scenario, metric, unit, better))
    return r["median"]


check(fig("offline", "sentences_per_s", "sentences/s", "higher") > 0, "Offline sentences/s > 0")
s50, s90 = fig("singlestream", "p50_ms", "ms", "lower"), fig("singlestream", "p90_ms", "ms", "lower")
check(0 < s50 <= s90, "SingleStream 0 < p50 <= p90 (%g, %g)" % (s50, s90))
v = [fig("server", m, "ms", "lower") for m in ("p50_ms", "p90_ms", "p99_ms")]
check(0 < v[0] <= v[1] <= v[2], "Server 0 < p50 <= p90 <= p99 (%s)" % v)
ok = fig("server", "pass", "pass", "higher")
check(ok == (1 if v[2] <= BOUND_MS else 0), "Server pass (%g) agrees with p99 %g against %d ms" % (ok, v[2], BOUND_MS))
check(fig("server", "errors", "requests", "lower") == 0, "no Server request failed")
check(fig("server search", "max_rate_per_s", "sentences/s", "higher") >= 4,
      "the search's highest rate is at least the set rate, which passed")
check(fig("memory", "max_rss_mib", "MiB", "lower") > 0, "the server's resident peak")
# energy: a figure where the package counter is readable, else null, never 0
e = rows.get(("energy", "energy_j"))
readable = os.access("/sys/class/powercap/intel-rapl:0/energy_uj", os.R_OK)
check(e is not None and e["unit"] == "J" and (e["median"] > 0 if readable else e["median"] is None),
      "energy_j: %s (a counter readable: %s)" % (e and e["median"], readable))

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "serve.json")
    with open(path, "w") as f:
        f.write(p.stdout)
    c = subprocess.run([CLI, "bench", "compare", path], capture_output=True, text=True, timeout=60)
    check(c.returncode == 0 and "max_rate_per_s" in c.stdout and "p99_ms" in c.stdout,
          "bench compare reads the report back")

# an error after the fixture was made and the server begun (a compute type
# serve refuses as it starts): said, a failure, the temporary folder gone
with tempfile.TemporaryDirectory() as tmp:
    b = subprocess.run([CLI, "bench", "serve", "--quick", "--compute-type", "no-such-type"], capture_output=True,
                       text=True, timeout=240, env=dict(os.environ, TMPDIR=tmp))
    check(b.returncode != 0 and "did not say it listens" in b.stderr, "a server that fails to start is said")
    check(os.listdir(tmp) == [], "the fixture's temporary folder is removed (%s)" % os.listdir(tmp))

b = subprocess.run([CLI, "bench", "serve", "--rate", "0"], capture_output=True, text=True, timeout=60)
check(b.returncode == 2 and "--rate" in b.stderr, "--rate 0 is refused naming the flag")
b = subprocess.run([CLI, "bench", "serve", "--src", "/nonexistent/lines.txt"], capture_output=True, text=True,
                   timeout=60)
check(b.returncode != 0 and "/nonexistent/lines.txt" in b.stderr, "a missing --src is named")
bad_src = os.path.join(files_tmp, "bad.txt")
with open(bad_src, "wb") as f:
    f.write(b"A dog runs.\nA cat \xff sits.\n")
b = subprocess.run([CLI, "bench", "serve", "--src", bad_src], capture_output=True, text=True, timeout=60)
check(b.returncode != 0 and "bad.txt:2:" in b.stderr and "UTF-8" in b.stderr,
      "invalid UTF-8 in --src is named with its file and line, before a server starts: " + b.stderr.strip()[-200:])


def serving(tag):
    """Processes whose command line names tag (the run's TMPDIR)."""
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if tag.encode() in f.read():
                    out.append(pid)
        except OSError:
            pass
    return out


# the server it started (its model lay under run_tmp) is gone, and so is the folder
check(serving(run_tmp) == [], "no server outlives bench serve")
check(os.listdir(run_tmp) == [], "bench serve removed its temporary folder")
os.rmdir(run_tmp)
shutil.rmtree(files_tmp)

if failures:
    sys.exit("%d failed: %s" % (len(failures), "; ".join(failures)))
print("all ok")
