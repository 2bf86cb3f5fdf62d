// board_json.cc — see board_json.hh.
#include "server/board_json.hh"

#include <charconv>

#include "boards/score.hh"
#include "server/json_escape.hh"

namespace server {
namespace {

void append_u64(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_string(std::string& out, std::string_view bytes) {
  out += '"';
  json_escape_append(bytes, out);
  out += '"';
}

// One {"rank": r, "member": m, "score": s} object, after a comma unless it is the first.
void append_entry(std::string& json, std::size_t rank, std::string_view member, double score) {
  json += json.empty() ? "{\"rank\": " : ", {\"rank\": ";
  append_u64(json, rank);
  json += ", \"member\": ";
  append_string(json, member);
  json += ", \"score\": ";
  boards::append_score(json, score);
  json += '}';
}

}  // namespace

void append_member(std::string& out, std::string_view member, double score, std::size_t rank) {
  out += "{\"member\": ";
  append_string(out, member);
  out += ", \"score\": ";
  boards::append_score(out, score);
  out += ", \"rank\": ";
  append_u64(out, rank);
  out += '}';
}

void append_entries(std::string& json, const boards::Board& board, std::size_t first,
                    std::size_t count) {
  if (count == 0) return;
  board.for_ranks(first, count, [&json](const boards::Ranked& r) {
    append_entry(json, r.rank, r.member, r.score);
  });
}

std::string page_entries(const store::BoardPage& page) {
  std::string json;
  for (const store::BoardEntry& e : page.entries) append_entry(json, e.rank, e.member, e.score);
  return json;
}

std::string render_window(std::string_view name, std::size_t members, std::string_view entries) {
  std::string json = "{\"board\": ";
  append_string(json, name);
  json += ", \"members\": ";
  append_u64(json, members);
  json += ", \"entries\": [";
  json += entries;
  json += "]}";
  return json;
}

std::string render_info(std::string_view board, std::size_t members, double top, double bottom) {
  std::string json = "{\"board\": ";
  append_string(json, board);
  json += ", \"members\": ";
  append_u64(json, members);
  json += ", \"top_score\": ";
  boards::append_score(json, top);
  json += ", \"bottom_score\": ";
  boards::append_score(json, bottom);
  json += '}';
  return json;
}

}  // namespace server
