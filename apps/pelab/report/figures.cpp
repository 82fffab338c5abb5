// The report's figures as gnuplot scripts with their data inline (datablocks), for pngcairo.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <torch/torch.h>

#include "pelab/interfaces/probe.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/run_folder.h"
#include "report.h"
#include "report/inference.h"
#include "report/phase_diagram.h"

namespace pelab::report {

namespace {

// How a panel's title says which way its scalar improves.
std::string direction_suffix(Better better) {
  return better == Better::kNeither ? "" : fmt::format(" ({} is better)", to_string(better));
}

// A gnuplot single-quoted string.
std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

// A title that may hold line breaks: double-quoted, where gnuplot reads \n as one (a
// single-quoted string keeps every character as it is).
std::string quote_lines(const std::string& text) {
  if (text.find('\n') == std::string::npos) return quote(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

std::string num(double value) {
  return std::isfinite(value) ? fmt::format("{:.8g}", value) : "NaN";
}

std::string preamble(const std::string& name, int width, int height) {
  return fmt::format(
      "# Drawn by `pelab report`; run `gnuplot {0}.gp` in this folder to redraw {0}.png.\n"
      "set encoding utf8\n"
      "set terminal pngcairo size {1},{2} font 'Sans,10' noenhanced\n"
      "set output '{0}.png'\n",
      name, width, height);
}

// Accumulates datablocks and plot commands.
class Script {
 public:
  // Starts a datablock; returns its name.
  std::string block(const std::string& content) {
    const std::string name = fmt::format("$d{}", ++blocks_);
    data_ += fmt::format("{} << EOD\n{}EOD\n", name, content);
    return name;
  }
  std::string& body() { return body_; }
  std::string text(const std::string& head) const { return head + data_ + body_; }

 private:
  int blocks_ = 0;
  std::string data_;
  std::string body_;
};

// One line of a panel: a metric (or its per-block variants) and how to title it.
struct Line {
  std::string key;
  std::string title;
};

std::string scale_axis_label(const Experiment& experiment) {
  std::set<std::string> keys;
  for (const auto& point : experiment.points) {
    if (point.init_scale) keys.insert(point.scale_key);
  }
  std::string label = "init scale";
  if (!keys.empty()) label += " (" + fmt::format("{}", fmt::join(keys, ", ")) + ")";
  return label;
}

bool any_scale(const Experiment& experiment) {
  for (const auto& point : experiment.points) {
    if (point.init_scale) return true;
  }
  return false;
}

// The range of the scales, and whether to draw them on a log axis: when they are positive and
// span a factor of 5 or more.
struct ScaleRange {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool log() const { return lo > 0 && hi / lo >= 5; }
  // Shifts line `i` of `lines` sideways a little, so that error bars at one scale do not overlap.
  double jitter(double x, std::size_t i, std::size_t lines) const {
    const double offset = 0.025 * (static_cast<double>(i) - (static_cast<double>(lines) - 1) / 2);
    if (log()) return x * std::exp(offset * std::log(hi / lo) / 2);
    return x + offset * (hi > lo ? hi - lo : 1.0);
  }
};

ScaleRange scale_range(const Experiment& experiment) {
  ScaleRange range;
  for (const auto& point : experiment.points) {
    if (!point.init_scale) continue;
    range.lo = std::min(range.lo, *point.init_scale);
    range.hi = std::max(range.hi, *point.init_scale);
  }
  return range;
}

// The values a panel draws (each mean with its interval), for a y axis that stops where the
// metric does.
struct ValueSpan {
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  void add(double low, double high) {
    if (std::isfinite(low)) lowest = std::min(lowest, low);
    if (std::isfinite(high)) highest = std::max(highest, high);
  }
  bool empty() const { return !(lowest <= highest); }
  // Autoscaled, unless a line was left off the axis: then the drawn values' span and a margin of
  // 8%, as gnuplot's offsets give the autoscaled panels (autoscaling would take the line back in).
  std::string range(bool fixed) const {
    if (!fixed || empty()) return "set yrange [*:*]\n";
    const double width = highest > lowest ? highest - lowest : std::max(std::abs(highest), 1.0);
    return fmt::format("set yrange [{}:{}]\n", num(lowest - 0.08 * width),
                       num(highest + 0.08 * width));
  }
  // A percentage never passes 100, nor drops below 0: the axis spans at least 2 points and keeps
  // gnuplot's margin of 8% inside those bounds, with just enough room above 100 for a marker
  // drawn at 100.
  std::string percent_range() const {
    if (!(lowest <= highest)) return "set yrange [*:*]\n";
    const double top = std::clamp(highest, 2.0, 100.0);
    const double bottom = std::max(std::min(lowest, top - 2.0), 0.0);
    const double margin = 0.08 * (top - bottom);
    return fmt::format("set yrange [{}:{}]\n", num(std::max(bottom - margin, 0.0)),
                       num(std::min(top + margin, 100.0 + margin / 4)));
  }
};

// The x axis for the scaled points (see ScaleRange).
std::string scale_axis(const Experiment& experiment) {
  const ScaleRange range = scale_range(experiment);
  const double lo = range.lo, hi = range.hi;
  std::string out =
      fmt::format("set xlabel {}\nset xtics norotate\n", quote(scale_axis_label(experiment)));
  std::set<double> scales;
  for (const auto& point : experiment.points) {
    if (point.init_scale) scales.insert(*point.init_scale);
  }
  if (scales.size() <= 12) {  // a tic at every scale of the sweep
    std::vector<std::string> tics;
    for (double scale : scales)
      tics.push_back(num(scale));
    out += fmt::format("set xtics ({})\n", fmt::join(tics, ", "));
  } else {
    out += "set xtics autofreq\n";
  }
  if (range.log()) {
    return out + fmt::format("set logscale x\nset xrange [{}:{}]\n", num(lo / 1.6), num(hi * 1.6));
  }
  const double pad = hi > lo ? 0.1 * (hi - lo) : std::max(0.1, 0.1 * std::abs(lo));
  return out + fmt::format("unset logscale x\nset xrange [{}:{}]\n", num(lo - pad), num(hi + pad));
}

// The plot clauses of a panel, and the values they draw (for the y range).
struct PanelPlots {
  std::vector<std::string> plots;
  ValueSpan span;
  std::string marks;  // gnuplot arrows for lines off the axis, set before the plot
  int off_scale = 0;
};

// A point's mean on `key` with the 95% percentile-bootstrap CI of the mean over its seeds (the
// report's inference, summarise_condition), times `factor`; nullopt where no seed has a value.
struct Interval {
  double mean = 0.0, low = 0.0, high = 0.0;
};
std::optional<Interval> interval_of(const Point& point, const std::string& key, double factor) {
  std::vector<double> values;
  for (const auto& run : point.runs) {
    const auto it = run.values.find(key);
    if (it != run.values.end() && std::isfinite(it->second)) values.push_back(it->second);
  }
  if (values.empty()) return std::nullopt;
  const ConditionSummary summary = summarise_condition(values);
  return Interval{factor * summary.mean, factor * summary.ci_low, factor * summary.ci_high};
}

// Each line of a panel gets its own colour and marker, so that series stay apart in greyscale
// and for readers who do not tell the colours apart.
std::string line_style(std::size_t index) {
  static const char* kColours[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e",
                                   "#e6ab02", "#a6761d", "#1f78b4", "#b2182b", "#4d4d4d"};
  static const int kMarkers[] = {7, 5, 9, 11, 13, 15, 4, 6, 8, 10, 12, 14};
  return fmt::format("lc rgb '{}' pt {}", kColours[index % std::size(kColours)],
                     kMarkers[index % std::size(kMarkers)]);
}

// The series that have an init scale, in the order of their first point.
std::vector<std::string> scaled_series(const Experiment& experiment) {
  std::vector<std::string> series;
  for (const auto& point : experiment.points) {
    if (point.init_scale && std::find(series.begin(), series.end(), point.series) == series.end())
      series.push_back(point.series);
  }
  return series;
}

// Each line's metric against init scale for every scaled series, with its 95% CI as bars.
void add_scaled_lines(Script& script, const Experiment& experiment, const std::vector<Line>& lines,
                      double factor, PanelPlots& out) {
  const std::vector<std::string> series = scaled_series(experiment);
  const ScaleRange range = scale_range(experiment);
  const std::size_t count = series.size() * lines.size();
  std::size_t index = 0;
  for (const auto& name : series) {
    for (const auto& line : lines) {
      std::string rows;
      for (const auto& point : experiment.points) {
        if (!point.init_scale || point.series != name) continue;
        const auto value = interval_of(point, line.key, factor);
        if (!value) continue;
        rows += fmt::format("{} {} {} {}\n", num(range.jitter(*point.init_scale, index, count)),
                            num(value->mean), num(value->low), num(value->high));
        out.span.add(value->low, value->high);
      }
      const std::string style = line_style(index);
      ++index;
      if (rows.empty()) continue;
      const std::string block = script.block(rows);
      const std::string line_title = lines.size() > 1 || series.size() > 1
                                         ? (line.title.empty() ? name : name + ": " + line.title)
                                         : name;
      out.plots.push_back(fmt::format("{} using 1:2:3:4 with yerrorlines lw 2 {} title {}", block,
                                      style, quote(line_title)));
    }
  }
}

// For every point without a scale, a dashed horizontal line with its mean and 95% CI in the
// title. A line far off the scaled curves (NoPE's error several times the learned PEs' spread)
// would squash them into a band: it is left off the axis, named in the key as off scale and
// marked by an arrow at the panel's edge, so the curves keep the axis.
void add_unscaled_lines(const Experiment& experiment, const std::vector<Line>& lines, double factor,
                        bool unscaled_first_line_only, PanelPlots& out) {
  const ValueSpan curves = out.span;  // the scaled lines' own span
  const double width = curves.highest - curves.lowest;
  int dash = 2;
  for (const auto& point : experiment.points) {
    if (point.init_scale) continue;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (unscaled_first_line_only && i > 0) break;
      const auto value = interval_of(point, lines[i].key, factor);
      if (!value) continue;
      const bool above = !curves.empty() && width > 0 && value->mean > curves.highest + 2 * width;
      const bool below = !curves.empty() && width > 0 && value->mean < curves.lowest - 2 * width;
      const std::string line_title =
          fmt::format("{}{} ({:.3g} [{:.3g}, {:.3g}]{})", point.label,
                      lines.size() > 1 && !lines[i].title.empty() ? ": " + lines[i].title : "",
                      value->mean, value->low, value->high,
                      above   ? ", off scale above"
                      : below ? ", off scale below"
                              : "");
      static const char* kColours[] = {"#222222", "#8c510a", "#01665e", "#762a83", "#777777"};
      const char* colour = kColours[(dash - 2) % 5];
      if (above || below) {
        // An arrow at the edge, at this line's own height in the stack of off-scale marks.
        const double x = 0.03 + 0.05 * static_cast<double>(out.off_scale);
        out.marks += fmt::format(
            "set arrow {} from graph {}, graph {} to graph {}, graph {} lw 2 lc rgb '{}' dt {}\n",
            100 + out.off_scale, num(x), above ? "0.86" : "0.14", num(x), above ? "0.99" : "0.01",
            colour, dash);
        ++out.off_scale;
      } else {
        out.span.add(value->mean, value->mean);
      }
      out.plots.push_back(fmt::format("{} with lines dt {} lw 2 lc rgb '{}' title {}",
                                      num(value->mean), dash, colour, quote(line_title)));
    }
    ++dash;
  }
}

// Without any scaled point: the points are categories on the x axis, each line's metric with
// its 95% CI as bars.
void add_categorical_lines(Script& script, const Experiment& experiment,
                           const std::vector<Line>& lines, double factor, PanelPlots& out) {
  // The points' labels are the tics: slanted, so that long labels side by side stay legible.
  std::string& body = script.body();
  body += "unset logscale x\nset xlabel ''\nset xtics rotate by 20 right\n";
  body += fmt::format("set xrange [-0.5:{}]\n", experiment.points.size() - 0.5);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string rows;
    for (std::size_t p = 0; p < experiment.points.size(); ++p) {
      const Point& point = experiment.points[p];
      const auto value = interval_of(point, lines[i].key, factor);
      if (!value) continue;
      rows += fmt::format("{} {} {} {} \"{}\"\n", p, num(value->mean), num(value->low),
                          num(value->high), point.label);
      out.span.add(value->low, value->high);
    }
    if (rows.empty()) continue;
    const std::string block = script.block(rows);
    out.plots.push_back(fmt::format(
        "{} using 1:2:3:4:xtic(5) with yerrorbars lw 2 {} title {}", block, line_style(i),
        quote(lines[i].title.empty() ? "mean, 95% CI" : lines[i].title)));
  }
}

// The splits on which some point reports `metric`: a figure's panels. Experiments of different
// tasks side by side share some splits and not others, and a panel without data is noise.
std::vector<std::string> splits_with(const Experiment& experiment, const std::string& metric) {
  std::vector<std::string> splits;
  for (const auto& split : experiment.splits) {
    if (!metric_groups(experiment, split, metric).empty()) splits.push_back(split);
  }
  return splits;
}

// An empty panel that gnuplot draws: `plot NaN` with autoscaled axes is an error ("all points y
// value undefined"), so the ranges are fixed for it and restored after.
const char* const kEmptyPanel =
    "set xrange [0:1]\nset yrange [0:1]\nset label 1 'no data' at graph 0.5,0.5 center\n"
    "plot 2 notitle\nunset label 1\nset autoscale x\nset autoscale y\n";

// One panel: each line's metric against init scale for every scaled series (95% CI bars), and
// for every point without a scale a dashed horizontal line (its CI in the title). Without any
// scaled point, the points are categories on the x axis.
void scale_panel(Script& script, const Experiment& experiment, const std::vector<Line>& lines,
                 const std::string& title, const std::string& ylabel, double factor,
                 bool unscaled_first_line_only) {
  std::string& body = script.body();
  body += fmt::format("set title {}\nset ylabel {}\n", quote_lines(title), quote(ylabel));
  PanelPlots out;
  if (any_scale(experiment)) {
    body += scale_axis(experiment);
    add_scaled_lines(script, experiment, lines, factor, out);
    add_unscaled_lines(experiment, lines, factor, unscaled_first_line_only, out);
  } else {
    add_categorical_lines(script, experiment, lines, factor, out);
  }
  body += factor == 100.0 ? out.span.percent_range() : out.span.range(out.off_scale > 0);
  if (out.plots.empty()) {
    body += kEmptyPanel;
  } else {
    body += out.marks;
    body += "plot " + fmt::format("{}", fmt::join(out.plots, ", \\\n     ")) + "\n";
    if (out.off_scale > 0) body += "unset arrow\n";
  }
}

// The metric against the init scale, a panel per split. By series: one line per PE family
// (group "all"), as the paper draws it. By group: a line per series and condition (a task's
// groups, e.g. the Latin Square's binary, ternary and quaternary puzzles).
enum class Lines { kBySeries, kByGroup };

Figure metric_figure(const Experiment& experiment, const MetricDisplay& metric, Lines by) {
  Script script;
  const std::vector<std::string> splits = splits_with(experiment, metric.metric);
  const std::size_t panels = std::max<std::size_t>(1, splits.size());
  const std::string unit = metric.factor == 100.0 ? " (%)" : "";
  const std::string what = metric.metric == "accuracy" ? "accuracy" : metric.title;
  script.body() += fmt::format(
      "set multiplot layout 1,{} title {}\nset grid\nset key below\n"
      "set offsets graph 0, graph 0, graph 0.08, graph 0.08\n",
      panels,
      quote(fmt::format("{}: final {}{}, mean and 95% CI over seeds", experiment.name, what,
                        by == Lines::kByGroup ? " per group" : "")));
  for (const auto& split : splits) {
    std::vector<Line> lines;
    for (const auto& group : metric_groups(experiment, split, metric.metric)) {
      if (by == Lines::kBySeries && group != "all") continue;
      lines.push_back({fmt::format("{}/{}/{}", split, group, metric.metric),
                       by == Lines::kByGroup ? group : ""});
    }
    scale_panel(script, experiment, lines, split, metric.metric + unit, metric.factor, true);
  }
  script.body() += "unset multiplot\n";
  const std::string name = metric.metric + (by == Lines::kByGroup ? "-groups" : "");
  const std::string caption =
      by == Lines::kBySeries
          ? fmt::format(
                "Final {} per split against the init scale, one line per series (PE "
                "and initializer); the mean over seeds with its 95% bootstrap CI (lines "
                "shifted slightly sideways so that their bars do not overlap). Dashed: points "
                "without an init scale (one far off the curves is marked by an arrow at the "
                "edge and named off scale in the key).",
                what)
          : fmt::format(
                "Final {} per split and condition (group) against the init scale; the mean "
                "over seeds with its 95% bootstrap CI (lines shifted slightly sideways). "
                "Dashed: points without an init scale (group 'all').",
                what);
  return {name, caption, script.text(preamble(name, 520 * static_cast<int>(panels), 600))};
}

// Whether a split reports `metric` for some group beyond "all".
bool has_groups(const Experiment& experiment, const std::string& metric) {
  for (const auto& split : experiment.splits) {
    if (metric_groups(experiment, split, metric).size() > 1) return true;
  }
  return false;
}

std::optional<Figure> probes_figure(const Experiment& experiment) {
  const auto probes = probes_of(experiment);
  if (probes.empty()) return std::nullopt;
  std::vector<std::string> order;
  for (const auto& [probe, scalars] : probes)
    order.push_back(probe);
  const std::size_t columns = std::min<std::size_t>(3, order.size());
  const std::size_t rows = (order.size() + columns - 1) / columns;
  Script script;
  script.body() += fmt::format(
      "set multiplot layout {},{} title {}\nset grid\nset key below\n"
      "set offsets graph 0, graph 0, graph 0.08, graph 0.08\n",
      rows, columns,
      quote(experiment.name + ": probes of the final PE, mean and 95% CI over seeds"));
  for (const auto& [probe, scalars] : probes) {
    const Headline headline = headlines_of(experiment, probe, scalars).front();
    const std::string& scalar = headline.scalar;
    std::vector<Line> lines = {{fmt::format("probe/{}/{}", probe, scalar), "mean"}};
    for (int block = 0; scalars.count(per_block_scalar(scalar, block)); ++block) {
      lines.push_back({fmt::format("probe/{}/{}", probe, per_block_scalar(scalar, block)),
                       fmt::format("block {}", block)});
    }
    if (lines.size() == 2) lines.pop_back();  // one block: its value is the mean
    // The settings that tell two probes of a plugin apart on a line of their own: on one, a
    // panel's title outgrows it.
    std::string title = fmt::format("{}: {}{}", probe, scalar, direction_suffix(headline.better));
    if (const auto settings = experiment.probe_settings.find(probe);
        settings != experiment.probe_settings.end())
      title += fmt::format("\n({})", settings->second);
    scale_panel(script, experiment, lines, title, scalar, 1.0, true);
  }
  script.body() += "unset multiplot\n";
  return Figure{"probes",
                "Each probe's headline scalar of the final PE against the init scale (the report's "
                "probe table says what each means; ↑ higher is better, ↓ lower), mean over blocks "
                "and per block; the mean over seeds with its 95% bootstrap CI (lines shifted "
                "slightly sideways).",
                script.text(preamble("probes", 520 * static_cast<int>(columns),
                                     500 * static_cast<int>(rows) + 40))};
}

// The final PE tables of a run ([pes, N, d] float64), or undefined.
torch::Tensor final_tables(const std::string& run_dir) {
  const torch::Tensor tables = RunFolder(run_dir).read_final_tables();
  return tables.defined() ? tables.to(torch::kFloat64) : tables;
}

// A rotary PE's final learned position table ([pes, N, k] float64: the parameter "positions",
// else "angles" flattened per token), or undefined.
torch::Tensor final_positions(const std::string& run_dir) {
  const RunFolder folder(run_dir);
  for (const char* name : {"positions", "angles"}) {
    const torch::Tensor values = folder.read_final_parameter(name);
    if (values.defined() && values.dim() >= 3)
      return values.reshape({values.size(0), values.size(1), -1}).to(torch::kFloat64);
  }
  return {};
}

torch::Tensor cosine(const torch::Tensor& table) {
  const torch::Tensor unit = table / table.norm(2, {1}, true).clamp_min(1e-300);
  return unit.matmul(unit.t());
}

// The rows of a similarity matrix, its diagonal (1, always) as NaN so that the colour scale
// shows the off-diagonal values.
std::string matrix_rows(const torch::Tensor& matrix) {
  std::string out;
  const torch::Tensor m = matrix.contiguous();
  for (std::int64_t i = 0; i < m.size(0); ++i) {
    for (std::int64_t j = 0; j < m.size(1); ++j)
      out += (j ? " " : "") + (i == j ? std::string("NaN") : num(m[i][j].item<double>()));
    out += "\n";
  }
  return out;
}

constexpr std::int64_t kMaxHeatmapTokens = 256;

// The order tokens are drawn in: by community (then by their first coordinate, then by index)
// when the task declares communities, else by index; with the positions where a community ends.
struct TokenOrder {
  torch::Tensor order;  // [N] int64
  std::vector<std::int64_t> boundaries;
  std::string by;  // "community", or "" for index order
};

TokenOrder token_order(const Geometry& geometry, std::int64_t n) {
  TokenOrder out;
  out.order = torch::arange(n, torch::kInt64);
  if (!geometry.communities.defined() || geometry.communities.size(0) != n) return out;
  const bool positions = geometry.coordinates.defined() && geometry.coordinates.size(0) == n;
  std::vector<std::int64_t> tokens(static_cast<std::size_t>(n));
  std::iota(tokens.begin(), tokens.end(), 0);
  const auto community = [&](std::int64_t t) {
    return geometry.communities[t].item<std::int64_t>();
  };
  const auto position = [&](std::int64_t t) {
    return positions ? geometry.coordinates[t][0].item<double>() : 0.0;
  };
  std::stable_sort(tokens.begin(), tokens.end(), [&](std::int64_t a, std::int64_t b) {
    if (community(a) != community(b)) return community(a) < community(b);
    return position(a) < position(b);
  });
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    if (community(tokens[i]) != community(tokens[i - 1]))
      out.boundaries.push_back(static_cast<std::int64_t>(i));
  }
  out.order = torch::tensor(tokens, torch::kInt64);
  out.by = "community";
  return out;
}

std::optional<Figure> similarity_figure(const Experiment& experiment, std::size_t index,
                                        const Geometry& geometry) {
  const Point& point = experiment.points[index];
  torch::Tensor sum;
  std::size_t runs = 0;
  for (const auto& run : point.runs) {
    const torch::Tensor tables = final_tables(run.dir);
    if (!tables.defined()) continue;
    std::vector<torch::Tensor> similarities;
    for (std::int64_t b = 0; b < tables.size(0); ++b)
      similarities.push_back(cosine(tables[b]));
    const torch::Tensor stacked = torch::stack(similarities);
    if (sum.defined() && sum.sizes() != stacked.sizes()) continue;
    sum = sum.defined() ? sum + stacked : stacked;
    ++runs;
  }
  if (runs == 0 || sum.size(1) > kMaxHeatmapTokens) return std::nullopt;
  const std::int64_t n = sum.size(1);
  const bool truth = geometry.coordinates.defined() && geometry.coordinates.size(0) == n;
  // Tokens by community, then by position: interleaved modules look like noise in index order.
  const TokenOrder order = token_order(geometry, n);
  const torch::Tensor mean =
      (sum / static_cast<double>(runs)).index_select(1, order.order).index_select(2, order.order);
  const std::int64_t panels = mean.size(0) + (truth ? 1 : 0);
  const std::string name = fmt::format("similarity-{}", index + 1);
  Script script;
  std::string& body = script.body();
  body += fmt::format(
      "set multiplot layout 1,{} title {}\n"
      "set size ratio -1\nset palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', "
      "0.75 '#5ec962', 1 '#fde725')\n"
      "set cbrange [*:*]\nset xrange [-0.5:{}]\nset yrange [{}:-0.5]\nset xlabel 'token'\n"
      "set ylabel 'token'\nset tics out\n",
      panels,
      quote(fmt::format("{}: PE similarity (mean over {} seed{})", point.label, runs,
                        runs == 1 ? "" : "s")),
      num(n - 0.5), num(n - 0.5));
  if (!order.boundaries.empty()) {
    body +=
        fmt::format("set xlabel 'token, by {}'\nset ylabel 'token, by {}'\n", order.by, order.by);
  }
  // The communities' boundaries, over every panel.
  for (const std::int64_t boundary : order.boundaries) {
    const std::string at = num(static_cast<double>(boundary) - 0.5);
    body += fmt::format(
        "set arrow from {0},-0.5 to {0},{1} nohead front lc rgb 'white' lw 1.5\n"
        "set arrow from -0.5,{0} to {1},{0} nohead front lc rgb 'white' lw 1.5\n",
        at, num(n - 0.5));
  }
  if (truth) {
    const torch::Tensor coordinates = geometry.coordinates.index_select(0, order.order);
    const torch::Tensor d = torch::cdist(coordinates, coordinates);
    const double max = d.max().item<double>();
    const torch::Tensor similarity = max > 0 ? 1.0 - d / max : torch::ones_like(d);
    const std::string block = script.block(matrix_rows(similarity));
    body += fmt::format(
        "set title 'ground truth: 1 - distance / max'\nplot {} matrix with image notitle\n", block);
  }
  for (std::int64_t b = 0; b < mean.size(0); ++b) {
    const std::string block = script.block(matrix_rows(mean[b]));
    body += fmt::format(
        "set title 'block {}: cosine similarity of PE rows'\nplot {} matrix with image notitle\n",
        b, block);
  }
  body += "unset multiplot\n";
  return Figure{
      name,
      fmt::format("{}: cosine similarity between the learned PE's token rows, per block, "
                  "mean over {} seed(s), beside the ground truth's similarity (each panel "
                  "with its own colour scale, the diagonal left blank); {}.",
                  point.label, runs,
                  order.by.empty()
                      ? "tokens in the task's order (row-major on a grid)"
                      : "tokens ordered by community (the task's modules or networks), then by "
                        "their first coordinate, the communities' boundaries drawn in white"),
      script.text(preamble(name, 430 * static_cast<int>(panels), 450))};
}

// A token's colour in the embeddings: its community where the task declares them, else its first
// coordinate.
double token_colour(const Geometry& geometry, std::int64_t token) {
  if (geometry.communities.defined() && token < geometry.communities.size(0))
    return static_cast<double>(geometry.communities[token].item<std::int64_t>());
  return geometry.coordinates[token][0].item<double>();
}

// The learned PE's rows aligned onto the true coordinates by orthogonal Procrustes (a rotation or
// reflection and one scale: what RSA and the Procrustes probe are invariant to), beside the true
// layout: x and y of both (the first two axes of a 3D layout), coloured by community, the
// relative alignment error ||s P Q - X|| / ||X|| in each title. Tokens are labelled only when
// there are few of them.
// With `linear` (learned positions of a rotary PE, identifiable only up to a linear map), the map
// is any linear one fitted by least squares instead of a rotation and a scale.
Figure aligned_figure(const Point& point, const RunRecord& run, const torch::Tensor& tables,
                      const Geometry& geometry, std::size_t index, bool linear = false) {
  const std::int64_t n = tables.size(1);
  const torch::Tensor truth = geometry.coordinates - geometry.coordinates.mean(0, true);
  const std::string name = fmt::format("embedding-{}", index + 1);
  const bool labels = n <= 16;
  Script script;
  std::string& body = script.body();
  const auto axis = [&](std::size_t k) {
    return k < geometry.axis_names.size() ? geometry.axis_names[k] : fmt::format("axis {}", k);
  };
  body += fmt::format(
      "set multiplot layout 1,{} title {}\nset size ratio -1\nset grid\nunset colorbox\n"
      "set palette defined (0 '#1b9e77', 1 '#d95f02', 2 '#7570b3', 3 '#e7298a', 4 '#66a61e', "
      "5 '#e6ab02')\nset xlabel {}\nset ylabel {}\n",
      tables.size(0) + 1,
      quote(linear ? fmt::format("{}, seed {}: the final learned positions mapped linearly onto "
                                 "the true layout (least squares)",
                                 point.label, run.seed)
                   : fmt::format("{}, seed {}: the final PE aligned onto the true layout "
                                 "(orthogonal Procrustes)",
                                 point.label, run.seed)),
      quote(axis(0)), quote(axis(1)));
  const auto panel = [&](const torch::Tensor& xy, const std::string& title) {
    std::string points;
    for (std::int64_t i = 0; i < n; ++i) {
      points += fmt::format("{} {} {} \"{}\"\n", num(xy[i][0].item<double>()),
                            num(xy[i][1].item<double>()), num(token_colour(geometry, i)), i);
    }
    const std::string block = script.block(points);
    std::string plot =
        fmt::format("{} using 1:2:3 with points pt 7 ps 1.4 lc palette notitle", block);
    if (labels)
      plot +=
          fmt::format(", {} using 1:2:4 with labels offset char 0.8,0.6 font ',8' notitle", block);
    body += fmt::format("set title {}\nplot {}\n", quote(title), plot);
  };
  panel(truth, "true layout");
  for (std::int64_t b = 0; b < tables.size(0); ++b) {
    const torch::Tensor pe = tables[b] - tables[b].mean(0, true);  // [N, d]
    torch::Tensor aligned;
    if (linear) {
      // X ~ P W: the least-squares W through the pseudo-inverse (P may be rank-deficient).
      aligned = pe.matmul(torch::linalg_pinv(pe).matmul(truth));
    } else {
      const auto svd =
          torch::linalg_svd(pe.t().matmul(truth), /*full_matrices=*/false);      // P^T X = U S V^T
      const torch::Tensor rotation = std::get<0>(svd).matmul(std::get<2>(svd));  // [d, D]
      const double norm = pe.pow(2).sum().item<double>();
      const double scale = norm > 0 ? std::get<1>(svd).sum().item<double>() / norm : 0.0;
      aligned = pe.matmul(rotation) * scale;
    }
    const double error =
        (aligned - truth).norm().item<double>() / std::max(1e-300, truth.norm().item<double>());
    panel(aligned, fmt::format("block {}: alignment error {:.2f}", b, error));
  }
  body += "unset multiplot\n";
  return Figure{
      name,
      fmt::format("{}, seed {}: each block's {} beside the true layout{}; coloured by {}; the "
                  "title gives the relative alignment error ||P A - X|| / ||X|| (0: the PE is "
                  "the layout; about 1: no likeness).",
                  point.label, run.seed,
                  linear ? "final learned positions (a rotary PE's parameter) mapped onto the "
                           "true coordinates by the least-squares linear map A (they are "
                           "identifiable only up to a linear map: docs/probes.md)"
                         : "final PE aligned onto the true coordinates by orthogonal Procrustes "
                           "(A a rotation or reflection and a scale)",
                  geometry.coordinates.size(1) > 2 ? " (x and y of the 3D layout)" : "",
                  geometry.communities.defined() ? "community" : "the first coordinate"),
      script.text(preamble(name, 420 * static_cast<int>(tables.size(0) + 1), 460))};
}

// True neighbours: token pairs at the smallest nonzero distance (a grid's edges).
std::vector<std::pair<std::int64_t, std::int64_t>> true_neighbours(
    const torch::Tensor& coordinates) {
  std::vector<std::pair<std::int64_t, std::int64_t>> edges;
  const std::int64_t n = coordinates.size(0);
  const torch::Tensor d = torch::cdist(coordinates, coordinates);
  const torch::Tensor positive = d.masked_fill(d <= 1e-12, std::numeric_limits<double>::infinity());
  const double nearest = positive.min().item<double>();
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = i + 1; j < n; ++j) {
      if (std::abs(d[i][j].item<double>() - nearest) <= 1e-9 * std::max(1.0, nearest))
        edges.emplace_back(i, j);
    }
  }
  return edges;
}

