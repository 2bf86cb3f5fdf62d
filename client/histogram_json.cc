// Writing and reading a HistogramSnapshot as JSON (see histogram_json.hh).
#include "client/histogram_json.hh"

#include <boost/json.hpp>

#include <stdexcept>

namespace client {
namespace {

std::uint64_t get_u64(const boost::json::object& o, const char* name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr) throw std::runtime_error(std::string("histogram: no \"") + name + "\"");
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
  throw std::runtime_error(std::string("histogram: \"") + name +
                           "\" is not a non-negative integer");
}

}  // namespace

boost::json::object histogram_to_json(const HistogramSnapshot& h) {
  boost::json::array buckets;
  buckets.reserve(h.buckets.size());
  for (const auto& [index, n] : h.buckets) buckets.push_back(boost::json::array{index, n});
  return {{"unit", "ns"},
          {"sub_bucket_bits", Histogram::kSubBucketBits},
          {"max_exponent", Histogram::kMaxExponent},
          {"count", h.count},
          {"sum", h.sum_ns},
          {"min", h.min_ns},
          {"max", h.max_ns},
          {"buckets", std::move(buckets)}};
}

HistogramSnapshot histogram_from_json(const boost::json::value& v) {
  const auto* o = v.if_object();
  if (o == nullptr) throw std::runtime_error("histogram: not a JSON object");
  const auto* unit = o->if_contains("unit");
  if (unit == nullptr || !unit->is_string() || unit->get_string() != "ns")
    throw std::runtime_error("histogram: \"unit\" is not \"ns\"");
  if (get_u64(*o, "sub_bucket_bits") != Histogram::kSubBucketBits ||
      get_u64(*o, "max_exponent") != Histogram::kMaxExponent)
    throw std::runtime_error(
        "histogram: another bucket layout (sub_bucket_bits/max_exponent differ from this "
        "bench_client's)");
  HistogramSnapshot h;
  h.count = get_u64(*o, "count");
  h.sum_ns = get_u64(*o, "sum");
  h.min_ns = get_u64(*o, "min");
  h.max_ns = get_u64(*o, "max");
  const auto* buckets = o->if_contains("buckets");
  if (buckets == nullptr || !buckets->is_array())
    throw std::runtime_error("histogram: \"buckets\" is not an array");
  std::uint64_t total = 0;
  for (const auto& b : buckets->get_array()) {
    const auto* pair = b.if_array();
    if (pair == nullptr || pair->size() != 2 || !(*pair)[0].is_number() || !(*pair)[1].is_number())
      throw std::runtime_error("histogram: a bucket is not [index, count]");
    const auto index = (*pair)[0].to_number<std::uint64_t>();
    const auto n = (*pair)[1].to_number<std::uint64_t>();
    if (index > Histogram::kAboveRangeIndex)
      throw std::runtime_error("histogram: bucket index " + std::to_string(index) +
                               " out of range");
    h.buckets.emplace_back(static_cast<std::uint32_t>(index), n);
    total += n;
  }
  if (total != h.count)
    throw std::runtime_error("histogram: bucket counts add up to " + std::to_string(total) +
                             ", not \"count\" " + std::to_string(h.count));
  if (h.count > 0 && h.min_ns > h.max_ns)
    throw std::runtime_error("histogram: \"min\" above \"max\"");
  return h;
}

}  // namespace client
