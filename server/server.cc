// server.cc — see server.hh.
#include "server/server.hh"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/open_store.hh"

namespace server {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// Opens the store --store names and puts the tier in front of it; null for --store none.
std::unique_ptr<StoreTier> open_tier(const Config& config, cache::Cache& cache) {
  if (config.store == "none") return nullptr;
  store::Faults faults;
  std::string error;
  if (!store::parse_faults(config.store_faults, faults, error)) {
    throw std::runtime_error("invalid --store-faults: " + error);
  }
  store::OpenOptions open;
  open.faults = faults;
  open.table = config.store_table;
  open.board_table = config.store_board_table;
  open.connections = config.store_connections;
  std::unique_ptr<store::Store> s = store::open_store(config.store, open, error);
  if (!s) {
    // The URI is named by its scheme only: a postgres conninfo may hold a password.
    const std::optional<StoreUri> uri = parse_store_uri(config.store);
    const std::string what = uri && uri->scheme == "rocksdb"
                                 ? config.store
                                 : std::string(uri ? uri->scheme : "?") + ":...";
    throw std::runtime_error("cannot open --store " + what + ": " + error);
  }
  tier::TierOptions options;
  options.store_timeout = config.store_timeout;
  options.mode = config.write_mode;
  options.flush_interval = config.flush_interval;  // validated >= 1ms (0: no flusher thread)
  options.max_dirty = config.max_dirty;
  options.max_waiting = config.max_inflight;
  return std::make_unique<StoreTier>(cache, std::move(s), options);
}

// Rebuilds every board from the store's rows (store.hh, load_boards); returns the line that says
// how long it took. The rows are gathered per board and restored in rank order, so each goes in
// at the end of its board's index (Board::restore). Throws when the store cannot be read or the
// rows need more than --board-maxmem: a server that starts with part of its boards would serve
// wrong ranks.
std::string rebuild_boards(StoreTier& tier, boards::Registry& registry, std::size_t maxmem) {
  const auto started = std::chrono::steady_clock::now();
  struct Row {
    std::string member;
    boards::Stored stored;
  };
  std::unordered_map<std::string, std::vector<Row>> rows_by_board;
  std::uint64_t rows = 0, refused = 0;
  const store::Status s = tier.load_boards([&](const store::BoardRow& row) {
    ++rows;
    rows_by_board[std::string(row.board)].push_back(
        Row{std::string(row.member), boards::Stored{row.score, row.seq}});
  });
  if (!s.ok()) throw std::runtime_error("cannot rebuild the boards from the store: " + s.message);
  for (auto& [board, board_rows] : rows_by_board) {
    std::sort(board_rows.begin(), board_rows.end(), [](const Row& a, const Row& b) {
      if (a.stored.score != b.stored.score) return a.stored.score > b.stored.score;
      return a.stored.seq < b.stored.seq;
    });
    std::vector<boards::Registry::RestoreRow> restore;
    restore.reserve(board_rows.size());
    for (const Row& row : board_rows) restore.push_back({row.member, row.stored});
    refused += registry.restore_board(board, restore);
    board_rows = {};  // give the memory back as we go
  }
  if (refused > 0) {
    throw std::runtime_error("the store holds " + std::to_string(rows) +
                             " board members, more than --board-maxmem " + std::to_string(maxmem) +
                             " bytes holds (" + std::to_string(refused) +
                             " did not fit): raise --board-maxmem");
  }
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const boards::RegistryStats st = registry.stats();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", ms);
  return "boards rebuilt from the store: " + std::to_string(st.members) + " members in " +
         std::to_string(st.boards) + " boards, " + std::to_string(st.bytes) + " bytes, in " + took +
         " ms";
}

}  // namespace

Server::Server(const Config& config)
    : config_(config),
      cache_(cache_options(config_)),
      stats_(config_.threads),
      tier_(open_tier(config_, cache_)),
      ctx_(config_, cache_, stats_, tier_.get()) {
  if (tier_) boards_rebuilt_ = rebuild_boards(*tier_, ctx_.boards, config_.board_maxmem);
}

Server::~Server() {
  stop();
}

