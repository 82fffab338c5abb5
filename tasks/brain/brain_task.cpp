// The paper's third experiment: brain regions (parcels) are the tokens of resting-state fMRI; each
// token's input is a window of its parcel's z-scored time series, and the model predicts the
// windows of masked parcels of held-out subjects. The parcels' centroids (3D, mm) are hidden from
// the model; the networks are the layout's communities. Data: a synthetic cohort that pelab
// generates, the user's NIfTI images (an atlas or a grid parcellation), already-parcellated time
// series (.npy or .csv) with a centroids CSV, or the small real sample that ships with pelab. See
// docs/tasks/brain.md.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <pelab/sdk.h>

#include "masked_splits.h"
#include "named_atlas.h"
#include "parcel_centroids.h"
#include "parcel_time_series.h"
#include "parcellation.h"
#include "subjects.h"
#include "synthetic_cohort.h"
#include "volume.h"

namespace pelab::brain {
namespace {

// Bumped whenever the synthetic cohort's files change for the same parameters.
constexpr const char* kCohortVersion = "brain synthetic cohort v1";
constexpr const char* kSampleFile = "functional.nii";

// The parcel time series of every subject, the parcels' centroids and networks.
struct Cohort {
  std::vector<std::string> names;  // one per subject: its file name without extension
  std::vector<ParcelTimeSeries> subjects;
  ParcelCentroids centroids;
};

std::string stem(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const std::string extension : {".nii.gz", ".nii", ".npy", ".csv"}) {
    if (name.size() > extension.size() &&
        name.compare(name.size() - extension.size(), extension.size(), extension) == 0) {
      return name.substr(0, name.size() - extension.size());
    }
  }
  return name;
}

// A subject's [time, parcels] matrix from a .npy file, as numpy.save writes it.
ParcelTimeSeries read_time_series_npy(const std::string& path) {
  const torch::Tensor matrix = read_npy(path);
  PELAB_CHECK(matrix.dim() == 2,
              "{}: a subject's parcel time series must be a 2D array [time, parcels], got shape "
              "({}); save it with numpy.save(path, series) where series.shape == (time, parcels)",
              path, fmt::join(matrix.sizes(), ", "));
  PELAB_CHECK(matrix.is_floating_point(),
              "{}: the parcel time series must be floats (float32 or float64)", path);
  const torch::Tensor values = matrix.to(torch::kFloat32).contiguous();
  ParcelTimeSeries series;
  series.source = path;
  series.time_points = matrix.size(0);
  series.parcels = matrix.size(1);
  series.values.assign(values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
  return series;
}

ParcelTimeSeries read_time_series(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".npy") return read_time_series_npy(path);
  PELAB_CHECK(extension == ".csv",
              "{}: parcellated time series are read from .npy or .csv files [time, parcels]; "
              "this file is neither",
              path);
  return read_time_series_csv(path);
}

class BrainTask final : public Task {
 public:
  explicit BrainTask(const PluginContext& context)
      : params_(context.params),
        window_(params_.integer("window")),
        stride_(params_.integer("stride")),
        splits_(params_, "brain") {
    const std::string& source = params_.string("source");
    Cohort cohort = source == "synthetic" ? synthetic()
                    : source == "sample"  ? sample(context.data_dir)
                    : source == "nifti"   ? nifti()
                                          : parcellated();
    validate_subjects(cohort);
    split(std::move(cohort));
  }

  Layout layout() const override { return layout_; }
  std::int64_t input_size() const override { return window_; }
  Objective objective() const override { return Objective::masked_token_regression(window_); }
  std::vector<std::string> splits() const override { return tasks::MaskedSplits::names(); }

  Dataset load(const std::string& split) override {
    return splits_.load(
        split, [&] { return train_; }, [&] { return test_; });
  }

