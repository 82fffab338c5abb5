// The report library on hand-made experiment folders whose aggregates are known.

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "report/comparisons.h"
#include "report/phase_diagram.h"
#include "report/report.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = boost::filesystem;

TEST(ReportStatistics, MeanSemAndN) {
  const report::Statistic s = report::summarise({1.0, 2.0, 3.0, std::nan("")});
  EXPECT_EQ(s.n, 3u);  // NaN (a probe's null) is left out
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_DOUBLE_EQ(s.sem, 1.0 / std::sqrt(3.0));  // sample sd 1, over sqrt(3)
  EXPECT_EQ(report::summarise({5.0}).sem, 0.0);
  // Equal values (a frozen PE's probe over seeds): exactly that value, with no spread.
  const report::Statistic equal = report::summarise(std::vector<double>(15, 0.808));
  EXPECT_EQ(equal.mean, 0.808);
  EXPECT_EQ(equal.sem, 0.0);
  EXPECT_EQ(report::summarise({}).n, 0u);
}

TEST(ReportBase64, RfcVectors) {
  EXPECT_EQ(report::base64(""), "");
  EXPECT_EQ(report::base64("f"), "Zg==");
  EXPECT_EQ(report::base64("fo"), "Zm8=");
  EXPECT_EQ(report::base64("foo"), "Zm9v");
  EXPECT_EQ(report::base64("foob"), "Zm9vYg==");
  EXPECT_EQ(report::base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(report::base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(report::base64(std::string("\xff\x00\x80", 3)), "/wCA");
}

// An experiment folder written by hand: two learned-PE points (std 2.0 and 0.2, two seeds each),
// one sinusoidal point, one unfinished run. Each run has the rsa probe (headlines as the built-in
// declares them) and a probe "custom" that declares its second scalar, lower is better.
class ReportFolder : public ::testing::Test {
 protected:
  ReportFolder() {
    write_run("pe.init.std=2", 1, learned(2.0), 0.50, 0.40, 0.10);
    write_run("pe.init.std=2", 2, learned(2.0), 0.70, 0.60, 0.30);
    write_run("pe.init.std=0.2", 1, learned(0.2), 0.90, 0.80, 0.85);
    write_run("pe.init.std=0.2", 2, learned(0.2), 1.00, 0.90, 0.95);
    write_run("pe=sinusoidal", 1,
              "[pe]\nplugin = \"sinusoidal_nd\"\nbase = 10000.0\nscale = 1.0\n"
              "use_hidden_coordinates = true\n",
              0.95, 0.85, 0.99);
    const std::string unfinished = dir_ / "exp/pe.init.std=2/seed-3";
    fs::create_directories(unfinished);
    std::ofstream(unfinished + "/config.toml") << header(3) << learned(2.0);
    std::ofstream(unfinished + "/summary.json") << "{\"status\": \"failed\", \"error\": \"NaN\"}";
  }

  static std::string learned(double std) {
    return fmt::format(
        "[pe]\nplugin = \"learned\"\ninit = {{ plugin = \"normal\", std = {}, mean = "
        "0.0 }}\n",
        format_number(std));
  }

  static std::string header(int seed, const std::string& experiment = "exp",
                            const std::string& model_keys = "",
                            const std::string& train_keys = "") {
    return fmt::format(
        "[experiment]\nname = \"{}\"\nseeds = [{}]\n\n[task]\nplugin = \"marker_position\"\n"
        "tokens = 4\n\n[model]\nlayers = 2\nd_model = 4\n{}\n[train]\nepochs = 2\nthreads = "
        "{}\n{}\n"
        "[[probe]]\nplugin = \"custom\"\n\n[[probe]]\nplugin = \"rsa\"\n\n",
        experiment, seed, model_keys,
        seed,  // threads differ between runs: must not split a series
        train_keys);
  }

  // A finished run in <dir_>/<folder>/<point>/seed-<seed>, of the experiment named as the folder's
  // last component.
  void write_run(const std::string& point, int seed, const std::string& pe, double train,
                 double test, double spearman, const std::string& folder = "exp",
                 const std::string& model_keys = "", const std::string& train_keys = "") {
    const std::string experiment = fs::path(folder).filename().string();
    const std::string run = dir_ / (folder + "/" + point + "/seed-" + std::to_string(seed));
    fs::create_directories(run + "/pe");
    std::ofstream(run + "/config.toml") << header(seed, experiment, model_keys, train_keys) << pe;
    std::ofstream(run + "/summary.json") << fmt::format(
        "{{\"status\": \"finished\", \"experiment\": \"{}\", \"point\": \"{}\", \"seed\": {}, "
        "\"parameters\": 100, \"threads\": {}, \"wall_seconds\": {}, \"steps_per_second\": {}, "
        "\"final\": {{\"train/all/accuracy\": {}, \"test/all/accuracy\": {}, "
        "\"test/first/accuracy\": {}, \"test/all/loss\": 0.5}}, \"probes\": {{\"rsa\": "
        "{{\"spearman\": {}, \"spearman_block0\": {}, \"p_value\": null}}, \"custom\": "
        "{{\"alpha\": 1, \"zeta\": {}}}}}}}",
        experiment, point, seed, seed, 60 * seed, 10 * seed, train, test, test, spearman, spearman,
        seed);
    std::ofstream(run + "/metrics.csv")
        << "epoch,split,group,metric,value\n0,train,all,accuracy,0.25\n0,test,all,accuracy,0.25\n"
        << "1,train_epoch,all,loss,1.2\n2,train_epoch,all,loss,0.9\n"
        << fmt::format("2,train,all,accuracy,{}\n2,test,all,accuracy,{}\n", train, test);
    torch::manual_seed(seed);
    write_npy(run + "/pe/tables-epoch-000000.npy", torch::randn({2, 4, 4}));
    write_npy(run + "/pe/tables-epoch-000002.npy", torch::randn({2, 4, 4}));
    fs::create_directories(run + "/probes");
    std::ofstream(run + "/probes/rsa.json")
        << "{\"probe\": \"rsa\", \"scalars\": {}, \"note\": \"a note for the reader\", "
           "\"headlines\": [{\"scalar\": \"spearman\", \"better\": \"higher\", \"meaning\": "
           "\"1: mirrors the layout\"}, {\"scalar\": \"p_value\", \"better\": \"lower\"}]}";
    std::ofstream(run + "/probes/custom.json")
        << "{\"probe\": \"custom\", \"scalars\": {}, \"headlines\": [{\"scalar\": \"zeta\", "
           "\"better\": \"lower\", \"meaning\": \"how far from the truth\"}]}";
  }

  // Options for a report of the tables alone: no gnuplot to run.
  static report::ReportOptions tables_only() {
    report::ReportOptions options;
    options.gnuplot = "/nonexistent/gnuplot";
    return options;
  }

  test::ScratchDir dir_;
  Registry registry_ = test::builtin_registry();
};

TEST_F(ReportFolder, CollectsPointsInScaleOrder) {
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  EXPECT_EQ(experiment.name, "exp");
  ASSERT_EQ(experiment.points.size(), 3u);
  EXPECT_EQ(experiment.points[0].point, "pe.init.std=0.2");
  EXPECT_EQ(*experiment.points[0].init_scale, 0.2);
  EXPECT_EQ(experiment.points[0].scale_key, "pe.init.std");
  EXPECT_EQ(experiment.points[0].series, "learned, normal std");
  EXPECT_EQ(experiment.points[0].label, "learned, normal std=0.2");
  EXPECT_EQ(*experiment.points[1].init_scale, 2.0);
  EXPECT_FALSE(experiment.points[2].init_scale.has_value());
  EXPECT_EQ(experiment.points[2].label, "sinusoidal_nd");
  EXPECT_EQ(experiment.splits, (std::vector<std::string>{"train", "test"}));
  ASSERT_EQ(experiment.skipped.size(), 1u);
  EXPECT_THAT(experiment.skipped[0], HasSubstr("seed-3: failed"));

  const report::Statistic& test = experiment.points[1].stats.at("test/all/accuracy");
  EXPECT_EQ(test.n, 2u);
  EXPECT_DOUBLE_EQ(test.mean, 0.5);
  EXPECT_NEAR(test.sem, 0.1, 1e-12);  // sd of {0.4, 0.6} is 0.1414, over sqrt(2)
  const report::Statistic& rsa = experiment.points[0].stats.at("probe/rsa/spearman");
  EXPECT_DOUBLE_EQ(rsa.mean, 0.9);
  EXPECT_EQ(experiment.points[0].stats.at("probe/rsa/p_value").n, 0u);  // null in summary.json
}

TEST_F(ReportFolder, ResultsCsv) {
  const std::string csv = report::results_csv(report::collect(dir_ / "exp", &registry_));
  EXPECT_THAT(csv, testing::StartsWith(
                       "point,metric,mean,sem,n,series,init_scale,fisher_p,seeds_below_0.05\n"));
  // Shortest round-trip decimals: 0.1 may print as 0.09999999999999999.
  EXPECT_THAT(csv,
              ContainsRegex("\npe\\.init\\.std=2,test/all/accuracy,0\\.5,0\\.(1|09999+[0-9]*),2,"
                            "\"learned, normal std\",2,,\n"));
  EXPECT_THAT(csv, ContainsRegex("\npe\\.init\\.std=0\\.2,probe/rsa/spearman,0\\.(9|8999+[0-9]*),"
                                 "0\\.(05|0499+[0-9]*),2,\"learned, normal std\",0\\.2,,\n"));
  EXPECT_THAT(csv, HasSubstr("\npe=sinusoidal,train/all/accuracy,0.95,0,1,sinusoidal_nd,,,\n"));
  EXPECT_THAT(csv, HasSubstr("\npe.init.std=0.2,probe/rsa/p_value,nan,nan,0,"));
  // The cost comes last, after the probes.
  EXPECT_THAT(csv, HasSubstr("\npe.init.std=2,run/steps_per_second,15,5,2,"));
  EXPECT_LT(csv.find("pe.init.std=2,probe/rsa/spearman,"),
            csv.find("pe.init.std=2,run/parameters,"));
}

TEST_F(ReportFolder, WithoutGnuplotTheScriptsAreWritten) {
  report::ReportOptions options = tables_only();
  const report::ReportResult result = report::write_report(dir_ / "exp", &registry_, options);
  EXPECT_EQ(result.runs, 5u);
  EXPECT_EQ(result.points, 3u);
  EXPECT_FALSE(result.figures_drawn);
  EXPECT_THAT(result.warnings, Contains(HasSubstr("not available")));
  for (const char* script : {"accuracy.gp", "accuracy-groups.gp", "probes.gp", "similarity-1.gp",
                             "pca-1.gp", "curves.gp"}) {
    EXPECT_TRUE(fs::is_regular_file(dir_ / ("exp/figures/" + std::string(script)))) << script;
  }
  EXPECT_FALSE(fs::exists(dir_ / "exp/figures/accuracy.png"));
  const std::string script = test::slurp(dir_ / "exp/figures/accuracy.gp");
  EXPECT_THAT(script, HasSubstr("set terminal pngcairo"));
  // Test accuracy (%), one line per series (group "all"): scale, mean and its 95% bootstrap CI
  // (two seeds: the CI runs from one to the other).
  EXPECT_THAT(script, HasSubstr("\n0.2 85 80 90\n2 50 40 60\n"));
  EXPECT_THAT(script, HasSubstr("using 1:2:3:4 with yerrorlines"));
  EXPECT_THAT(script, Not(HasSubstr("first")));
  // A percentage axis stops at 100: test accuracy spans 40 (50 - 10) to 90 (85 + 5), plus 8%.
  EXPECT_THAT(script, HasSubstr("set title 'test'\nset ylabel 'accuracy (%)'\n"));
  EXPECT_THAT(script, HasSubstr("set yrange [36:94]\n"));
  // Train accuracy reaches 100 (95 + 5): a quarter of the margin above it, room for the marker.
  EXPECT_THAT(script, HasSubstr("set yrange [46:101]\n"));
  const std::regex yrange(R"(set yrange \[([0-9.]+):([0-9.]+)\])");
  int percent_panels = 0;
  for (std::sregex_iterator it(script.begin(), script.end(), yrange), end; it != end; ++it) {
    ++percent_panels;
    EXPECT_GE(std::stod((*it)[1]), 0.0) << it->str();
    EXPECT_LE(std::stod((*it)[2]), 102.0) << it->str();  // at most 100 + 8% / 4
  }
  EXPECT_EQ(percent_panels, 2);  // train and test
  // Per group: the lines shifted sideways by 1.4%, one of two lines (all, first).
  const std::string groups = test::slurp(dir_ / "exp/figures/accuracy-groups.gp");
  EXPECT_THAT(groups, ContainsRegex("\n0\\.197[0-9]* 85 80 90\n1\\.97[0-9]* 50 40 60\n"));
  EXPECT_THAT(groups, HasSubstr("learned, normal std: first"));
  const std::string md = test::slurp(dir_ / "exp/report.md");
  EXPECT_THAT(md, HasSubstr("gnuplot was not found"));
  EXPECT_THAT(md, HasSubstr("| learned, normal std=0.2 | 0.2 | 2 | 95.0 ± 5.0 | 85.0 ± 5.0 |"));
  // Cost: parameters, threads (each count the seeds ran with), steps/s and minutes of wall time.
  EXPECT_THAT(md, HasSubstr("| learned, normal std=2 | 2 | 100 | 1, 2 | 15.0 ± 5.0 | 1.5 ± 0.5 |"));
  // The sinusoidal point has one seed: its value without a standard error.
  EXPECT_THAT(md, HasSubstr("| sinusoidal_nd | - | 1 | 95.0 | 85.0 |"));
  EXPECT_THAT(md, HasSubstr("a note for the reader"));
  EXPECT_THAT(md, HasSubstr("seed-3: failed"));
  // Per seed: the evaluation split only (not train), a column per finished seed, - where a point
  // lacks that seed.
  EXPECT_THAT(md,
              HasSubstr("Accuracy (%), split `test`:\n\n| point | 1 | 2 |\n|---|---:|---:|\n"
                        "| learned, normal std=0.2 | 80.0 | 90.0 |\n"
                        "| learned, normal std=2 | 40.0 | 60.0 |\n| sinusoidal_nd | 85.0 | - |\n"));
  EXPECT_THAT(md, Not(HasSubstr("split `train`:")));
  EXPECT_THAT(test::slurp(dir_ / "exp/report.html"), HasSubstr("<table>"));
  // The probes' declared headlines, in the manifest's order, with their direction and meaning.
  EXPECT_THAT(md,
              HasSubstr("| point | init scale | custom zeta ↓ | rsa spearman ↑ | rsa p_value ↓ |"));
  EXPECT_THAT(md, HasSubstr("| learned, normal std=2 | 2 | 1.500 ± 0.500 | 0.200 ± 0.100 | - |"));
  EXPECT_THAT(md, HasSubstr("custom zeta: how far from the truth; rsa spearman: 1: mirrors"));
  const std::string probes = test::slurp(dir_ / "exp/figures/probes.gp");
  EXPECT_THAT(probes, HasSubstr("custom: zeta (lower is better)"));
  EXPECT_THAT(probes, HasSubstr("rsa: spearman (higher is better)"));
  EXPECT_LT(probes.find("custom: zeta"), probes.find("rsa: spearman"));
  EXPECT_THAT(probes, HasSubstr("set yrange [*:*]\n"));  // not a percentage: gnuplot's own range
}

// A run copied by `pelab run --reuse` is a run like any other, but its cost is its source's: the
// cost section says how many were copied.
// The report tests what it shows: std 2 against std 0.2 on the test accuracy, paired over the two
// seeds both hold (0.40 - 0.80 and 0.60 - 0.90: a mean of -35 points), which two seeds cannot
// resolve; comparisons.csv carries the same row.
TEST_F(ReportFolder, ComparesTheScalesOfASeriesPairedOnTheirSeeds) {
  report::ReportOptions options = tables_only();
  const report::ReportResult result = report::write_report(dir_ / "exp", &registry_, options);
  const std::string md = test::slurp(dir_ / "exp/report.md");
  EXPECT_THAT(md, HasSubstr("## Comparisons"));
  EXPECT_THAT(md, HasSubstr("| learned, normal std=2 | learned, normal std=0.2 | 2 | -35.0 "));
  EXPECT_THAT(md, HasSubstr("not resolved at n = 2"));
  EXPECT_THAT(md, HasSubstr("smallest attainable p 0.5"));
  EXPECT_THAT(result.comparisons_text, HasSubstr("test/all/accuracy: learned, normal std=2 - "
                                                 "learned, normal std=0.2: -35.0"));
  const std::string csv = test::slurp(dir_ / "exp/comparisons.csv");
  EXPECT_THAT(csv, HasSubstr("points,test/all/accuracy,\"learned, normal std=0.2\",\"learned, "
                             "normal std=2\",paired,2,-0.35"));
  // The probes' headline scalars are compared the same way (rsa's spearman: 0.10 - 0.85 and
  // 0.30 - 0.95, a mean of -0.70); a p-value is not a quantity to compare.
  EXPECT_THAT(md, HasSubstr("Probe `rsa` spearman (higher is better), final PE:"));
  EXPECT_THAT(csv, HasSubstr("points,probe/rsa/spearman,\"learned, normal std=0.2\",\"learned, "
                             "normal std=2\",paired,2,-0.7"));
  EXPECT_THAT(csv, Not(HasSubstr("probe/rsa/p_value")));
}

// `pelab report --compare A B`: one comparison, on every metric and split and on the probes'
// headline scalars (rsa's spearman 2 - 0.2: -0.70, as the scale table has it), never on a
// p-value; a name that matches no point lists the points.
TEST_F(ReportFolder, OneComparisonAskedForByNameCoversTheProbes) {
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  const auto tables = report::compare_named(experiment, report::headline_metrics(experiment),
                                            {{"learned, normal std=0.2", "pe.init.std=2"}});
  std::map<std::string, double> difference;
  for (const auto& table : tables)
    difference[table.metric] = table.rows.front().comparison.difference;
  EXPECT_NEAR(difference.at("test/all/accuracy"), -0.35, 1e-12);
  EXPECT_NEAR(difference.at("probe/rsa/spearman"), -0.70, 1e-12);
  EXPECT_EQ(difference.count("probe/rsa/p_value"), 0u);
  try {
    report::compare_named(experiment, report::headline_metrics(experiment),
                          {{"learned, normal std=9", "pe.init.std=2"}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no point named 'learned, normal std=9'"));
    EXPECT_THAT(e.what(), HasSubstr("'learned, normal std=0.2' (pe.init.std=0.2)"));
  }
}

// Comparisons asked for together are one family: Holm over them, on each metric. Alone, 2 - 0.2 on
// the test accuracy is -0.35 with p = 0.5 (two seeds); beside its reverse (+0.35, p = 0.5), Holm
// makes both min(1, 2 x 0.5) = 1.
TEST_F(ReportFolder, ComparisonsAskedForTogetherAreHolmAdjustedTogether) {
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  const auto metrics = report::headline_metrics(experiment);
  auto accuracy = [](const std::vector<report::ComparisonTable>& tables) {
    for (const auto& table : tables)
      if (table.metric == "test/all/accuracy") return table;
    throw std::runtime_error("no test/all/accuracy table");
  };
  const auto alone =
      accuracy(report::compare_named(experiment, metrics, {{"pe.init.std=0.2", "pe.init.std=2"}}));
  ASSERT_EQ(alone.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(alone.rows[0].comparison.p_holm, 0.5);
  const auto both =
      accuracy(report::compare_named(experiment, metrics,
                                     {{"pe.init.std=0.2", "pe.init.std=2"},
                                      {"learned, normal std=2", "learned, normal std=0.2"}}));
  ASSERT_EQ(both.rows.size(), 2u);
  EXPECT_NEAR(both.rows[0].comparison.difference, -0.35, 1e-12);
  EXPECT_NEAR(both.rows[1].comparison.difference, +0.35, 1e-12);
  for (const auto& row : both.rows) {
    EXPECT_DOUBLE_EQ(row.comparison.p, 0.5);
    EXPECT_DOUBLE_EQ(row.comparison.p_holm, 1.0);
  }
  // The same comparison twice, by label and by folder name, would count twice in the family.
  EXPECT_THROW(report::compare_named(experiment, metrics,
                                     {{"pe.init.std=0.2", "pe.init.std=2"},
                                      {"learned, normal std=0.2", "learned, normal std=2"}}),
               Error);
}

// Two points whose seeds differ are compared unpaired, and say so with each one's count: their
// sum (5) would read as more seeds than either point has.
TEST_F(ReportFolder, AnUnpairedComparisonCountsEachPointsSeeds) {
  write_run("pe.init.std=0.2", 3, learned(0.2), 0.95, 0.85, 0.90);
  report::ReportOptions options = tables_only();
  const report::ReportResult result = report::write_report(dir_ / "exp", &registry_, options);
  const std::string md = test::slurp(dir_ / "exp/report.md");
  EXPECT_THAT(md, HasSubstr("| learned, normal std=2 | learned, normal std=0.2 | 2 + 3 | -35.0 "));
  EXPECT_THAT(md, HasSubstr("not resolved at n = 2 + 3, unpaired"));
  EXPECT_THAT(result.comparisons_text, HasSubstr("not resolved at n = 2 + 3, unpaired"));
  EXPECT_THAT(result.comparisons_text, Not(HasSubstr("n = 5")));
  // comparisons.csv: n (both together) and each point's seeds, B's first.
  EXPECT_THAT(test::slurp(dir_ / "exp/comparisons.csv"),
              ContainsRegex("points,test/all/accuracy,\"learned, normal std=0.2\",\"learned, "
                            "normal std=2\",unpaired,5,[^\n]*,2,3\n"));
}

// --reference-scale: every scale of a series against the one asked for (here the large-norm
// start, so 0.2 - 2 on the same seeds: +35.0 points); a series without it keeps its smallest.
TEST_F(ReportFolder, EveryScaleIsComparedWithTheReferenceScaleAskedFor) {
  report::ReportOptions options = tables_only();
  options.reference_scale = 2.0;
  report::write_report(dir_ / "exp", &registry_, options);
  std::string md = test::slurp(dir_ / "exp/report.md");
  EXPECT_THAT(md, HasSubstr("against the series' init scale 2 (--reference-scale"));
  EXPECT_THAT(md, HasSubstr("| learned, normal std=0.2 | learned, normal std=2 | 2 | +35.0 "));
  EXPECT_THAT(md, Not(HasSubstr("| learned, normal std=2 | learned, normal std=0.2 |")));
  options.reference_scale = 7.0;
  report::write_report(dir_ / "exp", &registry_, options);
  md = test::slurp(dir_ / "exp/report.md");
  EXPECT_THAT(md, HasSubstr("| learned, normal std=2 | learned, normal std=0.2 | 2 | -35.0 "));
}

// A probe's p-values are combined over seeds (Fisher's method), never averaged: 0.01 and 0.2 give
// 0.0144 (scipy.stats.combine_pvalues), one of the two below 0.05.
TEST(ReportProbePValues, AreCombinedByFishersMethod) {
  report::Point point;
  for (const auto& [seed, p] : std::vector<std::pair<int, double>>{{1, 0.01}, {2, 0.2}}) {
    report::RunRecord run;
    run.seed = seed;
    run.values["probe/rsa/p_value"] = p;
    point.runs.push_back(run);
  }
  EXPECT_TRUE(report::is_p_value("probe/rsa/p_value"));
  EXPECT_TRUE(report::is_p_value("probe/connectivity/partial_p_value_block1"));
  EXPECT_FALSE(report::is_p_value("probe/rsa/spearman"));
  EXPECT_EQ(report::combined_p_text(point, "probe/rsa/p_value"), "Fisher 0.0144 (1 of 2 < 0.05)");
}

// A p-value that no probe names as a headline (a partial test's) is combined over seeds too, in
// its own table and in results.csv, never left for a reader to average.
TEST_F(ReportFolder, EveryProbePValueIsCombinedOverSeeds) {
  for (const auto& [seed, p] : std::vector<std::pair<int, std::string>>{{1, "0.01"}, {2, "0.2"}}) {
    const std::string summary = dir_ / fmt::format("exp/pe.init.std=2/seed-{}/summary.json", seed);
    std::string text = test::slurp(summary);
    const std::string custom = "\"custom\": {";
    text.insert(text.find(custom) + custom.size(), fmt::format("\"partial_p_value\": {}, ", p));
    std::ofstream(summary) << text;
  }
  report::write_report(dir_ / "exp", &registry_, tables_only());
  const std::string md = test::slurp(dir_ / "exp/report.md");
  EXPECT_THAT(md, HasSubstr("| point | custom partial_p_value | rsa p_value |"));
  EXPECT_THAT(md, HasSubstr("| learned, normal std=2 | Fisher 0.0144 (1 of 2 < 0.05) | - |"));
  EXPECT_THAT(md, HasSubstr("| learned, normal std=0.2 | - | - |"));
  const std::string csv = test::slurp(dir_ / "exp/results.csv");
  EXPECT_THAT(csv, ContainsRegex("\npe\\.init\\.std=2,probe/custom/partial_p_value,0\\.105[0-9]*,"
                                 "[0-9.e-]+,2,\"learned, normal std\",2,0\\.0144[0-9]*,1\n"));
  EXPECT_THAT(csv, ContainsRegex("\npe\\.init\\.std=2,test/all/accuracy,[^\n]*,2,,\n"));
}

// `pelab report .` in an experiment's folder: Boost's create_directories(".") fails ("Invalid
// argument": it recurses to the empty parent) although the folder exists.
TEST_F(ReportFolder, TheCurrentFolderIsReported) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_ / "exp");
  try {
    report::write_report(".", &registry_, tables_only());
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  fs::current_path(before);
  EXPECT_THAT(test::slurp(dir_ / "exp/report.md"), HasSubstr("| learned, normal std=2 |"));
}

TEST_F(ReportFolder, TheCostSectionCountsTheCopiedRuns) {
  report::ReportOptions options = tables_only();
  report::write_report(dir_ / "exp", &registry_, options);
  EXPECT_THAT(test::slurp(dir_ / "exp/report.md"), Not(HasSubstr("copied from")));
  const std::string summary = dir_ / "exp/pe.init.std=2/seed-1/summary.json";
  std::string text = test::slurp(summary);
  text.insert(1, "\"reused_from\": \"runs/other/pe.init.std=2/seed-1\", ");
  std::ofstream(summary) << text;
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  EXPECT_EQ(experiment.points[1].runs[0].reused_from, "runs/other/pe.init.std=2/seed-1");
  report::write_report(dir_ / "exp", &registry_, options);
  EXPECT_THAT(test::slurp(dir_ / "exp/report.md"),
              HasSubstr("1 of the 5 runs were not trained here but copied from a finished run"));
}

// The plugins' versions that made the runs are listed; two versions of one plugin are said first.
TEST_F(ReportFolder, TheCostSectionNamesThePluginVersions) {
  report::ReportOptions options = tables_only();
  report::write_report(dir_ / "exp", &registry_, options);
  EXPECT_THAT(test::slurp(dir_ / "exp/report.md"), Not(HasSubstr("Plugins, at the version")));
  std::vector<std::string> summaries;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "exp")) {
    if (entry.path().filename() == "summary.json" &&
        test::slurp(entry.path().string()).find("finished") != std::string::npos)
      summaries.push_back(entry.path().string());
  }
  std::sort(summaries.begin(), summaries.end());
  ASSERT_EQ(summaries.size(), 5u);
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    std::string text = test::slurp(summaries[i]);
    text.insert(1,
                fmt::format("\"plugins\": {{\"pe/learned\": \"1.0.0\", \"init/normal\": \"{}\"}}, ",
                            i == 0 ? "0.9.0" : "1.0.0"));
    std::ofstream(summaries[i]) << text;
  }
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  EXPECT_EQ(experiment.points[0].runs[0].plugins.at("pe/learned"), "1.0.0");
  report::write_report(dir_ / "exp", &registry_, options);
  const std::string markdown = test::slurp(dir_ / "exp/report.md");
  EXPECT_THAT(markdown, HasSubstr("**Runs made by different versions of a plugin**, which may "
                                  "compute otherwise: init/normal 0.9.0 (1 run), 1.0.0 (4 runs)."));
  EXPECT_THAT(markdown, HasSubstr("records: pe/learned 1.0.0."));
}

// The init scale is whatever parameter the initializer's schema marks, whatever its name; an
// initializer without one (uniform) and a PE without an initializer form no series.
TEST_F(ReportFolder, TheInitScaleIsTheParameterTheSchemaMarks) {
  write_run("pe.init.gain=3", 1,
            "[pe]\nplugin = \"learned\"\ninit = { plugin = \"orthogonal\", gain = 3.0 }\n", 0.5,
            0.5, 0.5);
  write_run("pe.init=uniform", 1,
            "[pe]\nplugin = \"learned\"\ninit = { plugin = \"uniform\", a = 0.0, b = 0.5 }\n", 0.5,
            0.5, 0.5);
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  auto point = [&](const std::string& name) {
    for (const auto& p : experiment.points) {
      if (p.point == name) return p;
    }
    ADD_FAILURE() << "no point " << name;
    return report::Point{};
  };
  EXPECT_EQ(point("pe.init.gain=3").init_scale, 3.0);
  EXPECT_EQ(point("pe.init.gain=3").scale_key, "pe.init.gain");
  EXPECT_EQ(point("pe.init.gain=3").label, "learned, orthogonal gain=3");
  EXPECT_FALSE(point("pe.init=uniform").init_scale.has_value());
  EXPECT_EQ(point("pe.init=uniform").label, "learned, uniform");
  EXPECT_TRUE(experiment.warnings.empty());
  // Without the plugins' schemas there is no scale to read.
  EXPECT_FALSE(report::collect(dir_ / "exp").points[0].init_scale.has_value());
}

// A PE with several marked scales (liere: its positions' and its generators') forms its series
// over the one the sweep varies, though the positions' comes first in its schema.
TEST_F(ReportFolder, TheInitScaleIsTheOneTheSweepVaries) {
  const auto liere = [](double generators_std) {
    return fmt::format(
        "[pe]\nplugin = \"liere\"\npositions = \"learned\"\nblock_size = 2\n"
        "positions_init = {{ plugin = \"normal\", std = 0.2, mean = 0.0 }}\ngenerators = "
        "\"init\"\ngenerators_init = {{ plugin = \"normal\", std = {}, mean = 0.0 }}\n",
        format_number(generators_std));
  };
  for (double std : {0.05, 2.0}) {
    for (int seed : {1, 2})
      write_run(fmt::format("pe.generators_init.std={}", format_number(std)), seed, liere(std), 0.5,
                0.5, 0.5, "gen");
  }
  const report::Experiment experiment = report::collect(dir_ / "gen", &registry_);
  ASSERT_EQ(experiment.points.size(), 2u);
  EXPECT_EQ(experiment.points[0].scale_key, "pe.generators_init.std");
  EXPECT_EQ(experiment.points[0].init_scale, 0.05);
  EXPECT_EQ(experiment.points[1].init_scale, 2.0);
  EXPECT_EQ(experiment.points[0].series, "liere, generators_init normal std");
  EXPECT_EQ(experiment.points[0].label, "liere, generators_init normal std=0.05");
  // Neither varies: the first marked, as before.
  write_run("one", 1, liere(1.0), 0.5, 0.5, 0.5, "fixed");
  EXPECT_EQ(report::collect(dir_ / "fixed", &registry_).points[0].scale_key,
            "pe.positions_init.std");
}

// A point without a scale far off the curves (NoPE's accuracy far below the learned PEs') is
// named off scale and marked by an arrow, and the axis stays the curves'.
TEST_F(ReportFolder, ALineFarOffTheCurvesIsMarkedOffScale) {
  write_run("pe.init.std=0.2", 1, learned(0.2), 1.0, 0.80, 0.5, "off");
  write_run("pe.init.std=0.2", 2, learned(0.2), 1.0, 0.81, 0.5, "off");
  write_run("pe.init.std=2", 1, learned(2.0), 1.0, 0.78, 0.5, "off");
  write_run("pe.init.std=2", 2, learned(2.0), 1.0, 0.79, 0.5, "off");
  write_run("pe=none", 1, "[pe]\nplugin = \"none\"\n", 1.0, 0.30, 0.5, "off");
  report::ReportOptions options = tables_only();
  report::write_report(dir_ / "off", &registry_, options);
  const std::string script = test::slurp(dir_ / "off/figures/accuracy.gp");
  EXPECT_THAT(script, HasSubstr("none (30 [30, 30], off scale below)"));
  EXPECT_THAT(script, HasSubstr("set arrow 100 from graph 0.03, graph 0.14 to graph 0.03, graph "
                                "0.01"));
  // The test panel's axis: the curves' 78 to 81, not down to 30.
  EXPECT_THAT(script, ContainsRegex("set title 'test'\n(.*\n)*set yrange \\[7[0-9.]*:"));
  EXPECT_THAT(script, HasSubstr("unset arrow\n"));
}

// Keys that split a series are named in its labels, numbers as they were written.
TEST_F(ReportFolder, LabelsNameTheKeysThatDifferWithTheirShortestDecimals) {
  write_run("pe=sinusoidal-small", 1,
            "[pe]\nplugin = \"sinusoidal_nd\"\nbase = 10000.0\nscale = 0.1\n"
            "use_hidden_coordinates = true\n",
            0.5, 0.5, 0.5);
  std::vector<std::string> labels;
  for (const auto& point : report::collect(dir_ / "exp", &registry_).points)
    labels.push_back(point.label);
  EXPECT_THAT(labels, Contains("sinusoidal_nd, pe.scale=0.1"));
  EXPECT_THAT(labels, Contains("sinusoidal_nd, pe.scale=1"));
}

// A series that departs from what most points of the experiment have, outside its PE, says so.
TEST_F(ReportFolder, LabelsNameWhereASeriesDepartsFromTheRestOfItsExperiment) {
  write_run("pe=none", 1, "[pe]\nplugin = \"none\"\n", 0.5, 0.5, 0.5, "exp",
            "pe_dropout = 0.1\nnorm = \"pre\"\n");
  // It evaluates on a split of its own too (dropout active): a column of the report.
  std::ofstream(dir_ / "exp/pe=none/seed-1/metrics.csv", std::ios::app)
      << "2,test_dropout,all,accuracy,0.4\n";
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  std::vector<std::string> labels;
  for (const auto& point : experiment.points)
    labels.push_back(point.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"learned, normal std=0.2", "learned, normal std=2",
                                              "none, model.norm=pre, model.pe_dropout=0.1",
                                              "sinusoidal_nd"}));
  EXPECT_EQ(experiment.splits, (std::vector<std::string>{"train", "test", "test_dropout"}));
}

