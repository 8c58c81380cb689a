#!/usr/bin/env python3
"""serve_devices.py CLFORMER SOURCE_DIR [--sanitized]: `clformer serve
--device 0,1`, one worker a device, on 127.0.0.1 only, every step bounded
in time.

The two devices are CLF_DEVICE's (else the first `clformer devices`
lists) and the first other one listed (PoCL and Intel's OpenCL CPU runtime
where run.sh's intel_opencl registered it); where there is no other, or in
a sanitizer build (--sanitized: Intel's runtime's own leaks would fail
LeakSanitizer, and run.sh runs that build on PoCL alone), the one device is
opened twice ("0,0": two contexts, two workers), and the test says so. Worker 1's device fails after 4 batches
(CLF_FAULT_QUEUE=fail-after:4@1). Waves of 16 concurrent clients (3
one-line requests each) run until worker 1 is out (6 waves at most): every
answer is 200 with `clformer translate`'s output of its line on one of the
two devices (two runtimes may round differently); /metrics shows both
devices' workers with batches, worker 1 down; /health is 200 "degraded"
naming worker 1 and the injected failure; a last wave is served by worker 0
alone; SIGTERM exits 0. About 15 s on a 2-vCPU machine."""
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402
from serve_util import T, call, check, summary  # noqa: E402

CLI, SRC_DIR = sys.argv[1], sys.argv[2]
SANITIZED = "--sanitized" in sys.argv[3:]


def devices():
    out = serve_util.run(CLI, ["devices"])
    return re.findall(r"^\s+\[(\d+)\]", out, re.M)


def metrics(srv):
    """{(name, worker): value} of the per-worker samples, and the devices by worker."""
    c, _, text = call(srv, "/metrics")
    check(c == 200, "/metrics: %d" % c)
    vals, names = {}, {}
    for m in re.finditer(r'^(clformer_(?:worker_\w+|device_info))\{device="((?:[^"\\]|\\.)*)",worker="(\d+)"\} (\S+)$',
                         text if isinstance(text, str) else "", re.M):
        vals[(m.group(1), int(m.group(3)))] = float(m.group(4))
        names[int(m.group(3))] = m.group(2)
    return vals, names


def wave(srv, lines, ok):
    """16 clients, 3 one-line requests each; the answers not in ok."""
    bad = []

    def client(k):
        for j in range(3):
            i = (3 * k + j) % len(lines)
            c, _, b = call(srv, "/translate", {"q": lines[i], "source": "en", "target": "de"})
            if c != 200 or not isinstance(b, dict) or b.get("translatedText") not in ok[i]:
                bad.append((k, j, c, b))
    th = [threading.Thread(target=client, args=(k,)) for k in range(16)]
    for t in th:
        t.start()
    for t in th:
        t.join(4 * T)
    check(not any(t.is_alive() for t in th), "a wave's clients did not finish within %d s" % (4 * T))
    return bad


def main():
    return serve_util.in_tmp("clf-serve-dev-", checks)


def checks(tmp):
    devs = devices()
    first = os.environ.get("CLF_DEVICE") or devs[0]
    others = [d for d in devs if d != first] if first in devs else []
    if others and not SANITIZED:
        spec = "%s,%s" % (first, others[0])
    else:
        spec = "%s,%s" % (first, first)
        why = ("a sanitizer build (Intel's runtime leaks of its own)" if SANITIZED and others else
               "one device here; register a second (scripts/intel-opencl.sh env) for two runtimes" if first in devs
               else "CLF_DEVICE=%s names no index" % first)
        print("serve_devices: device %s serves twice (--device %s, two contexts): %s" % (first, spec, why),
              flush=True)
    models, lines, _ = serve_util.fixture_models(CLI, SRC_DIR, tmp)
    src = os.path.join(tmp, "src.en")
    # each line's translation on either device (two runtimes may round differently)
    ok = [set() for _ in lines]
    for d in sorted(set(spec.split(","))):
        out = serve_util.run(CLI, ["translate", "--model", models["en-de"], "--input", src, "--quiet",
                                   "--device", d]).split("\n")[:len(lines)]
        for i, x in enumerate(out):
            ok[i].add(x)
    os.environ["CLF_FAULT_QUEUE"] = "fail-after:4@1"
    try:
        srv = serve_util.Server(CLI, ["--model", "en-de=" + models["en-de"], "--device", spec,
                                      "--max-batch-tokens", "64"])
    finally:
        del os.environ["CLF_FAULT_QUEUE"]
    try:
        c, _, b = call(srv, "/health")
        check(c == 200 and b == {"status": "ok"}, "/health before the failure: %d %r" % (c, b))
        out = False
        for n in range(6):
            bad = wave(srv, lines, ok)
            check(not bad, "wave %d: %d answers wrong or failed, such as %r" % (n, len(bad), bad[:2]))
            vals, names = metrics(srv)
            if vals.get(("clformer_worker_up", 1)) == 0:
                out = True
                break
        check(out, "worker 1 was not taken out after %d waves: %r" % (n + 1, vals))
        check(sorted(names) == [0, 1] and all(names.values()), "/metrics names two devices' workers: %r" % names)
        check(vals.get(("clformer_worker_up", 0)) == 1, "worker 0 serves: %r" % vals)
        for w in (0, 1):
            check(vals.get(("clformer_worker_batches_total", w), 0) > 0, "worker %d took batches: %r" % (w, vals))
            check(("clformer_worker_busy_seconds_total", w) in vals, "worker %d's busy seconds" % w)
        check(vals.get(("clformer_worker_device_failures_total", 1)) == 1, "worker 1 failed once: %r" % vals)
        c, _, b = call(srv, "/health")
        check(c == 200 and isinstance(b, dict) and b.get("status") == "degraded" and b.get("workers") == 2 and
              b.get("serving") == 1 and "worker 1" in b.get("error", "") and "CLF_FAULT_QUEUE" in b.get("error", ""),
              "/health with worker 1 out: %d %r" % (c, b))
        before = metrics(srv)[0].get(("clformer_worker_sentences_total", 0), 0)
        bad = wave(srv, lines, ok)
        check(not bad, "the wave after: %d answers wrong or failed, such as %r" % (len(bad), bad[:2]))
        after = metrics(srv)[0].get(("clformer_worker_sentences_total", 0), 0)
        check(after - before == 48, "worker 0 alone translated the last wave's 48 sentences: %r" % (after - before))
    finally:
        rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status %r" % rc)
    return summary("serve_devices", "--device %s served every request; worker 1 taken out, worker 0 served on" % spec)


if __name__ == "__main__":
    sys.exit(main())
