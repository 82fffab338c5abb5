#include "pelab/runs/run_folder.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "io/json_integer.h"
#include "io/json_text.h"
#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"

namespace pelab {

namespace fs = boost::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr const char* kConfig = RunFolder::kConfigFile;
constexpr const char* kMetrics = RunFolder::kMetricsFile;
constexpr const char* kSummary = RunFolder::kSummaryFile;
constexpr const char* kCheckpoint = "checkpoint.pt";
constexpr const char* kPreviousCheckpoint = "checkpoint.previous.pt";
constexpr const char* kClaim = "claim.json";
constexpr const char* kLock = ".lock";
constexpr const char* kLegacyPointMarker = "# sweep point: ";

// A scalar of a config.toml as TOML text and as shown to a reader.
StoredConfig::Value stored_value(const toml::node& node) {
  std::ostringstream shown;
  node.visit([&](auto&& value) { shown << value; });
  if (const auto number = node.value_exact<double>())
    return {format_value(ParamValue(*number)), format_number(*number)};
  if (const auto text = node.value_exact<std::string>())
    return {format_value(ParamValue(*text)), *text};
  return {shown.str(), shown.str()};
}

bool is_array_of_tables(const toml::array& array) {
  return !array.empty() &&
         std::all_of(array.begin(), array.end(), [](const toml::node& n) { return n.is_table(); });
}

void flatten(const toml::table& table, const std::string& prefix,
             std::map<std::string, StoredConfig::Value>& out);

void flatten_node(const toml::node& node, const std::string& path,
                  std::map<std::string, StoredConfig::Value>& out) {
  if (const toml::table* table = node.as_table()) {
    flatten(*table, path, out);
  } else if (const toml::array* array = node.as_array()) {
    if (is_array_of_tables(*array)) {  // [[probe]]
      for (std::size_t i = 0; i < array->size(); ++i)
        flatten(*array->get(i)->as_table(), fmt::format("{}.{}", path, i), out);
      return;
    }
    std::vector<std::string> elements;
    for (const toml::node& element : *array)
      elements.push_back(stored_value(element).toml);
    std::ostringstream shown;
    shown << *array;
    out[path] = {fmt::format("[{}]", fmt::join(elements, ", ")), shown.str()};
  } else {
    out[path] = stored_value(node);
  }
}

void flatten(const toml::table& table, const std::string& prefix,
             std::map<std::string, StoredConfig::Value>& out) {
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    flatten_node(node, prefix.empty() ? name : prefix + "." + name, out);
  }
}

json headlines_json(const std::vector<Headline>& headlines) {
  json list = json::array();
  for (const Headline& headline : headlines) {
    list.push_back({{"scalar", headline.scalar},
                    {"better", to_string(headline.better)},
                    {"meaning", headline.meaning}});
  }
  return list;
}

std::vector<Headline> headlines_of(const json& list) {
  std::vector<Headline> headlines;
  for (const auto& entry : list) {
    if (!entry.is_object() || !entry.contains("scalar") || !entry["scalar"].is_string()) continue;
    Headline headline;
    headline.scalar = entry["scalar"].get<std::string>();
    headline.better = better_from_string(entry.value("better", std::string()));
    if (entry.contains("meaning") && entry["meaning"].is_string())
      headline.meaning = entry["meaning"].get<std::string>();
    headlines.push_back(std::move(headline));
  }
  return headlines;
}

std::string metrics_csv(const std::vector<MetricRow>& rows) {
  std::string out = "epoch,split,group,metric,value\n";
  for (const auto& row : rows) {
    out += fmt::format("{},{},{},{},{}\n", row.epoch, csv_field(row.split), csv_field(row.group),
                       csv_field(row.metric), format_number(row.value));
  }
  return out;
}

json scalars_json(const std::map<std::string, double>& values) {
  json object = json::object();
  for (const auto& [name, value] : values)
    object[name] = value;  // nlohmann writes NaN and inf as null
  return object;
}

std::map<std::string, double> scalars_of(const json& object) {
  std::map<std::string, double> values;
  if (!object.is_object()) return values;
  for (const auto& [name, value] : object.items()) {
    // JSON has no NaN: a non-finite value was stored as null.
    values[name] = value.is_number() ? value.get<double>() : std::nan("");
  }
  return values;
}

// Where the model's parameters are (the CPU for a model without any).
torch::Device model_device(TransformerEncoder& model) {
  const auto parameters = model.parameters();
  return parameters.empty() ? torch::Device(torch::kCPU) : parameters.front().device();
}

// Reads a checkpoint into `model` (and `optimizer` and the default generators when given), its
// tensors onto the model's device. Throws c10::Error or std::exception when the file is truncated
// or corrupt.
// The time fields of a checkpoint, as one float64 tensor: wall, train seconds, steps, epochs.
torch::Tensor training_time_tensor(const TrainingTime& time) {
  return torch::tensor({time.wall_seconds, time.train_seconds, static_cast<double>(time.steps),
                        static_cast<double>(time.epochs)},
                       torch::kFloat64);
}

