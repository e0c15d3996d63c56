// Whole-file reads and writes. readFileUpTo is the one read loop: the plugin's readers (tuning
// table, hwloc XML) bound what they accept and word their own messages; readFile is the tool's.
#pragma once

#include <cstddef>
#include <string>

#include "pilot/core/result.h"

namespace pilot {

enum class ReadOutcome { Ok, CannotOpen, TooLarge, ReadError };

/// Reads the whole file into `content` unless it is larger than `maxBytes` (then it stops
/// reading there). On CannotOpen, `*openErrno` (if given) holds the open's errno.
ReadOutcome readFileUpTo(const std::string& path, size_t maxBytes, std::string* content,
                         int* openErrno = nullptr);

/// The whole file; an Error "cannot open PATH" or "cannot read PATH".
Expected<std::string> readFile(const std::string& path);

/// Replaces the file's content; an Error "cannot write PATH".
Status writeFile(const std::string& path, const std::string& content);

/// Replaces the file's content so that a reader sees the old or the new file, never a part:
/// writes PATH.tmp beside it, then renames it over PATH. An Error "cannot write PATH: why".
Status writeFileAtomically(const std::string& path, const std::string& content);

/// Creates a directory and its missing parents (mode 0755 before the umask); an Error
/// "cannot create DIR: why" unless it exists as a directory afterwards.
Status makeDirectories(const std::string& dir);

}  // namespace pilot
