// Manifests: every error names file:line:column and suggests a fix; --set overrides; sweeps;
// resolved configs that read back as themselves.

#include "pelab/config/manifest.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::builtin_registry;
using ::pelab::test::fixture_manifest;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A small valid manifest; tests append to it or override its keys.
const std::string kBase = R"([experiment]
name = "unit"
seeds = [1]

[task]
plugin = "marker_position"
tokens = 4
train_samples = 8
test_samples = 4

[model]
layers = 1
d_model = 8

[pe]
plugin = "learned"
init = { plugin = "normal", std = 0.2 }

[train]
epochs = 1
)";

// `text` with its first `from` replaced by `to`; `from` must occur.
std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' is not in the manifest";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

const std::string kInitLine = "init = { plugin = \"normal\", std = 0.2 }\n";

class ManifestTest : public ::testing::Test {
 protected:
  ManifestTest() : registry_(builtin_registry()) {}

  Manifest parse(const std::string& text, const std::vector<std::string>& overrides = {},
                 const std::string& name = "unit.toml") {
    return Manifest::from_string(text, name, registry_, overrides);
  }

  // The message of the Error that reading `text` throws.
  std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {},
                       const std::string& name = "unit.toml") {
    try {
      parse(text, overrides, name);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "the manifest was accepted:\n" << text;
    return "";
  }

  std::string file_error_of(const std::string& path,
                            const std::vector<std::string>& overrides = {}) {
    try {
      Manifest::from_file(path, registry_, overrides);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "the manifest was accepted: " << path;
    return "";
  }

  Registry registry_;
};

// --- Fixture manifests: exact positions -----------------------------------------------------

TEST_F(ManifestTest, MisspeltKeyNamesItsPositionAndTheRightKey) {
  const std::string path = fixture_manifest("misspelt_key.toml");
  const std::string message = file_error_of(path);
  EXPECT_THAT(message, StartsWith(path + ":10:29: unknown key 'sdt' in [pe.init]"));
  EXPECT_THAT(message, HasSubstr("did you mean 'std'?"));
  EXPECT_THAT(message, HasSubstr("Its keys are: std, mean."));
}

TEST_F(ManifestTest, WrongTypeNamesTheValue) {
  const std::string path = fixture_manifest("wrong_type.toml");
  const std::string message = file_error_of(path);
  EXPECT_THAT(message, StartsWith(path + ":7:10: 'layers' in [model] must be int in [1, 256]"));
  EXPECT_THAT(message, HasSubstr("got the string \"four\""));
}

TEST_F(ManifestTest, OutOfRangeNamesTheBound) {
  const std::string path = fixture_manifest("out_of_range.toml");
  const std::string message = file_error_of(path);
  EXPECT_THAT(message, StartsWith(path + ":10:9: 'std' in [pe.init]"));
  EXPECT_THAT(message, HasSubstr("the initializer plugin 'normal'"));
  EXPECT_THAT(message, HasSubstr("is -0.5, out of range: it must be float >= 0"));
}

TEST_F(ManifestTest, MissingPluginListsTheAvailableOnes) {
  const std::string path = fixture_manifest("missing_plugin.toml");
  const std::string message = file_error_of(path);
  EXPECT_THAT(message, StartsWith(path + ":5:1: [pe] needs `plugin = \"...\"`"));
  EXPECT_THAT(message, HasSubstr("positional encoding"));
  EXPECT_THAT(message, HasSubstr("learned"));
  EXPECT_THAT(message, HasSubstr("none"));
}

TEST_F(ManifestTest, UnknownPluginSuggestsTheClosest) {
  const std::string path = fixture_manifest("unknown_plugin.toml");
  const std::string message = file_error_of(path);
  EXPECT_THAT(message, StartsWith(path + ":6:12: no positional encoding plugin named 'lerned'"));
  EXPECT_THAT(message, HasSubstr("Did you mean learned?"));
}

TEST_F(ManifestTest, UnknownSectionSuggestsTheClosest) {
  const std::string path = fixture_manifest("unknown_section.toml");
  const std::string message = file_error_of(path);
  EXPECT_THAT(message, StartsWith(path + ":8:2: unknown section 'modle'"));
  EXPECT_THAT(message, HasSubstr("did you mean 'model'?"));
  EXPECT_THAT(message, HasSubstr("experiment, task, model, pe, train, probe, sweep"));
}

TEST_F(ManifestTest, InvalidTomlNamesWhereParsingStopped) {
  const std::string path = fixture_manifest("invalid.toml");
  const std::string message = file_error_of(path);
  EXPECT_THAT(message, StartsWith(path + ":4:10: invalid TOML: "));
}

TEST_F(ManifestTest, MissingFile) {
  const std::string message = file_error_of("/nonexistent/manifest.toml");
  EXPECT_THAT(message, HasSubstr("'/nonexistent/manifest.toml' does not exist"));
}

TEST_F(ManifestTest, ValidFileReadsFromDisk) {
  const std::string path =
      std::string(PELAB_SOURCE_DIR) + "/tasks/marker_position/experiments/smoke.toml";
  const Manifest manifest = Manifest::from_file(path, registry_);
  EXPECT_EQ(manifest.name(), "marker-smoke");
  EXPECT_EQ(manifest.source(), path);
  ASSERT_EQ(manifest.runs().size(), 1u);
  EXPECT_EQ(manifest.runs()[0].relative_dir(), "marker-smoke/default/seed-1");
}

// --- Inline manifests: types, ranges, choices -------------------------------------------------

TEST_F(ManifestTest, ResolvesEveryDefault) {
  const Manifest manifest = parse(kBase);
  ASSERT_EQ(manifest.runs().size(), 1u);
  const RunConfig& run = manifest.runs()[0];
  EXPECT_EQ(run.experiment, "unit");
  EXPECT_EQ(run.point, "");
  EXPECT_EQ(run.seed, 1);
  EXPECT_EQ(run.model.integer("layers"), 1);
  EXPECT_EQ(run.model.integer("heads"), 1);     // default
  EXPECT_EQ(run.model.string("norm"), "post");  // default
  EXPECT_EQ(run.train.string("optimizer"), "adamw");
  EXPECT_DOUBLE_EQ(run.train.real("lr"), 1e-4);
  EXPECT_EQ(run.task.name, "marker_position");
  EXPECT_EQ(run.task.params.integer("data_seed"), 0);
  EXPECT_EQ(run.pe.name, "learned");
  EXPECT_TRUE(run.probes.empty());
  // Every declared parameter has a value.
  for (const auto& spec : model_schema().specs())
    EXPECT_TRUE(run.model.has(spec.name));
  for (const auto& spec : train_schema().specs())
    EXPECT_TRUE(run.train.has(spec.name));
}

TEST_F(ManifestTest, RemembersWhereEachValueWasWritten) {
  const RunConfig run = parse(kBase).runs()[0];
  EXPECT_EQ(run.model.location("layers").str(), "unit.toml:12:10");
  EXPECT_EQ(run.model.location("d_model").str(), "unit.toml:13:11");
  EXPECT_EQ(run.model.location("heads").str(), "");  // a default
  EXPECT_EQ(run.pe.location.str(), "unit.toml:16:10");
  EXPECT_EQ(run.pe.params.plugin("init").params.location("std").str(), "unit.toml:17:35");
}

TEST_F(ManifestTest, IntegersAreAcceptedAsFloatsButNotTheOtherWay) {
  const RunConfig run = parse(kBase + "lr = 1\n").runs()[0];
  EXPECT_DOUBLE_EQ(run.train.real("lr"), 1.0);
  const std::string message = error_of(kBase + "batch_size = 2.0\n");
  EXPECT_THAT(message, StartsWith("unit.toml:21:14: 'batch_size' in [train] must be int >= 1"));
  EXPECT_THAT(message, HasSubstr("got the float 2"));
}

TEST_F(ManifestTest, DuplicateTableIsInvalidToml) {
  EXPECT_THAT(error_of(kBase + "[model]\n", {}, "x.toml"), StartsWith("x.toml:21:1: invalid TOML"));
}

TEST_F(ManifestTest, ChoiceSuggestsTheClosest) {
  const std::string choice = error_of(edit(kBase, "d_model = 8", "d_model = 8\nnorm = \"per\""));
  EXPECT_THAT(choice, StartsWith("unit.toml:14:8: 'norm' in [model] is \"per\", but it must be "
                                 "one of: post, pre"));
  EXPECT_THAT(choice, HasSubstr("did you mean \"pre\"?"));
}

TEST_F(ManifestTest, ListElementsAreCheckedOneByOne) {
  const std::string message = error_of(edit(kBase, "seeds = [1]", "seeds = [1, \"two\"]"));
  EXPECT_THAT(message, StartsWith("unit.toml:3:9: 'seeds' in [experiment] must be list of int"));
  EXPECT_THAT(message, HasSubstr("got the string \"two\" at index 1"));
}

TEST_F(ManifestTest, HeadsMustDivideDModel) {
  EXPECT_THAT(error_of(edit(kBase, "d_model = 8", "d_model = 10\nheads = 4")),
              StartsWith("unit.toml:14:9: heads (4) must divide d_model (10)"));
}

TEST_F(ManifestTest, PluginWithoutParametersSaysSo) {
  const std::string message =
      error_of(edit(kBase, "plugin = \"learned\"\n" + kInitLine, "plugin = \"none\"\nscale = 2\n"));
  EXPECT_THAT(message, StartsWith("unit.toml:17:1: unknown key 'scale' in [pe]"));
  EXPECT_THAT(message, HasSubstr("It takes no parameters."));
}

TEST_F(ManifestTest, MissingTaskSectionIsAnError) {
  // An unknown section is reported first; without it, the missing task.
  EXPECT_THAT(error_of(edit(kBase, "[task]", "[unused]")), HasSubstr("unknown section 'unused'"));
  const std::string no_task = R"([pe]
plugin = "none"
)";
  const std::string message = error_of(no_task);
  EXPECT_THAT(message, StartsWith("unit.toml: [task] needs `plugin = \"...\"`"));
  EXPECT_THAT(message, HasSubstr("marker_position"));
}

