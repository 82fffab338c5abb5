#include "pelab/config/sections.h"

namespace pelab {

const ParamSchema& experiment_schema() {
  static const ParamSchema schema = [] {
    ParamSchema s;
    s.string("name", "",
             "Name of the experiment: runs go to <out>/<name>/. Default: the "
             "manifest's file name without .toml.");
    s.string("description", "", "Free text, copied into every run's resolved configuration.");
    s.integers("seeds", {0}, "Seeds to run every sweep point with (a sweep axis of its own).");
    s.string("point", "",
             "The sweep point a run belongs to, as pelab writes it into the run's resolved "
             "configuration (\"pe.init.std=0.2\"); a manifest with a [sweep] has its points "
             "named for it.");
    return s;
  }();
  return schema;
}

const ParamSchema& model_schema() {
  static const ParamSchema schema = [] {
    ParamSchema s;
    s.integer("layers", 4, "Number of encoder blocks.").in_range(1, 256);
    s.integer("d_model", 160, "Width of the token representations.").in_range(1, 65536);
    s.integer("heads", 1, "Attention heads; must divide d_model.").in_range(1, 1024);
    s.integer("mlp_ratio", 4, "MLP hidden width as a multiple of d_model.").in_range(1, 64);
    s.choice("norm", "post", {"post", "pre"},
             "LayerNorm after each residual (post, the paper) or before each sublayer (pre).");
    s.boolean("final_gelu", true,
              "GELU after the MLP's second linear too (the paper's model has both).");
    s.choice("pe_placement", "every_block", {"every_block", "input", "shared"},
             "every_block: each block its own PE at its input (the paper); input: one PE "
             "before the first block only; shared: one PE used by every block.");
    s.choice("readout", "last", {"last", "mean"},
             "Classify from the last token (the paper) or the mean over tokens.");
    s.real("pe_dropout", 0.0,
           "Dropout on the tokens right after an additive PE is added, in every block that adds "
           "one (the authors' code applies 0.1 with its fixed sinusoidal PEs); training only "
           "unless train.eval_dropout says otherwise.")
        .in_range(0.0, 1.0);
    s.real("attention_dropout", 0.0, "Dropout on the attention probabilities.").in_range(0.0, 1.0);
    s.real("residual_dropout", 0.0,
           "Dropout on each sublayer's output (attention, MLP) before the residual add.")
        .in_range(0.0, 1.0);
    return s;
  }();
  return schema;
}

const ParamSchema& train_schema() {
  static const ParamSchema schema = [] {
    ParamSchema s;
    s.choice("optimizer", "adamw", {"adamw", "adam", "sgd"}, "Optimizer.");
    s.real("lr", 1e-4, "Learning rate.").at_least(0.0);
    s.real("weight_decay", 0.0, "Weight decay (decoupled for adamw).").at_least(0.0);
    s.real("momentum", 0.0, "Momentum (sgd only).").in_range(0.0, 1.0);
    s.integer("batch_size", 128, "Training batch size.").at_least(1);
    s.integer("epochs", 10, "Passes over the training split.").at_least(0);
    s.integer("eval_every", 1,
              "Evaluate every split and snapshot the PE every k epochs (and at the end).")
        .at_least(1);
    s.integer("checkpoint_every", 0,
              "Write the run's checkpoint every k epochs; 0 = at every evaluation.")
        .at_least(0);
    s.boolean("shuffle", true, "Shuffle the training split every epoch (from the run's seed).");
    s.integer("eval_batch_size", 1024, "Batch size for evaluation.").at_least(1);
    s.choice("lr_schedule", "constant", {"constant", "cosine", "linear"},
             "Learning rate over the run: constant, or a cosine or linear decay to min_lr.");
    s.real("warmup_epochs", 0.0, "Linear warm-up of the learning rate from 0, in epochs.")
        .at_least(0.0);
    s.real("min_lr", 0.0, "The learning rate at the end of a cosine or linear decay.")
        .at_least(0.0);
    s.integer("threads", 0, "Intra-op threads; 0 = all cores.").at_least(0);
    s.boolean("flush_subnormals", true,
              "Flush subnormal floats (below 1.2e-38) to zero on the CPU: an Intel CPU multiplies "
              "them in microcode, 13-175x slower. false: IEEE gradual underflow, LibTorch's "
              "default (docs/performance.md).");
    s.choice("precision", "fp32", {"fp32", "bf16"},
             "fp32, or bf16: the forward pass under bfloat16 autocast (matrix products in bf16, "
             "parameters and optimizer in fp32). Fast only where the CPU has AVX512-BF16.");
    s.choice("eval_dropout", "off", {"off", "on", "both"},
             "Dropout while evaluating: off (the model in evaluation mode, the usual), on (the "
             "model's dropout stays active, as in the authors' published code, which never calls "
             "model.eval()), or both (every split twice: <split> off, <split>_dropout on).");
    s.string("device", "cpu",
             "Where to train: cpu, cuda (the current GPU) or cuda:N; a GPU needs pelab built "
             "against a LibTorch with CUDA (docs/performance.md).");
    return s;
  }();
  return schema;
}

const std::set<std::string>& host_execution_keys() {
  static const std::set<std::string> keys = {"train.threads", "train.flush_subnormals"};
  return keys;
}

const std::set<std::string>& per_run_keys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> keys = host_execution_keys();
    keys.insert({"experiment.seeds", "experiment.description", "train.epochs"});
    return keys;
  }();
  return keys;
}

}  // namespace pelab