std::optional<TrainingTime> read_training_time(torch::serialize::InputArchive& archive) {
  torch::Tensor values;  // absent from checkpoints written before it was kept
  if (!archive.try_read("training_time", values)) return std::nullopt;
  values = values.to(torch::kCPU, torch::kFloat64).contiguous();
  if (values.numel() != 4) return std::nullopt;
  const double* v = values.data_ptr<double>();
  return TrainingTime{v[0], v[1], static_cast<std::int64_t>(v[2]), static_cast<std::int64_t>(v[3])};
}

// A checkpoint whose tensors do not fit the model its folder's config.toml builds: the folder was
// changed after the run. Not a damaged file, so no older checkpoint is tried in its place.
class CheckpointMismatch : public Error {
 public:
  using Error::Error;
};

// Every parameter's and buffer's shape, by name.
std::map<std::string, std::vector<std::int64_t>> tensor_shapes(const torch::nn::Module& model) {
  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& item : model.named_parameters())
    shapes[item.key()] = item.value().sizes().vec();
  for (const auto& item : model.named_buffers())
    shapes[item.key()] = item.value().sizes().vec();
  return shapes;
}

// Text kept in a checkpoint, as bytes.
torch::Tensor text_tensor(std::string text) {
  return torch::from_blob(text.data(), {static_cast<std::int64_t>(text.size())}, torch::kUInt8)
      .clone();
}

// The text a checkpoint keeps under `key`, or nullopt in checkpoints written before it was kept.
std::optional<std::string> read_text(torch::serialize::InputArchive& archive,
                                     const std::string& key) {
  torch::Tensor bytes;
  if (!archive.try_read(key, bytes)) return std::nullopt;
  bytes = bytes.to(torch::kCPU).contiguous();
  return std::string(static_cast<const char*>(bytes.data_ptr()),
                     static_cast<std::size_t>(bytes.numel()));
}

std::int64_t read_checkpoint(const std::string& file, TransformerEncoder& model,
                             torch::optim::Optimizer* optimizer, const StoredConfig* folder_config,
                             std::string& metrics, std::optional<TrainingTime>& time) {
  torch::serialize::InputArchive archive, model_archive;
  const torch::Device device = model_device(model);
  archive.load_from(file, device);
  // The configuration the checkpoint was trained as, against the folder's: an edit that keeps
  // every shape (heads, a PE parameter, the task's data) would otherwise load and run silently.
  if (const auto trained_as = read_text(archive, "config_toml"); trained_as && folder_config) {
    // A run copied into another experiment (pelab run --reuse) keeps its source's checkpoint:
    // the names differ, the training is the same.
    const auto unnamed = [](std::map<std::string, std::string> identity) {
      identity.erase("experiment.name");
      identity.erase("experiment.point");
      return identity;
    };
    const auto changes =
        StoredConfig::identity_changes(unnamed(StoredConfig::parse(*trained_as, file).identity()),
                                       unnamed(folder_config->identity()));
    if (!changes.empty()) {
      throw CheckpointMismatch(fmt::format(
          "{} was trained with another configuration than its folder's {} now holds ({}{}): the "
          "run folder was changed after the run; restore {}, or train the run again (pelab run "
          "... --force)",
          file, RunFolder::kConfigFile, changes.front(),
          changes.size() > 1 ? fmt::format(", and {} more", changes.size() - 1) : "",
          RunFolder::kConfigFile));
    }
  }
  archive.read("model", model_archive);
  // LibTorch's load replaces each tensor with the stored one whatever its shape: a model built
  // from an edited config.toml would then fail deep inside a later forward.
  const auto expected = tensor_shapes(model);
  model.load(model_archive);
  std::vector<std::string> differing;
  for (const auto& [name, shape] : tensor_shapes(model)) {
    const auto it = expected.find(name);
    if (it != expected.end() && it->second != shape)
      differing.push_back(fmt::format("{} is [{}] in the checkpoint, [{}] in the model", name,
                                      fmt::join(shape, ", "), fmt::join(it->second, ", ")));
  }
  if (!differing.empty()) {
    throw CheckpointMismatch(fmt::format(
        "{} does not fit the model that its folder's {} builds ({}{}): the run folder was changed "
        "after the run (an edited {}?); restore it, or delete the folder and train the run again",
        file, RunFolder::kConfigFile, differing.front(),
        differing.size() > 1 ? fmt::format(", and {} more", differing.size() - 1) : "",
        RunFolder::kConfigFile));
  }
  torch::Tensor epoch;
  archive.read("epoch", epoch);
  metrics = read_text(archive, "metrics_csv").value_or("");
  time = read_training_time(archive);
  if (optimizer != nullptr) {
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer->load(optimizer_archive);
    torch::Tensor rng_state;
    archive.read("rng_state", rng_state);
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle: shares its state
    generator.set_state(rng_state.to(torch::kCPU));
    torch::Tensor device_rng_state;  // a checkpoint written on a GPU
    if (!device.is_cpu() && archive.try_read("device_rng_state", device_rng_state)) {
      at::Generator device_generator = at::globalContext().defaultGenerator(device);
      device_generator.set_state(device_rng_state.to(torch::kCPU));
    }
  }
  return epoch.item<std::int64_t>();
}

