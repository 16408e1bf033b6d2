// A cheap, torch-free look at a model file before anything loads it: is it a
// complete TorchScript archive? torch::jit::load on a truncated file, a text file
// or a torch.save'd state_dict fails deep inside LibTorch, after the run has
// started, as a crash_ref record; the config loader calls this instead, so such a
// file is a config error (exit 2) that says what the file is and what to do.
//
// A TorchScript archive (torch.jit.save) is a zip file whose entries share one
// top-level folder and include <folder>/data.pkl and <folder>/code/...; torch.save
// writes the same zip layout without code/.
//
// A module with no forward method (only @torch.jit.export'ed ones, or none) loads
// fine and fails at its first forward; the pre-flight reads the root module's class
// from data.pkl's first GLOBAL opcode and that class's methods from its serialized
// code, and names the problem. Where it cannot tell (compressed or zip64 entries, an
// unexpected pickle start, code it cannot find), it says nothing and leaves the
// archive to LibTorch.
#pragma once

#include <string>

namespace driftgate {

// "" when `path` looks like a complete TorchScript archive, else what is wrong with
// it, phrased to follow "model file 'x' ": e.g. "is truncated or damaged (...)".
std::string torchscript_archive_problem(const std::string& path);

}  // namespace driftgate
