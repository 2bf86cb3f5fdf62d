"""procstat.py — what the integration tests read of a server process from /proc (its resident
memory), in one place."""


def rss_bytes(pid):
    """The process's resident set size (VmRSS), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")
