#!/usr/bin/env python3
"""cluster_tools.py — the Python scripts/cluster.sh needs (it embedded it until issue 31):

  python3 scripts/cluster_tools.py stats-sum < LINES
      LINES: one node's /stats JSON per line; prints "sum JSON", the field-by-field sum of the
      numeric fields every node has (booleans and strings dropped)
  python3 scripts/cluster_tools.py render TEMPLATE OUT SERVERS-FILE LISTEN PREFIX
      fills a front template's @SERVERS@ (the file's lines), @LISTEN@, @PREFIX@ and @WORKERS@
      (1) tokens, outside comment lines (the header names the tokens), into OUT
"""
import json
import sys


def add(a, b):
    """The sum of two /stats documents, field by field; None where they cannot be added."""
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a + b
    if isinstance(a, dict) and isinstance(b, dict):
        out = {k: add(a[k], b[k]) for k in a if k in b}
        return {k: v for k, v in out.items() if v is not None}
    return None


def numeric(v):
    """Only the numeric fields (nested objects kept with theirs)."""
    if isinstance(v, dict):
        out = {k: numeric(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x is not None}
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def stats_sum(lines) -> str:
    docs = [json.loads(line) for line in lines if line.strip()]
    total = docs[0]
    for d in docs[1:]:
        total = add(total, d)
    return "sum " + json.dumps(numeric(total))


def render(template: str, out: str, servers_file: str, listen: str, prefix: str) -> None:
    with open(servers_file) as f:
        servers = f.read().rstrip("\n")
    tokens = {"@SERVERS@": servers, "@LISTEN@": listen, "@PREFIX@": prefix, "@WORKERS@": "1"}
    lines = []
    with open(template) as f:
        for line in f.read().splitlines():
            if not line.lstrip().startswith("#"):
                for token, value in tokens.items():
                    line = line.replace(token, value)
            lines.append(line)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    if argv[1:2] == ["stats-sum"] and len(argv) == 2:
        print(stats_sum(sys.stdin))
        return 0
    if argv[1:2] == ["render"] and len(argv) == 7:
        render(*argv[2:])
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