TEST_F(ManifestTest, ExperimentNameDefaultsToTheFileName) {
  const Manifest manifest =
      parse(edit(kBase, "name = \"unit\"\n", ""), {}, "some/folder/my_study.toml");
  EXPECT_EQ(manifest.name(), "my_study");
  EXPECT_EQ(manifest.runs()[0].relative_dir(), "my_study/default/seed-1");
  EXPECT_EQ(manifest.runs()[0].experiment_params.string("name"), "my_study");
}

TEST_F(ManifestTest, SeedsMustBeDistinctAndPresent) {
  EXPECT_THAT(error_of(edit(kBase, "seeds = [1]", "seeds = [1, 1]")),
              HasSubstr("two runs would share the folder 'unit/default/seed-1'"));
  EXPECT_THAT(error_of(edit(kBase, "seeds = [1]", "seeds = []")), HasSubstr("seeds is empty"));
}

// --- Nested plugins ---------------------------------------------------------------------------

TEST_F(ManifestTest, NestedPluginAsABareName) {
  const RunConfig run = parse(edit(kBase, kInitLine, "init = \"normal\"\n")).runs()[0];
  const PluginSpec& init = run.pe.params.plugin("init");
  EXPECT_EQ(init.kind, PluginKind::kInitializer);
  EXPECT_EQ(init.name, "normal");
  EXPECT_DOUBLE_EQ(init.params.real("std"), 1.0);  // the plugin's own default
  EXPECT_DOUBLE_EQ(init.params.real("mean"), 0.0);
  EXPECT_EQ(init.location.str(), "unit.toml:17:8");
}

