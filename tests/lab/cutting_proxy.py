"""A registry front for the lab that cuts pulls half way, to test what a site sees when a link drops.

Runs in the lab registry's container beside the registry (tests/e2e/test-contracts.sh starts it):
it terminates TLS with the registry's own certificate, forwards every request to the registry, and
for the client named by --victim cuts the first --cuts responses of the layer --target after
--cut-after bytes (the TLS connection just closes: the engine sees an unexpected EOF, as when a
link drops). The engine resumes a cut layer with a Range request a few times on its own; cut more
often than that, its pull fails, and only a new pull gets the layer. Everything else passes whole. One JSON line per blob response goes to --log:
client, digest, Range asked, status, bytes sent, cut or not. Lab and tests only; stdlib only.

  cutting_proxy.py --listen 0.0.0.0:5001 --upstream 127.0.0.1:5000 --cert C --key K \
      --victim 172.30.77.12 --target sha256:... --cuts 8 --log /tmp/cuts.jsonl
"""

import argparse
import http.client
import http.server
import json
import re
import socket
import ssl
import threading

BLOB = re.compile(r'/v2/.+/blobs/(sha256:[0-9a-f]{64})$')
HOP = {'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization'}


class State:
    def __init__(self, args):
        self.args = args
        self.cuts_left = args.cuts
        self.target = args.target
        self.lock = threading.Lock()

    def take_cut(self, client, digest):
        with self.lock:
            if client != self.args.victim or self.cuts_left <= 0 or digest != self.target:
                return False
            self.cuts_left -= 1
            return True

    def log(self, record):
        with self.lock, open(self.args.log, 'a') as out:
            out.write(json.dumps(record, sort_keys=True) + '\n')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    state = None

    def log_message(self, *args):
        pass

    def _forward(self):
        args = self.state.args
        host, port = args.upstream.rsplit(':', 1)
        body = None
        if 'Content-Length' in self.headers:
            body = self.rfile.read(int(self.headers['Content-Length']))
        upstream = http.client.HTTPSConnection(host, int(port), timeout=300,
                                               context=ssl._create_unverified_context())
        headers = dict((k, v) for k, v in self.headers.items() if k.lower() not in HOP)
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        blob = BLOB.search(self.path.split('?')[0])
        length = int(response.getheader('Content-Length') or -1)
        cut = self.command == 'GET' and blob is not None and self.state.take_cut(self.client_address[0], blob.group(1))
        data = b'' if response.getheader('Content-Length') else response.read()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP and not (data and key.lower() == 'content-length'):
                self.send_header(key, value)
        if data:
            self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        sent = 0
        if self.command != 'HEAD':
            if data:
                self.wfile.write(data)
                sent = len(data)
            else:
                while True:
                    chunk = response.read(65536)
                    if not chunk:
                        break
                    if cut and sent + len(chunk) > args.cut_after:
                        chunk = chunk[:max(0, args.cut_after - sent)]
                        self.wfile.write(chunk)
                        sent += len(chunk)
                        break
                    self.wfile.write(chunk)
                    sent += len(chunk)
        upstream.close()
        if blob is not None and self.command == 'GET':
            self.state.log({'client': self.client_address[0], 'digest': blob.group(1),
                            'range': self.headers.get('Range'), 'status': response.status,
                            'length': length, 'sent': sent, 'cut': bool(cut)})
        if cut:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--listen', default='0.0.0.0:5001')
    parser.add_argument('--upstream', default='127.0.0.1:5000')
    parser.add_argument('--cert', required=True)
    parser.add_argument('--key', required=True)
    parser.add_argument('--victim', required=True, help='the client address whose big blobs are cut')
    parser.add_argument('--target', required=True, help='the digest of the layer to cut')
    parser.add_argument('--cuts', type=int, default=5)
    parser.add_argument('--cut-after', type=int, default=4 * 2 ** 20)
    parser.add_argument('--log', required=True)
    args = parser.parse_args()
    Handler.state = State(args)
    host, port = args.listen.rsplit(':', 1)
    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == '__main__':
    main()
