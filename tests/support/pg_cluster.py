#!/usr/bin/env python3
"""pg_cluster.py — the command-line face of the harness's throwaway PostgreSQL cluster
(scripts/harness/postgres.py, where PgCluster lives), for the C++ tests, and a re-export for the
Python ones (`import pg_cluster; pg_cluster.PgCluster()`).

    pg_cluster.py start DIR       initdb (if DIR has no cluster yet) + start; prints the conninfo
    pg_cluster.py stop-only DIR [MODE]  stops the server (MODE: fast, the default, or immediate:
                                  a crash, recovered from the WAL at the next start), keeps data
    pg_cluster.py start-only DIR  starts a stopped server again (same port, same data)
    pg_cluster.py restart DIR     stop-only + start-only
    pg_cluster.py stop DIR        stops the server and removes DIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from harness.postgres import (PACKAGE_HINT, PgCluster, PgClusterError, find_bindir,  # noqa: E402,F401
                              free_port, main, pinned_cluster, psql)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
