#!/usr/bin/env python3
"""serve_libre.py CLFORMER SOURCE_DIR: the parts of LibreTranslate's API
past /translate's plain text, through urllib (and libretranslatepy where it
is importable), on 127.0.0.1 only, every step bounded in time; and the web
page at / in a real headless Chromium over the DevTools protocol.

The fixtures are tiny models whose outputs mean nothing, so these checks
hold structure and consistency, not quality: /detect names the right
language for real English and German sentences; `source: "auto"` gives
exactly the detected pair's translation and LibreTranslate's
detectedLanguage; html keeps every tag, attribute, comment and script, and
each text node becomes the plain translation of that text; a .txt file's
download equals the plain translation of its text; /frontend/settings and
/suggest answer as LibreTranslate does without suggestions. The page: type
a sentence, see the API key refused and then accepted, the translation equal
to the API's, auto detection shown, copy. Without libexttextcat or libxml2
in the build those parts must answer 501 and are skipped with a message;
without chromium the browser part is skipped with a message.
CLF_SERVE_SCREENSHOT=PATH keeps the page's screenshot there."""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import T, Server, call, check, fixture_models, in_tmp, summary  # noqa: E402

CLI, SRC_DIR = sys.argv[1], sys.argv[2]
DE = ["Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
      "Ein Mädchen in einem Karateanzug bricht ein Brett mit einem Tritt."]


def translate(srv, q, source="en", target="de", key="k1", **extra):
    body = dict(q=q, source=source, target=target, **extra)
    if key is not None:
        body["api_key"] = key
    return call(srv, "/translate", body)


class Tree(HTMLParser):
    """An HTML fragment as a list of events, text nodes apart."""
    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.events, self.texts = [], []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.events.append(("start", tag, tuple(attrs)))

    def handle_endtag(self, tag):
        self.events.append(("end", tag))

    def handle_comment(self, data):
        self.events.append(("comment", data))

    def handle_data(self, data):
        self.events.append(("text",))
        self.texts.append(data)


def multipart(fields, files):
    b = "----clformer%x" % int(time.time() * 1e6)
    out = b""
    for k, v in fields.items():
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (b, k, v)).encode()
    for k, (name, data) in files.items():
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\nContent-Type: text/plain"
                "\r\n\r\n" % (b, k, name)).encode() + data + b"\r\n"
    return out + ("--%s--\r\n" % b).encode(), "multipart/form-data; boundary=" + b


