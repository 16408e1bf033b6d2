// The environment probe: what this process will compute with, read from the
// process itself rather than from what the build asked for.
//
// Numbers are only comparable between runs of the same LibTorch, oneDNN, BLAS,
// compiler, CPU ISA level and thread count, so the run header carries them and
// the differ refuses to compare runs whose environment keys differ. The BLAS is
// found among the shared objects actually loaded (Debian's alternatives system
// can swap libblas.so.3 under an unchanged binary). Torch-free header:
// app/cmd_run.cc includes it.
#pragma once

#include <string>

#include "core/environment.h"

namespace driftgate {

// Probes the running process. `threads` is the run's default intra-op thread
// count (the `--threads` of `driftgate run`); it enters the key as given.
// keyed: libtorch, onednn, cpu_isa, blas, compiler, threads, schema, device; in builds
// with the ONNX Runtime worker, onnxruntime: the version the worker at `onnx_worker`
// reports (RunnerOptions::onnx_worker; "": driftgate-ort beside driftgate).
// info: cpu_model, blas_path, onednn_full, tool_version.
// A field that cannot be determined is "unknown", never absent.
Environment probe_environment(int threads, const std::string& onnx_worker = "");

}  // namespace driftgate
