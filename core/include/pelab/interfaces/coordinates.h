#pragma once

// The guard every PE or initializer that reads the layout's coordinates needs: a task may give
// coordinates that are ground truth for probes only, hidden from the model (Layout::
// coordinates_visible). The built-in plugins use these, so a third party's refuses the same cases
// with the same parameter name and message.

#include <string>

#include "pelab/base/error.h"
#include "pelab/interfaces/layout.h"
#include "pelab/interfaces/params.h"

namespace pelab {

/// Refuses coordinates the task hides from the model unless the plugin was told to use them
/// (`use_hidden`); the message starts with `prefix` and ends with `remedy`.
inline void check_coordinates_visible(const Layout& layout, bool use_hidden,
                                      const std::string& prefix, const std::string& remedy) {
  PELAB_CHECK(layout.coordinates_visible || use_hidden,
              "{}the task's coordinates are ground truth for probes, hidden from the model; set {}",
              prefix, remedy);
}

/// A coordinate PE's guard: the layout has coordinates (else `without_coordinates` is the error),
/// and they are visible to the model or the PE's boolean parameter `use_hidden_coordinates` (which
/// the PE declares, default false) is set.
inline void check_pe_coordinates(const Layout& layout, const Params& params,
                                 const std::string& without_coordinates) {
  PELAB_CHECK(layout.has_coordinates(), "{}", without_coordinates);
  check_coordinates_visible(layout, params.boolean("use_hidden_coordinates"), "",
                            "`use_hidden_coordinates = true` to build an oracle PE from them");
}

}  // namespace pelab
