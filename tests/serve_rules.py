#!/usr/bin/env python3
"""serve_rules.py CLFORMER SOURCE_DIR: the request-level rules of `clformer
serve`, through urllib and raw sockets on 127.0.0.1 only, every step
bounded in time (serve_check.py's fixture and helpers).

A NUL in any decoded field (JSON \\u0000, form %00) is 400; a repeated JSON
member: the last wins (as Python reads it); a repeated form field is 400;
an injected allocation failure (CLF_SERVE_FAIL_COPY) is 503 and the
server goes on; a sentence past the model's length is 400 naming the
limit."""
import json
import os
import re
import socket
import sys
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
    import gzip
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix="clf-serve-rules-")
    try:
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
        fault(model, lines, want)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if sc.failures:
        print("%d checks failed" % len(sc.failures))
        return 1
    print("serve_rules: all passed")
    return 0


def keyed(model, keys, lines, want):
    """Keys on: NUL, repeated members, the model's length."""
    srv = Server(["--model", "en-de=" + model, "--api-keys", keys, "--max-chars", "3000"])
    try:
        ok = {"q": lines[0], "source": "en", "target": "de", "api_key": "k1"}
        c, h, b = post(srv, ok)
        check(c == 200 and b == {"translatedText": want[0]}, "the plain request: %d %r" % (c, b))

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

        # a sentence past the model's length
        expect("a sentence past the model's length", post(srv, dict(ok, q="Hi. A" + " a" * 600 + " end.")), 400,
               "sentence 2 .*subwords.*limit of \\d+")
    finally:
        rc = srv.stop()
    check(rc == 0, "keyed server: exit status %r" % rc)


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


if __name__ == "__main__":
    sys.exit(main())
