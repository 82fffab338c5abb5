#include "bench_command.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/plugins/plugin.h"
#include "pelab/plugins/registry.h"

namespace pelab::cli {
namespace {

// A plugin that refuses bench's stand-in inputs (no trained model for a probe that runs one, no
// run folder for from_run, a layout without the coordinates a PE reads) cannot be benchmarked
// here: the benchmark is marked with this prefix, and the reporter tells it from a failure.
constexpr const char* kCannotRun = "cannot run on bench's stand-in inputs: ";

std::string cannot_run(const Error& error) {
  return kCannotRun + std::string(error.what());
}

// Attention-side tensors of [batch, heads, tokens, tokens] floats above this are skipped, with a
// message, rather than exhausting memory at 4096 tokens.
constexpr double kMaxAttentionBytes = 1024.0 * 1024.0 * 1024.0;

/// A benchmark target: one plugin with its parameters.
struct Target {
  PluginKind kind;
  PluginSpec spec;
  std::string label;  // the plugin's name as benchmark names show it
};

/// The layout of `tokens` tokens of the requested shape; nullopt when the count does not make that
/// shape (e.g. 1024 tokens are no cube).
std::optional<Layout> make_layout(const std::string& shape, std::int64_t tokens) {
  if (shape == "sequence") return Layout::sequence(tokens, /*coordinates_visible=*/true);
  const int dims = shape == "grid2d" ? 2 : 3;
  const auto side = static_cast<std::int64_t>(std::llround(std::pow(tokens, 1.0 / dims)));
  if (static_cast<std::int64_t>(std::pow(side, dims)) != tokens) return std::nullopt;
  std::vector<std::int64_t> extent(dims, side);
  std::vector<std::string> names = dims == 2 ? std::vector<std::string>{"row", "column"}
                                             : std::vector<std::string>{"x", "y", "z"};
  return Layout::grid(extent, names, /*coordinates_visible=*/true);
}

// The outer `plugin = "..."` of an inline table, nested tables removed first.
std::string name_in_table(const std::string& text) {
  std::string outer;
  int depth = 0;
  for (char c : text) {
    if (c == '{') ++depth;
    if (depth <= 1 && c != '{' && c != '}') outer += c;
    if (c == '}') --depth;
  }
  std::smatch match;
  static const std::regex plugin_key(R"(plugin\s*=\s*"([^"]+)\")");
  PELAB_CHECK(std::regex_search(outer, match, plugin_key),
              "'{}' names no plugin: write {{ plugin = \"name\", ... }}", text);
  return match[1];
}

std::vector<Target> resolve_targets(const BenchOptions& options, Registry& registry) {
  std::vector<Target> targets;
  const std::optional<PluginKind> only = kind_option(options.kind);
  if (options.plugins.empty()) {  // every plugin on the path
    for (PluginKind kind : kAllPluginKinds) {
      if (only && kind != *only) continue;
      for (const auto& name : registry.available(kind))
        targets.push_back({kind, parse_plugin_spec(name, kind, registry, options.overrides), name});
    }
    return targets;
  }
  for (const auto& text : options.plugins) {
    const bool table = text.find('{') != std::string::npos;
    const std::string name = table ? name_in_table(text) : text;
    std::vector<PluginKind> kinds;
    std::vector<std::string> everything;
    for (PluginKind kind : kAllPluginKinds) {
      const auto names = registry.available(kind);
      everything.insert(everything.end(), names.begin(), names.end());
      if ((!only || kind == *only) && std::find(names.begin(), names.end(), name) != names.end())
        kinds.push_back(kind);
    }
    if (kinds.empty()) {
      const auto close = closest_names(name, everything);
      throw Error(
          fmt::format("no plugin named '{}' on the plugin path{}; `pelab plugins` lists them", name,
                      close.empty() ? "" : ": did you mean " + close.front() + "?"));
    }
    PELAB_CHECK(kinds.size() == 1, "'{}' is the name of several kinds of plugin: add --kind", name);
    targets.push_back(
        {kinds.front(), parse_plugin_spec(text, kinds.front(), registry, options.overrides), name});
  }
  return targets;
}

void register_pe(const Target& target, const BenchOptions& options, Registry& registry) {
  for (std::int64_t tokens : options.tokens) {
    const std::optional<Layout> layout = make_layout(options.layout, tokens);
    if (!layout) continue;
    for (std::int64_t d_model : options.d_model) {
      const std::string name =
          fmt::format("pe/{}/forward_backward/tokens:{}/d_model:{}", target.label, tokens, d_model);
      auto run = [=, &registry](benchmark::State& state) {
        std::shared_ptr<PositionalEncoding> pe;
        try {
          pe = registry.create_positional_encoding(target.spec, *layout,
                                                   ModelShape{d_model, options.heads, 1, 0});
        } catch (const Error& error) {
          state.SkipWithError(cannot_run(error).c_str());
          return;
        }
        const bool attention_sized = pe->has_hook(PositionalEncoding::kRelativeKeys) ||
                                     pe->has_hook(PositionalEncoding::kRelativeValues);
        const double attention_bytes =
            4.0 * static_cast<double>(options.batch * options.heads * tokens * tokens);
        if (attention_sized && attention_bytes > kMaxAttentionBytes) {
          state.SkipWithError(fmt::format("needs {:.1f} GiB of [batch, heads, tokens, tokens] "
                                          "tensors; lower --batch or --tokens",
                                          attention_bytes / kMaxAttentionBytes)
                                  .c_str());
          return;
        }
        const std::int64_t head_dim = d_model / options.heads;
        const auto grad = torch::TensorOptions().requires_grad(true);
        const torch::Tensor x = torch::randn({options.batch, tokens, d_model}, grad);
        const torch::Tensor q =
            torch::randn({options.batch, options.heads, tokens, head_dim}, grad);
        const torch::Tensor k =
            torch::randn({options.batch, options.heads, tokens, head_dim}, grad);
        torch::Tensor probabilities;
        if (pe->has_hook(PositionalEncoding::kRelativeValues)) {
          probabilities =
              torch::softmax(torch::randn({options.batch, options.heads, tokens, tokens}), -1);
        }
        std::vector<torch::Tensor> leaves = pe->parameters();
        leaves.insert(leaves.end(), {x, q, k});
        for (auto _ : state) {
          // Every hook the PE declares, as the model calls them, then one backward pass.
          std::vector<torch::Tensor> outputs;
          if (pe->has_hook(PositionalEncoding::kAdditive)) outputs.push_back(pe->embed(x).sum());
          if (pe->has_hook(PositionalEncoding::kRotary)) {
            auto [rotated_q, rotated_k] = pe->rotate(q, k);
            outputs.push_back(rotated_q.sum() + rotated_k.sum());
          }
          if (pe->has_hook(PositionalEncoding::kAttentionBias))
            outputs.push_back(pe->attention_bias().sum());
          if (pe->has_hook(PositionalEncoding::kRelativeKeys))
            outputs.push_back(pe->relative_logits(q).sum());
          if (pe->has_hook(PositionalEncoding::kRelativeValues))
            outputs.push_back(pe->relative_values(probabilities).sum());
          const torch::Tensor total =
              outputs.empty() ? torch::zeros({}) : torch::stack(outputs).sum();
          if (total.requires_grad()) total.backward();
          for (auto& leaf : leaves)
            leaf.mutable_grad().reset();
        }
        state.counters["tokens_per_s"] =
            benchmark::Counter(static_cast<double>(state.iterations() * options.batch * tokens),
                               benchmark::Counter::kIsRate);
      };
      benchmark::RegisterBenchmark(name.c_str(), run)->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
  }
}

void register_initializer(const Target& target, const BenchOptions& options, Registry& registry) {
  for (std::int64_t tokens : options.tokens) {
    const std::optional<Layout> layout = make_layout(options.layout, tokens);
    if (!layout) continue;
    for (std::int64_t d_model : options.d_model) {
      const std::string name =
          fmt::format("init/{}/fill/tokens:{}/d_model:{}", target.label, tokens, d_model);
      auto run = [=, &registry](benchmark::State& state) {
        torch::Tensor table = torch::empty({tokens, d_model});
        const InitContext context = InitContext::for_tensor(table, "benchmark table", &*layout);
        try {
          const auto initializer = registry.create_initializer(target.spec);
          for (auto _ : state)
            initializer->fill(table, context);
        } catch (const Error& error) {
          state.SkipWithError(cannot_run(error).c_str());
          return;
        }
        state.counters["elements_per_s"] =
            benchmark::Counter(static_cast<double>(state.iterations() * tokens * d_model),
                               benchmark::Counter::kIsRate);
      };
      benchmark::RegisterBenchmark(name.c_str(), run)->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
  }
}

void register_task(const Target& target, Registry& registry) {
  const std::string name = fmt::format("task/{}/create_and_load", target.label);
  auto run = [=, &registry](benchmark::State& state) {
    std::int64_t samples = 0;
    try {
      for (auto _ : state) {
        const auto task = registry.create_task(target.spec);
        for (const auto& split : task->splits())
          samples += task->load(split).size();
      }
    } catch (const Error& error) {
      state.SkipWithError(cannot_run(error).c_str());
      return;
    }
    state.counters["samples_per_s"] =
        benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
  };
  benchmark::RegisterBenchmark(name.c_str(), run)->Unit(benchmark::kMillisecond)->UseRealTime();
}

void register_probe(const Target& target, const BenchOptions& options, Registry& registry) {
  for (std::int64_t tokens : options.probe_tokens) {
    const std::optional<Layout> layout = make_layout(options.layout, tokens);
    if (!layout) continue;
    for (std::int64_t d_model : options.d_model) {
      const std::string name = fmt::format("probe/{}/run/tokens:{}/d_model:{}/snapshots:2",
                                           target.label, tokens, d_model);
      auto run = [=, &registry](benchmark::State& state) {
        // Two snapshots (init and trained) of a two-block model's PE tables; no model, no task:
        // a probe that needs them reports so and is skipped.
        torch::manual_seed(0);
        std::vector<PESnapshot> snapshots(2);
        for (std::size_t i = 0; i < snapshots.size(); ++i) {
          snapshots[i].epoch = static_cast<std::int64_t>(i);
          snapshots[i].tables = torch::randn({2, tokens, d_model});
        }
        const ProbeContext context{*layout, snapshots, nullptr, nullptr, &registry};
        try {
          const auto probe = registry.create_probe(target.spec);
          for (auto _ : state)
            benchmark::DoNotOptimize(probe->run(context));
        } catch (const Error& error) {
          state.SkipWithError(cannot_run(error).c_str());
        }
      };
      benchmark::RegisterBenchmark(name.c_str(), run)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
}

}  // namespace

// The display reporter Google Benchmark would use, which also keeps the benchmarks that did not
// run ("ERROR OCCURRED"): those that failed, and those whose plugin cannot run on bench's
// stand-in inputs (kCannotRun).
class ErrorCountingReporter : public benchmark::BenchmarkReporter {
 public:
  explicit ErrorCountingReporter(benchmark::BenchmarkReporter* display) : display_(display) {}
  bool ReportContext(const Context& context) override {
    display_->SetOutputStream(&GetOutputStream());
    display_->SetErrorStream(&GetErrorStream());
    return display_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (!run.error_occurred) continue;
      const bool cannot = run.error_message.rfind(kCannotRun, 0) == 0;
      (cannot ? cannot_run_ : failed_)
          .push_back(fmt::format("{}: {}", run.benchmark_name(), run.error_message));
    }
    display_->ReportRuns(runs);
  }
  void Finalize() override { display_->Finalize(); }
  const std::vector<std::string>& failed() const { return failed_; }
  const std::vector<std::string>& cannot_run() const { return cannot_run_; }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  std::vector<std::string> failed_;
  std::vector<std::string> cannot_run_;
};

int bench(const BenchOptions& options, const std::vector<std::string>& plugin_folders) {
  PELAB_CHECK(
      options.layout == "sequence" || options.layout == "grid2d" || options.layout == "grid3d",
      "--layout '{}': use sequence, grid2d or grid3d", options.layout);
  for (std::int64_t d_model : options.d_model) {
    PELAB_CHECK(d_model % options.heads == 0, "--d-model {} is not a multiple of --heads {}",
                d_model, options.heads);
  }
  torch::set_num_threads(options.threads);
  Registry registry(Registry::default_search_path(plugin_folders));
  const std::vector<Target> targets = resolve_targets(options, registry);

  std::vector<std::string> arguments{"pelab bench"};
  arguments.insert(arguments.end(), options.benchmark_flags.begin(), options.benchmark_flags.end());
  std::vector<char*> argv;
  for (auto& argument : arguments)
    argv.push_back(argument.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  if (argc > 1) {
    throw Error(
        fmt::format("unknown option '{}': pelab bench passes only --benchmark_* options "
                    "to Google Benchmark (see `pelab bench --help`)",
                    argv[1]));
  }

  for (const auto& target : targets) {
    switch (target.kind) {
      case PluginKind::kPositionalEncoding:
        register_pe(target, options, registry);
        break;
      case PluginKind::kInitializer:
        register_initializer(target, options, registry);
        break;
      case PluginKind::kTask:
        register_task(target, registry);
        break;
      case PluginKind::kProbe:
        register_probe(target, options, registry);
        break;
    }
  }
  ErrorCountingReporter reporter(benchmark::CreateDefaultDisplayReporter());
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  PELAB_CHECK(ran > 0,
              "no benchmark matched: check the plugin names, --tokens (a grid layout needs "
              "square or cube counts) and --benchmark_filter");
  PELAB_CHECK(reporter.failed().empty(), "{} of {} benchmark(s) failed: {}",
              reporter.failed().size(), ran, fmt::join(reporter.failed(), "; "));
  // Plugins named on the command line must run; over every plugin on the path, one that cannot
  // run on the stand-ins is a note.
  PELAB_CHECK(options.plugins.empty() || reporter.cannot_run().empty(),
              "{} of {} benchmark(s) did not run: {}", reporter.cannot_run().size(), ran,
              fmt::join(reporter.cannot_run(), "; "));
  for (const std::string& note : reporter.cannot_run())
    fmt::print(stderr, "note: {}\n", note);
  return 0;
}

BenchCommand::BenchCommand(CLI::App& app, const GlobalOptions& global)
    : Command(app, "bench",
              "Time plugins through their interface with Google Benchmark: a PE's forward + "
              "backward, an initializer's fill, a task's loading, a probe's run"),
      global_(global) {
  command_->add_option("plugins", options_.plugins,
                       "Plugin names or inline tables ('{ plugin = \"learned\", init = "
                       "\"zeros\" }'); none: every plugin on the path");
  command_->add_option("--kind", options_.kind, "Only plugins of this kind: pe, init, task, probe");
  command_->add_option("--set", options_.overrides, "Set a parameter: --set init.std=0.5")
      ->allow_extra_args(false);
  // Every size is checked here, where it enters: a 0 or a negative one reached LibTorch (a
  // SIGFPE for --heads 0) or timed nothing and printed 0/s.
  const auto size = CLI::Range(std::int64_t{1}, std::int64_t{1} << 20);
  command_->add_option("--tokens", options_.tokens, "Token counts (PEs, initializers)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(size);
  command_->add_option("--probe-tokens", options_.probe_tokens, "Token counts (probes)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 16));
  command_->add_option("--d-model", options_.d_model, "Model widths")
      ->delimiter(',')
      ->capture_default_str()
      ->check(size);
  command_->add_option("--batch", options_.batch, "Sequences per batch (PEs)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16));
  command_->add_option("--heads", options_.heads, "Attention heads (PEs)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  command_->add_option("--layout", options_.layout, "Token layout: sequence, grid2d or grid3d")
      ->capture_default_str()
      ->check(CLI::IsMember({"sequence", "grid2d", "grid3d"}));
  command_->add_option("--threads", options_.threads, "LibTorch intra-op threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  command_->allow_extras();  // --benchmark_* flags go to Google Benchmark
}

int BenchCommand::execute() {
  options_.benchmark_flags = command_->remaining();
  return bench(options_, global_.plugin_folders);
}

}  // namespace pelab::cli
