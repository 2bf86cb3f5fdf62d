// Report writers: the human table (stdout), the JSON document and the CSV file. They only read a
// SweepResult / PointResult; every number they print was computed by the measurement code.
// The formats are documented field by field in docs/client.md.
#pragma once

#include <ostream>
#include <string>

#include "client/result.hh"

namespace client {

void write_table_preamble(std::ostream& os, const SweepResult& result);
void write_table_header(std::ostream& os, bool open_loop);
void write_table_row(std::ostream& os, const PointResult& p);
// Warnings and notes belonging to a point (errors by code, rate not sustained, abort).
void write_point_notes(std::ostream& os, const PointResult& p);
// --slo: one line per step as it completes, and the answer at the end.
void write_slo_step(std::ostream& os, const SloReport& s, const SloStepRecord& step);
void write_slo_summary(std::ostream& os, const SloReport& s);

// Return false and fill err when the file cannot be written.
bool write_json(const SweepResult& result, const std::string& path, std::string& err);
bool write_csv(const SweepResult& result, const std::string& path, std::string& err);
// The JSON document as text (pretty-printed), for tests and for write_json.
std::string to_json_text(const SweepResult& result);

}  // namespace client