TEST_F(ReportFolder, AnInitializerThatCannotBeLoadedIsAWarningNotAScale) {
  write_run("pe.init.b=1", 1,
            "[pe]\nplugin = \"learned\"\ninit = { plugin = \"laplace_elsewhere\", b = 1.0 }\n", 0.5,
            0.5, 0.5);
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  ASSERT_EQ(experiment.warnings.size(), 1u);
  EXPECT_THAT(experiment.warnings[0], HasSubstr("'laplace_elsewhere' could not be loaded"));
}

TEST_F(ReportFolder, GnuplotDrawsPngsEmbeddedInTheHtml) {
  if (std::system("gnuplot --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  const report::ReportResult result = report::write_report(dir_ / "exp", &registry_);
  EXPECT_TRUE(result.figures_drawn) << (result.warnings.empty() ? "" : result.warnings[0]);
  for (const char* png :
       {"accuracy.png", "probes.png", "similarity-3.png", "pca-2.png", "curves.png"}) {
    const std::string bytes = test::slurp(dir_ / ("exp/figures/" + std::string(png)));
    EXPECT_EQ(bytes.substr(0, 4), "\x89PNG") << png;
  }
  const std::string html = test::slurp(dir_ / "exp/report.html");
  EXPECT_THAT(html,
              HasSubstr("<img alt=\"figures/accuracy.png\" src=\"data:image/png;base64,iVBOR"));
  EXPECT_THAT(html, Not(HasSubstr("was not drawn")));
  EXPECT_THAT(test::slurp(dir_ / "exp/report.md"),
              HasSubstr("![figures/probes.png](figures/probes.png)"));
}

// Two probes of one plugin (rsa with its default metric and with metric = "euclidean") are told
// apart by what differs in their settings, in the probes figure's panel titles.
TEST_F(ReportFolder, TwoProbesOfOnePluginAreNamedByTheirSettings) {
  const std::string second_rsa = "[[probe]]\nplugin = \"rsa\"\nmetric = \"euclidean\"\n\n";
  for (const double std : {0.2, 2.0}) {
    for (const int seed : {1, 2})
      write_run(fmt::format("pe.init.std={}", format_number(std)), seed, second_rsa + learned(std),
                1.0, 0.5, 0.5, "twice");
  }
  const report::Experiment experiment = report::collect(dir_ / "twice", &registry_);
  EXPECT_EQ(report::probe_title(experiment, "rsa"), "rsa (metric = (default))");
  EXPECT_EQ(report::probe_title(experiment, "rsa_2"), "rsa_2 (metric = euclidean)");
  EXPECT_EQ(report::probe_title(experiment, "custom"), "custom");
  std::string probes_script;
  for (const report::Figure& figure : report::make_figures(experiment, report::Geometry{}))
    if (figure.name == "probes") probes_script = figure.script;
  EXPECT_THAT(probes_script,
              HasSubstr("set title \"rsa: spearman (higher is better)\\n(metric = (default))\""));
}

// `--where`: one half of a sweep reported alone (here the runs at 2 heads of a heads x scale
// grid), its comparisons adjusted among that half's alone; numbers match as numbers (2.0 is 2);
// a filter that no run meets names the values its key takes; a malformed one says the form.
TEST_F(ReportFolder, WhereReportsTheRunsThatMeetItAlone) {
  for (const double std : {0.2, 2.0}) {
    for (const int heads : {1, 2}) {
      for (const int seed : {1, 2, 3}) {
        const double test = (std == 0.2 ? 0.9 : 0.5) - 0.05 * heads + 0.01 * seed;
        write_run(fmt::format("pe.init.std={},model.heads={}", format_number(std), heads), seed,
                  learned(std), 1.0, test, 0.5, "halves", fmt::format("heads = {}", heads));
      }
    }
  }
  const report::Experiment half =
      report::collect({dir_ / "halves"}, &registry_, {report::RunFilter::parse("model.heads=2.0")});
  ASSERT_EQ(half.points.size(), 2u);
  EXPECT_EQ(half.filtered_out, 6u);
  for (const auto& point : half.points) {
    EXPECT_THAT(point.point, HasSubstr("model.heads=2"));
    EXPECT_EQ(point.runs.size(), 3u);
  }
  // One comparison (std 2 against 0.2 at 2 heads), so Holm leaves its p as it is.
  report::ReportOptions options = tables_only();
  options.where = {report::RunFilter::parse("model.heads=2")};
  report::write_report({dir_ / "halves"}, dir_ / "half-report", &registry_, options);
  const std::string md = test::slurp(dir_ / "half-report/report.md");
  EXPECT_THAT(md, HasSubstr("Only the runs where `model.heads=2` (6 other finished run(s) left "
                            "out)"));
  EXPECT_THAT(md, Not(HasSubstr("model.heads=1")));
  // Test accuracy, 0.4 lower at every seed: p = 0.25 (the least at n = 3), and Holm's p the same,
  // where over both halves it would be 0.5.
  std::string accuracy_row;
  std::istringstream csv(test::slurp(dir_ / "half-report/comparisons.csv"));
  for (std::string line; std::getline(csv, line);) {
    EXPECT_THAT(line, Not(HasSubstr("model.heads=1")));
    if (line.rfind("points,test/all/accuracy,", 0) == 0) accuracy_row = line;
  }
  EXPECT_THAT(accuracy_row, HasSubstr(",paired,3,"));
  EXPECT_THAT(accuracy_row, HasSubstr(",0.25,0.25,0.25,exact,"));

  try {
    report::collect({dir_ / "halves"}, &registry_, {report::RunFilter::parse("model.heads=8")});
    FAIL() << "a filter no run meets";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--where model.heads=8: none of the 12 finished run(s)"));
    EXPECT_THAT(e.what(), HasSubstr("model.heads is 1, 2 there"));
  }
  EXPECT_THROW(report::RunFilter::parse("model.heads"), Error);
  EXPECT_THROW(report::RunFilter::parse("=2"), Error);
}

// `--where seed=...`: the run's own seed, one or a list (the quick protocol's three seeds of a
// 15-seed sweep), combined with a configuration key; a seed that is no integer is refused.
TEST_F(ReportFolder, WhereSeedKeepsTheSeedsListed) {
  for (const int seed : {1, 2, 3, 4}) {
    write_run("pe.init.std=0.2", seed, learned(0.2), 1.0, 0.9 - 0.01 * seed, 0.5, "seeds");
    write_run("pe.init.std=2", seed, learned(2.0), 1.0, 0.5, 0.5, "seeds");
  }
  const report::Experiment kept = report::collect(
      {dir_ / "seeds"}, &registry_,
      {report::RunFilter::parse("seed=1,3"), report::RunFilter::parse("pe.init.std=0.2")});
  ASSERT_EQ(kept.points.size(), 1u);
  EXPECT_EQ(kept.filtered_out, 6u);
  ASSERT_EQ(kept.points[0].runs.size(), 2u);
  EXPECT_EQ(kept.points[0].runs[0].seed, 1);
  EXPECT_EQ(kept.points[0].runs[1].seed, 3);
  EXPECT_NEAR(kept.points[0].stats.at("test/all/accuracy").mean, 0.88, 1e-12);
  try {
    report::collect({dir_ / "seeds"}, &registry_, {report::RunFilter::parse("seed=9")});
    FAIL() << "a seed no run has";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("seed is 1, 2, 3, 4 there"));
  }
  try {
    report::RunFilter::parse("seed=1,x");
    FAIL() << "a seed that is no integer";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'x' is not a seed"));
  }
  EXPECT_THROW(report::RunFilter::parse("seed=1,"), Error);
}

// A sweep over the init scale and another numeric axis (here the heads) is a phase diagram: the
// table a cell per (heads, scale), mean ± SEM (n), a blank cell where no run finished; the figure
// a heatmap drawn by gnuplot. A non-numeric axis only splits the diagrams (one per value).
TEST_F(ReportFolder, ASweepOverTheScaleAndANumericAxisIsAPhaseDiagram) {
  for (const double std : {0.2, 2.0}) {
    for (const int heads : {1, 2, 4}) {
      if (std == 2.0 && heads == 4) continue;  // an unfinished cell
      for (const int seed : {1, 2}) {
        const double test = (std == 0.2 ? 0.9 : 0.5) - 0.05 * heads + 0.01 * seed;
        write_run(fmt::format("pe.init.std={},model.heads={}", format_number(std), heads), seed,
                  learned(std), 1.0, test, 0.5, "grid", fmt::format("heads = {}", heads));
      }
    }
  }
  const report::Experiment experiment = report::collect(dir_ / "grid", &registry_);
  const std::vector<report::PhaseDiagram> diagrams = report::phase_diagrams(experiment);
  ASSERT_EQ(diagrams.size(), 1u);
  const report::PhaseDiagram& diagram = diagrams[0];
  EXPECT_EQ(diagram.family, "learned, normal std");
  EXPECT_EQ(diagram.scale_key, "pe.init.std");
  EXPECT_EQ(diagram.axis, "model.heads");
  EXPECT_EQ(diagram.slice, "");
  EXPECT_THAT(diagram.scales, ElementsAre(0.2, 2.0));
  EXPECT_THAT(diagram.values, ElementsAre(1.0, 2.0, 4.0));
  std::vector<std::string> header;
  const auto rows = report::phase_table(diagram, "test/all/accuracy", 100.0, "{:.1f}", &header);
  EXPECT_THAT(header, ElementsAre("model.heads \\ pe.init.std", "0.2", "2"));
  ASSERT_EQ(rows.size(), 3u);
  // heads 1 at std 0.2: test 0.86 and 0.87 -> 86.5 ± 0.5 over 2 seeds.
  EXPECT_THAT(rows[0], ElementsAre("1", "86.5 ± 0.5 (2)", "46.5 ± 0.5 (2)"));
  EXPECT_THAT(rows[2], ElementsAre("4", "71.5 ± 0.5 (2)", "-"));

  const report::ReportResult result = report::write_report(dir_ / "grid", &registry_);
  const std::string md = test::slurp(dir_ / "grid/report.md");
  EXPECT_THAT(md, HasSubstr("## Phase diagrams"));
  EXPECT_THAT(md, HasSubstr("learned, normal std: pe.init.std x model.heads, split `test`"));
  EXPECT_THAT(md, HasSubstr("| 2 | 81.5 ± 0.5 (2) | 41.5 ± 0.5 (2) |"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "grid/figures/phase-accuracy-1.gp"));
  // Each cell's mean and SEM on two lines (on one they overflowed into the next cell).
  const std::string script = test::slurp(dir_ / "grid/figures/phase-accuracy-1.gp");
  EXPECT_THAT(script, HasSubstr("0 1 \"81.5\" \"± 0.5\""));
  EXPECT_THAT(script, HasSubstr("using 1:2:4 with labels offset 0,-0.55"));
  if (std::system("gnuplot --version >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(result.figures_drawn) << (result.warnings.empty() ? "" : result.warnings[0]);
    EXPECT_EQ(test::slurp(dir_ / "grid/figures/phase-accuracy-1.png").substr(0, 4), "\x89PNG");
  }
}

// A sweep finished partly on a GPU (here the 4-head cells) is still one diagram: the device says
// where a cell trained, not what it is, so it neither splits the diagram nor becomes an axis; the
// title names the devices.
TEST_F(ReportFolder, APhaseDiagramWhoseCellsTrainedOnSeveralDevicesIsStillOneDiagram) {
  for (const double std : {0.2, 2.0}) {
    for (const int heads : {1, 4}) {
      for (const int seed : {1, 2}) {
        write_run(fmt::format("pe.init.std={},model.heads={}", format_number(std), heads), seed,
                  learned(std), 1.0, 0.5 + 0.1 * heads, 0.5, "mixed",
                  fmt::format("heads = {}", heads),
                  heads == 4 ? "device = \"cuda\"" : "device = \"cpu\"");
      }
    }
  }
  const report::Experiment experiment = report::collect(dir_ / "mixed", &registry_);
  ASSERT_EQ(experiment.points.size(), 4u);
  EXPECT_THAT(experiment.points[2].label, HasSubstr("train.device=cuda"));  // labels keep it
  const std::vector<report::PhaseDiagram> diagrams = report::phase_diagrams(experiment);
  ASSERT_EQ(diagrams.size(), 1u);
  EXPECT_EQ(diagrams[0].axis, "model.heads");
  EXPECT_EQ(diagrams[0].slice, "");
  EXPECT_EQ(diagrams[0].mixed, "train.device=cpu, cuda");
  EXPECT_EQ(diagrams[0].title(),
            "learned, normal std: pe.init.std x model.heads (cells trained on "
            "train.device=cpu, cuda)");
  std::vector<std::string> header;
  const auto rows = report::phase_table(diagrams[0], "test/all/accuracy", 100.0, "{:.1f}", &header);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_THAT(rows[1], ElementsAre("4", "90.0 ± 0.0 (2)", "90.0 ± 0.0 (2)"));
}

// Whether a run flushed subnormal floats is a host execution key, as its threads are: a point whose
// seeds differ in it (one trained before the key existed, one resumed with it) is one cell, and
// no label or title names it.
TEST_F(ReportFolder, AHostExecutionKeyNeitherSplitsAPointNorADiagram) {
  for (const double std : {0.2, 2.0}) {
    for (const int heads : {1, 4}) {
      for (const int seed : {1, 2}) {
        const std::string flush = seed == 1 && heads == 4 ? "" : "flush_subnormals = true";
        write_run(fmt::format("pe.init.std={},model.heads={}", format_number(std), heads), seed,
                  learned(std), 1.0, 0.5 + 0.1 * heads, 0.5, "flushes",
                  fmt::format("heads = {}", heads), std == 2.0 ? flush : "");
      }
    }
  }
  const report::Experiment experiment = report::collect(dir_ / "flushes", &registry_);
  ASSERT_EQ(experiment.points.size(), 4u);
  for (const auto& point : experiment.points) {
    EXPECT_THAT(point.label, Not(HasSubstr("flush_subnormals"))) << point.label;
    EXPECT_EQ(point.runs.size(), 2u) << point.label;
  }
  const std::vector<report::PhaseDiagram> diagrams = report::phase_diagrams(experiment);
  ASSERT_EQ(diagrams.size(), 1u);
  EXPECT_EQ(diagrams[0].axis, "model.heads");
  EXPECT_EQ(diagrams[0].title(), "learned, normal std: pe.init.std x model.heads");
  std::vector<std::string> header;
  const auto rows = report::phase_table(diagrams[0], "test/all/accuracy", 100.0, "{:.1f}", &header);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_THAT(rows[1], ElementsAre("4", "90.0 ± 0.0 (2)", "90.0 ± 0.0 (2)"));
}

// A run written before a plugin gained a key, beside runs written after that spell the key out at
// its default, is of the same configuration: the report tells no points apart by the key, nor by a
// probe's keys (probes run on the trained model).
TEST_F(ReportFolder, AKeyAddedSinceARunWasWrittenTellsNoPointsApart) {
  for (const double std : {0.2, 2.0}) {
    for (const int seed : {1, 2}) {
      const std::string point = fmt::format("pe.init.std={}", format_number(std));
      write_run(point, seed, learned(std), 1.0, 0.5 + std / 10, 0.5, "upgraded");
      const bool newer = std == 2.0;  // written by a pelab that spells the new keys out
      std::ofstream(dir_ / ("upgraded/" + point + "/seed-" + std::to_string(seed) + "/config.toml"))
          << fmt::format(
                 "[experiment]\nname = \"upgraded\"\nseeds = [{}]\npoint = \"{}\"\n\n[task]\n"
                 "plugin = \"marker_position\"\ntokens = 4\n\n[model]\nlayers = 2\nd_model = "
                 "4\n{}\n[train]\nepochs = 2\n\n[[probe]]\nplugin = \"rsa\"\n{}\n",
                 seed, point, newer ? "mlp_ratio = 4\n" : "", newer ? "metric = \"cosine\"\n" : "")
          << learned(std);
    }
  }
  const report::Experiment experiment = report::collect(dir_ / "upgraded", &registry_);
  ASSERT_EQ(experiment.points.size(), 2u);
  EXPECT_EQ(experiment.points[0].series, experiment.points[1].series);
  for (const auto& point : experiment.points) {
    EXPECT_THAT(point.label, Not(HasSubstr("mlp_ratio"))) << point.label;
    EXPECT_THAT(point.label, Not(HasSubstr("probe"))) << point.label;
  }
  // One series, so the larger scale is compared with the smaller on the seeds both hold.
  const report::Inference inference =
      report::infer(experiment, {{"accuracy", "Accuracy", "accuracy", 100.0, "{:.1f}"}});
  ASSERT_FALSE(inference.tables.empty());
  EXPECT_EQ(inference.tables[0].rows.size(), 1u);
}

// The series of a family follow their other axis as numbers: heads 4 before 16, though the
// folders sort "16" first.
TEST_F(ReportFolder, SeriesFollowTheirNumericAxisInNumericOrder) {
  for (const int heads : {16, 4}) {
    for (const double std : {2.0, 0.2}) {
      write_run(fmt::format("pe.init.std={},model.heads={}", format_number(std), heads), 1,
                learned(std), 1.0, 0.5, 0.5, "order", fmt::format("heads = {}", heads));
    }
  }
  const report::Experiment experiment = report::collect(dir_ / "order", &registry_);
  std::vector<std::string> points;
  for (const auto& point : experiment.points)
    points.push_back(point.point);
  EXPECT_THAT(points,
              ElementsAre("pe.init.std=0.2,model.heads=4", "pe.init.std=2,model.heads=4",
                          "pe.init.std=0.2,model.heads=16", "pe.init.std=2,model.heads=16"));
}

// On a task with communities and a layout of two axes: the similarity heatmaps order the tokens
// by community with the boundaries drawn; the embedding aligns each block's PE onto the true
// layout by orthogonal Procrustes, so a PE that is a rotated, scaled copy of the layout is at
// alignment error 0.
TEST_F(ReportFolder, FiguresOrderTokensByCommunityAndAlignThePeOntoTheLayout) {
  report::Geometry geometry;
  geometry.coordinates =
      torch::tensor({0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0}, torch::kFloat64).view({4, 2});
  geometry.axis_names = {"x", "y"};
  geometry.communities = torch::tensor({1, 0, 1, 0}, torch::kInt64);
  // The first seed of the point std=0.2: its final PE, block 0, the layout rotated and scaled.
  const torch::Tensor padded = torch::cat({geometry.coordinates, torch::zeros({4, 2})}, 1);
  const torch::Tensor turned = std::get<0>(torch::linalg_qr(torch::randn({4, 4}, torch::kFloat64)));
  write_npy(dir_ / "exp/pe.init.std=0.2/seed-1/pe/tables-epoch-000002.npy",
            torch::stack({padded.matmul(turned) * 3.0, torch::randn({4, 4}, torch::kFloat64)})
                .to(torch::kFloat32));
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  std::map<std::string, std::string> scripts;
  for (const report::Figure& figure : report::make_figures(experiment, geometry))
    scripts[figure.name] = figure.script;
  // Points in scale order: std=0.2 is the first.
  ASSERT_TRUE(scripts.count("similarity-1"));
  EXPECT_THAT(scripts["similarity-1"], HasSubstr("set xlabel 'token, by community'"));
  EXPECT_THAT(scripts["similarity-1"],
              HasSubstr("set arrow from 1.5,-0.5 to 1.5,3.5 nohead front lc rgb 'white'"));
  ASSERT_TRUE(scripts.count("embedding-1"));
  EXPECT_FALSE(scripts.count("pca-1"));
  EXPECT_THAT(scripts["embedding-1"], HasSubstr("set title 'true layout'"));
  EXPECT_THAT(scripts["embedding-1"], HasSubstr("set title 'block 0: alignment error 0.00'"));
  EXPECT_THAT(scripts["embedding-1"], Not(HasSubstr("set title 'block 1: alignment error 0.00'")));
}

// A rotary PE has no table: its learned positions (the parameter snapshot) are drawn instead,
// mapped onto the layout by least squares, since they are identifiable only up to a linear map;
// a sheared copy of the layout is at alignment error 0.
TEST_F(ReportFolder, LearnedPositionsAreMappedLinearlyOntoTheLayout) {
  report::Geometry geometry;
  geometry.coordinates =
      torch::tensor({0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0}, torch::kFloat64).view({4, 2});
  geometry.axis_names = {"x", "y"};
  const std::string run = dir_ / "exp/pe.init.std=0.2/seed-1/pe";
  fs::remove(run + "/tables-epoch-000000.npy");
  fs::remove(run + "/tables-epoch-000002.npy");
  write_npy(run + "/kernels-epoch-000002.npy", torch::eye(4).expand({2, 4, 4}).contiguous());
  const torch::Tensor shear = torch::tensor({2.0, 1.5, 0.0, 0.5}, torch::kFloat64).view({2, 2});
  write_npy(run + "/param-positions-epoch-000002.npy",
            torch::stack(
                {geometry.coordinates.matmul(shear) + 1.0, torch::randn({4, 2}, torch::kFloat64)})
                .to(torch::kFloat32));
  const report::Experiment experiment = report::collect(dir_ / "exp", &registry_);
  std::map<std::string, std::string> scripts;
  for (const report::Figure& figure : report::make_figures(experiment, geometry))
    scripts[figure.name] = figure.script;
  ASSERT_TRUE(scripts.count("embedding-1"));
  EXPECT_THAT(scripts["embedding-1"], HasSubstr("mapped linearly onto the true layout"));
  EXPECT_THAT(scripts["embedding-1"], HasSubstr("set title 'block 0: alignment error 0.00'"));
}

TEST_F(ReportFolder, OneRunFolder) {
  report::ReportOptions options = tables_only();
  const report::ReportResult result =
      report::write_report(dir_ / "exp/pe.init.std=0.2/seed-1", nullptr, options);
  EXPECT_EQ(result.runs, 1u);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "exp/pe.init.std=0.2/seed-1/results.csv"));
}

