#include "named_atlas.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include <pelab/sdk.h>

namespace pelab::brain {
namespace {

constexpr const char* kDebianAtlasDir = "/usr/share/mricron/templates";
constexpr const char* kPackage = "mricron-data";

struct AtlasFiles {
  const char* key;
  const char* image;
  const char* names;      // "index name code" per line, beside the image; nullptr: built in
  bool bilateral_labels;  // one label spans both hemispheres: split at the midline
};

constexpr std::array<AtlasFiles, 3> kAtlases{{
    {"aal", "aal.nii.gz", "aal.nii.txt", false},
    {"harvard_oxford", "HarvardOxford-cort-maxprob-thr0-1mm.nii.gz", nullptr, true},
    {"aicha", "AICHAmc.nii.gz", "AICHAmc.nii.txt", true},
}};

// The Harvard-Oxford cortical atlas's 48 labels, in label order (FSL's
// HarvardOxford-Cortical.xml); the package ships the image without them.
constexpr std::array<const char*, 48> kHarvardOxfordCortical{
    "Frontal Pole",
    "Insular Cortex",
    "Superior Frontal Gyrus",
    "Middle Frontal Gyrus",
    "Inferior Frontal Gyrus, pars triangularis",
    "Inferior Frontal Gyrus, pars opercularis",
    "Precentral Gyrus",
    "Temporal Pole",
    "Superior Temporal Gyrus, anterior division",
    "Superior Temporal Gyrus, posterior division",
    "Middle Temporal Gyrus, anterior division",
    "Middle Temporal Gyrus, posterior division",
    "Middle Temporal Gyrus, temporooccipital part",
    "Inferior Temporal Gyrus, anterior division",
    "Inferior Temporal Gyrus, posterior division",
    "Inferior Temporal Gyrus, temporooccipital part",
    "Postcentral Gyrus",
    "Superior Parietal Lobule",
    "Supramarginal Gyrus, anterior division",
    "Supramarginal Gyrus, posterior division",
    "Angular Gyrus",
    "Lateral Occipital Cortex, superior division",
    "Lateral Occipital Cortex, inferior division",
    "Intracalcarine Cortex",
    "Frontal Medial Cortex",
    "Juxtapositional Lobule Cortex",
    "Subcallosal Cortex",
    "Paracingulate Gyrus",
    "Cingulate Gyrus, anterior division",
    "Cingulate Gyrus, posterior division",
    "Precuneous Cortex",
    "Cuneal Cortex",
    "Frontal Orbital Cortex",
    "Parahippocampal Gyrus, anterior division",
    "Parahippocampal Gyrus, posterior division",
    "Lingual Gyrus",
    "Temporal Fusiform Cortex, anterior division",
    "Temporal Fusiform Cortex, posterior division",
    "Temporal Occipital Fusiform Cortex",
    "Occipital Fusiform Gyrus",
    "Frontal Operculum Cortex",
    "Central Opercular Cortex",
    "Parietal Operculum Cortex",
    "Planum Polare",
    "Heschl's Gyrus",
    "Planum Temporale",
    "Supracalcarine Cortex",
    "Occipital Pole",
};

// Keyword -> lobe, tried in this order; the first keyword found in the lower-cased name wins
// (so "parahippocamp" before "hippocamp" does not matter, but "parietal" before "occipital"
// makes the parieto-occipital sulcus parietal, and "occipital" before "fusiform" makes the
// occipital fusiform gyrus occipital).
constexpr std::pair<const char*, const char*> kLobeKeywords[] = {
    {"cerebel", "cerebellum"},      {"vermis", "cerebellum"},    {"caudate", "subcortical"},
    {"putamen", "subcortical"},     {"pallidum", "subcortical"}, {"thalamus", "subcortical"},
    {"accumbens", "subcortical"},   {"hippocamp", "limbic"},     {"amygdala", "limbic"},
    {"cingul", "limbic"},           {"insula", "limbic"},        {"olfactory", "limbic"},
    {"subcallosal", "limbic"},      {"parietal", "parietal"},    {"supramarginal", "parietal"},
    {"angular", "parietal"},        {"precune", "parietal"},     {"postcentral", "parietal"},
    {"paracentral", "parietal"},    {"temporal", "temporal"},    {"occipital", "occipital"},
    {"calcarine", "occipital"},     {"cuneus", "occipital"},     {"cuneal", "occipital"},
    {"lingual", "occipital"},       {"fusiform", "temporal"},    {"heschl", "temporal"},
    {"planum", "temporal"},         {"frontal", "frontal"},      {"precentral", "frontal"},
    {"rolandic", "frontal"},        {"rolando", "frontal"},      {"motor", "frontal"},
    {"rectus", "frontal"},          {"orbital", "frontal"},      {"opercul", "frontal"},
    {"juxtapositional", "frontal"}, {"central", "frontal"},      {"collateral", "temporal"},
};

const AtlasFiles& atlas_files(const std::string& key) {
  for (const AtlasFiles& atlas : kAtlases)
    if (key == atlas.key) return atlas;
  throw Error(
      fmt::format("'{}' is not a named atlas; the named atlases are {} (or give the path "
                  "of a label image)",
                  key, fmt::join(named_atlas_keys(), ", ")));
}

std::string file_in_atlas_dir(const char* name) {
  return (std::filesystem::path(atlas_dir()) / name).string();
}

std::string missing_atlas_message(const std::string& key, const std::string& path) {
  const char* variable = std::getenv("PELAB_ATLAS_DIR");
  if (variable != nullptr && *variable != '\0') {
    return fmt::format(
        "the atlas '{}' needs {}, which is missing; PELAB_ATLAS_DIR is set to '{}': "
        "unset it to read Debian's {} from {}, or put the file there",
        key, path, variable, kPackage, kDebianAtlasDir);
  }
  return fmt::format(
      "the atlas '{}' needs {}, which is missing: install Debian's package {} "
      "(sudo apt-get install {}, or `make deps`), or set PELAB_ATLAS_DIR to a "
      "folder that holds its files",
      key, path, kPackage, kPackage);
}

// "index name code" lines (mricron's .nii.txt), as label -> name.
std::vector<std::string> read_region_names(const std::string& path, std::int64_t labels) {
  std::ifstream in(path);
  PELAB_CHECK(in.is_open(), "{}: cannot open the atlas's region names", path);
  std::vector<std::string> names(static_cast<std::size_t>(labels));
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::istringstream fields(line);
    std::int64_t index = 0;
    std::string name;
    if (!(fields >> index)) continue;  // blank lines
    PELAB_CHECK(static_cast<bool>(fields >> name) && index >= 1 && index <= labels,
                "{}:{}: expected 'index name code' with an index in 1-{}, got '{}'", path,
                line_number, labels, line);
    names[static_cast<std::size_t>(index - 1)] = name;
  }
  for (std::size_t l = 0; l < names.size(); ++l)
    PELAB_CHECK(!names[l].empty(), "{}: no name for label {}", path, l + 1);
  return names;
}

std::int64_t largest_label(const Volume& labels) {
  float largest = 0.0f;
  for (float value : labels.data) {
    PELAB_CHECK(value >= 0.0f && value == std::round(value),
                "{}: holds the value {}, not an atlas label (a non-negative integer)", labels.path,
                value);
    largest = std::max(largest, value);
  }
  return static_cast<std::int64_t>(largest);
}

AtlasRegion region(std::int64_t label, const std::string& name) {
  AtlasRegion region;
  region.label = label;
  region.name = identifier(name);
  const std::size_t n = region.name.size();
  if (n > 2 && region.name[n - 2] == '_' &&
      (region.name[n - 1] == 'L' || region.name[n - 1] == 'R')) {
    region.hemisphere = region.name[n - 1];
    region.homologue = region.name.substr(0, n - 2);
  } else {
    region.homologue = region.name;
  }
  region.lobe = lobe_of(region.name);
  return region;
}

// Splits every label at the midline: label l becomes 2l-1 (x < 0) and 2l (x > 0).
void split_hemispheres(Volume& labels) {
  const Grid& grid = labels.grid;
  for (std::int64_t k = 0; k < grid.nz; ++k)
    for (std::int64_t j = 0; j < grid.ny; ++j)
      for (std::int64_t i = 0; i < grid.nx; ++i) {
        float& value = labels.data[static_cast<std::size_t>(grid.index(i, j, k))];
        if (value == 0.0f) continue;
        const double x =
            grid.world(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k))[0];
        value = x < 0.0 ? 2.0f * value - 1.0f : x > 0.0 ? 2.0f * value : 0.0f;
      }
}