// A block's PE projected on its first two principal components.
struct Projection {
  torch::Tensor xy;        // [N, 2]
  double explained = 0.0;  // the fraction of the variance the two components hold
};

Projection project_on_two_pcs(const torch::Tensor& table) {
  const torch::Tensor centred = table - table.mean(0, true);
  const auto svd = torch::linalg_svd(centred, /*full_matrices=*/false);
  Projection projection;
  projection.xy = centred.matmul(std::get<2>(svd).slice(0, 0, 2).t());  // [N, 2]
  const torch::Tensor s2 = std::get<1>(svd).pow(2);
  const double total = s2.sum().item<double>();
  projection.explained = total > 0 ? s2.slice(0, 0, 2).sum().item<double>() / total : 0.0;
  return projection;
}

// Orient each PC so that it correlates positively with the coordinate it best follows.
void orient_to_coordinates(torch::Tensor& xy, const torch::Tensor& coordinates) {
  for (int k = 0; k < 2; ++k) {
    const torch::Tensor pc = xy.select(1, k);
    double best = 0.0;
    for (std::int64_t axis = 0; axis < coordinates.size(1); ++axis) {
      const torch::Tensor c = coordinates.select(1, axis);
      const double r = ((pc - pc.mean()) * (c - c.mean())).sum().item<double>();
      if (std::abs(r) > std::abs(best)) best = r;
    }
    if (best < 0) xy.select(1, k).mul_(-1.0);
  }
}

