// Fitting a tuning table to measurements (docs/calibration.md). Per measured size the fastest
// configuration replaces NCCL's default only where its gain beats the noise; adjacent sizes
// with the same choice become size bands; node counts between measured ones are covered by an
// alpha-beta model across nodes.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/calibration/alpha_beta.h"
#include "pilot/calibration/measurements.h"
#include "pilot/calibration/series.h"
#include "pilot/core/result.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {

/// The default minimum gain. On 2 x p5 two identical runs differ by under 2% above 2 MB and by
/// up to 19% at 8 KB (research/tuner.md section 4). Where noise is that high the measured spread
/// sets the bar; the margin is the floor for quiet sizes: 2.5 times the quiet run-to-run
/// difference, so a rule needs a gain no rerun of the same sweep would take away.
constexpr double kDefaultMargin = 0.05;
/// The floor for per-call samples (profiler metrics): the configurations ran interleaved in one
/// job, so no shift of a whole run separates them, and the standard errors of the calls carry
/// the noise; the floor only keeps gains too small to matter out of the table.
constexpr double kDefaultCallsMargin = 0.02;
constexpr int kDefaultMinRepeats = 2;

/// Without repeats of the default the noise is estimated from the data, and more evidence is
/// demanded: a gain must beat this many standard deviations of the difference of two single
/// measurements, the margin counts this many times over (a whole run may be shifted, which no
/// single run shows), and a band needs this many adjacent winning sizes.
constexpr double kEstimatedNoiseDeviations = 2.0;
constexpr double kEstimatedMarginFactor = 2.0;
constexpr int kEstimatedBandSizes = 3;
/// Fewer measured sizes than this leave too few neighbours to estimate the noise from.
constexpr int kMinSizesToEstimateNoise = 5;
/// The twin of the default: where each forced configuration ran once beside one run of the
/// default, the forced configuration nearest the default at a size is, most likely, what NCCL
/// picked there anyway: a second run of the default. Their log-time distances sample the
/// run-to-run noise directly; a difference of two runs has standard deviation
/// max(median distance / kTwinMedianToSigma, kMinTwinSigma) (half-normal median).
constexpr double kTwinMedianToSigma = 0.6745;
constexpr double kMinTwinSigma = 0.02;
/// Per-call samples (profiler metrics): an alternative overrides the baseline only where its
/// gain beats max(margin, 1 - exp(-kCallsDeviations x SE)), SE the standard error of the
/// difference of the two trimmed means of log time (callsBar), and only with at least
/// kMinCalls calls of its own at that size (and the baseline too).
constexpr double kCallsDeviations = 2.0;
constexpr uint64_t kMinCalls = 6;
/// Per-call samples: calls of the fastest configuration at a size (pooled over ranks and jobs)
/// past which the table marks it `explore=known` (explore_marks.cc); any other is known once
/// two standard errors of its difference from the fastest are within the calls margin.
constexpr uint64_t kKnownCalls = 24;
/// expect= points a rule carries at most (the table parser's limit).
constexpr size_t kMaxExpectPoints = tuner::kMaxExpectedTimes;

struct FitOptions {
  double margin = kDefaultMargin;            ///< minimum relative gain over NCCL's default
  double callsMargin = kDefaultCallsMargin;  ///< the same, for per-call samples
  int minRepeats = kDefaultMinRepeats;       ///< runs a series needs for its spread to count
  /// The rules' nccl= and fabric= keys: "" = from the logs (unknown stays unkeyed), "any" =
  /// none, else the key's value as the table writes it ("2.27", "2.27-2.28", "ib|roce").
  std::string nccl, fabric;
  std::string toolVersion;          ///< for "#@ fitted-by"
  std::vector<std::string> inputs;  ///< for "#@ inputs"
  std::string date;                 ///< for "#@ date"; "" = now, UTC
};

/// Checks FitOptions::nccl and ::fabric as the table parser reads them.
Status checkKeyOptions(const FitOptions& options);

/// NCCL's default at a size, in Decision::chosen and Band::series.
constexpr int kDefaultChoice = -1;

/// The run-to-run noise at the shape's i-th default size: the largest spread, (max - min) /
/// median over repeats, of any series with at least minRepeats runs, at that size and its two
/// measured neighbours. Noise belongs to the machine and the message size, not to one
/// configuration, and three repeats estimate it poorly, so the estimate pools them and keeps
/// the largest: when unsure, NCCL's default stays.
double noiseAt(const Shape& shape, size_t i, int minRepeats);

