// Workloads: what to ask the server, and what the answers must be.
//  - KeySpace: deterministic key names and values. Key i has a size drawn once from the key-size
//    law (hash of i), a value size drawn once from the value-size law, and value bytes derived from
//    (key, version) so that every GET hit can be checked byte for byte. Values of 8 bytes or more
//    carry their 32-bit version in the first 4 bytes (little endian) followed by bytes derived from
//    (key, version); shorter values are derived from the key alone. Shared read-only by all
//    threads.
//  - OpGenerator: the per-thread operation stream (GET/SET/DELETE and which key; for the board
//    workloads: update/top-N read/member read, which board, member and score), seeded from
//    (--seed, thread index), so the same seed replays the same sequence.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config.hh"
#include "distributions.hh"

namespace bench {

enum class OpType : std::uint8_t {
  kGet,
  kSet,
  kDelete,
  kBoardSet,    // PUT /board/b<board>/member/m<key>?op=set, body = score
  kBoardTop,    // GET /board/b<board>/top?n=<top_n>
  kBoardScore,  // GET /board/b<board>/member/m<key>
};

struct Op {
  OpType type = OpType::kGet;
  std::uint64_t key = 0;    // index in [0, keys); board ops: the member in [0, members)
  bool cold = false;        // a key of the never-stored namespace (a planned miss)
  std::uint32_t board = 0;  // board ops: the board in [0, boards)
  double score = 0.0;       // kBoardSet: the score sent
};

// Fills in the workload's defaults (mix, miss ratio, value sizes) for anything left unset.
struct WorkloadDefaults {
  OpRatio ratio;
  double miss_ratio;
  bool preload;
  bool verify;  // GET hits are checked against the derived value
};
WorkloadDefaults defaults_for(WorkloadKind kind);

class KeySpace {
 public:
  static constexpr std::size_t kVersionedMinBytes = 8;

  explicit KeySpace(const WorkloadConfig& cfg);

  // Writes key (idx, cold) into out (at least kMaxKeyBytes long) and returns its length.
  std::size_t write_key(std::uint64_t idx, bool cold, char* out) const;
  std::string key(std::uint64_t idx, bool cold) const;
  std::size_t key_size(std::uint64_t idx, bool cold) const;
  std::size_t value_size(std::uint64_t idx) const;
  void make_value(std::uint64_t idx, std::uint32_t version, std::string& out) const;
  bool verify(std::uint64_t idx, std::string_view body) const;
  // Keys the preload phase stores: [0, preload_count()). Board workloads: boards x members
  // (entry i is member i % members of board i / members), 0 for board-update.
  std::uint64_t preload_count() const;
  std::uint64_t keys() const { return cfg_.keys; }

 private:
  WorkloadConfig cfg_;
  std::size_t id_width_ = 1;  // base-62 digits of the largest index
};

class OpGenerator {
 public:
  OpGenerator(const WorkloadConfig& cfg, std::uint64_t seed, std::uint64_t thread_index);
  Op next();

 private:
  enum class Popularity { kUniform, kZipf, kHot };
  std::uint64_t pick_key();

  WorkloadConfig cfg_;
  Rng rng_;
  Zipf zipf_;
  Popularity popularity_;
  bool board_ = false;  // a board workload: board ops only
  double p_get_ = 1.0;  // cumulative probabilities of the mix
  double p_set_ = 1.0;
};

}  // namespace bench
