// report.md, report.html (images embedded as base64 data URIs) and the figures, written into
// the experiment (or run) folder.

#include "report.h"
#include "report/comparisons.h"
#include "report/phase_diagram.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/interfaces/task.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/run_folder.h"

namespace pelab::report {

namespace fs = boost::filesystem;

std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

namespace {

std::string html_escape(const std::string& raw) {
  const std::string text = valid_utf8(raw);
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// Writes the same content as Markdown and as HTML.
class Document {
 public:
  void heading(int level, const std::string& text) {
    md_ += fmt::format("\n{} {}\n\n", std::string(static_cast<std::size_t>(level), '#'), text);
    html_ += fmt::format("<h{0}>{1}</h{0}>\n", level, html_escape(text));
  }
  void paragraph(const std::string& text) {
    md_ += text + "\n\n";
    html_ += "<p>" + html_escape(text) + "</p>\n";
  }
  void code(const std::string& text) {
    md_ += "```\n" + text + (text.empty() || text.back() == '\n' ? "" : "\n") + "```\n\n";
    html_ += "<pre>" + html_escape(text) + "</pre>\n";
  }
  void list(const std::vector<std::string>& items) {
    html_ += "<ul>\n";
    for (const auto& item : items) {
      md_ += "- " + item + "\n";
      html_ += "<li>" + html_escape(item) + "</li>\n";
    }
    md_ += "\n";
    html_ += "</ul>\n";
  }
  // Columns after the first `left` are right-aligned.
  void table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows, std::size_t left = 1) {
    std::string rule = "|";
    md_ += "|";
    html_ += "<table>\n<tr>";
    for (std::size_t c = 0; c < header.size(); ++c) {
      md_ += " " + md_cell(header[c]) + " |";
      rule += c < left ? "---|" : "---:|";
      html_ += "<th>" + html_escape(header[c]) + "</th>";
    }
    md_ += "\n" + rule + "\n";
    html_ += "</tr>\n";
    for (const auto& row : rows) {
      md_ += "|";
      html_ += "<tr>";
      for (std::size_t c = 0; c < row.size(); ++c) {
        md_ += " " + md_cell(row[c]) + " |";
        html_ += fmt::format("<td{}>{}</td>", c < left ? "" : " class=\"n\"", html_escape(row[c]));
      }
      md_ += "\n";
      html_ += "</tr>\n";
    }
    md_ += "\n";
    html_ += "</table>\n";
  }
  // `file` is relative to the report; embedded in the HTML when it exists.
  void image(const std::string& folder, const std::string& file, const std::string& caption) {
    md_ += fmt::format("![{}]({})\n\n*{}*\n\n", file, file, caption);
    const std::string path = folder + "/" + file;
    if (fs::is_regular_file(path)) {
      html_ += fmt::format(
          "<figure><img alt=\"{}\" src=\"data:image/png;base64,{}\"><figcaption>{}</figcaption>"
          "</figure>\n",
          html_escape(file), base64(read_file(path)), html_escape(caption));
    } else {
      html_ += fmt::format("<p><em>{} was not drawn.</em> {}</p>\n", html_escape(file),
                           html_escape(caption));
    }
  }

  const std::string& markdown() const { return md_; }
  std::string html(const std::string& title) const {
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
        "<style>\nbody {{ font-family: sans-serif; margin: 2em auto; max-width: 1600px; "
        "padding: 0 1em; color: #222; }}\ntable {{ border-collapse: collapse; margin: 1em 0; }}\n"
        "th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; }}\nth {{ background: #f3f3f3; "
        "}}\ntd.n {{ text-align: right; font-variant-numeric: tabular-nums; }}\nimg {{ max-width: "
        "100%; }}\nfigure {{ margin: 1.5em 0; }}\nfigcaption {{ color: #555; font-size: 0.9em; }}\n"
        "pre {{ background: #f6f6f6; padding: 0.5em; overflow-x: auto; }}\n</style>\n</head>\n"
        "<body>\n{}</body>\n</html>\n",
        html_escape(title), html_);
  }

 private:
  std::string md_;
  std::string html_;
};

std::string mean_sem(const std::map<std::string, Statistic>& stats, const std::string& key,
                     double factor, const char* format) {
  auto it = stats.find(key);
  if (it == stats.end() || it->second.n == 0) return "-";
  const std::string mean = fmt::format(fmt::runtime(format), factor * it->second.mean);
  // One seed has no standard error: the value alone, rather than a misleading "± 0".
  if (it->second.n == 1) return mean;
  return mean + " ± " + fmt::format(fmt::runtime(format), factor * it->second.sem);
}

std::string value_of(const std::map<std::string, double>& values, const std::string& key,
                     double factor, const char* format) {
  auto it = values.find(key);
  if (it == values.end()) return "-";
  return std::isfinite(it->second) ? fmt::format(fmt::runtime(format), factor * it->second) : "nan";
}

std::string scale_text(const Point& point) {
  return point.init_scale ? format_number(*point.init_scale) : "-";
}

// A plain-text table for the terminal.
std::string text_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  auto length = [](const std::string& s) {  // UTF-8 code points ("±" is one column)
    std::size_t n = 0;
    for (unsigned char c : s)
      n += (c & 0xC0) != 0x80;
    return n;
  };
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = length(header[c]);
    for (const auto& row : rows)
      width[c] = std::max(width[c], length(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - length(cells[c]), ' ');
      out += (c ? "  " : "") + (c == 0 ? cells[c] + pad : pad + cells[c]);
    }
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows)
    out += line(row);
  return out;
}

