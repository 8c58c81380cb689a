#!/usr/bin/env python3
"""serve_rules.py CLFORMER SOURCE_DIR: the request-level rules of `clformer
serve`, through urllib and raw sockets on 127.0.0.1 only, every step
bounded in time (serve_check.py's fixture and helpers).

A NUL in any decoded field (JSON \\u0000, form %00) is 400; a repeated JSON
member: the last wins (as Python reads it); a repeated form field is 400;
CORS: a preflight is 204 with the methods, headers and max-age, the origin
echoed as --cors-origins says (`*` by default without keys, nothing with
keys unless asked); the API key from api_key or `Authorization: Bearer`,
400 when missing, 403 when wrong, /metrics behind it; --max-sentences; the
token buckets of --req-limit (a batch costs its texts) and
--chars-per-minute, per key and per IP (127.0.0.2 is another client), 429
with Retry-After, /detect included; an injected allocation failure
(CLF_SERVE_FAIL_COPY) is 503 and the server goes on; a sentence past the
model's length is 400 naming the limit; /health is 503 "failed" once the
device fails and "stuck" past --health-stuck-seconds (CLF_FAULT_QUEUE).

The rate checks rely on a bucket refilling no more than one request in 20 s
and 50 characters in 30 s: a loaded machine would have to take that long
between two consecutive requests to make them flip."""
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_check as sc  # noqa: E402  (reads the same argv)

check, Server, T = sc.check, sc.Server, sc.T