def api_checks(srv, lines, want, detect_ok, html_ok):
    c, _, b = call(srv, "/frontend/settings")
    check(c == 200 and b.get("charLimit") == 2000 and b.get("apiKeys") is True and b.get("keyRequired") is True
          and b.get("suggestions") is False and ".txt" in b.get("supportedFilesFormat", [])
          and b.get("language", {}).get("source", {}).get("code") == "en"
          and b["language"].get("target", {}).get("code") == "de", "/frontend/settings: %d %r" % (c, b))
    c, _, b = call(srv, "/suggest", {"q": "a", "s": "b", "source": "en", "target": "de"})
    check(c == 403 and "Suggestions are disabled" in b.get("error", ""), "/suggest: %d %r" % (c, b))

    # /detect and auto
    c, _, b = call(srv, "/detect", {"q": lines[0] + " " + lines[1], "api_key": "k1"})
    if not detect_ok:
        check(c == 501 and "libexttextcat" in b.get("error", ""), "/detect without the library: %d %r" % (c, b))
        print("serve_libre: SKIP /detect and auto: this clformer was built without libexttextcat")
    else:
        check(c == 200 and isinstance(b, list) and b and b[0].get("language") == "en"
              and all(set(g) == {"confidence", "language"} and 0 <= g["confidence"] <= 100 for g in b),
              "/detect English: %d %r" % (c, b))
        c, _, b = call(srv, "/detect", urllib.parse.urlencode({"q": " ".join(DE), "api_key": "k1"}),
                       "application/x-www-form-urlencoded")
        check(c == 200 and b and b[0]["language"] == "de", "/detect German (a form): %d %r" % (c, b))
        c, _, b = call(srv, "/detect", {"q": "x", "api_key": "nope"})
        check(c == 403, "/detect with a wrong key: %d %r" % (c, b))
        c, _, b = call(srv, "/detect", b'{"q": "\xff\xfe", "api_key": "k1"}')
        check(c == 400 and "UTF-8" in b.get("error", ""), "/detect, not UTF-8: %d %r" % (c, b))
        c, _, b = call(srv, "/detect", {"api_key": "k1"})
        check(c == 400 and "missing q" in b.get("error", ""), "/detect without q: %d %r" % (c, b))
        c, _, b = translate(srv, lines[2], source="auto")
        check(c == 200 and b.get("translatedText") == want["en-de"][2] and b.get("detectedLanguage", {}).get(
              "language") == "en" and set(b["detectedLanguage"]) == {"confidence", "language"},
              "auto, English: %d %r" % (c, b))
        c, _, b = translate(srv, DE, source="auto", target="en")
        plain = translate(srv, DE, source="de", target="en")[2]
        check(c == 200 and b.get("translatedText") == plain.get("translatedText")
              and [d["language"] for d in b.get("detectedLanguage", [])] == ["de", "de"],
              "auto, German array: %d %r (plain %r)" % (c, b, plain))
        c, _, b = translate(srv, lines[0], source="auto", target="fr")
        check(c == 400 and "fr" in b.get("error", ""), "auto into a language not served: %d %r" % (c, b))

    # html: the markup kept, each text node the plain translation of its text
    frag = ('<p class="x">%s <b>%s</b></p>\n<!-- a comment --><script>if (a < b) s = "not prose";</script>'
            '<ul><li title="t">%s &amp; %s</li><li> </li></ul><br>%s' % (lines[3], lines[4], lines[5], lines[6],
                                                                      lines[7]))
    c, _, b = translate(srv, [frag, "<i>%s</i>" % lines[8]], format="html")
    if not html_ok:
        check(c == 501 and "libxml2" in b.get("error", ""), "html without the library: %d %r" % (c, b))
        print("serve_libre: SKIP format html: this clformer was built without libxml2")
    else:
        out = b.get("translatedText") if c == 200 else None
        check(isinstance(out, list) and len(out) == 2, "html: %d %r" % (c, b))
        if isinstance(out, list) and len(out) == 2:
            src, got = Tree(frag), Tree(out[0])
            check(src.events == got.events, "html: the markup changed: %r -> %r" % (frag, out[0]))
            prose = [t for t in src.texts if t.strip() and "not prose" not in t]
            plain = translate(srv, prose)[2].get("translatedText")
            tr = {s: p for s, p in zip(prose, plain or [])}
            check(all(g == tr.get(s, s) for s, g in zip(src.texts, got.texts)) and len(src.texts) == len(got.texts),
                  "html: text nodes %r, want the plain translations %r" % (got.texts, tr))
            check('<script>if (a < b) s = "not prose";</script>' in out[0], "html: the script was changed: %r" % out[0])
            check(out[1] == "<i>%s</i>" % want["en-de"][8].replace("&", "&amp;").replace("<", "&lt;"),
                  "html, second text: %r" % out[1])
        if detect_ok:  # auto reads the prose, not the markup
            c, _, b = translate(srv, '<p class="a-long-english-class-name">%s</p>' % DE[0], source="auto",
                                target="en", format="html")
            plain = translate(srv, DE[0], source="de", target="en")[2].get("translatedText", "")
            check(c == 200 and b.get("detectedLanguage", {}).get("language") == "de" and b.get("translatedText") ==
                  '<p class="a-long-english-class-name">%s</p>' % plain.replace("&", "&amp;").replace("<", "&lt;"),
                  "html with auto: %d %r" % (c, b))
        c, _, b = translate(srv, ["<br>", '<img alt="x">'], format="html")
        check(c == 200 and b == {"translatedText": ["<br>", '<img alt="x">']}, "html without text: %d %r" % (c, b))

    # a text file, uploaded as LibreTranslate's clients do, and its download
    text = lines[9] + "\n\n" + lines[10] + " " + lines[11] + "\n"
    body, ctype = multipart({"source": "en", "target": "de", "api_key": "k1"},
                            {"file": ("notes 1.txt", text.encode())})
    c, _, b = call(srv, "/translate_file", body, ctype)
    url = b.get("translatedFileUrl", "") if c == 200 else ""
    check(re.fullmatch(r"http://127\.0\.0\.1:%d/download_file/[0-9a-f]{32}\.notes1\.txt" % srv.port, url),
          "/translate_file: %d %r" % (c, b))
    if url:
        c, h, data = call(srv, urllib.parse.urlparse(url).path, raw=True)
        plain = translate(srv, text)[2].get("translatedText")
        check(c == 200 and data.decode() == plain, "the download: %d %r, want %r" % (c, data[:200], plain))
        check('filename="notes1.txt"' in (h.get("Content-Disposition") or ""),
              "the download's name: %r" % h.get("Content-Disposition"))
    c, _, b = call(srv, "/download_file/" + "0" * 32 + ".x.txt")
    check(c == 404, "an unknown download: %d %r" % (c, b))
    body, ctype = multipart({"source": "en", "target": "de", "api_key": "k1"}, {"file": ("a.pdf", b"%PDF")})
    c, _, b = call(srv, "/translate_file", body, ctype)
    check(c == 400 and "format not supported" in b.get("error", ""), "a .pdf: %d %r" % (c, b))
    body, ctype = multipart({"source": "en", "target": "de", "api_key": "k1"}, {})
    c, _, b = call(srv, "/translate_file", body, ctype)
    check(c == 400 and "missing file" in b.get("error", ""), "no file: %d %r" % (c, b))
    body, ctype = multipart({"source": "en", "target": "de"}, {"file": ("a.txt", b"Hello.")})
    c, _, b = call(srv, "/translate_file", body, ctype)
    check(c in (400, 403) and "api_key" in b.get("error", ""), "a file without a key: %d %r" % (c, b))

    # a real client, where it is installed
    try:
        from libretranslatepy import LibreTranslateAPI
    except ImportError:
        print("serve_libre: SKIP libretranslatepy: not installed (pip install libretranslatepy)")
        return
    lt = LibreTranslateAPI(srv.base + "/", api_key="k1")
    check(lt.translate(lines[0], "en", "de") == want["en-de"][0], "libretranslatepy translate")
    if detect_ok:
        d = lt.detect(DE[0])
        check(d and d[0]["language"] == "de", "libretranslatepy detect: %r" % (d,))
        check(lt.translate(lines[0], "auto", "de") == want["en-de"][0], "libretranslatepy auto")


