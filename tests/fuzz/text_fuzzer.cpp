// Fuzzes the one path by which text reaches pelab's records (valid_utf8, pelab/io/file_io.h):
// any bytes, as a file name or a data file's text would bring them, become valid UTF-8 that a
// summary.json, a CSV field and a report hold and read back unchanged. The JSON writer once
// aborted a run on the first byte that was not UTF-8 and left it without its summary.

#include <nlohmann/json.hpp>

#include "fuzz_target.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/run_folder.h"

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "\n%s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = pelab::fuzz::as_string(data, size);
  const std::string text = pelab::valid_utf8(bytes);
  // What it returns is valid UTF-8 (the JSON library checks it independently) and stays as it is.
  try {
    (void)nlohmann::json(text).dump();
  } catch (const nlohmann::json::exception&) {
    finding("valid_utf8 returned text that is not UTF-8");
  }
  if (pelab::valid_utf8(text) != text) finding("valid_utf8 changed its own output");
  if (text.size() < bytes.size()) finding("valid_utf8 dropped bytes");

  // Through a summary.json, as an error message, an experiment name and a key of the record.
  const pelab::RunFolder folder(pelab::fuzz::scratch_dir());
  pelab::RunSummary summary;
  summary.status = "failed";
  summary.error = bytes;
  summary.experiment = bytes;
  summary.configuration[bytes] = bytes;
  pelab::fuzz::expect_pelab_errors_only("RunFolder::write_summary", [&] {
    folder.write_summary(summary);
    const auto read = folder.read_summary();
    if (!read || read->error != text || read->experiment != text)
      finding("a summary did not read back as valid_utf8 of what was written");
  });

  // Through a CSV field, one line when the text has no line break of its own.
  if (text.find_first_of("\r\n") == std::string::npos) {
    const auto fields = pelab::parse_csv_line(pelab::csv_field(bytes) + ",x");
    if (fields.size() != 2 || fields[0] != text) finding("a CSV field did not read back");
  }
  return 0;
}
