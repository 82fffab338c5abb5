#pragma once

// The phase diagram of a sweep over the init scale and another numeric axis (the learning rate,
// the width, the depth, ...): where the lazy (large scale) to rich (small scale) boundary sits as
// the other axis changes. A heatmap of a headline metric, mean ± SEM in each cell, and its table.

#include <string>
#include <vector>

#include "report/report.h"

namespace pelab::report {

/// One diagram: the points of one PE family over init scale x `axis`, the other varying keys held
/// at `slice` (e.g. train.optimizer=sgd when a sweep also varies the optimizer).
struct PhaseDiagram {
  std::string family;          // "learned, normal std"
  std::string scale_key;       // "pe.init.std"
  std::string axis;            // "train.lr"
  std::string slice;           // "train.optimizer=sgd", or "" when nothing else varies
  std::string mixed;           // "train.device=cpu, cuda" when its cells trained on several
  std::vector<double> scales;  // ascending
  std::vector<double> values;  // of the axis, ascending
  std::vector<std::vector<const Point*>> at;  // [value][scale], null where no point is

  /// "learned, normal std: pe.init.std x train.lr (train.optimizer=sgd)", naming the devices when
  /// its cells trained on several.
  std::string title() const;
};

/// Every phase diagram an experiment has: for each family with an init scale, each varying key
/// whose values are all numbers (two or more of them, over two or more scales), one diagram per
/// combination of the family's other varying keys.
std::vector<PhaseDiagram> phase_diagrams(const Experiment& experiment);

/// The diagram's table for one split and metric: a row per axis value, a column per scale, each
/// cell "mean ± SEM (n)" or "-".
std::vector<std::vector<std::string>> phase_table(const PhaseDiagram& diagram,
                                                  const std::string& key, double factor,
                                                  const std::string& format,
                                                  std::vector<std::string>* header);

/// The heatmap: a panel per split, the metric's mean as colour and "mean ± SEM" in each cell.
Figure phase_figure(const Experiment& experiment, const PhaseDiagram& diagram,
                    const MetricDisplay& metric, std::size_t index);

}  // namespace pelab::report
