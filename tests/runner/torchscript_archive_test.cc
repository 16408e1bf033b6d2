// The pre-flight look at model files: complete TorchScript archives pass; text
// files, cut-off downloads, state_dicts and other zips are named for what they are.
#include "runner/torchscript_archive.h"

#include <gtest/gtest.h>
#include <zlib.h>

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

// data.pkl and code as torch.jit.save writes them: the root module's class is the
// pickle's first GLOBAL, its code is code/<module path>.py.
std::string root_pickle(const std::string& module, const std::string& name) {
  using namespace std::string_literals;
  return "\x80\x02"s + "c" + module + "\n" + name + "\nq\x00)\x81}(X\x08\x00\x00\x00trainingq\x01\x89ub."s;
}

// Raw deflate (zip method 8) of `text`.
std::string deflate_raw(const std::string& text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, static_cast<uLong>(text.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

const char k_resnet_code[] =
    "class ResNet(Module):\n"
    "  __parameters__ = []\n"
    "  training : bool\n"
    "  def forward(self: __torch__.torchvision.models.resnet.ResNet,\n"
    "    x: Tensor) -> Tensor:\n"
    "    return x\n"
    "  def _forward_impl(self: __torch__.torchvision.models.resnet.ResNet,\n"
    "    x: Tensor) -> Tensor:\n"
    "    return x\n"
    "class BasicBlock(Module):\n"
    "  training : bool\n";

TEST_F(TorchscriptArchiveTest, ARootModuleWithForwardPasses) {
  EXPECT_EQ(problem(make_zip({{"resnet18/data.pkl", root_pickle("__torch__.torchvision.models.resnet", "ResNet")},
                              {"resnet18/code/__torch__/torchvision/models/resnet.py", k_resnet_code},
                              {"resnet18/version", "3"}})),
            "");
}

TEST_F(TorchscriptArchiveTest, ARootModuleWithoutForwardIsNamed) {
  const std::string code =
      "class NoForward(Module):\n"
      "  __parameters__ = [\"scale\", ]\n"
      "  scale : Tensor\n"
      "  def predict(self: __torch__.NoForward,\n"
      "    x: Tensor) -> Tensor:\n"
      "    return torch.mul(x, self.scale)\n"
      "  def labels(self: __torch__.NoForward) -> List[str]:\n"
      "    return [\"a\"]\n";
  EXPECT_EQ(
      problem(make_zip(
          {{"m/data.pkl", root_pickle("__torch__", "NoForward")}, {"m/code/__torch__.py", code}, {"m/version", "3"}})),
      "has no forward method (its TorchScript module NoForward has only predict, labels); driftgate runs "
      "forward(input): give the module a forward (e.g. one that calls the method you mean) and export it "
      "again with torch.jit.script(model).save(path)");
}

TEST_F(TorchscriptArchiveTest, AnEmptyModuleHasNoMethods) {
  EXPECT_EQ(problem(make_zip({{"m/data.pkl", root_pickle("__torch__.___torch_mangle_3", "Empty")},
                              {"m/code/__torch__/___torch_mangle_3.py", "class Empty(Module):\n  training : bool\n"}}))
                .rfind("has no forward method (its TorchScript module Empty has no methods); ", 0),
            0U);
}

TEST_F(TorchscriptArchiveTest, DeflatedCodeIsRead) {
  // torch.jit.save deflates code/ files: entry 2's central header says method 8 and
  // the uncompressed size.
  const std::string code = "class Head(Module):\n  def predict(self, x: Tensor) -> Tensor:\n    return x\n";
  std::string zip =
      make_zip({{"m/data.pkl", root_pickle("__torch__.m", "Head")}, {"m/code/__torch__/m.py", deflate_raw(code)}});
  size_t central = zip.rfind("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  zip[central + 10] = 8;
  for (int i = 0; i < 4; ++i) {
    zip[central + 24 + static_cast<size_t>(i)] = static_cast<char>((code.size() >> (8 * i)) & 0xFF);
  }
  EXPECT_EQ(problem(zip).rfind("has no forward method (its TorchScript module Head has only predict); ", 0), 0U);
  // A declared size the stream does not fill is damage, left to LibTorch.
  zip[central + 24] = static_cast<char>(code.size() + 1);
  EXPECT_EQ(problem(zip), "");
}

TEST_F(TorchscriptArchiveTest, OnlyTheRootClassBodyCounts) {
  // A forward in the next class of the same file is not the root module's.
  const std::string code =
      "class Head(Module):\n"
      "  def predict(self: __torch__.m.Head, x: Tensor) -> Tensor:\n"
      "    return x\n"
      "\n"
      "class Block(Module):\n"
      "  def forward(self: __torch__.m.Block, x: Tensor) -> Tensor:\n"
      "    return x\n";
  EXPECT_EQ(problem(make_zip({{"m/data.pkl", root_pickle("__torch__.m", "Head")}, {"m/code/__torch__/m.py", code}}))
                .rfind("has no forward method (its TorchScript module Head has only predict); ", 0),
            0U);
  // The root is Block: it has one.
  EXPECT_EQ(problem(make_zip({{"m/data.pkl", root_pickle("__torch__.m", "Block")}, {"m/code/__torch__/m.py", code}})),
            "");
}

TEST_F(TorchscriptArchiveTest, WhatItCannotReadIsLeftToLibTorch) {
  const std::string no_forward = "class Head(Module):\n  def predict(self, x: Tensor) -> Tensor:\n    return x\n";
  // The root class's code file is elsewhere, or the class is not in it.
  EXPECT_EQ(problem(make_zip(
                {{"m/data.pkl", root_pickle("__torch__.m", "Head")}, {"m/code/__torch__/other.py", no_forward}})),
            "");
  EXPECT_EQ(
      problem(make_zip({{"m/data.pkl", root_pickle("__torch__.m", "Other")}, {"m/code/__torch__/m.py", no_forward}})),
      "");
  // data.pkl does not start with a GLOBAL of a __torch__ class.
  EXPECT_EQ(problem(make_zip({{"m/data.pkl", root_pickle("builtins", "Head")}, {"m/code/__torch__/m.py", no_forward}})),
            "");
  EXPECT_EQ(problem(make_zip({{"m/data.pkl", "\x80\x02}q\x00."}, {"m/code/__torch__/m.py", no_forward}})), "");
  // A code entry marked deflated (method 8) whose bytes do not inflate.
  std::string deflated =
      make_zip({{"m/data.pkl", root_pickle("__torch__.m", "Head")}, {"m/code/__torch__/m.py", no_forward}});
  size_t central = deflated.rfind("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  deflated[central + 10] = 8;
  EXPECT_EQ(problem(deflated), "");
  // An entry whose local header lies past the end of the file.
  std::string cut =
      make_zip({{"m/data.pkl", root_pickle("__torch__.m", "Head")}, {"m/code/__torch__/m.py", no_forward}});
  cut[central + 45] = '\x7f';
  EXPECT_EQ(problem(cut), "");
}

TEST_F(TorchscriptArchiveTest, AMissingFileCannotBeRead) {
  EXPECT_EQ(torchscript_archive_problem(m_dir / "absent.pt"), "cannot be read");
}

}  // namespace
}  // namespace driftgate
