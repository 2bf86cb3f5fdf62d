// board_service.cc — see board_service.hh. A change with a store goes through RowWriter (the
// registry's ChangeSink: admits the row, then forwards it to the tier under the board's lock,
// so one board's rows reach the store in the order they were applied); a read renders its JSON
// from the registry, or asks the store and renders its page (from_store: admitted against
// --max-inflight, answered by the store or at --store-timeout, whichever comes first).
#include "server/api/board_service.hh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "server/api/board_json.hh"
#include "server/api/reply.hh"
#include "store/store.hh"
#include "tier/deadline.hh"
#include "tier/tier.hh"

namespace server {
namespace {

constexpr std::string_view kMemberNotFound = "member not found";

// A write-through change has two halves: the registry's outcome (known on the connection's
// thread when the registry call returns) and its row's commit (on the store's completer, which
// can come first). Whichever arrives second delivers the answer.
class ChangeJoin {
 public:
  explicit ChangeJoin(Later<BoardChange> deliver) : deliver_(std::move(deliver)) {}

  void applied(BoardChange change) {
    std::unique_lock lock(mu_);
    applied_ = std::move(change);
    deliver_if_both(lock);
  }
  void committed(const KeyOutcome& o) {
    std::unique_lock lock(mu_);
    committed_ = o;
    deliver_if_both(lock);
  }

 private:
  void deliver_if_both(std::unique_lock<std::mutex>& lock) {
    if (!applied_ || !committed_) return;
    BoardChange answer = std::move(*applied_);
    if (committed_->kind == KeyOutcome::Kind::error) {
      answer = BoardChange{BoardChange::Kind::failed, {}, committed_->error};
    }
    lock.unlock();
    deliver_(answer);
  }

  std::mutex mu_;
  Later<BoardChange> deliver_;
  std::optional<BoardChange> applied_;
  std::optional<KeyOutcome> committed_;
};

// The registry's ChangeSink with a store: admits each change's row before the registry applies
// it (a reservation against --max-dirty), then hands the row to the tier. One registry call
// makes at most one row.
class RowWriter final : public boards::ChangeSink {
 public:
  RowWriter(StoreTier& tier, Reply<BoardChange>& reply) : tier_(tier), reply_(reply) {}
  ~RowWriter() {
    if (reserved_ != 0) tier_.release_row(reserved_);  // admitted, then not applied
  }
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  bool admit_change(std::string_view board, std::string_view member) override {
    tier::RowReservation r = tier_.reserve_row(board, member);
    if (r.refused) {
      refusal_ = std::move(r.refused->error);
      return false;
    }
    reserved_ = r.bytes;
    return true;
  }
  void member_set(std::string_view board, std::string_view member,
                  const boards::Stored& row) override {
    submit(
        store::Write::board_set_row(std::string(board), std::string(member), row.score, row.seq));
  }
  void member_removed(std::string_view board, std::string_view member) override {
    submit(store::Write::board_remove_row(std::string(board), std::string(member)));
  }
  void board_removed(std::string_view board) override {
    submit(store::Write::board_drop_rows(std::string(board)));
  }
  void refused_frozen() override { frozen_ = true; }

  // The registry call returned: `change` is its outcome (done, or why nothing changed; a
  // refusal this sink made is substituted for a remove's not_found). Answers now, or joins
  // the row's commit.
  void finish(BoardChange change) {
    if (change.kind == BoardChange::Kind::not_found) {
      if (frozen_) change.kind = BoardChange::Kind::frozen;
      if (!refusal_.empty()) change = BoardChange{BoardChange::Kind::refused, {}, refusal_};
    }
    if (change.kind == BoardChange::Kind::refused && change.error.empty()) change.error = refusal_;
    if (join_) return join_->applied(std::move(change));
    reply_.now(std::move(change));
  }

