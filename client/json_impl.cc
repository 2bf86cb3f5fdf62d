// Compiles Boost.JSON into bench_core (header-only-capable in Boost 1.81 via src.hpp), so no
// separately built Boost library is needed. This is the only translation unit that includes it.
#include <boost/json/src.hpp>
