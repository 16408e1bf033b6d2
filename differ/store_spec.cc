#include "differ/store_spec.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/suggest.h"
#include "differ/git_notes_store.h"

namespace driftgate {

StoreSpec parse_store_spec(const std::string& store, const std::string& kind) {
  if (kind != "dir" && kind != "notes") {
    throw Error("--store-kind '" + kind + "'" + did_you_mean(kind, {"dir", "notes"}) +
                ": one of dir (a directory of <env-key>/<sha>.jsonl) or notes (git notes, " + k_notes_ref + ")");
  }
  StoreSpec spec;
  spec.text = store;
  const std::string prefix = "notes:";
  if (store.rfind(prefix, 0) == 0) {
    spec.kind = StoreSpec::Kind::k_notes;
    spec.notes_ref = store.size() > prefix.size() ? store.substr(prefix.size()) : k_notes_ref;
  } else if (kind == "notes") {
    spec.kind = StoreSpec::Kind::k_notes;
    spec.notes_ref = store == "baselines" ? k_notes_ref : store;
  } else {
    spec.directory = store;
    return spec;
  }
  if (spec.notes_ref.rfind("refs/notes/", 0) != 0) {
    throw Error("--store " + store + ": the notes reference '" + spec.notes_ref +
                "' must start with refs/notes/ (e.g. notes:" + k_notes_ref + ")");
  }
  return spec;
}

std::unique_ptr<BaselineStore> open_store(const StoreSpec& spec, const std::string& repo_dir, bool must_exist) {
  if (spec.kind == StoreSpec::Kind::k_notes) {
    return std::make_unique<GitNotesStore>(repo_dir, spec.notes_ref);
  }
  auto store = std::make_unique<DirectoryStore>(spec.directory);
  if (must_exist && !store->exists()) {
    throw Error("--store " + spec.directory +
                ": no such baseline store directory; pass the directory that holds <env-key>/<sha>.jsonl files, or "
                "create one with driftgate baseline update RUN.jsonl --store " +
                spec.directory);
  }
  return store;
}

std::optional<std::string> store_path_in_repo(const StoreSpec& spec, const GitRepo& repo) {
  if (spec.kind != StoreSpec::Kind::k_directory) {
    return std::nullopt;
  }
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path store = fs::weakly_canonical(fs::absolute(spec.directory, error), error);
  fs::path root = fs::weakly_canonical(fs::path(repo.workdir()), error);
  if (error) {
    return std::nullopt;
  }
  fs::path relative = store.lexically_relative(root);
  std::string text = relative.generic_string();
  while (!text.empty() && text.back() == '/') {
    text.pop_back();
  }
  if (text.empty() || text == "." || text.rfind("..", 0) == 0) {
    return std::nullopt;  // the repository root itself, or outside it
  }
  return text;
}

bool is_baseline_only_commit(const GitRepo& repo, const BaselineStore& store,
                             const std::optional<std::string>& store_path, const std::string& sha) {
  if (!store_path) {
    return false;
  }
  for (const auto& key : store.env_keys()) {
    if (store.contains(key, sha)) {
      return false;
    }
  }
  return repo.changes_only_under(sha, *store_path);
}

}  // namespace driftgate
