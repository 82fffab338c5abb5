#include "command.h"

#include <cstdio>

#include <fmt/format.h>
#include <torch/version.h>

#include "pelab/base/error.h"
#include "pelab/plugins/plugin.h"
#include "pelab/plugins/registry.h"

namespace pelab::cli {

Registry GlobalOptions::make_registry() const {
  return Registry(Registry::default_search_path(plugin_folders));
}

std::optional<PluginKind> kind_option(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::optional<PluginKind> kind = parse_plugin_kind(text);
  PELAB_CHECK(kind.has_value(), "--kind '{}' is not a plugin kind: use pe, init, task or probe",
              text);
  return kind;
}

std::string version_text() {
  return fmt::format("pelab {} (plugin API {}, LibTorch {}, {})", PELAB_VERSION_STRING,
                     kPluginApiVersion, TORCH_VERSION, PELAB_CXX_ABI_TAG);
}

namespace {

// "pelab run": how the user names the command `app` is.
std::string command_line_name(const CLI::App& app) {
  std::string name;
  for (const CLI::App* each = &app; each->get_parent() != nullptr; each = each->get_parent())
    name = " " + each->get_name() + name;
  return "pelab" + name;
}

// "; did you mean 'report'?" when a name is close to `word`, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::vector<std::string> near = closest_names(word, names, 1);
  return near.empty() ? "" : fmt::format("; did you mean '{}'?", near.front());
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames())
      names.push_back("--" + name);
    for (const std::string& name : option->get_snames())
      names.push_back("-" + name);
  }
  return names;
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(command->get_name());
  return names;
}

bool is_option(const std::string& word) {
  return word.size() > 1 && word.front() == '-';
}

// The words of the command line that `app` (pelab or a command) took for none of its options and
// arguments: the options (by name, without a value given with '='), or the other words.
std::vector<std::string> words_left(const CLI::App& app, bool options) {
  std::vector<std::string> words;
  if (app.get_allow_extras()) return words;  // pelab bench: they go to Google Benchmark
  for (const std::string& word : app.remaining()) {
    if (is_option(word) == options)
      words.push_back(options ? word.substr(0, word.find('=')) : word);
  }
  return words;
}

}  // namespace

int report_parse_error(const CLI::App& app, const CLI::ParseError& error) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
    return app.exit(error);  // --help, --version
  // pelab and the command named: the parse stopped at the error, but what it took is kept.
  std::vector<const CLI::App*> apps{&app};
  while (!apps.back()->get_subcommands().empty())
    apps.push_back(apps.back()->get_subcommands().front());

  std::vector<std::string> messages;
  const CLI::App* about = apps.back();  // whose help to point at
  if (const auto words = app.remaining(); !words.empty() && !is_option(words.front())) {
    // pelab takes no argument of its own: its first word names a command, and what follows was
    // meant for that command.
    messages.push_back(fmt::format("unknown command '{}'{}", words.front(),
                                   did_you_mean(words.front(), command_names(app))));
    about = &app;
  }
  // Unknown options before extra arguments: an argument after an unknown option may be its value.
  for (const bool options : {true, false}) {
    for (const CLI::App* each : apps) {
      if (!messages.empty()) break;
      for (const std::string& word : words_left(*each, options)) {
        const std::string near =
            options && word.size() > 2 ? did_you_mean(word, option_names(*each)) : "";
        messages.push_back(fmt::format("{} '{}' for '{}'{}",
                                       options ? "unknown option" : "unexpected argument", word,
                                       command_line_name(*each), near));
        about = each;
      }
    }
  }
  if (messages.empty() && apps.size() == 1 && dynamic_cast<const CLI::RequiredError*>(&error)) {
    // Plain `pelab`: the help, as a usage error.
    fmt::print(stderr, "{}error: no command given\nrun 'pelab <command> --help' for its usage\n",
               app.help());
    return kExitUsage;
  }
  if (messages.empty()) messages.push_back(error.what());  // a value out of range, ...

  for (const std::string& message : messages)
    fmt::print(stderr, "error: {}\n", message);
  if (about == &app) {
    fmt::print(stderr, "run 'pelab --help' for the commands\n");
  } else {
    fmt::print(stderr, "run '{} --help' for its usage\n", command_line_name(*about));
  }
  return kExitUsage;
}

}  // namespace pelab::cli
