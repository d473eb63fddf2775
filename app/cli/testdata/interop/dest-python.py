#!/usr/bin/env python3
"""A destination for hookbox's interoperability tests (interop_dest_test.go):
Python's http.server as it comes, BaseHTTPRequestHandler speaking HTTP/1.0,
answering "200 ok" without Content-Length: the answer ends when the server
closes the connection.

    python3 dest-python.py LOG SECRET NODE VERIFY_MJS [1.0|1.1-close]

With 1.1-close it speaks HTTP/1.1 instead and sends "Connection: close":
close-delimited all the same.

It prints "listening PORT" on stdout when ready. Each request is checked
with standardwebhooks and svix by a node process running verify.mjs (the
libraries are Node's), and written to LOG as one JSON line once its
connection is closed, which is when its answer ended: arrival and end in
milliseconds, body size, the verdicts. A request whose X-Hookbox-Event-Id
begins with "gate" is logged on arrival ({"kind": "held"}) and answered only
when the next line arrives on stdin, as dest-node.mjs does.
"""
import base64
import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

LOG, SECRET, NODE, VERIFY = sys.argv[1:5]
MODE = sys.argv[5] if len(sys.argv) > 5 else "1.0"
log = open(LOG, "a", buffering=1)
verifier = subprocess.Popen([NODE, VERIFY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
release = threading.Event()


def now():
    return time.time() * 1000


def record(r):
    log.write(json.dumps(r) + "\n")


def verdicts(headers, body):
    msg = {"secret": SECRET, "headers": headers, "body_b64": base64.b64encode(body).decode()}
    verifier.stdin.write(json.dumps(msg) + "\n")
    verifier.stdin.flush()
    return json.loads(verifier.stdout.readline())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1" if MODE == "1.1-close" else "HTTP/1.0"

    def do_POST(self):
        arrive = now()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        event = headers.get("x-hookbox-event-id", "")
        r = {"kind": "req", "event": event, "id": headers.get("webhook-id", ""),
             "svix_id": headers.get("svix-id", ""), "attempt": headers.get("x-hookbox-attempt", ""),
             "idempotency_key": headers.get("idempotency-key", ""),
             "arrive": arrive, "size": len(body)}
        r.update(verdicts(headers, body))
        if event.startswith("gate"):
            record({"kind": "held", "event": event, "arrive": arrive})
            release.wait()
            release.clear()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if MODE == "1.1-close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(b"ok")
        self.server.pending = r

    def log_message(self, *args):
        pass


class Server(HTTPServer):
    pending = None

    def shutdown_request(self, request):
        super().shutdown_request(request)
        r, self.pending = self.pending, None
        if r is not None:
            r["end"] = now()
            record(r)


def wait_release():
    for _ in sys.stdin:
        release.set()


threading.Thread(target=wait_release, daemon=True).start()
srv = Server(("127.0.0.1", 0), Handler)
print("listening %d" % srv.server_address[1], flush=True)
srv.serve_forever()
