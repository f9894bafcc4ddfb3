"""A stand-in for your own REST API: the service the compose example puts behind the proxy.

Standard library only, so it runs in the chaosproxy image as is (mounted, not built):
`GET /health`, `GET /items/{id}`, `POST /orders` (JSON). Inside its container it listens on
every interface of the container's own network namespace; compose publishes it on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ITEMS = {"1": {"id": "1", "name": "kettle", "price": 25.0}, "2": {"id": "2", "name": "mug"}}


class Handler(BaseHTTPRequestHandler):
    def reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self.reply(200, {"status": "ok"})
        elif self.path.startswith("/items/") and self.path[7:] in ITEMS:
            self.reply(200, ITEMS[self.path[7:]])
        else:
            self.reply(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        order = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/orders" and order.get("item") in ITEMS:
            self.reply(201, {"order": "o-1", "item": order["item"]})
        else:
            self.reply(400, {"error": "unknown item"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
