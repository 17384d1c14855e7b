"""Headless Chromium (Debian's chromium) for the console's tests: the DOM a
page renders to, screenshots kept as artifacts, and plain HTTP requests
beside it. Used by tests/integration/test_console and
test_console_operator."""
import base64
import html.parser
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Dom(html.parser.HTMLParser):
    """The elements and the text of a page as Chromium rendered it."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags = []      # (tag, attrs dict)
        self.texts = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.texts.append(data)

    def text(self):
        return "".join(self.texts)

    def count(self, tag, **attrs):
        return sum(1 for t, a in self.tags
                   if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items()))

    def attrs(self, tag, **attrs):
        """The attributes of each `tag` element whose attributes match."""
        return [a for t, a in self.tags
                if t == tag and all(a.get(k.rstrip("_")) == v for k, v in attrs.items())]


class Browser:
    """Chromium with a profile of its own; screenshots go to `artifacts`
    (each checked with checks.check and printed)."""

    def __init__(self, artifacts, checks):
        self.artifacts = artifacts
        self.checks = checks
        self.profile = tempfile.mkdtemp(prefix="vf-console-chromium-")
        os.makedirs(artifacts, exist_ok=True)

    def run(self, *args):
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--user-data-dir=" + self.profile, "--no-first-run", "--hide-scrollbars"] + list(args)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def browse(self, url, shot=None):
        """The DOM after Chromium loaded url; a screenshot into artifacts/shot."""
        out = self.run("--dump-dom", url)
        if shot:
            path = os.path.join(self.artifacts, shot)
            self.run("--screenshot=" + path, "--window-size=1280,900", url)
            self.checks.check(os.path.exists(path) and os.path.getsize(path) > 1000,
                              "screenshot of %s kept at %s" % (url, path))
            print("screenshot:", path, flush=True)
        return Dom(out.stdout)

    def close(self):
        shutil.rmtree(self.profile, ignore_errors=True)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def fetch(url, data=None, auth=None, headers=None, follow=True):
    """(status, headers, body) of a plain HTTP request; data: a form (POST)."""
    req = urllib.request.Request(url, data=urllib.parse.urlencode(data).encode() if data else None)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    opener = urllib.request.build_opener() if follow else urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=60) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()