std::string without_backtrace(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

}  // namespace

RunFolder::RunFolder(std::string dir) : dir_(std::move(dir)) {}

std::string RunFolder::path(const std::string& relative) const {
  return (fs::path(dir_) / relative).string();
}

std::string StoredConfig::toml(const std::string& key) const {
  const auto it = values.find(key);
  return it == values.end() ? std::string("(absent)") : it->second.toml;
}

std::vector<std::string> StoredConfig::differences(const StoredConfig& other,
                                                   const std::set<std::string>& ignored) const {
  std::set<std::string> keys;
  for (const auto& [key, value] : values)
    keys.insert(key);
  for (const auto& [key, value] : other.values)
    keys.insert(key);
  std::vector<std::string> found;
  for (const auto& key : keys) {
    if (ignored.count(key) || toml(key) == other.toml(key)) continue;
    found.push_back(fmt::format("{}: {} -> {}", key, toml(key), other.toml(key)));
  }
  return found;
}

std::map<std::string, std::string> StoredConfig::identity() const {
  std::map<std::string, std::string> identity;
  for (const auto& [key, value] : values) {
    if (per_run_keys().count(key) || key.rfind("probe.", 0) == 0) continue;
    identity.emplace(key, value.toml);
  }
  return identity;
}

std::vector<std::string> StoredConfig::identity_changes(
    const std::map<std::string, std::string>& recorded,
    const std::map<std::string, std::string>& now) {
  const auto value = [](const std::map<std::string, std::string>& values, const std::string& key) {
    const auto it = values.find(key);
    return it == values.end() ? std::string("(absent)") : it->second;
  };
  std::set<std::string> keys;
  for (const auto* values : {&recorded, &now}) {
    for (const auto& [key, text] : *values)
      keys.insert(key);
  }
  std::vector<std::string> changes;
  for (const auto& key : keys) {
    if (value(recorded, key) != value(now, key))
      changes.push_back(fmt::format("{}: {} -> {}", key, value(recorded, key), value(now, key)));
  }
  return changes;
}

std::optional<std::string> StoredConfig::shown(const std::string& key) const {
  const auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  return it->second.shown;
}

std::optional<std::int64_t> StoredConfig::integer(const std::string& key) const {
  const auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  try {
    std::size_t used = 0;
    const std::int64_t value = std::stoll(it->second.toml, &used);
    if (used == it->second.toml.size()) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<double> StoredConfig::number(const std::string& key) const {
  const auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  try {
    std::size_t used = 0;
    const double value = std::stod(it->second.toml, &used);
    if (used == it->second.toml.size()) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::vector<std::string> StoredConfig::probe_plugins() const {
  std::vector<std::string> plugins;
  for (std::size_t i = 0;; ++i) {
    const auto plugin = shown(fmt::format("probe.{}.plugin", i));
    if (!plugin) break;
    plugins.push_back(*plugin);
  }
  return plugins;
}

StoredConfig StoredConfig::parse(const std::string& text, const std::string& file) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw Error(
        fmt::format("{}:{}: invalid TOML: {}", file, e.source().begin.line, e.description()));
  }
  StoredConfig config;
  flatten(root, "", config.values);
  return config;
}

bool RunFolder::is_run_folder(const std::string& dir) {
  return fs::is_regular_file(fs::path(dir) / kConfig);
}

std::string RunFolder::config_path() const {
  return path(kConfig);
}

bool RunFolder::has_config() const {
  return fs::is_regular_file(path(kConfig));
}

StoredConfig RunFolder::read_stored_config() const {
  return StoredConfig::parse(read_config_text(), config_path());
}

StoredConfig RunFolder::read_resolved_config(Registry& registry) const {
  try {
    return StoredConfig::parse(read_config(registry).to_toml(), config_path());
  } catch (const Error&) {
    return read_stored_config();
  }
}

std::string RunFolder::read_config_text() const {
  PELAB_CHECK(has_config(),
              "'{}' is not a run folder: it has no config.toml (a run folder is "
              "<out>/<experiment>/<point>/seed-<s>/)",
              dir_);
  return read_file(path(kConfig));
}

void RunFolder::write_config(const RunConfig& config) const {
  write_file_atomically(path(kConfig), config.to_toml());
}

RunConfig RunFolder::read_config(Registry& registry, const std::string& text,
                                 const std::vector<std::string>& overrides) const {
  const std::string file = config_path();
  const std::string document = text.empty() ? read_config_text() : text;
  const Manifest manifest = Manifest::from_string(document, file, registry, overrides);
  PELAB_CHECK(manifest.runs().size() == 1,
              "{} expands to {} runs; a run's config.toml describes exactly one", file,
              manifest.runs().size());
  RunConfig config = manifest.runs().front();
  if (config.point.empty()) {
    // Written before the sweep point was a key of [experiment]: it was a comment.
    std::istringstream lines(document);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(kLegacyPointMarker, 0) == 0) {
        config.point = line.substr(std::string(kLegacyPointMarker).size());
        config.experiment_params.set("point", config.point);
      }
    }
  }
  return config;
}

