#include "runner/blas_threads.h"

#include <dlfcn.h>

namespace driftgate {
namespace {

using GetThreads = int (*)();
using SetThreads = void (*)(int);

// Looked up once in the process's global scope: libblas.so.3 is a dependency of
// libtorch_cpu, so whichever BLAS the alternatives chose is there.
GetThreads get_threads() {
  static const auto function = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return function;
}

SetThreads set_threads() {
  static const auto function = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  return function;
}

}  // namespace

int blas_threads() {
  GetThreads get = get_threads();
  return get != nullptr && set_threads() != nullptr ? get() : 0;
}

void set_blas_threads(int threads) {
  SetThreads set = set_threads();
  if (set != nullptr && get_threads() != nullptr && threads >= 1 && get_threads()() != threads) {
    set(threads);
  }
}

}  // namespace driftgate