 private:
  void submit(store::Write row) {
    const std::size_t bytes = std::exchange(reserved_, 0);
    if (tier_.mode() == WriteMode::behind) {
      tier_.board_write(std::move(row), bytes, nullptr);  // into the dirty buffer: answered now
      return;
    }
    join_ = std::make_shared<ChangeJoin>(reply_.later(DeferKind::write));
    auto committed = tier::completion_of<KeyOutcome>(
        [join = join_](const KeyOutcome& o) { join->committed(o); });
    if (auto now = tier_.board_write(std::move(row), bytes, committed)) committed->answer(*now);
  }

  StoreTier& tier_;
  Reply<BoardChange>& reply_;
  std::size_t reserved_ = 0;          // admitted, not yet written
  std::string refusal_;               // admit_change refused: why
  bool frozen_ = false;               // refused: a reset is pending
  std::shared_ptr<ChangeJoin> join_;  // write-through: the answer waits for the commit
};

BoardChange change_of(const boards::UpdateOutcome& u) {
  using S = boards::UpdateOutcome::Status;
  using K = BoardChange::Kind;
  switch (u.status) {
    case S::ok:
      return {K::done, u.updated, {}};
    case S::no_space:
      return {K::no_space, {}, {}};
    case S::not_finite:
      return {K::not_finite, {}, {}};
    case S::frozen:
      return {K::frozen, {}, {}};
    case S::refused:
      break;
  }
  return {K::refused, {}, {}};
}

BoardChange removed_or_not(bool removed) {
  return {removed ? BoardChange::Kind::done : BoardChange::Kind::not_found, {}, {}};
}

BoardRead not_found(std::string_view what) {
  return {BoardRead::Kind::not_found, std::string(what)};
}

// What a store read holds beyond its names while the store has it (its queued op, its
// deadline's state, its reply's slot and renderer): an estimate, counted against --max-inflight
// as the tier counts a key read's kOpOverhead.
constexpr std::size_t kStoreReadOverhead = 256;

// The page a store read the deadline answered gets (the key path's text: tier/core.cc).
store::BoardPage board_timeout_page(std::chrono::milliseconds timeout) {
  store::BoardPage page;
  page.status = {store::Code::io_error,
                 "store timeout: no answer from the store within --store-timeout (" +
                     std::to_string(timeout.count()) + "ms)"};
  return page;
}

}  // namespace

BoardService::BoardService(boards::Registry& boards, StoreTier* tier, bool reads_from_store,
                           StoreReadBounds bounds)
    : boards_(boards),
      tier_(tier),
      source_(reads_from_store && tier != nullptr ? tier->board_reader() : nullptr),
      max_store_read_bytes_(bounds.max_waiting),
      timeout_page_(std::make_unique<const store::BoardPage>(board_timeout_page(bounds.timeout))),
      deadline_(source_ != nullptr ? std::make_unique<StoreDeadline>(bounds.timeout) : nullptr) {}

BoardService::~BoardService() = default;

std::optional<std::string> BoardService::admit_store_read(std::size_t cost) {
  std::size_t held = store_read_bytes_.load(std::memory_order_relaxed);
  do {
    if (cost > max_store_read_bytes_ || held > max_store_read_bytes_ - cost) {
      return "store read backlog full: " + std::to_string(held) +
             " bytes of board reads wait on the store (--max-inflight " +
             std::to_string(max_store_read_bytes_) + ")";
    }
  } while (!store_read_bytes_.compare_exchange_weak(held, held + cost, std::memory_order_relaxed));
  return std::nullopt;
}

// Asks the store (ask(done)) and answers with render(page) later: not_found with the store's
// "board not found" / "member not found", error for a store error or the deadline's timeout;
// at once with the backlog's error when the store holds --max-inflight bytes of reads. A read
// that found its board (answered, or "member not found") counts in store_reads_ (board_reads)
// if count_found (otherwise the render counts it); render_counts: the render counts the
// answered ones, store_reads_ only "member not found". name_bytes: the read's board and member.
template <class Ask, class Render>
void BoardService::from_store(std::size_t name_bytes, Reply<BoardRead>& reply, bool count_found,
                              Ask ask, Render render, bool render_counts) {
  const std::size_t cost = name_bytes + kStoreReadOverhead;
  if (auto full = admit_store_read(cost)) {
    return reply.now(BoardRead{BoardRead::Kind::error, std::move(*full)});
  }
  // Answered once: by the store's page, or at --store-timeout by timeout_page_ (then the page
  // the store gives later is dropped).
  const StoreDeadline::Answer<store::BoardPage> answer = deadline_->arm<store::BoardPage>(
      [this, deliver = reply.later(DeferKind::read), render, count_found,
       render_counts](const store::BoardPage& page) {
        if (count_found &&
            ((page.status.ok() && !render_counts) || page.status.message == kMemberNotFound)) {
          store_reads_.fetch_add(1, std::memory_order_relaxed);
        }
        if (page.status.code == store::Code::not_found) {
          return deliver(BoardRead{BoardRead::Kind::not_found, page.status.message});
        }
        if (!page.status.ok()) {
          return deliver(BoardRead{BoardRead::Kind::error, page.status.message});
        }
        deliver(BoardRead{BoardRead::Kind::ok, render(page)});
      },
      *timeout_page_);
  // The bytes stay counted until the store answers, whoever answered the client: a read the
  // deadline answered still waits in the store's queue.
  ask([this, cost, answer](store::BoardPage page) {
    store_read_bytes_.fetch_sub(cost, std::memory_order_relaxed);
    answer(page);
  });
}

std::size_t BoardService::members_of(std::string_view board, std::size_t at_least) const {
  std::size_t members = 0;
  boards_.read(board, [&](const boards::Board& b) { members = b.size(); });
  return std::max(members, at_least);
}

void BoardService::update(std::string_view board, std::string_view member, boards::Op op,
                          double value, Reply<BoardChange>& reply, bool want_ranks) {
  if (tier_ == nullptr) {
    return reply.now(change_of(boards_.update(board, member, op, value, nullptr, want_ranks)));
  }
  RowWriter rows(*tier_, reply);
  rows.finish(change_of(boards_.update(board, member, op, value, &rows, want_ranks)));
}

void BoardService::remove_member(std::string_view board, std::string_view member,
                                 Reply<BoardChange>& reply) {
  if (tier_ == nullptr) {
    return reply.now(removed_or_not(boards_.remove_member(board, member).has_value()));
  }
  RowWriter rows(*tier_, reply);
  rows.finish(removed_or_not(boards_.remove_member(board, member, &rows).has_value()));
}

void BoardService::remove_board(std::string_view board, Reply<BoardChange>& reply) {
  if (tier_ == nullptr) return reply.now(removed_or_not(boards_.remove_board(board)));
  RowWriter rows(*tier_, reply);
  rows.finish(removed_or_not(boards_.remove_board(board, &rows)));
}

void BoardService::member(std::string_view board, std::string_view member,
                          Reply<BoardRead>& reply) {
  if (source_ != nullptr) {
    return from_store(
        board.size() + member.size(), reply, true,
        [&](store::BoardPageDone done) {
          source_->board_member(std::string(board), std::string(member), std::move(done));
        },
        [m = std::string(member)](const store::BoardPage& page) {
          std::string json;
          if (!page.entries.empty()) {
            append_member(json, m, page.entries[0].score, page.entries[0].rank);
          }
          return json;
        });
  }
  std::string json;
  bool found_member = false;
  const bool found_board = boards_.read(board, [&](const boards::Board& b) {
    const std::optional<boards::Ranked> r = b.find(member);
    if (!r) return;
    found_member = true;
    append_member(json, member, r->score, r->rank);
  });
  if (!found_board) return reply.now(not_found(kBoardNotFound));
  if (!found_member) return reply.now(not_found(kMemberNotFound));
  reply.now(BoardRead{BoardRead::Kind::ok, std::move(json)});
}

void BoardService::top(std::string_view board, std::uint64_t offset, std::uint64_t n,
                       Reply<BoardRead>& reply) {
  if (source_ != nullptr) {
    // SQL's OFFSET is a bigint: anything past it is past every board's end anyway.
    const std::uint64_t sql_offset = std::min<std::uint64_t>(offset, INT64_MAX);
    // The page's rows are the database's; its member count is the board's in memory (the
    // count the updates keep, which every mode has), not a count(*) of the board per page.
    // Reading it counts the read in board_reads (found in memory), so from_store does not.
    return from_store(
        board.size(), reply, false,
        [&](store::BoardPageDone done) {
          source_->board_top(std::string(board), sql_offset, n, std::move(done));
        },
        [this, b = std::string(board), offset](const store::BoardPage& page) {
          // (At least the ranks the page holds, should memory lag the database.)
          const std::size_t shown = page.entries.empty() ? 0 : offset + page.entries.size();
          return render_window(b, members_of(b, shown), page_entries(page));
        });
  }
  // The entries come from the board's top-N cache when no update has moved a member within
  // them since they were rendered (--board-top-cache, boards/top_cache.hh); the member count
  // around them is read now.
  std::string json;
  const bool found = boards_.read_top(
      board, offset, n,
      [&](const boards::Board& b) {
        std::string entries;
        if (offset < b.size()) append_entries(entries, b, offset + 1, n);
        return entries;
      },
      [&](const boards::Board& b, const std::string& entries) {
        // A board being created or emptied does not exist yet / any more.
        if (!b.empty()) json = render_window(board, b.size(), entries);
      });
  if (!found || json.empty()) return reply.now(not_found(kBoardNotFound));
  reply.now(BoardRead{BoardRead::Kind::ok, std::move(json)});
}

void BoardService::around(std::string_view board, std::string_view member, std::uint64_t n,
                          Reply<BoardRead>& reply) {
  if (source_ != nullptr) {
    return from_store(
        board.size() + member.size(), reply, true,
        [&](store::BoardPageDone done) {
          source_->board_around(std::string(board), std::string(member), n, std::move(done));
        },
        // The member count is the board's in memory, as for a top page (no count(*) of the
        // board per read; reading it counts the answered read in board_reads).
        [this, b = std::string(board)](const store::BoardPage& page) {
          const std::size_t shown = page.entries.empty() ? 0 : page.entries.back().rank;
          return render_window(b, members_of(b, shown), page_entries(page));
        },
        true);
  }
  std::string json;
  bool found_member = false;
  const bool found_board = boards_.read(board, [&](const boards::Board& b) {
    const auto window = b.around(member, n);
    if (!window) return;
    found_member = true;
    std::string entries;
    append_entries(entries, b, window->first, window->second);
    json = render_window(board, b.size(), entries);
  });
  if (!found_board) return reply.now(not_found(kBoardNotFound));
  if (!found_member) return reply.now(not_found(kMemberNotFound));
  reply.now(BoardRead{BoardRead::Kind::ok, std::move(json)});
}

void BoardService::info(std::string_view board, Reply<BoardRead>& reply) {
  if (source_ != nullptr) {
    // The member count is the board's in memory, as for a top page; reading it counts the read.
    return from_store(
        board.size(), reply, false,
        [&](store::BoardPageDone done) {
          source_->board_info(std::string(board), std::move(done));
        },
        [this, b = std::string(board)](const store::BoardPage& page) {
          return render_info(b, members_of(b, 1), page.top_score, page.bottom_score);
        });
  }
  std::string json;
  const bool found = boards_.read(board, [&](const boards::Board& b) {
    if (b.empty()) return;  // as in top()
    json = render_info(board, b.size(), b.top_score(), b.bottom_score());
  });
  if (!found || json.empty()) return reply.now(not_found(kBoardNotFound));
  reply.now(BoardRead{BoardRead::Kind::ok, std::move(json)});
}

}  // namespace server
