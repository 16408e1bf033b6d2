// A minimal zip writer for tests: stored (uncompressed) entries, CRCs left 0.
// Enough for code that reads zip structure (runner/torchscript_archive.h) and for
// archives that must pass that check yet fail to load in LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace driftgate::test {

inline void put_le(std::string& out, uint32_t value, int width) {
  for (int i = 0; i < width; ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
}

// A zip with stored (uncompressed) entries; CRCs are left 0, which the check does not read.
inline std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out;
  std::string directory;
  for (const auto& [name, data] : entries) {
    uint32_t offset = static_cast<uint32_t>(out.size());
    out += "PK\x03\x04";
    put_le(out, 20, 2);  // version needed
    put_le(out, 0, 2);   // flags
    put_le(out, 0, 2);   // stored
    put_le(out, 0, 4);   // time, date
    put_le(out, 0, 4);   // crc
    put_le(out, static_cast<uint32_t>(data.size()), 4);
    put_le(out, static_cast<uint32_t>(data.size()), 4);
    put_le(out, static_cast<uint32_t>(name.size()), 2);
    put_le(out, 0, 2);
    out += name + data;
    directory += "PK\x01\x02";
    put_le(directory, 20, 2);  // made by
    put_le(directory, 20, 2);  // needed
    put_le(directory, 0, 2);
    put_le(directory, 0, 2);
    put_le(directory, 0, 4);
    put_le(directory, 0, 4);
    put_le(directory, static_cast<uint32_t>(data.size()), 4);
    put_le(directory, static_cast<uint32_t>(data.size()), 4);
    put_le(directory, static_cast<uint32_t>(name.size()), 2);
    put_le(directory, 0, 2);  // extra
    put_le(directory, 0, 2);  // comment
    put_le(directory, 0, 2);  // disk
    put_le(directory, 0, 2);  // internal attributes
    put_le(directory, 0, 4);  // external attributes
    put_le(directory, offset, 4);
    directory += name;
  }
  uint32_t directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  out += "PK\x05\x06";
  put_le(out, 0, 4);  // disk numbers
  put_le(out, static_cast<uint32_t>(entries.size()), 2);
  put_le(out, static_cast<uint32_t>(entries.size()), 2);
  put_le(out, static_cast<uint32_t>(directory.size()), 4);
  put_le(out, directory_offset, 4);
  put_le(out, 0, 2);  // comment length
  return out;
}

}  // namespace driftgate::test
