"""The harness from the shell scripts that still exist (issue 31 turns them into Python):

    python3 -m scripts.harness free-port     prints a port free on 127.0.0.1
    python3 -m scripts.harness listening LOG [PID [SECONDS]]
        waits (default 20 s) for the listening line of the process PID (which writes LOG) and
        prints its HOST:PORT; exits 1 without it (PID exited, or the time is up)
"""
import sys

from .procs import READY_TIMEOUT_S, free_port, listening_in_log


def main(argv: list[str]) -> int:
    if argv == ["free-port"]:
        print(free_port())
        return 0
    if argv[:1] == ["listening"] and 2 <= len(argv) <= 4 and all(x.isdigit() for x in argv[2:3]):
        pid = int(argv[2]) if len(argv) > 2 else None
        found = listening_in_log(argv[1], pid, float(argv[3]) if len(argv) > 3 else READY_TIMEOUT_S)
        if found:
            print(f"{found[0]}:{found[1]}")
            return 0
        return 1
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
