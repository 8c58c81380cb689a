"""serve_util.py: what the checks of `clformer serve` share: a server on
127.0.0.1 with a free port, started and stopped within bounds; one HTTP
call through urllib; the Marian fixture models imported to serve, with 12
test lines and `clformer translate`'s outputs of them; the checks'
record, a temporary folder, and the last line with the exit status."""
import gzip
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request

T = 60  # seconds any one step may take
failures = []  # what failed of this process's checks (one list however many scripts import it)


def check(cond, what, verbose=False):
    """Records what as failed unless cond, and prints it (with verbose,
    every check, "ok: ..." or "FAIL: ..."); returns cond."""
    if verbose:
        print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    elif not cond:
        print("FAIL:", what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def summary(name, passed="all passed"):
    """The script's last line and exit status: 1 when a check failed."""
    if failures:
        print("%s: %d checks failed" % (name, len(failures)))
        return 1
    print("%s: %s" % (name, passed))
    return 0


def in_tmp(prefix, body):
    """body(folder) in a new temporary folder, removed after whatever
    happens; body's return."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        return body(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(cli, args, **kw):
    return subprocess.run([cli] + args, check=True, timeout=300, capture_output=True, text=True, **kw).stdout


def fixture_models(cli, src_dir, tmp):
    """The two imported Marian fixtures, 12 test lines and the command's
    translations of them: ({"en-de": path, "de-en": path}, lines,
    {"en-de": outputs, "de-en": outputs})."""
    fix = os.path.join(src_dir, "tests/fixtures/marian")
    models = {}
    for pair, name in (("en-de", "relu_separate"), ("de-en", "swish_shared")):
        run(cli, ["import", os.path.join(fix, name), "-o", os.path.join(tmp, name)])
        models[pair] = os.path.join(tmp, name, "model.safetensors")
    with gzip.open(os.path.join(src_dir, "data/multi30k/test_2016_flickr.en.gz"), "rt") as f:
        lines = [next(f).rstrip("\n") for _ in range(12)]
    src = os.path.join(tmp, "src.en")
    with open(src, "w") as f:
        f.write("".join(x + "\n" for x in lines))
    want = {p: run(cli, ["translate", "--model", m, "--input", src, "--quiet"]).split("\n")[:12]
            for p, m in models.items()}
    return models, lines, want


def call(srv, path, body=None, ctype="application/json", method=None, raw=False, headers=None):
    """(status, headers, decoded JSON or text; the bytes with raw) of one
    request."""
    data = body
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
    elif isinstance(body, str):
        data = body.encode()
    req = urllib.request.Request(srv.base + path, data=data, method=method)
    if data is not None and ctype:
        req.add_header("Content-Type", ctype)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=T) as r:
            code, hdrs, content = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        code, hdrs, content = e.code, e.headers, e.read()
    if raw:
        return code, hdrs, content
    text = content.decode()
    try:
        return code, hdrs, json.loads(text)
    except ValueError:
        return code, hdrs, text


def raise_nofile(n):
    """The soft open-file limit raised to n (the hard limit at most); the
    limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n if hard == resource.RLIM_INFINITY else min(n, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Server:
    """`clformer serve --port 0 --host 127.0.0.1 ARGS`, once it says where
    it listens (within 120 s); stop() sends SIGTERM and waits T seconds."""

    def __init__(self, cli, args):
        self.p = subprocess.Popen([cli, "serve", "--port", "0", "--host", "127.0.0.1"] + args,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = [None]
        t = threading.Thread(target=lambda: line.__setitem__(0, self.p.stdout.readline()), daemon=True)
        t.start()
        t.join(120)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line[0] or "")
        if not m:
            self.p.kill()
            raise SystemExit("serve did not start: %r %s" % (line[0], self.p.stderr.read()))
        self.base = "http://127.0.0.1:%s" % m.group(1)
        self.port = int(m.group(1))

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(T)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "killed after %d s" % T
        return rc
