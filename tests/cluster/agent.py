#!/usr/bin/env python
"""The live test cluster's node agent: what a kubelet and kube-proxy would do for the workloads
that kwok cannot fake, the controllers (LeaderWorkerSet, the NIM Operator), whose webhooks must
really answer.

kwok gives every pod on the fake nodes a Running status and nothing more. That is enough for the
NIM pods, but not for the controllers the roles install: without them no LeaderWorkerSet or
NIMService gets pods, and without their webhooks (LWS's pod webhook included) nothing is admitted.
So this agent:

* runs each real controller binary, built from the same source as its release, for as long as the
  cluster has a Running pod of its release image: installing it (manifest or Helm chart) starts it,
  a rollout of the Deployment (a new pod) restarts it with what the new pod carries, removing it
  stops it. Listen addresses are moved to loopback ports of this cluster; everything else comes
  from the pod (its mounted configuration, its arguments and environment, its certificate Secret).
  - LWS (`registry.k8s.io/lws/lws:<version>` in lws-system): its ConfigMap, its own certificates.
  - The NIM Operator (`nvcr.io/nvidia/cloud-native/k8s-nim-operator:<version>`, any namespace): its
    arguments and environment (webhooks as the chart enables them), its certificate Secret. It reads
    its templates from a hard-coded /manifests: it runs in a mount namespace of its own whose root
    is the machine's with the source tree's manifests/ bound at /manifests; the machine's root is
    not touched. Its webhook server listens on controller-runtime's fixed :9443.
* serves the API server's egress to "the cluster" (webhook calls) on a Unix socket, as an HTTP
  CONNECT proxy: a connection to a Service's ClusterIP and port goes to the local process that
  runs the Service's pod, and nowhere else. No packet leaves loopback.
* answers, as the kubelet would, the API server's requests for a container's log on a fake node
  (`kubectl logs`, the NIM Operator reading what its model-manifest pod printed): with what a test
  put in <state>/container-logs/<image>, the image reference with `/` and `:` as `_`, or nothing.

  agent.py --state build/k8s --lws-bin BIN --lws-version v0.10.0 --ports WEBHOOK,PROBE
           [--operator-bin BIN --operator-image REPO:TAG --operator-manifests DIR --operator-ports PROBE,METRICS]

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
KUBELET_PORT = 10250  # what kwok reports as the fake nodes' kubelet endpoint
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # controller-runtime's default, LWS's too
OPERATOR_WEBHOOK_PORT = 9443  # controller-runtime's default; the NIM Operator has no flag for it
API_GIVE_UP = 120
# The NIM Operator's own root: the machine's top-level directories bound in, plus /manifests, and
# a /run of its own with the pod's service account credentials where client-go looks for them.
OPERATOR_ROOT_SCRIPT = r"""
root=$1 manifests=$2 account=$3
shift 3
mount -t tmpfs -o mode=0755 nimstack-nim-operator "$root"
for entry in /*; do
  name=${entry#/}
  case $name in manifests | run) continue ;; esac
  if [ -L "$entry" ]; then
    ln -s "$(readlink "$entry")" "$root/$name"
  elif [ -d "$entry" ]; then
    mkdir "$root/$name"
    mount --rbind "$entry" "$root/$name"
  fi
done
mkdir "$root/manifests"
mount --bind "$manifests" "$root/manifests"
mount -o remount,bind,ro "$root/manifests"
mkdir -p "$root/run/secrets/kubernetes.io/serviceaccount"
mount --bind "$account" "$root/run/secrets/kubernetes.io/serviceaccount"
exec chroot "$root" "$@"
"""


class Api:
    """The few read calls the agent makes, with the cluster's admin client certificate."""

    def __init__(self, state: str) -> None:
        with open(os.path.join(state, "kubeconfig"), encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        self.server = config["clusters"][0]["cluster"]["server"]
        pki = os.path.join(state, "pki")
        self.context = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.context.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def get(self, path: str, body: dict | None = None) -> dict | None:
        """GET path, or POST body to it."""
        request = urllib.request.Request(self.server + path)
        if body is not None:
            request.data = json.dumps(body).encode()
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise


class Controller:
    """One real controller process, for the Running pod of its release image it stands for."""

    name = ""
    image = ""
    namespace = ""  # empty: the pod may be in any namespace (a Helm release's)

    def __init__(self, args: argparse.Namespace, api: Api) -> None:
        self.args = args
        self.api = api
        self.pod: dict = {}
        self.cert_secret = ""
        self.process: subprocess.Popen | None = None
        self.started = 0.0
        self.backoff = 1.0
        self.log_path = os.path.join(args.state, "logs", f"{self.name}-controller.log")
        self.run_dir = os.path.join(args.state, self.name)
        os.makedirs(self.cert_dir(), exist_ok=True)

    def cert_dir(self) -> str:
        return os.path.join(self.run_dir, "certs")

    def pods(self) -> list[dict]:
        where = f"/api/v1/namespaces/{self.namespace}/pods" if self.namespace else "/api/v1/pods"
        return (self.api.get(where) or {"items": []})["items"]

    def container(self, pod: dict) -> dict:
        return next(c for c in pod["spec"]["containers"] if c.get("image") == self.image)

    def wanted_pod(self) -> dict | None:
        running = [
            pod for pod in self.pods()
            if pod["status"].get("phase") == "Running"
            and not pod["metadata"].get("deletionTimestamp")
            and any(c.get("image") == self.image for c in pod["spec"]["containers"])
        ]
        running.sort(key=lambda pod: pod["metadata"]["creationTimestamp"])
        return running[-1] if running else None

    def command(self, pod: dict) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run the controller for this pod."""
        raise NotImplementedError

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
        """As the kubelet keeps a Secret volume current: the webhook certificates in the pod's
        Secret (the controller's own, or the site's) appear in its certificate directory."""
        if not self.cert_secret:
            return
        namespace = self.pod["metadata"]["namespace"]
        secret = self.api.get(f"/api/v1/namespaces/{namespace}/secrets/{self.cert_secret}") or {}
        for key, value in (secret.get("data") or {}).items():
            path = os.path.join(self.cert_dir(), key)
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
        self.pod = pod
        argv, env = self.command(pod)
        self.sync_certs()
        log = open(self.log_path, "ab")  # pylint: disable=consider-using-with
        log.write(f"== agent: starting the {self.name} controller for pod {pod['metadata']['name']}\n".encode())
        log.flush()
        self.process = subprocess.Popen(  # pylint: disable=consider-using-with
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
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
        self.pod = {}

    def reconcile(self) -> None:
        pod = self.wanted_pod()
        if pod is None:
            self.stop()
            return
        if pod["metadata"]["uid"] != self.pod.get("metadata", {}).get("uid"):
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
        if not self.pod or not self.process or self.process.poll() is not None:
            return False
        if namespace != self.pod["metadata"]["namespace"]:
            return False
        selector = service["spec"].get("selector") or {}
        uid = self.pod["metadata"]["uid"]
        pod = next((p for p in (self.api.get(f"/api/v1/namespaces/{namespace}/pods") or {"items": []})["items"]
                    if p["metadata"]["uid"] == uid), None)
        labels = (pod or {}).get("metadata", {}).get("labels") or {}
        return bool(selector) and all(labels.get(k) == v for k, v in selector.items())

    def webhook_port(self) -> int:
        raise NotImplementedError


class LwsController(Controller):
    """The LeaderWorkerSet controller, configured by the ConfigMap its pod mounts."""

    name = "lws"
    namespace = LWS_NAMESPACE

    def __init__(self, args: argparse.Namespace, api: Api) -> None:
        self.image = f"{LWS_IMAGE}:{args.lws_version}"
        super().__init__(args, api)

    def webhook_port(self) -> int:
        return self.args.ports[0]

    def command(self, pod: dict) -> tuple[list[str], dict[str, str]]:
        """The pod's mounted controller configuration, its listen addresses moved to loopback."""
        container = self.container(pod)
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
            {"port": webhook_port, "host": "127.0.0.1", "certDir": self.cert_dir()})
        config.setdefault("health", {})["healthProbeBindAddress"] = f"127.0.0.1:{probe_port}"
        config.setdefault("metrics", {})["bindAddress"] = "0"
        # One controller at a time by construction: no lease to wait for after a restart.
        config.setdefault("leaderElection", {})["leaderElect"] = False
        path = os.path.join(self.run_dir, f"config-{pod['metadata']['uid']}.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle)
        return [self.args.lws_bin, f"--config={path}", f"--kubeconfig={self.args.state}/kubeconfig"], dict(os.environ)


class OperatorController(Controller):
    """The NIM Operator's manager, with the arguments and environment its chart gave the pod."""

    name = "nim-operator"

    def __init__(self, args: argparse.Namespace, api: Api) -> None:
        self.image = args.operator_image
        super().__init__(args, api)

    def cert_dir(self) -> str:
        # controller-runtime's default is $TMPDIR/k8s-webhook-server/serving-certs.
        return os.path.join(self.run_dir, "tmp", "k8s-webhook-server", "serving-certs")

    def webhook_port(self) -> int:
        return OPERATOR_WEBHOOK_PORT

    def command(self, pod: dict) -> tuple[list[str], dict[str, str]]:
        container = self.container(pod)
        self.cert_secret = self.secret_at(pod, container, CERT_DIR)
        probe_port, metrics_port = self.args.operator_ports
        moved = {"--health-probe-bind-address": f"127.0.0.1:{probe_port}",
                 "--metrics-bind-address": f"127.0.0.1:{metrics_port}"}
        args = []
        for arg in container.get("args", []):
            flag = arg.split("=", 1)[0]
            if flag == "--leader-elect":  # one manager at a time by construction, and none in-cluster
                continue
            if flag not in moved:
                args.append(arg)
        args += ["%s=%s" % item for item in moved.items()]
        args.append(f"--kubeconfig={self.service_account(pod)}")
        server = self.api.server.split("://", 1)[1]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": os.path.join(self.run_dir, "tmp"),
               # As in a pod: its NIMService webhook reads the in-cluster configuration.
               "KUBERNETES_SERVICE_HOST": server.rsplit(":", 1)[0], "KUBERNETES_SERVICE_PORT": server.rsplit(":", 1)[1]}
        for item in container.get("env", []):
            if "value" in item:
                env[item["name"]] = item["value"]
            elif (item.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                env[item["name"]] = pod["metadata"]["namespace"]
        root = os.path.join(self.run_dir, "root")
        os.makedirs(root, exist_ok=True)
        argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-ec", OPERATOR_ROOT_SCRIPT, "sh",
                root, self.args.operator_manifests, os.path.join(self.run_dir, "serviceaccount"),
                self.args.operator_bin] + args
        return argv, env

    def service_account(self, pod: dict) -> str:
        """As the kubelet projects it: a token of the pod's ServiceAccount (so the operator works with
        the RBAC its chart grants), the cluster CA and the namespace, in the files client-go reads in a
        pod, and a kubeconfig with the same token. Returns that kubeconfig's path."""
        namespace = pod["metadata"]["namespace"]
        account = pod["spec"].get("serviceAccountName") or "default"
        reply = self.api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                              "spec": {"expirationSeconds": 86400}}) or {}
        token = reply["status"]["token"]
        directory = os.path.join(self.run_dir, "serviceaccount")
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(self.args.state, "pki", "ca.crt"), encoding="utf-8") as handle:
            ca = handle.read()
        for name, text in (("token", token), ("ca.crt", ca), ("namespace", namespace)):
            with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                os.fchmod(handle.fileno(), 0o600)
                handle.write(text)
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "operator",
                  "clusters": [{"name": "cluster", "cluster": {
                      "server": self.api.server, "certificate-authority": os.path.join(directory, "ca.crt")}}],
                  "users": [{"name": account, "user": {"tokenFile": os.path.join(directory, "token")}}],
                  "contexts": [{"name": "operator", "context": {"cluster": "cluster", "user": account}}]}
        path = os.path.join(self.run_dir, "kubeconfig")
        with open(path, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            yaml.safe_dump(config, handle)
        return path


class Egress(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, api: Api, controllers: list[Controller], state: str) -> None:
        self.api = api
        self.controllers = controllers
        self.state = state
        # The fake kubelet's serving certificate: the API server does not check kubelets' by default.
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(os.path.join(state, "pki", "apiserver.crt"), os.path.join(state, "pki", "apiserver.key"))
        super().__init__(path, EgressHandler)

    def is_node(self, host: str, port: int) -> bool:
        """Whether host:port is the kubelet endpoint of a node of the cluster."""
        if port != KUBELET_PORT:
            return False
        nodes = self.api.get("/api/v1/nodes") or {"items": []}
        return any(a.get("address") == host for n in nodes["items"] for a in n["status"].get("addresses", []))

    def container_log(self, path: str) -> bytes:
        """What /containerLogs/<namespace>/<pod>/<container> answers: the file kept for its image."""
        parts = path.split("?", 1)[0].strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            return b""
        pod = self.api.get(f"/api/v1/namespaces/{parts[1]}/pods/{parts[2]}") or {}
        image = next((c.get("image", "") for c in (pod.get("spec") or {}).get("containers", [])
                      if c.get("name") == parts[3]), "")
        name = image.replace("/", "_").replace(":", "_")
        try:
            with open(os.path.join(self.state, "container-logs", name), "rb") as handle:
                return handle.read()
        except (FileNotFoundError, IsADirectoryError):
            return b""

    def backend(self, host: str, port: int) -> tuple[str, int] | None:
        """The loopback address behind a Service's ClusterIP and port, if this agent runs it."""
        services = self.api.get("/api/v1/services") or {"items": []}
        for service in services["items"]:
            if service["spec"].get("clusterIP") != host:
                continue
            for item in service["spec"].get("ports", []):
                if item["port"] == port and item.get("targetPort", port) in WEBHOOK_TARGET_PORTS:
                    for controller in self.controllers:
                        if controller.serves(service["metadata"]["namespace"], service):
                            return "127.0.0.1", controller.webhook_port()
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
        if self.server.is_node(host.strip("[]"), int(port)):
            self.kubelet()
            return
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

    def kubelet(self) -> None:
        """One request to a fake node's kubelet, over TLS inside the tunnel: a container's log."""
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        try:
            with self.server.tls.wrap_socket(self.connection, server_side=True) as tls:
                reader = tls.makefile("rb")
                request = reader.readline(8192).decode("latin-1").split()
                while reader.readline(8192) not in (b"\r\n", b"\n", b""):
                    pass
                body = self.server.container_log(request[1]) if len(request) > 1 and request[0] == "GET" else b""
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                            b"Connection: close\r\n\r\n%s" % (len(body), body))
        except (OSError, ssl.SSLError):
            pass


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
    parser.add_argument("--lws-bin", default="", help="empty: no LWS controller is run")
    parser.add_argument("--lws-version", default="")
    parser.add_argument("--ports", required=True, type=lambda s: tuple(int(p) for p in s.split(",")))
    parser.add_argument("--operator-bin", default="", help="empty: no NIM Operator is run")
    parser.add_argument("--operator-image", default="")
    parser.add_argument("--operator-manifests", default="")
    parser.add_argument("--operator-ports", type=lambda s: tuple(int(p) for p in s.split(",")), default=(0, 0))
    args = parser.parse_args()

    api = Api(args.state)
    controllers: list[Controller] = []
    if args.lws_bin:
        controllers.append(LwsController(args, api))
    if args.operator_bin:
        controllers.append(OperatorController(args, api))
    socket_path = os.path.join(args.state, "egress.sock")
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    egress = Egress(socket_path, api, controllers, args.state)
    threading.Thread(target=egress.serve_forever, daemon=True).start()

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    last_answer = time.monotonic()
    while not stopping.wait(1.0):
        try:
            for controller in controllers:
                controller.reconcile()
            last_answer = time.monotonic()
        except (OSError, urllib.error.URLError, ValueError) as error:
            if time.monotonic() - last_answer > API_GIVE_UP:
                print(f"agent: the API server has not answered for {API_GIVE_UP} s ({error}); stopping", flush=True)
                break
    for controller in controllers:
        controller.stop()
    egress.shutdown()
    os.unlink(socket_path)


if __name__ == "__main__":
    main()
