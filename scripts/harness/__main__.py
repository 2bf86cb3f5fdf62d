"""The harness from the shell scripts that still exist (issue 31 turns them into Python):

    PYTHONPATH=scripts python3 -m harness free-port     prints a port free on 127.0.0.1
"""
import sys

from .procs import free_port

if __name__ == "__main__":
    if sys.argv[1:] == ["free-port"]:
        print(free_port())
        sys.exit(0)
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
