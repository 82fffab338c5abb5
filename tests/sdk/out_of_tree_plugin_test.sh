#!/usr/bin/env bash
# Installs pelab into a temporary prefix, builds the third-party example plugin out of tree
# against that SDK, and checks that `pelab plugins` lists it and a manifest can use it.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# Exactly as docs/plugins.md shows it: no build type given, the SDK makes it Release.
cmake -S "$source_dir/docs/examples/rademacher" -B "$work/build" \
      -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$work/build/CMakeCache.txt" ||
  { echo "the SDK did not default the plugin's build to Release"; exit 1; }
cmake --build "$work/build" >/dev/null
# Installed under a prefix of the author's, where PELAB_PLUGIN_PATH finds it.
cmake --install "$work/build" --prefix "$work/plugins" >/dev/null

export PELAB_PLUGIN_PATH="$work/plugins/lib/pelab/plugins"
"$work/prefix/bin/pelab" plugins | tee "$work/plugins.txt"
grep -Eq '^init +rademacher +0\.1\.0' "$work/plugins.txt"
for kind in pe init task probe; do
  grep -Eq "^$kind " "$work/plugins.txt" || { echo "no $kind plugin listed"; exit 1; }
done

"$work/prefix/bin/pelab" run "$source_dir/docs/examples/rademacher/rademacher.toml" \
  --out "$work/runs" --quiet
run="$work/runs/rademacher-example/default/seed-3"
grep -q 'plugin = "rademacher"' "$run/config.toml"
grep -q '"status": "finished"' "$run/summary.json"
echo "out-of-tree plugin: built, listed and used"
