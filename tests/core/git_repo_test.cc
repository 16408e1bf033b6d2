#include "core/git_repo.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "core/error.h"

namespace driftgate {
namespace {

namespace fs = std::filesystem;

std::string shell(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    throw std::runtime_error("popen failed");
  }
  std::string output;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), read);
  }
  if (::pclose(pipe) != 0) {
    throw std::runtime_error("command failed: " + command + "\n" + output);
  }
  while (!output.empty() && output.back() == '\n') {
    output.pop_back();
  }
  return output;
}

// A throwaway repository driven by the git CLI (fixed identity, no user config).
class GitRepoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "driftgate-git-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root = fs::canonical(pattern).string();
    dir = root + "/repo";
    fs::create_directories(dir);
    git("init -q -b main .");
  }
  void TearDown() override { fs::remove_all(root); }

  std::string git(const std::string& args, const std::string& in = "") const {
    return shell("cd '" + (in.empty() ? dir : in) +
                 "' && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name=test "
                 "-c user.email=test@example.invalid -c commit.gpgsign=false -c protocol.file.allow=always " +
                 args);
  }

  void write(const std::string& name, const std::string& text) const { std::ofstream(dir + "/" + name) << text; }

  std::string commit(const std::string& message, const std::string& file = "file.txt") {
    write(file, message + "\n");
    git("add -A");
    git("commit -q -m " + message);
    return git("rev-parse HEAD");
  }

  GitRepo open() const {
    std::optional<GitRepo> repo = GitRepo::open(dir);
    if (!repo) {
      throw std::runtime_error("not a repository: " + dir);
    }
    return std::move(*repo);
  }

  std::string root;
  std::string dir;
};

TEST_F(GitRepoTest, OpenDiscoversTheRepositoryFromASubdirectory) {
  fs::create_directories(dir + "/a/b");
  std::optional<GitRepo> repo = GitRepo::open(dir + "/a/b");
  ASSERT_TRUE(repo.has_value());
  EXPECT_EQ(repo->workdir(), dir);
}

TEST_F(GitRepoTest, OpenOutsideARepositoryIsNullopt) {
  fs::create_directories(root + "/plain");
  fs::remove_all(dir + "/.git");
  EXPECT_FALSE(GitRepo::open(root + "/plain").has_value());
  EXPECT_FALSE(GitRepo::open(dir).has_value());
}

TEST_F(GitRepoTest, HeadInfoOfAnEmptyRepositoryIsUnknown) {
  CommitInfo info = open().head_info();
  EXPECT_EQ(info.sha, "unknown");
  EXPECT_EQ(info.branch, "");
  EXPECT_FALSE(info.dirty);
}

TEST_F(GitRepoTest, HeadInfoReportsShaBranchAndDirtiness) {
  std::string sha = commit("one");
  GitRepo repo = open();
  CommitInfo clean = repo.head_info();
  EXPECT_EQ(clean.sha, sha);
  EXPECT_EQ(clean.branch, "main");
  EXPECT_FALSE(clean.dirty);

  write("untracked.txt", "new\n");
  EXPECT_FALSE(repo.head_info().dirty) << "untracked files do not make a tree dirty";

  write("file.txt", "changed\n");
  EXPECT_TRUE(repo.head_info().dirty) << "a modified tracked file does";

  git("add file.txt");
  write("file.txt", "one\n");  // staged change, working tree back to HEAD's content
  EXPECT_TRUE(repo.head_info().dirty) << "a staged change does";

  git("reset -q --hard");
  EXPECT_FALSE(repo.head_info().dirty);
  fs::remove(dir + "/file.txt");
  EXPECT_TRUE(repo.head_info().dirty) << "a deleted tracked file does";
}

TEST_F(GitRepoTest, DetachedHeadHasNoBranch) {
  std::string first = commit("one");
  commit("two");
  git("checkout -q --detach " + first);
  CommitInfo info = open().head_info();
  EXPECT_EQ(info.sha, first);
  EXPECT_EQ(info.branch, "");
}