void RunFolder::write_metrics(const std::vector<MetricRow>& rows) const {
  write_file_atomically(path(kMetrics), metrics_csv(rows));
}

std::vector<MetricRow> RunFolder::read_metrics(std::int64_t last_epoch) const {
  const std::string file = path(kMetrics);
  if (!fs::exists(file)) return {};
  return parse_metrics(read_file(file), file, last_epoch);
}

std::vector<MetricRow> RunFolder::parse_metrics(const std::string& text, const std::string& file,
                                                std::int64_t last_epoch) {
  // pelab ends every row with a newline: a file that does not end with one was cut short inside
  // its last row, whose value may still parse (0.69 of 0.6931).
  if (!text.empty() && text.back() != '\n') {
    const std::size_t start = text.rfind('\n');
    throw Error(
        fmt::format("{}: its last row is cut short ('{}'); delete the run folder to start "
                    "the run over",
                    file, start == std::string::npos ? text : text.substr(start + 1)));
  }
  std::vector<MetricRow> rows;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  PELAB_CHECK(line == "epoch,split,group,metric,value",
              "{}:1: not a pelab metrics file (its header is '{}'); delete the run folder to start "
              "the run over",
              file, line);
  for (int number = 2; std::getline(in, line); ++number) {
    const std::vector<std::string> fields = parse_csv_line(line);
    MetricRow row;
    try {
      PELAB_CHECK(fields.size() == 5, "5 fields expected");
      std::size_t used = 0;
      row.epoch = std::stoll(fields[0], &used);
      PELAB_CHECK(used == fields[0].size(), "bad epoch");
      row.value = std::stod(fields[4], &used);  // also "nan" and "inf"
      PELAB_CHECK(used == fields[4].size(), "bad value");
    } catch (const std::exception&) {
      throw Error(
          fmt::format("{}:{}: malformed row '{}'; delete the run folder to start the run "
                      "over",
                      file, number, line));
    }
    row.split = fields[1];
    row.group = fields[2];
    row.metric = fields[3];
    if (row.epoch <= last_epoch) rows.push_back(std::move(row));
  }
  return rows;
}

std::string RunFolder::missing_metrics(const std::vector<MetricRow>& rows, std::int64_t epoch,
                                       std::int64_t eval_every) {
  std::set<std::int64_t> trained, evaluated;
  for (const MetricRow& row : rows)
    (row.split == "train_epoch" ? trained : evaluated).insert(row.epoch);
  std::vector<std::string> missing;
  for (std::int64_t e = 1; e <= epoch; ++e) {
    if (!trained.count(e)) missing.push_back(fmt::format("the training loss of epoch {}", e));
  }
  for (std::int64_t e = 0; e <= epoch; e += std::max<std::int64_t>(1, eval_every)) {
    if (!evaluated.count(e)) missing.push_back(fmt::format("the evaluation of epoch {}", e));
  }
  if (missing.size() > 3) {
    const std::size_t more = missing.size() - 2;
    missing.resize(2);
    missing.push_back(fmt::format("{} more", more));
  }
  return fmt::format("{}", fmt::join(missing, ", "));
}

std::string RunFolder::snapshot_name(const std::string& what, std::int64_t epoch) {
  return fmt::format("{}/{}-epoch-{:06}.npy", kSnapshotFolder, what, epoch);
}

std::string RunFolder::snapshot_pattern(const std::string& what) {
  return what + "-epoch-*.npy";
}

void RunFolder::write_snapshot(const PESnapshot& snapshot) const {
  if (snapshot.tables.defined())
    write_npy(path(snapshot_name("tables", snapshot.epoch)), snapshot.tables);
  if (snapshot.kernels.defined())
    write_npy(path(snapshot_name("kernels", snapshot.epoch)), snapshot.kernels);
  for (const auto& [name, values] : snapshot.tensors)
    write_npy(path(snapshot_name(kParameterPrefix + name, snapshot.epoch)), values);
}

std::string RunFolder::snapshot_folder() const {
  return path(kSnapshotFolder);
}

