// The BLAS library's own thread count, beside LibTorch's.
//
// at::set_num_threads sets OpenMP's (and MKL's) threads, not OpenBLAS's: Debian's
// openblas-pthread keeps its own pool, sized to the machine's cores. A backend
// configured with `threads: 1` then ran every GEMM on two threads here (0.15 s of CPU
// per 0.076 s resnet18 forward), so "one thread" was not what ran, latency was
// measured with a second core busy, and threads_N compared N against "all". The
// runner sets the BLAS's threads to each backend's (SettingsGuard, backend.cc) and
// to 1 for itself.
// Torch-free header.
#pragma once

namespace driftgate {

// The loaded BLAS's thread count (openblas_get_num_threads), or 0 when it has no
// such control (the reference BLAS, which is single-threaded, or none).
int blas_threads();

// Sets the loaded BLAS's thread count when it has the control; nothing otherwise.
void set_blas_threads(int threads);

}  // namespace driftgate
