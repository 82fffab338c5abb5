// Parameter schemas, validated values and their TOML rendering.

#include "pelab/interfaces/params.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pelab/base/error.h"

namespace pelab {
namespace {

TEST(SourceLocation, RendersWhatIsKnown) {
  EXPECT_FALSE(SourceLocation{}.known());
  EXPECT_EQ(SourceLocation{}.str(), "");
  EXPECT_TRUE((SourceLocation{"--set a=1", 0, 0}.known()));
  EXPECT_EQ((SourceLocation{"--set a=1", 0, 0}.str()), "--set a=1");
  EXPECT_EQ((SourceLocation{"m.toml", 3, 7}.str()), "m.toml:3:7");
}

TEST(ParamType, TomlFacingNames) {
  EXPECT_EQ(to_string(ParamType::kBool), "bool");
  EXPECT_EQ(to_string(ParamType::kInt), "int");
  EXPECT_EQ(to_string(ParamType::kFloat), "float");
  EXPECT_EQ(to_string(ParamType::kString), "string");
  EXPECT_EQ(to_string(ParamType::kFloatList), "list of float");
  EXPECT_EQ(to_string(ParamType::kIntList), "list of int");
  EXPECT_EQ(to_string(ParamType::kStringList), "list of string");
  EXPECT_EQ(to_string(ParamType::kPlugin), "plugin");
}

TEST(ParamSchema, KeepsDeclarationOrderAndTypes) {
  ParamSchema schema;
  schema.real("std", 1.0, "doc");
  schema.integer("layers", 4, "doc");
  schema.boolean("flag", true, "doc");
  schema.string("label", "x", "doc");
  schema.choice("norm", "post", {"post", "pre"}, "doc");
  schema.reals("weights", {0.5}, "doc");
  schema.integers("seeds", {0, 1}, "doc");
  schema.strings("splits", {"a"}, "doc");
  schema.plugin("init", PluginKind::kInitializer, "normal", "doc");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"std", "layers", "flag", "label", "norm",
                                                      "weights", "seeds", "splits", "init"}));
  EXPECT_FALSE(schema.empty());
  EXPECT_EQ(schema.find("missing"), nullptr);
  EXPECT_EQ(schema.find("layers")->type, ParamType::kInt);
  EXPECT_EQ(std::get<std::int64_t>(schema.find("layers")->default_value), 4);
  EXPECT_EQ(schema.find("norm")->type, ParamType::kString);
  EXPECT_EQ(schema.find("seeds")->type, ParamType::kIntList);

  const ParamSpec& init = *schema.find("init");
  EXPECT_EQ(init.type, ParamType::kPlugin);
  EXPECT_EQ(init.plugin_kind, PluginKind::kInitializer);
  const auto& fallback = std::get<std::shared_ptr<const PluginSpec>>(init.default_value);
  ASSERT_NE(fallback, nullptr);
  EXPECT_EQ(fallback->kind, PluginKind::kInitializer);
  EXPECT_EQ(fallback->name, "normal");
}

TEST(ParamSchema, DefaultsAreWhatASectionThatSetsNothingResolvesTo) {
  ParamSchema schema;
  schema.integer("layers", 4, "Blocks.");
  schema.real("lr", 1e-3, "Learning rate.");
  schema.choice("norm", "post", {"post", "pre"}, "LayerNorm placement.");
  schema.integers("seeds", {1, 2}, "Seeds.");
  const Params defaults = schema.defaults();
  EXPECT_EQ(defaults.values().size(), 4u);
  EXPECT_EQ(defaults.integer("layers"), 4);
  EXPECT_EQ(defaults.real("lr"), 1e-3);
  EXPECT_EQ(defaults.string("norm"), "post");
  EXPECT_EQ(defaults.integers("seeds"), (std::vector<std::int64_t>{1, 2}));
  EXPECT_TRUE(ParamSchema().defaults().values().empty());
}

TEST(ParamSchema, DeclarationMistakesArePluginBugs) {
  ParamSchema schema;
  schema.real("std", 1.0, "doc");
  EXPECT_THROW(schema.integer("std", 1, "twice"), InternalError);
  EXPECT_THROW(schema.string("plugin", "x", "reserved"), InternalError);
  EXPECT_THROW(schema.choice("norm", "mid", {"post", "pre"}, "default not a choice"),
               InternalError);
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"std"}));
}

TEST(ParamSpec, AcceptedDescribesTypeAndBounds) {
  ParamSchema schema;
  EXPECT_EQ(schema.real("a", 1.0, "").accepted(), "float");
  EXPECT_EQ(schema.real("b", 1.0, "").at_least(0.0).accepted(), "float >= 0");
  EXPECT_EQ(schema.real("c", 1.0, "").at_most(1.5).accepted(), "float <= 1.5");
  EXPECT_EQ(schema.real("d", 0.1, "").in_range(0.0, 0.5).accepted(), "float in [0, 0.5]");
  EXPECT_EQ(schema.integer("e", 4, "").in_range(1, 256).accepted(), "int in [1, 256]");
  EXPECT_EQ(schema.integers("f", {}, "").in_range(0, 10).accepted(), "list of int in [0, 10]");
  EXPECT_EQ(schema.choice("g", "post", {"post", "pre"}, "").accepted(), "one of: post, pre");
  EXPECT_EQ(schema.plugin("h", PluginKind::kInitializer, "normal", "").accepted(),
            "initializer plugin (\"name\" or { plugin = \"name\", ... })");
}

