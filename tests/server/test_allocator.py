"""/stats names the malloc the process runs on (docs/server.md, "Allocator"): "jemalloc" exactly
when the binary links libjemalloc (release builds with ALLOCATOR=auto and libjemalloc-dev), else
"system" (sanitizer builds, ALLOCATOR=system). Checked against the dynamic linker's own view."""
import subprocess

from rawhttp import exchange


def links_jemalloc(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return "libjemalloc" in out.stdout


def test_stats_and_metrics_name_the_allocator(start_server, server_bin):
    srv = start_server("-t", "1")
    expected = "jemalloc" if links_jemalloc(server_bin) else "system"
    r = exchange(srv, "GET", "/stats")
    assert r.status == 200
    assert r.json()["allocator"] == expected
    m = exchange(srv, "GET", "/metrics")
    assert m.status == 200
    assert f'allocator="{expected}"' in m.body.decode()
