// Small file helpers for the sweep and the loader.
#pragma once

#include <string>
#include <vector>

#include "pilot/core/file.h"  // readFile
#include "pilot/core/result.h"

namespace pilot::calibration::detail {

/// Writes `content` to a temporary file beside `path` and renames it over `path`, so a reader
/// (or a Ctrl-C mid-write) never sees half a file.
Status writeFileAtomic(const std::string& path, const std::string& content);

/// Regular files under `dir`, recursively, sorted by path; hidden entries skipped.
std::vector<std::string> listFiles(const std::string& dir);

bool isDirectory(const std::string& path);
bool isRegularFile(const std::string& path);

/// The last `lines` lines of a file (for a failed run's record), without CRs.
std::vector<std::string> tailLines(const std::string& path, size_t lines);

}  // namespace pilot::calibration::detail
