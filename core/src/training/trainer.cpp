#include "pelab/training/trainer.h"

#include <malloc.h>

#include <cmath>
#include <limits>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "base/fnv1a.h"
#include "pelab/base/error.h"
#include "pelab/config/sections.h"
#include "pelab/training/collective.h"

namespace pelab {

TrainConfig::TrainConfig() : TrainConfig(train_schema().defaults()) {}

TrainConfig TrainConfig::from_params(const Params& params) {
  return TrainConfig(params);
}

TrainConfig::TrainConfig(const Params& params)
    : optimizer(params.string("optimizer")),
      lr(params.real("lr")),
      weight_decay(params.real("weight_decay")),
      momentum(params.real("momentum")),
      batch_size(params.integer("batch_size")),
      epochs(params.integer("epochs")),
      eval_every(params.integer("eval_every")),
      checkpoint_every(params.integer("checkpoint_every")),
      shuffle(params.boolean("shuffle")),
      eval_batch_size(params.integer("eval_batch_size")),
      lr_schedule(params.string("lr_schedule")),
      warmup_epochs(params.real("warmup_epochs")),
      min_lr(params.real("min_lr")),
      bf16_autocast(params.string("precision") == "bf16"),
      eval_dropout(params.string("eval_dropout") == "on"     ? EvalDropout::kOn
                   : params.string("eval_dropout") == "both" ? EvalDropout::kBoth
                                                             : EvalDropout::kOff),
      device(params.string("device")) {}

namespace {

// Autocast to bfloat16 for one scope, on the CPU or a GPU; a no-op when not enabled. Autocast's
// cast cache is cleared on exit, as torch.autocast does, so that updated fp32 weights are cast
// afresh.
class Bf16Autocast {
 public:
  Bf16Autocast(bool enabled, const torch::Device& device)
      : enabled_(enabled), cpu_(device.is_cpu()) {
    if (!enabled_) return;
    if (cpu_) {
      previous_enabled_ = at::autocast::is_cpu_enabled();
      previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    } else {
      previous_enabled_ = at::autocast::is_enabled();
      previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    }
    at::autocast::increment_nesting();
  }
  ~Bf16Autocast() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (cpu_) {
      at::autocast::set_cpu_enabled(previous_enabled_);
      at::autocast::set_autocast_cpu_dtype(previous_dtype_);
    } else {
      at::autocast::set_enabled(previous_enabled_);
      at::autocast::set_autocast_gpu_dtype(previous_dtype_);
    }
  }
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  bool enabled_;
  bool cpu_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kBFloat16;
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& config,
                                                        std::vector<torch::Tensor> parameters) {
  if (config.optimizer == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        parameters, torch::optim::AdamWOptions(config.lr).weight_decay(config.weight_decay));
  }
  if (config.optimizer == "adam") {
    return std::make_unique<torch::optim::Adam>(
        parameters, torch::optim::AdamOptions(config.lr).weight_decay(config.weight_decay));
  }
  PELAB_CHECK(config.optimizer == "sgd", "unknown optimizer '{}': use adamw, adam or sgd",
              config.optimizer);
  return std::make_unique<torch::optim::SGD>(parameters, torch::optim::SGDOptions(config.lr)
                                                             .momentum(config.momentum)
                                                             .weight_decay(config.weight_decay));
}

// The seed of a split's evaluation masks: the split's name alone (FNV-1a), so that every run and
// every epoch scores the same masked tokens.
std::uint64_t evaluation_mask_seed(const std::string& split) {
  return fnv1a(split);
}

// The number of masked values of a batch: its masked tokens times the values of a token.
double masked_values(const torch::Tensor& mask, const torch::Tensor& targets) {
  return static_cast<double>(mask.sum().item<std::int64_t>() * targets.size(2));
}