namespace {

// A PE snapshot's file name, `tables-epoch-NNNNNN.npy`, `kernels-...` or `param-<name>-...`: its
// kind, the parameter's name (for a parameter) and its epoch.
const std::regex& snapshot_file_pattern() {
  static const std::regex pattern("(tables|kernels|param-(.+))-epoch-([0-9]+)\\.npy");
  return pattern;
}

}  // namespace

std::vector<std::int64_t> RunFolder::snapshot_file_epochs() const {
  std::vector<std::int64_t> epochs;
  const fs::path folder = snapshot_folder();
  if (!fs::is_directory(folder)) return epochs;
  const std::regex& name = snapshot_file_pattern();
  for (const auto& entry : fs::directory_iterator(folder)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, match, name)) epochs.push_back(std::stoll(match[3].str()));
  }
  std::sort(epochs.begin(), epochs.end());
  return epochs;
}

std::string RunFolder::why_not_whole(const RunSummary& summary, std::int64_t eval_every) const {
  std::vector<MetricRow> rows;
  try {
    rows = read_metrics();
  } catch (const Error& e) {
    return e.what();
  }
  const std::string missing = missing_metrics(rows, summary.epoch, eval_every);
  if (!missing.empty()) return fmt::format("its {} lacks {}", kMetricsFile, missing);
  const bool final_evaluated = std::any_of(rows.begin(), rows.end(), [&](const MetricRow& row) {
    return row.epoch == summary.epoch && row.split != "train_epoch";
  });
  if (!final_evaluated)
    return fmt::format("its {} lacks the final evaluation (epoch {})", kMetricsFile, summary.epoch);
  const auto files = static_cast<std::int64_t>(snapshot_file_epochs().size());
  if (summary.snapshot_files && files != *summary.snapshot_files)
    return fmt::format("its {}/ holds {} snapshot file(s) where the run wrote {}", kSnapshotFolder,
                       files, *summary.snapshot_files);
  return "";
}

std::vector<PESnapshot> RunFolder::read_snapshots(std::int64_t last_epoch) const {
  std::map<std::int64_t, PESnapshot> by_epoch;
  const fs::path folder = snapshot_folder();
  if (!fs::is_directory(folder)) return {};
  const std::regex& name = snapshot_file_pattern();
  for (const auto& entry : fs::directory_iterator(folder)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, match, name)) continue;
    const std::int64_t epoch = std::stoll(match[3].str());
    if (epoch > last_epoch) continue;
    PESnapshot& snapshot = by_epoch[epoch];
    snapshot.epoch = epoch;
    const std::string kind = match[1].str();
    torch::Tensor& into = kind == "tables"    ? snapshot.tables
                          : kind == "kernels" ? snapshot.kernels
                                              : snapshot.tensors[match[2].str()];
    into = read_npy(entry.path().string());
  }
  std::vector<PESnapshot> snapshots;
  for (auto& [epoch, snapshot] : by_epoch)
    snapshots.push_back(std::move(snapshot));
  return snapshots;
}

namespace {

// The last of a snapshot folder's files `<what>-epoch-NNNNNN.npy`, or an undefined tensor.
torch::Tensor read_last_snapshot(const fs::path& folder, const std::string& what) {
  if (!fs::is_directory(folder)) return {};
  const std::string prefix = what + "-epoch-";
  std::string last;  // the names sort by epoch: six digits, zero-padded
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string file = entry.path().filename().string();
    const bool digits = file.size() == prefix.size() + 10 &&
                        std::all_of(file.begin() + static_cast<std::ptrdiff_t>(prefix.size()),
                                    file.end() - 4, [](char c) { return c >= '0' && c <= '9'; });
    if (digits && file.rfind(prefix, 0) == 0 && file.compare(file.size() - 4, 4, ".npy") == 0 &&
        file > last)
      last = file;
  }
  if (last.empty()) return {};
  return read_npy((folder / last).string());
}

}  // namespace

torch::Tensor RunFolder::read_final_tables() const {
  return read_last_snapshot(snapshot_folder(), "tables");
}

torch::Tensor RunFolder::read_final_parameter(const std::string& name) const {
  return read_last_snapshot(snapshot_folder(), kParameterPrefix + name);
}

std::string RunFolder::probe_array_file(const std::string& name, const std::string& array) {
  return fmt::format("{}/{}-{}.npy", kProbeFolder, name, array);
}

std::string RunFolder::write_probe_array(const std::string& name, const std::string& array,
                                         const torch::Tensor& values) const {
  const std::string relative = probe_array_file(name, array);
  write_npy(path(relative), values);
  return relative;
}

void RunFolder::remove_probe_arrays(const std::string& name) const {
  const fs::path folder = path(kProbeFolder);
  boost::system::error_code ignored;
  if (!fs::is_directory(folder, ignored)) return;
  const std::string prefix = name + "-";
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) == 0 && entry.path().extension() == ".npy")
      stale.push_back(entry.path());
  }
  for (const auto& file : stale)
    fs::remove(file, ignored);
}

