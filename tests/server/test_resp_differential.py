"""Differential test of the RESP front: seeded random command sequences over docs/resp.md's
command list, sent to our front and to a real redis-server started here, once command by
command and once pipelined in batches of 16; every reply must be the same.

The generator keeps clear of our two known differences from Redis: string keys and sorted sets
draw from disjoint name pools (k:* and z:*), and the scores within a set stay distinct (it keeps
a model of every set's scores and redraws a ZADD or ZINCRBY that would tie two members; the
model is checked against Redis's sets after each sequence). Pools are small so that commands
collide. Every TTL is long (over a day) and unique within a sequence, 50 s or more from any
other, so that NX/XX/GT/LT of EXPIRE decide alike on both servers. Scores are halves, which
Redis 7.0 (%.17g) and a shortest-round-trip formatter print alike.

Compared: everything but INFO and CLIENT ID (not at all), TTL within 2 s and PTTL within 2000 ms.
On a mismatch the failure names the seed, the mode, the command (and the ones before it) and
both replies. RESP_DIFF_SEEDS and RESP_DIFF_COMMANDS change the size (default 20 x 200); with
RESP_TARGET=redis "ours" is a second redis-server (the test then checks itself).
"""
from __future__ import annotations

import os
import random
import time

import pytest

from resp_target import Wire, start_redis, stop_checked
from resp_target import shared_resp  # noqa: F401 (the fixture)

SEEDS = int(os.environ.get("RESP_DIFF_SEEDS", "20"))
COMMANDS = int(os.environ.get("RESP_DIFF_COMMANDS", "200"))
BATCH = 16
KEYS = [f"k:{i}" for i in range(6)]
BOARDS = [f"z:{i}" for i in range(3)]
MEMBERS = [f"m{i}" for i in range(7)]
VALUES = [b"", b"v", b"value", b"x" * 100, bytes(range(256)), b"\r\n$1\r\n", b"0", b"-12"]
TOLERANCE = {"TTL": 2, "PTTL": 2000}
ERRORS = [
    ("GET",), ("SET", "k:0"), ("SET", "k:0", "v", "NX", "XX"), ("SET", "k:1", "v", "EX", "x"),
    ("SET", "k:1", "v", "EX", "0"), ("SET", "k:2", "v", "KEEPTTL", "EX", "9"),
    ("SETEX", "k:0", "0", "v"), ("EXPIRE", "k:0", "x"), ("EXPIRE", "k:1", "9", "NX", "XX"),
    ("EXPIRE", "k:1", "9", "GT", "LT"), ("EXPIRE", "k:1", "9", "BOGUS"), ("MSET", "k:0"),
    ("ZADD", "z:0", "1"), ("ZADD", "z:0", "x", "m0"), ("ZADD", "z:0", "NX", "XX", "1", "m0"),
    ("ZADD", "z:0", "GT", "LT", "1", "m0"), ("ZADD", "z:1", "NX", "GT", "1", "m0"),
    ("ZADD", "z:1", "INCR", "1", "m0", "2", "m1"), ("ZADD", "z:2", "1", "m0", "2"),
    ("ZINCRBY", "z:0", "x", "m0"), ("ZRANGE", "z:0", "a", "1"), ("ZRANGE", "z:0", "0", "1", "X"),
    ("ZREVRANGE", "z:0", "0", "1", "REV"), ("ZSCORE", "z:0"), ("SELECT", "1"), ("SELECT", "x"),
    ("NOSUCH",), ("NOSUCH", "a", "b"), ("PING", "a", "b"), ("HELLO", "4"),
]


