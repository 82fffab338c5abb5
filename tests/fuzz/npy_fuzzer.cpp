// Fuzzes the .npy reader (pelab/io/file_io.h), which reads PE snapshots, probe arrays and the brain
// task's parcel time series: any bytes give a tensor or a pelab::Error, and what was read writes
// back to bytes that read as the same array.

#include "fuzz_target.h"
#include "pelab/io/file_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = pelab::fuzz::as_string(data, size);
  pelab::fuzz::expect_pelab_errors_only("from_npy", [&] {
    const torch::Tensor tensor = pelab::from_npy(bytes, "input.npy");
    const std::string written = pelab::to_npy(tensor);
    if (pelab::to_npy(pelab::from_npy(written, "round trip")) != written) {
      std::fprintf(stderr, "\nthe .npy round trip changed the array\n");
      std::abort();
    }
  });
  return 0;
}
