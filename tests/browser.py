"""A headless Chromium driven by the DevTools protocol over a pipe (`--remote-debugging-pipe`:
NUL-separated JSON on file descriptors 3 and 4), standard library only, for checking the HTML
reports in a real browser: page errors, console errors and warnings, network requests (all
blocked), failed requests, JavaScript dialogs, and whether every plot drew something.

Uses the system's Chromium (Debian: `apt-get install chromium`); nothing is downloaded.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Evaluated in the page once the report says its plots are drawn (body[data-plots-ready]).
PLOT_CHECK = """(() => {
  const out = [];
  for (const div of document.querySelectorAll('div.plot')) {
    const traces = (div._fullData || []).filter(t => t.visible !== false);
    const points = traces.reduce(
      (n, t) => n + ((t.x && t.x.length) || (t.y && t.y.length) || 0), 0);
    out.push({id: div.id, svg: !!div.querySelector('svg.main-svg'), traces: traces.length,
              points: points});
  }
  return JSON.stringify({plots: out, ready: document.body.dataset.plotsReady || null,
                         pwned: window.__pwned || null, title: document.title});
})()"""


# Evaluated on a drawn page: for each roofline plot (id fig-roof-*), the rendered box of every
# op name, whether drawn as trace text (one per marker) or as an annotation named "op-name",
# and the plot area (its size, and its box on the page).
OP_NAME_BOXES = """(() => {
  const out = [];
  for (const div of document.querySelectorAll('div.plot[id^="fig-roof"]')) {
    const boxes = [];
    const keep = (el, kind) => {
      const t = (el.textContent || '').trim();
      if (!t) return;
      const r = el.getBoundingClientRect();
      boxes.push({text: t, kind: kind, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom});
    };
    div.querySelectorAll('g.textpoint text').forEach(el => keep(el, 'trace'));
    (div.layout.annotations || []).forEach((a, i) => {
      if (a.name !== 'op-name') return;
      const el = div.querySelector('g.annotation[data-index="' + i + '"] text');
      if (el) keep(el, 'annotation');
    });
    const size = div._fullLayout._size;
    const a = div.querySelector('rect.nsewdrag').getBoundingClientRect();
    out.push({id: div.id, div_width: div.getBoundingClientRect().width,
              plot_w: size.w, plot_h: size.h, boxes: boxes,
              area: {x0: a.left, y0: a.top, x1: a.right, y1: a.bottom}});
  }
  return JSON.stringify(out);
})()"""


def find_chromium() -> str | None:
    """The browser to use: $PERFSUITE_CHROMIUM, else the first candidate on PATH."""
    env = os.environ.get("PERFSUITE_CHROMIUM")
    if env:
        return env
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


@dataclass
class PageReport:
    url: str
    page_errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)  # errors and warnings
    requests: list[str] = field(default_factory=list)  # anything not file:, data: or blob:
    failed: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    plots: list[dict[str, Any]] = field(default_factory=list)
    ready: bool = False
    pwned: Any = None
    probe: Any = None  # the value of check()'s `probe` expression, evaluated once drawn

    def problems(self) -> list[str]:
        out = [f"page error: {e}" for e in self.page_errors]
        out += [f"console: {c}" for c in self.console]
        out += [f"network request: {r}" for r in self.requests]
        out += [f"failed request: {f}" for f in self.failed]
        out += [f"dialog (a payload ran): {d}" for d in self.dialogs]
        if self.pwned:
            out.append(f"a payload ran: window.__pwned = {self.pwned!r}")
        if not self.ready:
            out.append("plots never finished drawing (body[data-plots-ready] not set)")
        out += [f"empty plot: {p['id']}" for p in self.plots if not p["svg"] or not p["points"]]
        return out


class Browser:
    """One headless Chromium; `check(path)` opens a file in a fresh tab and reports on it."""

    def __init__(self, executable: str, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="perfsuite-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds() -> None:  # in the child: the protocol's fixed descriptors 3 (in), 4 (out)
            import fcntl

            r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # above 3 and 4: no aliasing
            w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [executable, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
             "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--allow-file-access-from-files",
             f"--user-data-dir={self.profile}", "--window-size=1280,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False,
        )  # fmt: skip
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self._events: list[dict[str, Any]] = []

    # -- the wire ------------------------------------------------------------------------

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        return self._id

    def _read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> Any:
        mid = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout_s
        while True:
            msg = self._read(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._events.append(msg)

    def _drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        try:
            while True:
                self._events.append(self._read(deadline))
        except TimeoutError:
            pass

    # -- one page ------------------------------------------------------------------------

    def check(
        self,
        path: Path,
        screenshot: Path | None = None,
        width: int | None = None,
        probe: str | None = None,
    ) -> PageReport:
        """Open `path`; `width` sets the page (viewport) width in px, `probe` is a JavaScript
        expression evaluated once the plots are drawn, its value (JSON-decoded when a string)
        kept in PageReport.probe."""
        url = path.resolve().as_uri()
        rep = PageReport(url)
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Network.enable", "Page.enable"):
            self.call(method, session=sid)
        self.call(
            "Network.setBlockedURLs",
            {"urls": ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]},
            session=sid,
        )
        self.call(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
            session=sid,
        )
        if width is not None:
            self.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=sid,
            )
        self._events.clear()
        self.call("Page.navigate", {"url": url}, session=sid)
        deadline = time.monotonic() + self.timeout_s
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            res = self.call(
                "Runtime.evaluate", {"expression": PLOT_CHECK, "returnByValue": True}, session=sid
            )
            value = res.get("result", {}).get("value")
            state = json.loads(value) if isinstance(value, str) else {}
            if state.get("ready"):
                break
            self._drain(0.2)
        self._drain(0.5)  # late console messages
        rep.ready = bool(state.get("ready"))
        rep.plots = state.get("plots") or []
        rep.pwned = state.get("pwned")
        if probe is not None and rep.ready:
            res = self.call(
                "Runtime.evaluate", {"expression": probe, "returnByValue": True}, session=sid
            )
            value = res.get("result", {}).get("value")
            rep.probe = json.loads(value) if isinstance(value, str) else value
        if screenshot is not None:
            shot = self.call(
                "Page.captureScreenshot",
                {"format": "png", "captureBeyondViewport": True},
                session=sid,
            )
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        self._collect(rep, sid)
        self.call("Target.closeTarget", {"targetId": target})
        return rep

    def _collect(self, rep: PageReport, sid: str) -> None:
        for ev in self._events:
            if ev.get("sessionId") != sid:
                continue
            method, p = ev.get("method"), ev.get("params") or {}
            if method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails") or {}
                rep.page_errors.append(
                    (d.get("exception") or {}).get("description") or d.get("text") or str(d)
                )
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                rep.console.append(f"{p['type']}: {args}")
            elif method == "Log.entryAdded":
                entry = p.get("entry") or {}
                if entry.get("level") in ("error", "warning"):
                    rep.console.append(f"{entry.get('level')}: {entry.get('text')}")
            elif method == "Network.requestWillBeSent":
                u = (p.get("request") or {}).get("url", "")
                if not u.startswith(("file:", "data:", "blob:")):
                    rep.requests.append(u)
            elif method == "Network.loadingFailed":
                rep.failed.append(f"{p.get('errorText')} ({p.get('blockedReason') or ''})")
            elif method == "Page.javascriptDialogOpening":
                rep.dialogs.append(str(p.get("message")))
                self._send("Page.handleJavaScriptDialog", {"accept": False}, sid)

    def close(self) -> None:
        try:
            self._send("Browser.close")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            for fd in (self._to_child, self._from_child):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self.profile, ignore_errors=True)
