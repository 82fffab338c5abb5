#include "pelab/runs/point_record.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/run_folder.h"

namespace pelab {

namespace fs = boost::filesystem;

namespace {

// An exclusive flock held for the lifetime of the object (the kernel drops it however the
// process ends).
class PointLock {
 public:
  explicit PointLock(const std::string& file) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    PELAB_CHECK(fd_ >= 0, "cannot open the point's lock {}: {}", file, std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      PELAB_CHECK(errno == EINTR, "cannot lock {}: {}", file, std::strerror(errno));
    }
  }
  ~PointLock() { ::close(fd_); }
  PointLock(const PointLock&) = delete;
  PointLock& operator=(const PointLock&) = delete;

 private:
  int fd_ = -1;
};

// The record as this pelab resolves it (keys added since it was written take their defaults, as
// for a run's config.toml); as written when it no longer resolves, so that the comparison names
// what changed.
StoredConfig read_record(const std::string& file, Registry& registry) {
  const std::string text = read_file(file);
  try {
    const Manifest manifest = Manifest::from_string(text, file, registry);
    PELAB_CHECK(manifest.runs().size() == 1, "{} expands to {} runs", file, manifest.runs().size());
    return StoredConfig::parse(manifest.runs().front().to_toml(), file);
  } catch (const Error&) {
    return StoredConfig::parse(text, file);
  }
}

}  // namespace

void claim_point(const RunConfig& config, const std::string& output_root, Registry& registry,
                 bool replace) {
  const ExperimentFolder experiment = ExperimentFolder::of(output_root, config.experiment);
  const std::string point_dir = experiment.point_folder(config.point);
  boost::system::error_code error;
  fs::create_directories(point_dir, error);
  PELAB_CHECK(!error, "cannot create the point's folder {}: {}", point_dir, error.message());
  const PointLock lock(experiment.point_lock_file(config.point));
  const std::string file = experiment.point_record_file(config.point);
  const std::string mine = config.to_toml();
  if (!replace && fs::is_regular_file(file)) {
    const StoredConfig record = read_record(file, registry);
    const StoredConfig wanted = StoredConfig::parse(mine, "this run's configuration");
    // What makes a run what it is trained as: the per-run keys and the probes (which run on the
    // trained model; a probe added to a manifest mid-sweep applies to the runs still to train)
    // aside.
    const auto differences = StoredConfig::identity_changes(record.identity(), wanted.identity());
    if (differences.empty()) {
      // The record keeps the latest length asked for, as a resumed run's config.toml does.
      if (record.toml("train.epochs") != wanted.toml("train.epochs"))
        write_file_atomically(file, mine);
      return;
    }
    throw Error(fmt::format(
        "{}: the point '{}' serves another configuration, recorded by its first run (its seeds "
        "would mix two configurations in one point):\n  {}\nRun this one into another folder "
        "(--out, or another [experiment] name), or replace the point's runs with --force.",
        file, config.point.empty() ? "default" : config.point, fmt::join(differences, "\n  ")));
  }
  write_file_atomically(file, mine);
}

}  // namespace pelab
