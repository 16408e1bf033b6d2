#include "differ/run_merge.h"

#include <map>

#include "core/error.h"

namespace driftgate {

namespace {

std::string shard_name(int index, int count) { return std::to_string(index) + "/" + std::to_string(count); }

bool same_tolerance(const Tolerance& a, const Tolerance& b) { return a.atol == b.atol && a.rtol == b.rtol; }

// "" when the experiments agree, else what differs first.
std::string experiments_difference(const std::vector<ExperimentHeader>& a, const std::vector<ExperimentHeader>& b) {
  if (a.size() != b.size()) {
    return std::to_string(a.size()) + " experiments vs " + std::to_string(b.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const ExperimentHeader& x = a[i];
    const ExperimentHeader& y = b[i];
    if (x.name != y.name) {
      return "experiment '" + x.name + "' vs '" + y.name + "'";
    }
    if (x.config_hash != y.config_hash || x.model_hash != y.model_hash) {
      return "experiment '" + x.name + "' has another config or model hash";
    }
    if (x.inputs != y.inputs || x.targets != y.targets || x.reference != y.reference ||
        !same_tolerance(x.tolerance, y.tolerance)) {
      return "experiment '" + x.name + "' has other inputs, backends or tolerance";
    }
  }
  return "";
}

void require_consistent(const NamedRun& first, const NamedRun& other) {
  const RunHeader& a = first.run.header;
  const RunHeader& b = other.run.header;
  if (a.shard.count != b.shard.count) {
    throw Error(other.name + ": shard " + shard_name(b.shard.index, b.shard.count) + " is of a run in " +
                std::to_string(b.shard.count) + " shards, but " + first.name + " is of one in " +
                std::to_string(a.shard.count) + "; pass the shards of one run");
  }
  if (a.commit.sha != b.commit.sha) {
    throw Error(other.name + ": commit " + b.commit.sha + " differs from " + first.name + "'s " + a.commit.sha +
                "; pass the shards of one run");
  }
  if (a.environment.key() != b.environment.key()) {
    throw Error(other.name + ": environment key " + b.environment.key() + " differs from " + first.name + "'s " +
                a.environment.key() + " (" + describe_changes(diff_environments(a.environment, b.environment)) +
                "); every shard must run in the same environment");
  }
  std::string difference = experiments_difference(a.experiments, b.experiments);
  if (!difference.empty()) {
    throw Error(other.name + ": its experiments differ from " + first.name + "'s (" + difference +
                "); every shard must run the same configs");
  }
}

}  // namespace

RunFile merge_shards(const std::vector<NamedRun>& shards) {
  if (shards.empty()) {
    throw Error("no shard files to merge");
  }
  const NamedRun& first = shards.front();
  int count = first.run.header.shard.count;
  std::map<int, const NamedRun*> by_index;
  for (const auto& shard : shards) {
    require_consistent(first, shard);
    int index = shard.run.header.shard.index;
    auto [it, inserted] = by_index.emplace(index, &shard);
    if (!inserted) {
      throw Error("shard " + shard_name(index, count) + " is given twice: " + it->second->name + " and " + shard.name +
                  "; pass each shard file once");
    }
  }
  std::string missing;
  for (int index = 0; index < count; ++index) {
    if (by_index.count(index) == 0) {
      missing += (missing.empty() ? "" : ", ") + shard_name(index, count);
    }
  }
  if (!missing.empty()) {
    throw Error("missing shard " + missing + " (have " + std::to_string(by_index.size()) + " of " +
                std::to_string(count) + "); a partial run must not pass the gate, so pass every shard file");
  }
  RunFile merged;
  merged.header = first.run.header;
  merged.header.shard = ShardInfo{};
  std::map<std::string, const std::string*> owner;
  for (const auto& [index, shard] : by_index) {
    merged.header.commit.dirty = merged.header.commit.dirty || shard->run.header.commit.dirty;
    for (const auto& check : shard->run.checks) {
      auto [it, inserted] = owner.emplace(check.id, &shard->name);
      if (!inserted) {
        throw Error("check '" + check.id + "' is in both " + *it->second + " and " + shard->name +
                    "; the shards overlap, so they are not of one run --shard i/N split");
      }
      merged.checks.push_back(check);
    }
  }
  merged.summary = summarize(merged.header, merged.checks);
  return merged;
}

}  // namespace driftgate
