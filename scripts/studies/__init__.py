"""studies — the studies of docs/studies.md (crank, kv_db, leaderboard, threadpool, assemble)
and their shared library (common), each run as `python3 -m scripts.studies.NAME`."""