 private:
  // What the synthetic cohort will take, refused before anything is allocated: one subject's 4D
  // image at a time (float32, generated and then read back: twice), every subject's parcel time
  // series (float64), and the windows cut from them (float32).
  void check_cohort_memory(const SyntheticCohortOptions& options) const {
    const double voxels = static_cast<double>(options.grid[0] * options.grid[1] * options.grid[2]);
    const double subjects = static_cast<double>(options.subjects);
    const double volumes = static_cast<double>(options.volumes);
    const double parcels = static_cast<double>(options.parcels);
    const double window = static_cast<double>(params_.integer("window"));
    const double windows = std::max(
        0.0, std::floor((volumes - window) / static_cast<double>(params_.integer("stride"))) + 1);
    const double image_bytes = voxels * volumes * 4.0 * 2.0;
    const double series_bytes = subjects * volumes * parcels * 8.0;
    const double window_bytes = subjects * windows * parcels * window * 4.0;
    check_fits_in_memory(
        image_bytes + series_bytes + window_bytes, "the brain task's synthetic cohort",
        fmt::format("{} subjects x {} volumes of a {}x{}x{} grid ({} for one subject's image) and "
                    "{:.0f} windows a subject x {} parcels x {} points ({} in float32)",
                    options.subjects, options.volumes, options.grid[0], options.grid[1],
                    options.grid[2], format_bytes(image_bytes), windows, options.parcels,
                    params_.integer("window"), format_bytes(window_bytes)),
        "Use fewer subjects or volumes, fewer parcels, or a larger stride");
  }

  // The synthetic cohort, written once into the data cache and read back through the atlas path,
  // as a user's NIfTI data would be.
  Cohort synthetic() const {
    SyntheticCohortOptions options;
    options.subjects = params_.integer("subjects");
    options.volumes = params_.integer("volumes");
    options.parcels = params_.integer("parcels");
    options.networks = params_.integer("networks");
    options.tr_seconds = params_.real("tr_seconds");
    options.voxel_noise = params_.real("voxel_noise");
    options.coupling_jitter = params_.real("coupling_jitter");
    options.seed = static_cast<std::uint64_t>(params_.integer("cohort_seed"));
    options.atlas = params_.string("atlas");
    PELAB_CHECK(options.atlas.empty() || is_named_atlas(options.atlas),
                "source = \"synthetic\" builds its cohort on a named atlas ({}), not on '{}'; for "
                "your own label image and images use source = \"nifti\" with atlas = \"{}\"",
                fmt::join(named_atlas_keys(), ", "), options.atlas, options.atlas);
    if (!options.atlas.empty()) {
      // The atlas's field of view (about 182 x 218 x 182 mm) and at most 384 regions (AICHA's
      // 192 labels split at the midline): an upper bound for the estimate.
      for (std::size_t d = 0; d < 3; ++d)
        options.grid[d] = static_cast<std::int64_t>(std::ceil(220.0 / options.voxel_mm));
      options.parcels = 384;
      resolve_named_atlas(options.atlas);  // a missing package is named before any work
    }
    check_cohort_memory(options);
    std::string description = fmt::format(
        "{}\nsubjects = {}\nvolumes = {}\nparcels = {}\nnetworks = {}\ntr_seconds = {}\n"
        "voxel_noise = {}\ncoupling_jitter = {}\nseed = {}\n",
        kCohortVersion, options.subjects, options.volumes, options.parcels, options.networks,
        format_number(options.tr_seconds), format_number(options.voxel_noise),
        format_number(options.coupling_jitter), options.seed);
    if (!options.atlas.empty()) {  // a new line only then: the Voronoi cohorts keep their caches
      description +=
          fmt::format("atlas = {} ({})\n", options.atlas, resolve_named_atlas(options.atlas));
    }
    const DataCache cache("brain_synthetic", description, params_.string("cache_dir"));
    if (!cache.ready()) {
      const SyntheticCohort written = write_synthetic_cohort(cache.dir(), options);
      if (!written.dropped.empty()) {
        fmt::print(stderr,
                   "note: the brain task's cohort on the atlas '{}' drops {} region(s) that keep "
                   "no voxel at {} mm: {}\n",
                   options.atlas, written.dropped.size(), format_number(options.voxel_mm),
                   fmt::join(written.dropped, ", "));
      }
      cache.commit();
    }
    std::vector<std::string> bold;
    for (std::int64_t s = 1; s <= options.subjects; ++s)
      bold.push_back(cache.path(fmt::format("sub-{:02}_bold.nii.gz", s)));
    Cohort cohort = from_atlas(bold, cache.path("atlas.nii.gz"));
    // The truth the cohort was made from: for a real atlas its regions' native MNI centroids and
    // names; for the Voronoi atlas the same centroids as the parcellation's (written exactly).
    const ParcelCentroids truth = read_centroids_csv(cache.path("centroids.csv"));
    PELAB_CHECK(truth.parcels() == cohort.centroids.parcels(),
                "{} lists {} parcels but {} has {}: the data cache is damaged; delete {}",
                truth.source, truth.parcels(), cohort.centroids.source, cohort.centroids.parcels(),
                cache.dir());
    cohort.centroids = truth;
    return cohort;
  }

