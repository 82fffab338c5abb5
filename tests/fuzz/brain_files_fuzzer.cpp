// Fuzzes the brain task's loaders (tasks/brain): a subject's parcel time series CSV, a centroids
// CSV and a NIfTI image (read through libnifti2, then used as an atlas). These are the user's own
// exports, from many tools. The input is written as each file at once.

#include "fuzz_target.h"
#include "parcel_centroids.h"
#include "parcel_time_series.h"
#include "parcellation.h"
#include "volume.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace brain = pelab::brain;
  const std::string contents = pelab::fuzz::as_string(data, size);
  const std::string series_csv = pelab::fuzz::write_scratch_file("subject.csv", contents);
  const std::string centroids_csv = pelab::fuzz::write_scratch_file("centroids.csv", contents);
  const std::string image = pelab::fuzz::write_scratch_file("image.nii", contents);

  pelab::fuzz::expect_pelab_errors_only("read_time_series_csv", [&] {
    brain::validate(brain::read_time_series_csv(series_csv), brain::ValidationOptions{});
  });
  pelab::fuzz::expect_pelab_errors_only("read_centroids_csv",
                                        [&] { brain::read_centroids_csv(centroids_csv); });
  pelab::fuzz::expect_pelab_errors_only("read_volume", [&] {
    const brain::Volume volume = brain::read_volume(image);
    if (volume.nt == 1) brain::centroids_of(brain::atlas_parcellation(volume));
  });
  return 0;
}
