#!/usr/bin/env bash
# report.html as people open it: the report of docs/examples/examples.toml (written by
# sdk.out_of_tree_plugin into $artefacts/examples-report) rendered by headless Chromium. Every
# figure must load, no request may leave the file, and the third-party initializer's series and
# probe headline must be on the page. Keeps $artefacts/report.png, a screenshot of the page.
set -euo pipefail
artefacts=$1
report="$artefacts/examples-report"
[ -f "$report/report.html" ] || { echo "no $report/report.html: run sdk.out_of_tree_plugin first"; exit 1; }
chromium=$(command -v chromium || true)
[ -n "$chromium" ] || { echo "Debian's chromium is not installed (make deps installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$report/report.html" "$work/report.html"
# A page beside the report reads it once it has loaded (images included) through an iframe:
# file:// pages are one origin only with --allow-file-access-from-files.
cat >"$work/inspect.html" <<'HTML'
<!doctype html>
<html><body>
<iframe id="report" src="report.html" style="width:1280px;height:2000px"></iframe>
<pre id="result">pending</pre>
<script>
document.getElementById('report').addEventListener('load', () => {
  const view = document.getElementById('report').contentWindow;
  const images = Array.from(view.document.images);
  document.getElementById('result').textContent = JSON.stringify({
    images: images.length,
    broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt || i.src),
    requests: view.performance.getEntriesByType('resource').map(e => e.name),
    text: view.document.body.innerText,
  });
});
</script>
</body></html>
HTML

# Root in CI needs --no-sandbox; a container's small /dev/shm, --disable-dev-shm-usage. The
# browser's own background traffic (updates, time) is switched off where it can be, and told
# apart in the net log by its initiator.
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --user-data-dir="$work/profile"
       --virtual-time-budget=15000)
timeout 120 "$chromium" "${flags[@]}" --allow-file-access-from-files \
  --log-net-log="$work/net.json" --dump-dom "file://$work/inspect.html" \
  >"$work/dom.html" 2>"$work/chromium.log" ||
  { tail -20 "$work/chromium.log"; echo "chromium failed"; exit 1; }
timeout 120 "$chromium" "${flags[@]}" --window-size=1280,3000 \
  --screenshot="$artefacts/report.png" "file://$work/report.html" 2>>"$work/chromium.log" ||
  { tail -20 "$work/chromium.log"; echo "chromium failed to take the screenshot"; exit 1; }

/usr/bin/python3 - "$work" "$artefacts/report.png" <<'PY'
import html, json, re, sys
work, screenshot = sys.argv[1], sys.argv[2]
dom = open(f"{work}/dom.html").read()
found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
assert found, "the inspecting page did not run"
result = json.loads(html.unescape(found.group(1)))
print(f"{result['images']} images, broken: {result['broken']}, requests: {result['requests']}")
assert result["images"] >= 4, "report.html shows fewer than 4 figures"
assert not result["broken"], f"broken images: {result['broken']}"
assert not [r for r in result["requests"] if not r.startswith(("data:", "file:"))], \
    f"the page fetched {result['requests']}"
# The net log sees every request the page started, including those that failed.
net = json.load(open(f"{work}/net.json"))
names = {v: k for k, v in net["constants"]["logEventTypes"].items()}
leaving = [e["params"]["url"] for e in net["events"]
           if names.get(e["type"]) == "URL_REQUEST_START_JOB" and "url" in e.get("params", {})
           and e["params"].get("initiator") != "not an origin"
           and not e["params"]["url"].startswith(("data:", "file:"))]
assert not leaving, f"requests left the file: {leaving}"
text = result["text"]
for wanted in ["learned, rademacher scale=0.1", "learned, rademacher scale=1",
               "effective_rank effective_rank", "palindrome"]:
    assert wanted in text, f"'{wanted}' is not on the rendered page"
with open(screenshot, "rb") as png:
    assert png.read(8) == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG"
print(f"report.html renders in Chromium; screenshot: {screenshot}")
PY
