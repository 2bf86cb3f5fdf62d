// The JSON form of a HistogramSnapshot: what makes bench_client's results mergeable. A point's
// "histogram" (and each node's) is written by histogram_to_json() and read back exactly by
// histogram_from_json(), which `bench_client merge` uses. The layout constants are written too,
// so a reader refuses a histogram of another bucket layout instead of misreading it.
//
//   {"unit": "ns", "sub_bucket_bits": 7, "max_exponent": 39, "count": N, "sum": S, "min": A,
//    "max": B, "buckets": [[index, count], ...]}
//
// A bucket index maps to a value range as Histogram::bucket_lowest/bucket_highest say
// (docs/client.md, "JSON output"); index 4352 (Histogram::kAboveRangeIndex) counts the values
// above the 1000 s range.
#pragma once

#include <boost/json/value.hpp>

#include <string>

#include "client/histogram.hh"

namespace client {

boost::json::object histogram_to_json(const HistogramSnapshot& h);

// Throws std::runtime_error naming what is wrong: a missing or mistyped field, another bucket
// layout, a bucket index out of range, counts that do not add up to "count".
HistogramSnapshot histogram_from_json(const boost::json::value& v);

}  // namespace client
