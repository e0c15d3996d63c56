// A forcing configuration as a table choice. NCCL_ALGO/NCCL_PROTO accept a list and a leading
// '^' (everything but the list); the per-collective form ("allreduce:tree;...") has no single
// rule equivalent and is refused.
#include <string>

#include "pilot/calibration/fit.h"
#include "pilot/core/text.h"
#include "pilot/tuner/names.h"

namespace pilot::calibration {
namespace {

template <typename Parse>
Expected<unsigned> parseList(const std::string& value, const char* variable, int count,
                             Parse parse) {
  std::string_view list = text::trim(value);
  if (list.find(':') != std::string_view::npos || list.find(';') != std::string_view::npos) {
    return Error{std::string(variable) + "=" + value +
                 ": per-collective settings are not expressible as one rule"};
  }
  const bool negate = !list.empty() && list[0] == '^';
  if (negate) list.remove_prefix(1);
  unsigned mask = 0;
  for (std::string_view name : text::split(list, ',')) {
    name = text::trim(name);
    if (name.empty()) continue;
    auto index = parse(name);
    if (!index) {
      return Error{std::string(variable) + "=" + value + ": unknown name '" + std::string(name) +
                   "'"};
    }
    mask |= 1u << static_cast<int>(*index);
  }
  if (negate) mask = ((1u << count) - 1) & ~mask;
  if (mask == 0) return Error{std::string(variable) + "=" + value + ": names nothing"};
  return mask;
}

}  // namespace

Expected<tuner::Rule> ruleForConfig(const Config& config) {
  tuner::Rule rule;
  if (!config.algo.empty()) {
    auto m = parseList(config.algo, "NCCL_ALGO", tuner::kNumAlgorithms,
                       [](std::string_view n) { return tuner::parseAlgorithm(n); });
    if (!m.ok()) return Error{m.error()};
    rule.algorithms = static_cast<tuner::AlgoMask>(*m);
  }
  if (!config.proto.empty()) {
    auto m = parseList(config.proto, "NCCL_PROTO", tuner::kNumProtocols,
                       [](std::string_view n) { return tuner::parseProtocol(n); });
    if (!m.ok()) return Error{m.error()};
    rule.protocols = static_cast<tuner::ProtoMask>(*m);
  }
  if (config.minChannels != 0 || config.maxChannels != 0) {
    // The table sets the channel count of an operation; NCCL_MIN/MAX_NCHANNELS bound the
    // communicator's. They agree only when both name the same count.
    if (config.minChannels != config.maxChannels || config.minChannels < 1 ||
        config.minChannels > tuner::kMaxChannels) {
      return Error{"NCCL_MIN_NCHANNELS=" + std::to_string(config.minChannels) +
                   " NCCL_MAX_NCHANNELS=" + std::to_string(config.maxChannels) +
                   ": only an equal pair (one channel count) is expressible as channels="};
    }
    rule.channels = config.minChannels;
  }
  return rule;
}

}  // namespace pilot::calibration
