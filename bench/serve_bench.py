#!/usr/bin/env python3
"""serve_bench.py: `clformer serve` under load from N concurrent clients on
127.0.0.1, beside the offline `clformer translate` of the same file and model.

    bench/serve_bench.py --model runs/main/average.safetensors \\
        [--pair en-de] [--input data/multi30k/test_2016_flickr.en.gz] [--clients 1,8,64] [--paragraph 1] \\
        [--limit N] [--mixed K] [--device D] [--clformer build/clformer] [--json OUT] [-- SERVE FLAGS...]

Each request is one sentence (or --paragraph K sentences joined by spaces,
which serve cuts back into K); every line of the input is sent once per
client count. Reports sentences/s, p50/p90/p99 request latency, errors
(non-200 answers) and mismatches (answers that are not the offline
translation of the same lines), and the offline sentences/s. With --mixed K
the load is short requests behind long ones: the lines go out in turn as a
paragraph of K sentences and then one sentence alone, and the short
requests' p50/p99 are reported apart (short p50, short p99). Speed
figures are for a quiet machine; this script only measures."""
import argparse
import gzip
import json
import os
import re
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

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(x + "\n" for x in lines))
        src = f.name
    # the command's own figure: its translation, without its start (device, model loading)
    r = subprocess.run([a.clformer, "translate", "--model", a.model, "--input", src] + dev,
                       check=True, capture_output=True, text=True, timeout=3600)
    offline = r.stdout.split("\n")[:len(lines)]
    m = re.search(r"translated \d+ sentences in [0-9.]+ s: ([0-9.]+) sentences/s", r.stderr)
    if not m:
        sys.exit("clformer translate did not say its speed: " + r.stderr)
    offline_s = len(lines) / float(m.group(1))
    os.unlink(src)

    p = subprocess.Popen([a.clformer, "serve", "--model", a.pair + "=" + a.model, "--port", "0",
                          "--queue", str(max(1024, 2 * len(lines)))] + dev + a.serve_flags,
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
            t = time.monotonic()
            th = [threading.Thread(target=client) for _ in range(n)]
            for x in th:
                x.start()
            for x in th:
                x.join()
            wall = time.monotonic() - t
            rows.append(dict(clients=n, sentences=len(lines), seconds=wall, sentences_per_s=len(lines) / wall,
                             p50=percentile(lat, 50), p90=percentile(lat, 90), p99=percentile(lat, 99),
                             short_p50=percentile(short_lat, 50), short_p99=percentile(short_lat, 99),
                             errors=errors[0], mismatches=mismatches[0]))
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(120)
    print("offline translate: %d sentences in %.2f s, %.2f sentences/s" % (len(lines), offline_s,
                                                                            len(lines) / offline_s))
    print("%8s %12s %9s %9s %9s %11s %11s %7s %11s" % ("clients", "sentences/s", "p50 s", "p90 s", "p99 s",
                                                      "short p50", "short p99", "errors", "mismatches"))
    for r in rows:
        print("%8d %12.2f %9.3f %9.3f %9.3f %11.3f %11.3f %7d %11d" % (
            r["clients"], r["sentences_per_s"], r["p50"], r["p90"], r["p99"], r["short_p50"], r["short_p99"],
            r["errors"], r["mismatches"]))
    print("serve exited %d" % rc)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(offline=dict(sentences=len(lines), seconds=offline_s), paragraph=K, mixed=a.mixed, serve=rows,
                           serve_exit=rc), f, indent=1)
    return 0 if rc == 0 and not any(r["errors"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
