#!/usr/bin/env bash
# pelab's training steps replayed by the PyTorch eager reference: same losses.
set -euo pipefail
dump=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$dump" paper "$work" 3
# The interpreter whose torch matches the LibTorch pelab was built against: Debian's, where
# python3-torch installs (a pyenv python3 may come first on PATH), unless the build says otherwise.
"${PELAB_TEST_PYTHON:-/usr/bin/python3}" "$source_dir/benchmarks/pytorch_reference.py" check "$work"