// Squared error summed over the masked tokens' values, divided by `values` (the batch's masked
// values, of which a rank's share holds a part): predictions and targets [batch, tokens,
// outputs], mask [batch, tokens].
torch::Tensor masked_mse(const torch::Tensor& predictions, const torch::Tensor& targets,
                         const torch::Tensor& mask, double values) {
  const torch::Tensor weight = mask.unsqueeze(-1).to(predictions.scalar_type());
  return (predictions - targets).pow(2).mul(weight).sum().div(values);
}

// torch DDP's default bucket size (bucket_cap_mb = 25).
constexpr std::int64_t kGradientBucketBytes = std::int64_t{25} << 20;

}  // namespace

// LibTorch's CPU allocator is plain malloc. glibc serves large blocks with fresh mmaps and hands
// freed memory back to the kernel, so every training step would page-fault its activations in
// again (16% of the paper's step, docs/performance.md). Keeping freed memory in the heap lets the
// next step reuse it; the cost is that the process keeps its peak memory until it exits.
void keep_freed_memory_for_reuse() {
  static const bool once = [] {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
    return true;
  }();
  (void)once;
}

Trainer::Trainer(TransformerEncoder& model, Task& task, const TrainConfig& config,
                 Collective* ranks, const std::string& task_name)
    : model_(model),
      task_(task),
      config_(config),
      objective_(task.objective()),
      split_names_(task.splits()),
      ranks_(ranks),
      device_(config.device) {
  keep_freed_memory_for_reuse();
  PELAB_CHECK(!split_names_.empty(), "the task declares no splits");
  PELAB_INTERNAL_ASSERT(
      model.objective().kind == objective_.kind && model.objective().outputs == objective_.outputs,
      "the model was built for another objective than the task's");
  const Layout layout = task.layout();
  for (const auto& split : split_names_) {
    Dataset dataset = load_checked_split(task, split, task_name);
    if (objective_.masked() && !dataset.masks.defined()) {
      dataset.masks =
          draw_token_masks(dataset.size(), layout.tokens, dataset.mask_ratio,
                           at::make_generator<at::CPUGeneratorImpl>(evaluation_mask_seed(split)));
    }
    datasets_.emplace(split, std::move(dataset));
  }
  PELAB_CHECK(datasets_.at(split_names_.front()).size() > 0, "the training split '{}' is empty",
              split_names_.front());
  model_.to(device_);  // before the optimizer, whose state follows the parameters
  optimizer_ = make_optimizer(config_, model_.parameters());
}

std::int64_t Trainer::steps_per_epoch() const {
  const std::int64_t samples = datasets_.at(split_names_.front()).size();
  return (samples + config_.batch_size - 1) / config_.batch_size;
}

