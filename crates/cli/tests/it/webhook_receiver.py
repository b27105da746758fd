"""A webhook receiver for crates/cli/tests/it/webhooks.rs: verifies every request with
the `standardwebhooks` package (PyPI), the Standard Webhooks reference verifier, and
appends one JSON line per request to --log:
{"id", "verified", "error", "body", "start", "end"} (start/end: time.monotonic()).

--mode ok     answer 204 when verified, 400 otherwise (after --delay-ms)
--mode hang   record the request ({"hang": true}) and never answer

Prints "listening PORT" once it listens.
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--secret", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--mode", choices=["ok", "hang"], default="ok")
parser.add_argument("--delay-ms", type=int, default=0)
args = parser.parse_args()

webhook = Webhook(args.secret)
lock = threading.Lock()


def record(entry):
    with lock:
        with open(args.log, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")
            log.flush()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        start = time.monotonic()
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        headers = {k: v for k, v in self.headers.items()}
        entry = {"id": headers.get("webhook-id"), "body": body.decode("utf-8", "replace")}
        if args.mode == "hang":
            entry["hang"] = True
            record(entry)
            while True:
                time.sleep(3600)
        try:
            webhook.verify(body, headers)
            entry["verified"] = True
            entry["error"] = None
        except Exception as err:  # any refusal is recorded, and answered 400
            entry["verified"] = False
            entry["error"] = f"{type(err).__name__}: {err}"
        time.sleep(args.delay_ms / 1000)
        entry["start"] = start
        entry["end"] = time.monotonic()
        record(entry)
        self.send_response(204 if entry["verified"] else 400)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


class Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True


server = Server(("127.0.0.1", args.port), Handler)
print(f"listening {server.server_address[1]}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