TEST_F(ManifestTest, NestedPluginTableWithoutPluginKeyUsesTheDeclaredDefault) {
  const std::string text = edit(kBase, kInitLine, "") + "\n[pe.init]\nstd = 0.3\n";
  const RunConfig run = parse(text).runs()[0];
  const PluginSpec& init = run.pe.params.plugin("init");
  EXPECT_EQ(init.name, "normal");
  EXPECT_DOUBLE_EQ(init.params.real("std"), 0.3);
}

TEST_F(ManifestTest, NestedPluginLeftOutUsesTheDeclaredDefault) {
  const RunConfig run = parse(edit(kBase, kInitLine, "")).runs()[0];
  const PluginSpec& init = run.pe.params.plugin("init");
  EXPECT_EQ(init.name, "normal");
  EXPECT_DOUBLE_EQ(init.params.real("std"), 1.0);
}

// A nested plugin that the PE will not read (rope_mixed's positions_init unless positions =
// "learned") is refused where it is written, as a scalar key is; spelt out at its default, as a
// run's config.toml writes it, it passes.
TEST_F(ManifestTest, ANestedPluginTheConfigurationDoesNotReadIsRefused) {
  const auto rope_mixed = [&](const std::string& keys) {
    return edit(kBase, "plugin = \"learned\"\n" + kInitLine, "plugin = \"rope_mixed\"\n" + keys);
  };
  EXPECT_THAT(error_of(rope_mixed("positions_init = { plugin = \"normal\", std = 0.2 }\n")),
              HasSubstr("unit.toml:17:18: 'positions_init' in [pe] (the positional encoding "
                        "plugin 'rope_mixed') is set ({ plugin = \"normal\", mean = 0.0, std = 0.2 "
                        "}) but this configuration does not use it: it is read only when "
                        "positions = \"learned\""));
  EXPECT_THAT(error_of(rope_mixed("positions_init = \"uniform\"\n")),
              HasSubstr("'positions_init' in [pe]"));
  EXPECT_THAT(error_of(rope_mixed(""), {"pe.positions_init.std=0.2"}),
              HasSubstr("is read only when positions = \"learned\""));
  // Read, or at its default: accepted.
  EXPECT_NO_THROW(parse(rope_mixed(
      "positions = \"learned\"\npositions_init = { plugin = \"normal\", std = 0.2 }\n")));
  EXPECT_NO_THROW(
      parse(rope_mixed("positions_init = { plugin = \"normal\", std = 1.0, mean = 0.0 }\n")));
  EXPECT_NO_THROW(parse(rope_mixed("positions_init = \"normal\"\n")));
}

TEST_F(ManifestTest, NestedPluginOfTheWrongShape) {
  const std::string message = error_of(edit(kBase, kInitLine, "init = 3\n"));
  EXPECT_THAT(message, StartsWith("unit.toml:17:8: [pe.init] must give the initializer plugin"));
  EXPECT_THAT(message, HasSubstr("initializer plugin"));
  EXPECT_THAT(message, HasSubstr("got the integer 3"));

  EXPECT_THAT(error_of(edit(kBase, "plugin = \"normal\"", "plugin = 5")),
              StartsWith("unit.toml:17:19: 'plugin' in [pe.init] must be the name of"));
}

TEST_F(ManifestTest, UnknownNestedPluginSuggestsTheClosest) {
  const std::string message = error_of(edit(kBase, "\"normal\"", "\"nrmal\""));
  EXPECT_THAT(message, StartsWith("unit.toml:17:19: no initializer plugin named 'nrmal'"));
  EXPECT_THAT(message, HasSubstr("Did you mean normal?"));
}

