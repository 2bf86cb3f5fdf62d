// rocksdb_values.hh — how RocksStore lays out a key's value on disk, so that an expiry time
// (store.hh, "Expiry") survives a restart, and what removes expired rows without reading them.
//
// A stored value is a header, then the value's bytes:
//   [0x00]                        no expiry
//   [0x01][expires_at_ms, 8 LE]   expires at that wall-clock time (Unix epoch milliseconds)
// One byte per value when no TTL is set; the header and the value go into the WriteBatch as two
// slices (no concatenated copy). Anything else (an unknown tag, a short value) is a malformed
// value: reads answer io_error, the compaction filter keeps it.
//
// Databases written before this layout hold bare values: the "meta" column family's "format"
// row says whether the default family's values have headers. open_store migrates a database
// without it once, in batches that each record how far they got (so a crash mid-way resumes,
// and never adds a second header to a value), then writes the row.
//
// ExpiryFilter: a compaction filter on the default column family that drops every value whose
// expiry has passed. A compaction turns the dropped value into a deletion when older versions
// may lie below it, so nothing older resurfaces.
#pragma once

#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/slice.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace store::rocks_values {

inline constexpr char kNoExpiry = 0x00;
inline constexpr char kExpires = 0x01;
inline constexpr std::size_t kMaxHeader = 9;

// The header for a value expiring at expires_at_ms (0: never): 1 or 9 bytes of out.
std::string_view header(std::uint64_t expires_at_ms, char (&out)[kMaxHeader]);

struct Decoded {
  std::string_view value;
  std::uint64_t expires_at_ms = 0;  // 0: never
};
// nullopt: malformed (an unknown tag or a truncated header).
std::optional<Decoded> decode(std::string_view stored);

// The meta column family's name, and its row saying every value has a header.
inline constexpr const char* kMetaFamily = "meta";

// Brings a database without the format row to the header layout (see above), then writes the
// row. Empty on success, else why it failed (the database is left resumable).
std::string migrate(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta);

class ExpiryFilter final : public rocksdb::CompactionFilter {
 public:
  bool Filter(int level, const rocksdb::Slice& key, const rocksdb::Slice& existing_value,
              std::string* new_value, bool* value_changed) const override;
  const char* Name() const override { return "CrankExpiryFilter"; }
};

}  // namespace store::rocks_values
