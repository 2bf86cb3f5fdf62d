// http_date.cc — see http_date.hh.
#include "server/transport/http_date.hh"

#include <time.h>

#include <algorithm>

namespace server {

namespace {

constexpr char kDays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr char kMonths[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void two_digits(char* at, int v) {
  at[0] = static_cast<char>('0' + v / 10);
  at[1] = static_cast<char>('0' + v % 10);
}

constexpr std::string_view kName = "Date: ";

struct DateCache {
  std::time_t second = -1;
  char line[kName.size() + kHttpDateSize + 2] = {};  // "Date: " + date + "\r\n"
};

thread_local DateCache cache;

}  // namespace

void format_http_date(std::time_t seconds, char (&out)[kHttpDateSize]) {
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  // "Sun, 06 Nov 1994 08:49:37 GMT": fixed positions, no locale (strftime's %a and %b follow
  // LC_TIME; the header must be English whatever the environment says).
  char* p = out;
  const char* day = kDays[tm.tm_wday];
  const char* month = kMonths[tm.tm_mon];
  p[0] = day[0], p[1] = day[1], p[2] = day[2], p[3] = ',', p[4] = ' ';
  two_digits(p + 5, tm.tm_mday);
  p[7] = ' ';
  p[8] = month[0], p[9] = month[1], p[10] = month[2], p[11] = ' ';
  const int year = tm.tm_year + 1900;  // four digits until the year 9999
  two_digits(p + 12, year / 100);
  two_digits(p + 14, year % 100);
  p[16] = ' ';
  two_digits(p + 17, tm.tm_hour);
  p[19] = ':';
  two_digits(p + 20, tm.tm_min);
  p[22] = ':';
  two_digits(p + 23, tm.tm_sec);
  p[25] = ' ', p[26] = 'G', p[27] = 'M', p[28] = 'T';
}

void refresh_http_date() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  if (now.tv_sec == cache.second) return;
  char text[kHttpDateSize];
  format_http_date(now.tv_sec, text);
  char* p = std::copy(kName.begin(), kName.end(), cache.line);
  p = std::copy(text, text + kHttpDateSize, p);
  p[0] = '\r';
  p[1] = '\n';
  cache.second = now.tv_sec;
}

std::string_view http_date_line() {
  if (cache.second < 0) refresh_http_date();
  return {cache.line, sizeof cache.line};
}

std::string_view http_date_now() {
  refresh_http_date();
  return {cache.line + kName.size(), kHttpDateSize};
}

}  // namespace server