// Two experiments side by side: each keeps its own points and series, named for it, so that no
// curve joins points of two experiments; the report goes to its own folder.
TEST_F(ReportFolder, SeveralExperimentsSideBySide) {
  write_run("pe.init.std=0.2", 1, learned(0.2), 1.00, 0.70, 0.5, "other");
  write_run("pe.init.std=0.2", 2, learned(0.2), 1.00, 0.50, 0.5, "other");
  const report::Experiment experiment = report::collect({dir_ / "exp", dir_ / "other"}, &registry_);
  EXPECT_EQ(experiment.name, "exp + other");
  std::vector<std::string> points, labels, series;
  for (const auto& point : experiment.points) {
    points.push_back(point.point);
    labels.push_back(point.label);
    series.push_back(point.series);
  }
  EXPECT_EQ(points, (std::vector<std::string>{"exp/pe.init.std=0.2", "exp/pe.init.std=2",
                                              "other/pe.init.std=0.2", "exp/pe=sinusoidal"}));
  EXPECT_EQ(labels[2], "other: learned, normal std=0.2");
  EXPECT_EQ(labels[3], "exp: sinusoidal_nd");
  EXPECT_EQ(series[0], series[1]);
  EXPECT_NE(series[0], series[2]);
  const report::Statistic& test = experiment.points[2].stats.at("test/all/accuracy");
  EXPECT_EQ(test.n, 2u);
  EXPECT_DOUBLE_EQ(test.mean, 0.6);

  report::ReportOptions options = tables_only();
  const report::ReportResult result = report::write_report(
      {dir_ / "exp", dir_ / "other"}, dir_ / "both/report", &registry_, options);
  EXPECT_EQ(result.runs, 7u);
  EXPECT_EQ(result.points, 4u);
  const std::string md = test::slurp(dir_ / "both/report/report.md");
  EXPECT_THAT(md, HasSubstr("# exp + other: report"));
  EXPECT_THAT(
      md, HasSubstr("| other: learned, normal std=0.2 | 0.2 | 2 | 100.0 ± 0.0 | 60.0 ± 10.0 |"));
  // One line per experiment's series in the figure (shifted sideways apart): the two std=0.2
  // points are not joined.
  const std::string script = test::slurp(dir_ / "both/report/figures/accuracy.gp");
  EXPECT_THAT(script, ContainsRegex("\n0\\.197[0-9]* 85 80 90\n1\\.97[0-9]* 50 40 60\nEOD\n"));
  EXPECT_THAT(script, ContainsRegex("\n0\\.20[0-9]* 60 50 70\nEOD\n"));
  EXPECT_THAT(script, HasSubstr("title 'other: learned, normal std'"));
  EXPECT_FALSE(fs::exists(dir_ / "exp/report.md"));  // the runs' folders are only read
  EXPECT_FALSE(fs::exists(dir_ / "other/results.csv"));
}

