#!/usr/bin/env python
"""The live test cluster's node agent: what a kubelet and kube-proxy would do for the one workload
that kwok cannot fake, the LeaderWorkerSet controller, whose webhooks must really answer.

kwok gives every pod on the fake nodes a Running status and nothing more. That is enough for the
NIM pods, but not for the controller LWS installs: without it no LeaderWorkerSet gets pods, and
without its webhooks (the pod webhook included) no worker pod is made at all. So this agent:

* runs the real LWS controller binary, built from the same module version, for as long as the
  cluster has a Running pod of the release image (`registry.k8s.io/lws/lws:<version>`) in the LWS
  namespace: installing LWS (manifest or Helm chart) starts it, a rollout of the Deployment (a new
  pod) restarts it with the ConfigMap the pod mounts, removing LWS stops it. Listen addresses are
  moved to loopback ports of this cluster; everything else comes from the pod's own ConfigMap.
* serves the API server's egress to "the cluster" (webhook calls) on a Unix socket, as an HTTP
  CONNECT proxy: a connection to a Service's ClusterIP and port goes to the local process that
  runs the Service's pod, and nowhere else. No packet leaves loopback.

  agent.py --state build/k8s --lws-bin BIN --lws-version v0.9.0 --ports WEBHOOK,PROBE

It stops on SIGTERM (cluster.sh down) and, so that it never outlives its cluster, when the API
server has not answered for two minutes.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import socket
import socketserver
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import yaml

LWS_IMAGE = "registry.k8s.io/lws/lws"
LWS_NAMESPACE = "lws-system"  # what the controller assumes out of cluster (no service account file)
WEBHOOK_TARGET_PORTS = {9443, "webhook-server"}
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # controller-runtime's default, LWS's too
API_GIVE_UP = 120


class Api:
    """The few read calls the agent makes, with the cluster's admin client certificate."""

    def __init__(self, state: str) -> None:
        with open(os.path.join(state, "kubeconfig"), encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        self.server = config["clusters"][0]["cluster"]["server"]
        pki = os.path.join(state, "pki")
        self.context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.context.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def get(self, path: str) -> dict | None:
        try:
            with urllib.request.urlopen(self.server + path, context=self.context, timeout=10) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise


class Controller:
    """One real LWS controller process, for the Running LWS pod it stands for."""

    def __init__(self, args: argparse.Namespace, api: Api) -> None:
        self.args = args
        self.api = api
        self.pod_uid = ""
        self.cert_secret = ""
        self.process: subprocess.Popen | None = None
        self.started = 0.0
        self.backoff = 1.0
        self.log_path = os.path.join(args.state, "logs", "lws-controller.log")
        self.run_dir = os.path.join(args.state, "lws")
        os.makedirs(os.path.join(self.run_dir, "certs"), exist_ok=True)

    def wanted_pod(self) -> dict | None:
        pods = self.api.get(f"/api/v1/namespaces/{LWS_NAMESPACE}/pods") or {"items": []}
        image = f"{LWS_IMAGE}:{self.args.lws_version}"
        running = [
            pod for pod in pods["items"]
            if pod["status"].get("phase") == "Running"
            and not pod["metadata"].get("deletionTimestamp")
            and any(c.get("image") == image for c in pod["spec"]["containers"])
        ]
        running.sort(key=lambda pod: pod["metadata"]["creationTimestamp"])
        return running[-1] if running else None

    def config_for(self, pod: dict) -> str:
        """The pod's mounted controller configuration, its listen addresses moved to loopback."""
        container = next(c for c in pod["spec"]["containers"] if c.get("image", "").startswith(LWS_IMAGE))
        config_arg = next((a for a in container.get("args", []) if a.startswith("--config=")), "")
        config: dict = {}
        if config_arg:
            path = config_arg.split("=", 1)[1]
            volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
            for mount in container.get("volumeMounts", []):
                volume = volumes.get(mount["name"], {})
                if "configMap" not in volume:
                    continue
                if mount["mountPath"] == path:
                    key = mount.get("subPath") or os.path.basename(path)
                elif os.path.dirname(path) == mount["mountPath"].rstrip("/"):
                    key = os.path.basename(path)
                else:
                    continue
                cm = self.api.get(f"/api/v1/namespaces/{LWS_NAMESPACE}/configmaps/{volume['configMap']['name']}")
                config = yaml.safe_load(((cm or {}).get("data") or {}).get(key, "")) or {}
                break
        self.cert_secret = self.secret_at(pod, container, (config.get("webhook") or {}).get("certDir") or CERT_DIR)
        webhook_port, probe_port = self.args.ports
        config.setdefault("webhook", {}).update(
            {"port": webhook_port, "host": "127.0.0.1", "certDir": os.path.join(self.run_dir, "certs")})
        config.setdefault("health", {})["healthProbeBindAddress"] = f"127.0.0.1:{probe_port}"
        config.setdefault("metrics", {})["bindAddress"] = "0"
        # One controller at a time by construction: no lease to wait for after a restart.
        config.setdefault("leaderElection", {})["leaderElect"] = False
        path = os.path.join(self.run_dir, f"config-{pod['metadata']['uid']}.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle)
        return path

    @staticmethod
    def secret_at(pod: dict, container: dict, path: str) -> str:
        """The Secret a container has mounted at path (its webhook certificates), or ''."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
        for mount in container.get("volumeMounts", []):
            volume = volumes.get(mount["name"], {})
            if "secret" in volume and mount["mountPath"].rstrip("/") == path.rstrip("/"):
                return volume["secret"]["secretName"]
        return ""

    def sync_certs(self) -> None:
        """As the kubelet keeps a Secret volume current: the webhook certificates the controller
        writes into its Secret appear in its certificate directory, where it waits for them."""
        if not self.cert_secret:
            return
        secret = self.api.get(f"/api/v1/namespaces/{LWS_NAMESPACE}/secrets/{self.cert_secret}") or {}
        for key, value in (secret.get("data") or {}).items():
            path = os.path.join(self.run_dir, "certs", key)
            data = base64.b64decode(value)
            try:
                with open(path, "rb") as handle:
                    if handle.read() == data:
                        continue
            except FileNotFoundError:
                pass
            with open(path + ".new", "wb") as handle:
                os.fchmod(handle.fileno(), 0o600)
                handle.write(data)
            os.replace(path + ".new", path)

    def start(self, pod: dict) -> None:
        config = self.config_for(pod)
        log = open(self.log_path, "ab")  # pylint: disable=consider-using-with
        log.write(f"== agent: starting the LWS controller for pod {pod['metadata']['name']}\n".encode())
        log.flush()
        self.process = subprocess.Popen(  # pylint: disable=consider-using-with
            [self.args.lws_bin, f"--config={config}", f"--kubeconfig={self.args.state}/kubeconfig"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.pod_uid = pod["metadata"]["uid"]
        self.started = time.monotonic()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
        self.pod_uid = ""

    def reconcile(self) -> None:
        pod = self.wanted_pod()
        if pod is None:
            self.stop()
            return
        if pod["metadata"]["uid"] != self.pod_uid:
            self.stop()
            self.backoff = 1.0
            self.start(pod)
        self.sync_certs()
        if self.process and self.process.poll() is not None:
            # It exited (say, a CRD not there yet): restart it, backing off up to 10 s.
            if time.monotonic() - self.started >= self.backoff:
                self.backoff = min(self.backoff * 2, 10.0)
                self.start(pod)

    def serves(self, namespace: str, service: dict) -> bool:
        """Whether this Service selects the pod the controller runs for."""
        if not self.pod_uid or namespace != LWS_NAMESPACE or not self.process or self.process.poll() is not None:
            return False
        selector = service["spec"].get("selector") or {}
        pod = next((p for p in (self.api.get(f"/api/v1/namespaces/{namespace}/pods") or {"items": []})["items"]
                    if p["metadata"]["uid"] == self.pod_uid), None)
        labels = (pod or {}).get("metadata", {}).get("labels") or {}
        return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class Egress(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, api: Api, controller: Controller) -> None:
        self.api = api
        self.controller = controller
        super().__init__(path, EgressHandler)

    def backend(self, host: str, port: int) -> tuple[str, int] | None:
        """The loopback address behind a Service's ClusterIP and port, if this agent runs it."""
        services = self.api.get("/api/v1/services") or {"items": []}
        for service in services["items"]:
            if service["spec"].get("clusterIP") != host:
                continue
            for item in service["spec"].get("ports", []):
                if item["port"] == port and item.get("targetPort", port) in WEBHOOK_TARGET_PORTS:
                    if self.controller.serves(service["metadata"]["namespace"], service):
                        return "127.0.0.1", self.controller.args.ports[0]
        return None


class EgressHandler(socketserver.StreamRequestHandler):
    # Unbuffered: nothing past the CONNECT request may be read ahead of the tunnel.
    rbufsize = 0

    def handle(self) -> None:
        request = self.rfile.readline(4096).decode("latin-1").split()
        while self.rfile.readline(4096) not in (b"\r\n", b"\n", b""):
            pass
        if len(request) < 2 or request[0] != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        host, port = request[1].rsplit(":", 1)
        target = self.server.backend(host.strip("[]"), int(port))
        if target is None:
            self.wfile.write(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")
            return
        try:
            upstream = socket.create_connection(target, timeout=10)
        except OSError:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            return
        upstream.settimeout(None)
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        pump = threading.Thread(target=splice, args=(upstream, self.connection), daemon=True)
        pump.start()
        splice(self.connection, upstream)
        pump.join(60)


def splice(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes one way until either side closes."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (sink, source):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", required=True)
    parser.add_argument("--lws-bin", required=True)
    parser.add_argument("--lws-version", required=True)
    parser.add_argument("--ports", required=True, type=lambda s: tuple(int(p) for p in s.split(",")))
    args = parser.parse_args()

    api = Api(args.state)
    controller = Controller(args, api)
    socket_path = os.path.join(args.state, "egress.sock")
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    egress = Egress(socket_path, api, controller)
    threading.Thread(target=egress.serve_forever, daemon=True).start()

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    last_answer = time.monotonic()
    while not stopping.wait(1.0):
        try:
            controller.reconcile()
            last_answer = time.monotonic()
        except (OSError, urllib.error.URLError, ValueError) as error:
            if time.monotonic() - last_answer > API_GIVE_UP:
                print(f"agent: the API server has not answered for {API_GIVE_UP} s ({error}); stopping", flush=True)
                break
    controller.stop()
    egress.shutdown()
    os.unlink(socket_path)


if __name__ == "__main__":
    main()
