// board_json.hh — the JSON bodies of the board routes (docs/api.md "Boards"), rendered by hand
// like the key's (json_escape.hh for names, boards::append_score for scores). A read renders
// under the board's shared lock (board_service.cc) and is sent after it is released; a page from
// the store (--board-source store) renders the same text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "boards/board.hh"
#include "store/store.hh"

namespace server {

// {"member": m, "score": s, "rank": r}
void append_member(std::string& out, std::string_view member, double score, std::size_t rank);
// The entries of ranks first .. first + count - 1 of the board, comma-separated
// {"rank": r, "member": m, "score": s} objects (nothing when count is 0): the text a top-N page
// caches.
void append_entries(std::string& json, const boards::Board& board, std::size_t first,
                    std::size_t count);
// A store page's entries, as append_entries renders a board's.
std::string page_entries(const store::BoardPage& page);
// {"board": b, "members": N, "entries": [ ...entries... ]}
std::string render_window(std::string_view name, std::size_t members, std::string_view entries);
// {"board": b, "members": N, "top_score": s, "bottom_score": s}
std::string render_info(std::string_view board, std::size_t members, double top, double bottom);

}  // namespace server