// The datablock of the projected tokens: x, y, colour (the first true coordinate) and label
// (the true coordinates, or the token's index without a ground truth).
std::string projected_points(const torch::Tensor& xy, const Geometry& geometry, bool truth) {
  std::string points;
  for (std::int64_t i = 0; i < xy.size(0); ++i) {
    std::string label = std::to_string(i);
    double colour = 0.0;
    if (truth) {
      label.clear();
      for (std::int64_t axis = 0; axis < geometry.coordinates.size(1); ++axis) {
        label +=
            (axis ? "," : "") + fmt::format("{:g}", geometry.coordinates[i][axis].item<double>());
      }
      colour = geometry.coordinates[i][0].item<double>();
    }
    points += fmt::format("{} {} {} \"{}\"\n", num(xy[i][0].item<double>()),
                          num(xy[i][1].item<double>()), num(colour), label);
  }
  return points;
}

// The panel of block `b`: its tokens on the first two PCs, true neighbours joined.
void pca_panel(Script& script, const torch::Tensor& table, std::int64_t b, const Geometry& geometry,
               bool truth, const std::vector<std::pair<std::int64_t, std::int64_t>>& edges) {
  Projection projection = project_on_two_pcs(table);
  torch::Tensor& xy = projection.xy;
  if (truth) orient_to_coordinates(xy, geometry.coordinates);
  const std::string point_block = script.block(projected_points(xy, geometry, truth));
  std::vector<std::string> plots;
  if (!edges.empty()) {
    std::string lines;
    for (const auto& [i, j] : edges) {
      lines += fmt::format("{} {}\n{} {}\n\n", num(xy[i][0].item<double>()),
                           num(xy[i][1].item<double>()), num(xy[j][0].item<double>()),
                           num(xy[j][1].item<double>()));
    }
    plots.push_back(
        fmt::format("{} with lines lc rgb '#999999' lw 1.5 notitle", script.block(lines)));
  }
  plots.push_back(
      fmt::format("{} using 1:2:3 with points pt 7 ps 1.6 lc palette notitle", point_block));
  if (xy.size(0) <= 64) {
    plots.push_back(fmt::format("{} using 1:2:4 with labels offset char 0.9,0.7 font ',8' notitle",
                                point_block));
  }
  script.body() +=
      fmt::format("set title 'block {} ({:.0f}% of the variance)'\nplot {}\n", b,
                  100.0 * projection.explained, fmt::format("{}", fmt::join(plots, ", ")));
}

