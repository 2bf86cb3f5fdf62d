"""Reading the Markdown tables the benchmark scripts print (bench_store.py, bench_postgres.py,
compare_redis_boards.py), for their tests: a table by the start of its header, and a cell as a
number."""
import re


def number(cell):
    """A table cell as a float: '12,345' -> 12345.0; raises on 'n/a' and anything else."""
    assert re.fullmatch(r"-?[\d,]+(\.\d+)?", cell), f"not a number: {cell!r}"
    return float(cell.replace(",", ""))


def table(md, header_start):
    """The header and rows (lists of cells) of the Markdown table whose header begins so."""
    lines = md.splitlines()
    i = next(i for i, l in enumerate(lines) if l.startswith(header_start))
    header = [c.strip() for c in lines[i].strip("|").split("|")]
    assert set(lines[i + 1].replace("|", "").replace("-", "").replace(":", "")) <= {""}
    rows = []
    for l in lines[i + 2:]:
        if not l.startswith("|"):
            break
        rows.append([c.strip() for c in l.strip("|").split("|")])
        assert len(rows[-1]) == len(header), l
    return header, rows
