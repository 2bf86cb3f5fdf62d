// Key/value construction and operation streams (see workload.hh).
#include "client/workload.hh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "client/board_workload.hh"

namespace client {
namespace {

constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr std::uint64_t kBase = 62;
constexpr std::uint64_t kKeySizeSalt = 0x6b65792d73697a65ull;    // "key-size"
constexpr std::uint64_t kValueSizeSalt = 0x76616c2d73697a65ull;  // "val-size"
constexpr std::uint64_t kColdSalt = 0x636f6c642d6b6579ull;       // "cold-key"
constexpr std::uint64_t kValueSalt = 0x76616c75652d6279ull;      // "value-by"
// A prime above any key count we accept, so rank -> (rank * prime) mod n is a bijection that
// scatters the popular ranks across the key space (and thus across key and value sizes).
constexpr std::uint64_t kScatterPrime = 2'654'435'761ull;
// Key spaces up to this many keys (and this many bytes of keys) keep their stored keys derived
// once (KeySpace::key_bytes_): a request then copies its key instead of deriving it.
constexpr std::uint64_t kKeyTableKeys = 1u << 16;
constexpr std::size_t kKeyTableBytes = 4u << 20;

void fill_stream(std::uint64_t seed, char* out, std::size_t n) {
  std::uint64_t counter = 0;
  while (n > 0) {
    const std::uint64_t word = mix64(seed + counter++);
    const std::size_t chunk = std::min<std::size_t>(n, sizeof word);
    std::memcpy(out, &word, chunk);
    out += chunk;
    n -= chunk;
  }
}

// Whole words are compared as integers (a memcmp call per 8 bytes cost ~100 us per 100 KiB value,
// the whole client's time on large GETs); the tail, if any, bytewise.
bool stream_equals(std::uint64_t seed, const char* data, std::size_t n) {
  std::uint64_t counter = 0;
  for (; n >= sizeof(std::uint64_t); n -= sizeof(std::uint64_t)) {
    std::uint64_t got = 0;
    std::memcpy(&got, data, sizeof got);
    if (got != mix64(seed + counter++)) return false;
    data += sizeof got;
  }
  if (n == 0) return true;
  const std::uint64_t word = mix64(seed + counter);
  return std::memcmp(data, &word, n) == 0;
}

std::uint64_t key_hash(std::uint64_t idx) {
  return mix64(idx ^ kValueSalt);
}

constexpr OpRatio mix(double get, double set, double del) {
  return OpRatio{get, set, del};
}

// One row per workload, in WorkloadKind order (checked below); the order is --help's. Columns:
// kind, name, --help text; the operations: API, popularity, what a read sends, default mix and
// miss ratio; traits (ETC value sizes, the flags it takes); preload; check of the answers.
constexpr WorkloadSpec kWorkloads[] = {
    {WorkloadKind::kEtc, "etc",
     "Facebook ETC key/value sizes, GET:SET 30:1, Zipf popularity,\n"
     "20% of GETs aimed at never-stored keys (hit rate ~80%)",
     WorkloadApi::kKeys, Popularity::kZipf, OpType::kGet, mix(30, 1, 0),
     WorkloadConfig::kEtcMissRatio, kEtcValueSizes | kTakesRatio | kTakesMissRatio, Preload::kKeys,
     AnswerCheck::kValue},
    {WorkloadKind::kGetPopular, "get-popular", "GETs of --hot-keys keys", WorkloadApi::kKeys,
     Popularity::kHotKeys, OpType::kGet, mix(1, 0, 0), 0.0, 0, Preload::kHotKeys,
     AnswerCheck::kValue},
    {WorkloadKind::kPutAll, "put-all", "PUTs only (creates, then updates), no preload",
     WorkloadApi::kKeys, Popularity::kUniform, OpType::kGet, mix(0, 1, 0), 0.0, 0, Preload::kNone,
     AnswerCheck::kValue},
    {WorkloadKind::kMixed, "mixed", "--ratio mix (default 90:10:0), uniform popularity",
     WorkloadApi::kKeys, Popularity::kUniform, OpType::kGet, mix(90, 10, 0), 0.0,
     kTakesRatio | kTakesMissRatio, Preload::kKeys, AnswerCheck::kValue},
    {WorkloadKind::kZipf, "zipf", "--ratio mix (default 30:1:0), Zipf(--theta) popularity",
     WorkloadApi::kKeys, Popularity::kZipf, OpType::kGet, mix(30, 1, 0), 0.0,
     kTakesRatio | kTakesMissRatio, Preload::kKeys, AnswerCheck::kValue},
    {WorkloadKind::kUniform, "uniform", "--ratio mix (default 30:1:0), uniform popularity",
     WorkloadApi::kKeys, Popularity::kUniform, OpType::kGet, mix(30, 1, 0), 0.0,
     kTakesRatio | kTakesMissRatio, Preload::kKeys, AnswerCheck::kValue},
    {WorkloadKind::kFixedGet, "fixed-get", "GET --path only, any server; 200 is success",
     WorkloadApi::kFixedPath, Popularity::kFixedPath, OpType::kGet, mix(1, 0, 0), 0.0, 0,
     Preload::kNone, AnswerCheck::kStatus},
    // Board workloads: GET = reads (top-N, or member reads for board-score), SET = updates.
    {WorkloadKind::kBoardUpdate, "board-update",
     "PUT /board/b/member/m?op=set, random scores,\n"
     "no preload",
     WorkloadApi::kBoards, Popularity::kUniform, OpType::kBoardTop, mix(0, 1, 0), 0.0, 0,
     Preload::kNone, AnswerCheck::kBoardAnswer},
    {WorkloadKind::kBoardTop, "board-top", "GET /board/b/top?n=--top-n", WorkloadApi::kBoards,
     Popularity::kUniform, OpType::kBoardTop, mix(1, 0, 0), 0.0, kTakesTopN, Preload::kBoardMembers,
     AnswerCheck::kBoardAnswer},
    {WorkloadKind::kBoardMixed, "board-mixed",
     "top-N reads and updates, --ratio R:U:0\n"
     "(default 90:10:0)",
     WorkloadApi::kBoards, Popularity::kUniform, OpType::kBoardTop, mix(90, 10, 0), 0.0,
     kTakesRatio | kTakesTopN, Preload::kBoardMembers, AnswerCheck::kBoardAnswer},
    {WorkloadKind::kBoardScore, "board-score", "GET /board/b/member/m", WorkloadApi::kBoards,
     Popularity::kUniform, OpType::kBoardScore, mix(1, 0, 0), 0.0, 0, Preload::kBoardMembers,
     AnswerCheck::kBoardAnswer},
};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kWorkloads); ++i)
    if (static_cast<std::size_t>(kWorkloads[i].kind) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kWorkloads: one row per WorkloadKind, in enum order");

}  // namespace

