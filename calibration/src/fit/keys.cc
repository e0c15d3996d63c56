// The rules' nccl= and fabric= keys: what the logs (or the sweep's manifest) say the runs ran
// on, or what --nccl and --fabric say instead. A key nobody knows is left off, and the output
// says so: a rule without it applies under any NCCL and on any fabric.
#include <string>

#include "fit/internal.h"
#include "pilot/calibration/fit.h"
#include "pilot/core/text.h"

namespace pilot::calibration {
namespace {

constexpr const char* kAny = "any";

/// The key as the table parser reads it, from a one-rule table.
Expected<tuner::Rule> keyRule(const std::string& key, const std::string& value) {
  const tuner::ParsedTable parsed =
      tuner::parseTable("allreduce " + key + "=" + value + "\n", "--" + key);
  if (!parsed.diagnostics.empty() || parsed.table.rules.size() != 1) {
    const std::string why =
        parsed.diagnostics.empty() ? std::string("not a key value") : parsed.diagnostics[0].message;
    return Error{"--" + key + " " + value + ": " + why};
  }
  return parsed.table.rules[0];
}

/// "2.27.5" -> the 2.27 series, [2.27.0, 2.27.99]; nullopt when it is not a version.
std::optional<tuner::Range> minorSeries(const std::string& version) {
  const std::vector<std::string_view> parts = text::split(version, '.');
  if (parts.size() < 2) return std::nullopt;
  auto major = text::parseUnsigned(parts[0]), minor = text::parseUnsigned(parts[1]);
  if (!major || !minor || *major == 0 || *major > 99 || *minor > 99) return std::nullopt;
  const auto a = static_cast<unsigned>(*major), b = static_cast<unsigned>(*minor);
  return tuner::Range{tuner::ncclVersionCode(a, b, 0), tuner::ncclVersionCode(a, b, 99)};
}

/// The key's text as formatRule writes it ("nccl=2.27"), from a rule holding only that key.
std::string keyText(const tuner::Rule& keyOnly) {
  const std::string text = tuner::formatRule(keyOnly);
  const size_t space = text.find(' ');
  return space == std::string::npos ? text : text.substr(space + 1);
}

}  // namespace

Status checkKeyOptions(const FitOptions& options) {
  if (!options.nccl.empty() && options.nccl != kAny) {
    if (auto r = keyRule("nccl", options.nccl); !r.ok()) return Error{r.error()};
  }
  if (!options.fabric.empty() && options.fabric != kAny) {
    if (auto r = keyRule("fabric", options.fabric); !r.ok()) return Error{r.error()};
  }
  return Status::success();
}

namespace detail {

void assignKeys(const Shape& shape, const FitOptions& options, ShapeFit& fit) {
  tuner::Rule keys;
  std::string nccl, fabric;
  if (options.nccl == kAny) {
    nccl = "no nccl= key (--nccl any)";
  } else if (!options.nccl.empty()) {
    if (auto r = keyRule("nccl", options.nccl); r.ok()) keys.ncclVersions = r->ncclVersions;
    nccl = "(--nccl)";
  } else if (auto series = minorSeries(shape.ncclVersion)) {
    keys.ncclVersions = *series;
    nccl = std::string(shape.perCall ? "(the profiler's metrics report NCCL "
                                     : "(the runs report NCCL ") +
           shape.ncclVersion + ")";
  } else {
    nccl = shape.perCall ? "NCCL version unknown (the metrics say \"unknown\"; --nccl sets it)"
                         : "NCCL version unknown (no 'NCCL version' line; --nccl sets it)";
  }
  if (options.fabric == kAny) {
    fabric = "no fabric= key (--fabric any)";
  } else if (!options.fabric.empty()) {
    if (auto r = keyRule("fabric", options.fabric); r.ok()) keys.fabrics = r->fabrics;
    fabric = "(--fabric)";
  } else if (shape.perCall) {
    keys.fabrics = shape.fabrics;
    fabric = shape.fabrics != 0 ? "(the profiler's metrics report it)"
                                : "fabric unknown (the metrics say \"unknown\"; --fabric sets it)";
  } else if (shape.fabrics != 0) {
    keys.fabrics = shape.fabrics;
    fabric = shape.network.empty() ? "(the environment keeps NCCL's IB transport out)"
                                   : "(NCCL logged 'Using network " + shape.network + "')";
  } else {
    fabric = shape.network.empty() ? "fabric unknown (no 'Using network' line; --fabric sets it)"
                                   : "fabric unknown (NCCL logged 'Using network " + shape.network +
                                         "', which does not say; --fabric sets it)";
  }
  fit.ncclVersions = keys.ncclVersions;
  fit.fabrics = keys.fabrics;
  tuner::Rule onlyNccl, onlyFabric;
  onlyNccl.ncclVersions = keys.ncclVersions;
  onlyFabric.fabrics = keys.fabrics;
  const bool anyNccl = keys.ncclVersions.any(), anyFabric = keys.fabrics == 0;
  fit.keys = "keys: " + (anyNccl ? nccl : keyText(onlyNccl) + " " + nccl) + "; " +
             (anyFabric ? fabric : keyText(onlyFabric) + " " + fabric);
  if (anyNccl || anyFabric) {
    fit.keys += std::string("; its rules apply under ") + (anyNccl && anyFabric
                                                               ? "any NCCL and on any fabric"
                                                           : anyNccl ? "any NCCL"
                                                                     : "any fabric");
  }
}

}  // namespace detail
}  // namespace pilot::calibration