class Gen:
    """One seed's command sequence. It models each sorted set's scores (to keep them distinct);
    string keys need no model (their replies are compared, their state is not steered)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.sets: dict[str, dict[str, float]] = {}
        self.base = int(time.time())
        self.ttl_slot = 0

    # --- what the commands draw ---------------------------------------------------------

    def key(self):
        return self.rng.choice(KEYS)

    def board(self):
        return self.rng.choice(BOARDS)

    def member(self):
        return self.rng.choice(MEMBERS)

    def value(self):
        return self.rng.choice(VALUES)

    def score(self) -> float:
        return self.rng.randrange(-2000, 2000) / 2

    def names(self, most=4):
        pool = KEYS + BOARDS + ["k:none", "z:none"]
        return [self.rng.choice(pool) for _ in range(self.rng.randint(1, most))]

    def seconds(self) -> int:
        """A TTL in seconds unique in the sequence: 100000 + 100 per draw (over a day)."""
        self.ttl_slot += 1
        return 100000 + 100 * self.ttl_slot

    def expiry(self):
        """SET's expiry option, or none."""
        kind = self.rng.choice(["", "", "EX", "PX", "EXAT", "PXAT", "KEEPTTL"])
        s = self.seconds()
        return {"": [], "KEEPTTL": ["KEEPTTL"], "EX": ["EX", s], "PX": ["PX", s * 1000 + 25],
                "EXAT": ["EXAT", self.base + s + 50],
                "PXAT": ["PXAT", (self.base + s + 75) * 1000]}[kind]

    # --- the sorted-set model -----------------------------------------------------------

    @staticmethod
    def zadd_effect(current: dict, flags: set, pairs: list) -> dict | None:
        """The set after ZADD FLAGS PAIRS under Redis's rules (None: an error reply)."""
        if ("NX" in flags and "XX" in flags) or (
                "NX" in flags and ("GT" in flags or "LT" in flags)) or (
                "GT" in flags and "LT" in flags):
            return None
        if "INCR" in flags and len(pairs) != 1:
            return None
        d = dict(current)
        for score, member in pairs:
            exists = member in d
            if ("NX" in flags and exists) or ("XX" in flags and not exists):
                continue
            new = (d.get(member, 0.0) + score) if "INCR" in flags else score
            if exists and (("GT" in flags and not new > d[member])
                           or ("LT" in flags and not new < d[member])):
                continue
            d[member] = new
        return d

    @staticmethod
    def distinct(d: dict) -> bool:
        return len(set(d.values())) == len(d)

    def zadd(self):
        for _ in range(20):
            z = self.board()
            flags = set()
            if self.rng.random() < 0.4:
                flags.add(self.rng.choice(["NX", "XX"]))
            if self.rng.random() < 0.3 and "NX" not in flags:
                flags.add(self.rng.choice(["GT", "LT"]))
            if self.rng.random() < 0.3:
                flags.add("CH")
            incr = self.rng.random() < 0.2
            if incr:
                flags.add("INCR")
            n = 1 if incr else self.rng.randint(1, 3)
            pairs = [(self.score(), self.member()) for _ in range(n)]
            after = self.zadd_effect(self.sets.get(z, {}), flags, pairs)
            if after is not None and self.distinct(after):
                self.settle(z, after)
                order = [f for f in ("NX", "XX", "GT", "LT", "CH", "INCR") if f in flags]
                self.rng.shuffle(order)
                return ["ZADD", z, *order, *[x for s, m in pairs for x in (fmt(s), m)]]
        return ["ZCARD", self.board()]

    def zincrby(self):
        for _ in range(20):
            z, m, by = self.board(), self.member(), self.score()
            after = self.zadd_effect(self.sets.get(z, {}), {"INCR"}, [(by, m)])
            if self.distinct(after):
                self.settle(z, after)
                return ["ZINCRBY", z, fmt(by), m]
        return ["ZCARD", self.board()]

    def settle(self, z: str, after: dict) -> None:
        if after:
            self.sets[z] = after
        else:
            self.sets.pop(z, None)

    def forget(self, names) -> None:
        for n in names:
            self.sets.pop(n, None)

    def zrem(self):
        z = self.board()
        ms = [self.member() for _ in range(self.rng.randint(1, 3))]
        d = {m: s for m, s in self.sets.get(z, {}).items() if m not in ms}
        self.settle(z, d)
        return ["ZREM", z, *ms]

    # --- one command ----------------------------------------------------------------------

    def command(self) -> list:
        rng = self.rng
        pick = rng.random()
        if pick < 0.04:
            return list(rng.choice(ERRORS))
        if pick < 0.07:
            return rng.choice([["PING"], ["PING", "hi"], ["ECHO", self.value()], ["DBSIZE"],
                               ["INFO", "keyspace"], ["CLIENT", "ID"], ["SELECT", "0"]])
        if pick < 0.075:
            self.sets.clear()
            return [rng.choice(["FLUSHALL", "FLUSHDB"])]
        if pick < 0.5:
            return self.string_command()
        return self.board_command()

    def string_command(self) -> list:
        rng, k = self.rng, self.key()
        c = rng.choice(["SET", "SET", "SET", "SETEX", "GET", "GET", "GETDEL", "DEL", "UNLINK",
                        "EXISTS", "MGET", "MSET", "EXPIRE", "PEXPIRE", "TTL", "PTTL", "PERSIST",
                        "TYPE", "STRLEN"])
        if c == "SET":
            groups = [self.expiry()]  # an option with its value is one group
            if rng.random() < 0.3:
                groups.append([rng.choice(["NX", "XX"])])
            if rng.random() < 0.3:
                groups.append(["GET"])
            rng.shuffle(groups)
            return ["SET", k, self.value(), *[x for g in groups for x in g]]
        if c == "SETEX":
            return ["SETEX", k, self.seconds(), self.value()]
        if c in ("DEL", "UNLINK", "EXISTS"):
            names = self.names()
            if c != "EXISTS":
                self.forget(names)
            return [c, *names]
        if c == "MGET":
            return ["MGET", *[self.key() for _ in range(rng.randint(1, 4))]]
        if c == "MSET":
            return ["MSET", *[x for _ in range(rng.randint(1, 3)) for x in (self.key(), self.value())]]
        if c in ("EXPIRE", "PEXPIRE"):
            s = self.seconds() if rng.random() < 0.95 else -1
            amount = s if c == "EXPIRE" or s < 0 else s * 1000 + 10
            opt = rng.choice([[], [], ["NX"], ["XX"], ["GT"], ["LT"], ["XX", "GT"], ["XX", "LT"]])
            return [c, k, amount, *opt]
        if c == "TYPE":
            return ["TYPE", rng.choice(KEYS + BOARDS)]
        return [c, k]

    def board_command(self) -> list:
        rng, z = self.rng, self.board()
        c = rng.choice(["ZADD", "ZADD", "ZADD", "ZINCRBY", "ZSCORE", "ZMSCORE", "ZCARD", "ZRANK",
                        "ZREVRANK", "ZRANGE", "ZRANGE", "ZREVRANGE", "ZREM", "DEL", "EXISTS",
                        "TYPE"])
        if c == "ZADD":
            return self.zadd()
        if c == "ZINCRBY":
            return self.zincrby()
        if c == "ZREM":
            return self.zrem()
        if c in ("ZSCORE", "ZRANK", "ZREVRANK"):
            return [c, z, self.member()]
        if c == "ZMSCORE":
            return ["ZMSCORE", z, *[self.member() for _ in range(rng.randint(1, 3))]]
        if c in ("ZRANGE", "ZREVRANGE"):
            start, stop = rng.randint(-8, 8), rng.randint(-8, 8)
            opts = []
            if rng.random() < 0.5:
                opts.append("WITHSCORES")
            if c == "ZRANGE" and rng.random() < 0.4:
                opts.append("REV")
            rng.shuffle(opts)
            return [c, z, start, stop, *opts]
        if c == "DEL":
            self.forget([z])
            return ["DEL", z]
        return [c, z]