double Trainer::learning_rate(std::int64_t step) const {
  const auto per_epoch = static_cast<double>(steps_per_epoch());
  const double warmup = config_.warmup_epochs * per_epoch;
  const double at = static_cast<double>(step);
  if (at < warmup) return config_.lr * (at + 1.0) / warmup;
  const double decay_steps = static_cast<double>(config_.epochs) * per_epoch - warmup;
  if (config_.lr_schedule == "constant" || decay_steps <= 0.0) return config_.lr;
  const double progress = std::clamp((at - warmup) / decay_steps, 0.0, 1.0);
  if (config_.lr_schedule == "cosine") {
    return config_.min_lr + (config_.lr - config_.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  PELAB_INTERNAL_ASSERT(config_.lr_schedule == "linear", "unknown lr_schedule '{}'",
                        config_.lr_schedule);
  return config_.lr + (config_.min_lr - config_.lr) * progress;
}

double Trainer::train_epoch() {
  model_.train();
  const Dataset& train = datasets_.at(split_names_.front());
  const std::int64_t samples = train.size();
  torch::Tensor order =
      config_.shuffle ? torch::randperm(samples, torch::kInt64) : torch::arange(samples);
  // Dropout and noise draw per share, so the ranks' generators may part: rank 0's order is
  // every rank's, so that each batch is one batch.
  if (data_parallel()) ranks_->broadcast(order);
  double loss_sum = 0.0;
  for (std::int64_t start = 0, step = 0; start < samples; start += config_.batch_size, ++step) {
    const torch::Tensor index =
        order.slice(0, start, std::min(start + config_.batch_size, samples));
    try {
      loss_sum +=
          train_step(train.inputs.index_select(0, index), train.targets.index_select(0, index)) *
          static_cast<double>(index.size(0));
    } catch (const Error& error) {
      throw Error(fmt::format("at step {} of the epoch: {}", step, error.what()));
    }
  }
  return loss_sum / static_cast<double>(samples);
}

double Trainer::train_step(const torch::Tensor& batch_inputs, const torch::Tensor& batch_targets,
                           const torch::Tensor& masks) {
  model_.train();
  // The batch goes to the model's device (on the CPU, .to() returns the tensor itself).
  const torch::Tensor inputs = batch_inputs.to(device_), targets = batch_targets.to(device_);
  torch::Tensor batch_masks = masks;
  if (objective_.masked() && !batch_masks.defined()) {
    // A fresh mask per sample and step, from the run's seeded generator.
    batch_masks = draw_token_masks(inputs.size(0), inputs.size(1),
                                   datasets_.at(split_names_.front()).mask_ratio,
                                   at::detail::getDefaultCPUGenerator());
  }
  if (batch_masks.defined()) batch_masks = batch_masks.to(device_);
  const auto perturb = [this](const torch::Tensor& x) { return task_.perturb_embedding(x, true); };
  // Dropping the gradients (rather than zeroing them) lets backward hand its freshly computed
  // gradients to the parameters without a fill and an add per parameter.
  for (auto& parameter : model_.parameters())
    parameter.mutable_grad().reset();
  double value = 0.0;
  if (!data_parallel()) {
    torch::Tensor loss;
    {
      Bf16Autocast autocast(config_.bf16_autocast, device_);
      if (objective_.masked()) {
        loss = masked_mse(model_.forward(inputs, perturb, batch_masks).to(torch::kFloat32), targets,
                          batch_masks, masked_values(batch_masks, targets));
      } else {
        loss = torch::nll_loss(model_.forward(inputs, perturb), targets).to(torch::kFloat32);
      }
    }
    value = loss.item<double>();
    PELAB_CHECK(std::isfinite(value),
                "the training loss became {}; lower the learning rate or check the "
                "initialisation scale",
                value);
    loss.backward();
  } else {
    // This rank's share of the batch, its loss weighted by the share so that the sum over the
    // ranks is the batch's mean.
    const std::int64_t batch = inputs.size(0);
    const auto [begin, end] = Collective::share(batch, ranks_->rank(), ranks_->size());
    double share_loss = 0.0;
    if (end > begin) {
      const torch::Tensor x = inputs.slice(0, begin, end), y = targets.slice(0, begin, end);
      torch::Tensor loss;
      {
        Bf16Autocast autocast(config_.bf16_autocast, device_);
        if (objective_.masked()) {
          const torch::Tensor mask = batch_masks.slice(0, begin, end);
          loss = masked_mse(model_.forward(x, perturb, mask).to(torch::kFloat32), y, mask,
                            masked_values(batch_masks, targets));
        } else {
          loss = torch::nll_loss(model_.forward(x, perturb), y, {}, at::Reduction::Sum)
                     .to(torch::kFloat32)
                     .div(static_cast<double>(batch));
        }
      }
      share_loss = loss.item<double>();
      loss.backward();
    }
    // Every rank sees the same sum, so a non-finite loss stops them all alike.
    value = all_reduce_gradients(share_loss);
    PELAB_CHECK(std::isfinite(value),
                "the training loss became {}; lower the learning rate or check the "
                "initialisation scale",
                value);
  }
  const double lr = learning_rate(step_++);
  for (auto& group : optimizer_->param_groups())
    group.options().set_lr(lr);
  optimizer_->step();
  return value;
}

bool Trainer::data_parallel() const {
  return ranks_ != nullptr && ranks_->size() > 1;
}

double Trainer::all_reduce_gradients(double loss) {
  std::vector<torch::Tensor> parameters = model_.parameters();
  // Which parameters got a gradient on some rank: the others stay without one, as on one rank
  // (an optimizer skips them rather than decaying them towards zero).
  std::vector<std::int32_t> has_gradient(parameters.size(), 0);
  // Buckets of consecutive parameters of one type, each one flat tensor.
  struct Bucket {
    std::vector<std::size_t> members;
    std::int64_t bytes = 0;
  };
  std::vector<Bucket> buckets;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor& parameter = parameters[i];
    has_gradient[i] = parameter.grad().defined() ? 1 : 0;
    const std::int64_t bytes =
        parameter.numel() * static_cast<std::int64_t>(parameter.element_size());
    const bool fits =
        !buckets.empty() &&
        parameters[buckets.back().members.front()].scalar_type() == parameter.scalar_type() &&
        buckets.back().bytes + bytes <= kGradientBucketBytes;
    if (!fits) buckets.emplace_back();
    buckets.back().members.push_back(i);
    buckets.back().bytes += bytes;
  }
  std::vector<torch::Tensor> flat;
  for (const Bucket& bucket : buckets) {
    std::vector<torch::Tensor> gradients;
    for (std::size_t i : bucket.members) {
      const torch::Tensor& gradient = parameters[i].grad();
      gradients.push_back(gradient.defined()
                              ? gradient.reshape(-1)
                              : torch::zeros({parameters[i].numel()}, parameters[i].options()));
    }
    flat.push_back(torch::cat(gradients));
  }
  flat.push_back(torch::tensor(has_gradient, torch::kInt32));
  flat.push_back(torch::tensor({loss}, torch::kFloat64));
  ranks_->all_reduce_sum(flat);
  const std::int32_t* used = flat[buckets.size()].data_ptr<std::int32_t>();  // ranks with one
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    std::int64_t offset = 0;
    for (std::size_t i : buckets[b].members) {
      torch::Tensor& parameter = parameters[i];
      const std::int64_t numel = parameter.numel();
      if (used[i] > 0) {
        parameter.mutable_grad() = flat[b].slice(0, offset, offset + numel).view_as(parameter);
      } else {
        parameter.mutable_grad().reset();
      }
      offset += numel;
    }
  }
  return flat.back().item<double>();
}

