// The nginx-compatible consistent-hash ring of `bench_client --targets`: the placement nginx 1.22's
// ngx_http_upstream_hash_module computes for `hash $cache_key consistent;` (ketama style, as
// Cache::Memcached::Fast), so bench_client sends every request straight to the node nginx would
// pick (docs/cluster.md, "The ring"):
//  - points: each node "HOST:PORT" (the string of nginx's server line, split at its last ':')
//    gets 160 x weight points; point j is the CRC-32 of HOST "\0" PORT followed by point j-1's
//    hash as 4 little-endian bytes (0 for the first);
//  - the points are sorted by hash; of several points with one hash nginx keeps one (here the
//    node given first: nginx's qsort leaves the order of equal hashes unspecified, and with
//    32-bit hashes two nodes sharing one is a one-in-millions event per pair of points);
//  - lookup: the first point whose hash is >= CRC-32(key), wrapping to the first point.
// CRC-32 is the standard one (zlib's, IEEE 802.3, reflected, 0xEDB88320) as nginx's
// ngx_crc32_*; it comes from Boost.CRC (boost::crc_32_type, header-only), since bench_client does
// not link zlib.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace client {

// Standard CRC-32 of data (crc32("123456789") = 0xCBF43926).
std::uint32_t crc32(std::string_view data);

class HashRing {
 public:
  static constexpr unsigned kPointsPerWeight = 160;  // nginx: npoints = weight * 160
  static constexpr unsigned kMaxWeight = 100;

  // nodes: "HOST:PORT" strings, each with at least one ':'; weight 1..kMaxWeight (nginx's
  // weight= of every node). Node indexes are positions in `nodes`.
  HashRing(const std::vector<std::string>& nodes, unsigned weight);

  // The index of the node that owns key (the bytes nginx hashes: a key percent-decoded, a
  // board's name).
  std::size_t node_of(std::string_view key) const { return node_of_hash(crc32(key)); }
  std::size_t node_of_hash(std::uint32_t hash) const;
  std::size_t node_count() const { return nodes_; }
  std::size_t point_count() const { return points_.size(); }

 private:
  struct Point {
    std::uint32_t hash;
    std::uint32_t node;
  };
  std::vector<Point> points_;
  std::size_t nodes_ = 0;
};

}  // namespace client