TEST_F(ManifestTest, Probes) {
  const RunConfig run = parse(kBase + "\n[[probe]]\nplugin = \"pe_norm\"\n").runs()[0];
  ASSERT_EQ(run.probes.size(), 1u);
  EXPECT_EQ(run.probes[0].kind, PluginKind::kProbe);
  EXPECT_EQ(run.probes[0].name, "pe_norm");

  // A top-level `probe = ...` that is not an array of tables.
  EXPECT_THAT(error_of("probe = \"pe_norm\"\n" + kBase),
              StartsWith("unit.toml:1:9: probes are written as [[probe]] tables"));
  EXPECT_THAT(error_of(kBase + "\n[[probe]]\nevery = 2\n"),
              HasSubstr("[probe.0] needs `plugin = \"...\"`"));
}

// --- --set overrides ---------------------------------------------------------------------------

TEST_F(ManifestTest, OverrideValuesAreTOML) {
  const RunConfig run = parse(kBase, {"model.layers=3", "train.lr = 0.5", "pe.init.std=0.3",
                                      "experiment.seeds=[7]", "model.final_gelu=false"})
                            .runs()[0];
  EXPECT_EQ(run.model.integer("layers"), 3);
  EXPECT_DOUBLE_EQ(run.train.real("lr"), 0.5);
  EXPECT_DOUBLE_EQ(run.pe.params.plugin("init").params.real("std"), 0.3);
  EXPECT_EQ(run.seed, 7);
  EXPECT_FALSE(run.model.boolean("final_gelu"));
  EXPECT_EQ(run.model.location("layers").str(), "--set model.layers=3");
}

TEST_F(ManifestTest, OverrideAcceptsBareAndQuotedStrings) {
  EXPECT_EQ(parse(kBase, {"model.norm=pre"}).runs()[0].model.string("norm"), "pre");
  EXPECT_EQ(parse(kBase, {"model.norm=\"pre\""}).runs()[0].model.string("norm"), "pre");
  EXPECT_EQ(parse(kBase, {"pe.init=normal"}).runs()[0].pe.params.plugin("init").name, "normal");
}

TEST_F(ManifestTest, OverrideAddsKeysTheManifestLacks) {
  // No [model] table at all, and init given as a bare name: --set still reaches into both.
  const std::string text =
      edit(edit(kBase, "[model]\nlayers = 1\nd_model = 8\n", ""), kInitLine, "init = \"normal\"\n");
  const RunConfig run = parse(text, {"model.d_model=12", "pe.init.std=0.7"}).runs()[0];
  EXPECT_EQ(run.model.integer("d_model"), 12);
  EXPECT_DOUBLE_EQ(run.pe.params.plugin("init").params.real("std"), 0.7);
}

TEST_F(ManifestTest, OverrideErrorsNameTheOverride) {
  const std::string wrong = error_of(kBase, {"model.layers=three"});
  EXPECT_THAT(wrong, StartsWith("--set model.layers=three: 'layers' in [model] must be int"));
  EXPECT_THAT(wrong, HasSubstr("got the string \"three\""));

  const std::string misspelt = error_of(kBase, {"model.lyers=3"});
  EXPECT_THAT(misspelt, StartsWith("--set model.lyers=3: unknown key 'lyers' in [model]"));
  EXPECT_THAT(misspelt, HasSubstr("did you mean 'layers'?"));

  EXPECT_THAT(error_of(kBase, {"train.lr=-1"}),
              StartsWith("--set train.lr=-1: 'lr' in [train] is -1, out of range"));
  EXPECT_THAT(error_of(kBase, {"modle.layers=2"}),
              StartsWith("--set modle.layers=2: unknown section 'modle'"));
  EXPECT_THAT(error_of(kBase, {"layers"}), HasSubstr("expected key=value"));
  EXPECT_THAT(error_of(kBase, {"=3"}), HasSubstr("expected key=value"));
}

// --- Sweeps ------------------------------------------------------------------------------------

TEST_F(ManifestTest, SweepIsTheCartesianProductInManifestOrderSeedsInnermost) {
  // Not in alphabetical order: manifest order must win.
  const std::string text =
      edit(kBase, "seeds = [1]", "seeds = [1, 2]") +
      "\n[sweep]\n\"train.lr\" = [0.1, 0.01]\n\"pe.init.std\" = [0.1, 0.2, 0.3]\n";
  const Manifest manifest = parse(text);
  EXPECT_EQ(manifest.sweep_keys(), (std::vector<std::string>{"train.lr", "pe.init.std"}));
  ASSERT_EQ(manifest.runs().size(), 12u);
  EXPECT_EQ(manifest.points(), 6u);

  std::size_t i = 0;
  for (double lr : {0.1, 0.01}) {
    for (double std : {0.1, 0.2, 0.3}) {
      for (std::int64_t seed : {1, 2}) {
        const RunConfig& run = manifest.runs()[i++];
        SCOPED_TRACE(run.relative_dir());
        EXPECT_DOUBLE_EQ(run.train.real("lr"), lr);
        EXPECT_DOUBLE_EQ(run.pe.params.plugin("init").params.real("std"), std);
        EXPECT_EQ(run.seed, seed);
        EXPECT_EQ(run.point,
                  "train.lr=" + format_number(lr) + ",pe.init.std=" + format_number(std));
      }
    }
  }
  EXPECT_EQ(manifest.runs()[3].relative_dir(), "unit/train.lr=0.1,pe.init.std=0.2/seed-2");
  // A swept value remembers its place in the sweep.
  EXPECT_EQ(manifest.runs()[0].train.location("lr").str(), "unit.toml:23:15");
}

