#!/usr/bin/env python3
"""serve_bench.py: `clformer serve` under load from N concurrent clients on
127.0.0.1, beside the offline `clformer translate` of the same file and model.

    bench/serve_bench.py --model runs/main/average.safetensors \\
        [--pair en-de] [--input data/multi30k/test_2016_flickr.en.gz] [--clients 1,8,64] [--paragraph 1] \\
        [--limit N] [--mixed K] [--device D] [--clformer build/clformer] [--json OUT] [-- SERVE FLAGS...]

Each request is one sentence (or --paragraph K sentences joined by spaces,
which serve cuts back into K); every line of the input is sent once per
client count. Reports sentences/s (and as a share of the offline
command's), the continuous batch's mean occupancy (/metrics), the server's
CPU milliseconds a sentence (beside the offline command's, its start
taken out: on a shared machine CPU time says more than seconds),
p50/p90/p99 request latency, errors (non-200 answers) and mismatches
(answers that are not the offline translation of the same lines). With --mixed K
the load is short requests behind long ones: the lines go out in turn as a
paragraph of K sentences and then one sentence alone, and the short
requests' p50/p99 are reported apart (short p50, short p99). Speed
figures are for a quiet machine; this script only measures."""
import argparse
import gzip
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


def read_lines(path, limit):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        lines = [x.rstrip("\n") for x in f]
    return lines[:limit] if limit else lines


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def post(base, pair, q, timeout):
    source, target = pair.split("-", 1)
    data = json.dumps({"q": q, "source": source, "target": target}).encode()
    req = urllib.request.Request(base + "/translate", data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None
    except OSError:
        return 0, None


def occupancy_counters(base):
    """(steps, sentence-steps) of continuous batching so far, from /metrics."""
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
            text = r.read().decode()
    except OSError:
        return None
    v = {}
    for name in ("clformer_decode_steps_total", "clformer_decode_step_sentences_total"):
        m = re.search(r"^%s (\d+)$" % name, text, re.M)
        if not m:
            return None
        v[name] = int(m.group(1))
    return v["clformer_decode_steps_total"], v["clformer_decode_step_sentences_total"]


def cpu_seconds(pid):
    """User + system CPU seconds of a live process so far (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_offline(clformer, model, lines, dev):
    """`clformer translate` of lines: (its output lines, its seconds translating, its CPU seconds in all)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(x + "\n" for x in lines))
        src = f.name
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        r = subprocess.run([clformer, "translate", "--model", model, "--input", src] + dev,
                           check=True, capture_output=True, text=True, timeout=3600)
    finally:
        os.unlink(src)
    ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"translated \d+ sentences in [0-9.]+ s: ([0-9.]+) sentences/s", r.stderr)
    if not m:
        sys.exit("clformer translate did not say its speed: " + r.stderr)
    cpu = ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime
    return r.stdout.split("\n")[:len(lines)], len(lines) / float(m.group(1)), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--pair", default="en-de", help="the language pair the model is served as")
    ap.add_argument("--input", default="data/multi30k/test_2016_flickr.en.gz")
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--paragraph", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="the first N lines only")
    ap.add_argument("--mixed", type=int, default=0, help="K: a K-sentence paragraph, then one sentence, in turn")
    ap.add_argument("--device")
    ap.add_argument("--clformer", default="build/clformer")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a request may take")
    ap.add_argument("--json")
    ap.add_argument("serve_flags", nargs="*")
    a = ap.parse_args()
    lines = read_lines(a.input, a.limit)
    # serve joins a paragraph's sentences back with their spaces: lines that
    # hold a cut of their own would come back as more than one sentence, as
    # they would not offline; they are counted, not avoided
    dev = ["--device", a.device] if a.device else []

    # the command's own figure: its translation, without its start (device, model loading); its CPU seconds
    # less those of translating the first line alone (its start), which say more on a shared machine
    offline, offline_s, offline_cpu = run_offline(a.clformer, a.model, lines, dev)
    offline_cpu -= run_offline(a.clformer, a.model, lines[:1], dev)[2]

    # every client is 127.0.0.1 (as behind a proxy, `bench serve` too): with a per-address limit, a client
    # that opens its next connection before the server has counted its last one closed (libmicrohttpd
    # counts at its clean-up, after the client has read the answer) was refused: 9 of 500 requests at 64
    # clients with the default limit of 64
    p = subprocess.Popen([a.clformer, "serve", "--model", a.pair + "=" + a.model, "--port", "0",
                          "--queue", str(max(1024, 2 * len(lines))), "--max-connections-per-ip", "0"]
                         + dev + a.serve_flags,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    m = re.search(r"http://127\.0\.0\.1:(\d+)", p.stdout.readline())
    if not m:
        p.kill()
        sys.exit("serve did not start: " + p.stderr.read())
    base = "http://127.0.0.1:" + m.group(1)
    K = max(1, a.paragraph)
    if a.mixed > 0:  # long, short, long, short ...: each short request queued behind a long one
        chunks, i = [], 0
        while i < len(lines):
            chunks.append(list(range(i, min(i + a.mixed, len(lines)))))
            i += a.mixed
            if i < len(lines):
                chunks.append([i])
                i += 1
    else:
        chunks = [list(range(i, min(i + K, len(lines)))) for i in range(0, len(lines), K)]
    rows = []
    try:
        for n in [int(x) for x in a.clients.split(",")]:
            todo = list(range(len(chunks)))[::-1]  # popped from the end: sent in order
            lock = threading.Lock()
            lat, short_lat, errors, mismatches = [], [], [0], [0]

            def client():
                while True:
                    with lock:
                        if not todo:
                            return
                        c = chunks[todo.pop()]
                    q = " ".join(lines[i] for i in c)
                    t = time.monotonic()
                    code, body = post(base, a.pair, q, a.timeout)
                    dt = time.monotonic() - t
                    with lock:
                        lat.append(dt)
                        if a.mixed > 0 and len(c) == 1:
                            short_lat.append(dt)
                        if code != 200:
                            errors[0] += 1
                        elif body.get("translatedText") != " ".join(offline[i] for i in c):
                            mismatches[0] += 1
            before = occupancy_counters(base)
            cpu0 = cpu_seconds(p.pid)
            self0 = resource.getrusage(resource.RUSAGE_SELF)
            t = time.monotonic()
            th = [threading.Thread(target=client) for _ in range(n)]
            for x in th:
                x.start()
            for x in th:
                x.join()
            wall = time.monotonic() - t
            server_cpu = cpu_seconds(p.pid) - cpu0
            self1 = resource.getrusage(resource.RUSAGE_SELF)
            # the clients' own CPU (this process's threads): on a small machine they take it from the server
            client_cpu = self1.ru_utime + self1.ru_stime - self0.ru_utime - self0.ru_stime
            after = occupancy_counters(base)
            # the continuous batch's mean occupancy: sentences decoding in a step, over the steps
            occ = ((after[1] - before[1]) / (after[0] - before[0]) if before and after and after[0] > before[0]
                   else float("nan"))
            rows.append(dict(clients=n, occupancy=occ, server_cpu_s=server_cpu, client_cpu_s=client_cpu,
                             sentences=len(lines), seconds=wall,
                             sentences_per_s=len(lines) / wall,
                             p50=percentile(lat, 50), p90=percentile(lat, 90), p99=percentile(lat, 99),
                             short_p50=percentile(short_lat, 50), short_p99=percentile(short_lat, 99),
                             errors=errors[0], mismatches=mismatches[0]))
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(120)
    print("offline translate: %d sentences in %.2f s, %.2f sentences/s; %.1f ms CPU a sentence, its start taken out"
          % (len(lines), offline_s, len(lines) / offline_s, 1e3 * offline_cpu / len(lines)))
    # /offline: sentences/s over the offline command's; occupancy: the mean sentences in a decoding step;
    # CPU ms: the server's CPU a sentence; client ms: the clients' (this script's)
    print("%8s %12s %8s %10s %8s %9s %9s %9s %9s %11s %11s %7s %11s" % (
        "clients", "sentences/s", "/offline", "occupancy", "CPU ms", "client ms", "p50 s", "p90 s", "p99 s",
        "short p50",
        "short p99", "errors", "mismatches"))
    for r in rows:
        print("%8d %12.2f %8.3f %10.2f %8.1f %9.1f %9.3f %9.3f %9.3f %11.3f %11.3f %7d %11d" % (
            r["clients"], r["sentences_per_s"], r["sentences_per_s"] * offline_s / len(lines), r["occupancy"],
            1e3 * r["server_cpu_s"] / r["sentences"], 1e3 * r["client_cpu_s"] / r["sentences"], r["p50"], r["p90"],
            r["p99"], r["short_p50"],
            r["short_p99"], r["errors"], r["mismatches"]))
    print("serve exited %d" % rc)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(offline=dict(sentences=len(lines), seconds=offline_s, cpu_s=offline_cpu), paragraph=K,
                           mixed=a.mixed, serve=rows, serve_exit=rc), f, indent=1)
    return 0 if rc == 0 and not any(r["errors"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