def fmt(score: float) -> str:
    return str(int(score)) if score == int(score) else repr(score)


def sequence(seed: int) -> tuple[list[list], dict]:
    """(the commands of seed, the sorted sets they leave, as the model has them)."""
    g = Gen(seed)
    cmds = [g.command() for _ in range(COMMANDS)]
    return cmds, g.sets


# --- comparing ------------------------------------------------------------------------------

def same(cmd: list, a, b) -> bool:
    name = str(cmd[0]).upper()
    if name == "INFO" or cmd[:2] == ["CLIENT", "ID"]:
        return a[0] == b[0]  # the same kind of reply, the value apart
    if name in TOLERANCE and a[0] == b[0] == ":" and a[1] >= 0 and b[1] >= 0:
        return abs(a[1] - b[1]) <= TOLERANCE[name]
    return a == b


def shown(cmd) -> str:
    return " ".join(repr(x) if isinstance(x, bytes) else str(x) for x in cmd)


def mismatch(seed, mode, cmds, i, a, b) -> str:
    before = "\n".join(f"  [{j}] {shown(cmds[j])}" for j in range(max(0, i - 8), i))
    return (f"seed {seed} ({mode}), command {i}: {shown(cmds[i])}\n  ours:  {a!r}\n"
            f"  redis: {b!r}\nthe commands before it:\n{before}\n"
            f"(rerun: RESP_DIFF_SEEDS={seed + 1} pytest {__file__} -k 'seed{seed}-')")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The real redis-server every reply is compared with."""
    srv = start_redis(tmp_path_factory.mktemp("redis-ref"))
    yield srv
    stop_checked(srv)


def flush(port: int) -> None:
    with Wire(port) as w:
        assert w.call("FLUSHALL") == ("+", b"OK")


def model_of(port: int) -> dict:
    """Every set of the pool as {member: score}, read back with ZRANGE WITHSCORES."""
    sets = {}
    with Wire(port) as w:
        for z in BOARDS:
            kind, items = w.call("ZRANGE", z, "0", "-1", "WITHSCORES")
            if items:
                sets[z] = {items[i][1].decode(): float(items[i + 1][1])
                           for i in range(0, len(items), 2)}
    return sets


@pytest.mark.parametrize("mode", ["single", "pipelined", "resp3"])
@pytest.mark.parametrize("seed", range(SEEDS), ids=lambda s: f"seed{s}")
def test_same_replies_as_redis(shared_resp, reference, seed, mode):
    cmds, model = sequence(seed)
    ours, redis_port = shared_resp.resp_port, reference.resp_port
    flush(ours)
    flush(redis_port)
    if mode == "single":
        # Interleaved, command by command, so that both see each command at nearly one time.
        got_a, got_b = [], []
        with Wire(ours) as wa, Wire(redis_port) as wb:
            for c in cmds:
                got_a.append(wa.call(*c))
                got_b.append(wb.call(*c))
    else:
        got_a, got_b = [], []
        with Wire(ours) as wa, Wire(redis_port) as wb:
            if mode == "resp3":  # the same, pipelined, after HELLO 3 (their fields differ: id)
                assert wa.call("HELLO", "3")[0] == wb.call("HELLO", "3")[0] == "%"
            for i in range(0, len(cmds), BATCH):
                batch = cmds[i:i + BATCH]
                wa.send_many(batch)
                wb.send_many(batch)
                got_a += [wa.read() for _ in batch]
                got_b += [wb.read() for _ in batch]
    for i, (a, b) in enumerate(zip(got_a, got_b)):
        if not same(cmds[i], a, b):
            pytest.fail(mismatch(seed, mode, cmds, i, a, b), pytrace=False)
    # The generator's own check: its model of the sets is what Redis holds (else its promise
    # of distinct scores is void).
    assert model_of(redis_port) == model, f"seed {seed}: the generator's model is off"
