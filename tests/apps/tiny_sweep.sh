# Sourced by the shell tests: tiny_sweep SEEDS EPOCHS TRAIN_SAMPLES [MORE_TOML] prints a manifest
# sweeping pe.init.std over 0.2 and 2.0 on marker_position with a one-block, 8-wide model (a few
# seconds per run). MORE_TOML is appended to [train] (more keys, then e.g. [[probe]] tables).
tiny_sweep() {
  cat <<TOML
[experiment]
seeds = $1

[task]
plugin = "marker_position"
tokens = 8
train_samples = $3
test_samples = 32

[model]
layers = 1
d_model = 8
mlp_ratio = 1

[pe]
plugin = "learned"

[sweep]
"pe.init.std" = [0.2, 2.0]

[train]
epochs = $2
batch_size = 32
${4:-}
TOML
}
