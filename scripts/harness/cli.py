"""cli — the command line of a script on the harness: an argparse parser whose usage errors are
one line, "NAME: message (see --help)", and exit status 2, as the shell scripts' were; the checks of
the options every benchmark shares (--duration, --conns, whole and decimal numbers in a range,
the CPUs it pins to); option types; the environment variables that give options their defaults.

    p = cli.Parser("bench_x", __doc__)    # prog python3 -m scripts.bench_x, the docstring as --help
    p.add_argument("--duration", metavar="S")
    a = p.parse_args(argv)
    a.duration = p.duration(a.duration or "5")                # "bench_x: --duration ..." exit 2
    a.server_cpu, a.client_cpu = p.cpus()                       # SERVER_CPU and CLIENT_CPU

What happens once the options are parsed (checks, directories, servers, the exit status) is
harness.bench's.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from . import CACHE_SERVER

DECIMAL = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")
CPU_LIST = re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*")


class Parser(argparse.ArgumentParser):
    """argparse with the shell scripts' usage errors: one line on stderr, "NAME: what (see
    --help)", exit 2; a missing value "needs a value", an unknown option is an "unknown argument
    'X'". `doc` (a script's docstring) is the help text: its first paragraph the description, the
    rest the epilog. prog defaults to `python3 -m scripts.NAME`, the command that runs the
    script; options are never abbreviated."""

    def __init__(self, name: str, doc: str | None = None, **kw):
        self.script_name = name
        kw.setdefault("prog", f"python3 -m scripts.{name}")
        kw.setdefault("allow_abbrev", False)
        if doc:
            head, _, rest = doc.partition("\n\n")
            kw.setdefault("description", head)
            kw.setdefault("epilog", rest or None)
            kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(**kw)

    def error(self, message):
        message = message.replace("expected one argument", "needs a value")
        message = re.sub(r"unrecognized arguments: (.*)", r"unknown argument '\1'", message)
        print(f"{self.script_name}: {message} (see --help)", file=sys.stderr)
        sys.exit(2)

    def whole(self, flag: str, value: str, lo: int, hi: int | None, what: str) -> int:
        """`value` as a whole number in lo..hi (hi None: no upper bound), else the usage error
        "FLAG 'VALUE' must be WHAT"."""
        if not (value.isdigit() and len(value) <= 9 and lo <= int(value)
                and (hi is None or int(value) <= hi)):
            self.error(f"{flag} '{value}' must be {what}")
        return int(value)

    def decimal(self, flag: str, value: str, lo: float, hi: float, what: str) -> float:
        """`value` as a decimal number (digits with at most one point: no sign, exponent, inf or
        nan) in lo..hi, else the usage error "FLAG 'VALUE' must be WHAT"."""
        if not (DECIMAL.fullmatch(value) and lo <= float(value) <= hi):
            self.error(f"{flag} '{value}' must be {what}")
        return float(value)

    def duration(self, text: str) -> float:
        """--duration as seconds: a decimal number from 0.1 to 600, else a usage error."""
        if not DECIMAL.fullmatch(text):
            self.error(f"--duration '{text}' is not a number of seconds")
        if not 0.1 <= float(text) <= 600:
            self.error("--duration must be 0.1..600 s")
        return float(text)

    def conns(self, text: str, most: int) -> list[int]:
        """--conns "LIST": distinct connection counts from 1 to `most`, else a usage error."""
        words = text.split()
        if not words:
            self.error("--conns is empty")
        for c in words:
            if not c.isdigit() or not 1 <= int(c) <= most:
                self.error(f"--conns: '{c}' is not a connection count 1..{most}")
        if len(set(map(int, words))) != len(words):
            self.error("--conns repeats a count")
        return [int(c) for c in words]

    def cpus(self, differ: str = "SERVER_CPU and CLIENT_CPU must differ") -> tuple[int, int]:
        """(server CPU, client CPU) from SERVER_CPU (default 0) and CLIENT_CPU (default 1) in the
        environment: two CPU numbers, else a usage error; `differ` is the message when they are
        the same one."""
        server, client = os.environ.get("SERVER_CPU", "0"), os.environ.get("CLIENT_CPU", "1")
        if not (server.isdigit() and client.isdigit()):
            self.error("SERVER_CPU and CLIENT_CPU must be CPU numbers")
        if int(server) == int(client):
            self.error(differ)
        return int(server), int(client)


# --- option types (argparse's type=: a bad value is a one-line usage error) ---------------------

def positive_int(text: str) -> int:
    """A whole number >= 1."""
    if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return int(text)


def uint(text: str) -> int:
    """A whole number >= 0."""
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number")
    return int(text)


def int_list(text: str, sep: str | None = None) -> list[int]:
    """A list of positive integers split on `sep` (None: whitespace); an error when one is not,
    or when the list is empty."""
    items = text.split(sep) if sep else text.split()
    if not items:
        raise argparse.ArgumentTypeError("the list is empty")
    return [positive_int(x) for x in items]


def cpu_list(text: str) -> str:
    """A taskset CPU list: "0", "2,3", "0-3"."""
    if not CPU_LIST.fullmatch(text):
        raise argparse.ArgumentTypeError(f"'{text}' is not a CPU list (e.g. 0, 2,3 or 0-3)")
    return text


# --- options the scripts share ------------------------------------------------------------------

def env(name: str, default: str) -> str:
    """The environment variable `name`, or `default` when unset or empty (as ${NAME:-default})."""
    return os.environ.get(name) or default


def add_cpu_options(p: argparse.ArgumentParser, servers: str, client: str) -> None:
    """--server-cpu and --client-cpu (taskset CPU lists), defaulting to the environment variables
    SERVER_CPU (0) and CLIENT_CPU (1); `servers` and `client` name what runs on each."""
    p.add_argument("--server-cpu", metavar="CPUS", type=cpu_list, default=env("SERVER_CPU", "0"),
                   help=f"taskset CPU list of {servers} (env SERVER_CPU, default 0)")
    p.add_argument("--client-cpu", metavar="CPUS", type=cpu_list, default=env("CLIENT_CPU", "1"),
                   help=f"taskset CPU list of {client} (env CLIENT_CPU, default 1)")


def add_server_options(p: argparse.ArgumentParser, servers: str, client: str) -> None:
    """--cache-server (env CACHE_SERVER) and the CPU options (add_cpu_options)."""
    p.add_argument("--cache-server", metavar="BIN", default=env("CACHE_SERVER", str(CACHE_SERVER)),
                   help="the binary (env CACHE_SERVER, default build/release/server/cache_server)")
    add_cpu_options(p, servers, client)
