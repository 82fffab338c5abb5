#include "synthetic_cohort.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include <pelab/sdk.h>

#include "dynamics.h"
#include "named_atlas.h"
#include "network.h"
#include "parcel_centroids.h"
#include "parcellation.h"
#include "volume.h"

namespace pelab::brain {
namespace {

// Independent streams from one seed, so that changing one part (e.g. the number of volumes)
// leaves the others (the atlas) as they were.
constexpr std::uint64_t kLayoutStream = 0x243f6a8885a308d3ULL;
constexpr std::uint64_t kSubjectStream = 0x13198a2e03707344ULL;

std::uint64_t subject_seed(std::uint64_t seed, std::int64_t subject, std::uint64_t purpose) {
  return splitmix64(seed ^ kSubjectStream) ^
         splitmix64(static_cast<std::uint64_t>(subject) * 8 + purpose);
}

void check_options(const SyntheticCohortOptions& o) {
  const auto check = [](bool ok, const char* option, double value, const char* allowed) {
    PELAB_CHECK(ok, "synthetic cohort: {} is {}, expected {}", option, value, allowed);
  };
  check(o.subjects >= 1, "subjects", static_cast<double>(o.subjects), ">= 1");
  check(o.volumes >= 2, "volumes", static_cast<double>(o.volumes), ">= 2");
  check(o.networks >= 1, "networks", static_cast<double>(o.networks), ">= 1");
  check(o.parcels >= 2 * o.networks && o.parcels <= 32767, "parcels",
        static_cast<double>(o.parcels), "in [2 x networks, 32767]");
  for (std::int64_t side : o.grid)
    check(side >= 4, "a grid side", static_cast<double>(side), ">= 4 voxels");
  check(o.voxel_mm > 0.0 && std::isfinite(o.voxel_mm), "voxel_mm", o.voxel_mm, "> 0");
  check(o.tr_seconds > 0.0 && o.tr_seconds <= 60.0, "tr_seconds", o.tr_seconds, "in (0, 60]");
  check(std::isfinite(o.baseline) && o.baseline >= 0.0, "baseline", o.baseline, ">= 0");
  check(std::isfinite(o.signal_scale) && o.signal_scale >= 0.0, "signal_scale", o.signal_scale,
        ">= 0");
  check(std::isfinite(o.voxel_noise) && o.voxel_noise >= 0.0, "voxel_noise", o.voxel_noise, ">= 0");
  check(o.length_scale > 0.0 && std::isfinite(o.length_scale), "length_scale", o.length_scale,
        "> 0");
  check(o.between_network_scale >= 0.0 && std::isfinite(o.between_network_scale),
        "between_network_scale", o.between_network_scale, ">= 0");
  check(o.density > 0.0 && o.density <= 1.0, "density", o.density, "in (0, 1]");
  check(o.coupling_jitter >= 0.0 && std::isfinite(o.coupling_jitter), "coupling_jitter",
        o.coupling_jitter, ">= 0");
}

Volume empty_volume(const std::string& path, const Grid& grid, std::int64_t nt, double voxel_mm) {
  Volume volume;
  volume.path = path;
  volume.grid = grid;
  volume.nt = nt;
  volume.voxel_size_mm = {voxel_mm, voxel_mm, voxel_mm};
  volume.data.assign(static_cast<std::size_t>(grid.voxels() * nt), 0.0f);
  return volume;
}

double squared_distance(const double* a, const double* b) {
  double sum = 0.0;
  for (int d = 0; d < 3; ++d)
    sum += (a[d] - b[d]) * (a[d] - b[d]);
  return sum;
}

// Best-candidate sampling: `count` of the `points` ([n, 3]), each the farthest from those
// already chosen among 10 drawn at random. Returns their indices.
std::vector<std::size_t> spread_points(const std::vector<double>& points, std::size_t count,
                                       Random& random) {
  const std::size_t n = points.size() / 3;
  std::vector<std::size_t> chosen;
  std::vector<double> nearest(n, std::numeric_limits<double>::infinity());
  std::vector<bool> taken(n, false);
  while (chosen.size() < count) {
    std::size_t best = n;
    for (int candidate = 0; candidate < 10; ++candidate) {
      const auto c = static_cast<std::size_t>(random.below(n));
      if (!taken[c] && (best == n || nearest[c] > nearest[best])) best = c;
    }
    if (best == n) continue;  // every draw was taken already: draw again
    taken[best] = true;
    chosen.push_back(best);
    for (std::size_t p = 0; p < n; ++p)
      nearest[p] = std::min(nearest[p], squared_distance(&points[3 * p], &points[3 * best]));
  }
  return chosen;
}

// Each parcel's network (see the header): poles among the left-hemisphere parcels.
std::vector<std::int64_t> assign_networks(const std::vector<double>& centroids,
                                          std::int64_t networks, double midline, Random& random) {
  const std::size_t parcels = centroids.size() / 3;
  std::vector<double> left;  // left-hemisphere centroids
  std::vector<std::size_t> left_parcel;
  for (std::size_t p = 0; p < parcels; ++p) {
    if (centroids[3 * p] >= midline) continue;
    left.insert(left.end(), &centroids[3 * p], &centroids[3 * p] + 3);
    left_parcel.push_back(p);
  }
  const auto poles_needed = static_cast<std::size_t>(2 * networks);
  if (left_parcel.size() < poles_needed) {  // too few on the left: take poles anywhere
    left = centroids;
    left_parcel.resize(parcels);
    std::iota(left_parcel.begin(), left_parcel.end(), 0);
  }
  std::vector<std::size_t> poles = spread_points(left, poles_needed, random);
  random.shuffle(poles);  // random pairing: shuffle, then k with k + K

  std::vector<std::int64_t> network(parcels, 0);
  for (std::size_t p = 0; p < parcels; ++p) {
    const double mirrored[3] = {midline - std::abs(centroids[3 * p] - midline),
                                centroids[3 * p + 1], centroids[3 * p + 2]};
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t q = 0; q < poles.size(); ++q) {
      const double d = squared_distance(mirrored, &left[3 * poles[q]]);
      if (d < best) {
        best = d;
        network[p] = static_cast<std::int64_t>(q % static_cast<std::size_t>(networks));
      }
    }
  }
  for (std::size_t q = 0; q < poles.size(); ++q)  // every network keeps its poles
    network[left_parcel[poles[q]]] =
        static_cast<std::int64_t>(q % static_cast<std::size_t>(networks));
  return network;
}

// The subject's coupling: the shared weights times exp(jitter * N(0, 1)), rows renormalised.
tasks::Network jittered(const tasks::Network& shared, double jitter, Random& random) {
  tasks::Network network = shared;
  const std::int64_t n = network.nodes;
  for (std::int64_t i = 0; i < n; ++i) {
    double* row = &network.coupling[i * n];
    double sum = 0.0;
    for (std::int64_t j = 0; j < n; ++j) {
      if (row[j] == 0.0) continue;
      row[j] *= std::exp(jitter * random.normal());
      sum += row[j];
    }
    if (sum > 0.0)
      for (std::int64_t j = 0; j < n; ++j)
        row[j] /= sum;
  }
  return network;
}

// The parcels' BOLD signal, [volumes, parcels], standardised per parcel.
std::vector<double> parcel_signals(const tasks::Network& network, const SyntheticCohortOptions& o,
                                   std::uint64_t seed) {
  // Simulated at a fine step (at most 0.5 s, a whole fraction of the TR); one unit = 1 s.
  const auto per_volume = static_cast<std::int64_t>(std::ceil(o.tr_seconds / 0.5 - 1e-9));
  const double fine = o.tr_seconds / static_cast<double>(per_volume);
  const std::vector<double> hrf = canonical_hrf(fine);
  const auto warm_up = static_cast<std::int64_t>(hrf.size());  // the response's length, discarded

  tasks::DynamicsOptions dynamics;
  dynamics.sample_interval = fine;
  dynamics.dt = fine / std::ceil(fine / 0.05 - 1e-9);
  const tasks::Recording recording = [&] {
    try {
      return tasks::simulate(network, dynamics, warm_up + o.volumes * per_volume, seed);
    } catch (const std::invalid_argument& error) {
      throw Error(
          fmt::format("synthetic cohort: the simulation refused its options: {}", error.what()));
    }
  }();

  const std::int64_t parcels = network.nodes;
  std::vector<double> signal(static_cast<std::size_t>(o.volumes * parcels));
  for (std::int64_t v = 0; v < o.volumes; ++v) {
    const std::int64_t at = warm_up + v * per_volume;
    for (std::int64_t p = 0; p < parcels; ++p) {
      double sum = 0.0;
      for (std::size_t m = 0; m < hrf.size(); ++m)
        sum += hrf[m] * recording.activity[(at - static_cast<std::int64_t>(m)) * parcels + p];
      signal[v * parcels + p] = sum;
    }
  }
  for (std::int64_t p = 0; p < parcels; ++p) {
    double mean = 0.0, squares = 0.0;
    for (std::int64_t v = 0; v < o.volumes; ++v)
      mean += signal[v * parcels + p];
    mean /= static_cast<double>(o.volumes);
    for (std::int64_t v = 0; v < o.volumes; ++v)
      squares += (signal[v * parcels + p] - mean) * (signal[v * parcels + p] - mean);
    const double std_dev = std::sqrt(squares / static_cast<double>(o.volumes));
    for (std::int64_t v = 0; v < o.volumes; ++v)
      signal[v * parcels + p] = std_dev > 0.0 ? (signal[v * parcels + p] - mean) / std_dev : 0.0;
  }
  return signal;
}

// The brain: an ellipsoid mask on a grid whose centre voxel is at world (0, -18, 18) mm.
struct Brain {
  Volume mask;
  std::vector<std::int64_t> inside;  // the mask's voxels (linear indices)
  std::vector<double> inside_xyz;    // [inside, 3]: their positions in mm
};

Brain ellipsoid_brain(const std::string& path, const SyntheticCohortOptions& o) {
  Grid grid;
  grid.nx = o.grid[0];
  grid.ny = o.grid[1];
  grid.nz = o.grid[2];
  double centre[3], semi_axes[3];
  const double axis_fraction[3] = {0.42, 0.45, 0.40};
  for (int d = 0; d < 3; ++d) {
    centre[d] = 0.5 * static_cast<double>(o.grid[d] - 1);
    semi_axes[d] = axis_fraction[d] * static_cast<double>(o.grid[d]);
  }
  const double mm = o.voxel_mm;
  grid.affine = {mm, 0, 0,  -mm * centre[0],       0, mm, 0, -18.0 - mm * centre[1],
                 0,  0, mm, 18.0 - mm * centre[2], 0, 0,  0, 1};
  Brain brain;
  brain.mask = empty_volume(path, grid, 1, mm);
  for (std::int64_t k = 0; k < grid.nz; ++k)
    for (std::int64_t j = 0; j < grid.ny; ++j)
      for (std::int64_t i = 0; i < grid.nx; ++i) {
        const double index[3] = {static_cast<double>(i), static_cast<double>(j),
                                 static_cast<double>(k)};
        double radius = 0.0;
        for (int d = 0; d < 3; ++d)
          radius += std::pow((index[d] - centre[d]) / semi_axes[d], 2.0);
        if (radius > 1.0) continue;
        brain.mask.data[grid.index(i, j, k)] = 1.0f;
        brain.inside.push_back(grid.index(i, j, k));
        const auto xyz = grid.world(index[0], index[1], index[2]);
        brain.inside_xyz.insert(brain.inside_xyz.end(), xyz.begin(), xyz.end());
      }
  return brain;
}

// Voronoi parcels: `parcels` seed voxels spread through the brain, each brain voxel labelled
// (1 ..) by its nearest seed.
Volume voronoi_atlas(const std::string& path, const Brain& brain, std::int64_t parcels,
                     Random& random) {
  const std::vector<std::size_t> seeds =
      spread_points(brain.inside_xyz, static_cast<std::size_t>(parcels), random);
  Volume atlas = empty_volume(path, brain.mask.grid, 1, brain.mask.voxel_size_mm[0]);
  for (std::size_t v = 0; v < brain.inside.size(); ++v) {
    double best = std::numeric_limits<double>::infinity();
    std::size_t label = 0;
    for (std::size_t s = 0; s < seeds.size(); ++s) {
      const double d = squared_distance(&brain.inside_xyz[3 * v], &brain.inside_xyz[3 * seeds[s]]);
      if (d < best) {
        best = d;
        label = s + 1;
      }
    }
    atlas.data[brain.inside[v]] = static_cast<float>(label);
  }
  return atlas;
}

// Positions [n, 3] scaled into the unit cube (one scale for all axes, keeping the shape), as
// make_network's nodes are.
std::vector<double> unit_cube(std::vector<double> xyz) {
  const std::size_t n = xyz.size() / 3;
  double low[3], extent = 0.0;
  for (int d = 0; d < 3; ++d) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (std::size_t p = 0; p < n; ++p) {
      lo = std::min(lo, xyz[3 * p + d]);
      hi = std::max(hi, xyz[3 * p + d]);
    }
    low[d] = lo;
    extent = std::max(extent, hi - lo);
  }
  for (std::size_t p = 0; p < n; ++p)
    for (int d = 0; d < 3; ++d)
      xyz[3 * p + d] = (xyz[3 * p + d] - low[d]) / std::max(extent, 1e-12);
  return xyz;
}