void Trainer::synchronize_ranks() {
  if (!data_parallel()) return;
  torch::NoGradGuard no_grad;
  // Parameters travel as one flat tensor per type, buffers one by one (they are few).
  std::vector<torch::Tensor> parameters = model_.parameters();
  std::map<at::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const auto& parameter : parameters)
    by_type[parameter.scalar_type()].push_back(parameter);
  for (auto& [type, members] : by_type) {
    std::vector<torch::Tensor> flat_members;
    for (const auto& member : members)
      flat_members.push_back(member.reshape(-1));
    torch::Tensor flat = torch::cat(flat_members);
    ranks_->broadcast(flat);
    std::int64_t offset = 0;
    for (auto& member : members) {
      member.copy_(flat.slice(0, offset, offset + member.numel()).view_as(member));
      offset += member.numel();
    }
  }
  for (auto& buffer : model_.buffers())
    ranks_->broadcast(buffer);
  // The optimizer's state (moments, step counts) in its own serialized form, whatever it is.
  std::string optimizer_state;
  if (ranks_->rank() == 0) {
    torch::serialize::OutputArchive archive;
    optimizer_->save(archive);
    std::ostringstream out;
    archive.save_to(out);
    optimizer_state = out.str();
  }
  ranks_->broadcast_bytes(optimizer_state);
  if (ranks_->rank() != 0) {
    torch::serialize::InputArchive archive;
    std::istringstream in(optimizer_state);
    archive.load_from(in);
    optimizer_->load(archive);
  }
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  torch::Tensor generator_state = generator.get_state();
  ranks_->broadcast(generator_state);
  generator.set_state(generator_state);
  torch::Tensor step = torch::tensor({step_}, torch::kInt64);
  ranks_->broadcast(step);
  step_ = step.item<std::int64_t>();
}