TEST_F(GitRepoTest, ResolveAcceptsRevisionsPrefixesAndTags) {
  std::string first = commit("one");
  std::string second = commit("two");
  git("tag -a v1 -m release " + first);
  GitRepo repo = open();
  EXPECT_EQ(repo.resolve("HEAD"), second);
  EXPECT_EQ(repo.resolve("HEAD~1"), first);
  EXPECT_EQ(repo.resolve("main"), second);
  EXPECT_EQ(repo.resolve(first.substr(0, 10)), first);
  EXPECT_EQ(repo.resolve("v1"), first);  // an annotated tag peels to its commit
}

TEST_F(GitRepoTest, ResolveOfAnUnknownRevisionSaysHowToFetchIt) {
  commit("one");
  try {
    open().resolve("origin/main");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown revision 'origin/main' in " + dir + "; fetch it (git fetch origin origin/main) or pass a SHA");
  }
  EXPECT_THROW(open().resolve("0000000000000000000000000000000000000000"), Error);
}

TEST_F(GitRepoTest, MergeBaseOfDivergedBranchesAndOfUnrelatedHistories) {
  commit("one");
  std::string fork = commit("two");
  std::string main_tip = commit("three");
  git("checkout -q -b feature " + fork);
  std::string feature_tip = commit("four", "feature.txt");
  GitRepo repo = open();
  EXPECT_EQ(repo.merge_base(feature_tip, main_tip), fork);
  EXPECT_EQ(repo.merge_base("feature", "main"), fork);
  EXPECT_EQ(repo.merge_base(fork, main_tip), fork);

  git("checkout -q --orphan lonely");
  std::string lonely = commit("lonely", "lonely.txt");
  EXPECT_FALSE(repo.merge_base(lonely, main_tip).has_value());
}

TEST_F(GitRepoTest, FirstParentWalkIsNewestFirstBoundedAndStopsAtTheRoot) {
  std::string a = commit("a");
  std::string b = commit("b");
  git("checkout -q -b side");
  std::string s = commit("s", "side.txt");
  git("checkout -q main");
  std::string c = commit("c");
  git("merge -q --no-ff -m merge side");
  std::string merge = git("rev-parse HEAD");
  GitRepo repo = open();
  EXPECT_EQ(repo.first_parent_walk(merge, 100), (std::vector<std::string>{merge, c, b, a}));
  EXPECT_EQ(repo.first_parent_walk(merge, 2), (std::vector<std::string>{merge, c}));
  EXPECT_EQ(repo.first_parent_walk("HEAD", 1), (std::vector<std::string>{merge}));
  EXPECT_EQ(repo.first_parent_walk(s, 100), (std::vector<std::string>{s, b, a}));
  EXPECT_TRUE(repo.first_parent_walk(merge, 0).empty());
  EXPECT_THROW(repo.first_parent_walk("1111111111111111111111111111111111111111", 5), Error);
}

TEST_F(GitRepoTest, ShallowClonesAreDetectedAndWalksStopAtTheBoundary) {
  commit("a");
  std::string b = commit("b");
  std::string c = commit("c");
  EXPECT_FALSE(open().is_shallow());
  std::string clone_dir = root + "/clone";
  fs::create_directories(clone_dir);
  git("clone -q --depth 2 file://" + dir + " .", clone_dir);
  std::optional<GitRepo> clone = GitRepo::open(clone_dir);
  ASSERT_TRUE(clone.has_value());
  EXPECT_TRUE(clone->is_shallow());
  EXPECT_EQ(clone->first_parent_walk(c, 100), (std::vector<std::string>{c, b}));
  EXPECT_EQ(clone->head_info().sha, c);
}