// The brain, its atlas on the cohort's grid, and the parcels' truth (in label order).
struct CohortLayout {
  Brain brain;
  Volume atlas;
  ParcelCentroids centroids;
  std::vector<std::string> dropped;
};

CohortLayout voronoi_layout(const std::string& mask_path, const std::string& atlas_path,
                            const SyntheticCohortOptions& o, Random& random) {
  CohortLayout layout;
  layout.brain = ellipsoid_brain(mask_path, o);
  PELAB_CHECK(static_cast<std::int64_t>(layout.brain.inside.size()) >= o.parcels,
              "synthetic cohort: the mask has {} voxels, fewer than the {} parcels; use a larger "
              "grid or fewer parcels",
              layout.brain.inside.size(), o.parcels);
  layout.atlas = voronoi_atlas(atlas_path, layout.brain, o.parcels, random);
  const Parcellation parcellation = atlas_parcellation(layout.atlas);
  layout.centroids = centroids_of(parcellation);
  layout.centroids.network = assign_networks(parcellation.centroids, o.networks, 0.0, random);
  for (std::int64_t n = 0; n < o.networks; ++n)
    layout.centroids.network_names.push_back(fmt::format("network-{}", n + 1));
  return layout;
}

CohortLayout real_atlas_layout(const std::string& mask_path, const std::string& atlas_path,
                               const SyntheticCohortOptions& o) {
  const NamedAtlasImage image = read_named_atlas(o.atlas);
  const Parcellation native = atlas_parcellation(image.labels);

  // The cohort's grid: the labelled voxels' bounding box at voxel_mm, axes along x, y, z.
  const double mm = o.voxel_mm;
  std::array<double, 3> low{}, high{};
  low.fill(std::numeric_limits<double>::infinity());
  high.fill(-std::numeric_limits<double>::infinity());
  const Grid& source = image.labels.grid;
  for (std::int64_t k = 0; k < source.nz; ++k)
    for (std::int64_t j = 0; j < source.ny; ++j)
      for (std::int64_t i = 0; i < source.nx; ++i) {
        if (image.labels.at(i, j, k) == 0.0f) continue;
        const auto xyz =
            source.world(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k));
        for (int d = 0; d < 3; ++d) {
          low[d] = std::min(low[d], xyz[d]);
          high[d] = std::max(high[d], xyz[d]);
        }
      }
  Grid grid;
  std::int64_t* sides[3] = {&grid.nx, &grid.ny, &grid.nz};
  for (int d = 0; d < 3; ++d) {
    low[d] = std::floor(low[d] / mm) * mm;
    *sides[d] = static_cast<std::int64_t>(std::floor((high[d] - low[d]) / mm)) + 1;
  }
  grid.affine = {mm, 0, 0, low[0], 0, mm, 0, low[1], 0, 0, mm, low[2], 0, 0, 0, 1};

  CohortLayout layout;
  const Volume resampled = resample_labels(image.labels, grid, atlas_path);
  std::map<std::int64_t, std::int64_t> new_label;  // the atlas's label -> 1 ..
  for (float value : resampled.data)
    if (value > 0.0f) new_label.emplace(static_cast<std::int64_t>(value), 0);
  std::int64_t next = 0;
  for (auto& [label, renumbered] : new_label)
    renumbered = ++next;
  PELAB_CHECK(next >= 2, "synthetic cohort: {} keeps {} region(s) at {} mm; use smaller voxels",
              image.labels.path, next, mm);

  layout.atlas = empty_volume(atlas_path, grid, 1, mm);
  layout.brain.mask = empty_volume(mask_path, grid, 1, mm);
  for (std::int64_t v = 0; v < grid.voxels(); ++v) {
    const float value = resampled.data[static_cast<std::size_t>(v)];
    if (value == 0.0f) continue;
    layout.atlas.data[static_cast<std::size_t>(v)] =
        static_cast<float>(new_label.at(static_cast<std::int64_t>(value)));
    layout.brain.mask.data[static_cast<std::size_t>(v)] = 1.0f;
    layout.brain.inside.push_back(v);
    const std::int64_t i = v % grid.nx, j = (v / grid.nx) % grid.ny, k = v / (grid.nx * grid.ny);
    const auto xyz =
        grid.world(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k));
    layout.brain.inside_xyz.insert(layout.brain.inside_xyz.end(), xyz.begin(), xyz.end());
  }

  // The kept regions' names, native MNI centroids and lobes.
  std::map<std::int64_t, std::size_t> native_parcel;
  for (std::size_t p = 0; p < native.ids.size(); ++p)
    native_parcel[native.ids[p]] = p;
  std::vector<std::string> lobes;
  for (const AtlasRegion& region : image.regions) {
    if (!new_label.count(region.label)) {
      layout.dropped.push_back(region.name);
      continue;
    }
    const std::size_t p = native_parcel.at(region.label);
    layout.centroids.xyz.insert(layout.centroids.xyz.end(), &native.centroids[3 * p],
                                &native.centroids[3 * p] + 3);
    layout.centroids.names.push_back(region.name);
    lobes.push_back(region.lobe);
  }
  PELAB_CHECK(static_cast<std::int64_t>(lobes.size()) == next,
              "synthetic cohort: {} has labels without a region name", image.labels.path);
  // Networks numbered in order of first appearance, as read_centroids_csv numbers them.
  for (const std::string& lobe : lobes)
    if (std::find(layout.centroids.network_names.begin(), layout.centroids.network_names.end(),
                  lobe) == layout.centroids.network_names.end())
      layout.centroids.network_names.push_back(lobe);
  for (const std::string& lobe : lobes)
    layout.centroids.network.push_back(std::find(layout.centroids.network_names.begin(),
                                                 layout.centroids.network_names.end(), lobe) -
                                       layout.centroids.network_names.begin());
  layout.centroids.source = image.labels.path;
  return layout;
}

}  // namespace

