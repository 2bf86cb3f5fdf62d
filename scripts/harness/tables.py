"""tables — the numbers in the reports and the Markdown tables they stand in: the one formatter
(fnum) and the one table renderer (row, table_head, md_table) that every report of scripts/
prints with: the benchmark reports (scripts/*_report.py on harness.report), REPORT.md
(scripts/report.py), the studies (scripts/studies/common.py re-exports these), compare_wrk.py
and profile_server.py. A figure that was not measured shows as NONE, everywhere."""
from __future__ import annotations

NONE = "–"  # the cell of a figure that was not measured (None)


def fnum(x, digits: int = 0, *, grouped: bool = True, unit: str = "") -> str:
    """A number as the reports print it: `digits` fixed decimals, thousands separators unless
    grouped=False, then `unit` ("12,345", "0.118", "1.16×"); NONE for None."""
    if x is None:
        return NONE
    return f"{x:{',' if grouped else ''}.{digits}f}{unit}"


def fratio(x, unit: str = "") -> str:
    """A ratio: two decimals, no separators ("1.16", with unit "×": "1.16×"); NONE for None."""
    return fnum(x, 2, grouped=False, unit=unit)


def slashed(xs, digits: int = 0) -> str:
    """Several figures in one cell: "1,200/3,400"."""
    return "/".join(fnum(x, digits) for x in xs)


def listed(xs, digits: int = 0) -> str:
    """Figures in a sentence: "1,200, 3,400"."""
    return ", ".join(fnum(x, digits) for x in xs)


def row(cells) -> str:
    """One Markdown table line: "| a | b |"."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table_head(headers: list[str], align: str) -> list[str]:
    """A table's header and alignment lines; `align` has one letter per column, l or r."""
    assert len(headers) == len(align), (headers, align)
    return [row(headers), "|" + "".join("---|" if a == "l" else "---:|" for a in align)]


def md_table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """A whole Markdown table (table_head, then a row() per row): `align` as table_head's
    (default: the first column left, the others right, as the studies print figures). Ends
    with a newline."""
    align = align or "l" + "r" * (len(headers) - 1)
    return "\n".join([*table_head(headers, align), *(row(r) for r in rows)]) + "\n"
