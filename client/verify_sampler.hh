// --verify all|N|off: which answers bench_client checks in full (body parsed and compared with
// what the request must get back). Owns the flag's value (VerifyPolicy) and one connection's
// place in the rule (VerifySampler): the first checkable answer of every connection is checked,
// then one in N (N = 64 by default; all = 1; off = none). Status and framing are checked on every
// answer whatever the setting; this rule decides only the full check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace client {

struct VerifyPolicy {
  static constexpr std::uint32_t kDefaultEvery = 64;
  static constexpr std::uint32_t kMaxEvery = 1'000'000'000;
  // 1 = every answer ("all"); 0 = none in full ("off"); N = the first, then one in N.
  std::uint32_t every = kDefaultEvery;

  // "all", "off" or a decimal N in 1..kMaxEvery; nullopt for anything else ("0", "abc", "-3").
  static std::optional<VerifyPolicy> parse(std::string_view text);
  // The flag's text: "all", "off" or N.
  std::string text() const;
};

// One connection's position in the rule. A checkable answer is one whose body would be checked
// under --verify all (a 200 to a GET of a verifying workload, or to a board read).
class VerifySampler {
 public:
  explicit VerifySampler(VerifyPolicy policy = {}) : every_(policy.every) {}
  // Whether the connection's next checkable answer is checked in full.
  bool next_sampled() const { return every_ != 0 && seen_ % every_ == 0; }
  // A checkable answer arrived (checked in full or not).
  void advance() { ++seen_; }
  // The connection was (re)opened: its first checkable answer is checked again.
  void restart() { seen_ = 0; }

 private:
  std::uint32_t every_;
  std::uint64_t seen_ = 0;
};

}  // namespace client