/// What a shape's decisions rest on (docs/calibration.md, "Evidence").
enum class EvidenceKind {
  Repeats,    ///< the default ran at least --min-repeats times: noise measured over repeats
  Estimated,  ///< fewer: noise estimated from the data, a larger bar, longer bands
  TooLittle,  ///< no default, or too few sizes to estimate the noise from: no rules
  Calls,      ///< per-call samples (profiler metrics): standard errors from the calls
};

/// "repeats", "estimated noise", "too little evidence", "per-call samples".
const char* evidenceName(EvidenceKind kind);

/// Where estimated noise comes from (docs/calibration.md, "Estimating the noise without
/// repeats").
enum class NoiseSource {
  Roughness,  ///< each configuration's log-time against the parabola through its neighbours
  Twin,       ///< the distance between the default and its twin (kTwinMedianToSigma)
};

struct ShapeEvidence {
  EvidenceKind kind = EvidenceKind::TooLittle;
  int defaultRuns = 0;
  int bandSizes = 2;  ///< adjacent winning sizes a band needs
  double floor = 0;   ///< the smallest bar: the margin (doubled when the noise is estimated)
  /// Per size of the default: the noise a gain must beat there (relative). Repeats: noiseAt.
  /// Estimated: kEstimatedNoiseDeviations standard deviations of the difference of two single
  /// measurements, or the measured spread of repeated configurations where that is larger.
  std::vector<double> noise;
  /// Estimated only, per size: the noise of one measurement's log-time. Roughness: from the
  /// roughness of every configuration's log-time against log-size around its neighbours
  /// (and from in-place against out-of-place times where they differ), pooled over the size
  /// and its two neighbours either side, as a robust standard deviation.
  std::vector<double> sigma;
  bool usedInPlace = false;  ///< in-place times joined the estimate
  /// Estimated only: Twin where at least kMinSizesToEstimateNoise sizes had two or more forced
  /// configurations measured beside the default, else Roughness. With Twin, `sigma` is the
  /// standard deviation of one run's log-time, sigma_diff / sqrt(2), the same at every size,
  /// and `noise` is kEstimatedNoiseDeviations times the larger of sigma_diff and the largest
  /// twin distance at the size and its two neighbours (as a relative time).
  NoiseSource source = NoiseSource::Roughness;
  /// Twin only, per size: the twin's series index (-1: fewer than two forced configurations
  /// measured there), |log t_twin - log t_default|, and how much faster than the default the
  /// twin ran, max(0, log t_default - log t_twin): a gain counts over the faster of the two.
  std::vector<int> twin;
  std::vector<double> twinDistance, twinLead;
  std::string summary;  ///< one line: what the decisions rest on

  /// The bar a loss must exceed to count at the i-th size: max(floor, noise).
  double noiseBar(size_t i) const;
  /// The bar a gain over the default must beat at the i-th size: noiseBar, and with a twin
  /// that ran faster than the default, over the twin's time instead of the default's.
  double bar(size_t i) const;
};

/// The evidence a shape's runs give (a shape without a default gets TooLittle; a shape of
/// per-call samples Calls, or TooLittle when no alternative ran kMinCalls calls at any size).
ShapeEvidence assessEvidence(const Shape& shape, const FitOptions& options);

/// Per-call samples: the gain `alt` must beat over the baseline `def` at one size,
/// max(floor, 1 - exp(-kCallsDeviations * sqrt(s^2 / n_alt + s_def^2 / n_def))), where
/// s = max(alt.logSigma, def.logSigma): noise belongs to the machine and the size, and a few
/// calls underestimate it as often as not.
double callsBar(const SizeStat& alt, const SizeStat& def, double floor);

/// The fit's verdict at one measured size of one shape.
struct Decision {
  ShapeKey shape;
  uint64_t size = 0;
  int chosen = kDefaultChoice;  ///< index into the shape's series, or kDefaultChoice
  std::string chosenLabel;      ///< "default" or the configuration's label
  double timeUs = 0;            ///< the chosen configuration's median time
  double defaultTimeUs = 0;
  double gain = 0;               ///< 1 - timeUs / defaultTimeUs (0 when the default stays)
  double spread = 0;             ///< the noise at this size (see noiseAt)
  double defaultSpread = 0;      ///< the default's own spread over its repeats at this size
  double threshold = 0;          ///< the gain a configuration had to beat (ShapeEvidence::bar)
  double lossBar = 0;            ///< the loss that counts as one here (ShapeEvidence::noiseBar)
  int fastest = kDefaultChoice;  ///< the fastest expressible configuration measured here
  std::string fastestLabel;
  double fastestGain = 0;  ///< its gain over the default (negative: slower)
  std::string reason;      ///< why the fastest was or was not chosen, one short phrase
};