const WorkloadSpec& workload_spec(WorkloadKind kind) {
  return kWorkloads[static_cast<std::size_t>(kind)];
}

std::span<const WorkloadSpec> workload_specs() {
  return kWorkloads;
}

std::string workload_names(bool (*pick)(const WorkloadSpec&), std::string_view sep,
                           std::string_view last) {
  std::vector<std::string_view> names;
  for (const WorkloadSpec& w : workload_specs())
    if (pick(w)) names.emplace_back(w.name);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last : sep;
    out += names[i];
  }
  return out;
}

const char* workload_name(WorkloadKind kind) {
  return workload_spec(kind).name;
}

bool is_board_workload(WorkloadKind kind) {
  return workload_spec(kind).api == WorkloadApi::kBoards;
}

const char* popularity_name(Popularity p) {
  constexpr const char* kNames[] = {"zipf", "hot-keys", "uniform", "fixed-path"};  // enum order
  static_assert(std::size(kNames) == static_cast<std::size_t>(Popularity::kFixedPath) + 1);
  return kNames[static_cast<std::size_t>(p)];
}

KeySpace::KeySpace(const WorkloadConfig& cfg) : cfg_(cfg), spec_(&workload_spec(cfg.kind)) {
  std::uint64_t largest = cfg_.keys > 0 ? cfg_.keys - 1 : 0;
  id_width_ = 1;
  while (largest >= kBase) {
    largest /= kBase;
    ++id_width_;
  }
  if (cfg_.keys == 0 || cfg_.keys > kKeyTableKeys) return;
  char key[WorkloadConfig::kMaxKeyBytes];
  key_offsets_.reserve(cfg_.keys + 1);
  key_offsets_.push_back(0);
  for (std::uint64_t i = 0; i < cfg_.keys; ++i) {
    key_bytes_.append(key, derive_key(i, false, key));
    if (key_bytes_.size() > kKeyTableBytes) {
      key_bytes_ = {};
      key_offsets_ = {};
      return;
    }
    key_offsets_.push_back(static_cast<std::uint32_t>(key_bytes_.size()));
  }
}

std::size_t KeySpace::key_size(std::uint64_t idx, bool cold) const {
  const std::size_t minimum = 1 + id_width_;
  std::size_t size = cfg_.key_bytes;
  if (size == 0) {
    const double u = unit_from_hash(mix64(idx ^ kKeySizeSalt ^ (cold ? kColdSalt : 0)));
    const double drawn = std::round(kEtcKeySize.quantile(u));
    size = drawn < 1.0 ? 1 : static_cast<std::size_t>(std::min(drawn, 1000.0));
  }
  return std::clamp<std::size_t>(size, minimum, WorkloadConfig::kMaxKeyBytes);
}

std::size_t KeySpace::write_key(std::uint64_t idx, bool cold, char* out) const {
  if (!cold && idx + 1 < key_offsets_.size()) {
    const std::size_t begin = key_offsets_[idx], size = key_offsets_[idx + 1] - begin;
    std::memcpy(out, key_bytes_.data() + begin, size);
    return size;
  }
  return derive_key(idx, cold, out);
}

