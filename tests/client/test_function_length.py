# No function in client/ is longer than 60 lines (issue 45): a simple brace counter reads
# client/*.cc and client/*.hh, finds each function body (a brace that follows a ')' at namespace or
# class scope) and counts its lines from the first line of its signature to its closing brace,
# inclusive; lambdas and local classes count toward the function that holds them.
import pathlib
import re

CLIENT = pathlib.Path(__file__).resolve().parents[2] / "client"
MAX_LINES = 60


def blank_out_comments_and_literals(text):
    """The source with comments, string and character literals replaced by spaces (newlines kept),
    so that braces and parentheses inside them are not counted."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j == -1 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j == -1 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            j = text.find(")" + delimiter + '"', open_paren) + len(delimiter) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 is a digit
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_lengths(source):
    """(name, first line, lines) of each function body in the C++ text `source`."""
    text = blank_out_comments_and_literals(source)
    text = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), text)  # preprocessor lines
    found = []
    scopes = []  # per open brace: "function" or "scope" (namespace, class, enum, initializer)
    statement_start = 0  # where the text before the next brace at this scope begins
    in_initializers = False  # after a member's brace initializer `x_{v},` in a constructor
    for i, c in enumerate(text):
        if c == "{":
            head = text[statement_start:i]
            in_function = "function" in scopes
            is_function = not in_function and (in_initializers or re.search(
                r"\)[^;()]*$", head.strip() + " ")) and \
                not re.match(r"\s*(namespace|struct|class|union|enum)\b", head)
            scopes.append("function" if is_function else "scope")
            if is_function and in_initializers:
                in_initializers = False
            elif is_function:
                first = statement_start + len(head) - len(head.lstrip())
                name = re.findall(r"([~\w:]+)\s*\(", head)
                found.append([name[0] if name else "?", text.count("\n", 0, first) + 1, i])
            if not in_function:
                statement_start = i + 1
        elif c == "}":
            kind = scopes.pop() if scopes else "scope"
            if kind == "function" and "function" not in scopes:
                start_line = found[-1][1]
                found[-1][2] = text.count("\n", 0, i) + 1 - start_line + 1
                in_initializers = text[i + 1:].lstrip()[:1] in (",", "{")
            if "function" not in scopes and not in_initializers:
                statement_start = i + 1
        elif c == ";" and "function" not in scopes:
            statement_start = i + 1
        elif c == ":" and "function" not in scopes and re.search(
                r"\b(public|private|protected)\s*$", text[statement_start:i]):
            statement_start = i + 1
    return [tuple(f) for f in found]


def test_the_counter_counts_signature_to_closing_brace():
    source = """namespace client {
// a comment with a { brace
struct Holder {
  int get() const { return 1; }
};
Holder::Holder(int v)
    : a_(v),
      b_{v} {
  auto f = [&] {
    return "}";
  };
}
std::string text() {
  return R"(a } raw { string)";
}
}  // namespace client
"""
    assert function_lengths(source) == [("get", 4, 1), ("Holder::Holder", 6, 7), ("text", 13, 3)]
    client_functions = {name for name, _, _ in function_lengths((CLIENT / "cli.cc").read_text())}
    assert "parse_args" in client_functions, client_functions


def test_no_function_in_client_is_over_60_lines():
    too_long = []
    for path in sorted(CLIENT.glob("*.[ch][ch]")):
        for name, line, lines in function_lengths(path.read_text()):
            if lines > MAX_LINES:
                too_long.append(f"{path.name}:{line} {name}: {lines} lines")
    assert not too_long, "functions over 60 lines in client/:\n" + "\n".join(too_long)
