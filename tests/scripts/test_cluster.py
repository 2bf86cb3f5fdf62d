"""scripts/cluster.sh end to end: cache_server nodes behind a real nginx (and HAProxy) front that
shards keys by consistent hashing, and bench_client's own placement checked against nginx's.

The nodes run in network namespaces of their own (one per node, veth pairs to a bridge, private
10.x addresses that only the namespaces this test creates use): `cluster.sh up --netns`. Where
namespaces cannot be created (not root, no CAP_NET_ADMIN), the netns cases are skipped with the
reason and the same checks run on loopback ports; where they can, both run. Every cluster is
stopped at the end, also on failure, and the test checks that its processes and namespaces are
gone. Each node answers with X-Served-By (--served-by on), which is how a test sees which node
answered through the front.
"""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cluster.sh"
BUILD = Path(os.environ.get("EXPERIMENT_TEST_BUILD", ROOT / "build" / "release"))
SERVER = BUILD / "server" / "cache_server"
CLIENT = BUILD / "client" / "bench_client"
WEIGHT = 10  # cluster.sh's default weight, and bench_client's --target-weight default
TIMEOUT_S = 60


def netns_unavailable():
    if os.geteuid() != 0:
        return "network namespaces need root"
    name = f"cltest-probe-{os.getpid()}"
    p = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, timeout=10)
    if p.returncode != 0:
        return f"cannot create a network namespace: {p.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
    return None


NETNS_SKIP = netns_unavailable()
MODES = [pytest.param("netns", marks=pytest.mark.skipif(
             NETNS_SKIP is not None, reason=f"{NETNS_SKIP}: the checks run on loopback instead")),
         "loopback"]


def missing(front="nginx"):
    for binary in (SERVER,):
        if not binary.exists():
            return f"no {binary} (build it; EXPERIMENT_TEST_BUILD names another build directory)"
    if subprocess.run(["which", front], capture_output=True).returncode != 0:
        return f"{front} is not installed (bash scripts/setup.sh --peers)"
    return None


class Cluster:
    def __init__(self, tmp_path, n, front="nginx", mode="loopback", server_flags=(),
                 store_dir=None, up_args=()):
        self.dir = tmp_path / "cluster"
        self.env = dict(os.environ, CLUSTER_DIR=str(self.dir), CACHE_SERVER=str(SERVER))
        args = ["up", str(n), "--front", front, *map(str, up_args)]
        if mode == "netns":
            args.append("--netns")
        if store_dir is not None:
            args += ["--store-dir", str(store_dir)]
        args += ["--", "-t", "1", *server_flags]
        out = self.run(*args).stdout.split("\n")
        assert out[0].startswith("front "), out
        self.front = out[0].split()[1]
        self.nodes = []  # (HOST:PORT, PID)
        for i, line in enumerate(out[1:1 + n], start=1):
            word, idx, addr, pid = line.split()
            assert (word, int(idx)) == ("node", i), line
            self.nodes.append((addr, int(pid)))
        assert out[1 + n:] == [""], out
        self.conn = None

    def run(self, *args, check=True):
        p = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                           env=self.env, timeout=TIMEOUT_S)
        if check:
            assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p

    def request(self, method, path, body=None, addr=None):
        """One request through the front (or to addr) on a kept-alive connection:
        (status, X-Served-By, body)."""
        if addr is not None:
            c = connect(addr)
            try:
                c.request(method, path, body=body)
                r = c.getresponse()
                return r.status, r.getheader("X-Served-By"), r.read()
            finally:
                c.close()
        for attempt in range(2):
            if self.conn is None:
                self.conn = connect(self.front)
            try:
                self.conn.request(method, path, body=body)
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, r.getheader("X-Served-By"), data
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def served_by(self, key):
        status, node, _ = self.request("GET", "/key/" + urllib.parse.quote(key, safe=""))
        assert status in (200, 404), (key, status)
        return node

    def down(self):
        if self.conn is not None:
            self.conn.close()
        p = self.run("down", check=False)
        pids = [pid for _, pid in self.nodes]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(alive(pid) for pid in pids):
            time.sleep(0.1)
        leftovers = [pid for pid in pids if alive(pid)]
        for pid in leftovers:
            os.kill(pid, signal.SIGKILL)
        assert p.returncode == 0, p.stderr
        assert not leftovers, f"nodes still running after down: {leftovers}"
        assert not (self.dir / "state").exists()
        namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True,
                                    text=True).stdout
        assert f"cn{self.tag()}-" not in namespaces, namespaces

    def tag(self):
        """The namespace tag cluster.sh derives from its state directory (cksum of the path)."""
        out = subprocess.run(["cksum"], input=str(self.dir.resolve()), capture_output=True,
                             text=True).stdout
        return "%05d" % (int(out.split()[0]) % 100000)


