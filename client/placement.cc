// The nginx-compatible consistent-hash ring (see placement.hh).
#include "client/placement.hh"

#include <algorithm>
#include <boost/crc.hpp>
#include <stdexcept>

namespace client {

std::uint32_t crc32(std::string_view data) {
  boost::crc_32_type crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

HashRing::HashRing(const std::vector<std::string>& nodes, unsigned weight) : nodes_(nodes.size()) {
  if (nodes.empty() || weight == 0 || weight > kMaxWeight)
    throw std::invalid_argument("HashRing: no nodes, or a weight outside 1..100");
  points_.reserve(nodes.size() * weight * kPointsPerWeight);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const std::string& node = nodes[n];
    const auto colon = node.rfind(':');
    if (colon == std::string::npos)
      throw std::invalid_argument("HashRing: node '" + node + "' is not HOST:PORT");
    // HOST "\0" PORT, then the previous point's hash.
    std::string base = node.substr(0, colon);
    base.push_back('\0');
    base.append(node, colon + 1);
    boost::crc_32_type base_crc;
    base_crc.process_bytes(base.data(), base.size());
    std::uint32_t prev = 0;
    for (unsigned j = 0; j < weight * kPointsPerWeight; ++j) {
      boost::crc_32_type crc = base_crc;
      const unsigned char bytes[4] = {
          static_cast<unsigned char>(prev), static_cast<unsigned char>(prev >> 8),
          static_cast<unsigned char>(prev >> 16), static_cast<unsigned char>(prev >> 24)};
      crc.process_bytes(bytes, sizeof bytes);
      prev = crc.checksum();
      points_.push_back(Point{prev, static_cast<std::uint32_t>(n)});
    }
  }
  std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.node < b.node;
  });
  points_.erase(std::unique(points_.begin(), points_.end(),
                            [](const Point& a, const Point& b) { return a.hash == b.hash; }),
                points_.end());
}

std::size_t HashRing::node_of_hash(std::uint32_t hash) const {
  const auto it = std::lower_bound(points_.begin(), points_.end(), hash,
                                   [](const Point& p, std::uint32_t h) { return p.hash < h; });
  const std::size_t i = static_cast<std::size_t>(it - points_.begin()) % points_.size();
  return points_[i].node;
}

}  // namespace client
