"""The tier's shape (issue 45): no file in tier/ over 450 lines, no class there with more than
25 methods, so each concern can be read alone. A method is a member function declared in the
class body (constructors, destructors and operators included; deleted copies are not counted).

Run: python3 -m pytest -q tests/tier/test_shape.py  (prints the figures with -s)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIER = ROOT / "tier"
MAX_LINES = 450
MAX_METHODS = 25


def strip_comments_and_strings(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def class_bodies(text):
    """(name, body) of every top-level class or struct definition in a header."""
    for m in re.finditer(r"^(?:class|struct)\s+(\w+)[^;{]*\{", text, flags=re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def member_statements(body):
    """The declarations at the class body's own level, with nested bodies dropped."""
    statements, current, depth = [], [], 0
    for ch in body:
        if ch == "{":
            if depth == 0:
                current.append("{")
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                statements.append("".join(current))
                current = []
        elif depth == 0:
            if ch == ";":
                statements.append("".join(current))
                current = []
            else:
                current.append(ch)
    return [re.sub(r"\b(public|private|protected)\s*:", "", s).strip() for s in statements]


def is_method(statement):
    if not statement or re.match(r"(using|friend|struct|class|enum|typedef|static_assert)\b",
                                 statement):
        return False
    if re.search(r"=\s*delete\s*$", statement):
        return False
    head = re.split(r"[={]", statement, maxsplit=1)[0]
    return re.search(r"(~?\b\w+|operator\s*\S+)\s*\(", head) is not None


def methods_per_class():
    counts = {}
    for header in sorted(TIER.glob("*.hh")):
        text = strip_comments_and_strings(header.read_text())
        for name, body in class_bodies(text):
            counts[f"{header.name}:{name}"] = sum(map(is_method, member_statements(body)))
    return counts


def test_the_counter_sees_methods():
    # Guards against a counter that cannot fail: the tier's API class has many methods.
    counts = methods_per_class()
    assert counts["tier.hh:StoreTier"] >= 10, counts


def test_no_tier_file_is_over_450_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in sorted(TIER.glob("*.[ch][ch]"))}
    print("largest tier files:", sorted(sizes.items(), key=lambda kv: -kv[1])[:3])
    assert max(sizes.values()) <= MAX_LINES, sizes


def test_no_tier_class_has_more_than_25_methods():
    counts = methods_per_class()
    print("methods per class:", sorted(counts.items(), key=lambda kv: -kv[1])[:5])
    too_many = {k: v for k, v in counts.items() if v > MAX_METHODS}
    assert not too_many, too_many
