#include "report/phase_diagram.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "pelab/io/file_io.h"

namespace pelab::report {
namespace {

std::string value_of(const Point& point, const std::string& key) {
  for (const auto& [name, value] : point.varying) {
    if (name == key) return value;
  }
  return "-";
}

// Keys that say where a run trained, not what it computes (CPU and GPU runs agree to float
// rounding: docs/performance.md). They stay in the points' labels, but a sweep finished partly on
// a GPU is still one diagram rather than a slice per device.
bool is_placement(const std::string& key) {
  return key == "train.device";
}

// The point's values of the varying keys other than `axis`: which slice of a diagram it is in.
std::string slice_of(const Point& point, const std::string& axis) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : point.varying) {
    if (name != axis && !is_placement(name)) parts.push_back(name + "=" + value);
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "train.device=cpu, cuda" when the diagram's points trained on more than one device, else "".
std::string mixed_placements(const std::vector<const Point*>& points) {
  std::map<std::string, std::set<std::string>> values;
  for (const Point* point : points) {
    for (const auto& [name, value] : point->varying) {
      if (is_placement(name)) values[name].insert(value);
    }
  }
  std::vector<std::string> parts;
  for (const auto& [name, seen] : values) {
    if (seen.size() > 1) parts.push_back(fmt::format("{}={}", name, fmt::join(seen, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::string PhaseDiagram::title() const {
  std::string notes = slice;
  if (!mixed.empty())
    notes += (notes.empty() ? "cells trained on " : "; cells trained on ") + mixed;
  return fmt::format("{}: {} x {}{}", family, scale_key, axis,
                     notes.empty() ? "" : " (" + notes + ")");
}

std::vector<PhaseDiagram> phase_diagrams(const Experiment& experiment) {
  // The scaled points of each family (and scale key).
  std::map<std::pair<std::string, std::string>, std::vector<const Point*>> families;
  std::vector<std::pair<std::string, std::string>> family_order;
  for (const Point& point : experiment.points) {
    if (!point.init_scale) continue;
    const auto key = std::make_pair(point.family, point.scale_key);
    if (!families.count(key)) family_order.push_back(key);
    families[key].push_back(&point);
  }
  std::vector<PhaseDiagram> diagrams;
  for (const auto& key : family_order) {
    const std::vector<const Point*>& members = families[key];
    std::vector<std::string> axes;  // in the order the labels name them
    for (const Point* point : members) {
      for (const auto& [name, value] : point->varying) {
        if (std::find(axes.begin(), axes.end(), name) == axes.end()) axes.push_back(name);
      }
    }
    for (const std::string& axis : axes) {
      if (is_placement(axis)) continue;
      // Numeric in every point: an axis; else it only splits (it is a slice of another axis).
      bool numeric = true;
      std::map<std::string, std::vector<const Point*>> slices;
      std::vector<std::string> slice_order;
      for (const Point* point : members) {
        numeric = numeric && number_of(value_of(*point, axis)).has_value();
        const std::string slice = slice_of(*point, axis);
        if (!slices.count(slice)) slice_order.push_back(slice);
        slices[slice].push_back(point);
      }
      if (!numeric) continue;
      for (const std::string& slice : slice_order) {
        std::set<double> scales, values;
        for (const Point* point : slices[slice]) {
          scales.insert(*point->init_scale);
          values.insert(*number_of(value_of(*point, axis)));
        }
        if (scales.size() < 2 || values.size() < 2) continue;
        PhaseDiagram diagram;
        diagram.family = key.first;
        diagram.scale_key = key.second;
        diagram.axis = axis;
        diagram.slice = slice;
        diagram.mixed = mixed_placements(slices[slice]);
        diagram.scales.assign(scales.begin(), scales.end());
        diagram.values.assign(values.begin(), values.end());
        diagram.at.assign(diagram.values.size(),
                          std::vector<const Point*>(diagram.scales.size(), nullptr));
        for (const Point* point : slices[slice]) {
          const auto column =
              std::lower_bound(diagram.scales.begin(), diagram.scales.end(), *point->init_scale) -
              diagram.scales.begin();
          const auto row = std::lower_bound(diagram.values.begin(), diagram.values.end(),
                                            *number_of(value_of(*point, axis))) -
                           diagram.values.begin();
          diagram.at[row][column] = point;
        }
        diagrams.push_back(std::move(diagram));
      }
    }
  }
  return diagrams;
}

std::vector<std::vector<std::string>> phase_table(const PhaseDiagram& diagram,
                                                  const std::string& key, double factor,
                                                  const std::string& format,
                                                  std::vector<std::string>* header) {
  header->assign({fmt::format("{} \\ {}", diagram.axis, diagram.scale_key)});
  for (const double scale : diagram.scales)
    header->push_back(format_number(scale));
  std::vector<std::vector<std::string>> rows;
  for (std::size_t r = 0; r < diagram.values.size(); ++r) {
    std::vector<std::string> row = {format_number(diagram.values[r])};
    for (const Point* point : diagram.at[r]) {
      if (point == nullptr) {
        row.emplace_back("-");
        continue;
      }
      const auto it = point->stats.find(key);
      if (it == point->stats.end() || it->second.n == 0) {
        row.emplace_back("-");
        continue;
      }
      const Statistic& stat = it->second;
      const std::string mean = fmt::format(fmt::runtime(format), stat.mean * factor);
      // One seed has no standard error: the value alone, rather than a misleading "± 0".
      row.push_back(stat.n == 1 ? mean + " (1)"
                                : fmt::format("{} ± {} ({})", mean,
                                              fmt::format(fmt::runtime(format), stat.sem * factor),
                                              stat.n));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace pelab::report