std::optional<Figure> pca_figure(const Experiment& experiment, std::size_t index,
                                 const Geometry& geometry) {
  const Point& point = experiment.points[index];
  if (point.runs.empty()) return std::nullopt;
  const RunRecord& run = point.runs.front();
  const torch::Tensor tables = final_tables(run.dir);
  if (!tables.defined()) {
    // A rotary PE has no table; its learned positions, where it has them, are drawn instead.
    const torch::Tensor positions = final_positions(run.dir);
    if (positions.defined() && geometry.coordinates.defined() &&
        geometry.coordinates.size(0) == positions.size(1) && geometry.coordinates.size(1) >= 2)
      return aligned_figure(point, run, positions, geometry, index, /*linear=*/true);
    return std::nullopt;
  }
  if (tables.size(1) < 3) return std::nullopt;
  const std::int64_t n = tables.size(1);
  const bool truth = geometry.coordinates.defined() && geometry.coordinates.size(0) == n;
  // With a layout of two or more axes, the PE aligned onto it says more than its own PCA.
  if (truth && geometry.coordinates.size(1) >= 2 && tables.size(2) >= geometry.coordinates.size(1))
    return aligned_figure(point, run, tables.to(torch::kFloat64), geometry, index);
  const std::string name = fmt::format("pca-{}", index + 1);

  std::vector<std::pair<std::int64_t, std::int64_t>> edges;
  if (truth) edges = true_neighbours(geometry.coordinates);
  Script script;
  std::string& body = script.body();
  body += fmt::format(
      "set multiplot layout 1,{} title {}\nset size ratio -1\nset grid\nunset colorbox\n"
      "set palette defined (0 '#1b9e77', 1 '#d95f02', 2 '#7570b3', 3 '#e7298a')\n"
      "set xlabel 'PC 1'\nset ylabel 'PC 2'\n",
      tables.size(0),
      quote(fmt::format("{}, seed {}: 2D PCA of the final PE, true neighbours joined", point.label,
                        run.seed)));
  for (std::int64_t b = 0; b < tables.size(0); ++b)
    pca_panel(script, tables[b], b, geometry, truth, edges);
  body += "unset multiplot\n";
  return Figure{name,
                fmt::format("{}, seed {}: each block's final PE projected on its first two "
                            "principal components; points coloured by their first coordinate "
                            "and labelled with their true coordinates, true nearest neighbours "
                            "joined (a PE that mirrors the grid draws a lattice).",
                            point.label, run.seed),
                script.text(preamble(name, 480 * static_cast<int>(tables.size(0)), 500))};
}