TEST_F(ManifestTest, SweepOverPluginsAndStrings) {
  const std::string text = kBase +
                           "\n[sweep]\n\"model.norm\" = [\"post\", \"pre\"]\n"
                           "\"pe\" = [\"none\", { plugin = \"learned\", init = \"normal\" }]\n";
  const Manifest manifest = parse(text);
  ASSERT_EQ(manifest.runs().size(), 4u);
  EXPECT_EQ(manifest.runs()[0].point, "model.norm=post,pe=none");
  EXPECT_EQ(manifest.runs()[0].pe.name, "none");
  EXPECT_EQ(manifest.runs()[1].point, "model.norm=post,pe=learned+init=normal");
  EXPECT_EQ(manifest.runs()[1].pe.name, "learned");
  EXPECT_EQ(manifest.runs()[3].model.string("norm"), "pre");
}

TEST_F(ManifestTest, SweepValuesAreValidatedWhereTheyAreWritten) {
  const std::string message = error_of(kBase + "\n[sweep]\n\"model.layers\" = [1, \"two\"]\n");
  EXPECT_THAT(message, StartsWith("unit.toml:23:22: 'layers' in [model] must be int"));
}

TEST_F(ManifestTest, SweepKeysMustBePathsToArrays) {
  EXPECT_THAT(error_of(kBase + "\n[sweep]\n\"colour\" = [1, 2]\n"),
              StartsWith("unit.toml:23:1: sweep key 'colour' must be a dotted path"));
  EXPECT_THAT(error_of(kBase + "\n[sweep]\n\"train.lr\" = []\n"),
              StartsWith("unit.toml:23:1: sweep key 'train.lr' needs a non-empty array"));
  EXPECT_THAT(error_of(kBase + "\n[sweep]\n\"train.lr\" = 0.1\n"),
              HasSubstr("needs a non-empty array"));
}

// A --set of a swept key fixes its value; the runs' folders must then not claim the swept values.
TEST_F(ManifestTest, OverrideOfASweptKeyDoesNotMislabelRuns) {
  const Manifest manifest =
      parse(kBase + "\n[sweep]\n\"train.lr\" = [0.1, 0.01]\n", {"train.lr=0.5"});
  // The override takes the key out of the sweep: one run, not two identical ones.
  EXPECT_EQ(manifest.runs().size(), 1u);
  EXPECT_TRUE(manifest.sweep_keys().empty());
  for (const RunConfig& run : manifest.runs()) {
    EXPECT_DOUBLE_EQ(run.train.real("lr"), 0.5);
    EXPECT_THAT(run.point, ::testing::Not(HasSubstr("train.lr=0.1"))) << run.relative_dir();
    EXPECT_THAT(run.point, ::testing::Not(HasSubstr("train.lr=0.01"))) << run.relative_dir();
  }
}

// [[sweep.point]]: points beside the product, for what a product cannot say (the sinusoidal PE
// with its dropout beside learned PEs without it).
const std::string kSweepWithPoint = kBase + R"(
[sweep]
"pe.init.std" = [0.2, 2.0]

[[sweep.point]]
pe = { plugin = "sinusoidal_nd", use_hidden_coordinates = true }
model.pe_dropout = 0.1
"train.eval_dropout" = "both"
)";

TEST_F(ManifestTest, ASweepPointComesAfterTheProductWithOnlyItsOwnKeys) {
  const Manifest manifest = parse(edit(kSweepWithPoint, "seeds = [1]", "seeds = [1, 2]"));
  ASSERT_EQ(manifest.runs().size(), 6u);
  EXPECT_EQ(manifest.points(), 3u);
  EXPECT_EQ(manifest.runs()[0].point, "pe.init.std=0.2");
  EXPECT_DOUBLE_EQ(manifest.runs()[2].model.real("pe_dropout"), 0.0);  // the product's own
  const RunConfig& point = manifest.runs()[4];
  EXPECT_EQ(point.point,
            "pe=sinusoidal_nd+use_hidden_coordinates=true,model.pe_dropout=0.1,"
            "train.eval_dropout=both");
  EXPECT_EQ(point.seed, 1);
  EXPECT_EQ(manifest.runs()[5].seed, 2);
  EXPECT_EQ(point.pe.name, "sinusoidal_nd");  // the inline table is the whole value
  EXPECT_DOUBLE_EQ(point.model.real("pe_dropout"), 0.1);
  EXPECT_EQ(point.train.string("eval_dropout"), "both");
  EXPECT_EQ(point.model.integer("layers"), 1);  // the rest is the manifest's
  EXPECT_EQ(point.model.location("pe_dropout").str(), "unit.toml:27:20");
  // Its config.toml reads back as itself.
  const Manifest again = parse(point.to_toml(), {}, "config.toml");
  ASSERT_EQ(again.runs().size(), 1u);
  EXPECT_EQ(again.runs()[0].relative_dir(), point.relative_dir());
}

