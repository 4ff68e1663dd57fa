"""A local stand-in for Google Compute Engine's metadata server (stdlib ``http.server``).

``FakeMetadata()`` serves ``/computeMetadata/v1/instance/preempted`` and
``.../maintenance-event`` from a thread on 127.0.0.1, answering only requests
with ``Metadata-Flavor: Google`` (403 otherwise, as the real server does).
``preempted_after`` flips ``preempted`` to ``TRUE`` from that request on (counted
per path); ``host`` is the value for ``GCE_METADATA_HOST``.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/computeMetadata/v1/instance/"


class FakeMetadata:
    def __init__(self, *, preempted_after: int | None = None, maintenance: str = "NONE"):
        self.preempted_after = preempted_after
        self.maintenance = maintenance
        self.requests: dict[str, int] = {}
        self.unflavored = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.headers.get("Metadata-Flavor") != "Google":
                    with fake._lock:
                        fake.unflavored += 1
                    self.send_error(403, "Missing Metadata-Flavor: Google")
                    return
                body = fake._answer(self.path)
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/text")
                self.send_header("Metadata-Flavor", "Google")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _answer(self, path: str) -> str | None:
        if not path.startswith(PREFIX):
            return None
        name = path[len(PREFIX) :].split("?")[0]
        with self._lock:
            count = self.requests[name] = self.requests.get(name, 0) + 1
        if name == "preempted":
            after = self.preempted_after
            return "TRUE" if after is not None and count >= after else "FALSE"
        if name == "maintenance-event":
            return self.maintenance
        return None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeMetadata:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
