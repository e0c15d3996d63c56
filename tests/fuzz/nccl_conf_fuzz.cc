// libFuzzer target: arbitrary bytes as an nccl.conf file (NCCL_CONF_FILE, ~/.nccl.conf,
// /etc/nccl.conf), which the plugin reads inside every rank to say where a setting came from,
// through provenance::parseNcclConf. For every input:
//  1. no crash, no exception, no undefined behaviour (ASan/UBSan);
//  2. the lines read are, in order, exactly the input's lines that do not start with '#' and
//     hold a '=' (NCCL's rule): one entry each, nothing invented or lost;
//  3. each entry's name is the text before the line's first '=' and its value the text after it
//     (a trailing CR dropped), each cut at 1023 bytes and at a NUL, as NCCL's strncpy does;
//  4. each entry classifies without throwing, and an unknown name's closest name is a known one.
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "pilot/provenance/conf_files.h"
#include "pilot/provenance/nccl_settings.h"

using namespace pilot;

namespace {

std::string_view cField(std::string_view s) {
  s = s.substr(0, 1023);
  return s.substr(0, s.find('\0'));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto entries = provenance::parseNcclConf(text);
  size_t next = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t eq = line.find('=');
    if (line.empty() || line.front() == '#' || eq == std::string_view::npos) continue;
    if (next >= entries.size()) fuzz::die("nccl_conf_fuzz: a NAME=VALUE line was not read");
    const auto& [name, value] = entries[next++];
    if (name != cField(line.substr(0, eq)) || value != cField(line.substr(eq + 1)))
      fuzz::die("nccl_conf_fuzz: entry " + std::to_string(next) + " is not its line's name/value");
  }
  if (next != entries.size()) fuzz::die("nccl_conf_fuzz: entries that no line holds");
  for (const auto& [name, value] : entries) {
    if (name.rfind("NCCL_", 0) != 0) continue;
    const provenance::Classification c = provenance::classifySetting(name, value, size % 2 == 1);
    if (!c.closest.empty() && !provenance::knownName(c.closest) &&
        c.cls != provenance::SettingClass::Deprecated)
      fuzz::die("nccl_conf_fuzz: " + name + " is said to be close to unknown " + c.closest);
  }
  return 0;
}
