// Writes what the PyTorch reference (pytorch_reference.py check) needs to replay pelab's training
// steps: the initial weights, a few batches and the losses pelab got on them.
//
//   pelab_reference_dump WORKLOAD OUT_DIR [STEPS]     e.g. pelab_reference_dump paper /tmp/ref 3

#include <cstdlib>
#include <iostream>
#include <string>

#include <torch/torch.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "training_workload.h"

namespace pelab::bench {
namespace {

int dump(const std::string& workload_name, const std::string& out, std::int64_t steps) {
  torch::set_num_threads(1);
  Registry registry(Registry::default_search_path());
  TrainingWorkload workload(workload_manifest(workload_name), registry);
  boost::filesystem::create_directories(out + "/weights");
  for (const auto& parameter : workload.model().named_parameters()) {
    write_npy(out + "/weights/" + parameter.key() + ".npy", parameter.value().detach());
  }
  const TrainConfig train = TrainConfig::from_params(workload.config().train);
  const Dataset& data = workload.trainer().dataset(workload.trainer().split_names().front());
  PELAB_CHECK(data.size() >= steps * train.batch_size,
              "{} steps of {} need {} samples; the "
              "training split has {}",
              steps, train.batch_size, steps * train.batch_size, data.size());
  nlohmann::json losses = nlohmann::json::array();
  for (std::int64_t step = 0; step < steps; ++step) {
    const torch::Tensor inputs =
        data.inputs.slice(0, step * train.batch_size, (step + 1) * train.batch_size);
    const torch::Tensor targets =
        data.targets.slice(0, step * train.batch_size, (step + 1) * train.batch_size);
    write_npy(out + "/inputs-" + std::to_string(step) + ".npy", inputs.contiguous());
    write_npy(out + "/targets-" + std::to_string(step) + ".npy", targets.contiguous());
    losses.push_back(workload.trainer().train_step(inputs, targets));
  }
  const ModelConfig model = ModelConfig::from_params(workload.config().model);
  PELAB_CHECK(train.optimizer == "adamw", "the reference replays AdamW; {} uses {}", workload_name,
              train.optimizer);
  const nlohmann::json config = {{"workload", workload_name},
                                 {"layers", model.layers},
                                 {"d_model", model.d_model},
                                 {"heads", model.heads},
                                 {"tokens", data.inputs.size(1)},
                                 {"input_size", data.inputs.size(2)},
                                 {"num_classes", workload.task().objective().outputs},
                                 {"lr", train.lr},
                                 {"weight_decay", train.weight_decay},
                                 {"steps", steps},
                                 {"losses", losses}};
  write_file_atomically(out + "/config.json", config.dump(2) + "\n");
  std::cout << "wrote " << steps << " steps of '" << workload_name << "' to " << out << "\n";
  return 0;
}

}  // namespace
}  // namespace pelab::bench

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::cerr << "usage: pelab_reference_dump WORKLOAD OUT_DIR [STEPS]\n";
    return 2;
  }
  try {
    return pelab::bench::dump(argv[1], argv[2], argc == 4 ? std::atoll(argv[3]) : 3);
  } catch (const pelab::Error& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 1;
  }
}