std::pair<std::int64_t, std::int64_t> Trainer::evaluation_share(std::int64_t rows) const {
  if (!data_parallel()) return {0, rows};
  return Collective::share(rows, ranks_->rank(), ranks_->size());
}

torch::Tensor Trainer::gather_samples(const torch::Tensor& local, std::int64_t rows) const {
  return data_parallel() ? ranks_->all_gather_rows(local, rows) : local;
}

std::vector<MetricRow> Trainer::evaluate(std::int64_t epoch) {
  model_.eval();
  c10::InferenceMode inference;
  // Evaluation may draw random numbers (noise on the embeddings); restoring the generator
  // afterwards keeps training identical whether or how often it is evaluated.
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor rng_state = generator.get_state();
  struct Restore {
    at::Generator& generator;
    const torch::Tensor& state;
    ~Restore() { generator.set_state(state); }
  } restore{generator, rng_state};
  std::vector<MetricRow> rows;
  const auto evaluate_splits = [&](const std::string& suffix) {
    for (const auto& split : split_names_) {
      const Dataset& data = datasets_.at(split);
      if (data.size() == 0) continue;
      auto split_rows = objective_.masked() ? evaluate_masked(epoch, split, data)
                                            : evaluate_classification(epoch, split, data);
      for (auto& row : split_rows)
        row.split += suffix;
      rows.insert(rows.end(), split_rows.begin(), split_rows.end());
    }
  };
  using EvalDropout = TrainConfig::EvalDropout;
  if (config_.eval_dropout != EvalDropout::kOn) evaluate_splits("");
  if (config_.eval_dropout != EvalDropout::kOff) {
    model_.train();  // dropout active, as in training; InferenceMode still records no graph
    evaluate_splits(config_.eval_dropout == EvalDropout::kBoth ? "_dropout" : "");
    model_.eval();
  }
  return rows;
}

std::vector<MetricRow> Trainer::evaluate_classification(std::int64_t epoch,
                                                        const std::string& split,
                                                        const Dataset& data) {
  const auto perturb = [this](const torch::Tensor& x) { return task_.perturb_embedding(x, false); };
  std::vector<torch::Tensor> losses, correct;
  const auto [first, last] = evaluation_share(data.size());
  for (std::int64_t start = first; start < last; start += config_.eval_batch_size) {
    const std::int64_t end = std::min(start + config_.eval_batch_size, last);
    Bf16Autocast autocast(config_.bf16_autocast, device_);
    const torch::Tensor log_probs =
        model_.forward(data.inputs.slice(0, start, end).to(device_), perturb).to(torch::kFloat32);
    const torch::Tensor targets = data.targets.slice(0, start, end).to(device_);
    losses.push_back(torch::nll_loss(log_probs, targets, {}, at::Reduction::None).to(torch::kCPU));
    correct.push_back(log_probs.argmax(1).eq(targets).to(torch::kCPU, torch::kFloat64));
  }
  torch::Tensor loss =
      losses.empty() ? torch::empty({0}, torch::kFloat64) : torch::cat(losses).to(torch::kFloat64);
  torch::Tensor hits = correct.empty() ? torch::empty({0}, torch::kFloat64) : torch::cat(correct);
  if (data_parallel()) {
    const torch::Tensor all = gather_samples(torch::stack({loss, hits}, 1), data.size());
    loss = all.select(1, 0).contiguous();
    hits = all.select(1, 1).contiguous();
  }
  std::vector<MetricRow> rows;
  rows.push_back({epoch, split, "all", "loss", loss.mean().item<double>()});
  rows.push_back({epoch, split, "all", "accuracy", hits.mean().item<double>()});
  if (!data.groups.defined()) return rows;
  for (std::size_t group = 0; group < data.group_names.size(); ++group) {
    const torch::Tensor mask = data.groups.eq(static_cast<std::int64_t>(group));
    if (mask.sum().item<std::int64_t>() == 0) continue;
    rows.push_back({epoch, split, data.group_names[group], "loss",
                    loss.masked_select(mask).mean().item<double>()});
    rows.push_back({epoch, split, data.group_names[group], "accuracy",
                    hits.masked_select(mask).mean().item<double>()});
  }
  return rows;
}