  // The real sample that ships with pelab (NiBabel's functional.nii: one subject, 20 volumes),
  // with a grid parcellation inside its mean-intensity mask.
  Cohort sample(const std::string& data_dir) const {
    const std::string dir =
        params_.string("data_dir").empty() ? data_dir : params_.string("data_dir");
    const std::string path = dir + "/" + kSampleFile;
    std::error_code ignored;
    PELAB_CHECK(std::filesystem::exists(path, ignored),
                "the brain task cannot find its sample '{}' (installed with pelab in "
                "<prefix>/share/pelab/brain): reinstall pelab, or set data_dir",
                path);
    return from_grid({path});
  }

  // The user's NIfTI images: an atlas when given, else a grid parcellation.
  Cohort nifti() const {
    const std::vector<std::string> files = expand_subjects(params_.strings("functional"));
    PELAB_CHECK(!files.empty(),
                "source = \"nifti\" needs the subjects' 4D images: functional = "
                "[\"data/sub-*_bold.nii.gz\"]");
    const std::string& atlas = params_.string("atlas");
    if (atlas.empty()) return from_grid(files);
    Cohort cohort = from_atlas(files, is_named_atlas(atlas) ? resolve_named_atlas(atlas) : atlas);
    if (!params_.string("centroids").empty()) {
      cohort.centroids = with_networks(cohort.centroids, params_.string("centroids"));
    }
    return cohort;
  }

  // Already-parcellated time series (.npy or .csv, [time, parcels]) and a centroids CSV.
  Cohort parcellated() const {
    PELAB_CHECK(!params_.string("centroids").empty(),
                "source = \"parcellated\" needs the parcels' centroids: centroids = "
                "\"parcels.csv\" with columns x,y,z (mm) and optionally network");
    Cohort cohort;
    cohort.centroids = read_centroids_csv(params_.string("centroids"));
    const std::vector<std::string> files = expand_subjects(params_.strings("time_series"));
    PELAB_CHECK(!files.empty(),
                "source = \"parcellated\" needs the subjects' files: time_series = "
                "[\"data/sub-*.npy\"]");
    const std::vector<std::string>& nuisance = params_.strings("nuisance_columns");
    for (const auto& file : files) {
      ParcelTimeSeries series = read_time_series(file);
      if (!nuisance.empty()) {
        if (params_.string("nuisance") == "regress") {
          series = regress_out(series, nuisance);
        } else {
          std::vector<std::string> kept;
          for (const std::string& column : series.column_names)
            if (std::find(nuisance.begin(), nuisance.end(), column) == nuisance.end())
              kept.push_back(column);
          series = select_columns(series, kept);
        }
      }
      // A centroids CSV that names each parcel's column picks and orders the columns.
      if (!cohort.centroids.columns.empty())
        series = select_columns(series, cohort.centroids.columns);
      cohort.names.push_back(stem(file));
      cohort.subjects.push_back(std::move(series));
    }
    return cohort;
  }

  Cohort from_atlas(const std::vector<std::string>& files, const std::string& atlas_path) const {
    const Parcellation parcellation = atlas_parcellation(read_volume(atlas_path, Expect::k3D));
    return extract(files, parcellation);
  }

  Cohort from_grid(const std::vector<std::string>& files) const {
    const Volume first = read_volume(files.front(), Expect::k4D);
    const Volume mask = params_.string("mask").empty()
                            ? mean_intensity_mask(first, params_.real("mask_fraction"))
                            : read_volume(params_.string("mask"), Expect::k3D);
    GridParcellationOptions options;
    const auto& block = params_.integers("grid_block");
    PELAB_CHECK(block.size() == 3, "grid_block must hold 3 sizes (voxels along i, j, k), got {}",
                block.size());
    options.block = {block[0], block[1], block[2]};
    options.min_voxels = params_.integer("min_voxels");
    return extract(files, grid_parcellation(mask, options));
  }

