#pragma once

// What the rotary PEs that turn by positions share (rope_mixed, liere, string; header-only: each
// plugin is its own .so): the positions p_t they read, given by the task or learned, and the
// frequency ladder their axial starts use.
//
//   positions = "coordinates"  the task's layout (k = D; ground-truth-only ones with
//                              use_hidden_coordinates, an oracle);
//   positions = "index"        the token index t (k = 1);
//   positions = "learned"      a learnable N x position_dims table drawn by positions_init: the
//                              rotary counterpart of `learned`, where the paper's init question
//                              can be asked.

#include <cstdint>
#include <string>

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab::plugin_common {

inline bool learned_positions(const Params& params) {
  return params.string("positions") == "learned";
}

/// Declares positions, position_dims, positions_init and use_hidden_coordinates.
inline void declare_rotary_positions(ParamSchema& schema) {
  schema.choice("positions", "coordinates", {"coordinates", "index", "learned"},
                "What the rotation reads: the task's coordinates (k = D), the token index "
                "(k = 1), or a learnable N x position_dims table (the rotary counterpart of "
                "`learned`).");
  schema.integer("position_dims", 2, "positions = \"learned\": k, the dimension of each position.")
      .in_range(1, 16)
      .used_only_when("positions = \"learned\"", learned_positions);
  schema
      .plugin("positions_init", PluginKind::kInitializer, "normal",
              "positions = \"learned\": how the N x k position table is drawn, e.g. { plugin = "
              "\"normal\", std = 0.2 } for a small-norm start.")
      .used_only_when("positions = \"learned\"", learned_positions);
  schema
      .boolean("use_hidden_coordinates", false,
               "positions = \"coordinates\": accept coordinates the task marks as ground truth "
               "only (an oracle PE, e.g. the Latin square grid).")
      .used_only_when("positions = \"coordinates\"",
                      [](const Params& p) { return p.string("positions") == "coordinates"; });
}

/// k, the dimension of the positions the parameters ask for; refuses coordinates the layout lacks
/// or hides (without use_hidden_coordinates), naming the plugin and the key.
inline std::int64_t rotary_position_dims(const std::string& plugin, const Layout& layout,
                                         const Params& params) {
  const std::string& positions = params.string("positions");
  if (positions == "coordinates") {
    PELAB_CHECK(layout.has_coordinates(),
                "{}: positions = \"coordinates\", but the task's layout has none; use positions "
                "= \"index\" or \"learned\"",
                plugin);
    check_coordinates_visible(layout, params.boolean("use_hidden_coordinates"),
                              plugin + ": positions = \"coordinates\": ",
                              "`positions = \"learned\"` to learn the positions, or "
                              "`use_hidden_coordinates = true` for an oracle PE");
    return layout.dims();
  }
  return positions == "index" ? 1 : params.integer("position_dims");
}

/// "shared" or "block b": how a PE's initializer messages name it.
inline std::string block_name(const ModelShape& shape) {
  return shape.block < 0 ? std::string("shared") : fmt::format("block {}", shape.block);
}

/// Fills each head's slice of `tensor` ([heads, ...]) with `initializer`, named "pe.<name>
/// (<block>, head h)" in its messages, as a sweep of its scale expects.
inline void fill_per_head(const Initializer& initializer, torch::Tensor& tensor,
                          const std::string& name, const ModelShape& shape) {
  torch::NoGradGuard no_grad;
  for (std::int64_t h = 0; h < tensor.size(0); ++h) {
    torch::Tensor head = tensor[h];
    initializer.fill(head, InitContext::for_tensor(head, fmt::format("pe.{} ({}, head {})", name,
                                                                     block_name(shape), h)));
  }
}

/// The skew-symmetric b x b matrices U - U^T whose strict upper triangles U are the last
/// dimension of `upper` ([..., b(b-1)/2], row by row): LieRE's and STRING's parametrisation.
inline torch::Tensor skew_from_upper(const torch::Tensor& upper, std::int64_t b) {
  const torch::Tensor entry = torch::triu_indices(b, b, 1, upper.options().dtype(torch::kLong));
  auto sizes = upper.sizes().vec();
  sizes.back() = b * b;
  const torch::Tensor full = torch::zeros(sizes, upper.options())
                                 .index_add(-1, entry[0] * b + entry[1], upper)
                                 .unflatten(-1, {b, b});
  return full - full.transpose(-2, -1);
}

/// Registers the positions on `pe` as "positions" [N, k]: a buffer when the task gives them, a
/// parameter drawn by positions_init when learned.
inline torch::Tensor register_rotary_positions(torch::nn::Module& pe, const Layout& layout,
                                               const ModelShape& shape, const Params& params,
                                               Registry& registry) {
  torch::NoGradGuard no_grad;
  const std::string& positions = params.string("positions");
  if (positions == "coordinates")
    return pe.register_buffer("positions", layout.coordinates.to(torch::kFloat32));
  if (positions == "index")
    return pe.register_buffer("positions",
                              torch::arange(layout.tokens, torch::kFloat32).unsqueeze(1));
  torch::Tensor table = torch::empty({layout.tokens, params.integer("position_dims")});
  registry.create_initializer(params.plugin("positions_init"))
      ->fill(table,
             InitContext::for_tensor(table, fmt::format("pe.positions ({})", block_name(shape)),
                                     &layout, shape.block));
  return pe.register_parameter("positions", table);
}

/// [heads, pairs, k] frequencies, float64: pairs split into k groups of g = pairs / k, group a
/// along row a of each head's `basis` [heads, k, k], the i-th pair of a group of magnitude
/// base^(-i/g). With the identity basis this is rotary_nd's axial ladder.
inline torch::Tensor ladder_frequencies(const torch::Tensor& basis, std::int64_t pairs,
                                        double base) {
  const std::int64_t heads = basis.size(0), k = basis.size(1), group = pairs / k;
  const torch::Tensor magnitude = torch::pow(base, -torch::arange(group, torch::kFloat64) / group);
  const torch::Tensor directions = basis.unsqueeze(2).expand({heads, k, group, k});
  return (directions * magnitude.view({1, 1, group, 1})).reshape({heads, pairs, k});
}

// Heo et al.'s per-head random axes [heads, k, k] (rows the axes): for k = 2, timm's random angle
// theta (axes at theta and theta + pi/2); for other k, a uniformly random rotation (the QR of a
// Gaussian matrix, signs fixed by R's diagonal so that Q is uniform: Mezzadri 2007).
inline torch::Tensor random_axes(std::int64_t heads, std::int64_t k) {
  constexpr double kPi = 3.14159265358979323846;
  if (k == 2) {
    const torch::Tensor theta = torch::rand({heads}, torch::kFloat64) * 2.0 * kPi;
    const torch::Tensor first = torch::stack({theta.cos(), theta.sin()}, 1);
    const torch::Tensor second =
        torch::stack({(theta + kPi / 2).cos(), (theta + kPi / 2).sin()}, 1);
    return torch::stack({first, second}, 1);
  }
  const auto [q, r] = torch::linalg_qr(torch::randn({heads, k, k}, torch::kFloat64));
  return q * torch::sign(torch::diagonal(r, 0, -2, -1)).unsqueeze(-2);
}

/// Declares frequencies, base and frequencies_init: how RoPE-Mixed's [heads, head_dim/2, k]
/// frequency vectors start (rope_mixed, and string's RoPE part).
inline void declare_mixed_frequencies(ParamSchema& schema) {
  schema.choice("frequencies", "mixed", {"mixed", "axial", "init"},
                "How the [heads, head_dim/2, k] frequencies start: \"mixed\" (Heo et al.: random "
                "axes per head, a magnitude ladder), \"axial\" (rotary_nd's ladder), or \"init\" "
                "(drawn by frequencies_init).");
  schema
      .real("base", 100.0,
            "frequencies = \"mixed\" or \"axial\": the i-th of a group's g pairs has magnitude "
            "base^(-i/g) (Heo et al.'s RoPE-Mixed: 10 for ViT patches; rotary_nd's: 10000).")
      .at_least(1.0)
      .used_only_when("frequencies = \"mixed\" or \"axial\"",
                      [](const Params& p) { return p.string("frequencies") != "init"; });
  schema
      .plugin("frequencies_init", PluginKind::kInitializer, "normal",
              "frequencies = \"init\": how each head's head_dim/2 x k frequencies are drawn.")
      .used_only_when("frequencies = \"init\"",
                      [](const Params& p) { return p.string("frequencies") == "init"; });
}

/// Refuses a head_dim whose pairs the frequencies' ladder cannot split into k equal groups.
inline void check_mixed_frequencies(const std::string& plugin, const ModelShape& shape,
                                    const Params& params, std::int64_t k) {
  const std::int64_t head_dim = shape.d_model / shape.heads;
  PELAB_CHECK(
      head_dim % 2 == 0 && (params.string("frequencies") == "init" || (head_dim / 2) % k == 0),
      "{}: head_dim ({} = d_model {} / heads {}) must be even{}: change model.d_model or "
      "model.heads",
      plugin, head_dim, shape.d_model, shape.heads,
      params.string("frequencies") == "init"
          ? std::string()
          : fmt::format(", and its {} pairs a multiple of the {} position dimension(s) "
                        "(the frequencies' ladder gives each dimension as many pairs)",
                        head_dim / 2, k));
}

/// The [heads, head_dim/2, k] float32 frequencies the parameters ask for (to register as a
/// parameter).
inline torch::Tensor make_mixed_frequencies(const ModelShape& shape, const Params& params,
                                            Registry& registry, std::int64_t k) {
  torch::NoGradGuard no_grad;
  const std::int64_t pairs = shape.d_model / shape.heads / 2;
  const std::string& start = params.string("frequencies");
  if (start == "init") {
    torch::Tensor frequencies = torch::empty({shape.heads, pairs, k});
    fill_per_head(*registry.create_initializer(params.plugin("frequencies_init")), frequencies,
                  "frequencies", shape);
    return frequencies;
  }
  const torch::Tensor axes = start == "axial"
                                 ? torch::eye(k, torch::kFloat64).expand({shape.heads, k, k})
                                 : random_axes(shape.heads, k);
  return ladder_frequencies(axes, pairs, params.real("base")).to(torch::kFloat32);
}

}  // namespace pelab::plugin_common