// Experiments whose tasks evaluate different metrics (a classification beside a masked-token
// regression): each metric is compared where it exists, a figure has panels only for the splits
// that report it, and the report says which experiment lacks which metric. Five figure scripts
// once failed on empty panels and the report still exited 0.
TEST_F(ReportFolder, ExperimentsOfTwoTasksShareWhatTheyHave) {
  for (int seed : {1, 2}) {
    write_run("pe.init.std=0.2", seed, learned(0.2), 0.9, 0.5, 0.5, "regression");
    const std::string summary =
        dir_ / ("regression/pe.init.std=0.2/seed-" + std::to_string(seed) + "/summary.json");
    std::string text = test::slurp(summary);
    for (std::size_t at; (at = text.find("accuracy")) != std::string::npos;)
      text.replace(at, 8, "mse");
    std::ofstream(summary) << text;
  }
  report::ReportOptions options;
  const report::ReportResult result = report::write_report(
      {dir_ / "exp", dir_ / "regression"}, dir_ / "both/report", &registry_, options);
  EXPECT_EQ(result.figures_failed, 0u) << ::testing::PrintToString(result.warnings);
  const std::string md = test::slurp(dir_ / "both/report/report.md");
  EXPECT_THAT(md, HasSubstr("metric 'accuracy' is evaluated by exp and not by regression"));
  EXPECT_THAT(md, HasSubstr("metric 'mse' is evaluated by regression and not by exp"));
  const std::string curves = test::slurp(dir_ / "both/report/figures/curves.gp");
  EXPECT_THAT(curves, Not(HasSubstr("plot NaN")));
}

