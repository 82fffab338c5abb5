#!/usr/bin/env bash
# The SDK as a third party sees it: install pelab into a temporary prefix, check that the code in
# docs/plugins.md is the code of docs/examples/, build those plugins (one of every kind) out of
# tree against the installed SDK exactly as the docs say, and use them: validate, run, report.
# The report must draw the third-party initializer's scale as a series and show the third-party
# probe's declared headline. Leaves the report in $PELAB_TEST_ARTEFACTS/examples-report when set
# (the browser test, sdk.report_in_browser, opens it).
set -euo pipefail
build_dir=$1
source_dir=$2
examples="$source_dir/docs/examples"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every ```cpp block that docs/plugins.md heads with <!-- example: FILE --> is a verbatim excerpt
# of that file.
/usr/bin/python3 - "$source_dir" <<'PY'
import re, sys, pathlib
root = pathlib.Path(sys.argv[1])
doc = (root / "docs/plugins.md").read_text()
blocks = re.findall(r"<!-- example: (\S+) -->\n```(?:cpp|cmake|toml)\n(.*?)```", doc, re.S)
assert len(blocks) >= 5, f"docs/plugins.md shows {len(blocks)} example blocks, expected >= 5"
for path, code in blocks:
    text = (root / path).read_text()
    if code not in text:
        sys.exit(f"docs/plugins.md's block for {path} is not in that file: copy it again")
print(f"docs/plugins.md: {len(blocks)} blocks match docs/examples/")
PY

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# Exactly as docs/plugins.md shows it: no build type given, the SDK makes it Release.
cmake -S "$examples" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$work/build/CMakeCache.txt" ||
  { echo "the SDK did not default the plugins' build to Release"; exit 1; }
cmake --build "$work/build" -j "${PELAB_TEST_JOBS:-2}" >/dev/null
# The built-in plugins that run the model or read another run build against the installed SDK
# alone, as a third party's would (only the build: they are on the plugin path already).
mkdir -p "$work/builtin"
cat >"$work/builtin/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(builtin_on_the_sdk LANGUAGES CXX)
find_package(pelab 0.2 REQUIRED)
pelab_add_plugin(NAME attention KIND probe SOURCES $source_dir/plugins/probe/attention/attention.cpp)
pelab_add_plugin(NAME pe_intervention KIND probe
                 SOURCES $source_dir/plugins/probe/pe_intervention/pe_intervention.cpp)
pelab_add_plugin(NAME from_run KIND init SOURCES $source_dir/plugins/init/from_run/from_run.cpp)
CMAKE
cmake -S "$work/builtin" -B "$work/builtin/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/builtin/build" -j "${PELAB_TEST_JOBS:-2}" >/dev/null
echo "attention, pe_intervention and from_run: built out of tree against the installed SDK"
# Installed under a prefix of the author's, where PELAB_PLUGIN_PATH finds it.
cmake --install "$work/build" --prefix "$work/plugins" >/dev/null

export PELAB_PLUGIN_PATH="$work/plugins/lib/pelab/plugins"
pelab="$work/prefix/bin/pelab"
"$pelab" plugins | tee "$work/plugins.txt"
for entry in "pe +coordinate_linear" "pe +distance_bias" "pe +learned_positions_rope" \
             "init +rademacher" "task +palindrome" "probe +effective_rank"; do
  grep -Eq "^$entry +0\.1\.0 .*$work/plugins" "$work/plugins.txt" ||
    { echo "not listed from the author's prefix: $entry"; exit 1; }
done
"$pelab" describe rademacher | grep -q "the init scale" ||
  { echo "pelab describe does not show rademacher's init scale"; exit 1; }

# validate builds every point: a third-party PE's refusal is caught before running.
"$pelab" validate "$examples/examples.toml"
if "$pelab" validate "$examples/examples.toml" --set task.tokens=1 >"$work/bad.txt" 2>&1; then
  echo "validate accepted tokens = 1"; exit 1
fi
grep -q "tokens" "$work/bad.txt"

"$pelab" run "$examples/examples.toml" --out "$work/runs" --quiet
report="$work/runs/examples"
grep -q 'plugin = "rademacher"' "$report/pe=learned+init=rademacher+scale=0.1/seed-3/config.toml"
# The initializer's marked scale makes a series: both rademacher points on it, with their scale.
csv="$report/results.csv"
grep -q '^pe=learned+init=rademacher+scale=0.1,test/all/accuracy,.*,"learned, rademacher scale",0.1,,$' "$csv"
grep -q '^pe=learned+init=rademacher+scale=1,test/all/accuracy,.*,"learned, rademacher scale",1,,$' "$csv"
grep -q '| learned, rademacher scale=0.1 | 0.1 | 2 |' "$report/report.md"
# The probe's declared headline, in the probe table and its figure.
grep -q '| point | init scale | effective_rank effective_rank | rsa spearman ↑ |' "$report/report.md"
grep -q 'effective_rank effective_rank: exp(entropy' "$report/report.md"
grep -q "effective_rank: effective_rank" "$report/figures/probes.gp"
# The attention-side PE has no table: the probe says so instead of failing.
grep -q 'no rank to measure' "$report/pe=distance_bias+slope=0.5/seed-3/probes/effective_rank.json"
# The third party's learnable rotary PE: its positions are snapshotted as a parameter, and the
# layout probes read them by name.
rope="$report/pe=learned_positions_rope+init=rademacher+scale=0.1/seed-3"
test -f "$rope/pe/param-positions-epoch-000003.npy" ||
  { echo "the rotary PE's learned positions were not snapshotted"; ls "$rope/pe"; exit 1; }
"$pelab" probe "$rope" --probe decoding --set decoding.tensor=positions | tee "$work/rope.txt"
grep -Eq "decoding +r2 " "$work/rope.txt" ||
  { echo "decoding did not read the learned positions"; exit 1; }
if [ -n "${PELAB_TEST_ARTEFACTS:-}" ]; then
  rm -rf "$PELAB_TEST_ARTEFACTS/examples-report"
  mkdir -p "$PELAB_TEST_ARTEFACTS"
  cp -r "$report" "$PELAB_TEST_ARTEFACTS/examples-report"
fi
echo "out-of-tree plugins of every kind: built, listed, validated, run and reported"
