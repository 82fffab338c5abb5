#pragma once

#include <string>

#include "pelab/base/export.h"

namespace pelab {

/// A folder where a task keeps data it generated (a simulation, a synthetic cohort), so that the
/// runs of a sweep generate it once. An entry is keyed by a description of everything that
/// determines the data (generator version and parameters); the description is stored with the
/// data and compared in full on every use, so an entry is never used for other parameters.
///
/// The root is `$PELAB_CACHE_DIR`, else `$XDG_CACHE_HOME/pelab`, else `$HOME/.cache/pelab`.
/// Writers write their files atomically and commit() last: processes that generate the same entry
/// at once (`pelab run -j`) write the same bytes, and a reader never sees a half-written entry.
class PELAB_API DataCache {
 public:
  /// The entry `<root>/<kind>/<hash of description>`; `root` empty: the default root above.
  DataCache(const std::string& kind, std::string description, const std::string& root = "");

  /// Whether the entry holds committed data for exactly this description.
  bool ready() const;
  /// The entry's folder (created on demand by the writer).
  const std::string& dir() const { return dir_; }
  /// `dir()/name`.
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  /// Records that the entry's files are complete (writes the description).
  void commit() const;

  /// The default root (see above).
  static std::string default_root();

 private:
  std::string description_;
  std::string dir_;
};

}  // namespace pelab