def connect(addr):
    """A kept-alive HTTP connection with Nagle off (http.client writes a body apart from the
    head: with Nagle, each such request would wait out a delayed ACK)."""
    c = http.client.HTTPConnection(addr, timeout=10)
    c.connect()
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours is not running
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.fixture
def cluster(tmp_path):
    started = []

    def start(n, front="nginx", mode="loopback", server_flags=(), store_dir=None, up_args=()):
        why = missing(front)
        if why:
            pytest.skip(why)
        c = Cluster(tmp_path / f"c{len(started)}", n, front, mode, server_flags, store_dir,
                    up_args)
        started.append(c)
        return c

    yield start
    for c in started:
        c.down()


def random_keys(n, seed, alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~:"):
    """n random keys; never "." or "..": nginx resolves such a path segment before hashing (a
    documented limit, docs/cluster.md "What is hashed")."""
    rng = random.Random(seed)
    keys = []
    while len(keys) < n:
        k = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        if k not in (".", ".."):
            keys.append(k)
    return keys


def percent_encode_all(key):
    return "".join("%%%02X" % b for b in key.encode())


@pytest.mark.parametrize("mode", MODES)
def test_a_key_always_lands_on_the_same_node(cluster, mode):
    c = cluster(3, mode=mode)
    nodes = {addr for addr, _ in c.nodes}
    keys = random_keys(300, seed=1)
    first = {}
    for k in keys:
        status, node, _ = c.request("PUT", "/key/" + urllib.parse.quote(k, safe=""), body=b"v-" + k.encode())
        assert status in (200, 201, 204), (k, status)
        assert node in nodes
        first[k] = node
    for k in keys:
        status, node, body = c.request("GET", "/key/" + urllib.parse.quote(k, safe=""))
        assert (status, node, body) == (200, first[k], b"v-" + k.encode()), k
    used = set(first.values())
    assert used == nodes, f"300 keys should reach all 3 nodes: {used}"
    # Each key lives on exactly one node: the other nodes miss it.
    for k in keys[:60]:
        for addr, _ in c.nodes:
            status, _, _ = c.request("GET", "/key/" + urllib.parse.quote(k, safe=""), addr=addr)
            assert status == (200 if addr == first[k] else 404), (k, addr)


@pytest.mark.parametrize("front", ["nginx", "haproxy"])
@pytest.mark.parametrize("mode", MODES)
def test_both_percent_encodings_of_a_key_land_on_the_same_node(cluster, mode, front):
    c = cluster(3, front=front, mode=mode)
    keys = random_keys(200, seed=2) + ["A", "a b", "x/y", "100%", "k+v", "caf\u00e9"]
    for k in keys:
        plain = urllib.parse.quote(k, safe="+:~")  # as little encoding as HTTP allows
        every = percent_encode_all(k)             # every byte %XX-encoded
        status, node, _ = c.request("PUT", "/key/" + plain, body=b"value")
        assert status in (200, 201, 204), (k, status)
        status, node2, body = c.request("GET", "/key/" + every)
        assert (status, node2, body) == (200, node, b"value"), (k, plain, every)


@pytest.mark.parametrize("front", ["nginx", "haproxy"])
@pytest.mark.parametrize("mode", MODES)
def test_the_course_form_put_reaches_the_keys_node(cluster, mode, front):
    """PUT /key/K/V stores V under K: it must reach the node GET /key/K reads from."""
    c = cluster(3, front=front, mode=mode)
    for k in random_keys(150, seed=8) + ["a%2Fb"]:
        status, node, _ = c.request("PUT", f"/key/{urllib.parse.quote(k, safe='%')}/v-{len(k)}")
        assert status in (201, 204), (k, status)
        status, node2, body = c.request("GET", "/key/" + urllib.parse.quote(k, safe="%"))
        assert (status, node2, body) == (200, node, f"v-{len(k)}".encode()), k


@pytest.mark.parametrize("front", ["nginx", "haproxy"])
@pytest.mark.parametrize("mode", MODES)
def test_a_boards_members_all_live_on_one_node(cluster, mode, front):
    c = cluster(3, front=front, mode=mode)
    homes = {}
    for b in ["b0", "b1", "b2", "b7", "weekly", "%62oard"]:
        name = urllib.parse.unquote(b)
        seen = set()
        for m in range(40):
            status, node, _ = c.request("PUT", f"/board/{b}/member/m{m}?op=set", body=str(m).encode())
            assert status in (200, 201), (b, m, status)
            seen.add(node)
        status, node, body = c.request("GET", f"/board/{b}/top?n=100")
        assert status == 200 and seen == {node}, (b, seen, node)
        assert json.loads(body)["members"] == 40
        homes[name] = node
        for addr, _ in c.nodes:  # the other nodes know nothing of the board
            status, _, _ = c.request("GET", f"/board/{urllib.parse.quote(name)}/top", addr=addr)
            assert status == (200 if addr == node else 404), (b, addr)
    assert len(set(homes.values())) >= 2, f"6 boards all on one node: {homes}"


def client_placement(targets, keys):
    args = [str(CLIENT), "place", "--targets", ",".join(targets), "--target-weight", str(WEIGHT)]
    p = subprocess.run(args, input="".join(k + "\n" for k in keys), capture_output=True,
                       text=True, timeout=TIMEOUT_S)
    assert p.returncode == 0, p.stderr
    out = p.stdout.split("\n")
    assert out[-1] == "" and len(out) == len(keys) + 1, p.stdout[-500:]
    return out[:-1]


@pytest.mark.parametrize("mode", MODES)
def test_client_placement_equals_nginx_for_10000_keys(cluster, mode):
    if not CLIENT.exists():
        pytest.skip(f"no {CLIENT}")
    c = cluster(4, mode=mode)
    targets = [addr for addr, _ in c.nodes]
    keys = random_keys(10_000, seed=3)
    ours = client_placement(targets, keys)
    differ = [(k, mine) for k, mine in zip(keys, ours) if c.served_by(k) != mine]
    assert not differ, f"{len(differ)} of 10000 keys placed differently, e.g. {differ[:5]}"
    boards = [f"b{i}" for i in range(200)]
    ours = client_placement(targets, boards)
    for b, mine in zip(boards, ours):
        status, node, _ = c.request("GET", f"/board/{b}/top")
        assert status == 404 and node == mine, (b, node, mine)


@pytest.mark.parametrize("mode", MODES)
def test_removing_one_node_of_four_moves_only_its_keys(cluster, mode):
    c = cluster(4, mode=mode)
    keys = random_keys(8_000, seed=4)
    before = {k: c.served_by(k) for k in keys}
    removed_addr = c.nodes[1][0]
    c.run("remove", "2")
    c.conn = None  # a fresh connection reaches a worker of the new configuration
    after = {k: c.served_by(k) for k in keys}
    moved = [k for k in keys if after[k] != before[k]]
    share = len(moved) / len(keys)
    assert 0.22 <= share <= 0.28, f"{share:.3f} of the keys moved (want 25% +- 3 points)"
    assert all(before[k] == removed_addr for k in moved), "a key of a remaining node moved"
    assert removed_addr not in after.values()
    c.run("add", "2")
    c.conn = None
    again = {k: c.served_by(k) for k in keys}
    assert again == before, "adding the node back did not restore the placement"


@pytest.mark.parametrize("mode", MODES)
def test_a_killed_node_fails_fast_and_live_nodes_keep_answering(cluster, mode):
    c = cluster(3, mode=mode)
    keys = random_keys(600, seed=5)
    home = {}
    for k in keys:
        status, node, _ = c.request("PUT", "/key/" + urllib.parse.quote(k, safe=""), body=b"v")
        assert status in (200, 201, 204)
        home[k] = node
    dead_addr, dead_pid = c.nodes[0]
    os.kill(dead_pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(dead_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    for _ in range(2):  # twice: nginx never marks the node failed (max_fails=0)
        for k in keys:
            status, node, body = c.request("GET", "/key/" + urllib.parse.quote(k, safe=""))
            if home[k] == dead_addr:
                assert (status, node) == (502, None), (k, status, node)  # fail fast, no failover
            else:
                assert (status, node, body) == (200, home[k], b"v"), (k, status, node)


def test_stats_and_reset(cluster):
    c = cluster(2)
    for k in random_keys(50, seed=6):
        c.request("PUT", "/key/" + urllib.parse.quote(k, safe=""), body=b"v")
    out = c.run("stats").stdout.strip().split("\n")
    assert len(out) == 3
    per_node = [json.loads(line.split(" ", 3)[3]) for line in out[:2]]
    assert [line.split()[:3] for line in out[:2]] == [["node", str(i + 1), a] for i, (a, _) in
                                                       enumerate(c.nodes)]
    assert out[2].startswith("sum ")
    total = json.loads(out[2][4:])
    assert total["items"] == sum(s["items"] for s in per_node) == 50
    assert total["sets"] == 50
    assert c.run("reset").stdout.split("\n")[:2] == [f"node {i + 1} {a} reset" for i, (a, _) in
                                                     enumerate(c.nodes)]
    total = json.loads(c.run("stats").stdout.strip().split("\n")[-1][4:])
    assert total["items"] == 0


def test_store_dir_gives_each_node_its_own_rocksdb(cluster, tmp_path):
    stores = tmp_path / "stores"
    c = cluster(2, store_dir=stores)
    keys = random_keys(40, seed=7)
    for k in keys:
        assert c.request("PUT", "/key/" + urllib.parse.quote(k, safe=""), body=b"d")[0] == 201
    assert sorted(p.name for p in stores.iterdir()) == ["node1", "node2"]
    assert all((stores / n / "CURRENT").exists() for n in ("node1", "node2"))
    out = c.run("stats").stdout.strip().split("\n")
    assert json.loads(out[-1][4:])["items"] == 40


ADMIN_TOKEN = "cluster-admin-token-0123456789"


def test_every_node_gets_the_admin_token_and_reset_sends_it(cluster, tmp_path):
    """up --admin-token-file: each node requires the token for the full reset (with a store,
    which would otherwise refuse it), and `cluster.sh reset` sends it to every node."""
    token_file = tmp_path / "admin.token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    c = cluster(2, store_dir=tmp_path / "stores", up_args=["--admin-token-file", token_file])
    for k in random_keys(30, seed=9):
        c.request("PUT", "/key/" + urllib.parse.quote(k, safe=""), body=b"v")
    for addr, _ in c.nodes:
        status, _, body = c.request("POST", "/reset", addr=addr)
        assert status == 401, (addr, status, body)  # the node has the token: none was sent
    assert json.loads(c.run("stats").stdout.strip().split("\n")[-1][4:])["items"] == 30
    for i in (1, 2):
        assert "reset=token" in (c.dir / f"node{i}.log").read_text()
    assert ADMIN_TOKEN not in (c.dir / "state").read_text()  # the path is kept, not the token
    out = c.run("reset").stdout.split("\n")
    assert out[:2] == [f"node {i + 1} {a} reset" for i, (a, _) in enumerate(c.nodes)]
    assert json.loads(c.run("stats").stdout.strip().split("\n")[-1][4:])["items"] == 0


def make_certificate(tmp_path):
    """A throwaway self-signed certificate for 127.0.0.1 (openssl): (cert, key)."""
    cert, key = tmp_path / "front.crt", tmp_path / "front.key"
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                        "subjectAltName=IP:127.0.0.1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return cert, key


def curl(*args):
    """curl's (exit code, HTTP status, body) for one request."""
    p = subprocess.run(["curl", "-sS", "--max-time", "10", "-w", "\n%{http_code}", *map(str, args)],
                       capture_output=True, text=True, timeout=30)
    body, _, code = p.stdout.rpartition("\n")
    return p.returncode, int(code or 0), body


@pytest.mark.parametrize("front", ["nginx", "haproxy"])
def test_tls_at_the_front(cluster, tmp_path, front):
    if shutil.which("openssl") is None or shutil.which("curl") is None:
        pytest.skip("openssl and curl are needed")
    cert, key = make_certificate(tmp_path)
    c = cluster(2, front=front, up_args=["--tls", cert, key])
    url = f"https://{c.front}"
    assert curl("--cacert", cert, url + "/stats")[:2] == (0, 200)
    assert curl("--cacert", cert, "-X", "PUT", "--data-binary", "over-tls", url + "/key/t")[:2] \
        == (0, 201)
    assert curl("--cacert", cert, url + "/key/t") == (0, 200, "over-tls")
    # The certificate is checked: without its CA, curl refuses the front.
    assert curl(url + "/stats")[0] != 0
    # Plain HTTP to the TLS port fails: nginx answers 400, HAProxy drops the connection.
    code, status, _ = curl(f"http://{c.front}/stats")
    assert status != 200 and (code != 0 or status == 400), (code, status)
    if front == "haproxy":  # its crt file holds the key: readable by its owner only
        assert (c.dir / "front.pem").stat().st_mode & 0o077 == 0
    c.down()
    assert not (c.dir / "front.pem").exists()  # the key's copy goes with the cluster


@pytest.mark.parametrize("args,message", [
    ([], "want up, down"),
    (["up"], "number of nodes"),
    (["up", "0"], "1..64"),
    (["up", "2", "--front", "squid"], "nginx or haproxy"),
    (["up", "2", "--weight", "0"], "--weight"),
    (["up", "2", "--bogus"], "unknown argument"),
    (["up", "2", "--tls", "cert.pem"], "--tls needs a certificate and a key"),
    (["up", "2", "--tls", "/nonexistent.crt", "/nonexistent.key"], "cannot read the --tls file"),
    (["up", "2", "--admin-token-file"], "--admin-token-file needs a file"),
    (["up", "2", "--admin-token-file", "/nonexistent/token"], "cannot read --admin-token-file"),
    (["stats"], "no cluster is up"),
    (["remove", "1"], "no cluster is up"),
    (["fly"], "unknown command"),
])
def test_usage_errors(tmp_path, args, message):
    env = dict(os.environ, CLUSTER_DIR=str(tmp_path / "none"))
    p = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env,
                       timeout=30)
    assert p.returncode in (1, 2), p
    assert message in p.stderr, p.stderr


def test_help_names_every_command():
    p = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0
    for word in ("up N", "down", "stats", "reset", "remove I", "add I", "--front", "--store-dir",
                 "--netns", "--weight", "--admin-token-file", "--tls CERT KEY"):
        assert word in p.stdout, word