// Mean over a point's runs of each (split, epoch) -> value of `metric`, group "all", and of the
// training loss per epoch ("train loss").
std::map<std::string, std::map<std::int64_t, double>> mean_curves(const Point& point,
                                                                  const std::string& metric) {
  std::map<std::string, std::map<std::int64_t, std::vector<double>>> values;
  for (const auto& run : point.runs) {
    for (const MetricRow& row : RunFolder(run.dir).read_metrics()) {
      if (row.group != "all") continue;
      const bool loss = row.split == "train_epoch" && row.metric == "loss";
      if (!loss && row.metric != metric) continue;
      values[loss ? "train loss" : row.split][row.epoch].push_back(row.value);
    }
  }
  std::map<std::string, std::map<std::int64_t, double>> out;
  for (const auto& [curve, epochs] : values) {
    for (const auto& [epoch, list] : epochs)
      out[curve][epoch] = summarise(list).mean;
  }
  return out;
}

Figure curves_figure(const Experiment& experiment) {
  const MetricDisplay metric = headline_metrics(experiment).front();
  std::vector<std::map<std::string, std::map<std::int64_t, double>>> curves;
  for (const auto& point : experiment.points)
    curves.push_back(mean_curves(point, metric.metric));
  std::vector<std::string> panels = {"train loss"};
  for (const auto& split : splits_with(experiment, metric.metric))
    panels.push_back(split);
  Script script;
  std::string& body = script.body();
  body += fmt::format(
      "set multiplot layout 1,{} title {}\nset grid\nset key below\n"
      "set xlabel 'epoch'\nunset logscale x\nset autoscale x\n",
      panels.size(), quote(experiment.name + ": training curves, mean over seeds"));
  for (const auto& panel : panels) {
    const bool loss = panel == "train loss";
    body += fmt::format("set title {}\nset ylabel {}\n{}\n", quote(panel),
                        quote(loss ? std::string("loss (per epoch)")
                                   : metric.metric + (metric.factor == 100.0 ? " (%)" : "")),
                        loss ? "set logscale y" : "unset logscale y");
    std::vector<std::string> plots;
    for (std::size_t p = 0; p < experiment.points.size(); ++p) {
      auto it = curves[p].find(panel);
      if (it == curves[p].end() || it->second.empty()) continue;
      std::string rows;
      for (const auto& [epoch, value] : it->second)
        rows += fmt::format("{} {}\n", epoch, num(loss ? value : metric.factor * value));
      plots.push_back(fmt::format("{} with lines lw 2 title {}", script.block(rows),
                                  quote(experiment.points[p].label)));
    }
    body += plots.empty() ? std::string(kEmptyPanel)
                          : "plot " + fmt::format("{}", fmt::join(plots, ", \\\n     ")) + "\n";
  }
  body += "unset multiplot\n";
  return {"curves",
          fmt::format("Training curves, mean over seeds: the training loss per epoch and the {} "
                      "of every split at each evaluation.",
                      metric.metric),
          script.text(preamble("curves", 480 * static_cast<int>(panels.size()), 500))};
}

