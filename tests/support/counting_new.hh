// counting_new.hh — how many times operator new (any form) has run in this process. Only
// meaningful in a binary linked with the `counting_new` object library (tests/support), which
// replaces the global allocation functions with counting ones.
#pragma once

#include <cstdint>

namespace counting_new {
std::uint64_t allocations();
}  // namespace counting_new
