// http_date.hh — the Date header's value (RFC 9110 §6.6.1: an origin server with a clock sends
// Date on every response), in IMF-fixdate form: "Sun, 06 Nov 1994 08:49:37 GMT".
//
// Formatting a date per response would cost a gmtime_r and a strftime each; instead every
// thread keeps the whole header line of the current second, "Date: ...\r\n", and renders it
// again only when the second changes. The clock (one vDSO clock_gettime(CLOCK_REALTIME_COARSE),
// no syscall) is read once per batch of input by the engine (refresh_http_date()), not per
// response, so a response pays one 37-byte append: in callgrind, pipelined GET hits went from
// about 100 added instructions each (clock read and three appends per response) to about 25.
#pragma once

#include <ctime>
#include <string_view>

namespace server {

inline constexpr std::size_t kHttpDateSize = 29;  // "Sun, 06 Nov 1994 08:49:37 GMT"

// Renders `seconds` (since the epoch, UTC) as IMF-fixdate into out[0..29).
void format_http_date(std::time_t seconds, char (&out)[kHttpDateSize]);

// Re-reads the clock and re-renders this thread's line if the second changed. Called by
// whatever is about to render responses on this thread (the engine once per consume(), the
// response queue before a deferred rendering, the listener before a refusal).
void refresh_http_date();
// "Date: <IMF-fixdate>\r\n" as this thread last refreshed it (refreshed first if it never was);
// valid on this thread until the next refresh.
std::string_view http_date_line();
// The current second as IMF-fixdate (refreshes first); valid on this thread until the next call.
std::string_view http_date_now();

}  // namespace server
