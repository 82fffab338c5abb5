#pragma once

// A synthetic resting-state cohort written as NIfTI files, so that the brain experiment runs
// anywhere: a brain-shaped mask, an atlas of Voronoi parcels grouped into large-scale networks,
// the atlas's centroids and networks as CSV, and per subject a 4D BOLD image whose parcels follow
// the network simulation's dynamics through a haemodynamic response.
//
// How it is made (all deterministic by seed):
// - the mask is an ellipsoid filling most of the grid (semi-axes 0.42, 0.45, 0.40 of the grid's
//   sides); the affine is diagonal (voxel_mm) and puts the grid's centre at world (0, -18, 18)
//   mm, about where an MNI brain's centre is;
// - parcels: `parcels` seed voxels spread through the mask by best-candidate sampling, each mask
//   voxel labelled by its nearest seed (Voronoi parcels of similar sizes);
// - networks: 2 x `networks` pole parcels spread through the left hemisphere (x < 0) and paired at
//   random, so that a network has two poles, often far apart (like the default mode network's
//   frontal and parietal parts); every parcel joins the network of the pole nearest to its
//   position mirrored into the left hemisphere, so that networks are bilateral. Networks are
//   thus not single blobs: each is up to four regions, two per hemisphere;
// - the coupling follows the rule of the network model shared with the network_simulation task
//   (tasks/common/network.h) on the parcels' centroids (scaled into the unit cube) with the
//   networks as modules; each subject's coupling weights are that shared coupling times
//   exp(coupling_jitter * N(0, 1)), rows renormalised;
// - the parcels' activity is the network model's simulate (tasks/common/dynamics.h; default
//   dynamics, one time unit = 1 s, each subject its own noise and pulses) convolved with SPM's
//   canonical haemodynamic response and sampled every tr_seconds, then standardised per parcel;
// - a voxel's BOLD value is its baseline (baseline x (1 + 0.05 N(0, 1)), fixed per voxel) +
//   signal_scale x its parcel's signal + voxel_noise x N(0, 1) (new per voxel and volume); 0
//   outside the mask. Stored as int16 with scl_slope (as scanners write them).
//
// On a real atlas (`atlas` = "aal", "harvard_oxford" or "aicha", named_atlas.h) the brain is the
// atlas's: the grid covers the atlas's labelled voxels at voxel_mm (axes along x, y, z, MNI mm),
// the mask is the labelled voxels, the parcels are the atlas's regions resampled to that grid by
// nearest neighbour (regions with no voxel left are dropped and listed in `dropped`; the others
// are renumbered 1 .. in label order), their centroids the regions' MNI centroids on the atlas's
// own grid, their networks the regions' lobes (lobe_of), named; `parcels` and `networks` are
// not used. The coupling and the signals follow the same rules on those real positions.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pelab::brain {

struct SyntheticCohortOptions {
  std::int64_t subjects = 8;
  std::int64_t volumes = 150;
  std::int64_t parcels = 100;
  std::int64_t networks = 6;
  std::array<std::int64_t, 3> grid{40, 48, 40};
  double voxel_mm = 4.0;
  double tr_seconds = 2.0;
  double baseline = 1000.0;
  double signal_scale = 20.0;
  double voxel_noise = 10.0;
  /// The coupling (tasks::CouplingOptions; between_network_scale is its between_module_scale).
  double length_scale = 0.25;
  double between_network_scale = 0.2;
  double density = 0.25;
  /// Subjects' individual variation of the coupling weights (log-normal, this standard deviation).
  double coupling_jitter = 0.2;
  /// "" for the Voronoi atlas in an ellipsoid; else a named atlas whose regions are the parcels.
  std::string atlas;
  bool compress = true;  // .nii.gz, else .nii
  std::uint64_t seed = 0;
};

/// The files written, and the ground truth.
struct SyntheticCohort {
  std::string mask;               // 3D uint8, 1 inside the brain
  std::string atlas;              // 3D int16 labels 1 .. parcels, 0 outside the mask
  std::string centroids;          // CSV x,y,z,network (network-1 ...), one row per label in order
  std::vector<std::string> bold;  // sub-01_bold.nii.gz ...: 4D, `volumes` volumes, TR tr_seconds
  std::vector<std::int64_t> network;  // [parcels]: each parcel's network id (= the CSV's order)
  std::vector<std::string> dropped;   // a real atlas's regions too small for the grid
};

/// Writes the cohort into `folder` (created if needed; files of the same names are replaced,
/// each atomically): mask, atlas, centroids.csv and sub-NN_bold files. The same options (seed
/// included) give byte-identical files. Throws pelab::Error for options out of range, naming
/// the option.
SyntheticCohort write_synthetic_cohort(const std::string& folder,
                                       const SyntheticCohortOptions& options = {});

/// SPM's canonical haemodynamic response sampled every `dt` seconds over [0, length_seconds]:
/// a gamma density of shape 6 (response, peak near 5 s) minus one sixth of a gamma density of
/// shape 16 (undershoot), both of scale 1 s; normalised to sum 1.
std::vector<double> canonical_hrf(double dt, double length_seconds = 32.0);

}  // namespace pelab::brain
