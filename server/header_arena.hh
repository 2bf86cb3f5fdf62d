// header_arena.hh — a per-connection bump arena for the request's header fields, and the
// allocator that lets Beast's basic_fields use it (the role fields_alloc plays in Beast's
// http_server_fast example).
//
// basic_fields allocates one block per field plus the target string. Here those come from a
// fixed block owned by the connection (allocated on first use, kept for the connection's life);
// when every block is returned — the parser for one request is destroyed — the arena rewinds.
// A request whose fields outgrow the block spills to the heap; nothing fails.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <new>

namespace server {

class HeaderArena {
 public:
  static constexpr std::size_t kBytes = 4096;

  void* allocate(std::size_t bytes, std::size_t align) {
    if (!block_) block_ = std::make_unique_for_overwrite<std::byte[]>(kBytes);
    const std::size_t start = (used_ + align - 1) & ~(align - 1);
    if (align <= alignof(std::max_align_t) && start + bytes <= kBytes) {
      used_ = start + bytes;
      ++live_;
      return block_.get() + start;
    }
    return ::operator new(bytes, std::align_val_t{align});
  }

  void deallocate(void* p, std::size_t align) noexcept {
    // Is p inside the block? p may point into another object (a spilled field), and ordering
    // pointers into different objects with < or >= is unspecified; std::less gives the
    // implementation's total order over all pointers, which is what this test needs.
    const auto* b = static_cast<const std::byte*>(p);
    const std::byte* first = block_.get();
    constexpr std::less<const std::byte*> before;
    if (block_ && !before(b, first) && before(b, first + kBytes)) {
      if (--live_ == 0) used_ = 0;
      return;
    }
    ::operator delete(p, std::align_val_t{align});
  }

 private:
  std::unique_ptr<std::byte[]> block_;
  std::size_t used_ = 0;
  std::size_t live_ = 0;
};

template <class T>
class ArenaAllocator {
 public:
  using value_type = T;

  explicit ArenaAllocator(HeaderArena& arena) noexcept : arena_(&arena) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& other) noexcept : arena_(other.arena()) {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(arena_->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t /*n*/) noexcept { arena_->deallocate(p, alignof(T)); }

  HeaderArena* arena() const noexcept { return arena_; }

  template <class U>
  bool operator==(const ArenaAllocator<U>& other) const noexcept {
    return arena_ == other.arena();
  }

 private:
  HeaderArena* arena_;
};

}  // namespace server