void RunFolder::write_probe_record(const ProbeOutcome& outcome) const {
  json document = {{"probe", outcome.plugin}};
  if (outcome.epoch) document["epoch"] = *outcome.epoch;
  document["scalars"] = scalars_json(outcome.scalars);  // NaN is written as null
  if (!outcome.headlines.empty()) document["headlines"] = headlines_json(outcome.headlines);
  document["arrays"] = outcome.arrays;
  if (!outcome.note.empty()) document["note"] = outcome.note;
  if (!outcome.error.empty()) document["error"] = outcome.error;
  write_file_atomically(path(fmt::format("{}/{}.json", kProbeFolder, outcome.name)),
                        json_file_text(document));
}

std::optional<ProbeOutcome> RunFolder::read_probe_record(const std::string& name) const {
  const std::string file = path(fmt::format("{}/{}.json", kProbeFolder, name));
  if (!fs::is_regular_file(file)) return std::nullopt;
  // Written atomically: one that does not parse was damaged after the run, and read as absent it
  // would drop the probe's headlines and notes from a report without a word.
  const auto damaged = [&](const std::string& what) {
    return Error(
        fmt::format("{} {}: restore it from a copy, or run the probe again (pelab probe "
                    "{} --probe {})",
                    file, what, dir_, name));
  };
  const json document = json::parse(read_file(file), nullptr, false);
  if (document.is_discarded() || !document.is_object()) throw damaged("is not a JSON object");
  ProbeOutcome outcome;
  outcome.name = name;
  try {
    outcome.plugin = document.value("probe", "");
    if (document.contains("epoch") && document["epoch"].is_number_integer())
      outcome.epoch = document["epoch"].get<std::int64_t>();
    if (document.contains("scalars")) outcome.scalars = scalars_of(document["scalars"]);
    // A record of a pelab before headlines has none.
    if (document.contains("headlines") && document["headlines"].is_array())
      outcome.headlines = headlines_of(document["headlines"]);
    if (document.contains("arrays") && document["arrays"].is_array()) {
      for (const auto& array : document["arrays"]) {
        if (array.is_string()) outcome.arrays.push_back(array.get<std::string>());
      }
    }
    for (auto [field, into] :
         {std::make_pair("note", &outcome.note), std::make_pair("error", &outcome.error)}) {
      if (document.contains(field) && document[field].is_string())
        *into = document[field].get<std::string>();
    }
  } catch (const json::exception& e) {
    throw damaged(fmt::format("has a field of the wrong type ({})", without_backtrace(e)));
  }
  return outcome;
}

bool RunFolder::has_checkpoint() const {
  return fs::is_regular_file(path(kCheckpoint)) || fs::is_regular_file(path(kPreviousCheckpoint));
}

