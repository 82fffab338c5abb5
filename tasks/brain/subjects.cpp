#include "subjects.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include <pelab/sdk.h>

namespace pelab::brain {
namespace {

namespace fs = std::filesystem;

bool has_wildcard(const std::string& text) {
  return text.find_first_of("*?") != std::string::npos;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& name) {
  // Iterative matching with backtracking to the last '*': linear in practice, no recursion.
  std::size_t p = 0, n = 0;
  std::size_t star = std::string::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

std::vector<std::string> expand_subjects(const std::vector<std::string>& entries,
                                         const std::string& base_dir) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  const auto add = [&](const std::string& file, const std::string& entry) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(file, error);
    PELAB_CHECK(seen.insert(error ? file : canonical.string()).second,
                "subject {} (from '{}') is listed twice", file, entry);
    files.push_back(file);
  };
  for (const std::string& entry : entries) {
    PELAB_CHECK(!entry.empty(), "an empty subject entry");
    fs::path path(entry);
    if (path.is_relative() && !base_dir.empty()) path = fs::path(base_dir) / path;
    const std::string name = path.filename().string();
    const fs::path folder = path.parent_path();
    PELAB_CHECK(!has_wildcard(folder.string()),
                "subject pattern '{}': wildcards are allowed in the file name only", entry);
    std::error_code error;
    if (!has_wildcard(name)) {
      PELAB_CHECK(fs::is_regular_file(path, error), "subject file {} does not exist",
                  path.string());
      add(path.string(), entry);
      continue;
    }
    const fs::path listed = folder.empty() ? fs::path(".") : folder;
    PELAB_CHECK(fs::is_directory(listed, error), "subject pattern '{}': folder {} does not exist",
                entry, listed.string());
    std::vector<std::string> names;
    for (const fs::directory_entry& file : fs::directory_iterator(listed, error)) {
      const std::string file_name = file.path().filename().string();
      std::error_code status_error;  // a broken link is skipped, not an error
      if (file.is_regular_file(status_error) && glob_match(name, file_name))
        names.push_back(file_name);
    }
    PELAB_CHECK(!error, "subject pattern '{}': cannot list folder {}: {}", entry, listed.string(),
                error.message());
    PELAB_CHECK(!names.empty(), "subject pattern '{}' matches no file in {}", entry,
                listed.string());
    std::sort(names.begin(), names.end());
    for (const std::string& file_name : names)
      add((folder / file_name).string(), entry);
  }
  return files;
}

}  // namespace pelab::brain
