// allocator.cc — see allocator.hh.
#include "server/allocator.hh"

#include <cstddef>

// jemalloc's control interface. Declared weak: it resolves to jemalloc's when jemalloc is in the
// process (linked, or preloaded), and to null otherwise, so this file needs no jemalloc header
// and works with any allocator. (Debian's jemalloc exports it unprefixed.)
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp,
                       std::size_t newlen) __attribute__((weak));

namespace server {

const char* allocator_name() {
  static const char* const name = [] {
    if (mallctl == nullptr) return "system";
    const char* version = nullptr;
    std::size_t len = sizeof(version);
    // A mallctl that answers "version" is jemalloc's, not some other library's symbol.
    return mallctl("version", &version, &len, nullptr, 0) == 0 && version != nullptr ? "jemalloc"
                                                                                     : "system";
  }();
  return name;
}

}  // namespace server