std::size_t KeySpace::derive_key(std::uint64_t idx, bool cold, char* out) const {
  const std::size_t size = key_size(idx, cold);
  out[0] = cold ? 'm' : 'k';
  std::uint64_t rest = idx;
  for (std::size_t i = id_width_; i > 0; --i) {
    out[i] = kAlphabet[rest % kBase];
    rest /= kBase;
  }
  std::uint64_t pad = mix64(idx ^ kColdSalt);
  for (std::size_t i = 1 + id_width_; i < size; ++i) {
    out[i] = kAlphabet[pad % kBase];
    pad = pad / kBase;
    if (pad < kBase) pad = mix64(pad + i);
  }
  return size;
}

std::string KeySpace::key(std::uint64_t idx, bool cold) const {
  char buf[WorkloadConfig::kMaxKeyBytes];
  return std::string(buf, write_key(idx, cold, buf));
}

std::size_t KeySpace::value_size(std::uint64_t idx) const {
  if (cfg_.value_bytes != 0) return cfg_.value_bytes;
  if (!spec_->has(kEtcValueSizes)) return WorkloadConfig::kDefaultFixedValueBytes;
  const std::uint64_t drawn = EtcValueSize::quantile(unit_from_hash(mix64(idx ^ kValueSizeSalt)));
  return static_cast<std::size_t>(std::min<std::uint64_t>(drawn, cfg_.max_value_bytes));
}

void KeySpace::make_value(std::uint64_t idx, std::uint32_t version, std::string& out) const {
  const std::size_t size = value_size(idx);
  out.resize(size);
  if (size >= kVersionedMinBytes) {
    std::memcpy(out.data(), &version, sizeof version);
    fill_stream(key_hash(idx) ^ mix64(version), out.data() + sizeof version, size - sizeof version);
  } else {
    fill_stream(key_hash(idx), out.data(), size);
  }
}

bool KeySpace::verify(std::uint64_t idx, std::string_view body) const {
  if (body.size() != value_size(idx)) return false;
  if (body.size() >= kVersionedMinBytes) {
    std::uint32_t version = 0;
    std::memcpy(&version, body.data(), sizeof version);
    return stream_equals(key_hash(idx) ^ mix64(version), body.data() + sizeof version,
                         body.size() - sizeof version);
  }
  return stream_equals(key_hash(idx), body.data(), body.size());
}

std::uint64_t KeySpace::preload_count() const {
  switch (spec_->preload) {
    case Preload::kNone:
      break;
    case Preload::kKeys:
      return cfg_.keys;
    case Preload::kHotKeys:
      return std::min(cfg_.hot_keys, cfg_.keys);
    case Preload::kBoardMembers:
      return std::uint64_t{cfg_.boards} * cfg_.members;
  }
  return 0;
}

OpGenerator::OpGenerator(const WorkloadConfig& cfg, std::uint64_t seed, std::uint64_t thread_index)
    : cfg_(cfg),
      rng_(mix64(seed) ^ mix64(thread_index * 0x9e3779b97f4a7c15ull + 1)),
      zipf_(cfg.keys, cfg.theta),
      popularity_(Popularity::kUniform),
      read_(OpType::kGet) {
  const WorkloadSpec& spec = workload_spec(cfg_.kind);
  popularity_ = spec.popularity;
  read_ = spec.read;
  board_ = spec.api == WorkloadApi::kBoards;
  const double total = cfg_.ratio.get + cfg_.ratio.set + cfg_.ratio.del;
  p_get_ = total > 0 ? cfg_.ratio.get / total : 1.0;
  p_set_ = total > 0 ? (cfg_.ratio.get + cfg_.ratio.set) / total : 1.0;
}

std::uint64_t OpGenerator::pick_key() {
  switch (popularity_) {
    case Popularity::kZipf: {
      const std::uint64_t rank = zipf_.sample(rng_);  // 1 = most popular
      return ((rank - 1) % cfg_.keys) * kScatterPrime % cfg_.keys;
    }
    case Popularity::kHotKeys:
      return rng_.below(std::max<std::uint64_t>(1, std::min(cfg_.hot_keys, cfg_.keys)));
    case Popularity::kUniform:
    case Popularity::kFixedPath:
      break;
  }
  return rng_.below(cfg_.keys);
}

Op OpGenerator::next() {
  Op op;
  const double u = rng_.uniform01();
  if (board_) {
    // Uniform board and member; GET weight = reads, SET weight = updates (DELETE is 0).
    op.type = u < p_get_ ? read_ : OpType::kBoardSet;
    op.board = static_cast<std::uint32_t>(rng_.below(std::max<std::uint32_t>(cfg_.boards, 1)));
    if (op.type != OpType::kBoardTop) op.key = rng_.below(std::max<std::uint64_t>(cfg_.members, 1));
    if (op.type == OpType::kBoardSet) op.score = random_board_score(rng_, cfg_.score_max);
    return op;
  }
  op.type = u < p_get_ ? read_ : (u < p_set_ ? OpType::kSet : OpType::kDelete);
  op.key = pick_key();
  if (op.type == OpType::kGet && cfg_.miss_ratio > 0.0)
    op.cold = rng_.uniform01() < cfg_.miss_ratio;
  return op;
}

}  // namespace client