  Cohort extract(const std::vector<std::string>& files, const Parcellation& parcellation) const {
    PELAB_CHECK(parcellation.parcels() >= 2, "{} has {} parcel(s); the task needs at least 2",
                parcellation.source, parcellation.parcels());
    Cohort cohort;
    cohort.centroids = centroids_of(parcellation);
    for (const auto& file : files) {
      cohort.names.push_back(stem(file));
      cohort.subjects.push_back(extract_time_series(read_volume(file, Expect::k4D), parcellation));
    }
    return cohort;
  }

  // The centroids of a parcellation with the network labels of a CSV listing the same parcels.
  static ParcelCentroids with_networks(ParcelCentroids centroids, const std::string& csv) {
    const ParcelCentroids labelled = read_centroids_csv(csv);
    PELAB_CHECK(labelled.parcels() == centroids.parcels(),
                "{} lists {} parcels but {} has {}: one row per parcel, in label order", csv,
                labelled.parcels(), centroids.source, centroids.parcels());
    centroids.network = labelled.network;
    centroids.network_names = labelled.network_names;
    if (!labelled.names.empty()) centroids.names = labelled.names;
    return centroids;
  }

  // Every subject against the centroids; constant parcels as constant_parcels says.
  void validate_subjects(Cohort& cohort) const {
    ValidationOptions options;
    options.expected_parcels = cohort.centroids.parcels();
    options.expected_from = cohort.centroids.source;
    options.min_time_points = window_;
    options.constant_parcels = params_.string("constant_parcels") == "drop"
                                   ? ConstantParcels::kDrop
                                   : ConstantParcels::kError;
    const std::vector<std::int64_t> dropped = validate_cohort(cohort.subjects, options);
    if (!dropped.empty()) cohort.centroids = drop_parcels(cohort.centroids, dropped);
  }

  // Held-out subjects (seeded, recorded as the test split's groups), or, with test_subjects = 0,
  // the last test_fraction of every subject's time series; then windows and the layout.
  void split(Cohort cohort) {
    const auto subjects = static_cast<std::int64_t>(cohort.subjects.size());
    const std::int64_t held_out = params_.integer("test_subjects");
    std::vector<torch::Tensor> train_series, test_series;
    std::vector<std::string> train_names, test_names;
    if (held_out > 0) {
      PELAB_CHECK(held_out < subjects,
                  "test_subjects = {} leaves no subject to train on: the data has {} subject(s); "
                  "lower test_subjects, or set it to 0 to hold out the end of every subject's "
                  "time series instead",
                  held_out, subjects);
      std::vector<std::int64_t> order(static_cast<std::size_t>(subjects));
      std::iota(order.begin(), order.end(), 0);
      Random::from_engine_seed(static_cast<std::uint64_t>(params_.integer("split_seed")))
          .shuffle(order);
      std::sort(order.begin(), order.begin() + held_out);
      std::sort(order.begin() + held_out, order.end());
      for (std::int64_t i = 0; i < subjects; ++i) {
        const auto s = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
        (i < held_out ? test_series : train_series).push_back(z_scored(cohort.subjects[s]));
        (i < held_out ? test_names : train_names).push_back(cohort.names[s]);
      }
    } else {
      for (std::size_t s = 0; s < cohort.subjects.size(); ++s) {
        const torch::Tensor series = z_scored(cohort.subjects[s]);
        const std::int64_t length = series.size(0);
        const auto test_length = static_cast<std::int64_t>(
            std::llround(params_.real("test_fraction") * static_cast<double>(length)));
        PELAB_CHECK(test_length >= window_ && length - test_length >= window_,
                    "{}: {} time points cannot be split into train and test parts of at least "
                    "one window ({}) each with test_fraction = {}; lower the window or use more "
                    "time points",
                    cohort.subjects[s].source, length, window_, params_.real("test_fraction"));
        train_series.push_back(series.slice(0, 0, length - test_length));
        test_series.push_back(series.slice(0, length - test_length));
        train_names.push_back(cohort.names[s]);
        test_names.push_back(cohort.names[s]);
      }
    }
    train_ = windows(train_series, train_names);
    test_ = windows(test_series, test_names);
    layout_ = make_layout(cohort.centroids, train_series);
  }

