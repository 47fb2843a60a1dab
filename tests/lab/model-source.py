"""The lab's model source: serves a small synthetic model and counts its downloads.

    python3 model-source.py [--bind 0.0.0.0] [--port 8080] [--size-mib 4] [--rate BYTES_PER_SECOND]

GET /model/manifest.json   {"name", "version", "files": [{"name", "size", "sha256"}], "sha256"}
GET /model/weights.bin     the weights: the same bytes on every start (a sha256 chain); with
                           "Range: bytes=N-", from byte N (206)
GET /stats                 {"downloads": whole weights transfers, "started": weights requests,
                            "manifest_requests": n, "resumed_from": [the first byte of each
                            transfer resumed with a Range request], "rate": bytes per second or 0}
POST /stats/reset          zeroes the counters

--rate limits each transfer (0: no limit), for benchmarks of the shared cache against one
download per node. Python's standard library only: it runs on the lab's base image.
"""

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_NAME = 'nimstack/standin-llm'
CHUNK = 1 << 16


def make_weights(size):
    blocks = []
    for index in range((size + 31) // 32):
        blocks.append(hashlib.sha256(b'nimstack-standin-weights-%d' % index).digest())
    return b''.join(blocks)[:size]


class Source(object):
    def __init__(self, size, rate):
        self.weights = make_weights(size)
        self.rate = rate
        digest = hashlib.sha256(self.weights).hexdigest()
        self.manifest = json.dumps({
            'name': MODEL_NAME,
            'version': '1',
            'files': [{'name': 'weights.bin', 'size': len(self.weights), 'sha256': digest}],
            'sha256': digest,
        }, indent=2, sort_keys=True).encode('utf-8') + b'\n'
        self.lock = threading.Lock()
        self.stats = {}
        self.reset()

    def reset(self):
        with self.lock:
            self.stats = {'downloads': 0, 'started': 0, 'manifest_requests': 0, 'resumed_from': []}

    def resumed(self, offset):
        with self.lock:
            self.stats['resumed_from'].append(offset)

    def bump(self, key):
        with self.lock:
            self.stats[key] += 1

    def snapshot(self):
        with self.lock:
            result = dict(self.stats, resumed_from=list(self.stats['resumed_from']))
        result['rate'] = self.rate
        return result


def handler_for(source):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def log_message(self, fmt, *args):
            sys.stderr.write('model-source: %s %s\n' % (self.address_string(), fmt % args))

        def send_body(self, status, body, content_type='application/json'):
            self.send_response(status)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = self.path.split('?', 1)[0]
            if path == '/stats':
                self.send_body(200, json.dumps(source.snapshot()).encode('utf-8'))
            elif path == '/model/manifest.json':
                source.bump('manifest_requests')
                self.send_body(200, source.manifest)
            elif path == '/model/weights.bin':
                self.send_weights()
            else:
                self.send_body(404, b'{"error": "not found"}')

        def send_weights(self):
            source.bump('started')
            data = source.weights
            # A transfer cut short is resumed with "Range: bytes=N-" (the only form asked for).
            first = 0
            wanted = re.fullmatch(r'bytes=(\d+)-', self.headers.get('Range') or '')
            if wanted and int(wanted.group(1)) < len(data):
                first = int(wanted.group(1))
                source.resumed(first)
                self.send_response(206)
                self.send_header('Content-Range', 'bytes %d-%d/%d' % (first, len(data) - 1, len(data)))
            else:
                self.send_response(200)
            self.send_header('Content-Type', 'application/octet-stream')
            self.send_header('Content-Length', str(len(data) - first))
            self.end_headers()
            started = time.monotonic()
            for offset in range(first, len(data), CHUNK):
                self.wfile.write(data[offset:offset + CHUNK])
                if source.rate:
                    # Hold the average at the rate: sleep until this many bytes are due.
                    due = started + (offset - first + CHUNK) / float(source.rate)
                    delay = due - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
            self.wfile.flush()
            source.bump('downloads')

        def do_POST(self):
            if self.path.split('?', 1)[0] == '/stats/reset':
                source.reset()
                self.send_body(200, json.dumps(source.snapshot()).encode('utf-8'))
            else:
                self.send_body(404, b'{"error": "not found"}')

    return Handler


def main(argv):
    parser = argparse.ArgumentParser(description='The lab model source.')
    parser.add_argument('--bind', default='0.0.0.0')
    parser.add_argument('--port', type=int, default=8080)
    parser.add_argument('--size-mib', type=int, default=4)
    parser.add_argument('--rate', type=int, default=0, help='bytes per second per transfer, 0 for no limit')
    args = parser.parse_args(argv)
    source = Source(args.size_mib << 20, args.rate)
    server = ThreadingHTTPServer((args.bind, args.port), handler_for(source))
    server.daemon_threads = True
    sys.stderr.write('model-source: serving %s (%d bytes, rate %s) on port %d\n'
                     % (MODEL_NAME, len(source.weights), args.rate or 'unlimited', args.port))
    sys.stderr.flush()
    server.serve_forever()


if __name__ == '__main__':
    main(sys.argv[1:])
