"""tables — Markdown tables and the numbers in them, as every report writes them."""
from __future__ import annotations


def fnum(x, digits: int = 0) -> str:
    """A number as the reports print it ("12,345", "0.118"); "–" for None."""
    if x is None:
        return "–"
    return f"{x:,.{digits}f}"


def md_table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """A Markdown table: `align` has one letter per column, "l" or "r" (default: the first column
    left, the others right, as the studies print figures). Ends with a newline."""
    align = align or "l" + "r" * (len(headers) - 1)
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"