Geometry geometry_of(const Experiment& experiment, Registry* registry,
                     std::vector<std::string>& warnings) {
  Geometry geometry;
  if (registry == nullptr) return geometry;
  try {
    const RunFolder run(experiment.points.front().runs.front().dir);
    const Layout layout = registry->create_task(run.read_config(*registry).task)->layout();
    if (layout.has_coordinates()) {
      geometry.coordinates = layout.coordinates.to(torch::kFloat64);
      geometry.axis_names = layout.axis_names;
    }
    if (layout.has_communities()) {
      geometry.communities = layout.communities.to(torch::kInt64);
      geometry.community_names = layout.community_names;
    }
  } catch (const std::exception& e) {
    warnings.push_back(fmt::format(
        "the ground truth could not be read (figures are drawn without it): {}", e.what()));
  }
  return geometry;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

int run_shell(const std::string& command) {
  const int status = std::system(command.c_str());
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool is_png(const std::string& path) {
  if (!fs::is_regular_file(path)) return false;
  const std::string bytes = read_file(path);
  return bytes.size() > 8 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) == 0;
}

// The gnuplot program: the option, else $PELAB_GNUPLOT, else `gnuplot`.
std::string gnuplot_program(const ReportOptions& options) {
  std::string gnuplot = options.gnuplot;
  if (gnuplot.empty()) {
    const char* env = std::getenv("PELAB_GNUPLOT");
    gnuplot = env && *env ? env : "gnuplot";
  }
  return gnuplot;
}

// Writes the figure's script, removes an older PNG and, with gnuplot, draws it; false when
// gnuplot ran and failed (its log is kept then).
bool write_figure(const Figure& figure, const std::string& figures_dir, const std::string& gnuplot,
                  bool have_gnuplot) {
  const std::string script = figures_dir + "/" + figure.name + ".gp";
  const std::string png = figures_dir + "/" + figure.name + ".png";
  write_file_atomically(script, figure.script);
  boost::system::error_code ignored;
  fs::remove(png, ignored);
  if (!have_gnuplot) return true;
  const int status = run_shell(fmt::format("cd {} && {} {} >{} 2>&1", shell_quote(figures_dir),
                                           shell_quote(gnuplot), shell_quote(figure.name + ".gp"),
                                           shell_quote(figure.name + ".log")));
  if (status == 0 && is_png(png)) {
    fs::remove(figures_dir + "/" + figure.name + ".log", ignored);
    return true;
  }
  return false;
}

// Figures: scripts always; PNGs when gnuplot runs. Sets result.figures_drawn and warns of what
// was not drawn; returns whether gnuplot is available.
bool write_figures(const std::vector<Figure>& figures, const std::string& figures_dir,
                   const ReportOptions& options, ReportResult& result) {
  const std::string gnuplot = gnuplot_program(options);
  const bool have_gnuplot = run_shell(shell_quote(gnuplot) + " --version >/dev/null 2>&1") == 0;
  std::vector<std::string> failed;
  for (const auto& figure : figures) {
    if (!write_figure(figure, figures_dir, gnuplot, have_gnuplot)) failed.push_back(figure.name);
  }
  result.figures_drawn = have_gnuplot && failed.empty();
  result.figures_failed = failed.size();
  if (!have_gnuplot) {
    result.warnings.push_back(fmt::format(
        "gnuplot ('{}') is not available: the figures' data and gnuplot scripts are in {}/*.gp; "
        "install gnuplot (Debian: gnuplot-nox) and run `gnuplot NAME.gp` there, or run `pelab "
        "report` again",
        gnuplot, figures_dir));
  }
  for (const auto& name : failed) {
    result.warnings.push_back(
        fmt::format("gnuplot failed on {0}/{1}.gp: see {0}/{1}.log", figures_dir, name));
  }
  return have_gnuplot;
}

using Row = std::vector<std::string>;
using Rows = std::vector<Row>;

// The tables that both the document and the terminal show, computed once.
struct Tables {
  std::vector<MetricDisplay> metrics;
  Row metric_header;
  std::vector<Rows> metric_rows;  // one table per headline metric
  std::string metrics_text;       // the same tables as plain text, for the terminal
  bool has_probes = false;
  Row probe_header;
  std::vector<std::string> probe_keys;
  std::vector<std::string> probe_meanings;  // "`rsa spearman` (higher is better): ..."
  Rows probe_rows;
  // Every p-value a probe reports (not only the headlines), combined over each point's seeds.
  Row p_value_header;
  Rows p_value_rows;
};

// One table per headline metric: the points' mean ± SEM on every split.
void add_metric_tables(const Experiment& experiment, Tables& tables) {
  const std::vector<MetricDisplay>& metrics = tables.metrics;
  tables.metric_header = {"point", "init scale", "n"};
  for (const auto& split : experiment.splits)
    tables.metric_header.push_back(split);
  tables.metric_rows.resize(metrics.size());
  for (std::size_t m = 0; m < metrics.size(); ++m) {
    for (const auto& point : experiment.points) {
      Row row = {point.label, scale_text(point), std::to_string(point.runs.size())};
      for (const auto& split : experiment.splits) {
        row.push_back(mean_sem(point.stats, split + "/all/" + metrics[m].metric, metrics[m].factor,
                               metrics[m].format.c_str()));
      }
      tables.metric_rows[m].push_back(row);
    }
    tables.metrics_text += (m > 0 ? "\n" : "") + metrics[m].title + ":\n";
    tables.metrics_text += text_table(tables.metric_header, tables.metric_rows[m]);
  }
}

// A column per p-value scalar of any probe (the run-level ones; per block they are in
// results.csv), a row per point: a probe's headline table shows only the p-values it names as
// headlines, and a reader must not have to average the others from results.csv.
void add_p_value_table(const Experiment& experiment, Tables& tables) {
  std::set<std::string> keys;
  for (const auto& point : experiment.points) {
    for (const auto& [key, stat] : point.stats) {
      if (is_p_value(key) && key.find("_block") == std::string::npos) keys.insert(key);
    }
  }
  if (keys.empty()) return;
  tables.p_value_header = {"point"};
  for (const auto& key : keys) {
    const std::string probe_and_scalar = key.substr(std::string("probe/").size());
    const auto slash = probe_and_scalar.find('/');
    tables.p_value_header.push_back(fmt::format("{} {}", probe_and_scalar.substr(0, slash),
                                                probe_and_scalar.substr(slash + 1)));
  }
  for (const auto& point : experiment.points) {
    Row row = {point.label};
    for (const auto& key : keys)
      row.push_back(combined_p_text(point, key));
    tables.p_value_rows.push_back(row);
  }
}

// A column per headline scalar of each probe, and a row per point.
void add_probe_table(const Experiment& experiment,
                     const std::vector<std::pair<std::string, std::set<std::string>>>& probes,
                     Tables& tables) {
  tables.probe_header = {"point", "init scale"};
  for (const auto& [probe, scalars] : probes) {
    for (const Headline& headline : headlines_of(experiment, probe, scalars)) {
      const char* arrow = headline.better == Better::kHigher  ? " ↑"
                          : headline.better == Better::kLower ? " ↓"
                                                              : "";
      tables.probe_header.push_back(fmt::format("{} {}{}", probe, headline.scalar, arrow));
      tables.probe_keys.push_back(fmt::format("probe/{}/{}", probe, headline.scalar));
      if (!headline.meaning.empty())
        tables.probe_meanings.push_back(fmt::format("{} {}: {}", probe_title(experiment, probe),
                                                    headline.scalar, headline.meaning));
    }
  }
  for (const auto& point : experiment.points) {
    Row row = {point.label, scale_text(point)};
    for (const auto& key : tables.probe_keys)
      row.push_back(is_p_value(key) ? combined_p_text(point, key)
                                    : mean_sem(point.stats, key, 1.0, "{:.3f}"));
    tables.probe_rows.push_back(row);
  }
  add_p_value_table(experiment, tables);
}

Tables make_tables(const Experiment& experiment) {
  Tables tables;
  const auto probes = probes_of(experiment);
  tables.has_probes = !probes.empty();
  tables.metrics = headline_metrics(experiment);
  add_metric_tables(experiment, tables);
  add_probe_table(experiment, probes, tables);
  return tables;
}

// The init scales' configuration keys, for the introduction.
std::string scale_keys_text(const Experiment& experiment) {
  std::set<std::string> keys;
  for (const auto& point : experiment.points) {
    if (point.init_scale) keys.insert(point.scale_key);
  }
  return keys.empty() ? std::string("pe.init.std (none here)")
                      : fmt::format("{}", fmt::join(keys, ", "));
}

void add_introduction(Document& doc, const Experiment& experiment, const ReportResult& result) {
  doc.heading(1, fmt::format("{}: report", experiment.name));
  doc.paragraph(fmt::format(
      "{} finished run(s) in {} point(s){}, from `{}`. Values are at the final epoch; mean ± SEM "
      "(standard error of the mean, sample standard deviation / sqrt(n)) over the n seeds of "
      "each point. The init scale is the point's {}; points without one are listed by their PE.",
      result.runs, result.points,
      experiment.task.empty() ? "" : fmt::format(" of the task `{}`", experiment.task),
      experiment.dir, scale_keys_text(experiment)));
  if (!experiment.filters.empty()) {
    std::vector<std::string> texts;
    for (const auto& filter : experiment.filters)
      texts.push_back(fmt::format("`{}`", filter.text()));
    doc.paragraph(fmt::format(
        "Only the runs where {} ({} other finished run(s) left out): every test below is "
        "adjusted among these runs' comparisons alone.",
        fmt::join(texts, " and "), experiment.filtered_out));
  }
}

// The metric on a split per condition (group) besides "all"; nothing when it has no groups.
void add_group_table(Document& doc, const Experiment& experiment, const MetricDisplay& metric,
                     const std::string& split) {
  std::vector<std::string> groups = metric_groups(experiment, split, metric.metric);
  groups.erase(std::remove(groups.begin(), groups.end(), "all"), groups.end());
  if (groups.empty()) return;
  Row header = {"point", "init scale"};
  for (const auto& group : groups)
    header.push_back(group);
  Rows rows;
  for (const auto& point : experiment.points) {
    Row row = {point.label, scale_text(point)};
    for (const auto& group : groups) {
      row.push_back(mean_sem(point.stats, split + "/" + group + "/" + metric.metric, metric.factor,
                             metric.format.c_str()));
    }
    rows.push_back(row);
  }
  doc.paragraph(fmt::format("Split `{}` by condition (group):", split));
  doc.table(header, rows);
}

void add_metric_sections(Document& doc, const Experiment& experiment, const Tables& tables) {
  for (std::size_t m = 0; m < tables.metrics.size(); ++m) {
    const MetricDisplay& metric = tables.metrics[m];
    doc.heading(2, metric.title);
    doc.table(tables.metric_header, tables.metric_rows[m]);
    for (const auto& split : experiment.splits)
      add_group_table(doc, experiment, metric, split);
  }
}

// A metric's value as its tables show it.
std::string shown(const MetricDisplay& display, double value) {
  if (!std::isfinite(value)) return "-";
  return fmt::format(fmt::runtime(display.format), value * display.factor);
}

std::string interval(const MetricDisplay& display, double low, double high) {
  return fmt::format("[{}, {}]", shown(display, low), shown(display, high));
}

std::string signed_shown(const MetricDisplay& display, double value) {
  return (value >= 0 ? "+" : "") + shown(display, value);
}

std::string p_text(double p) {
  return std::isfinite(p) ? fmt::format("{:.3g}", p) : std::string("-");
}

// "resolved", or "not resolved at n = 3 (about 14 seeds for 80% power; smallest p 0.25)", or
// unpaired "not resolved at n = 6 + 4, unpaired (about 9 seeds a condition ...)"; `unit`
// is what n counts.
std::string verdict(const Comparison& c, const std::string& unit = "seeds") {
  std::vector<std::string> notes;
  if (!c.resolved() && c.seeds_for_power) notes.push_back(c.power_text(unit));
  if (c.min_p > 0.05) notes.push_back(fmt::format("smallest attainable p {:.3g}", c.min_p));
  const std::string head = c.resolved() ? (c.paired ? "resolved" : "resolved, unpaired")
                                        : fmt::format("not resolved at {}", c.sample_size());
  return notes.empty() ? head : fmt::format("{} ({})", head, fmt::join(notes, "; "));
}

void add_condition_table(Document& doc, const Experiment& experiment, const ComparisonTable& table,
                         const InferenceOptions& options) {
  Rows rows;
  for (const Point& point : experiment.points) {
    std::vector<double> values;
    for (const RunRecord& run : point.runs) {
      const auto it = run.values.find(table.metric);
      if (it != run.values.end()) values.push_back(it->second);
    }
    if (values.empty()) continue;
    const ConditionSummary s = summarise_condition(values, options);
    rows.push_back({point.label, std::to_string(s.n), std::to_string(s.failed),
                    fmt::format("{} {}", shown(table.display, s.mean),
                                interval(table.display, s.ci_low, s.ci_high)),
                    shown(table.display, s.median), shown(table.display, s.iqm)});
  }
  doc.table({"point", "n", "failed", "mean [95% CI]", "median", "IQM"}, rows);
}

void add_comparison_sections(Document& doc, const Experiment& experiment,
                             const Inference& inference) {
  if (inference.tables.empty() && inference.instances.empty()) return;
  const InferenceOptions& options = inference.options;
  const std::string reference =
      options.reference_scale
          ? fmt::format(
                "the series' init scale {} (--reference-scale; a series without it: its "
                "smallest)",
                format_number(*options.reference_scale))
          : "the series' smallest";
  doc.heading(2, "Comparisons");
  doc.paragraph(fmt::format(
      "Within each series, every init scale against {} (B - A, in the units "
      "of the tables above). Paired on the seeds both points hold: the mean of the per-seed "
      "differences, a 95% percentile bootstrap CI ({} resamples of the seeds, seeded) and a "
      "two-sided sign-flip permutation test (every flip enumerated up to 2^20); points whose "
      "seeds differ are compared unpaired (difference of means, a permutation test of the "
      "labels). p is adjusted with Holm's method over the comparisons of each table. Where the "
      "CI contains 0 the difference is not resolved at that n, and the seeds that the observed "
      "spread would need for 80% power (normal approximation) are given; with few seeds the "
      "smallest attainable p is above 0.05 (2/2^n: 0.25 at n = 3). Per point: mean with its "
      "bootstrap CI, median and interquartile mean (the spread over seeds is often heavy-tailed), "
      "and the seeds that failed (a non-finite value). comparisons.csv has every row.",
      reference, options.resamples));
  for (const ComparisonTable& table : inference.tables) {
    doc.paragraph(table.split.empty()
                      ? fmt::format("{}, final PE:", table.display.title)
                      : fmt::format("{}, split `{}`:", table.display.title, table.split));
    Rows rows;
    for (const PointComparison& row : table.rows) {
      const Comparison& c = row.comparison;
      rows.push_back({row.b, row.a,
                      c.paired ? std::to_string(c.n) : fmt::format("{} + {}", c.n_b, c.n_a),
                      fmt::format("{} {}", signed_shown(table.display, c.difference),
                                  interval(table.display, c.ci_low, c.ci_high)),
                      p_text(c.p), p_text(c.p_holm), verdict(c)});
    }
    doc.table({"B", "A", "n", "B - A [95% CI]", "p", "Holm p", ""}, rows, 2);
    add_condition_table(doc, experiment, table, options);
  }
  if (inference.instances.empty()) return;
  doc.heading(2, "Dataset instances");
  doc.paragraph(
      "Points that differ in a dataset instance (a task key ending in `seed`: another network, "
      "cohort, split or puzzle set) as well as in the init scale: B - A per instance (the mean "
      "over its paired seeds), then the instance as the unit (sign flip over the instances' "
      "means, bootstrap over instances; Holm over the table), beside the spread of the instance "
      "means (between instances) and the pooled spread of the per-seed differences within an "
      "instance (between seeds). The last column pools every (instance, seed) pair as one unit: "
      "it ignores that seeds of one instance share its data, and is shown for reference only.");
  for (const InstanceComparison& each : inference.instances) {
    const MetricDisplay& display = each.display;
    std::vector<std::string> means;
    for (std::size_t i = 0; i < each.instances.size(); ++i)
      means.push_back(fmt::format("{}: {} (n {})", each.instances[i],
                                  signed_shown(display, each.instance_means[i]),
                                  each.instance_n[i]));
    doc.paragraph(fmt::format("`{}`, {} vs {} over `{}`: {}", each.metric, each.b, each.a,
                              each.instance_key, fmt::join(means, "; ")));
    const Comparison& u = each.by_instance;
    const Comparison& q = each.pooled;
    doc.table({"instances", "B - A [95% CI], instance as unit", "p", "Holm p", "",
               "sd between instances", "sd between seeds", "pooled pairs: B - A [95% CI], p"},
              {{std::to_string(u.n),
                fmt::format("{} {}", signed_shown(display, u.difference),
                            interval(display, u.ci_low, u.ci_high)),
                p_text(u.p), p_text(u.p_holm), verdict(u, "instances"),
                shown(display, each.between_instance_sd), shown(display, each.within_instance_sd),
                fmt::format("{} {}, p = {} (n = {})", signed_shown(display, q.difference),
                            interval(display, q.ci_low, q.ci_high), p_text(q.p), q.n)}},
              0);
  }
}

void add_phase_diagrams(Document& doc, const Experiment& experiment,
                        const std::vector<MetricDisplay>& metrics) {
  const std::vector<PhaseDiagram> diagrams = phase_diagrams(experiment);
  if (diagrams.empty()) return;
  doc.heading(2, "Phase diagrams");
  doc.paragraph(
      "Sweeps over the init scale and another numeric axis: each headline metric per cell, "
      "mean ± SEM (seeds); columns the init scale, rows the other axis. The figures "
      "`phase-<metric>-<k>.png` draw them.");
  for (const PhaseDiagram& diagram : diagrams) {
    for (const auto& metric : metrics) {
      for (const auto& split : experiment.splits) {
        std::vector<std::string> header;
        const auto rows = phase_table(diagram, split + "/all/" + metric.metric, metric.factor,
                                      metric.format, &header);
        doc.paragraph(fmt::format("{}, split `{}`: {}", diagram.title(), split, metric.title));
        doc.table(header, rows);
      }
    }
  }
}

void add_probe_section(Document& doc, const Tables& tables) {
  if (!tables.has_probes) return;
  doc.heading(2, "Probes of the final PE");
  doc.paragraph(fmt::format(
      "The scalars each probe declares as its headline, the mean over blocks (↑ higher is "
      "better, ↓ lower; docs/probes.md defines the built-in probes){}{}. Every scalar, per "
      "block too, is in results.csv.",
      tables.probe_meanings.empty() ? "" : ": ", fmt::join(tables.probe_meanings, "; ")));
  doc.table(tables.probe_header, tables.probe_rows);
  if (tables.p_value_rows.empty()) return;
  doc.paragraph(
      "Every p-value the probes report (their permutation tests), over each point's seeds: "
      "combined by Fisher's method, with the count of seeds under 0.05; never averaged (a mean "
      "of p-values is not a p-value). results.csv has the same in its fisher_p and "
      "seeds_below_0.05 columns.");
  doc.table(tables.p_value_header, tables.p_value_rows);
}

// The parameters are the same for every seed of a point: their mean is the value.
std::string mean_only(const Point& point, const std::string& key) {
  auto it = point.stats.find(key);
  return it == point.stats.end() || it->second.n == 0 ? std::string("-")
                                                      : format_number(it->second.mean);
}

// The threads may differ between the seeds of a point (a host execution key: a run resumed with
// more): each distinct count, in increasing order.
std::string distinct_values(const Point& point, const std::string& key) {
  std::set<double> values;
  for (const RunRecord& run : point.runs) {
    auto it = run.values.find(key);
    if (it != run.values.end()) values.insert(it->second);
  }
  if (values.empty()) return "-";
  std::vector<std::string> shown;
  for (double value : values)
    shown.push_back(format_number(value));
  return fmt::format("{}", fmt::join(shown, ", "));
}

// The BLAS kernel, ATen's kernels and the precision: the runs of a point may have been
// computed on different hosts (shards of a sweep), so each distinct one is listed.
std::string computed_with(const Point& point) {
  std::vector<std::string> distinct;
  for (const RunRecord& run : point.runs) {
    if (std::find(distinct.begin(), distinct.end(), run.compute) == distinct.end())
      distinct.push_back(run.compute);
  }
  return fmt::format("{}", fmt::join(distinct, "; "));
}

// The plugins that built the runs, with their versions: a plugin whose runs were made by two of
// its versions is said first, as the runs may not be comparable (docs/plugins.md).
void add_plugin_versions(Document& doc, const Experiment& experiment) {
  std::map<std::string, std::map<std::string, std::size_t>> runs_by_version;
  std::size_t unrecorded = 0;
  for (const auto& point : experiment.points) {
    for (const RunRecord& run : point.runs) {
      unrecorded += run.plugins.empty() ? 1 : 0;
      for (const auto& [plugin, version] : run.plugins)
        ++runs_by_version[plugin][version];
    }
  }
  if (runs_by_version.empty()) return;
  std::vector<std::string> listed, mixed;
  for (const auto& [plugin, versions] : runs_by_version) {
    if (versions.size() == 1) {
      listed.push_back(fmt::format("{} {}", plugin, versions.begin()->first));
      continue;
    }
    std::vector<std::string> counts;
    for (const auto& [version, runs] : versions)
      counts.push_back(fmt::format("{} ({} run{})", version, runs, runs == 1 ? "" : "s"));
    mixed.push_back(fmt::format("{} {}", plugin, fmt::join(counts, ", ")));
  }
  if (!mixed.empty()) {
    doc.paragraph(fmt::format(
        "**Runs made by different versions of a plugin**, which may compute otherwise: {}. "
        "Compare their points with care, or train the older runs again (`pelab run --force`).",
        fmt::join(mixed, "; ")));
  }
  doc.paragraph(fmt::format(
      "Plugins, at the version each run's {} records: {}{}.", RunFolder::kSummaryFile,
      listed.empty() ? "-" : fmt::format("{}", fmt::join(listed, ", ")),
      unrecorded == 0
          ? ""
          : fmt::format(" ({} runs were written before pelab recorded the versions)", unrecorded)));
}

void add_cost_section(Document& doc, const Experiment& experiment) {
  doc.heading(2, "Cost");
  Rows rows;
  for (const auto& point : experiment.points) {
    rows.push_back({point.label, std::to_string(point.runs.size()),
                    mean_only(point, "run/parameters"), distinct_values(point, "run/threads"),
                    mean_sem(point.stats, "run/steps_per_second", 1.0, "{:.1f}"),
                    mean_sem(point.stats, "run/wall_seconds", 1.0 / 60.0, "{:.1f}"),
                    computed_with(point)});
  }
  doc.paragraph(
      "As each run measured itself (" + std::string(RunFolder::kSummaryFile) +
      "): training steps per second over the whole "
      "run, evaluation included, and its wall time. Runs that shared the CPU with others (`pelab "
      "run -j`, other work) are slower by as much as they shared it; for a speed comparison "
      "between PEs use `pelab bench NAME` or short runs on an otherwise idle machine. Computed "
      "with: the BLAS kernel, ATen's vector kernels, the precision and whether subnormal floats "
      "were flushed (`pelab doctor` explains them).");
  std::size_t runs = 0, reused = 0;
  for (const auto& point : experiment.points) {
    for (const RunRecord& run : point.runs) {
      ++runs;
      reused += run.reused_from.empty() ? 0 : 1;
    }
  }
  if (reused > 0) {
    doc.paragraph(fmt::format(
        "{} of the {} runs were not trained here but copied from a finished run of the same "
        "configuration and seed in another experiment (`pelab run --reuse`; each one's {} says "
        "which in `reused_from`): their cost is their source's.",
        reused, runs, RunFolder::kSummaryFile));
  }
  doc.table({"point", "n", "parameters", "threads", "steps/s", "wall (min)", "computed with"},
            rows);
  add_plugin_versions(doc, experiment);
}

// Each headline metric on each evaluation split as a point x seed table: how the seeds of a
// point spread, and which seeds do well at every point, are read along its rows and columns.
void add_per_seed_section(Document& doc, const Experiment& experiment, const Tables& tables) {
  std::set<std::int64_t> seeds;
  std::size_t most_runs = 0;
  for (const auto& point : experiment.points) {
    for (const auto& run : point.runs)
      seeds.insert(run.seed);
    most_runs = std::max(most_runs, point.runs.size());
  }
  if (most_runs < 2) return;  // one seed a point: the metric tables say it all
  doc.heading(2, "Per seed");
  doc.paragraph(
      "The final value of each point (rows) at each seed (columns); - where that seed "
      "did not finish.");
  Row header = {"point"};
  for (std::int64_t seed : seeds)
    header.push_back(std::to_string(seed));
  for (const auto& metric : tables.metrics) {
    for (const auto& split : evaluation_splits(experiment)) {
      const std::string key = split + "/all/" + metric.metric;
      Rows rows;
      for (const auto& point : experiment.points) {
        std::map<std::int64_t, const RunRecord*> by_seed;
        for (const auto& run : point.runs)
          by_seed[run.seed] = &run;
        Row row = {point.label};
        for (std::int64_t seed : seeds) {
          auto it = by_seed.find(seed);
          row.push_back(it == by_seed.end() ? "-"
                                            : value_of(it->second->values, key, metric.factor,
                                                       metric.format.c_str()));
        }
        rows.push_back(row);
      }
      doc.paragraph(fmt::format("{}, split `{}`:", metric.title, split));
      doc.table(header, rows);
    }
  }
}

// A row per run: every headline metric on every split, then the probes' headline scalars.
void add_per_run_section(Document& doc, const Experiment& experiment, const Tables& tables) {
  doc.heading(2, "Per run");
  Row header = {"point", "seed"};
  for (const auto& metric : tables.metrics) {
    for (const auto& split : experiment.splits)
      header.push_back(split + " " + metric.column);
  }
  for (std::size_t i = 0; i < tables.probe_keys.size(); ++i)
    header.push_back(tables.probe_header[i + 2]);
  Rows rows;
  for (const auto& point : experiment.points) {
    for (const auto& run : point.runs) {
      Row row = {point.label, std::to_string(run.seed)};
      for (const auto& metric : tables.metrics) {
        for (const auto& split : experiment.splits) {
          row.push_back(value_of(run.values, split + "/all/" + metric.metric, metric.factor,
                                 metric.format.c_str()));
        }
      }
      for (const auto& key : tables.probe_keys)
        row.push_back(value_of(run.values, key, 1.0, "{:.3f}"));
      rows.push_back(row);
    }
  }
  doc.paragraph(fmt::format("The values of each run's {}.", RunFolder::kSummaryFile));
  doc.table(header, rows, 2);
}

void add_figures_section(Document& doc, const std::string& dir, const std::string& figures_dir,
                         const std::vector<Figure>& figures, bool have_gnuplot) {
  doc.heading(2, "Figures");
  if (!have_gnuplot) {
    doc.paragraph(
        fmt::format("gnuplot was not found: the figures were not drawn. Their data and "
                    "scripts are in figures/*.gp (run `gnuplot NAME.gp` in {}).",
                    figures_dir));
  }
  for (const auto& figure : figures)
    doc.image(dir, fmt::format("{}/{}.png", ExperimentFolder::kFiguresFolder, figure.name),
              figure.caption);
}

// The runs' notes, the runs left out and the report's warnings.
std::vector<std::string> report_notes(const Experiment& experiment,
                                      const std::vector<std::string>& warnings) {
  std::vector<std::string> notes;
  for (const auto& point : experiment.points) {
    std::set<std::string> seen;
    for (const auto& run : point.runs) {
      for (const auto& note : run.notes) {
        // The same note for every seed is said once.
        if (seen.insert(note).second) notes.push_back(point.label + ": " + note);
      }
    }
  }
  for (const auto& skipped : experiment.skipped)
    notes.push_back("not included: " + skipped);
  for (const auto& warning : warnings)
    notes.push_back(warning);
  return notes;
}

void add_notes_section(Document& doc, const std::vector<std::string>& notes) {
  if (notes.empty()) return;
  doc.heading(2, "Notes");
  doc.list(notes);
}

void add_points_section(Document& doc, const Experiment& experiment) {
  doc.heading(2, "Points");
  Rows rows;
  for (const auto& point : experiment.points)
    rows.push_back({point.label, point.point, std::to_string(point.runs.size())});
  doc.table({"label", "sweep point (folder)", "runs"}, rows, 3);
}

void add_files_paragraph(Document& doc) {
  doc.paragraph(fmt::format(
      "Files: results.csv (point,metric,mean,sem,n,series,init_scale,fisher_p,seeds_below_0.05 "
      "for every final metric, probe scalar and cost; the last two for p-values only), "
      "comparisons.csv (every comparison of the Comparisons and "
      "Dataset instances sections), figures/*.png with the gnuplot scripts that drew them "
      "(figures/*.gp, data inline), and per run {}/ in its experiment folder ({}, {}, {}, "
      "{}/*.npy, {}/*.json and *.npy).",
      kRunLayout, RunFolder::kConfigFile, RunFolder::kMetricsFile, RunFolder::kSummaryFile,
      RunFolder::kSnapshotFolder, RunFolder::kProbeFolder));
}

// The report's document, section by section; embeds the PNGs drawn in `dir`/figures.
Document report_document(const Experiment& experiment, const ReportResult& result,
                         const Tables& tables, const Inference& inference,
                         const std::vector<Figure>& figures, const std::string& figures_dir,
                         bool have_gnuplot) {
  Document doc;
  add_introduction(doc, experiment, result);
  add_metric_sections(doc, experiment, tables);
  add_comparison_sections(doc, experiment, inference);
  add_phase_diagrams(doc, experiment, tables.metrics);
  add_probe_section(doc, tables);
  add_cost_section(doc, experiment);
  add_per_seed_section(doc, experiment, tables);
  add_per_run_section(doc, experiment, tables);
  add_figures_section(doc, result.dir, figures_dir, figures, have_gnuplot);
  add_notes_section(doc, report_notes(experiment, result.warnings));
  add_points_section(doc, experiment);
  add_files_paragraph(doc);
  return doc;
}

void write_documents(const Document& doc, const std::string& title, ReportResult& result) {
  const ExperimentFolder folder(result.dir);
  write_file_atomically(folder.report_markdown_file(), valid_utf8(doc.markdown()));
  write_file_atomically(folder.report_html_file(), doc.html(title));
  result.files.push_back(folder.report_markdown_file());
  result.files.push_back(folder.report_html_file());
}

}  // namespace

