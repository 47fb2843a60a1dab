"""A stand-in leader for the front door's test: health from /run/fake-<port>.down (503 when it
exists), completions from /run/fake-<port>.fail (503 when it exists), streams when asked; NIM's
load gauges at /v1/metrics with the queue length in /run/fake-<port>.waiting (404 without it)."""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
MODEL = sys.argv[2]


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == '/v1/health/ready':
            down = os.path.exists('/run/fake-%d.down' % PORT)
            self.reply(503 if down else 200, {'message': 'down' if down else 'ready'})
        elif self.path == '/v1/metrics' and os.path.exists('/run/fake-%d.waiting' % PORT):
            with open('/run/fake-%d.waiting' % PORT) as handle:
                waiting = int(handle.read().strip() or 0)
            text = ('num_requests_waiting{model_name="%s"} %d\nnum_requests_running{model_name="%s"} 8\n'
                    'gpu_cache_usage_perc{model_name="%s"} 0.5\nrequest_success_total{model_name="%s"} %d\n'
                    % (MODEL, waiting, MODEL, MODEL, MODEL, self.server.counts)).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/plain; version=0.0.4')
            self.send_header('Content-Length', str(len(text)))
            self.end_headers()
            self.wfile.write(text)
        elif self.path == '/v1/models':
            self.reply(200, {'object': 'list', 'data': [{'id': MODEL}], 'port': PORT})
        else:
            self.reply(404, {})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)) or b'{}')
        self.server.counts += 1
        if os.path.exists('/run/fake-%d.fail' % PORT):
            self.reply(503, {'error': 'broken group'})
            return
        text = 'port %d serves %s' % (PORT, MODEL)
        if not body.get('stream'):
            self.reply(200, {'model': MODEL, 'port': PORT, 'choices': [{'message': {'content': text}}]})
            return
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        for piece in text.split(' ') + ['[DONE]']:
            event = ('data: %s\n\n' % (piece if piece == '[DONE]' else json.dumps({'delta': piece}))).encode()
            self.wfile.write(b'%x\r\n%s\r\n' % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b'0\r\n\r\n')


server = ThreadingHTTPServer(('127.0.0.1', PORT), Handler)
server.counts = 0
server.serve_forever()