# ---------------------------------------------------------------- browser

class DevTools:
    """The Chrome DevTools protocol over one WebSocket (RFC 6455, client
    side, text frames only): enough to drive a page."""
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.s = socket.create_connection((u.hostname, u.port), timeout=T)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (u.path, u.netloc, key))
                       .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.s.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("DevTools refused the WebSocket: %r" % head[:200])
        self.id = 0

    def _read(self, n):
        b = b""
        while len(b) < n:
            x = self.s.recv(n - len(b))
            if not x:
                raise RuntimeError("DevTools closed the connection")
            b += x
        return b

    def _frame(self):
        msg, fin = b"", False
        while not fin:
            a, n = self._read(2)
            fin, op = a & 0x80, a & 0x0F
            n &= 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data = self._read(n)
            if op in (0x9, 0xA):  # ping, pong: not part of a message
                fin = False
                continue
            msg += data
        return msg

    def __call__(self, method, **params):
        self.id += 1
        payload = json.dumps({"id": self.id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        while True:
            m = json.loads(self._frame())
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError("%s: %r" % (method, m["error"]))
                return m.get("result", {})

    def js(self, expr):
        r = self("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        return r.get("result", {}).get("value")

    def wait(self, expr, what, seconds=T):
        deadline = time.time() + seconds
        while time.time() < deadline:
            v = self.js(expr)
            if v:
                return v
            time.sleep(0.1)
        raise RuntimeError("the page never showed %s (%s); status %r, error %r" % (
            what, expr, self.js("document.getElementById('status').textContent"),
            self.js("document.getElementById('error').textContent")))

    def click(self, sel):
        x, y = self.js("(() => { const r = document.querySelector(%s).getBoundingClientRect();"
                       " return [r.x + r.width / 2, r.y + r.height / 2]; })()" % json.dumps(sel))
        for t in ("mousePressed", "mouseReleased"):
            self("Input.dispatchMouseEvent", type=t, x=x, y=y, button="left", clickCount=1)

    def type(self, sel, text):
        self.click(sel)
        self("Input.insertText", text=text)


def browser_checks(srv, lines, want, detect_ok, tmp):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("serve_libre: SKIP the web page in a browser: chromium is not installed (apt-get install chromium)")
        return
    prof = os.path.join(tmp, "chromium")
    p = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-dev-shm-usage", "--disable-extensions", "--window-size=1100,640",
                          "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                          "--user-data-dir=" + prof, srv.base + "/"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = [None]

        def read_port():
            for line in p.stderr:
                m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
                if m:
                    port[0] = int(m.group(1))
                    return
        t = threading.Thread(target=read_port, daemon=True)
        t.start()
        t.join(T)
        check(port[0], "chromium did not start its DevTools endpoint")
        if not port[0]:
            return
        with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port[0], timeout=T) as r:
            pages = [x for x in json.load(r) if x.get("type") == "page"]
        d = DevTools(pages[0]["webSocketDebuggerUrl"])
        d("Runtime.enable")
        # a headless page has no window focus of its own, and the clipboard API refuses an
        # unfocused document ("Document is not focused"): about one run in ten lost it to
        # the browser's other windows, and the copy then fell back and said so
        d("Emulation.setFocusEmulationEnabled", enabled=True)
        # what a person would allow when the page asks: the clipboard, read back below
        d("Browser.grantPermissions", origin=srv.base, permissions=["clipboardReadWrite", "clipboardSanitizedWrite"])
        d.wait("document.querySelectorAll('#source option').length > 2", "the languages")
        check(d.js("getComputedStyle(document.getElementById('apikeyrow')).display") != "none",
              "the page shows no API key field although the server wants one")
        d.js("(() => { const s = document.getElementById('source'); s.value = 'en';"
             " s.dispatchEvent(new Event('change')); document.getElementById('target').value = 'de'; })()")
        d.type("#q", lines[0])
        d.click("#translate")
        err = d.wait("document.getElementById('error').textContent", "the missing key's error")
        check("api_key" in err, "without a key the page says %r" % err)
        d.type("#apikey", "k1")
        d.click("#translate")
        out = d.wait("document.getElementById('out').value", "a translation")
        check(out == want["en-de"][0], "the page's translation %r, want %r" % (out, want["en-de"][0]))
        if detect_ok:
            d.js("(() => { const s = document.getElementById('source'); s.value = 'auto';"
                 " s.dispatchEvent(new Event('change')); })()")
            shown = d.wait("document.getElementById('detected').textContent", "the detected language")
            check(shown.startswith("Detected: English"), "auto on the page: %r" % shown)
            check(d.js("document.getElementById('out').value") == want["en-de"][0], "auto's translation on the page")
        # the copy, read back from the clipboard
        d.click("#copy")
        status = d.wait("document.getElementById('status').textContent", "the copy")
        check(status == "Copied", "the copy button says %r" % status)
        got = d.js("navigator.clipboard.readText()")
        check(got == want["en-de"][0], "the clipboard holds %r, want %r" % (got, want["en-de"][0]))
        # the alternatives (the beam's next hypotheses) under it; one clicked is the translation shown
        alts = d.wait("[...document.querySelectorAll('#alts button')].map((b) => b.textContent)", "alternatives")
        check(len(alts) >= 1 and want["en-de"][0] not in alts, "the page's alternatives: %r" % alts)
        if alts:
            d.click("#alts button")
            check(d.js("document.getElementById('out').value") == alts[0], "a clicked alternative is shown")
        shot = os.environ.get("CLF_SERVE_SCREENSHOT")
        png = base64.b64decode(d("Page.captureScreenshot", format="png")["data"])
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, "the screenshot")
        if shot:
            with open(shot + ".tmp", "wb") as f:
                f.write(png)
            os.replace(shot + ".tmp", shot)
    except (RuntimeError, OSError, ValueError, KeyError, IndexError) as e:
        check(False, "the web page in chromium: %s" % e)
    finally:
        p.kill()
        p.wait(T)


def main():
    return in_tmp("clf-serve-libre-", checks)


def checks(tmp):
    models, lines, want = fixture_models(CLI, SRC_DIR, tmp)
    keys = os.path.join(tmp, "keys")
    with open(keys, "w") as f:
        f.write("k1\n")
    srv = Server(CLI, ["--model", "en-de=" + models["en-de"], "--model", "de-en=" + models["de-en"],
                       "--api-keys", keys, "--max-chars", "2000"])
    try:
        c, _, page = call(srv, "/")
        check(c == 200 and "<textarea" in page and "src=" not in page and "href=\"http" not in page,
              "GET /: %d, a page with no external assets" % c)
        c, _, b = call(srv, "/detect", {"q": "Hello there, my friend.", "api_key": "k1"})
        detect_ok = c != 501
        c, _, b = translate(srv, "<b>Hi.</b>", format="html")
        html_ok = c != 501
        api_checks(srv, lines, want, detect_ok, html_ok)
        browser_checks(srv, lines, want, detect_ok, tmp)
    finally:
        rc = srv.stop()
    check(rc == 0, "SIGTERM: exit status %r" % rc)
    return summary("serve_libre")


if __name__ == "__main__":
    sys.exit(main())