void RunFolder::save_checkpoint(TransformerEncoder& model, torch::optim::Optimizer& optimizer,
                                std::int64_t epoch, const std::vector<MetricRow>& rows,
                                const TrainingTime& time) const {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive, optimizer_archive;
  model.save(model_archive);
  optimizer.save(optimizer_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epoch", torch::tensor(epoch));
  archive.write("rng_state", at::detail::getDefaultCPUGenerator().get_state());
  // On a GPU, dropout draws from the device's own generator.
  const torch::Device device = model_device(model);
  if (!device.is_cpu())
    archive.write("device_rng_state", at::globalContext().defaultGenerator(device).get_state());
  // A copy of metrics.csv as of this epoch (a few kB): a resumed run can restore its metrics from
  // it when metrics.csv itself has been damaged.
  archive.write("metrics_csv", text_tensor(metrics_csv(rows)));
  archive.write("training_time", training_time_tensor(time));
  if (has_config()) archive.write("config_toml", text_tensor(read_config_text()));
  std::ostringstream bytes;
  archive.save_to(bytes);
  // The last checkpoint stays whole until the new one is: a rename is atomic, and a crash between
  // the two renames leaves checkpoint.previous.pt, which load_checkpoint falls back to.
  boost::system::error_code error;
  if (fs::is_regular_file(path(kCheckpoint))) {
    fs::rename(path(kCheckpoint), path(kPreviousCheckpoint), error);
    PELAB_CHECK(!error, "cannot keep the previous checkpoint as {}: {}", path(kPreviousCheckpoint),
                error.message());
  }
  write_file_atomically(path(kCheckpoint), bytes.str());
}

RunFolder::LoadedCheckpoint RunFolder::load_checkpoint(TransformerEncoder& model,
                                                       torch::optim::Optimizer* optimizer) const {
  LoadedCheckpoint loaded;
  std::vector<std::string> problems;
  const std::optional<StoredConfig> folder_config =
      has_config() ? std::optional<StoredConfig>(read_stored_config()) : std::nullopt;
  for (const char* name : {kCheckpoint, kPreviousCheckpoint}) {
    const std::string file = path(name);
    if (!fs::is_regular_file(file)) continue;
    try {
      loaded.epoch =
          read_checkpoint(file, model, optimizer, folder_config ? &*folder_config : nullptr,
                          loaded.metrics_csv, loaded.time);
      loaded.file = file;
      if (!problems.empty()) {
        loaded.warning = fmt::format("{}; resumed from {} (epoch {}) instead", problems.front(),
                                     file, loaded.epoch);
      }
      return loaded;
    } catch (const CheckpointMismatch&) {
      throw;
    } catch (const std::exception& e) {
      problems.push_back(fmt::format("{} is unreadable ({})", file, without_backtrace(e)));
    }
  }
  PELAB_CHECK(!problems.empty(), "{} has no checkpoint", dir_);
  throw Error(
      fmt::format("{}. The checkpoint may be truncated (a full disk, a copy cut short): "
                  "delete it to start the run over, or run with --force",
                  fmt::join(problems, "; ")));
}

void RunFolder::remove_previous_checkpoint() const {
  boost::system::error_code ignored;
  fs::remove(path(kPreviousCheckpoint), ignored);
}

std::string RunCompute::short_text() const {
  std::vector<std::string> parts;
  for (const std::string* part : {&blas_kernel, &aten_kernels, &precision}) {
    if (!part->empty()) parts.push_back(*part);
  }
  if (!subnormals.empty()) parts.push_back("subnormals " + subnormals);
  return parts.empty() ? std::string("-") : fmt::format("{}", fmt::join(parts, ", "));
}

std::string RunFolder::summary_path() const {
  return path(kSummary);
}

std::string RunFolder::log_path() const {
  return path(kLogFile);
}

std::string RunFolder::claim_path() const {
  return path(kClaim);
}

std::string RunFolder::lock_path() const {
  return path(kLock);
}

std::optional<RunSummary> RunFolder::read_summary() const {
  const std::string file = path(kSummary);
  if (!fs::is_regular_file(file)) return std::nullopt;
  const auto damaged = [&](const std::string& what) {
    return Error(fmt::format(
        "{} {}: it is written whole at the end of a run, so it was changed or damaged since. "
        "Restore it from a copy, or delete it to train the run again",
        file, what));
  };
  json document;
  try {
    document = json::parse(read_file(file));
  } catch (const json::parse_error& e) {
    throw damaged(fmt::format("is not JSON (byte {}: {})", e.byte,
                              std::string(e.what()).substr(std::string(e.what()).find(':') + 2)));
  } catch (const json::exception& e) {
    // The parser's other refusals, e.g. out_of_range.406 for a number beyond a double.
    throw damaged(fmt::format("is not JSON that pelab can read ({})",
                              std::string(e.what()).substr(std::string(e.what()).find(']') + 2)));
  }
  if (!document.is_object()) throw damaged("is not a JSON object");
  RunSummary summary;
  try {
    summary.status = document.value("status", "");
    summary.experiment = document.value("experiment", "");
    summary.point = document.value("point", "");
    // "epochs" in a finished run's summary, "epoch" in a failed one's.
    for (const auto& [field, into] :
         {std::make_pair("seed", &summary.seed), std::make_pair("epochs", &summary.epoch),
          std::make_pair("epoch", &summary.epoch),
          std::make_pair("parameters", &summary.parameters),
          std::make_pair("threads", &summary.threads), std::make_pair("ranks", &summary.ranks)}) {
      if (!read_integer(document, field, *into))
        throw damaged(fmt::format("has no whole number under \"{}\"", field));
    }
    summary.error = document.value("error", "");
    summary.objective = document.value("objective", "");
    summary.wall_seconds = document.value("wall_seconds", 0.0);
    summary.steps_per_second = document.value("steps_per_second", 0.0);
    summary.torch_version = document.value("torch_version", "");
    summary.reused_from = document.value("reused_from", "");
    if (document.contains("snapshot_files")) {
      std::int64_t files = 0;
      if (!read_integer(document, "snapshot_files", files))
        throw damaged("has no whole number under \"snapshot_files\"");
      summary.snapshot_files = files;
    }
    if (document.contains("plugins"))
      summary.plugins = document["plugins"].get<std::map<std::string, std::string>>();
    if (document.contains("compute") && document["compute"].is_object()) {
      const json& compute = document["compute"];
      summary.compute.cpu = compute.value("cpu", "");
      summary.compute.isa = compute.value("isa", "");
      summary.compute.blas = compute.value("blas", "");
      summary.compute.blas_kernel = compute.value("blas_kernel", "");
      summary.compute.aten_kernels = compute.value("aten_kernels", "");
      summary.compute.precision = compute.value("precision", "");
      summary.compute.subnormals = compute.value("subnormals", "");
    }
    if (document.contains("final")) summary.final_metrics = scalars_of(document["final"]);
    if (document.contains("probes") && document["probes"].is_object()) {
      for (const auto& [name, scalars] : document["probes"].items())
        summary.probes[name] = scalars_of(scalars);
    }
    if (document.contains("configuration"))
      summary.configuration = document["configuration"].get<std::map<std::string, std::string>>();
  } catch (const json::exception& e) {
    throw damaged(fmt::format("has a field of the wrong type ({})", without_backtrace(e)));
  }
  if (summary.status != "finished" && summary.status != "failed")
    throw damaged(
        fmt::format("has status \"{}\" (pelab writes \"finished\" or \"failed\")", summary.status));
  return summary;
}

void RunFolder::write_summary(const RunSummary& summary) const {
  json document = {{"status", summary.status},
                   {"experiment", summary.experiment},
                   {"point", summary.point},
                   {"seed", summary.seed}};
  if (summary.finished()) {
    document["epochs"] = summary.epoch;
    document["objective"] = summary.objective;
    document["parameters"] = summary.parameters;
    document["threads"] = summary.threads;
    document["ranks"] = summary.ranks;
    document["wall_seconds"] = summary.wall_seconds;
    document["steps_per_second"] = summary.steps_per_second;
    document["torch_version"] = summary.torch_version;
    document["plugins"] = summary.plugins;
    document["compute"] = {{"cpu", summary.compute.cpu},
                           {"isa", summary.compute.isa},
                           {"blas", summary.compute.blas},
                           {"blas_kernel", summary.compute.blas_kernel},
                           {"aten_kernels", summary.compute.aten_kernels},
                           {"precision", summary.compute.precision},
                           {"subnormals", summary.compute.subnormals}};
    document["final"] = scalars_json(summary.final_metrics);
    json probes = json::object();
    for (const auto& [name, scalars] : summary.probes)
      probes[name] = scalars_json(scalars);
    document["probes"] = probes;
    if (!summary.reused_from.empty()) document["reused_from"] = summary.reused_from;
    if (summary.snapshot_files) document["snapshot_files"] = *summary.snapshot_files;
    if (!summary.configuration.empty()) document["configuration"] = summary.configuration;
  } else {
    document["epoch"] = summary.epoch;
    document["error"] = summary.error;
  }
  write_file_atomically(path(kSummary), json_file_text(document));
}

void RunFolder::check_config_unchanged(const RunSummary& summary) const {
  if (summary.configuration.empty() || !has_config()) return;
  const auto changes =
      StoredConfig::identity_changes(summary.configuration, read_stored_config().identity());
  PELAB_CHECK(changes.empty(),
              "{} was changed after the run ended: {}{} ({} records what it was trained with). "
              "Restore it, or train the run again (pelab run ... --force)",
              config_path(), changes.front(),
              changes.size() > 1 ? fmt::format(", and {} more", changes.size() - 1) : "",
              summary_path());
}

void RunFolder::remove_stale_temporaries() const {
  static const std::regex temporary(".+\\.tmp\\.[0-9]+");
  boost::system::error_code ignored;
  for (const fs::path& folder :
       {fs::path(dir_), fs::path(dir_) / kSnapshotFolder, fs::path(dir_) / kProbeFolder}) {
    if (!fs::is_directory(folder, ignored)) continue;
    std::vector<fs::path> stale;
    for (fs::directory_iterator it(folder, ignored), end; !ignored && it != end;
         it.increment(ignored)) {
      if (std::regex_match(it->path().filename().string(), temporary)) stale.push_back(it->path());
    }
    for (const auto& file : stale)
      fs::remove(file, ignored);
  }
}

void RunFolder::clear_outputs() const {
  boost::system::error_code ignored;
  for (const char* stale : {kMetrics, kSummary, kCheckpoint, kPreviousCheckpoint})
    fs::remove(path(stale), ignored);
  fs::remove_all(path(kSnapshotFolder), ignored);
  clear_probes();
}

void RunFolder::clear_probes() const {
  boost::system::error_code ignored;
  fs::remove_all(path(kProbeFolder), ignored);
}

void RunFolder::copy_outputs_from(const RunFolder& source) const {
  const auto copy = [&](const std::string& relative) {
    write_file_atomically(path(relative), read_file(source.path(relative)));
  };
  for (const char* file : {kMetrics, kCheckpoint, kLogFile}) {
    if (fs::is_regular_file(source.path(file))) copy(file);
  }
  for (const char* folder : {kSnapshotFolder, kProbeFolder}) {
    boost::system::error_code missing;
    for (fs::directory_iterator it(source.path(folder), missing), end; !missing && it != end;
         it.increment(missing)) {
      if (fs::is_regular_file(it->path()))
        copy((fs::path(folder) / it->path().filename()).string());
    }
  }
}

}  // namespace pelab