std::optional<CombinedP> combined_p(const Point& point, const std::string& key) {
  std::vector<double> p;
  for (const RunRecord& run : point.runs) {
    const auto it = run.values.find(key);
    if (it != run.values.end() && std::isfinite(it->second)) p.push_back(it->second);
  }
  const std::optional<double> fisher = fisher_combined(p);
  if (!fisher) return std::nullopt;
  CombinedP combined;
  combined.fisher = *fisher;
  combined.below_0_05 = static_cast<std::size_t>(
      std::count_if(p.begin(), p.end(), [](double v) { return v < 0.05; }));
  combined.seeds = p.size();
  return combined;
}

std::string combined_p_text(const Point& point, const std::string& key) {
  const std::optional<CombinedP> p = combined_p(point, key);
  if (!p) return "-";
  return fmt::format("Fisher {:.3g} ({} of {} < 0.05)", p->fisher, p->below_0_05, p->seeds);
}

bool is_p_value(const std::string& key) {
  if (key.rfind("probe/", 0) != 0) return false;
  const std::string name = key.substr(key.rfind('/') + 1);
  return name.find("p_value") != std::string::npos;
}

std::vector<std::string> evaluation_splits(const Experiment& experiment) {
  std::vector<std::string> splits;
  for (const auto& split : experiment.splits) {
    if (split != "train") splits.push_back(split);
  }
  return splits.empty() ? experiment.splits : splits;
}

