// board_json.cc — see board_json.hh.
#include "server/api/board_json.hh"

#include <charconv>

#include "boards/score.hh"
#include "common/decimal.hh"
#include "server/transport/json_escape.hh"

namespace server {
namespace {

void append_string(std::string& out, std::string_view bytes) {
  out += '"';
  json_escape_append(bytes, out);
  out += '"';
}

// A field: `key` is the text before the value ("{\"rank\": ", ", \"member\": "), then the value.
void u64_field(std::string& out, std::string_view key, std::uint64_t v) {
  out += key;
  common::append_decimal(out, v);
}
void string_field(std::string& out, std::string_view key, std::string_view v) {
  out += key;
  append_string(out, v);
}
void score_field(std::string& out, std::string_view key, double score) {
  out += key;
  boards::append_score(out, score);
}

// One {"rank": r, "member": m, "score": s} object, after a comma unless it is the first.
void append_entry(std::string& json, std::size_t rank, std::string_view member, double score) {
  u64_field(json, json.empty() ? "{\"rank\": " : ", {\"rank\": ", rank);
  string_field(json, ", \"member\": ", member);
  score_field(json, ", \"score\": ", score);
  json += '}';
}

}  // namespace

void append_member(std::string& out, std::string_view member, double score, std::size_t rank) {
  string_field(out, "{\"member\": ", member);
  score_field(out, ", \"score\": ", score);
  u64_field(out, ", \"rank\": ", rank);
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
  std::string json;
  string_field(json, "{\"board\": ", name);
  u64_field(json, ", \"members\": ", members);
  json += ", \"entries\": [";
  json += entries;
  json += "]}";
  return json;
}

std::string render_info(std::string_view board, std::size_t members, double top, double bottom) {
  std::string json;
  string_field(json, "{\"board\": ", board);
  u64_field(json, ", \"members\": ", members);
  score_field(json, ", \"top_score\": ", top);
  score_field(json, ", \"bottom_score\": ", bottom);
  json += '}';
  return json;
}

}  // namespace server
