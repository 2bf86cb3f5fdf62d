// rocksdb_values.cc — see rocksdb_values.hh.
#include "store/rocksdb_values.hh"

#include <rocksdb/iterator.h>
#include <rocksdb/write_batch.h>

#include <memory>

#include "store/store.hh"

namespace store::rocks_values {

namespace {

constexpr const char* kFormatRow = "format";
constexpr const char* kFormatHeaders = "value-headers-v1";
// Migration progress: the last key whose value got its header, written with each batch.
constexpr const char* kProgressRow = "format-progress";
constexpr std::size_t kMigrationBatchBytes = 4 << 20;

void put_le64(char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint64_t get_le64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

rocksdb::Status sync_write(rocksdb::DB& db, rocksdb::WriteBatch& wb) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return db.Write(wo, &wb);
}

}  // namespace

std::string_view header(std::uint64_t expires_at_ms, char (&out)[kMaxHeader]) {
  if (expires_at_ms == 0) {
    out[0] = kNoExpiry;
    return {out, 1};
  }
  out[0] = kExpires;
  put_le64(out + 1, expires_at_ms);
  return {out, kMaxHeader};
}

std::optional<Decoded> decode(std::string_view stored) {
  if (stored.empty()) return std::nullopt;
  if (stored[0] == kNoExpiry) return Decoded{stored.substr(1), 0};
  if (stored[0] != kExpires || stored.size() < kMaxHeader) return std::nullopt;
  return Decoded{stored.substr(kMaxHeader), get_le64(stored.data() + 1)};
}

std::string migrate(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta) {
  std::string format;
  rocksdb::Status s = db.Get(rocksdb::ReadOptions(), meta, kFormatRow, &format);
  if (s.ok() && format == kFormatHeaders) return {};
  if (s.ok()) return "unknown value format '" + format + "' (written by a newer cache_server?)";
  if (!s.IsNotFound()) return "reading the value format failed: " + s.ToString();
  std::string progress;
  s = db.Get(rocksdb::ReadOptions(), meta, kProgressRow, &progress);
  const bool resuming = s.ok();
  if (!s.ok() && !s.IsNotFound()) return "reading the migration's progress failed: " + s.ToString();

  // The iterator reads one consistent state (its implicit snapshot), so the rewrites below
  // never show up in it.
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(ro, db.DefaultColumnFamily()));
  if (resuming) {
    it->Seek(progress);
    if (it->Valid() && it->key() == rocksdb::Slice(progress)) it->Next();
  } else {
    it->SeekToFirst();
  }
  rocksdb::WriteBatch wb;
  char none[kMaxHeader];
  const std::string_view bare_header = header(0, none);
  for (; it->Valid(); it->Next()) {
    const rocksdb::Slice parts[2] = {rocksdb::Slice(bare_header.data(), bare_header.size()),
                                     it->value()};
    const rocksdb::Slice key = it->key();
    wb.Put(db.DefaultColumnFamily(), rocksdb::SliceParts(&key, 1), rocksdb::SliceParts(parts, 2));
    if (wb.GetDataSize() >= kMigrationBatchBytes) {
      wb.Put(meta, kProgressRow, key);
      if (s = sync_write(db, wb); !s.ok()) return "migrating the values failed: " + s.ToString();
      wb.Clear();
    }
  }
  if (!it->status().ok()) return "reading the values to migrate failed: " + it->status().ToString();
  wb.Delete(meta, kProgressRow);
  wb.Put(meta, kFormatRow, kFormatHeaders);
  if (s = sync_write(db, wb); !s.ok()) return "writing the value format failed: " + s.ToString();
  return {};
}

bool ExpiryFilter::Filter(int /*level*/, const rocksdb::Slice& /*key*/,
                          const rocksdb::Slice& existing_value, std::string* /*new_value*/,
                          bool* /*value_changed*/) const {
  const auto d = decode(std::string_view(existing_value.data(), existing_value.size()));
  return d && expired(d->expires_at_ms, unix_now_ms());
}

}  // namespace store::rocks_values
