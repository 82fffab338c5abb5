#pragma once

// Which files are the subjects: explicit paths, or file-name patterns such as
// "data/sub-*_bold.nii.gz".

#include <string>
#include <vector>

namespace pelab::brain {

/// Whether `name` matches `pattern` as a whole: `*` matches any run of characters (also none),
/// `?` exactly one; every other character matches itself (case-sensitive).
bool glob_match(const std::string& pattern, const std::string& name);

/// Expands a list of subject entries into files, in order. An entry is a file path, or a pattern
/// whose last component (the file name) holds `*` or `?`: it stands for the regular files of that
/// folder whose names match, sorted by name (the folder part holds no wildcard). Relative entries
/// are taken relative to `base_dir` (e.g. the manifest's folder; "" for the working directory).
/// Throws pelab::Error for a missing file or folder, a pattern that matches nothing, a wildcard
/// in a folder part, or a file that appears twice.
std::vector<std::string> expand_subjects(const std::vector<std::string>& entries,
                                         const std::string& base_dir = "");

}  // namespace pelab::brain
