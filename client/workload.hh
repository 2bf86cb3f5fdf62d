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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/config.hh"
#include "client/distributions.hh"

namespace client {

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

// Which key a key operation picks (etc, zipf: Zipf(--theta) scattered over the key space;
// get-popular: one of --hot-keys; the others uniform). fixed-get picks none.
enum class Popularity : std::uint8_t { kZipf, kHotKeys, kUniform, kFixedPath };
const char* popularity_name(Popularity p);  // the JSON's meta.workload.popularity

// What a workload talks to: /key/K (GET/PUT/DELETE), the one GET of --path, or /board/....
enum class WorkloadApi : std::uint8_t { kKeys, kFixedPath, kBoards };
// What the preload stores before the first point (KeySpace::preload_count).
enum class Preload : std::uint8_t { kNone, kKeys, kHotKeys, kBoardMembers };
// How an answer is checked beyond its status and framing: a GET hit's bytes against the derived
// value, a board answer parsed and checked (board_workload.hh), or the status only.
enum class AnswerCheck : std::uint8_t { kStatus, kValue, kBoardAnswer };

// WorkloadSpec::traits, or-ed.
inline constexpr unsigned kEtcValueSizes = 1;  // value sizes from the ETC model unless --value-size
inline constexpr unsigned kTakesRatio = 2;     // the flags only some workloads take (an error
inline constexpr unsigned kTakesMissRatio = 4;  // with the others)
inline constexpr unsigned kTakesTopN = 8;

// One workload: its name and --help lines, the operations it sends, its preload and its check.
// kWorkloads (workload.cc) holds one row per WorkloadKind; flag_table.cc and cli.cc (parsing,
// --help, the rules between flags), sweep.cc (JSON, preload), perf.cc (preload) and worker.cc
// (requests, checks) read the row, never the kind. Adding a workload: client/README.md.
struct WorkloadSpec {
  WorkloadKind kind;
  const char* name;  // --workload NAME and the JSON's meta.workload.name
  const char* help;  // its --help text after "NAME: "; '\n' starts an indented continuation line
  // Operations: the mix's GET weight sends `read` (kGet, kBoardTop or kBoardScore), its SET weight
  // a PUT (boards: an update), its DELETE weight a DELETE.
  WorkloadApi api;
  Popularity popularity;
  OpType read;
  OpRatio ratio;      // the default mix, GET:SET:DELETE (boards: reads:updates:0)
  double miss_ratio;  // default share of GETs aimed at never-stored keys
  unsigned traits;    // kEtcValueSizes, kTakesRatio, ...
  Preload preload;
  AnswerCheck check;

  bool has(unsigned trait) const { return (traits & trait) != 0; }
};

// The row of `kind`, and all rows in --help order.
const WorkloadSpec& workload_spec(WorkloadKind kind);
std::span<const WorkloadSpec> workload_specs();
// The names of the workloads `pick` selects, for --help and errors: "a", "a and b", "a, b and c"
// (sep ", ", last " and "), or all joined by one mark (sep = last = "|").
std::string workload_names(bool (*pick)(const WorkloadSpec&), std::string_view sep,
                           std::string_view last);

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
  // write_key's derivation (base-62 digits, a hashed size and padding: tens of ns per key).
  std::size_t derive_key(std::uint64_t idx, bool cold, char* out) const;

  WorkloadConfig cfg_;
  const WorkloadSpec* spec_;  // the row of cfg_.kind
  std::size_t id_width_ = 1;  // base-62 digits of the largest index
  // A small key space's stored keys, derived once (read-only afterwards, shared by the threads):
  // key i is key_bytes_[key_offsets_[i], key_offsets_[i + 1]). Empty when the space is too large.
  std::string key_bytes_;
  std::vector<std::uint32_t> key_offsets_;
};

class OpGenerator {
 public:
  OpGenerator(const WorkloadConfig& cfg, std::uint64_t seed, std::uint64_t thread_index);
  Op next();

 private:
  std::uint64_t pick_key();

  WorkloadConfig cfg_;
  Rng rng_;
  Zipf zipf_;
  Popularity popularity_;
  OpType read_;         // what a read sends (the row's)
  bool board_ = false;  // a board workload: board ops only
  double p_get_ = 1.0;  // cumulative probabilities of the mix
  double p_set_ = 1.0;
};

}  // namespace client
