#pragma once

// Real atlases in MNI space, by name: the ones Debian's `mricron-data` installs under
// /usr/share/mricron/templates/ (AAL, Harvard-Oxford cortical, AICHA), each with its regions'
// names, hemispheres and a lobe, read once and usable as a label image (source = "nifti"), as the
// parcels of the synthetic cohort, or to give named parcels their centroids (a regions table).
//
// The atlases' licences are their authors' (docs/tasks/brain.md): AAL (Tzourio-Mazoyer et al.,
// 2002), Harvard-Oxford (FSL; Desikan et al., 2006; Makris et al., 2006), AICHA (Joliot et al.,
// 2015). pelab reads them where the package installed them and copies nothing.

#include <cstdint>
#include <string>
#include <vector>

#include "volume.h"

namespace pelab::brain {

/// One region of a named atlas.
struct AtlasRegion {
  std::int64_t label = 0;  // its value in `NamedAtlasImage::labels`
  /// A name without blanks or punctuation, unique in the atlas, ending in "_L" or "_R" when the
  /// region lies in one hemisphere: "Precentral_L", "Frontal_Pole_R", "Vermis_1_2".
  std::string name;
  char hemisphere = '\0';  // 'L', 'R', or '\0' for a midline region (AAL's vermis)
  std::string homologue;   // the name without its hemisphere suffix: equal for left and right
  std::string lobe;        // lobe_of(name)
};

/// An atlas's label image (its own grid, MNI mm) and its regions, in label order.
struct NamedAtlasImage {
  std::string key;  // "aal", "harvard_oxford", "aicha"
  Volume labels;    // 3D; 0 is background
  std::vector<AtlasRegion> regions;
};

/// The names `resolve_named_atlas` knows: "aal", "harvard_oxford", "aicha".
std::vector<std::string> named_atlas_keys();

/// Whether `text` is one of named_atlas_keys() (a path never is: it holds '/' or '.').
bool is_named_atlas(const std::string& text);

/// The folder the named atlases are read from: $PELAB_ATLAS_DIR when set, else
/// /usr/share/mricron/templates (Debian's mricron-data).
std::string atlas_dir();

/// The label image file of a named atlas. Throws pelab::Error naming the package and how to
/// install it when the file is missing, and listing the names when `key` is not one.
std::string resolve_named_atlas(const std::string& key);

/// Reads a named atlas with its regions. Atlases whose labels span both hemispheres
/// (Harvard-Oxford's maximum-probability map, AICHA's "mc" map) are split at the midline (world
/// x < 0 left, x > 0 right; voxels at x = 0 are left out), label 2l-1 the left part of label l and
/// 2l its right part, so that every region has a hemisphere; AAL's regions have theirs already.
NamedAtlasImage read_named_atlas(const std::string& key);

/// The lobe of a region from its name, by keywords (case-insensitive; the first that matches in
/// this order): cerebellum, subcortical, limbic, parietal, temporal, occipital, frontal; "other"
/// when none does. docs/tasks/brain.md lists the keywords.
std::string lobe_of(const std::string& region_name);

/// `name` as an identifier: each run of characters other than letters and digits becomes one
/// '_', with none at either end ("Heschl's Gyrus (includes H1 and H2)" ->
/// "Heschl_s_Gyrus_includes_H1_and_H2").
std::string identifier(const std::string& name);

/// The labels of `labels` on `target` by nearest neighbour: each target voxel takes the label of
/// the source voxel that holds its centre, 0 outside the source. Both affines must be invertible.
Volume resample_labels(const Volume& labels, const Grid& target, const std::string& path);

}  // namespace pelab::brain
