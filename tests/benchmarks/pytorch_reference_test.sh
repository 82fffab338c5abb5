#!/usr/bin/env bash
# pelab's training steps replayed by the PyTorch eager reference: same losses.
set -euo pipefail
dump=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$dump" paper "$work" 3
# Debian's interpreter, where python3-torch installs (a pyenv python3 may come first on PATH).
/usr/bin/python3 "$source_dir/benchmarks/pytorch_reference.py" check "$work"
