#include "pilot/calibration/labels.h"

#include <cctype>
#include <set>

#include "pilot/core/text.h"
#include "pilot/tuner/names.h"

namespace pilot::calibration {
namespace {

constexpr int kMaxChannels =
    256;  // above any NCCL's MAXCHANNELS; NCCL clamps, we only sanity-check

bool isNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// "NAME=..." with a variable-like NAME: where a new variable starts inside a spec.
bool startsWithAssignment(std::string_view piece) {
  if (piece.empty() || !isNameStart(piece[0])) return false;
  size_t i = 1;
  while (i < piece.size() && isNameChar(piece[i])) ++i;
  return i < piece.size() && piece[i] == '=';
}

/// "label:" followed by a spec, as in "ring:NCCL_ALGO=Ring". Returns the label length or 0.
size_t labelPrefixLength(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == 0 || colon == std::string_view::npos) return 0;
  for (size_t i = 0; i < colon; ++i) {
    char c = text[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return 0;
  }
  std::string_view rest = text.substr(colon + 1);
  if (text::equalsIgnoreCase(text::trim(rest), "default") || startsWithAssignment(rest)) {
    return colon;
  }
  return 0;
}

using NameParser = std::string (*)(std::string_view);

std::string algoName(std::string_view s) {
  auto a = tuner::parseAlgorithm(s);
  return a ? tuner::algorithmDisplayName(*a) : std::string();
}
std::string protoName(std::string_view s) {
  auto p = tuner::parseProtocol(s);
  return p ? tuner::protocolDisplayName(*p) : std::string();
}

/// "ring,^tree" style lists: each element in NCCL's spelling. NCCL 2.24+'s per-collective form
/// "allreduce:tree,ring;allgather:ring" is normalised part by part.
Expected<std::string> normaliseList(std::string_view value, NameParser parse, const char* what,
                                    bool allowStar) {
  if (value.find(';') != std::string_view::npos || value.find(':') != std::string_view::npos) {
    std::string out;
    for (std::string_view part : text::split(value, ';')) {
      part = text::trim(part);
      if (part.empty()) continue;
      size_t colon = part.find(':');
      if (colon == std::string_view::npos)
        return Error{"'" + std::string(part) + "': expected collective:list"};
      std::string coll = text::toLower(text::trim(part.substr(0, colon)));
      if (!tuner::parseCollective(coll)) return Error{"'" + coll + "' is not a collective"};
      auto list = normaliseList(part.substr(colon + 1), parse, what, allowStar);
      if (!list.ok()) return list;
      out += (out.empty() ? "" : ";") + coll + ":" + *list;
    }
    if (out.empty()) return Error{std::string("empty ") + what};
    return out;
  }
  std::string_view rest = text::trim(value);
  std::string out;
  if (!rest.empty() && rest[0] == '^') {
    out = "^";
    rest.remove_prefix(1);
  }
  bool any = false;
  for (std::string_view item : text::split(rest, ',')) {
    item = text::trim(item);
    if (item.empty())
      return Error{std::string("empty ") + what + " in '" + std::string(value) + "'"};
    std::string name =
        allowStar && item.find('*') != std::string_view::npos ? std::string(item) : parse(item);
    if (name.empty()) return Error{"'" + std::string(item) + "' is not an NCCL " + what};
    out += (any ? "," : "") + name;
    any = true;
  }
  if (!any) return Error{std::string("empty ") + what};
  return out;
}

Expected<int> parseChannels(std::string_view name, std::string_view value) {
  auto n = text::parseUnsigned(text::trim(value));
  if (!n || *n < 1 || *n > kMaxChannels) {
    return Error{std::string(name) + "=" + std::string(value) + ": expected a channel count 1.." +
                 std::to_string(kMaxChannels)};
  }
  return static_cast<int>(*n);
}

Status setVariable(Config& config, std::string_view rawName, std::string_view value,
                   bool allowStar) {
  std::string name;
  for (char c : rawName) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (allowStar && value.find('*') != std::string_view::npos &&
      (name == "NCCL_MIN_NCHANNELS" || name == "NCCL_MAX_NCHANNELS")) {
    value = "1";  // checked again once the '*' is known
  }
  if (name == "NCCL_ALGO") {
    auto v = normaliseList(value, algoName, "algorithm", allowStar);
    if (!v.ok()) return Error{"NCCL_ALGO: " + v.error()};
    config.algo = *v;
  } else if (name == "NCCL_PROTO") {
    auto v = normaliseList(value, protoName, "protocol", allowStar);
    if (!v.ok()) return Error{"NCCL_PROTO: " + v.error()};
    config.proto = *v;
  } else if (name == "NCCL_MIN_NCHANNELS" || name == "NCCL_MAX_NCHANNELS") {
    auto n = parseChannels(name, value);
    if (!n.ok()) return Error{n.error()};
    (name == "NCCL_MIN_NCHANNELS" ? config.minChannels : config.maxChannels) = *n;
  } else {
    return Error{"'" + std::string(rawName) +
                 "' is not a forcing variable a table can express (NCCL_ALGO, NCCL_PROTO, "
                 "NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS); set others with sweep plan --env"};
  }
  return Status::success();
}

Expected<Config> parseSpec(std::string_view spec, bool allowStar) {
  spec = text::trim(spec);
  if (spec.empty()) return Error{"empty configuration"};
  Config config;
  if (text::equalsIgnoreCase(spec, "default")) {
    config.label = "default";
    return config;
  }
  // Pieces between ',' and '+'; a piece that is not NAME=... continues the previous value.
  std::vector<std::pair<std::string, std::string>> vars;
  size_t start = 0;
  char separator = 0;
  while (start <= spec.size()) {
    size_t end = spec.find_first_of(",+", start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view piece = spec.substr(start, end - start);
    if (startsWithAssignment(text::trim(piece))) {
      piece = text::trim(piece);
      size_t eq = piece.find('=');
      vars.emplace_back(std::string(piece.substr(0, eq)), std::string(piece.substr(eq + 1)));
    } else if (vars.empty()) {
      return Error{"'" + std::string(spec) + "': expected default or NAME=VALUE[,NAME=VALUE...]"};
    } else {
      vars.back().second += separator + std::string(piece);
    }
    if (end == spec.size()) break;
    separator = spec[end];
    start = end + 1;
  }
  std::set<std::string> seen;
  for (const auto& [name, value] : vars) {
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (!seen.insert(upper).second)
      return Error{upper + " given twice in '" + std::string(spec) + "'"};
    if (Status s = setVariable(config, name, value, allowStar); !s.ok()) return Error{s.error()};
  }
  if (config.minChannels > 0 && config.maxChannels > 0 && config.minChannels > config.maxChannels) {
    return Error{"NCCL_MIN_NCHANNELS is above NCCL_MAX_NCHANNELS in '" + std::string(spec) + "'"};
  }
  config.label = canonicalLabel(config);
  return config;
}

}  // namespace

Expected<Config> parseConfigSpec(std::string_view spec) {
  return parseSpec(spec, /*allowStar=*/false);
}

Status setForcingVariable(Config& config, std::string_view name, std::string_view value) {
  return setVariable(config, name, value, /*allowStar=*/false);
}

Expected<Config> parseNamedConfig(std::string_view text) {
  text = text::trim(text);
  size_t labelLength = labelPrefixLength(text);
  auto config = parseConfigSpec(labelLength ? text.substr(labelLength + 1) : text);
  if (!config.ok()) return config;
  if (labelLength) {
    std::string label(text.substr(0, labelLength));
    if (config->isDefault() && label != "default") {
      return Error{"'" + std::string(text) +
                   "': the default configuration is always labelled default"};
    }
    config->label = label;
  }
  return config;
}

Expected<std::vector<Config>> parseConfigList(std::string_view list) {
  std::vector<std::string> items;
  for (std::string_view piece : text::split(list, ',')) {
    std::string_view trimmed = text::trim(piece);
    bool starts = text::equalsIgnoreCase(trimmed, "default") || startsWithAssignment(trimmed) ||
                  labelPrefixLength(trimmed) > 0;
    if (starts || items.empty()) {
      items.emplace_back(trimmed);
    } else {
      items.back() += "," + std::string(trimmed);
    }
  }
  std::vector<Config> out;
  std::set<std::string> keys, labels;
  for (const std::string& item : items) {
    auto config = parseNamedConfig(item);
    if (!config.ok()) return Error{config.error()};
    if (!keys.insert(forcingKey(*config)).second) {
      return Error{"configuration '" + item + "' is listed twice"};
    }
    if (!labels.insert(config->label).second) {
      return Error{"two configurations are labelled '" + config->label + "'"};
    }
    out.push_back(std::move(*config));
  }
  if (out.empty()) return Error{"no configuration given"};
  return out;
}

std::string canonicalLabel(const Config& config) {
  if (config.isDefault()) return "default";
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : "+") + part; };
  if (!config.algo.empty()) add(text::toLower(config.algo));
  if (!config.proto.empty()) add(text::toLower(config.proto));
  const int lo = config.minChannels, hi = config.maxChannels;
  if (lo > 0 && lo == hi) {
    add("ch" + std::to_string(lo));
  } else if (lo > 0 && hi > 0) {
    add("ch" + std::to_string(lo) + "-" + std::to_string(hi));
  } else if (lo > 0) {
    add("chmin" + std::to_string(lo));
  } else if (hi > 0) {
    add("chmax" + std::to_string(hi));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> configEnv(const Config& config) {
  std::vector<std::pair<std::string, std::string>> env;
  if (!config.algo.empty()) env.emplace_back("NCCL_ALGO", config.algo);
  if (!config.proto.empty()) env.emplace_back("NCCL_PROTO", config.proto);
  if (config.minChannels > 0) {
    env.emplace_back("NCCL_MIN_NCHANNELS", std::to_string(config.minChannels));
  }
  if (config.maxChannels > 0) {
    env.emplace_back("NCCL_MAX_NCHANNELS", std::to_string(config.maxChannels));
  }
  return env;
}

std::string configSpec(const Config& config) {
  if (config.isDefault()) return "default";
  std::string out;
  for (const auto& [name, value] : configEnv(config)) {
    out += (out.empty() ? "" : ",") + name + "=" + value;
  }
  return out;
}

std::string forcingKey(const Config& config) {
  return text::toLower(configSpec(config));
}

bool globMatch(std::string_view pattern, std::string_view text, std::string* capture) {
  // Backtracking over '*' with a memo of failed (pattern, text) positions: O(|p| x |t|).
  const size_t np = pattern.size(), nt = text.size();
  std::vector<char> failed((np + 1) * (nt + 1), 0);
  bool captured = false;
  auto match = [&](auto&& self, size_t p, size_t t) -> bool {
    if (failed[p * (nt + 1) + t]) return false;
    bool ok = false;
    if (p == np) {
      ok = t == nt;
    } else if (pattern[p] == '*') {
      for (size_t k = t; k <= nt && !ok; ++k) {
        if (self(self, p + 1, k)) {
          ok = true;
          if (capture && !captured && pattern.find('*') == p) {
            *capture = std::string(text.substr(t, k - t));
            captured = true;
          }
        }
      }
    } else if (t < nt && (pattern[p] == '?' || pattern[p] == text[t])) {
      ok = self(self, p + 1, t + 1);
    }
    if (!ok) failed[p * (nt + 1) + t] = 1;
    return ok;
  };
  if (capture) capture->clear();
  return match(match, 0, 0);
}

Expected<LabelRule> parseLabelRule(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error{"--label '" + std::string(text) +
                 "': expected PATTERN=SPEC, e.g. 'ring=NCCL_ALGO=Ring'"};
  }
  LabelRule rule{std::string(text::trim(text.substr(0, eq))),
                 std::string(text::trim(text.substr(eq + 1)))};
  auto check = parseSpec(rule.spec, /*allowStar=*/rule.pattern.find('*') != std::string::npos);
  if (!check.ok()) return Error{"--label '" + std::string(text) + "': " + check.error()};
  return rule;
}

std::optional<Expected<Config>> applyLabelRules(const std::vector<LabelRule>& rules,
                                                std::string_view key) {
  for (const LabelRule& rule : rules) {
    std::string captured;
    if (!globMatch(rule.pattern, key, &captured)) continue;
    std::string spec = rule.spec;
    if (rule.pattern.find('*') != std::string::npos) {
      for (size_t at = spec.find('*'); at != std::string::npos;
           at = spec.find('*', at + captured.size())) {
        spec.replace(at, 1, captured);
      }
    }
    auto config = parseConfigSpec(spec);
    if (!config.ok()) {
      return Expected<Config>(Error{"--label '" + rule.pattern + "=" + rule.spec + "' on '" +
                                    std::string(key) + "': " + config.error()});
    }
    return config;
  }
  return std::nullopt;
}

}  // namespace pilot::calibration
