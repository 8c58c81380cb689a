#!/usr/bin/env python3
"""serve_check.py CLFORMER SOURCE_DIR: `clformer serve` through a real HTTP
client (urllib), on 127.0.0.1 only, every step bounded in time.

Two imported Marian fixtures served side by side (en-de, de-en), with an
API key: translations equal `clformer translate`'s of the same lines
(string and array q, JSON and form bodies, a text of several sentences and
paragraphs joined back with its own newlines), from 16 concurrent clients
too; every error status with its message; /languages, /health, /metrics
(each sample line parsed); a client that hangs up mid-request and a
truncated body leave the server serving; SIGTERM drains and exits 0. A
second server with a queue of 3 sentences and a batch wait nobody reaches
answers 429 with Retry-After while full, and its SIGTERM translates the
request it held (200, the right output) before exiting 0."""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402
from serve_util import T, call, check, summary  # noqa: E402

CLI, SRC_DIR = sys.argv[1], sys.argv[2]


def run(args, **kw):
    return serve_util.run(CLI, args, **kw)


def Server(args):
    return serve_util.Server(CLI, args)


def translate(srv, q, source="en", target="de", key="k1", form=False, **extra):
    fields = dict(source=source, target=target, **extra)
    if key is not None:
        fields["api_key"] = key
    if form:
        pairs = [("q", x) for x in (q if isinstance(q, list) else [q])] + list(fields.items())
        return call(srv, "/translate", urllib.parse.urlencode(pairs), "application/x-www-form-urlencoded")
    fields["q"] = q
    return call(srv, "/translate", fields)


def expect_error(what, got, code, pattern):
    c, h, b = got
    check(c == code and isinstance(b, dict) and re.search(pattern, b.get("error", "")),
          "%s: want %d /%s/, got %d %r" % (what, code, pattern, c, b))
    return h


def clients(srv, lines, want, stride, key, what):
    """16 concurrent clients, 3 requests each on alternating pairs (a line,
    three lines, a line, from line k·stride on), each answer matched to its
    request."""
    errors = []

    def client(k):
        for j in range(3):
            i = (k * stride + j) % 12
            pair = ("en-de", "de-en")[(k + j) % 2]
            q = lines[i] if j != 1 else lines[i:i + 3]
            c, _, b = translate(srv, q, *pair.split("-"), key=key)
            w = want[pair][i] if j != 1 else want[pair][i:i + 3]
            if c != 200 or b != {"translatedText": w}:
                errors.append((k, j, c, b))
    th = [threading.Thread(target=client, args=(k,)) for k in range(16)]
    for t in th:
        t.start()
    for t in th:
        t.join(4 * T)
    check(not errors and not any(t.is_alive() for t in th), "%s: %r" % (what, errors[:3]))


def main():
    return serve_util.in_tmp("clf-serve-", checks)