// The heatmap's axes, shared by its panels: a column per init scale, a row per axis value. The
// right margin holds the colour box's tick labels, which the last panel's otherwise lost at the
// canvas edge.
std::string phase_axes(const PhaseDiagram& diagram, const MetricDisplay& metric,
                       std::size_t panels) {
  std::string out = fmt::format(
      "set multiplot layout 1,{} title {}\n"
      "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', 0.75 '#5ec962', "
      "1 '#fde725')\nset tics out\nset rmargin 10\nset xlabel {}\nset ylabel {}\n"
      "set xrange [-0.5:{}]\nset yrange [-0.5:{}]\n",
      panels,
      quote(fmt::format("{}: final {}, mean ± SEM over seeds", diagram.title(), metric.title)),
      quote(diagram.scale_key + " (init scale)"), quote(diagram.axis),
      num(static_cast<double>(diagram.scales.size()) - 0.5),
      num(static_cast<double>(diagram.values.size()) - 0.5));
  std::vector<std::string> xtics, ytics;
  for (std::size_t c = 0; c < diagram.scales.size(); ++c)
    xtics.push_back(fmt::format("{} {}", quote(format_number(diagram.scales[c])), c));
  for (std::size_t r = 0; r < diagram.values.size(); ++r)
    ytics.push_back(fmt::format("{} {}", quote(format_number(diagram.values[r])), r));
  out += fmt::format("set xtics ({})\nset ytics ({})\n", fmt::join(xtics, ", "),
                     fmt::join(ytics, ", "));
  return out;
}

