// member_name.hh — a board member's name in 16 bytes: up to 15 bytes inline, longer names in
// one heap block of exactly their length. Any bytes (NUL included), at most 2^32 - 1.
//
// Why not std::string: a board node holds the name, the score, the arrival number and Boost's
// index links; with std::string's 32 bytes the node is 96 bytes, with this one 80 — a smaller
// jemalloc size class, which is what brings a 1M-member board under Redis's memory per member
// (boards/README.md, "Memory"). Hand-written because no library string is 16 bytes with a
// 15-byte inline buffer; it does nothing but own bytes and show them as a string_view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace boards {

class MemberName {
 public:
  static constexpr std::size_t kInline = 15;

  MemberName() { bytes_[kTag] = 0; }
  explicit MemberName(std::string_view s) {
    if (s.size() > UINT32_MAX) throw std::length_error("board member name over 4 GiB");
    assign(s);
  }
  MemberName(const MemberName& o) : MemberName(o.view()) {}
  MemberName(MemberName&& o) noexcept {
    std::memcpy(bytes_, o.bytes_, sizeof bytes_);
    o.bytes_[kTag] = 0;  // o no longer owns a heap block
  }
  MemberName& operator=(const MemberName& o) {
    if (this != &o) {
      MemberName copy(o);
      swap(copy);
    }
    return *this;
  }
  MemberName& operator=(MemberName&& o) noexcept {
    MemberName taken(std::move(o));
    swap(taken);
    return *this;
  }
  ~MemberName() {
    if (on_heap()) std::allocator<char>().deallocate(heap_data(), heap_size());
  }

  std::string_view view() const {
    if (on_heap()) return {heap_data(), heap_size()};
    return {reinterpret_cast<const char*>(bytes_), bytes_[kTag]};
  }
  operator std::string_view() const { return view(); }  // hashing and lookups go by view
  std::size_t size() const { return view().size(); }
  // Bytes of the heap block (0 when inline): what the board's memory estimate adds.
  std::size_t heap_bytes() const { return on_heap() ? heap_size() : 0; }

  void swap(MemberName& o) noexcept {
    unsigned char tmp[sizeof bytes_];
    std::memcpy(tmp, bytes_, sizeof tmp);
    std::memcpy(bytes_, o.bytes_, sizeof tmp);
    std::memcpy(o.bytes_, tmp, sizeof tmp);
  }

 private:
  // bytes_[0..14]: the name, inline; or bytes_[0..7] the heap block's address and bytes_[8..11]
  // its length. bytes_[15]: the inline length (0..15) or kHeapTag.
  static constexpr std::size_t kTag = 15;
  static constexpr unsigned char kHeapTag = 0xFF;

  bool on_heap() const { return bytes_[kTag] == kHeapTag; }
  char* heap_data() const {
    char* p;
    std::memcpy(&p, bytes_, sizeof p);
    return p;
  }
  std::uint32_t heap_size() const {
    std::uint32_t n;
    std::memcpy(&n, bytes_ + sizeof(char*), sizeof n);
    return n;
  }

  void assign(std::string_view s) {
    if (s.size() <= kInline) {
      std::memcpy(bytes_, s.data(), s.size());
      bytes_[kTag] = static_cast<unsigned char>(s.size());
      return;
    }
    char* p = std::allocator<char>().allocate(s.size());  // freed by the destructor
    std::memcpy(p, s.data(), s.size());
    const auto n = static_cast<std::uint32_t>(s.size());
    std::memcpy(bytes_, &p, sizeof p);
    std::memcpy(bytes_ + sizeof p, &n, sizeof n);
    bytes_[kTag] = kHeapTag;
  }

  alignas(8) unsigned char bytes_[16];
};
static_assert(sizeof(MemberName) == 16);

}  // namespace boards