TEST_F(ManifestTest, SweepPointsAloneAreThePoints) {
  const Manifest manifest = parse(kBase +
                                  "\n[[sweep.point]]\n\"train.lr\" = 0.1\n"
                                  "\n[[sweep.point]]\n\"train.lr\" = 0.01\nmodel.layers = 2\n");
  ASSERT_EQ(manifest.runs().size(), 2u);
  EXPECT_EQ(manifest.runs()[0].point, "train.lr=0.1");
  EXPECT_EQ(manifest.runs()[1].point, "train.lr=0.01,model.layers=2");
  EXPECT_EQ(manifest.runs()[1].model.integer("layers"), 2);
}

TEST_F(ManifestTest, SweepPointErrorsSayWhereAndWhat) {
  EXPECT_THAT(error_of(kBase + "\n[[sweep.point]]\ncolour = 1\n"),
              StartsWith("unit.toml:23:1: sweep key 'colour' must be a dotted path"));
  EXPECT_THAT(error_of(kBase + "\n[sweep]\npoint = 3\n"),
              StartsWith("unit.toml:23:1: sweep.point is a list of points"));
  EXPECT_THAT(error_of(kBase + "\n[sweep]\npoint = [1]\n"),
              HasSubstr("each sweep point is a table of the keys it sets"));
  EXPECT_THAT(error_of(kBase + "\n[[sweep.point]]\n"), HasSubstr("a sweep point sets no key"));
  // Values are validated where they are written.
  EXPECT_THAT(error_of(kBase + "\n[[sweep.point]]\nmodel.layers = \"two\"\n"),
              StartsWith("unit.toml:23:16: 'layers' in [model] must be int"));
  EXPECT_THAT(error_of(kBase + "\n[[sweep.point]]\npe = { plugin = \"learned\" }\n"
                               "\"pe.init.std\" = 0.5\n"),
              HasSubstr("this sweep point sets 'pe.init.std' inside 'pe', which it also sets"));
  // A point that repeats another would share its folders.
  EXPECT_THAT(error_of(kBase + "\n[sweep]\n\"train.lr\" = [0.1]\n\n[[sweep.point]]\n"
                               "\"train.lr\" = 0.1\n"),
              HasSubstr("a sweep point that repeats another"));
}

TEST_F(ManifestTest, ASetFixesAKeyOfASweepPointOrReplacesThePoints) {
  // A --set of a key that a point sets fixes it there too; a point left with no key of its own
  // is gone.
  const Manifest fixed = parse(kSweepWithPoint, {"model.pe_dropout=0.2"});
  ASSERT_EQ(fixed.runs().size(), 3u);
  EXPECT_EQ(fixed.runs()[2].point,
            "pe=sinusoidal_nd+use_hidden_coordinates=true,train.eval_dropout=both");
  EXPECT_DOUBLE_EQ(fixed.runs()[0].model.real("pe_dropout"), 0.2);
  EXPECT_DOUBLE_EQ(fixed.runs()[2].model.real("pe_dropout"), 0.2);
  const Manifest replaced =
      parse(kSweepWithPoint, {"sweep.point=[{ train.lr = 0.5 }, { \"train.lr\" = 0.7 }]"});
  ASSERT_EQ(replaced.runs().size(), 4u);
  EXPECT_EQ(replaced.runs()[2].point, "train.lr=0.5");
  EXPECT_EQ(replaced.runs()[2].train.integer("epochs"), 1);  // a dotted key sets that key only
  EXPECT_EQ(replaced.runs()[3].point, "train.lr=0.7");
  EXPECT_DOUBLE_EQ(replaced.runs()[3].train.real("lr"), 0.7);
  EXPECT_EQ(replaced.runs()[3].train.location("lr").str(),
            "--set sweep.point=[{ train.lr = 0.5 }, { \"train.lr\" = 0.7 }]");
  // A --set inside a key a point sets would name the point for a value it does not have.
  EXPECT_THAT(error_of(kSweepWithPoint, {"pe.use_hidden_coordinates=false"}),
              HasSubstr("'pe.use_hidden_coordinates' is inside 'pe', which a sweep point sets"));
}

// --- RunConfig::to_toml ------------------------------------------------------------------------

TEST_F(ManifestTest, ToTomlRoundTrips) {
  std::string text = kBase + "\n[[probe]]\nplugin = \"pe_norm\"\n";
  text = edit(text, "epochs = 1", "epochs = 1\nlr = 1e-5\nweight_decay = 0.25\nmomentum = 0.1");
  text = edit(text, "name = \"unit\"",
              "name = \"unit\"\ndescription = \"a \\\"quoted\\\" back\\\\slash,\\ttab\\nline\"");
  const RunConfig run = parse(text).runs()[0];
  const std::string resolved = run.to_toml();
  EXPECT_THAT(resolved, HasSubstr("mlp_ratio = 4\n"));  // defaults are spelt out
  EXPECT_THAT(resolved, HasSubstr("init = { plugin = \"normal\""));

  const Manifest again = parse(resolved, {}, "config.toml");
  ASSERT_EQ(again.runs().size(), 1u);
  const RunConfig& reread = again.runs()[0];
  EXPECT_EQ(reread.to_toml(), resolved);
  EXPECT_EQ(reread.relative_dir(), run.relative_dir());
  EXPECT_EQ(reread.experiment_params.string("description"), "a \"quoted\" back\\slash,\ttab\nline");
  EXPECT_DOUBLE_EQ(reread.train.real("lr"), 1e-5);
  EXPECT_DOUBLE_EQ(reread.pe.params.plugin("init").params.real("std"), 0.2);
  ASSERT_EQ(reread.probes.size(), 1u);
  EXPECT_EQ(reread.probes[0].name, "pe_norm");
}