// The cells of one panel, [row][column]: the mean (NaN where no point has one), its text and
// "± SEM" (empty where there is no point, or one seed), with the range of the means. Mean and SEM
// are two lines of a cell: on one they overflowed into the next cell at a few columns a panel.
struct PhaseCells {
  std::vector<std::vector<double>> means;
  std::vector<std::vector<std::string>> texts;
  std::vector<std::vector<std::string>> sems;
  double low = INFINITY, high = -INFINITY;
};

PhaseCells phase_cells(const PhaseDiagram& diagram, const MetricDisplay& metric,
                       const std::string& key) {
  PhaseCells cells;
  cells.means.resize(diagram.values.size());
  cells.texts.resize(diagram.values.size());
  cells.sems.resize(diagram.values.size());
  for (std::size_t r = 0; r < diagram.values.size(); ++r) {
    for (std::size_t c = 0; c < diagram.scales.size(); ++c) {
      const Point* point = diagram.at[r][c];
      const Statistic* stat = nullptr;
      if (point != nullptr) {
        const auto it = point->stats.find(key);
        if (it != point->stats.end() && it->second.n > 0) stat = &it->second;
      }
      cells.means[r].push_back(stat ? stat->mean * metric.factor : NAN);
      std::string text, sem;
      if (stat != nullptr) {
        text = fmt::format(fmt::runtime(metric.format), stat->mean * metric.factor);
        if (stat->n > 1)
          sem = "± " + fmt::format(fmt::runtime(metric.format), stat->sem * metric.factor);
        cells.low = std::min(cells.low, cells.means[r].back());
        cells.high = std::max(cells.high, cells.means[r].back());
      }
      cells.texts[r].push_back(text);
      cells.sems[r].push_back(sem);
    }
  }
  return cells;
}

