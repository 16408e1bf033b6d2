// Joining the partial run files of a sharded run into one run.
//
// A CI matrix runs `driftgate run --shard i/N` on N machines; each writes the
// checks of its slice with header.shard = {i, N}. The diff must only ever see the
// whole suite: a missing shard would look like checks that vanished, and a shard
// joined twice would hide that another is missing. So the merge is strict: every
// index 0..N-1 exactly once, the same commit, environment key and experiments in
// every file, no check id twice; anything else is an input error naming the files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/record.h"

namespace driftgate {

// One partial run file and the name used for it in messages (its path).
struct NamedRun {
  std::string name;
  RunFile run;
};

// The merged run: shard count 1, checks in shard order, summary recomputed.
// Throws driftgate::Error naming the files on any inconsistency.
RunFile merge_shards(const std::vector<NamedRun>& shards);

}  // namespace driftgate