// The inverse of an affine (its last row 0 0 0 1), or an error naming `what`.
Affine inverse(const Affine& a, const std::string& what) {
  const double m[3][3] = {{a[0], a[1], a[2]}, {a[4], a[5], a[6]}, {a[8], a[9], a[10]}};
  const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  PELAB_CHECK(std::abs(det) > 1e-12, "{}: its affine is singular (determinant {})", what, det);
  double r[3][3];
  r[0][0] = (m[1][1] * m[2][2] - m[1][2] * m[2][1]) / det;
  r[0][1] = (m[0][2] * m[2][1] - m[0][1] * m[2][2]) / det;
  r[0][2] = (m[0][1] * m[1][2] - m[0][2] * m[1][1]) / det;
  r[1][0] = (m[1][2] * m[2][0] - m[1][0] * m[2][2]) / det;
  r[1][1] = (m[0][0] * m[2][2] - m[0][2] * m[2][0]) / det;
  r[1][2] = (m[0][2] * m[1][0] - m[0][0] * m[1][2]) / det;
  r[2][0] = (m[1][0] * m[2][1] - m[1][1] * m[2][0]) / det;
  r[2][1] = (m[0][1] * m[2][0] - m[0][0] * m[2][1]) / det;
  r[2][2] = (m[0][0] * m[1][1] - m[0][1] * m[1][0]) / det;
  Affine out{};
  for (int row = 0; row < 3; ++row) {
    for (int col = 0; col < 3; ++col)
      out[4 * row + col] = r[row][col];
    out[4 * row + 3] = -(r[row][0] * a[3] + r[row][1] * a[7] + r[row][2] * a[11]);
  }
  out[15] = 1.0;
  return out;
}

}  // namespace

