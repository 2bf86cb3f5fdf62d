// allocator.hh — which malloc this process runs on, for /stats and /metrics.
//
// Release builds link jemalloc (CMake ALLOCATOR, see docs/server.md "Allocator"): the durable
// tier allocates per write across threads (the connection's thread allocates, the store's
// completer frees), where glibc's malloc spends ~11k instructions per write-through PUT and
// jemalloc ~3k. Sanitizer builds keep the system allocator, which ASan/TSan replace.
#pragma once

namespace server {

// "jemalloc" when jemalloc serves malloc in this process (linked or LD_PRELOADed), else
// "system". Decided once, at the first call.
const char* allocator_name();

}  // namespace server
