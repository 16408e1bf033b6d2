// The pre-flight look at model files: complete TorchScript archives pass; text
// files, cut-off downloads, state_dicts and other zips are named for what they are.
#include "core/torchscript_archive.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/support/zip_writer.h"

namespace driftgate {
namespace {

using test::make_zip;

class TorchscriptArchiveTest : public ::testing::Test {
 protected:
  std::string write(const std::string& bytes) {
    std::string path = m_dir / "model.pt";
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string problem(const std::string& bytes) { return torchscript_archive_problem(write(bytes)); }

  test::TempDir m_dir;
  std::vector<std::pair<std::string, std::string>> m_torchscript{
      {"m/data.pkl", std::string(300, 'p')}, {"m/code/__torch__/m.py", "def forward(self, x):\n"}, {"m/version", "3"}};
};

TEST_F(TorchscriptArchiveTest, ACompleteTorchscriptArchivePasses) { EXPECT_EQ(problem(make_zip(m_torchscript)), ""); }

TEST_F(TorchscriptArchiveTest, TextIsNotAnArchive) {
  EXPECT_EQ(problem("def forward(self, x):\n"),
            "is not a TorchScript archive (it does not start with a zip signature; 22 bytes); export the model with "
            "torch.jit.script(model).save(path)");
  EXPECT_EQ(problem("").rfind("is not a TorchScript archive", 0), 0U);
}

TEST_F(TorchscriptArchiveTest, ACutOffArchiveIsTruncated) {
  std::string whole = make_zip(m_torchscript);
  for (size_t keep : {size_t{4}, whole.size() / 2, whole.size() - 1}) {
    EXPECT_EQ(problem(whole.substr(0, keep)).rfind("is truncated or damaged (" + std::to_string(keep) + " bytes", 0),
              0U)
        << keep;
  }
}

TEST_F(TorchscriptArchiveTest, ADirectoryPointingPastTheFileIsDamaged) {
  std::string whole = make_zip(m_torchscript);
  whole[whole.size() - 3] = '\x7f';  // the top byte of the central directory's offset: far beyond the end
  EXPECT_EQ(problem(whole), "is truncated or damaged (its zip central directory points past the end of the file)");
}

TEST_F(TorchscriptArchiveTest, AStateDictIsNamedForWhatItIs) {
  EXPECT_EQ(problem(make_zip({{"archive/data.pkl", "\x80\x02}."}, {"archive/data/0", std::string(64, '\0')}}))
                .rfind("holds a pickled Python object (torch.save, e.g. a state_dict)", 0),
            0U);
}

TEST_F(TorchscriptArchiveTest, AnotherZipIsNotTorchscript) {
  EXPECT_EQ(problem(make_zip({{"readme.txt", "hello"}})).rfind("is a zip archive but not a TorchScript one", 0), 0U);
}

TEST_F(TorchscriptArchiveTest, AMissingFileCannotBeRead) {
  EXPECT_EQ(torchscript_archive_problem(m_dir / "absent.pt"), "cannot be read");
}

}  // namespace
}  // namespace driftgate
