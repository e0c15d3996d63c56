#include "parse/support.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "pilot/core/text.h"
#include "pilot/tuner/names.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration::detail {
namespace {

/// Length of an Open MPI tag "[1,0]<stdout>:" at `at`, or 0.
size_t mpiTagLength(std::string_view s, size_t at) {
  if (at >= s.size() || s[at] != '[') return 0;
  size_t i = at + 1;
  auto digits = [&]() {
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i > start;
  };
  if (!digits() || i >= s.size() || s[i] != ',') return 0;
  ++i;
  if (!digits() || i >= s.size() || s[i] != ']') return 0;
  ++i;
  for (std::string_view stream : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
    if (s.substr(i, stream.size()) == stream) return i + stream.size() - at;
  }
  return 0;
}

bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c));
}

}  // namespace

CleanLine cleanLine(std::string_view raw) {
  CleanLine out;
  while (!raw.empty() && (raw.back() == '\r' || raw.back() == '\n')) raw.remove_suffix(1);
  out.text.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    if (size_t n = mpiTagLength(raw, i)) {
      if (out.tag.empty()) out.tag = std::string(raw.substr(i, raw.find(']', i) - i + 1));
      i += n;
      continue;
    }
    out.text += raw[i++];
  }
  if (out.tag.empty()) {
    // srun --label: "  3: text". Only digits then ": " at the very start, so an NCCL line
    // ("host:123:456 [0] NCCL INFO") or a footer ("# Avg bus bandwidth : 3") is left alone.
    size_t i = 0;
    while (i < out.text.size() && out.text[i] == ' ') ++i;
    size_t digits = i;
    while (i < out.text.size() && std::isdigit(static_cast<unsigned char>(out.text[i]))) ++i;
    if (i > digits && i + 1 < out.text.size() && out.text[i] == ':' && out.text[i + 1] == ' ') {
      out.tag = out.text.substr(digits, i - digits);
      out.text.erase(0, i + 2);
    }
  }
  return out;
}

std::optional<double> parseNumber(std::string_view s) {
  s = text::trim(s);
  if (s.size() > 64) return std::nullopt;
  return text::parseDecimal(s);
}

std::optional<std::string> collectiveFromProgram(std::string_view program) {
  std::string name(baseName(text::trim(program)));
  const std::string suffix = "_perf";
  if (name.size() <= suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  name.resize(name.size() - suffix.size());
  if (auto c = tuner::parseCollective(name)) return std::string(tuner::collectiveName(*c));
  std::string compact;
  for (char ch : name) {
    if (ch != '_') compact += ch;
  }
  return compact;
}

std::optional<std::string> collectiveFromName(std::string_view name) {
  std::string lower = text::toLower(name);
  // Longest spellings first; each match is blanked so "reduce" cannot match inside it again.
  struct Spelling {
    const char* text;
    const char* canonical;
  };
  const Spelling spellings[] = {
      {"reduce_scatter", "reducescatter"}, {"reducescatter", "reducescatter"},
      {"reduce-scatter", "reducescatter"}, {"all_reduce", "allreduce"},
      {"allreduce", "allreduce"},          {"all-reduce", "allreduce"},
      {"all_gather", "allgather"},         {"allgather", "allgather"},
      {"all-gather", "allgather"},         {"broadcast", "broadcast"},
  };
  std::optional<std::string> found;
  bool several = false;
  auto note = [&](const char* canonical) {
    if (found && *found != canonical) several = true;
    found = canonical;
  };
  for (const Spelling& s : spellings) {
    for (size_t at = lower.find(s.text); at != std::string::npos; at = lower.find(s.text, at)) {
      note(s.canonical);
      lower.replace(at, std::string_view(s.text).size(), std::string_view(s.text).size(), ' ');
    }
  }
  for (size_t at = lower.find("reduce"); at != std::string::npos;
       at = lower.find("reduce", at + 1)) {
    bool before = at == 0 || !isWordChar(lower[at - 1]);
    bool after = at + 6 >= lower.size() || !isWordChar(lower[at + 6]) || lower[at + 6] == '_';
    if (before && after) note("reduce");
  }
  if (several) return std::nullopt;
  return found;
}

bool isTunedCollective(std::string_view canonicalName) {
  auto c = tuner::parseCollective(canonicalName);
  return c && tuner::collectiveName(*c) == canonicalName;
}

std::string ncclVersionFromCode(long code) {
  if (code < 20900) return "";
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

std::string stripVersionSuffix(std::string_view version) {
  version = text::trim(version);
  size_t end = 0;
  while (end < version.size() &&
         (std::isdigit(static_cast<unsigned char>(version[end])) || version[end] == '.')) {
    ++end;
  }
  return std::string(version.substr(0, end));
}

bool readNetworkLine(std::string_view info, NetworkLog& log) {
  info = text::trim(info);
  constexpr std::string_view kUsing = "Using network ";
  if (info.substr(0, kUsing.size()) == kUsing) {
    log.network = std::string(text::trim(info.substr(kUsing.size())));
    return true;
  }
  constexpr std::string_view kIb = "NET/IB";
  if (info.substr(0, kIb.size()) != kIb) return false;
  const size_t colon = info.find(':');
  if (colon == std::string_view::npos ||
      text::trim(info.substr(kIb.size(), colon - kIb.size())) != "") {
    return false;
  }
  const std::vector<std::string_view> words = text::splitWhitespace(info.substr(colon + 1));
  if (words.empty() || words[0] != "Using") return false;
  for (size_t i = 1; i < words.size() && words[i] != ";"; ++i) {
    // "[0]mlx5_0:1/IB": device, port, link layer.
    const size_t slash = words[i].rfind('/');
    if (words[i].empty() || words[i][0] != '[' || slash == std::string_view::npos) continue;
    const std::string_view layer = words[i].substr(slash + 1);
    log.ibLink = log.ibLink || text::equalsIgnoreCase(layer, "IB");
    log.roceLink = log.roceLink || text::equalsIgnoreCase(layer, "RoCE");
  }
  return true;
}

uint8_t fabricsOfNetwork(const NetworkLog& log) {
  if (text::equalsIgnoreCase(log.network, "Socket") ||
      text::equalsIgnoreCase(log.network, "Pilot")) {
    return tuner::bit(Fabric::Ethernet);
  }
  if (!text::equalsIgnoreCase(log.network, "IB")) return 0;
  if (log.ibLink) return tuner::bit(Fabric::InfiniBand);
  if (log.roceLink) return tuner::bit(Fabric::RoCE);
  return static_cast<uint8_t>(tuner::bit(Fabric::InfiniBand) | tuner::bit(Fabric::RoCE));
}

uint8_t fabricsOfEnvironment(std::string_view ibDisable, std::string_view net) {
  // NCCL reads NCCL_IB_DISABLE as an integer: any non-zero value turns its IB transport off.
  if (auto v = text::parseUnsigned(text::trim(ibDisable)); v && *v != 0) {
    return tuner::bit(Fabric::Ethernet);
  }
  net = text::trim(net);
  if (!net.empty() && !text::equalsIgnoreCase(net, "IB")) return tuner::bit(Fabric::Ethernet);
  return 0;
}

std::string fabricsText(uint8_t fabrics) {
  std::string out;
  for (int i = 0; i < kNumFabrics; ++i) {
    if ((fabrics & tuner::bit(static_cast<Fabric>(i))) == 0) continue;
    out += (out.empty() ? "" : "|") + std::string(fabricName(static_cast<Fabric>(i)));
  }
  return out;
}

std::string_view baseName(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace pilot::calibration::detail