namespace {

// Sums over a sample's masked values from which MSE and Pearson's r of any set of samples follow.
enum MaskedSum { kCount, kSumP, kSumT, kSumPP, kSumTT, kSumPT, kSumSquaredError, kMaskedSums };

// MSE and Pearson's r of the masked values pooled over the samples whose sums are `sums` [k, 7].
std::pair<double, double> mse_and_r(const torch::Tensor& sums) {
  const torch::Tensor total = sums.sum(0);
  const auto at = [&](MaskedSum which) { return total[which].item<double>(); };
  const double n = at(kCount);
  const double mse = at(kSumSquaredError) / n;
  const double cov = at(kSumPT) - at(kSumP) * at(kSumT) / n;
  const double var_p = at(kSumPP) - at(kSumP) * at(kSumP) / n;
  const double var_t = at(kSumTT) - at(kSumT) * at(kSumT) / n;
  const double r = var_p > 0 && var_t > 0 ? cov / std::sqrt(var_p * var_t)
                                          : std::numeric_limits<double>::quiet_NaN();
  return {mse, r};
}

}  // namespace

std::vector<MetricRow> Trainer::evaluate_masked(std::int64_t epoch, const std::string& split,
                                                const Dataset& data) {
  const auto perturb = [this](const torch::Tensor& x) { return task_.perturb_embedding(x, false); };
  std::vector<torch::Tensor> per_sample;
  const auto [first, last] = evaluation_share(data.size());
  for (std::int64_t start = first; start < last; start += config_.eval_batch_size) {
    const std::int64_t end = std::min(start + config_.eval_batch_size, last);
    const torch::Tensor mask = data.masks.slice(0, start, end);
    torch::Tensor predictions;
    {
      Bf16Autocast autocast(config_.bf16_autocast, device_);
      predictions =
          model_.forward(data.inputs.slice(0, start, end).to(device_), perturb, mask.to(device_));
    }
    const torch::Tensor p = predictions.to(torch::kCPU, torch::kFloat64);
    const torch::Tensor t = data.targets.slice(0, start, end).to(torch::kFloat64);
    const torch::Tensor w = mask.unsqueeze(-1).to(torch::kFloat64).expand_as(p);
    const auto sum = [](const torch::Tensor& x) { return x.sum({1, 2}); };
    per_sample.push_back(torch::stack({sum(w), sum(w * p), sum(w * t), sum(w * p * p),
                                       sum(w * t * t), sum(w * p * t), sum(w * (p - t).pow(2))},
                                      1));
  }
  const torch::Tensor sums = gather_samples(
      per_sample.empty() ? torch::empty({0, kMaskedSums}, torch::kFloat64) : torch::cat(per_sample),
      data.size());
  std::vector<MetricRow> rows;
  const auto add = [&](const std::string& group, const torch::Tensor& group_sums) {
    const auto [mse, r] = mse_and_r(group_sums);
    rows.push_back({epoch, split, group, "mse", mse});
    rows.push_back({epoch, split, group, "r", r});
  };
  add("all", sums);
  if (!data.groups.defined()) return rows;
  for (std::size_t group = 0; group < data.group_names.size(); ++group) {
    const torch::Tensor selected = data.groups.eq(static_cast<std::int64_t>(group));
    if (selected.sum().item<std::int64_t>() == 0) continue;
    add(data.group_names[group], sums.index({selected}));
  }
  return rows;
}

}  // namespace pelab