TEST_F(GitRepoTest, MergeBaseInAShallowCloneUsesTheCommitsItHas) {
  commit("a");
  std::string fork = commit("b");
  std::string main_tip = commit("c");
  git("checkout -q -b feature " + fork);
  std::string feature_tip = commit("f", "feature.txt");
  std::string deep = root + "/deep";
  std::string flat = root + "/flat";
  fs::create_directories(deep);
  fs::create_directories(flat);
  git("clone -q --depth 2 --no-single-branch --branch feature file://" + dir + " .", deep);
  git("clone -q --depth 1 --no-single-branch --branch feature file://" + dir + " .", flat);

  std::optional<GitRepo> deep_repo = GitRepo::open(deep);
  ASSERT_TRUE(deep_repo.has_value());
  ASSERT_TRUE(deep_repo->is_shallow());
  EXPECT_EQ(deep_repo->merge_base(feature_tip, "origin/main"), fork);
  EXPECT_EQ(deep_repo->merge_base(main_tip, feature_tip), fork);

  std::optional<GitRepo> flat_repo = GitRepo::open(flat);
  ASSERT_TRUE(flat_repo.has_value());
  EXPECT_FALSE(flat_repo->merge_base(feature_tip, "origin/main").has_value());
}

TEST_F(GitRepoTest, MovedRepositoryKeepsWorking) {
  std::string sha = commit("one");
  GitRepo first = open();
  GitRepo second = std::move(first);
  EXPECT_EQ(second.head_info().sha, sha);
  GitRepo third = open();
  third = std::move(second);
  EXPECT_EQ(third.head_info().sha, sha);
}

TEST_F(GitRepoTest, ParentsListFirstParentFirst) {
  std::string root_commit = commit("c1");
  git("checkout -q -b side");
  std::string side = commit("s1", "side.txt");
  git("checkout -q main");
  std::string main_tip = commit("c2");
  git("merge -q --no-ff -m merge side");
  std::string merge = git("rev-parse HEAD");
  GitRepo repo = open();
  EXPECT_EQ(repo.parents(merge), (std::vector<std::string>{main_tip, side}));
  EXPECT_EQ(repo.parents(main_tip), std::vector<std::string>{root_commit});
  EXPECT_TRUE(repo.parents(root_commit).empty());
}

TEST_F(GitRepoTest, ChangesOnlyUnderTellsCommitsThatOnlyAddBaselines) {
  std::string first = commit("c1");
  fs::create_directories(dir + "/ci/baselines/k");
  write("ci/baselines/k/a.jsonl", "{}\n");
  git("add -A");
  git("commit -q -m baselines");
  std::string baselines_only = git("rev-parse HEAD");
  write("ci/baselines/k/b.jsonl", "{}\n");
  write("file.txt", "changed\n");
  git("add -A");
  git("commit -q -m both");
  std::string both = git("rev-parse HEAD");
  write("ci/baselines-old.txt", "x\n");  // a sibling whose name starts like the store's
  git("add -A");
  git("commit -q -m sibling");
  std::string sibling = git("rev-parse HEAD");
  git("commit -q --allow-empty -m empty");
  std::string empty = git("rev-parse HEAD");
  GitRepo repo = open();
  EXPECT_TRUE(repo.changes_only_under(baselines_only, "ci/baselines"));
  EXPECT_TRUE(repo.changes_only_under(baselines_only, "ci"));
  EXPECT_FALSE(repo.changes_only_under(both, "ci/baselines"));
  EXPECT_FALSE(repo.changes_only_under(sibling, "ci/baselines"));
  EXPECT_FALSE(repo.changes_only_under(empty, "ci/baselines"));  // changes nothing
  EXPECT_FALSE(repo.changes_only_under(first, "ci/baselines"));  // a root commit
}

TEST_F(GitRepoTest, UserIdentityComesFromTheRepositoryConfig) {
  git("config user.name 'Ada Lovelace'");
  git("config user.email ''");  // overrides any global identity of the machine running the test
  EXPECT_EQ(open().user_identity(), std::optional<std::string>("Ada Lovelace"));
  git("config user.email ada@example.invalid");
  EXPECT_EQ(open().user_identity(), std::optional<std::string>("Ada Lovelace <ada@example.invalid>"));
}

}  // namespace
}  // namespace driftgate