// Strings with control characters other than tab and newline must be escaped too: TOML forbids
// them raw in a basic string, so config.toml would not read back.
TEST_F(ManifestTest, ToTomlEscapesEveryControlCharacter) {
  const std::string text =
      edit(kBase, "name = \"unit\"", "name = \"unit\"\ndescription = \"cr\\rbell\\u0007\"");
  const RunConfig run = parse(text).runs()[0];
  ASSERT_EQ(run.experiment_params.string("description"), "cr\rbell\a");
  const std::string resolved = run.to_toml();
  try {
    const Manifest again = parse(resolved, {}, "config.toml");
    EXPECT_EQ(again.runs()[0].experiment_params.string("description"), "cr\rbell\a");
  } catch (const Error& e) {
    ADD_FAILURE() << "config.toml does not read back: " << e.what();
  }
}

TEST_F(ManifestTest, ToTomlOfASweepPointHoldsThatPointOnly) {
  const std::string text =
      edit(kBase, "seeds = [1]", "seeds = [1, 2]") + "\n[sweep]\n\"pe.init.std\" = [0.1, 0.3]\n";
  const RunConfig run = parse(text).runs()[3];  // std 0.3, seed 2
  const std::string resolved = run.to_toml();
  EXPECT_THAT(resolved, HasSubstr("\npoint = \"pe.init.std=0.3\"\n"));
  const Manifest again = parse(resolved, {}, "config.toml");
  ASSERT_EQ(again.runs().size(), 1u);
  EXPECT_EQ(again.runs()[0].seed, 2);
  EXPECT_EQ(again.runs()[0].point, "pe.init.std=0.3");
  EXPECT_EQ(again.runs()[0].relative_dir(), run.relative_dir());
  EXPECT_DOUBLE_EQ(again.runs()[0].pe.params.plugin("init").params.real("std"), 0.3);
  // The same document, the point included.
  EXPECT_EQ(again.runs()[0].to_toml(), resolved);
}

TEST(CoreSchemas, EveryParameterIsDocumented) {
  for (const ParamSchema* schema : {&experiment_schema(), &model_schema(), &train_schema()}) {
    EXPECT_FALSE(schema->empty());
    for (const auto& spec : schema->specs())
      EXPECT_FALSE(spec.doc.empty()) << spec.name;
  }
  EXPECT_EQ(model_schema().find("norm")->choices, (std::vector<std::string>{"post", "pre"}));
  EXPECT_EQ(model_schema().find("pe_placement")->choices,
            (std::vector<std::string>{"every_block", "input", "shared"}));
}

}  // namespace
}  // namespace pelab

