#!/usr/bin/env python3
"""serve_lb.py CLFORMER SOURCE_DIR: two `clformer serve` replicas behind
HAProxy, run with docs/examples/haproxy-clformer.cfg as it is (addresses
from the environment), everything on 127.0.0.1 ports picked free, HAProxy
as the current user with its socket, pid file and log in a temp folder.

8 client threads translate through the balancer, every answer compared
with `clformer translate`'s output of the same lines:
  drain: SIGTERM to replica a while it holds requests. a exits 0 having
         drained, HAProxy's checks of /health take it out, traffic goes on
         to b; no request fails.
  kill:  a started again on its port and seen up; SIGKILL to b while it
         holds requests. They are cut, HAProxy retries them (and the
         connections b refuses) on a; no request fails either.
Zero failures is the bar in both: a retry is possible until HAProxy has
sent the client a byte of the answer, and a replica writes its short
answer's head and body in one call (libmicrohttpd's sendmsg of a buffered
response), so no answer is cut half-sent. With retry-on cut to
conn-failure the kill phase failed 1 to 4 requests in each of 4 runs.

Bounded: at most 300 requests a phase, each with a 20 s timeout, every
wait bounded; 11 to 18 s in all on 2 shared vCPUs once kernels are cached.
Without haproxy it prints SKIP and exits 77 (ctest's SKIP_RETURN_CODE)."""
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402
from serve_util import check, failures  # noqa: E402

CLI, SRC_DIR = sys.argv[1], sys.argv[2]
CLIENTS = 8
PHASE_CAP = 300  # requests a phase at most: the load's bound
# seconds a client rests between requests: at most 32 requests a second,
# so a phase's cap lasts 9 s or more, past the 2 to 3 s HAProxy's checks
# take to see a replica gone, however fast the replicas answer
PACE = 0.25
REQ_TIMEOUT = 20  # a request's bound, through the balancer and its retries


def free_port():
    """A port free on 127.0.0.1 now (the kernel's pick, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, seconds, what):
    """Polls cond every 0.1 s for at most `seconds`; a failure named `what`
    when it never holds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if cond():
            return True
        time.sleep(0.1)
    return check(False, "%s (waited %d s)" % (what, seconds))


class Replica:
    """`clformer serve` on a fixed port (so HAProxy's config holds), started
    again on the same port after it exits."""

    def __init__(self, name, port, model):
        self.name, self.port, self.model, self.srv = name, port, model, None

    def start(self):
        # the port was free a moment ago, but a short-lived connection of
        # another process may hold it as its own end for a moment: a bind
        # that fails (Server's SystemExit) is tried again, 5 times at most
        for attempt in range(5):
            try:
                self.srv = serve_util.Server(CLI, ["--port", str(self.port), "--model", "en-de=" + self.model,
                                                   "--drain-seconds", "20"])
                return
            except SystemExit as e:
                if attempt == 4 or "cannot listen" not in str(e):
                    raise
                time.sleep(1)

    @property
    def p(self):
        return self.srv.p

    def alive(self):
        return self.srv is not None and self.srv.p.poll() is None


class Balancer:
    """HAProxy from the recipe's file; stats() reads its runtime socket."""

    def __init__(self, exe, tmp, port, replicas):
        self.sock = os.path.join(tmp, "haproxy.sock")
        self.pidfile = os.path.join(tmp, "haproxy.pid")
        self.log_path = os.path.join(tmp, "haproxy.log")
        self.base = "http://127.0.0.1:%d" % port
        env = dict(os.environ, CLF_LB_BIND="127.0.0.1:%d" % port, CLF_LB_SOCKET=self.sock,
                   CLF_REPLICA_A="127.0.0.1:%d" % replicas[0].port, CLF_REPLICA_B="127.0.0.1:%d" % replicas[1].port)
        cfg = os.path.join(SRC_DIR, "docs/examples/haproxy-clformer.cfg")
        self.log = open(self.log_path, "w")
        # -db: in the foreground whatever the file says, so Popen holds it
        self.p = subprocess.Popen([exe, "-db", "-f", cfg, "-p", self.pidfile], env=env, stdout=self.log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stats(self):
        """{server: its row of `show stat`} of the backend, {} while the
        socket does not answer."""
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(5)
                s.connect(self.sock)
                s.sendall(b"show stat\n")
                data = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
        except OSError:
            return {}
        rows = list(csv.DictReader(data.decode().lstrip("# ").splitlines()))
        return {r["svname"]: r for r in rows if r["pxname"] == "clformer"}

    def state(self, name):
        return self.stats().get(name, {}).get("status", "")

    def counter(self, name, field):
        v = self.stats().get(name, {}).get(field, "")
        return int(v) if v.isdigit() else 0

    def log_tail(self, n=30):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-n:])

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)
        self.log.close()


