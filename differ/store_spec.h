// Which baseline store a command talks to, from its --store / --store-kind options.
//
// The directory store is the default (`--store baselines`); the git notes store
// is chosen with `--store notes:` (refs/notes/driftgate), `--store notes:REF`, or
// `--store-kind notes`. Both commands that touch baselines (diff, baseline) share
// this so that the spelling and the errors are the same everywhere.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/git_repo.h"
#include "differ/baseline_store.h"

namespace driftgate {

struct StoreSpec {
  enum class Kind { k_directory, k_notes };
  Kind kind = Kind::k_directory;
  std::string directory = "baselines";  // k_directory: the store's root
  std::string notes_ref;                // k_notes: the notes reference
  std::string text;                     // as the user wrote it, for messages
};

// Reads `--store VALUE` and `--store-kind KIND` ("dir" or "notes"). Throws
// driftgate::Error on an unknown kind or a notes ref outside refs/notes/.
StoreSpec parse_store_spec(const std::string& store, const std::string& kind);

// Opens the store. `repo_dir` locates the repository of a notes store.
// `must_exist`: a directory store must already exist (diff, show, list, prune).
std::unique_ptr<BaselineStore> open_store(const StoreSpec& spec, const std::string& repo_dir, bool must_exist);

// A directory store's path relative to the repository's root ("baselines", "ci/baselines"),
// or nullopt for a notes store or a directory outside the repository's work tree.
std::optional<std::string> store_path_in_repo(const StoreSpec& spec, const GitRepo& repo);

// Whether the commit `sha` only adds baselines, as the commit-per-baseline flow's "baselines
// of <parent>" commits do: it has no baseline of its own in `store`, and it changes files only
// under `store_path` (store_path_in_repo). Always false without a store path (notes store).
// `trend` leaves such commits out of its history and `baseline show` (HEAD) steps over them.
bool is_baseline_only_commit(const GitRepo& repo, const BaselineStore& store,
                             const std::optional<std::string>& store_path, const std::string& sha);

}  // namespace driftgate
