#!/usr/bin/env python3
"""cluster_tools.py — the Python scripts/cluster.sh needs (it embedded it until issue 31):

  python3 -m scripts.cluster_tools stats-sum < LINES
      LINES: one node's /stats JSON per line; prints "sum JSON", the field-by-field sum of the
      numeric fields every node has (booleans and strings dropped)
  python3 -m scripts.cluster_tools render TEMPLATE OUT SERVERS-FILE LISTEN PREFIX
                                         [--tls CERT KEY PEM]
      fills a front template's @SERVERS@ (the file's lines), @LISTEN@, @PREFIX@ and @WORKERS@
      (1) tokens, outside comment lines (the header names the tokens), into OUT. A line ending in
      "#@tls" is kept (without the marker) only with --tls, a line ending in "#@plain" only
      without it. --tls fills @TLS_CERT@ and @TLS_KEY@ (nginx) and @TLS_PEM@ (HAProxy: PEM is
      written, the certificate then the key, readable by its owner only)
"""
import json
import os
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


TLS_MARK, PLAIN_MARK = "#@tls", "#@plain"


def write_pem(cert: str, key: str, pem: str) -> None:
    """HAProxy's crt: the certificate (and its chain), then the key, in one file only its owner
    can read (it holds the key)."""
    with open(cert) as c, open(key) as k:
        body = c.read().rstrip("\n") + "\n" + k.read().rstrip("\n") + "\n"
    fd = os.open(pem, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(body)


def select_line(line: str, tls: bool) -> str | None:
    """The line as rendered (its TLS/plain marker removed), or None when it is dropped."""
    stripped = line.rstrip()
    for mark, wanted in ((TLS_MARK, True), (PLAIN_MARK, False)):
        if stripped.endswith(mark):
            return stripped[:-len(mark)].rstrip() if tls == wanted else None
    return line


def render(template: str, out: str, servers_file: str, listen: str, prefix: str,
           tls: tuple[str, str, str] | None = None) -> None:
    with open(servers_file) as f:
        servers = f.read().rstrip("\n")
    tokens = {"@SERVERS@": servers, "@LISTEN@": listen, "@PREFIX@": prefix, "@WORKERS@": "1"}
    if tls is not None:
        cert, key, pem = tls
        write_pem(cert, key, pem)
        tokens.update({"@TLS_CERT@": cert, "@TLS_KEY@": key, "@TLS_PEM@": pem})
    lines = []
    with open(template) as f:
        for line in f.read().splitlines():
            if not line.lstrip().startswith("#"):
                line = select_line(line, tls is not None)
                if line is None:
                    continue
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
    if argv[1:2] == ["render"] and len(argv) == 11 and argv[7] == "--tls":
        render(*argv[2:7], tls=(argv[8], argv[9], argv[10]))
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
