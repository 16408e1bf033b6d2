// The environment of a run: what makes two runs' numbers comparable.
//
// Numbers from different LibTorch, oneDNN or BLAS builds, compilers, CPU ISA
// levels or thread counts are not comparable bit for bit, so the differ only
// compares runs whose environment keys match. `keyed` holds the fields that enter
// the key; `info` holds readable context that does not (CPU model name, host).
// The runner fills it (runner/environment_probe.cc); everything else only reads it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace driftgate {

struct Environment {
  std::map<std::string, std::string> keyed;  // e.g. libtorch, onednn, blas, compiler, cpu_isa, threads, schema
  std::map<std::string, std::string> info;   // e.g. cpu_model, blas_path

  // A short stable hash (16 hex digits, FNV-1a 64) over the sorted keyed fields.
  std::string key() const;
};

// One keyed field that differs between two environments: "onednn 2.6.3 -> 3.1".
struct EnvironmentChange {
  std::string field;
  std::string before;  // "" when absent
  std::string after;
};

std::vector<EnvironmentChange> diff_environments(const Environment& before, const Environment& after);

// "onednn 2.6.3 -> 3.1, threads 1 -> 4"
std::string describe_changes(const std::vector<EnvironmentChange>& changes);

// 64-bit FNV-1a over bytes, as 16 lowercase hex digits. Stable across platforms.
std::string fnv1a_hex(const std::string& bytes);

}  // namespace driftgate