std::vector<std::string> named_atlas_keys() {
  std::vector<std::string> keys;
  for (const AtlasFiles& atlas : kAtlases)
    keys.emplace_back(atlas.key);
  return keys;
}

bool is_named_atlas(const std::string& text) {
  return std::any_of(kAtlases.begin(), kAtlases.end(),
                     [&](const AtlasFiles& atlas) { return text == atlas.key; });
}

std::string atlas_dir() {
  const char* variable = std::getenv("PELAB_ATLAS_DIR");
  return variable != nullptr && *variable != '\0' ? variable : kDebianAtlasDir;
}

std::string resolve_named_atlas(const std::string& key) {
  const AtlasFiles& atlas = atlas_files(key);
  const std::string path = file_in_atlas_dir(atlas.image);
  std::error_code ignored;
  PELAB_CHECK(std::filesystem::exists(path, ignored), "{}", missing_atlas_message(key, path));
  return path;
}

NamedAtlasImage read_named_atlas(const std::string& key) {
  const AtlasFiles& files = atlas_files(key);
  NamedAtlasImage atlas;
  atlas.key = key;
  atlas.labels = read_volume(resolve_named_atlas(key), Expect::k3D);
  const std::int64_t labels = largest_label(atlas.labels);

  std::vector<std::string> names;
  if (files.names == nullptr) {
    PELAB_CHECK(labels <= static_cast<std::int64_t>(kHarvardOxfordCortical.size()),
                "{}: has label {}, but the Harvard-Oxford cortical atlas has {} regions",
                atlas.labels.path, labels, kHarvardOxfordCortical.size());
    names.assign(kHarvardOxfordCortical.begin(), kHarvardOxfordCortical.begin() + labels);
  } else {
    const std::string path = file_in_atlas_dir(files.names);
    std::error_code ignored;
    PELAB_CHECK(std::filesystem::exists(path, ignored), "{}", missing_atlas_message(key, path));
    names = read_region_names(path, labels);
  }

  if (files.bilateral_labels) {
    split_hemispheres(atlas.labels);
    for (std::size_t l = 0; l < names.size(); ++l) {
      const auto label = static_cast<std::int64_t>(l + 1);
      atlas.regions.push_back(region(2 * label - 1, names[l] + "_L"));
      atlas.regions.push_back(region(2 * label, names[l] + "_R"));
    }
  } else {
    for (std::size_t l = 0; l < names.size(); ++l)
      atlas.regions.push_back(region(static_cast<std::int64_t>(l + 1), names[l]));
  }
  return atlas;
}

std::string lobe_of(const std::string& region_name) {
  std::string lower = region_name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& [keyword, lobe] : kLobeKeywords)
    if (lower.find(keyword) != std::string::npos) return lobe;
  return "other";
}

std::string identifier(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c)) {
      out += static_cast<char>(c);
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  return out;
}

Volume resample_labels(const Volume& labels, const Grid& target, const std::string& path) {
  PELAB_CHECK(labels.nt == 1, "{}: a 4D image ({}), expected a 3D label image", labels.path,
              labels.shape());
  const Affine to_source = inverse(labels.grid.affine, labels.path);
  inverse(target.affine, path);  // the target must be a grid too
  Volume out;
  out.path = path;
  out.grid = target;
  out.voxel_size_mm = {std::hypot(target.affine[0], target.affine[4], target.affine[8]),
                       std::hypot(target.affine[1], target.affine[5], target.affine[9]),
                       std::hypot(target.affine[2], target.affine[6], target.affine[10])};
  out.data.assign(static_cast<std::size_t>(target.voxels()), 0.0f);
  const Grid& source = labels.grid;
  const Grid to_source_grid{0, 0, 0, to_source};  // world -> source voxel indices
  for (std::int64_t k = 0; k < target.nz; ++k)
    for (std::int64_t j = 0; j < target.ny; ++j)
      for (std::int64_t i = 0; i < target.nx; ++i) {
        const std::array<double, 3> xyz =
            target.world(static_cast<double>(i), static_cast<double>(j), static_cast<double>(k));
        const std::array<double, 3> ijk = to_source_grid.world(xyz[0], xyz[1], xyz[2]);
        const auto si = static_cast<std::int64_t>(std::llround(ijk[0]));
        const auto sj = static_cast<std::int64_t>(std::llround(ijk[1]));
        const auto sk = static_cast<std::int64_t>(std::llround(ijk[2]));
        if (si < 0 || sj < 0 || sk < 0 || si >= source.nx || sj >= source.ny || sk >= source.nz)
          continue;
        out.data[static_cast<std::size_t>(target.index(i, j, k))] =
            labels.data[static_cast<std::size_t>(source.index(si, sj, sk))];
      }
  return out;
}

}  // namespace pelab::brain