  // Each parcel z-scored over the subject's time series: [time, parcels] float32.
  static torch::Tensor z_scored(const ParcelTimeSeries& series) {
    const torch::Tensor values =
        torch::from_blob(const_cast<float*>(series.values.data()),
                         {series.time_points, series.parcels}, torch::kFloat32)
            .to(torch::kFloat64);
    const torch::Tensor mean = values.mean(0, /*keepdim=*/true);
    const torch::Tensor std = values.std(0, /*unbiased=*/false, /*keepdim=*/true);
    return ((values - mean) / std).to(torch::kFloat32);
  }

  // Windows of every subject, grouped by subject: inputs = targets [windows, parcels, window].
  Dataset windows(const std::vector<torch::Tensor>& series,
                  const std::vector<std::string>& names) const {
    std::vector<torch::Tensor> inputs, groups;
    for (std::size_t s = 0; s < series.size(); ++s) {
      const torch::Tensor w = series[s].unfold(0, window_, stride_);  // [windows, parcels, window]
      inputs.push_back(w);
      groups.push_back(torch::full({w.size(0)}, static_cast<std::int64_t>(s), torch::kInt64));
    }
    Dataset data;
    data.inputs = torch::cat(inputs).contiguous();
    data.targets = data.inputs;
    data.groups = torch::cat(groups);
    data.group_names = names;
    return data;
  }

  static Layout make_layout(const ParcelCentroids& centroids,
                            const std::vector<torch::Tensor>& train_series) {
    Layout layout;
    layout.tokens = centroids.parcels();
    layout.coordinates = torch::tensor(centroids.xyz, torch::kFloat64).reshape({-1, 3});
    layout.axis_names = {"x", "y", "z"};
    // The model never sees where a parcel is: the centroids are ground truth for probes.
    layout.coordinates_visible = false;
    if (!centroids.network.empty()) {
      layout.communities = torch::tensor(centroids.network, torch::kInt64);
      layout.community_names = centroids.network_names;
    }
    // Functional connectivity as neuroimaging computes it: each training subject's correlation
    // matrix, averaged over subjects.
    torch::Tensor sum = torch::zeros({layout.tokens, layout.tokens}, torch::kFloat64);
    for (const auto& z : train_series) {
      const torch::Tensor centred = z.to(torch::kFloat64) - z.to(torch::kFloat64).mean(0, true);
      const torch::Tensor unit = centred / centred.norm(2, {0}, /*keepdim=*/true);
      sum += unit.t().matmul(unit);
    }
    layout.relations["functional_connectivity"] = sum / static_cast<double>(train_series.size());
    // Homotopy: 1 between a region and its homologue in the other hemisphere, from the names.
    const auto pairs = homologous_pairs(centroids.names);
    if (!pairs.empty()) {
      torch::Tensor homotopy = torch::zeros({layout.tokens, layout.tokens}, torch::kFloat64);
      for (const auto& [left, right] : pairs) {
        homotopy[left][right] = 1.0;
        homotopy[right][left] = 1.0;
      }
      layout.relations["homotopy"] = homotopy;
    }
    return layout;
  }