std::vector<double> canonical_hrf(double dt, double length_seconds) {
  PELAB_CHECK(dt > 0.0 && length_seconds >= dt, "canonical_hrf: dt {} and length {} s", dt,
              length_seconds);
  const auto gamma_density = [](double t, double shape) {
    return t <= 0.0 ? 0.0 : std::exp((shape - 1.0) * std::log(t) - t - std::lgamma(shape));
  };
  const auto samples = static_cast<std::size_t>(std::floor(length_seconds / dt + 1e-9)) + 1;
  std::vector<double> hrf(samples);
  double sum = 0.0;
  for (std::size_t m = 0; m < samples; ++m) {
    const double t = static_cast<double>(m) * dt;
    hrf[m] = gamma_density(t, 6.0) - gamma_density(t, 16.0) / 6.0;
    sum += hrf[m];
  }
  for (double& h : hrf)
    h /= sum;
  return hrf;
}

SyntheticCohort write_synthetic_cohort(const std::string& folder, const SyntheticCohortOptions& o) {
  check_options(o);
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  PELAB_CHECK(std::filesystem::is_directory(folder, error),
              "synthetic cohort: cannot create the folder {}", folder);
  const std::string extension = o.compress ? ".nii.gz" : ".nii";
  const auto file = [&](const std::string& name) {
    return (std::filesystem::path(folder) / name).string();
  };
  SyntheticCohort cohort;
  WriteOptions stored;
  stored.xform_code = 4;  // MNI-152-like space

  cohort.mask = file("mask" + extension);
  cohort.atlas = file("atlas" + extension);
  Random random = Random::from_splitmix(o.seed, kLayoutStream);
  const CohortLayout layout = o.atlas.empty() ? voronoi_layout(cohort.mask, cohort.atlas, o, random)
                                              : real_atlas_layout(cohort.mask, cohort.atlas, o);
  const Brain& brain = layout.brain;
  stored.type = StorageType::kUint8;
  write_volume(cohort.mask, brain.mask, stored);
  stored.type = StorageType::kInt16;
  write_volume(cohort.atlas, layout.atlas, stored);
  const Parcellation parcellation = atlas_parcellation(layout.atlas);
  const ParcelCentroids& centroids = layout.centroids;
  cohort.centroids = file("centroids.csv");
  write_centroids_csv(cohort.centroids, centroids);
  cohort.network = centroids.network;
  cohort.dropped = layout.dropped;
  const std::int64_t parcels = centroids.parcels();

  tasks::CouplingOptions coupling;
  coupling.length_scale = o.length_scale;
  coupling.between_module_scale = o.between_network_scale;
  coupling.density = o.density;
  const tasks::Network shared =
      tasks::couple(unit_cube(centroids.xyz), 3, centroids.network, coupling);

  // Per voxel in the brain: its baseline (fixed anatomy) and its parcel.
  std::vector<double> baseline(brain.inside.size());
  for (double& b : baseline)
    b = o.baseline * (1.0 + 0.05 * random.normal());
  std::vector<std::int32_t> parcel_of(brain.inside.size());
  for (std::size_t v = 0; v < brain.inside.size(); ++v)
    parcel_of[v] = parcellation.voxel_parcel[brain.inside[v]];

  const int digits = std::max(2, static_cast<int>(std::to_string(o.subjects).size()));
  for (std::int64_t s = 0; s < o.subjects; ++s) {
    Random variation = Random::from_splitmix(subject_seed(o.seed, s, 0));
    Random noise = Random::from_splitmix(subject_seed(o.seed, s, 1));
    const tasks::Network network = jittered(shared, o.coupling_jitter, variation);
    const std::vector<double> signal = parcel_signals(network, o, subject_seed(o.seed, s, 2));

    const std::string path = file(fmt::format("sub-{:0{}}_bold{}", s + 1, digits, extension));
    Volume bold = empty_volume(path, brain.mask.grid, o.volumes, o.voxel_mm);
    bold.tr_seconds = o.tr_seconds;
    double largest = 0.0;
    for (std::int64_t t = 0; t < o.volumes; ++t) {
      float* volume = bold.data.data() + brain.mask.grid.voxels() * t;
      const double* parcel_signal = signal.data() + parcels * t;
      for (std::size_t v = 0; v < brain.inside.size(); ++v) {
        const double value = baseline[v] + o.signal_scale * parcel_signal[parcel_of[v]] +
                             o.voxel_noise * noise.normal();
        volume[brain.inside[v]] = static_cast<float>(value);
        largest = std::max(largest, std::abs(value));
      }
    }
    stored.type = StorageType::kInt16;  // with the finest slope that holds every value
    stored.scl_slope = largest > 0.0 ? largest / 32000.0 : 1.0;
    write_volume(path, bold, stored);
    cohort.bold.push_back(path);
  }
  return cohort;
}

}  // namespace pelab::brain
