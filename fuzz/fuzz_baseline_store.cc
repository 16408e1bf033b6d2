// libFuzzer target: the baseline store reader (differ/baseline_store.h).
//
// The input becomes a baseline file and its acceptance log inside a directory
// store; loading, listing and reading the log must either work or throw
// driftgate::Error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "differ/baseline_store.h"

namespace {

const char* const k_env_key = "0123456789abcdef";
const char* const k_sha = "0123456789abcdef0123456789abcdef01234567";

// One store per fuzzing process, removed at exit.
struct StoreDir {
  std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("driftgate-fuzz-store-" + std::to_string(::getpid()));
  StoreDir() { std::filesystem::create_directories(root / k_env_key); }
  ~StoreDir() { std::filesystem::remove_all(root); }
};

const std::filesystem::path& store_root() {
  static const StoreDir dir;
  return dir.root;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // The first half is the baseline, the rest its acceptance log.
  size_t cut = text.find('\f');
  std::string baseline = cut == std::string::npos ? text : text.substr(0, cut);
  std::string log = cut == std::string::npos ? "" : text.substr(cut + 1);
  const std::filesystem::path& root = store_root();
  driftgate::DirectoryStore store(root.string());
  write_file(store.path_of(k_env_key, k_sha), baseline);
  write_file(store.acceptance_path_of(k_env_key, k_sha), log);
  try {
    (void)store.contains(k_env_key, k_sha);
    (void)store.shas(k_env_key);
    (void)store.env_keys();
    (void)store.load(k_env_key, k_sha);
  } catch (const driftgate::Error&) {
  }
  try {
    (void)store.acceptance_log(k_env_key, k_sha);
  } catch (const driftgate::Error&) {
  }
  return 0;
}
