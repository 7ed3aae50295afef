"""A loopback package index (PEP 503 simple pages) for packages DeerFlow's uv.lock pins but the
package index this machine reaches does not list.

DeerFlow's extension manager runs ``uv add``, which re-resolves DeerFlow's whole lock; one
package missing from the index fails the install though its locked files are downloadable. Only
the missing names are served (every other name answers 404, so uv moves on to DeerFlow's own
index), and their links are the very URLs and hashes DeerFlow's uv.lock pins. A wheelhouse
(``UV_FIND_LINKS``) does not work: DeerFlow refuses a lock that names local files outside its
Docker build context, while it accepts (and logs) a loopback index.
"""

from __future__ import annotations

import html
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


class GapIndex:
    def __init__(self, lock: Path) -> None:
        with lock.open("rb") as stream:
            self._packages: list[dict[str, Any]] = tomllib.load(stream).get("package", [])
        self.served: set[str] = set()
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = [p for p in self.path.split("?")[0].split("/") if p]
                page = index.page(parts[1]) if len(parts) == 2 and parts[0] == "simple" else None
                data = (page or "not here").encode()
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html" if page else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/simple/"

    def add(self, name: str) -> bool:
        """Serve ``name`` from now on; False when the lock does not pin it."""
        if not any(_normalise(p.get("name", "")) == _normalise(name) for p in self._packages):
            return False
        self.served.add(_normalise(name))
        return True

    def page(self, name: str) -> str | None:
        if _normalise(name) not in self.served:
            return None
        links = []
        for package in self._packages:
            if _normalise(package.get("name", "")) != _normalise(name):
                continue
            for item in [
                *package.get("wheels", []),
                *([package["sdist"]] if "sdist" in package else []),
            ]:
                url, digest = item["url"], item["hash"].replace(":", "=", 1)
                filename = url.rsplit("/", 1)[-1]
                links.append(
                    f'<a href="{html.escape(url)}#{digest}">{html.escape(filename)}</a><br>'
                )
        return "<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
