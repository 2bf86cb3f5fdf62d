"""The layering of the repository's C++ includes, checked from the source (issue 45).

Parses every `#include "..."` line of the tree's C++ files (the repository's own includes are
root-relative: "server/transport/connection.hh") and follows them transitively. It fails if
  (a) a file of the transport (server/transport/) reaches a header of the durable tier (tier/)
      or of store/: the transport moves bytes and responses; the tier is seen by the API's
      services and by the server that owns it (server/server.hh), not by the transport;
  (b) the store's contract (store/store.hh, store/store.cc) reaches an engine: RocksStore,
      PostgresStore, EngineStore or their internals, or RocksDB's and libpq's own headers (an
      engine is opened by store/open_store.cc);
  (c) server/'s files include each other in a cycle. A header and its .cc are one module
      (handlers.cc including board_handlers.hh while board_handlers.hh includes handlers.hh is
      a cycle of two modules).
Each failure names the chain of includes that breaks the rule.

No binary is needed: --server-bin is ignored. LAYERS_ROOT=DIR checks another checkout's tree.
"""
import os
import re

ROOT = os.path.abspath(os.environ.get("LAYERS_ROOT")
                       or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SOURCE_EXTENSIONS = (".hh", ".cc", ".h", ".hpp", ".cpp")
SKIPPED_DIRS = {".git", "build", "node_modules"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)

TRANSPORT = "server/transport/"
# The transport's entry points in the flat server/ of before issue 45, so that the check of (a)
# also reads a tree of that layout (LAYERS_ROOT=an older checkout) instead of finding nothing.
FLAT_TRANSPORT = ("server/listener.", "server/connection.", "server/http_engine.",
                  "server/response_queue.", "server/completion_inbox.")
TIER_PREFIXES = ("tier/", "store/")
# The tier's files in the flat server/ of before issue 45 (they moved to tier/).
TIER_FILES = {"server/store_tier.hh", "server/store_deadline.hh"}
CONTRACT = ("store/store.hh", "store/store.cc")
ENGINE_FILES = {"store/rocksdb_store.hh", "store/rocksdb_values.hh", "store/postgres_store.hh",
                "store/postgres_internal.hh", "store/engine_store.hh"}
ENGINE_SYSTEM_PREFIXES = ("rocksdb/", "libpq-fe.h", "postgresql/")


def source_files(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(SOURCE_EXTENSIONS):
                yield os.path.relpath(os.path.join(top, name), root).replace(os.sep, "/")


def include_graph(root):
    """{file: ([repository files it includes], [system headers it includes])}."""
    files = set(source_files(root))
    graph = {}
    for path in files:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        local, system = [], []
        for kind, name in INCLUDE.findall(text):
            beside = os.path.normpath(os.path.join(os.path.dirname(path), name)).replace(os.sep, "/")
            if name in files:
                local.append(name)
            elif beside in files:
                local.append(beside)
            else:
                system.append(name)
        graph[path] = (local, system)
    return graph


def chain_to(graph, start, is_target):
    """The shortest include chain from start to a file is_target accepts, or None."""
    parents = {start: None}
    queue = [start]
    while queue:
        current = queue.pop(0)
        for nxt in graph.get(current, ((), ()))[0]:
            if nxt in parents:
                continue
            parents[nxt] = current
            if is_target(nxt):
                chain = [nxt]
                while parents[chain[-1]] is not None:
                    chain.append(parents[chain[-1]])
                return list(reversed(chain))
            queue.append(nxt)
    return None


def reachable(graph, start):
    seen, stack = {start}, [start]
    while stack:
        for nxt in graph.get(stack.pop(), ((), ()))[0]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def is_tier(path):
    return path.startswith(TIER_PREFIXES) or path in TIER_FILES


def transport_files(graph):
    files = sorted(p for p in graph if p.startswith(TRANSPORT))
    return files or sorted(p for p in graph if p.startswith(FLAT_TRANSPORT))


def transport_violations(graph):
    found = []
    for path in transport_files(graph):
        chain = chain_to(graph, path, is_tier)
        if chain:
            found.append(" -> ".join(chain))
    return found


def contract_violations(graph):
    found = []
    for path in CONTRACT:
        if path not in graph:
            continue
        chain = chain_to(graph, path, lambda p: p in ENGINE_FILES)
        if chain:
            found.append(" -> ".join(chain))
        for reached in sorted(reachable(graph, path)):
            for name in graph[reached][1]:
                if name.startswith(ENGINE_SYSTEM_PREFIXES):
                    found.append(f"{path} reaches <{name}> (in {reached})")
    return found


def module_of(path):
    return os.path.splitext(path)[0]


def module_cycles(graph, prefix="server/"):
    """Cycles among the modules (a header and its .cc) of the files under prefix."""
    edges = {}
    for path, (local, _) in graph.items():
        if not path.startswith(prefix):
            continue
        mod = module_of(path)
        targets = edges.setdefault(mod, set())
        for name in local:
            if name.startswith(prefix) and module_of(name) != mod:
                targets.add(module_of(name))
    # Tarjan's strongly connected components, iterative.
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
                continue
            if child not in edges:
                edges[child] = set()
            if child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return [" <-> ".join(c) for c in sorted(components)]


GRAPH = include_graph(ROOT)


def test_the_tree_has_the_files_the_rules_name():
    # A rule over files that are not there passes for nothing: the checked tree must hold them.
    assert transport_files(GRAPH), f"no transport ({TRANSPORT}) in {ROOT}"
    assert "store/store.hh" in GRAPH, f"no store/store.hh in {ROOT}"
    assert "server/server_context.hh" in GRAPH


def test_transport_reaches_neither_tier_nor_store():
    found = transport_violations(GRAPH)
    assert not found, "the transport includes the tier or store/:\n  " + "\n  ".join(found)


def test_store_contract_includes_no_engine():
    found = contract_violations(GRAPH)
    assert not found, "store's contract includes an engine:\n  " + "\n  ".join(found)


def test_server_modules_include_no_cycle():
    found = module_cycles(GRAPH)
    assert not found, "include cycles among server/ modules:\n  " + "\n  ".join(found)


def test_the_checks_see_a_planted_violation():
    # The checks themselves, on a small made-up graph: each rule fires on what it forbids.
    graph = {
        "server/transport/a.hh": (["server/api/b.hh"], []),
        "server/api/b.hh": (["tier/c.hh"], []),
        "tier/c.hh": ([], []),
        "store/store.cc": (["store/faults.hh"], []),
        "store/faults.hh": (["store/rocksdb_store.hh"], ["rocksdb/db.h"]),
        "store/rocksdb_store.hh": ([], []),
        "server/api/x.cc": (["server/api/y.hh"], []),
        "server/api/y.hh": (["server/api/x.hh"], []),
        "server/api/x.hh": ([], []),
    }
    assert transport_violations(graph) == [
        "server/transport/a.hh -> server/api/b.hh -> tier/c.hh"]
    assert contract_violations(graph) == [
        "store/store.cc -> store/faults.hh -> store/rocksdb_store.hh",
        "store/store.cc reaches <rocksdb/db.h> (in store/faults.hh)"]
    assert module_cycles(graph) == ["server/api/x <-> server/api/y"]