// The panel of one split: the metric's mean as colour and "mean ± SEM" in each cell.
void phase_panel(Script& script, const PhaseDiagram& diagram, const MetricDisplay& metric,
                 const std::string& split) {
  const std::string key = split + "/all/" + metric.metric;
  // The cells' means, then their labels: white on the dark end of the palette, black on the
  // light end, so that every cell can be read.
  const PhaseCells table = phase_cells(diagram, metric, key);
  const double low = table.low, high = table.high;
  std::string cells, dark, light;
  for (std::size_t r = 0; r < diagram.values.size(); ++r) {
    for (std::size_t c = 0; c < diagram.scales.size(); ++c) {
      cells += fmt::format("{} {} {}\n", c, r, num(table.means[r][c]));
      if (table.texts[r][c].empty()) continue;
      const bool on_light = high > low && (table.means[r][c] - low) / (high - low) > 0.6;
      // A data column with spaces is double-quoted (gnuplot splits single-quoted text).
      (on_light ? light : dark) +=
          fmt::format("{} {} \"{}\" \"{}\"\n", c, r, table.texts[r][c], table.sems[r][c]);
    }
  }
  std::string& body = script.body();
  body += fmt::format("set title {}\nplot {} using 1:2:3 with image notitle", quote(split),
                      script.block(cells));
  for (const auto& [labels, colour] :
       {std::make_pair(&dark, "white"), std::make_pair(&light, "black")}) {
    if (labels->empty()) continue;
    const std::string block = script.block(*labels);
    body += fmt::format(
        ", {0} using 1:2:3 with labels offset 0,0.55 textcolor '{1}' notitle"
        ", {0} using 1:2:4 with labels offset 0,-0.55 textcolor '{1}' notitle",
        block, colour);
  }
  body += "\n";
}

}  // namespace

Figure phase_figure(const Experiment& experiment, const PhaseDiagram& diagram,
                    const MetricDisplay& metric, std::size_t index) {
  Script script;
  const std::vector<std::string> splits = splits_with(experiment, metric.metric);
  const std::size_t panels = std::max<std::size_t>(1, splits.size());
  std::string& body = script.body();
  body += phase_axes(diagram, metric, panels);
  for (const auto& split : splits)
    phase_panel(script, diagram, metric, split);
  body += "unset multiplot\n";
  const std::string name = fmt::format("phase-{}-{}", metric.metric, index + 1);
  const int width = 120 + 90 * static_cast<int>(diagram.scales.size());
  const int height = 180 + 60 * static_cast<int>(diagram.values.size());
  return Figure{
      name,
      fmt::format("Phase diagram, {}: the final {} (colour; mean ± SEM over seeds in each cell) "
                  "against the init scale and {}, a panel per split; a blank cell has no "
                  "finished run.",
                  diagram.title(), metric.title, diagram.axis),
      script.text(
          preamble(name, std::max(480, width) * static_cast<int>(panels), std::max(360, height)))};
}

std::vector<Headline> headlines_of(const Experiment& experiment, const std::string& probe,
                                   const std::set<std::string>& scalars) {
  std::vector<Headline> headlines;
  if (auto it = experiment.headlines.find(probe); it != experiment.headlines.end()) {
    for (const Headline& headline : it->second) {
      if (scalars.count(headline.scalar)) headlines.push_back(headline);
    }
  }
  if (headlines.empty()) {
    // A probe that declares nothing: its first scalar that is not per block.
    for (const auto& name : scalars) {
      if (!is_per_block_scalar(name)) {
        headlines.push_back({name, Better::kNeither, ""});
        break;
      }
    }
    if (headlines.empty() && !scalars.empty())
      headlines.push_back({*scalars.begin(), Better::kNeither, ""});
  }
  return headlines;
}

std::vector<std::pair<std::string, std::set<std::string>>> probes_of(const Experiment& experiment) {
  std::map<std::string, std::set<std::string>> probes;  // probe -> scalars
  std::vector<std::string> order;
  for (const auto& point : experiment.points) {
    for (const auto& [key, stat] : point.stats) {
      if (key.rfind("probe/", 0) != 0) continue;
      const std::string rest = key.substr(6);
      const std::string probe = rest.substr(0, rest.find('/'));
      if (!probes.count(probe)) order.push_back(probe);
      probes[probe].insert(rest.substr(rest.find('/') + 1));
    }
  }
  // The manifest's order; a probe no manifest lists (added by `pelab probe`) after them.
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    auto rank = [&](const std::string& p) {
      return std::find(experiment.probe_order.begin(), experiment.probe_order.end(), p) -
             experiment.probe_order.begin();
    };
    return rank(a) < rank(b);
  });
  std::vector<std::pair<std::string, std::set<std::string>>> out;
  for (const auto& probe : order)
    out.emplace_back(probe, probes[probe]);
  return out;
}

std::vector<Figure> make_figures(const Experiment& experiment, const Geometry& geometry) {
  std::vector<Figure> figures;
  for (const auto& metric : headline_metrics(experiment)) {
    figures.push_back(metric_figure(experiment, metric, Lines::kBySeries));
    if (has_groups(experiment, metric.metric))
      figures.push_back(metric_figure(experiment, metric, Lines::kByGroup));
  }
  if (auto probes = probes_figure(experiment)) figures.push_back(*probes);
  for (std::size_t i = 0; i < experiment.points.size(); ++i) {
    if (auto figure = similarity_figure(experiment, i, geometry)) figures.push_back(*figure);
  }
  for (std::size_t i = 0; i < experiment.points.size(); ++i) {
    if (auto figure = pca_figure(experiment, i, geometry)) figures.push_back(*figure);
  }
  const std::vector<PhaseDiagram> diagrams = phase_diagrams(experiment);
  for (std::size_t d = 0; d < diagrams.size(); ++d) {
    for (const auto& metric : headline_metrics(experiment))
      figures.push_back(phase_figure(experiment, diagrams[d], metric, d));
  }
  figures.push_back(curves_figure(experiment));
  return figures;
}

}  // namespace pelab::report
