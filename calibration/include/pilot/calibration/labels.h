// Forcing configurations as users write them, and --label rules that say which configuration
// a hand-gathered log measured.
//
// A SPEC is `default` or NCCL variables joined by ',' or '+':
//   NCCL_ALGO=Ring,NCCL_PROTO=LL      NCCL_ALGO=Tree+NCCL_PROTO=Simple
//   NCCL_MIN_NCHANNELS=4+NCCL_MAX_NCHANNELS=4
// A separator only starts a new variable when `NAME=` follows it, so values that are lists
// themselves keep their commas: NCCL_ALGO=Ring,Tree,NCCL_PROTO=LL forces ALGO "Ring,Tree".
// Only the four variables a tuning table can express are accepted (NCCL_ALGO, NCCL_PROTO,
// NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS): a run forced any other way could not become a rule.
//
// A label rule is PATTERN=SPEC (split at the first '='). PATTERN is a glob ('*' matches any
// run of characters, '?' one) matched against a run's label key: the value of its
// `# RUN ... config=` line, else the input file's name. When PATTERN has a '*', every '*' in
// SPEC is replaced by what the first one matched: `auto_*=NCCL_PROTO=*` reads auto_ll128 as
// NCCL_PROTO=LL128.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pilot/calibration/measurements.h"
#include "pilot/core/result.h"

namespace pilot::calibration {

/// The variables that make up a Config, in the order they are written.
inline constexpr const char* kForcingVariables[] = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS",
                                                    "NCCL_MAX_NCHANNELS"};

/// One SPEC. Algorithm and protocol names are normalised to NCCL's spelling ("ring" -> "Ring",
/// "ll128" -> "LL128"; lists and '^' exclusions element by element) so that equal forcings
/// compare equal. The label is canonicalLabel() of the result.
Expected<Config> parseConfigSpec(std::string_view spec);

/// Sets one forcing variable on `config` (normalised as above). Error for other variables or
/// bad values.
Status setForcingVariable(Config& config, std::string_view name, std::string_view value);

/// A list of configurations (sweep plan --configs): ',' separates configurations, '+' joins
/// the variables of one. A piece after ',' that is neither `default`, `NAME=...` nor
/// `label:SPEC` continues the previous value: "default,NCCL_ALGO=Ring,Tree" is two configs.
/// Each configuration may be named: "ring:NCCL_ALGO=Ring" (label "ring").
Expected<std::vector<Config>> parseConfigList(std::string_view list);

/// One configuration with an optional "label:" prefix (sweep plan --config).
Expected<Config> parseNamedConfig(std::string_view text);

/// "default", or lowercase names joined by '+': "ring", "ll", "tree+simple", "ch4" (min = max
/// = 4), "ch2-8", "chmin4", "chmax8". Readable and safe in file names.
std::string canonicalLabel(const Config& config);

/// The SPEC that gives this configuration: "default" or "NCCL_ALGO=Ring,NCCL_PROTO=LL".
std::string configSpec(const Config& config);

/// The environment that forces it, in kForcingVariables order (empty for the default).
std::vector<std::pair<std::string, std::string>> configEnv(const Config& config);

/// A string equal for two configurations exactly when they force the same thing (labels
/// ignored), for grouping.
std::string forcingKey(const Config& config);

/// Glob match of the whole text. `capture` (optional) receives what the first '*' matched.
bool globMatch(std::string_view pattern, std::string_view text, std::string* capture = nullptr);

struct LabelRule {
  std::string pattern;
  std::string spec;  ///< may contain '*' (replaced by the pattern's first '*' match)
};

/// PATTERN=SPEC; the SPEC is checked now (with '*' read as a valid name) so mistakes are
/// reported before any file is read.
Expected<LabelRule> parseLabelRule(std::string_view text);

/// The first rule whose pattern matches `key` gives the configuration, labelled `key` (or
/// "default" when it forces nothing). nullopt: no rule matches. Error: the SPEC after '*'
/// substitution is invalid ("auto_foo" under `auto_*=NCCL_PROTO=*`).
std::optional<Expected<Config>> applyLabelRules(const std::vector<LabelRule>& rules,
                                                std::string_view key);

}  // namespace pilot::calibration
