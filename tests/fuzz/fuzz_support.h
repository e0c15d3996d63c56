// What the reader targets share: failing with the details, and files to read from (the readers
// under test take paths, so the input is written to a scratch folder of the process first).
#pragma once

#include <string>
#include <string_view>

namespace fuzz {

/// "<target>: <what>" on stderr, then abort(): libFuzzer keeps the input as a crash.
[[noreturn]] void die(const std::string& what);

/// A folder of this process (under TMPDIR, else /tmp), made once, removed at exit.
const std::string& scratchDir();

/// Writes `bytes` to scratchDir()/name and returns the path.
std::string writeScratch(const std::string& name, std::string_view bytes);

/// Removes every file of scratchDir()/sub (not recursive) and creates the folder if needed.
std::string emptyScratch(const std::string& sub);

/// An error must say why (non-empty) and, where the reader promises it, name `what` (the
/// file, "file:line", ...).
void checkError(const std::string& error, const std::string& what);

}  // namespace fuzz
