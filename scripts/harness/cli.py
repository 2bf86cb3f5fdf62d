"""cli — the command line of a benchmark script: an argparse parser whose usage errors are one
line "NAME: message (see --help)" and exit 2, as the shell scripts' were, and the environment
variables that give options their defaults.

    p = cli.Parser("bench_cluster", prog="scripts/bench_cluster.py", description=...)
    p.add_argument("--duration", type=cli.positive_int, default=cli.env_int("DURATION", 5))
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from . import CACHE_SERVER


class Parser(argparse.ArgumentParser):
    """argparse with the shell scripts' usage errors; the module's docstring is the help text
    when `doc` is given (its first paragraph the description, the rest the epilog)."""

    def __init__(self, name: str, doc: str | None = None, **kw):
        self.script_name = name
        if doc:
            kw.setdefault("description", doc.split("\n\n")[0])
            kw.setdefault("epilog", doc.split("\n\n", 1)[1] if "\n\n" in doc else None)
            kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(**kw)

    def error(self, message):
        message = message.replace("expected one argument", "needs a value")
        message = re.sub(r"unrecognized arguments: (.*)", r"unknown argument '\1'", message)
        print(f"{self.script_name}: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return int(text)


def uint(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number")
    return int(text)


def int_list(text: str, sep: str | None = None) -> list[int]:
    """A list of positive integers split on `sep` (None: whitespace); ArgumentTypeError when one
    is not, or when the list is empty."""
    items = text.split(sep) if sep else text.split()
    if not items:
        raise argparse.ArgumentTypeError("the list is empty")
    return [positive_int(x) for x in items]


def env(name: str, default: str) -> str:
    """The environment variable `name`, or `default` when unset or empty (as ${NAME:-default})."""
    return os.environ.get(name) or default


def add_server_options(p: argparse.ArgumentParser, servers: str, client: str) -> None:
    """--cache-server, --server-cpu and --client-cpu, defaulting to the environment variables
    CACHE_SERVER, SERVER_CPU (0) and CLIENT_CPU (1), as the shell scripts read them; `servers`
    and `client` name what runs on each CPU."""
    p.add_argument("--cache-server", metavar="BIN", default=env("CACHE_SERVER", str(CACHE_SERVER)),
                   help="the binary (env CACHE_SERVER, default build/release/server/cache_server)")
    p.add_argument("--server-cpu", metavar="CPUS", default=env("SERVER_CPU", "0"),
                   help=f"taskset CPU list of {servers} (env SERVER_CPU, default 0)")
    p.add_argument("--client-cpu", metavar="CPUS", default=env("CLIENT_CPU", "1"),
                   help=f"taskset CPU list of {client} (env CLIENT_CPU, default 1)")