  Params params_;
  std::int64_t window_;
  std::int64_t stride_;
  tasks::MaskedSplits splits_;
  Dataset train_;
  Dataset test_;
  Layout layout_;
};

// When a source's options are read: a key set for another source would be silently ignored, so
// the manifest refuses it (ParamSpec::used_only_when).
bool source_is(const Params& params, const char* source) {
  return params.string("source") == source;
}
bool synthetic(const Params& p) {
  return source_is(p, "synthetic");
}
// The synthetic cohort's own parcels: a named atlas brings its regions and lobes instead.
bool voronoi_parcels(const Params& p) {
  return source_is(p, "synthetic") && p.string("atlas").empty();
}
// A grid parcellation: the sample, and the user's images without an atlas.
bool grid_parcellation(const Params& p) {
  return source_is(p, "sample") || (source_is(p, "nifti") && p.string("atlas").empty());
}

void declare(ParamSchema& schema) {
  schema.choice("source", "synthetic", {"synthetic", "nifti", "parcellated", "sample"},
                "Where the data comes from: \"synthetic\", a cohort pelab generates (NIfTI files "
                "in the data cache, read back like a user's); \"nifti\", your 4D images "
                "(functional) with an atlas or a grid parcellation; \"parcellated\", your "
                "[time, parcels] .npy/.csv files (time_series) with a centroids CSV; \"sample\", "
                "the small real image that ships with pelab (one subject, a smoke test).");
  // The synthetic cohort.
  schema.integer("subjects", 8, "source = \"synthetic\": subjects.")
      .in_range(2, 1000)
      .used_only_when("source = \"synthetic\"", synthetic);
  schema.integer("volumes", 150, "source = \"synthetic\": volumes per subject.")
      .in_range(8, 100000)
      .used_only_when("source = \"synthetic\"", synthetic);
  schema.integer("parcels", 100, "source = \"synthetic\": parcels of the atlas (the tokens).")
      .in_range(2, 1000)
      .used_only_when("source = \"synthetic\" without an atlas", voronoi_parcels);
  schema.integer("networks", 6, "source = \"synthetic\": large-scale networks (communities).")
      .in_range(1, 100)
      .used_only_when("source = \"synthetic\" without an atlas", voronoi_parcels);
  schema.real("tr_seconds", 2.0, "source = \"synthetic\": the repetition time.")
      .in_range(0.1, 10.0)
      .used_only_when("source = \"synthetic\"", synthetic);
  schema
      .real("voxel_noise", 10.0,
            "source = \"synthetic\": std of each voxel's noise (the BOLD "
            "baseline is 1000, the parcel signal's std 20).")
      .in_range(0.0, 1e4)
      .used_only_when("source = \"synthetic\"", synthetic);
  schema
      .real("coupling_jitter", 0.2,
            "source = \"synthetic\": subjects' individual variation of the coupling weights "
            "(log-normal std).")
      .in_range(0.0, 5.0)
      .used_only_when("source = \"synthetic\"", synthetic);
  schema.integer("cohort_seed", 0, "source = \"synthetic\": the cohort's seed.")
      .at_least(0)
      .used_only_when("source = \"synthetic\"", synthetic);
  schema
      .string("cache_dir", "",
              "source = \"synthetic\": the data cache's root; \"\" = $PELAB_CACHE_DIR, else "
              "$XDG_CACHE_HOME/pelab, else ~/.cache/pelab.")
      .used_only_when("source = \"synthetic\"", synthetic);
  // The user's data.
  schema
      .strings("functional", {},
               "source = \"nifti\": the subjects' 4D images (.nii or .nii.gz), paths or file-name "
               "patterns such as \"data/sub-*_bold.nii.gz\" (relative to the working folder).")
      .used_only_when("source = \"nifti\"", [](const Params& p) { return source_is(p, "nifti"); });
  schema
      .string("atlas", "",
              "source = \"nifti\": a 3D label image on the same grid (0 = background), or a "
              "named atlas in MNI space (\"aal\", \"harvard_oxford\", \"aicha\", from Debian's "
              "mricron-data); \"\" = a grid parcellation inside the brain mask. source = "
              "\"synthetic\": \"\" = Voronoi parcels in an ellipsoid, or a named atlas whose "
              "regions are the parcels (parcels and networks are then the atlas's regions and "
              "lobes).")
      .used_only_when("source = \"nifti\" or \"synthetic\"",
                      [](const Params& p) { return source_is(p, "nifti") || synthetic(p); });
  schema
      .string("mask", "",
              "Grid parcellation: a 3D brain mask on the images' grid; \"\" = the voxels whose "
              "mean exceeds mask_fraction of the first image's robust maximum.")
      .used_only_when("a grid parcellation (source = \"sample\", or \"nifti\" without an atlas)",
                      grid_parcellation);
  schema.real("mask_fraction", 0.2, "Grid parcellation without a mask: see mask.")
      .in_range(0.0, 1.0)
      .used_only_when("a grid parcellation (source = \"sample\", or \"nifti\" without an atlas)",
                      grid_parcellation);
  schema.integers("grid_block", {3, 3, 1}, "Grid parcellation: block size in voxels (i, j, k).")
      .in_range(1, 1000)
      .used_only_when("a grid parcellation (source = \"sample\", or \"nifti\" without an atlas)",
                      grid_parcellation);
  schema
      .integer("min_voxels", 1, "Grid parcellation: blocks with fewer in-mask voxels are dropped.")
      .at_least(1)
      .used_only_when("a grid parcellation (source = \"sample\", or \"nifti\" without an atlas)",
                      grid_parcellation);
  schema
      .strings("time_series", {},
               "source = \"parcellated\": one file per subject, [time, parcels], .npy "
               "(numpy.save) or .csv; paths or patterns such as \"data/sub-*.npy\".")
      .used_only_when("source = \"parcellated\"",
                      [](const Params& p) { return source_is(p, "parcellated"); });
  schema
      .string("centroids", "",
              "source = \"parcellated\" (required) or \"nifti\" with an atlas (optional, for the "
              "networks): a CSV with header x,y,z[,network], one row per parcel in column (or "
              "label) order, mm.")
      .used_only_when("source = \"parcellated\", or \"nifti\" with an atlas", [](const Params& p) {
        return source_is(p, "parcellated") || (source_is(p, "nifti") && !p.string("atlas").empty());
      });
  schema
      .strings("nuisance_columns", {},
               "source = \"parcellated\": columns of the time-series files that are nuisance "
               "signals, not parcels (e.g. [\"WM\", \"Vent\", \"Brain\"]: white matter, "
               "ventricles, global), by their header names.")
      .used_only_when("source = \"parcellated\"",
                      [](const Params& p) { return source_is(p, "parcellated"); });
  schema
      .choice("nuisance", "regress", {"regress", "drop"},
              "What is done with nuisance_columns: \"regress\" them out of every parcel "
              "(least squares with an intercept), then drop them; or only \"drop\" them.")
      .used_only_when("source = \"parcellated\" with nuisance_columns", [](const Params& p) {
        return source_is(p, "parcellated") && !p.strings("nuisance_columns").empty();
      });
  schema.choice("constant_parcels", "error", {"error", "drop"},
                "A parcel whose time series is constant in some subject: \"error\" (name it), or "
                "\"drop\" it from every subject.");
  schema
      .string("data_dir", "",
              "source = \"sample\": the folder of functional.nii; \"\" = the installed data "
              "<prefix>/share/pelab/brain.")
      .used_only_when("source = \"sample\"",
                      [](const Params& p) { return source_is(p, "sample"); });
  // Samples and splits.
  schema.integer("window", 16, "Time points (volumes) per token: its input and its target.")
      .in_range(1, 10000);
  schema.integer("stride", 4, "Time points between the starts of consecutive windows.")
      .in_range(1, 10000);
  schema
      .integer(
          "test_subjects", 2,
          "Subjects held out for test (chosen by split_seed, listed as the test split's "
          "groups in the run's metrics); 0 = hold out the last test_fraction of every subject's "
          "time series instead (single-subject data).")
      .at_least(0);
  schema.integer("split_seed", 0, "Seed of the choice of held-out subjects.")
      .at_least(0)
      .used_only_when("test_subjects > 0",
                      [](const Params& p) { return p.integer("test_subjects") > 0; });
  schema.real("test_fraction", 0.3, "test_subjects = 0: the fraction of time held out.")
      .in_range(0.01, 0.99)
      .used_only_when("test_subjects = 0",
                      [](const Params& p) { return p.integer("test_subjects") == 0; });
  tasks::MaskedSplits::declare(schema, "parcels");
}

std::shared_ptr<Task> create(const PluginContext& context) {
  return std::make_shared<BrainTask>(context);
}

}  // namespace
}  // namespace pelab::brain

PELAB_REGISTER_PLUGIN("brain", "1.0.0",
                      "Masked-parcel prediction on fMRI: parcels as tokens, held-out subjects "
                      "(synthetic cohort, NIfTI, parcellated .npy/.csv; the paper's third "
                      "experiment)",
                      pelab::brain::declare, pelab::brain::create)