TEST(Params, TypedGetters) {
  Params params;
  auto nested = std::make_shared<PluginSpec>();
  nested->kind = PluginKind::kInitializer;
  nested->name = "normal";
  params.set("b", true);
  params.set("i", std::int64_t{3});
  params.set("f", 0.25);
  params.set("s", std::string("text"));
  params.set("fl", std::vector<double>{1.0, 2.0});
  params.set("il", std::vector<std::int64_t>{4, 5});
  params.set("sl", std::vector<std::string>{"x"});
  params.set("p", std::shared_ptr<const PluginSpec>(nested));
  EXPECT_TRUE(params.boolean("b"));
  EXPECT_EQ(params.integer("i"), 3);
  EXPECT_DOUBLE_EQ(params.real("f"), 0.25);
  EXPECT_EQ(params.string("s"), "text");
  EXPECT_EQ(params.reals("fl"), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(params.integers("il"), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(params.strings("sl"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(params.plugin("p").name, "normal");
  EXPECT_TRUE(params.has("b"));
  EXPECT_FALSE(params.has("zz"));
  EXPECT_EQ(params.values().size(), 8u);
}

TEST(Params, MisuseIsAnInternalError) {
  Params params;
  params.set("i", std::int64_t{3});
  EXPECT_THROW(params.integer("undeclared"), InternalError);
  EXPECT_THROW(params.real("i"), InternalError);  // an int is not silently a float
  EXPECT_THROW(params.string("i"), InternalError);
  EXPECT_THROW(params.plugin("i"), InternalError);
}

TEST(Params, LocationsAreKeptPerValue) {
  Params params;
  params.set("a", 1.0, SourceLocation{"m.toml", 2, 5});
  params.set("b", 2.0);
  EXPECT_EQ(params.location("a").str(), "m.toml:2:5");
  EXPECT_FALSE(params.location("b").known());
  EXPECT_FALSE(params.location("never").known());
  // Setting again replaces both value and location.
  params.set("a", 3.0);
  EXPECT_DOUBLE_EQ(params.real("a"), 3.0);
  EXPECT_FALSE(params.location("a").known());
}

TEST(FormatValue, ScalarsAsTomlWritesThem) {
  EXPECT_EQ(format_value(true), "true");
  EXPECT_EQ(format_value(false), "false");
  EXPECT_EQ(format_value(std::int64_t{-42}), "-42");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(2.0), "2.0");  // a float must stay a float when read back
  EXPECT_EQ(format_value(-0.0), "-0.0");
  EXPECT_EQ(format_value(123456789.0), "123456789.0");
  EXPECT_EQ(format_value(1e-5), "1e-05");
  EXPECT_EQ(format_value(1e300), "1e+300");
  EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(FormatValue, StringsAreQuotedAndEscaped) {
  EXPECT_EQ(format_value(std::string("post")), "\"post\"");
  EXPECT_EQ(format_value(std::string("a \"b\" \\ c\nd\te")), "\"a \\\"b\\\" \\\\ c\\nd\\te\"");
}

TEST(FormatValue, Lists) {
  EXPECT_EQ(format_value(std::vector<double>{}), "[]");
  EXPECT_EQ(format_value(std::vector<double>{1.0, 0.5}), "[1.0, 0.5]");
  EXPECT_EQ(format_value(std::vector<std::int64_t>{1, 2, 3}), "[1, 2, 3]");
  EXPECT_EQ(format_value(std::vector<std::string>{"a", "b"}), "[\"a\", \"b\"]");
}

TEST(FormatValue, NestedPluginAsAnInlineTable) {
  auto init = std::make_shared<PluginSpec>();
  init->kind = PluginKind::kInitializer;
  init->name = "normal";
  init->params.set("std", 0.2);
  init->params.set("mean", 0.0);
  // Parameters in name order, after the plugin's name.
  EXPECT_EQ(format_value(std::shared_ptr<const PluginSpec>(init)),
            "{ plugin = \"normal\", mean = 0.0, std = 0.2 }");

  auto outer = std::make_shared<PluginSpec>();
  outer->name = "learned";
  outer->params.set("init", std::shared_ptr<const PluginSpec>(init));
  EXPECT_EQ(format_value(std::shared_ptr<const PluginSpec>(outer)),
            "{ plugin = \"learned\", init = { plugin = \"normal\", mean = 0.0, std = 0.2 } }");
}

}  // namespace
}  // namespace pelab