namespace pelab {
namespace {

class ManifestHoleTest : public ManifestTest {};

TEST_F(ManifestHoleTest, AnExperimentNameMustBeOneSafeFolderName) {
  for (const char* name : {"../../escape", "/tmp/x", "a/b", ".hidden", "..", "-rf", "sp ace"}) {
    const std::string message =
        error_of(edit(kBase, "name = \"unit\"", fmt::format("name = \"{}\"", name)));
    EXPECT_THAT(message, StartsWith("unit.toml:2:8: [experiment] name")) << name;
    EXPECT_THAT(message, HasSubstr("cannot name a folder: use 1 to 128 letters")) << name;
  }
  EXPECT_EQ(parse(edit(kBase, "name = \"unit\"", "name = \"lst-paper_v2.1\"")).name(),
            "lst-paper_v2.1");
  // Without a name, the file's name must be safe too.
  EXPECT_THAT(error_of(edit(kBase, "name = \"unit\"\n", ""), {}, "my manifest.toml"),
              HasSubstr("the experiment's name (the manifest's file name; set [experiment] name) "
                        "\"my manifest\" cannot name a folder"));
}

TEST_F(ManifestHoleTest, NonFiniteFloatsAreRefusedWhereTheyAreWritten) {
  EXPECT_THAT(error_of(kBase + "lr = nan\n"),
              StartsWith("unit.toml:21:6: 'lr' in [train] is nan: it must be a finite number"));
  EXPECT_THAT(error_of(kBase + "lr = inf\n"),
              HasSubstr("'lr' in [train] is inf: it must be a finite"));
  EXPECT_THAT(error_of(kBase, {"train.lr=-inf"}),
              StartsWith("--set train.lr=-inf: 'lr' in [train] is -inf: it must be a finite"));
  EXPECT_THAT(error_of(edit(kBase, "std = 0.2", "std = nan")),
              StartsWith("unit.toml:17:35: 'std' in [pe.init] (the initializer plugin 'normal') is "
                         "nan: it must be a finite number"));
}

// quick.toml sweeps whole `pe` tables; a --set inside them would train other values than the
// folders are named for.
const std::string kSweptTables =
    kBase +
    "\n[sweep]\npe = [{ plugin = \"learned\", init = { plugin = \"normal\", std = 0.2 } },"
    " { plugin = \"learned\", init = { plugin = \"normal\", std = 2.0 } }]\n";

TEST_F(ManifestHoleTest, ASetInsideASweptValueIsRefused) {
  const std::string message = error_of(kSweptTables, {"pe.init.std=0.2"});
  EXPECT_THAT(message, StartsWith("--set pe.init.std=0.2: 'pe.init.std' is inside 'pe', which the "
                                  "sweep varies (unit.toml:23:1)"));
  EXPECT_THAT(message, HasSubstr("--set 'sweep.pe=[...]'"));
  // Fixing the whole swept key is fine: it is no longer an axis.
  EXPECT_EQ(parse(kSweptTables, {"pe=\"none\""}).runs().size(), 1u);
  // So is a key beside the sweep.
  EXPECT_EQ(parse(kSweptTables, {"train.lr=0.5"}).runs().size(), 2u);
}

TEST_F(ManifestHoleTest, ASetOfASweepKeyReplacesOrAddsItsValues) {
  const std::string sweep = kBase + "\n[sweep]\n\"pe.init.std\" = [0.1, 0.3]\n";
  const Manifest replaced = parse(sweep, {"sweep.pe.init.std=[0.5, 0.7, 0.9]"});
  ASSERT_EQ(replaced.runs().size(), 3u);
  EXPECT_EQ(replaced.runs()[2].point, "pe.init.std=0.9");
  EXPECT_DOUBLE_EQ(replaced.runs()[2].pe.params.plugin("init").params.real("std"), 0.9);
  const Manifest quoted = parse(sweep, {"sweep.\"pe.init.std\"=[0.5]"});
  EXPECT_EQ(quoted.runs().size(), 1u);
  const Manifest added = parse(sweep, {"sweep.train.lr=[0.1, 0.01]"});
  EXPECT_EQ(added.runs().size(), 4u);
  EXPECT_EQ(added.runs()[1].point, "pe.init.std=0.1,train.lr=0.01");
  EXPECT_EQ(parse(kBase, {"sweep.train.lr=[0.1, 0.01]"}).runs().size(), 2u);
  EXPECT_THAT(error_of(sweep, {"sweep.pe.init.std=0.5"}),
              StartsWith("--set sweep.pe.init.std=0.5: a sweep key needs a non-empty array"));
  EXPECT_THAT(error_of(kSweptTables, {"sweep.pe.init.std=[0.2]"}),
              StartsWith("--set sweep.pe.init.std=[0.2]: sweep key 'pe.init.std' is inside sweep "
                         "key 'pe' (unit.toml:23:1)"));
  EXPECT_THAT(error_of(sweep, {"sweep.oops.x=[1]"}),
              HasSubstr("sweep key 'oops.x' must be a dotted path into the manifest"));
}

TEST_F(ManifestHoleTest, TheExperimentSectionIsNotSwept) {
  // Its name would send the runs to folders that the sweep's sweep.json, status and report
  // never read.
  EXPECT_THAT(error_of(kBase, {"sweep.experiment.name=[\"a\", \"b\"]"}),
              StartsWith("--set sweep.experiment.name=[\"a\", \"b\"]: sweep key "
                         "'experiment.name' cannot vary"));
  const std::string seeds_swept = kBase + "\n[sweep]\n\"experiment.seeds\" = [[1], [2]]\n";
  EXPECT_THAT(error_of(seeds_swept),
              StartsWith("unit.toml:23:1: sweep key 'experiment.seeds' cannot vary"));
  const std::string point = kBase + "\n[[sweep.point]]\nexperiment = { name = \"other\" }\n";
  EXPECT_THAT(error_of(point), StartsWith("unit.toml:23:1: sweep key 'experiment' cannot vary"));
}

}  // namespace
TEST(RunPathTest, NamesARunsFolderByItsPointAndSeed) {
  EXPECT_EQ(relative_run_path("pe.init.std=0.2", 3), "pe.init.std=0.2/seed-3");
  EXPECT_EQ(relative_run_path("", 7), "default/seed-7");
  EXPECT_EQ(relative_run_path("pe=learned+init=normal+std=0.1,train.lr=0.001", 1),
            "pe=learned+init=normal+std=0.1,train.lr=0.001/seed-1");
  // Nothing of a point may leave its folder or break a shell: a slash, a space, a quote.
  EXPECT_EQ(relative_run_path("task.path=a/b c\"d", 2), "task.path=a_b_c_d/seed-2");
  RunConfig run;
  run.experiment = "lst";
  run.point = "pe.init.std=0.2";
  run.seed = 3;
  EXPECT_EQ(run.relative_dir(), "lst/pe.init.std=0.2/seed-3");
}

}  // namespace pelab