class Load:
    """CLIENTS threads, each sending a request, checking its answer and
    resting PACE s, until stop() or PHASE_CAP requests in all."""

    def __init__(self, base, lines, want):
        self.base, self.lines, self.want = base, lines, want
        self.mu = threading.Lock()
        self.issued = self.done = 0
        self.errors = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.client, args=(k,), daemon=True) for k in range(CLIENTS)]
        for t in self.threads:
            t.start()

    def take(self):
        with self.mu:
            if self.stopping.is_set() or self.issued >= PHASE_CAP:
                return None
            self.issued += 1
            return self.issued

    def client(self, k):
        while True:
            n = self.take()
            if n is None:
                return
            i = (k + n) % len(self.lines)
            # one line or three: some requests take longer, so some are in
            # flight when a replica stops
            q, w = (self.lines[i], self.want[i]) if n % 2 else (self.lines[i:i + 3], self.want[i:i + 3])
            err = None
            try:
                req = urllib.request.Request(self.base + "/translate",
                                             json.dumps({"q": q, "source": "en", "target": "de"}).encode(),
                                             {"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=REQ_TIMEOUT) as r:
                    body = json.loads(r.read().decode())
                if body != {"translatedText": w}:
                    err = "wrong answer %r, want %r" % (body, w)
            except urllib.error.HTTPError as e:
                err = "%d %s" % (e.code, e.read()[:200])
            except (OSError, ValueError) as e:
                err = repr(e)
            with self.mu:
                self.done += 1
                if err:
                    self.errors.append("request %d (client %d): %s" % (n, k, err))
            time.sleep(PACE)

    def count(self):
        with self.mu:
            return self.done

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(REQ_TIMEOUT + 5)
        check(not any(t.is_alive() for t in self.threads), "a client still waits %d s on" % (REQ_TIMEOUT + 5))
        return self.done, self.errors


def more(load, n, what, seconds=30):
    """Waits for n more answered requests; PHASE_CAP reached first is a
    failure too (the load ended before the phase's point)."""
    goal = load.count() + n
    return wait_for(lambda: load.count() >= goal, seconds, "%d more requests %s" % (n, what))


def retries(lb):
    return lb.counter("BACKEND", "wretr"), lb.counter("BACKEND", "wredis")


def phase(lb, load, name, retries0):
    done, errors = load.stop()
    check(not errors, "%s: %d of %d requests failed: %s" % (name, len(errors), done, errors[:3]))
    r = retries(lb)
    print("serve_lb: %s: %d requests through the balancer, %d failed; HAProxy moved %d to the other replica "
          "(redispatches), retried %d on the same" % (name, done, len(errors), r[1] - retries0[1],
                                                         r[0] - retries0[0]), flush=True)


def main():
    haproxy = shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy")
                                               if os.access(p, os.X_OK)), None)
    if not haproxy:
        print("serve_lb: SKIP: haproxy is not installed (apt-get install haproxy; run.sh installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="clf-lb-")
    reps, lb = [], None
    try:
        models, lines, want = serve_util.fixture_models(CLI, SRC_DIR, tmp)
        reps = [Replica(n, free_port(), models["en-de"]) for n in ("a", "b")]
        for r in reps:
            r.start()
        lb = Balancer(haproxy, tmp, free_port(), reps)
        a, b = reps
        if not wait_for(lambda: lb.state("a") == "UP" and lb.state("b") == "UP", 30,
                        "HAProxy sees both replicas up"):
            return 1
        scenario(lb, a, b, lines, want["en-de"])
    finally:
        for r in reps:
            if r.alive():
                r.p.kill()
                r.p.wait(10)
        if lb:
            lb.stop()
            if failures:
                print("HAProxy's log, its end:\n" + lb.log_tail(), flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return serve_util.summary("serve_lb", "ok")


def scenario(lb, a, b, lines, want):
    # drain: SIGTERM to a while requests flow through both replicas
    r0 = retries(lb)
    load = Load(lb.base, lines, want)
    before = lb.counter("a", "stot"), lb.counter("b", "stot")
    more(load, 24, "before the SIGTERM")
    check(lb.counter("a", "stot") > before[0] and lb.counter("b", "stot") > before[1],
          "both replicas served before the SIGTERM: %r" % ((lb.counter("a", "stot"), lb.counter("b", "stot")),))
    # the signal while a holds requests, so that the drain has some to finish
    wait_for(lambda: lb.counter("a", "scur") > 0, 10, "a request in flight at a")
    a.p.send_signal(signal.SIGTERM)
    try:
        rc = a.p.wait(30)
        check(rc == 0, "replica a's exit after SIGTERM: %r" % rc)
        err = a.p.stderr.read()
        check("drained, stopped" in err, "replica a did not say it drained: %r" % err[-500:])
    except subprocess.TimeoutExpired:
        check(False, "replica a still runs 30 s after SIGTERM")
    wait_for(lambda: lb.state("a").startswith("DOWN"), 15, "HAProxy's checks of /health take a out")
    served_b = lb.counter("b", "stot")
    more(load, 24, "once a is out")
    # of those 24 answers, CLIENTS at most were already b's when counted
    check(lb.counter("b", "stot") >= served_b + 24 - CLIENTS,
          "b served what came once a was out: %d requests, then %d" % (served_b, lb.counter("b", "stot")))
    phase(lb, load, "SIGTERM to a", r0)

    # kill: a back on its port, then SIGKILL to b mid-run
    a.start()
    if not wait_for(lambda: lb.state("a") == "UP", 15, "HAProxy sees a up again"):
        return
    r0 = retries(lb)
    load = Load(lb.base, lines, want)
    before = lb.counter("a", "stot"), lb.counter("b", "stot")
    more(load, 24, "before the SIGKILL")
    check(lb.counter("a", "stot") > before[0] and lb.counter("b", "stot") > before[1],
          "both replicas served before the SIGKILL: %r" % ((lb.counter("a", "stot"), lb.counter("b", "stot")),))
    # the kill while b holds requests, which HAProxy must then retry on a
    wait_for(lambda: lb.counter("b", "scur") > 0, 10, "a request in flight at b")
    b.p.kill()
    b.p.wait(10)
    wait_for(lambda: lb.state("b").startswith("DOWN"), 15, "HAProxy's checks of /health take b out")
    more(load, 24, "once b is out")
    phase(lb, load, "SIGKILL to b", r0)


if __name__ == "__main__":
    sys.exit(main())