// The same experiment in two folders (a sweep whose shards ran on two machines) is one set of
// points; a seed both folders hold counts once.
TEST_F(ReportFolder, TheShardsOfOneSweepJoin) {
  write_run("pe.init.std=0.2", 3, learned(0.2), 0.80, 0.60, 0.5, "elsewhere/exp");
  write_run("pe.init.std=0.2", 1, learned(0.2), 0.10, 0.10, 0.1, "elsewhere/exp");
  const report::Experiment experiment =
      report::collect({dir_ / "exp", dir_ / "elsewhere/exp"}, &registry_);
  EXPECT_EQ(experiment.name, "exp");
  ASSERT_EQ(experiment.points.size(), 3u);
  EXPECT_EQ(experiment.points[0].point, "exp/pe.init.std=0.2");
  EXPECT_EQ(experiment.points[0].label, "learned, normal std=0.2");
  const report::Statistic& train = experiment.points[0].stats.at("train/all/accuracy");
  EXPECT_EQ(train.n, 3u);  // seeds 1 and 2 from exp, 3 from elsewhere
  EXPECT_NEAR(train.mean, (0.9 + 1.0 + 0.8) / 3, 1e-12);
  EXPECT_THAT(experiment.skipped, Contains(AllOf(HasSubstr("elsewhere/exp/pe.init.std=0.2/seed-1"),
                                                 HasSubstr("the same point and seed as"))));
}

TEST(Report, NoRunsIsAClearError) {
  test::ScratchDir empty;
  try {
    report::collect(empty.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("holds no runs"));
  }
}

}  // namespace
}  // namespace pelab