def checks(tmp):
    models, lines, want = serve_util.fixture_models(CLI, SRC_DIR, tmp)
    src = os.path.join(tmp, "src.en")  # the lines, as fixture_models wrote them
    keys = os.path.join(tmp, "keys")
    with open(keys, "w") as f:
        f.write("k0\n\nk1\n")

    srv = Server(["--model", "en-de=" + models["en-de"], "--model", "de-en=" + models["de-en"],
                  "--api-keys", keys, "--max-chars", "2000", "--queue", "64", "--log"])
    try:
        c, _, b = call(srv, "/health")
        check(c == 200 and b == {"status": "ok"}, "/health: %d %r" % (c, b))
        c, _, b = call(srv, "/languages")
        check(c == 200 and b == [{"code": "en", "name": "English", "targets": ["de"]},
                                 {"code": "de", "name": "German", "targets": ["en"]}], "/languages: %r" % (b,))

        # the command's output, one line, an array, JSON and form, both pairs
        for i in (0, 5):
            for form in (False, True):
                c, _, b = translate(srv, lines[i], form=form)
                check(c == 200 and b == {"translatedText": want["en-de"][i]},
                      "line %d (form %s): %d %r, want %r" % (i, form, c, b, want["en-de"][i]))
        for form in (False, True):
            c, _, b = translate(srv, lines[:7], form=form)
            check(c == 200 and b == {"translatedText": want["en-de"][:7]}, "an array (form %s): %r" % (form, b))
        c, _, b = translate(srv, lines[2:4], source="de", target="en", key="k0")
        check(c == 200 and b == {"translatedText": want["de-en"][2:4]}, "the second pair: %r" % (b,))
        # a text: sentences and paragraphs, joined back with its own whitespace
        text = lines[0] + " " + lines[1] + "\n\n  " + lines[2] + "\n"
        c, _, b = translate(srv, text)
        joined = want["en-de"][0] + " " + want["en-de"][1] + "\n\n  " + want["en-de"][2] + "\n"
        check(c == 200 and b == {"translatedText": joined}, "a text: %r, want %r" % (b, joined))

        # every error
        expect_error("bad JSON", call(srv, "/translate", '{"q": "a", '), 400, "not JSON")
        expect_error("deep JSON", call(srv, "/translate", "[" * 200 + "]" * 200), 400, "not JSON")
        expect_error("not an object", call(srv, "/translate", [1]), 400, "object")
        expect_error("missing q", call(srv, "/translate", {"source": "en", "target": "de", "api_key": "k1"}), 400,
                     "missing q")
        expect_error("missing source", call(srv, "/translate", {"q": "a", "target": "de", "api_key": "k1"}), 400,
                     "missing source")
        expect_error("q a number", translate(srv, 5), 400, "string or an array")
        expect_error("unknown pair", translate(srv, "Hello.", target="fr"), 400, "en to fr is not served")
        expect_error("empty text", translate(srv, "  \n "), 400, "empty")
        expect_error("a format", translate(srv, "Hi.", format="markdown"), 400, "markdown format is not supported")
        expect_error("invalid UTF-8", call(srv, "/translate", b'{"q":"\xff\xfe","source":"en","target":"de",'
                                                b'"api_key":"k1"}'), 400, "q is not valid UTF-8 at byte offset 0 ")
        # the field, the array's index and the offset (clf_utf8_validate's): a surrogate, a sequence cut short
        expect_error("invalid UTF-8 in q[1]", call(srv, "/translate", b'{"q":["ok","ab\xed\xa0\x80"],"source":"en",'
                                                       b'"target":"de","api_key":"k1"}'), 400,
                     "q\\[1\\] is not valid UTF-8 at byte offset 2 \\(0xED\\)")
        expect_error("invalid UTF-8 in source", call(srv, "/translate", b'{"q":"a","source":"e\xc3","target":"de",'
                                                         b'"api_key":"k1"}'), 400,
                     "source is not valid UTF-8 at byte offset 1")
        expect_error("wrong key", translate(srv, "Hello.", key="nope"), 403, "Invalid API key")
        expect_error("no key", translate(srv, "Hello.", key=None), 400, "missing api_key")
        expect_error("over --max-chars", translate(srv, "a" * 2001), 413, "exceeds text limit \\(2000\\)")
        expect_error("a body over the limit", call(srv, "/translate", "x" * (2000 * 12 + 65537)), 413, "over")
        expect_error("over the queue", translate(srv, ["Hi."] * 65), 413, "more than the queue holds")
        expect_error("content type", call(srv, "/translate", "q=a", "image/png"), 400, "Content-Type")
        expect_error("GET /translate", call(srv, "/translate"), 405, "POST")
        expect_error("no such path", call(srv, "/nope"), 404, "Not Found")

        # bad HTTP: a body shorter than its Content-Length, a huge header; then still serving
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=T)
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n{\"q\": \"A man")
        s.close()
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=T)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
        status = s.recv(64)
        s.close()
        check(status.startswith(b"HTTP/1.1 4"), "a huge header: %r" % status[:40])
        # a client that hangs up while its sentences are queued
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=T)
        body = json.dumps({"q": lines * 5, "source": "en", "target": "de", "api_key": "k1"}).encode()
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                  + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.close()
        c, _, b = translate(srv, lines[3])
        check(c == 200 and b == {"translatedText": want["en-de"][3]}, "after a hang-up: %d %r" % (c, b))

        # 16 concurrent clients, 3 requests each, each answer matched to its request
        clients(srv, lines, want, 3, "k1", "concurrent clients")

        c, _, text = call(srv, "/metrics", headers={"Authorization": "Bearer k1"})
        check(c == 200, "/metrics: %d" % c)
        sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_]+="([^"\\]|\\.)*",?)*\})? -?[0-9.e+]+$')
        values = {}
        for line in text.splitlines():
            if line.startswith("#"):
                check(re.match(r"^# (HELP|TYPE) [a-z_]+ .+$", line), "/metrics comment %r" % line)
                continue
            check(sample.match(line), "/metrics sample %r" % line)
            name, v = line.rsplit(" ", 1)
            values[name] = float(v)
        sent = 2 * 2 + 2 * 7 + 2 + 3 + 1 + sum(1 if j != 1 else len(lines[(k * 3 + j) % 12:][:3])
                                               for k in range(16) for j in range(3))
        check(values.get("clformer_sentences_total", 0) >= sent,
              "sentences counted: %r" % values.get("clformer_sentences_total"))
        check(values.get('clformer_http_responses_total{code="403"}') == 1, "403s counted")
        check(values.get("clformer_request_latency_seconds_count", 0) >= 16 * 3, "latencies counted")
        check(any(k.startswith("clformer_device_info{device=") for k in values), "the device")
    finally:
        rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status %r" % rc)
    log = srv.p.stderr.read()
    reqs = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
    check(len(reqs) >= 40 and all({"time", "status", "latency_ms"} <= set(r) for r in reqs),
          "--log: %d JSON lines" % len(reqs))

    # a full queue, then a drain that translates what it held
    srv = Server(["--model", "en-de=" + models["en-de"], "--queue", "3", "--batching", "rounds",
                  "--batch-wait-ms", "60000", "--max-batch-tokens", "100000"])
    held = {}
    try:
        t = threading.Thread(target=lambda: held.update(r=translate(srv, lines[4:6], key=None)))
        t.start()
        deadline = time.time() + T
        while time.time() < deadline:  # until the held request is queued
            _, _, m = call(srv, "/metrics")
            if re.search(r"^clformer_queue_sentences 2$", m, re.M):
                break
            time.sleep(0.05)
        h = expect_error("a full queue", translate(srv, lines[6:8], key=None), 429, "queue is full")
        check(h.get("Retry-After") == "1", "429's Retry-After: %r" % h.get("Retry-After"))
    finally:
        rc = srv.stop()
        t.join(T)
    check(rc == 0, "SIGTERM with a request held: exit status %r" % rc)
    c, _, b = held.get("r", (None, None, None))
    check(c == 200 and b == {"translatedText": want["en-de"][4:6]}, "the drained request: %r %r" % (c, b))

    # --compute-type: the command's output in that type where the device
    # runs it (bfloat16 on a CPU device of a build with oneDNN), else the
    # command's refusal; a bad name refused naming the flag
    p = subprocess.run([CLI, "translate", "--model", models["en-de"], "--input", src, "--quiet",
                        "--compute-type", "bfloat16"], timeout=300, capture_output=True, text=True)
    if p.returncode == 0:
        srv = Server(["--model", "en-de=" + models["en-de"], "--compute-type", "bfloat16"])
        try:
            c, _, b = translate(srv, lines[:4], key=None)
            check(c == 200 and b == {"translatedText": p.stdout.split("\n")[:4]},
                  "--compute-type bfloat16: %d %r, want %r" % (c, b, p.stdout.split("\n")[:4]))
        finally:
            srv.stop()
    q = subprocess.run([CLI, "serve", "--port", "0", "--model", "en-de=" + models["en-de"], "--compute-type", "int4"],
                       timeout=T, capture_output=True, text=True)
    check(q.returncode == 1 and "--compute-type" in q.stderr and "int4" in q.stderr,
          "--compute-type int4: %d %r" % (q.returncode, q.stderr))

    # --batching rounds (the checks above ran the default, continuous): 16
    # clients on both pairs at once, single lines and three-line arrays, get
    # translate's outputs; a hang-up costs nothing else; SIGTERM drains and
    # exits 0
    srv = Server(["--model", "en-de=" + models["en-de"], "--model", "de-en=" + models["de-en"],
                  "--batching", "rounds", "--batch-wait-ms", "1"])
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=T)
        body = json.dumps({"q": lines * 3, "source": "en", "target": "de"}).encode()
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                  + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.close()
        clients(srv, lines, want, 5, None, "batching in rounds")
    finally:
        rc = srv.stop()
    check(rc == 0, "batching in rounds, SIGTERM: exit status %r" % rc)

    return summary("serve_check")


if __name__ == "__main__":
    sys.exit(main())