/// A range of message sizes with one choice. Measured sizes sit inside; the edges lie at the
/// geometric midpoints between measured sizes.
struct Band {
  uint64_t lo = 0, hi = 0;  ///< bytes, inclusive
  int series = kDefaultChoice;
  std::string label;
  uint64_t firstSize = 0, lastSize = 0;  ///< measured sizes inside
  int sizes = 0;
  double minGain = 0, maxGain = 0;
  bool extended = false;  ///< hi lies past lastSize by the alpha-beta models
  /// Cliff-safe edges: the measured size below (above) the band lost to the default by more
  /// than the bar there, so the band starts (ends) at its first (last) measured size instead
  /// of the geometric midpoint: nothing between a winning and a losing size is claimed.
  bool cliffBelow = false, cliffAbove = false;
};

/// How the last band was (or was not) carried past the largest measured size.
struct SizeExtension {
  bool attempted = false;  ///< the largest measured size chose a configuration
  std::string label;
  AlphaBeta chosen, defaults;  ///< fitted over the sizes within 4 octaves of the largest
  double gainAtLargest = 0;    ///< the models' gain at the largest measured size
  double gainLimit = 0;        ///< the models' gain for unbounded sizes (1 - beta_d / beta_c)
  uint64_t until = 0;          ///< last byte covered; UINT64_MAX = unbounded; 0 = not extended
  std::string note;
};

struct ShapeFit {
  ShapeKey key;
  std::vector<Band> bands;  ///< every measured size in exactly one band, defaults included
  SizeExtension extension;
  ShapeEvidence evidence;
  std::string note;  ///< why the shape has no rules, when that is not the data's verdict
  /// The rules' nccl= and fabric= keys (any = unkeyed) and where they came from, one line.
  tuner::Range ncclVersions;
  tuner::FabricMask fabrics = 0;
  std::string keys;
};

/// Leave-one-node-count-out error of the node model for one configuration.
struct NodeModelReport {
  std::string collective, setup, label;
  int ranksPerNode = 0;
  std::vector<int> nodeCounts;
  NodeScale scale = NodeScale::Log2;  ///< the node term that predicted held-out counts best
  double medianRelError = std::numeric_limits<double>::quiet_NaN();  ///< NaN: < 2 node counts
  struct HeldOut {
    int nodes = 0;
    double medianRelError = 0;
    int sizes = 0;
    std::vector<SizeTime> measured, predicted;  ///< per size, for the report's chart
  };
  std::vector<HeldOut> heldOut;
};

/// Node counts strictly between two measured ones, covered by the node model.
struct NodeRange {
  std::string collective, setup;
  int ranksPerNode = 0;
  int below = 0, above = 0;        ///< the measured node counts either side
  std::vector<Band> bands;         ///< Band::series indexes the series of the shape at `below`
  std::vector<double> modelError;  ///< per band: the node models' error its gain had to beat
};

struct FittedRule {
  tuner::Rule rule;
  std::string comment;  ///< one line, written above the rule
};

struct FitResult {
  FitOptions options;
  Measurements data;
  std::vector<ShapeFit> shapes;  ///< parallel to data.shapes
  std::vector<Decision> decisions;
  std::vector<NodeModelReport> nodeModels;
  std::vector<NodeRange> nodeRanges;
  std::vector<FittedRule> rules;  ///< in table order
  /// `explore=` marks from per-call samples: what the next exploring job skips (after the rules)
  std::vector<FittedRule> marks;
  std::vector<std::string> notes;  ///< warnings for the user, one line each
  std::string ncclVersion;         ///< when every run agrees, else ""
};

/// The table choice (algorithms, protocols, channels) that makes NCCL behave as a forcing
/// configuration did: only NCCL_PROTO -> restrict proto=, only NCCL_ALGO -> restrict algo=,
/// one of each -> select, equal NCCL_MIN/MAX_NCHANNELS -> channels=. An error when the table
/// cannot say it (per-collective syntax, unknown names, a channel range).
Expected<tuner::Rule> ruleForConfig(const Config& config);

FitResult fit(const Dataset& data, const FitOptions& options);
/// The same on measurements already summarised (summarize(), or summarizeMetrics() for the
/// profiler's per-call samples); Measurements::notes become the result's first notes.
FitResult fit(const Measurements& data, const FitOptions& options);

/// The table file: provenance header, a comment per shape and per rule, rules in the native
/// syntax. Loads through tuner::parseTable without a diagnostic.
std::string tableText(const FitResult& result);

/// The --json report (docs/calibration.md lists its fields).
nlohmann::ordered_json fitJson(const FitResult& result);

/// Relative numbers as people read them: "4.2%".
std::string percent(double fraction);

}  // namespace pilot::calibration
