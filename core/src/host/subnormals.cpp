#include "pelab/host/subnormals.h"

#include <dlfcn.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define PELAB_HAS_MXCSR 1
#endif

namespace pelab {
namespace {

// libgomp's entry for a parallel region: runs fn(data) on each of num_threads threads of its pool.
using GompParallel = void (*)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);

void set_on_this_thread(void* flush) {
  at::globalContext().setFlushDenormal(*static_cast<const bool*>(flush));
}

// GOMP_parallel as LibTorch itself resolves it: looked up in libtorch_cpu and its dependencies,
// so that a process holding two OpenMP runtimes (a PyPI wheel bundles its own libgomp) reaches
// the pool of the one ATen uses. Null where LibTorch was built without OpenMP.
GompParallel libtorch_gomp_parallel() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::get_num_threads), &info) == 0 ||
      info.dli_fname == nullptr)
    return nullptr;
  void* libtorch = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (libtorch == nullptr) return nullptr;
  auto* parallel = reinterpret_cast<GompParallel>(dlsym(libtorch, "GOMP_parallel"));
  dlclose(libtorch);  // NOLOAD took a reference to a library that stays loaded
  return parallel;
}

}  // namespace

bool set_flush_subnormals(bool flush) {
  if (!at::globalContext().setFlushDenormal(flush)) return false;
  // The mode is per thread: threads created from now on inherit this thread's, but ATen's
  // intra-op pool may exist already. at::parallel_for cannot reach it from here (its OpenMP
  // region is compiled into the caller, and pelab is built without OpenMP), so the region is
  // opened through the OpenMP runtime LibTorch uses, on as many threads as ATen's pool has.
  const int threads = at::get_num_threads();
  if (threads > 1 && !at::in_parallel_region()) {
    static const GompParallel parallel = libtorch_gomp_parallel();
    if (parallel != nullptr)
      parallel(&set_on_this_thread, &flush, static_cast<unsigned>(threads), 0);
  }
  return true;
}

bool flushes_subnormals() {
#ifdef PELAB_HAS_MXCSR
  constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  const unsigned mode = _mm_getcsr();
  return (mode & kFlushToZero) != 0 && (mode & kDenormalsAreZero) != 0;
#else
  return false;
#endif
}

}  // namespace pelab