ReportResult write_report(const std::string& dir, Registry* registry,
                          const ReportOptions& options) {
  return write_report(std::vector<std::string>{dir}, dir, registry, options);
}

ReportResult write_report(const std::vector<std::string>& dirs, const std::string& dir,
                          Registry* registry, const ReportOptions& options) {
  ReportResult result;
  result.dir = dir;
  const Experiment experiment = collect(dirs, registry, options.where);
  boost::system::error_code error;
  // create_directories(".") fails ("Invalid argument") although "." exists: `pelab report .`.
  if (!fs::is_directory(dir, error)) fs::create_directories(dir, error);
  PELAB_CHECK(!error, "cannot create the report folder '{}': {}", dir, error.message());
  result.points = experiment.points.size();
  for (const auto& point : experiment.points)
    result.runs += point.runs.size();
  result.warnings = experiment.warnings;
  const Geometry geometry = geometry_of(experiment, registry, result.warnings);

  const ExperimentFolder folder(dir);
  write_file_atomically(folder.results_file(), results_csv(experiment));
  result.files.push_back(folder.results_file());

  // Figures: scripts always; PNGs when gnuplot runs.
  const std::string figures_dir = folder.figures_folder();
  const std::vector<Figure> figures = make_figures(experiment, geometry);
  const bool have_gnuplot = write_figures(figures, figures_dir, options, result);

  const Tables tables = make_tables(experiment);
  result.metrics_table = tables.metrics_text;
  InferenceOptions inference_options;
  inference_options.reference_scale = options.reference_scale;
  const Inference inference = infer(experiment, tables.metrics, inference_options);
  write_file_atomically(folder.comparisons_file(), comparisons_csv(inference));
  result.files.push_back(folder.comparisons_file());
  result.comparisons_text = comparisons_text(inference);
  const Document doc =
      report_document(experiment, result, tables, inference, figures, figures_dir, have_gnuplot);
  write_documents(doc, experiment.name + ": pelab report", result);
  return result;
}

}  // namespace pelab::report