std::string Server::listen() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(config_.host, ec);
  if (ec) return "unusable listen address '" + config_.host + "': " + ec.message();
  const bool per_thread = config_.io_model == IoModel::per_thread;
  const std::size_t n_contexts = per_thread ? config_.threads : 1;
  // Per-thread model: every socket, acceptor and timer of a context is used only by the one
  // thread that runs it (other threads reach it only through post() and stop(), which keep
  // their scheduler lock), so the reactor's per-descriptor mutexes can go: UNSAFE_IO. The
  // profile (optimizations/README.md) showed those lock/unlock pairs among the top user costs.
  const int hint =
      per_thread ? BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO : static_cast<int>(config_.threads);
  for (std::size_t i = 0; i < n_contexts; ++i) {
    contexts_.push_back(std::make_unique<asio::io_context>(hint));
    if (per_thread) {
      inboxes_.push_back(std::make_shared<CompletionInbox>(contexts_.back()->get_executor()));
    }
  }
  const ConnectionStarter start_connection = connection_starter(config_);  // the variant
  if (std::string error = bind_front(tcp::endpoint(address, config_.port), start_connection,
                                     Front::http, endpoint_);
      !error.empty()) {
    return error;
  }
  ctx_.http_port = endpoint_.port();
  if (!config_.served_by.empty()) {
    std::string& line = ctx_.served_by_line;
    line = "X-Served-By: ";
    if (config_.served_by != "on") {
      line += config_.served_by;
    } else {
      const bool v6 = endpoint_.address().is_v6();
      line += v6 ? "[" : "";
      line += endpoint_.address().to_string();
      line += v6 ? "]:" : ":";
      line += std::to_string(endpoint_.port());
    }
    line += "\r\n";
  }
  if (config_.resp_port) {
    if (std::string error = bind_front(tcp::endpoint(address, *config_.resp_port),
                                       resp_connection_starter(), Front::resp, resp_endpoint_);
        !error.empty()) {
      return "--resp-port: " + error;
    }
    ctx_.resp_port = resp_endpoint_.port();
  }
  return {};
}

// One front's acceptors: one per context (SO_REUSEPORT) in the per-thread model, else one.
std::string Server::bind_front(tcp::endpoint endpoint, ConnectionStarter start_connection,
                               Front front, tcp::endpoint& bound) {
  const bool per_thread = config_.io_model == IoModel::per_thread;
  boost::system::error_code ec;
  std::string error;
  if (per_thread && endpoint.port() != 0) {
    // SO_REUSEPORT would let us silently share a port another server holds: probe without it.
    auto probe = open_acceptor(contexts_[0]->get_executor(), endpoint, false, error);
    if (!error.empty()) return error;
    probe.close(ec);
  }
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    // Shared model: the acceptor gets a strand, as its handlers may run on any thread.
    const asio::any_io_executor executor =
        per_thread ? asio::any_io_executor(contexts_[i]->get_executor())
                   : asio::any_io_executor(asio::make_strand(*contexts_[i]));
    auto acceptor = open_acceptor(executor, endpoint, per_thread, error);
    if (!error.empty()) return error;
    if (i == 0) {
      endpoint = acceptor.local_endpoint(ec);  // with port 0: the port the kernel picked
      if (ec) return "cannot read the bound address: " + ec.message();
      bound = endpoint;
    }
    listeners_.push_back(std::make_shared<Listener>(*contexts_[i], std::move(acceptor), ctx_, i,
                                                    !per_thread, start_connection, front));
  }
  return {};
}

void Server::start() {
  sweeper_.emplace(cache_);
  for (auto& ioc : contexts_) guards_.push_back(asio::make_work_guard(*ioc));
  for (auto& listener : listeners_) listener->start();
  for (unsigned t = 0; t < config_.threads; ++t) {
    asio::io_context& ioc = *contexts_[t % contexts_.size()];
    CompletionInbox* inbox = inboxes_.empty() ? nullptr : inboxes_[t % inboxes_.size()].get();
    threads_.emplace_back([&ioc, inbox] {
      CompletionInbox::set_current(inbox);  // the connections this thread starts answer there
      ioc.run();
    });
  }
}

void Server::stop() {
  if (stopped_) return;
  stopped_ = true;
  ctx_.stopping.store(true);
  for (auto& listener : listeners_) listener->stop();
  const auto give_up = std::chrono::steady_clock::now() + kDrainTime;
  while (!threads_.empty() && stats_.sum().busy_connections() > 0 &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& ioc : contexts_) ioc->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  sweeper_.reset();
  // Before the contexts go: store callbacks may still post completions into them.
  if (tier_) unflushed_ = tier_->shutdown();
  for (auto& inbox : inboxes_) inbox->close();  // nothing more is posted into the contexts
  guards_.clear();
  listeners_.clear();
  contexts_.clear();  // destroys pending handlers, and with them the connections
}

}  // namespace server