def http(srv, method, path, body=b"", headers=None, src="127.0.0.1"):
    """(status, {lower-case header: value}, decoded JSON or text) of one
    request over a socket bound to src (any 127/8 address is loopback)."""
    h = {"Host": "x", "Connection": "close"}
    if body:
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items() if kv[1] is not None)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=T, source_address=(src, 0))
    try:
        s.sendall(head.encode() + b"\r\n" + body)
        raw = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            raw += b
    finally:
        s.close()
    top, _, rest = raw.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    code = int(lines[0].split()[1])
    hdrs = {}
    for x in lines[1:]:
        k, _, v = x.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        out = b""
        while True:
            n, _, rest = rest.partition(b"\r\n")
            n = int(n, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        rest = out
    try:
        return code, hdrs, json.loads(rest.decode())
    except ValueError:
        return code, hdrs, rest.decode(errors="replace")


def post(srv, body, headers=None, src="127.0.0.1"):
    if isinstance(body, dict):
        body = json.dumps(body)
    return http(srv, "POST", "/translate", body.encode(), headers, src)


def form(srv, pairs, headers=None):
    body = (pairs if isinstance(pairs, str) else urllib.parse.urlencode(pairs)).encode()
    h = {"Content-Type": "application/x-www-form-urlencoded"}
    h.update(headers or {})
    return http(srv, "POST", "/translate", body, h)


def expect(what, got, code, pattern=None):
    c, h, b = got
    ok = c == code and (pattern is None or (isinstance(b, dict) and re.search(pattern, b.get("error", ""))))
    check(ok, "%s: want %d /%s/, got %d %r" % (what, code, pattern, c, b))
    return h


def main():
    return sc.serve_util.in_tmp("clf-serve-rules-", checks)


def checks(tmp):
    import gzip
    fix = os.path.join(sc.SRC_DIR, "tests/fixtures/marian/relu_separate")
    sc.run(["import", fix, "-o", os.path.join(tmp, "m")])
    model = os.path.join(tmp, "m", "model.safetensors")
    with gzip.open(os.path.join(sc.SRC_DIR, "data/multi30k/test_2016_flickr.en.gz"), "rt") as f:
        lines = [next(f).rstrip("\n") for _ in range(3)]
    src = os.path.join(tmp, "src.en")
    with open(src, "w") as f:
        f.write("".join(x + "\n" for x in lines))
    want = sc.run(["translate", "--model", model, "--input", src, "--quiet"]).split("\n")[:3]
    keys = os.path.join(tmp, "keys")
    with open(keys, "w") as f:
        f.write("k0\nk1\n")
    keyed(model, keys, lines, want)
    open_server(model, lines, want)
    limits(model, keys, lines)
    fault(model, lines, want)
    health(model, lines, want)
    alternatives(model, src, lines, want)
    turns(model, lines)
    return sc.summary("serve_rules")


def keyed(model, keys, lines, want):
    """Keys on, no --cors-origins: NUL, repeated members, keys, CORS off,
    the sentence cap, the model's length."""
    srv = Server(["--model", "en-de=" + model, "--api-keys", keys, "--max-sentences", "4", "--max-chars", "3000"])
    try:
        ok = {"q": lines[0], "source": "en", "target": "de", "api_key": "k1"}
        c, h, b = post(srv, ok)
        check(c == 200 and b == {"translatedText": want[0]}, "the plain request: %d %r" % (c, b))
        check("access-control-allow-origin" not in h, "keys on, no --cors-origins: no ACAO header: %r" % h)

        # NUL in every field, JSON and form
        for field in ("q", "source", "target", "api_key", "format"):
            body = dict(ok, format="text")
            body[field] = body[field][:2] + "\u0000xx"
            expect("JSON NUL in %s" % field, post(srv, body), 400, "%s.*NUL" % field)
        expect("JSON NUL in q[1]", post(srv, dict(ok, q=["Hi.", "a\u0000b"])), 400, "q.*NUL")
        expect("a NUL in a member name", post(srv, '{"q\\u0000": "a", "source": "en", "target": "de"}'), 400,
               "not JSON.*U\\+0000")
        for field in ("q", "source", "target", "api_key"):
            pairs = dict(ok)
            pairs[field] = "%s%%00xx" % urllib.parse.quote(pairs[field][:2])
            body = "&".join("%s=%s" % (k, v if k == field else urllib.parse.quote(v)) for k, v in pairs.items())
            expect("form NUL in %s" % field, form(srv, body), 400, "%s.*NUL" % field)

        # repeated names: JSON's last wins, a form's is refused
        c, _, b = post(srv, '{"q": %s, "source": "xx", "target": "de", "source": "en", "api_key": "k1"}'
                       % json.dumps(lines[0]))
        check(c == 200 and b == {"translatedText": want[0]}, "repeated JSON member: the last wins: %d %r" % (c, b))
        expect("the last api_key wins", post(srv, '{"q": "Hi.", "source": "en", "target": "de", "api_key": "k1", '
                                              '"api_key": "nope"}'), 403, "Invalid API key")
        expect("a repeated form field", form(srv, "q=Hi.&source=en&source=de&target=de&api_key=k1"), 400,
               "source.*more than once")

        # keys: body or Authorization; missing 400, wrong 403
        c, _, b = post(srv, dict(ok, api_key=None), {"Authorization": "Bearer k0"})
        check(c == 200 and b == {"translatedText": want[0]}, "a key in Authorization: %d %r" % (c, b))
        expect("no key", post(srv, dict(ok, api_key=None)), 400, "missing api_key")
        expect("a wrong key", post(srv, dict(ok, api_key="k2")), 403, "Invalid API key")
        expect("a wrong key in Authorization", post(srv, dict(ok, api_key=None), {"Authorization": "Bearer k"}),
               403, "Invalid API key")
        expect("a prefix of a key", post(srv, dict(ok, api_key="k")), 403, "Invalid API key")
        expect("/metrics without a key", http(srv, "GET", "/metrics"), 400, "missing api_key")
        expect("/metrics with a wrong key", http(srv, "GET", "/metrics", headers={"Authorization": "Bearer x"}), 403)
        c, _, text = http(srv, "GET", "/metrics", headers={"Authorization": "Bearer k1"})
        check(c == 200 and "clformer_requests_total" in text, "/metrics with the key: %d" % c)

        # CORS with keys and no --cors-origins: the preflight answers, with no origin allowed
        c, h, _ = http(srv, "OPTIONS", "/translate", headers={"Origin": "http://a.example",
                                                              "Access-Control-Request-Method": "POST"})
        check(c == 204 and "access-control-allow-origin" not in h, "keyed preflight: %d %r" % (c, h))

        # the sentence cap, and a sentence past the model's length
        expect("5 sentences", post(srv, dict(ok, q=["Hi.", "Yes.", "Go home. Run fast.", "No."])), 413, "5 sentences.*--max-sentences 4")
        c, _, b = post(srv, dict(ok, q=["A man.", "A dog. A cat.", "Hi."]))
        check(c == 200 and len(b.get("translatedText", [])) == 3, "4 sentences: %d %r" % (c, b))
        expect("a sentence past the model's length", post(srv, dict(ok, q="Hi. A" + " a" * 600 + " end.")), 400,
               "sentence 2 .*subwords.*limit of \\d+")
    finally:
        rc = srv.stop()
    check(rc == 0, "keyed server: exit status %r" % rc)
    err = srv.p.stderr.read()
    check("--cors-origins" in err, "keys without --cors-origins are said at start: %r" % err[-300:])


def open_server(model, lines, want):
    """No keys: CORS `*`, the preflight's headers; --req-limit per IP."""
    srv = Server(["--model", "en-de=" + model, "--req-limit", "3"])
    try:
        pre = {"Origin": "http://a.example", "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "content-type"}
        for path in ("/translate", "/languages"):
            c, h, _ = http(srv, "OPTIONS", path, headers=pre)
            methods = {m.strip() for m in h.get("access-control-allow-methods", "").split(",")}
            hdrs = {m.strip().lower() for m in h.get("access-control-allow-headers", "").split(",")}
            check(c == 204 and h.get("access-control-allow-origin") == "*" and {"GET", "POST", "OPTIONS"} <= methods
                  and {"content-type", "authorization"} <= hdrs and int(h.get("access-control-max-age", "0")) > 0,
                  "preflight %s: %d %r" % (path, c, h))
        ok = {"q": lines[1], "source": "en", "target": "de"}
        c, h, b = post(srv, ok, {"Origin": "http://a.example"})
        check(c == 200 and b == {"translatedText": want[1]} and h.get("access-control-allow-origin") == "*",
              "a cross-origin POST: %d %r %r" % (c, h, b))
        c, _, _ = post(srv, dict(ok, q=["Hi.", "Yes."]))  # a batch of 2 costs 2: 3 spent
        check(c == 200, "the batch within --req-limit: %d" % c)
        h = expect("past --req-limit per IP", post(srv, ok), 429, "--req-limit 3")
        check(1 <= int(h.get("retry-after", "0")) <= 20, "429's Retry-After: %r" % h.get("retry-after"))
        c, _, b = post(srv, ok, src="127.0.0.2")
        check(c == 200 and b == {"translatedText": want[1]}, "another address has its own bucket: %d %r" % (c, b))
        c, _, _ = http(srv, "GET", "/languages")
        check(c == 200, "GET /languages is not limited: %d" % c)
        expect("/detect shares --req-limit's bucket", http(srv, "POST", "/detect", json.dumps({"q": "Hi."}).encode()),
               429, "--req-limit 3")
    finally:
        rc = srv.stop()
    check(rc == 0, "open server: exit status %r" % rc)


def limits(model, keys, lines):
    """Keys on, explicit --cors-origins: origins echoed; buckets per key."""
    srv = Server(["--model", "en-de=" + model, "--api-keys", keys, "--cors-origins", "http://a.example,http://b.example",
                  "--req-limit", "3", "--chars-per-minute", "100"])
    try:
        c, h, _ = http(srv, "OPTIONS", "/translate", headers={"Origin": "http://b.example",
                                                              "Access-Control-Request-Method": "POST"})
        check(c == 204 and h.get("access-control-allow-origin") == "http://b.example" and "origin" in
              h.get("vary", "").lower(), "a listed origin echoed: %d %r" % (c, h))
        c, h, _ = http(srv, "OPTIONS", "/translate", headers={"Origin": "http://c.example"})
        check(c == 204 and "access-control-allow-origin" not in h, "an origin not listed: %d %r" % (c, h))
        k0 = {"source": "en", "target": "de", "api_key": "k0"}
        c, _, _ = post(srv, dict(k0, q=["A man.", "A dog."]))
        check(c == 200, "k0's batch of 2: %d" % c)
        c, _, _ = post(srv, dict(k0, q="Hi."))
        check(c == 200, "k0's third request: %d" % c)
        h = expect("k0 past --req-limit", post(srv, dict(k0, q="Hi.")), 429, "--req-limit 3")
        check(1 <= int(h.get("retry-after", "0")) <= 20, "429's Retry-After: %r" % h.get("retry-after"))
        k1 = dict(k0, api_key="k1")
        c, _, _ = post(srv, dict(k1, q="a" * 59 + "."))
        check(c == 200, "k1's 60 characters: %d" % c)
        h = expect("k1 past --chars-per-minute", post(srv, dict(k1, q="b" * 89 + ".")), 429, "--chars-per-minute 100")
        check(1 <= int(h.get("retry-after", "0")) <= 60, "429's Retry-After: %r" % h.get("retry-after"))
        c, _, _ = post(srv, dict(k1, q="Hi."))
        check(c == 200, "k1's refused request cost nothing: %d" % c)
    finally:
        rc = srv.stop()
    check(rc == 0, "limits server: exit status %r" % rc)


def fault(model, lines, want):
    """An allocation failure injected at the second sentence's copy."""
    os.environ["CLF_SERVE_FAIL_COPY"] = "2"  # this server's only
    try:
        srv = Server(["--model", "en-de=" + model])
    finally:
        del os.environ["CLF_SERVE_FAIL_COPY"]
    try:
        ok = {"source": "en", "target": "de"}
        h = expect("an allocation failure", post(srv, dict(ok, q=lines)), 503, "out of memory")
        check(h.get("retry-after") == "1", "503's Retry-After: %r" % h.get("retry-after"))
        c, _, b = post(srv, dict(ok, q=lines[2]))
        check(c == 200 and b == {"translatedText": want[2]}, "after the failure: %d %r" % (c, b))
    finally:
        rc = srv.stop()
    check(rc == 0, "fault server: exit status %r" % rc)


def faulty(model, fault, args=()):
    """A server whose queue has CLF_FAULT_QUEUE=fault (its only)."""
    os.environ["CLF_FAULT_QUEUE"] = fault
    try:
        return Server(["--model", "en-de=" + model] + list(args))
    finally:
        del os.environ["CLF_FAULT_QUEUE"]


def health(model, lines, want):
    """/health turns 503 as the worker's device fails: after one good
    batch every translator call fails (fail-after:1): "failed" with the
    device's message; with every call hung (stall) and
    --health-stuck-seconds 1: "stuck" once a call has run over 1 s (polled
    for up to T seconds, so a loaded machine only makes it later), and the
    drain at SIGTERM ends the stall."""
    srv = faulty(model, "fail-after:1")
    try:
        ok = {"source": "en", "target": "de"}
        c, _, b = post(srv, dict(ok, q=lines[0]))
        check(c == 200 and b == {"translatedText": want[0]}, "the batch before the failure: %d %r" % (c, b))
        c, _, b = http(srv, "GET", "/health")
        check(c == 200 and b == {"status": "ok"}, "/health before the failure: %d %r" % (c, b))
        expect("a translation on a failed device", post(srv, dict(ok, q=lines[1])), 500, "Translation failed")
        c, _, b = http(srv, "GET", "/health")
        check(c == 503 and isinstance(b, dict) and b.get("status") == "failed" and "injected" in b.get("error", ""),
              "/health after the device failed: %d %r" % (c, b))
    finally:
        rc = srv.stop()
    check(rc == 0, "failed-device server: exit status %r" % rc)

    srv = faulty(model, "stall", ["--health-stuck-seconds", "1", "--drain-seconds", "5"])
    got, th = [], None
    try:
        c, _, b = http(srv, "GET", "/health")
        check(c == 200 and b == {"status": "ok"}, "/health with nothing running: %d %r" % (c, b))
        th = threading.Thread(target=lambda: got.append(post(srv, {"q": lines[0], "source": "en", "target": "de"})))
        th.start()
        deadline, c, b = time.time() + T, 0, None
        while time.time() < deadline:
            c, _, b = http(srv, "GET", "/health")
            if c != 200:
                break
            time.sleep(0.2)
        check(c == 503 and isinstance(b, dict) and b.get("status") == "stuck" and "limit is 1.0 s" in b.get("error", ""),
              "/health with a call hung past --health-stuck-seconds 1: %d %r" % (c, b))
    finally:
        rc = srv.stop()
        if th:
            th.join(T)
    check(rc == 0, "stalled server: exit status %r" % rc)
    check(len(got) == 1, "the hung request was answered at the drain: %r" % got)


def alternatives(model, src, lines, want):
    """LibreTranslate's alternatives (the default continuous batching, so
    such requests take the rounds' path): each text's next hypotheses as
    `clformer translate --nbest` gives them, a list (a list of lists for
    an array q); over the beam, negative, fractional or not a number: 400;
    a form's field too; plain requests sent with one at once get their own
    translations."""
    nb = sc.run(["translate", "--model", model, "--input", src, "--quiet", "--nbest", "3"]).split("\n")
    nbest = [[x.split("\t", 2)[2] for x in nb if x.startswith("%d\t" % i)] for i in range(len(lines))]
    srv = Server(["--model", "en-de=" + model])
    try:
        ok = {"source": "en", "target": "de"}
        c, _, b = post(srv, dict(ok, q=lines[0], alternatives=2))
        check(c == 200 and b == {"translatedText": nbest[0][0], "alternatives": nbest[0][1:]},
              "alternatives 2 of one text: %d %r, want %r" % (c, b, nbest[0]))
        c, _, b = post(srv, dict(ok, q=lines[:2], alternatives="1"))
        check(c == 200 and b == {"translatedText": [nbest[0][0], nbest[1][0]],
                                 "alternatives": [nbest[0][1:2], nbest[1][1:2]]},
              "alternatives \"1\" of an array: %d %r" % (c, b))
        c, _, b = form(srv, dict(ok, q=lines[1], alternatives="2"))
        check(c == 200 and b == {"translatedText": nbest[1][0], "alternatives": nbest[1][1:]},
              "a form's alternatives: %d %r" % (c, b))
        c, _, b = post(srv, dict(ok, q=lines[2], alternatives=0))
        check(c == 200 and b == {"translatedText": want[2]}, "alternatives 0: %d %r" % (c, b))
        got = {}
        bodies = {"a": dict(ok, q=lines[:3]), "b": dict(ok, q=lines[1], alternatives=2), "c": dict(ok, q=lines[2])}
        th = [threading.Thread(target=lambda k=k: got.__setitem__(k, post(srv, bodies[k]))) for k in bodies]
        for t in th:
            t.start()
        for t in th:
            t.join(T)
        check([got.get(k, (0, 0, 0))[::2] for k in "abc"] ==
              [(200, {"translatedText": want}), (200, {"translatedText": nbest[1][0], "alternatives": nbest[1][1:]}),
               (200, {"translatedText": want[2]})], "plain requests beside one with alternatives: %r" % got)
        _, _, b = post(srv, dict(ok, q=lines[0], alternatives=99))
        m = re.search(r"alternatives must be <= (\d+) .*beam of (\d+)", b.get("error", "") if isinstance(b, dict) else "")
        check(m and int(m.group(1)) == int(m.group(2)) - 1, "alternatives over the beam: %r" % b)
        for bad in (-1, 1.5, "x", [1], True):
            expect("alternatives %r" % (bad,), post(srv, dict(ok, q=lines[0], alternatives=bad)), 400,
                   "alternatives must be")
        c, _, b = post(srv, dict(ok, q="<p>Hi.</p>", format="html", alternatives=1))  # 501 without libxml2
        check(c in (400, 501) and "html" in b.get("error", ""), "alternatives with html: %d %r" % (c, b))
    finally:
        rc = srv.stop()
    check(rc == 0, "alternatives server: exit status %r" % rc)


def turns(model, lines):
    """A client's requests take the queue's turns together: 12 requests of
    12 sentences from 127.0.0.1 queued, then one of 12 from 127.0.0.2
    (rounds of about two sentences). As one client of two, the second
    gets every other turn and is done long before the first client's
    requests; as one request of 13, it would end with them, last. Only
    the order of the answers is compared, not their times."""
    srv = Server(["--model", "en-de=" + model, "--batching", "rounds", "--max-batch-tokens", "48",
                  "--batch-wait-ms", "0"])
    done = []
    try:
        body = {"q": [lines[i % 3] for i in range(12)], "source": "en", "target": "de"}

        def one(name, src):
            c, _, b = post(srv, body, src=src)
            done.append((name, c, len(b.get("translatedText", [])) if isinstance(b, dict) else b))
        th = [threading.Thread(target=one, args=("a", "127.0.0.1")) for _ in range(12)]
        for t in th:
            t.start()
        deadline = time.time() + T
        while time.time() < deadline:  # until most of the first client's sentences wait
            _, _, m = http(srv, "GET", "/metrics")
            q = re.search(r"^clformer_queue_sentences (\d+)$", m, re.M)
            if q and int(q.group(1)) >= 100:
                break
            time.sleep(0.01)
        b = threading.Thread(target=one, args=("b", "127.0.0.2"))
        b.start()
        for t in th + [b]:
            t.join(4 * T)
    finally:
        rc = srv.stop()
    check(rc == 0, "turns server: exit status %r" % rc)
    check(len(done) == 13 and all(c == 200 and n == 12 for _, c, n in done), "turns: answers %r" % done)
    first_before = [x[0] for x in done].index("b") if ("b", 200, 12) in done else 13
    check(first_before < 6, "the second client's request waited for %d of the first's 12 (want < 6)" % first_before)


if __name__ == "__main__":
    sys.exit(main())
