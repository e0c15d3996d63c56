// fit --json: every decision and the figures behind the table.
#include <cmath>
#include <cstdint>

#include "fit/internal.h"
#include "pilot/calibration/fit.h"

namespace pilot::calibration {
namespace {

using OrderedJson = nlohmann::ordered_json;
using detail::number;

/// Rounded for people; the table holds the exact choices.
double round4(double v) {
  return std::round(v * 1e4) / 1e4;
}

OrderedJson sizeOrNull(uint64_t v) {
  return v == UINT64_MAX ? OrderedJson(nullptr) : OrderedJson(v);
}

OrderedJson bandJson(const Band& b) {
  OrderedJson j;
  j["lo"] = b.lo;
  j["hi"] = sizeOrNull(b.hi);
  j["chosen"] = b.label;
  j["first_measured"] = b.firstSize;
  j["last_measured"] = b.lastSize;
  j["sizes"] = b.sizes;
  j["min_gain"] = round4(b.minGain);
  j["max_gain"] = round4(b.maxGain);
  j["extended"] = b.extended;
  j["cliff_below"] = b.cliffBelow;
  j["cliff_above"] = b.cliffAbove;
  return j;
}

OrderedJson abJson(const AlphaBeta& ab) {
  OrderedJson j;
  j["alpha_us"] = round4(ab.alphaUs);
  j["beta_gbps"] = round4(ab.betaGBps());
  return j;
}

}  // namespace

nlohmann::ordered_json fitJson(const FitResult& r) {
  OrderedJson out;
  out["decisions"] = OrderedJson::array();
  for (const Decision& d : r.decisions) {
    OrderedJson j;
    detail::putShape(j, d.shape);
    j["size"] = d.size;
    j["chosen"] = d.chosenLabel;
    j["time_us"] = d.timeUs;
    j["default_time_us"] = d.defaultTimeUs;
    j["gain"] = round4(d.gain);
    j["spread"] = round4(d.spread);
    j["threshold"] = round4(d.threshold);
    j["fastest"] = d.fastestLabel;
    j["fastest_gain"] = round4(d.fastestGain);
    j["reason"] = d.reason;
    out["decisions"].push_back(j);
  }
  out["rules"] = r.rules.size();
  out["margin"] = r.options.margin;
  out["calls_margin"] = r.options.callsMargin;
  out["min_repeats"] = r.options.minRepeats;
  if (!r.ncclVersion.empty()) out["nccl"] = r.ncclVersion;

  out["configs"] = OrderedJson::array();
  for (const Shape& shape : r.data.shapes) {
    for (const Series& s : shape.series) {
      OrderedJson j;
      detail::putShape(j, shape.key);
      j["label"] = s.label;
      j["algo"] = s.config.algo;
      j["proto"] = s.config.proto;
      j["min_channels"] = s.config.minChannels;
      j["max_channels"] = s.config.maxChannels;
      j["runs"] = s.runs.size();
      if (s.calls > 0) j["calls"] = s.calls;
      j["sizes"] = s.sizes.size();
      if (s.isDefault()) {
        j["rule"] = nullptr;
      } else if (auto rule = ruleForConfig(s.config); rule.ok()) {
        // The choice part of the rule a band of this configuration gets.
        std::string text = tuner::formatRule(*rule);
        const size_t space = text.find(' ');
        j["rule"] = space == std::string::npos ? "" : text.substr(space + 1);
      } else {
        j["rule"] = nullptr;
        j["not_expressible"] = rule.error();
      }
      if (!s.isDefault() && static_cast<int>(s.runs.size()) < r.options.minRepeats) {
        j["noise"] =
            "fewer runs than --min-repeats: its own spread is not a noise estimate; "
            "the noise of the repeated configurations at each size applies";
      }
      out["configs"].push_back(j);
    }
  }

  out["bands"] = OrderedJson::array();
  for (const ShapeFit& f : r.shapes) {
    OrderedJson j;
    detail::putShape(j, f.key);
    j["bands"] = OrderedJson::array();
    for (const Band& b : f.bands) j["bands"].push_back(bandJson(b));
    if (!f.note.empty()) j["note"] = f.note;
    j["evidence"] = {{"kind", evidenceName(f.evidence.kind)},
                     {"default_runs", f.evidence.defaultRuns},
                     {"band_sizes", f.evidence.bandSizes},
                     {"floor", round4(f.evidence.floor)},
                     {"summary", f.evidence.summary}};
    if (f.evidence.kind == EvidenceKind::Estimated) {
      j["evidence"]["noise_from"] =
          f.evidence.source == NoiseSource::Twin ? "twin of the default" : "roughness";
    }
    j["keys"] = f.keys;
    out["bands"].push_back(j);
  }

  OrderedJson ex;
  ex["sizes_policy"] =
      "past the largest measured size the last band continues only where alpha-beta models "
      "(fitted over the top 4 octaves) predict a gain above its bar; otherwise NCCL decides";
  ex["sizes"] = OrderedJson::array();
  for (const ShapeFit& f : r.shapes) {
    if (!f.extension.attempted) continue;
    OrderedJson j;
    detail::putShape(j, f.key);
    j["chosen"] = f.extension.label;
    j["model_chosen"] = abJson(f.extension.chosen);
    j["model_default"] = abJson(f.extension.defaults);
    j["gain_at_largest"] = round4(f.extension.gainAtLargest);
    j["gain_limit"] = round4(f.extension.gainLimit);
    j["until"] = f.extension.until == 0 ? OrderedJson(nullptr) : sizeOrNull(f.extension.until);
    j["unbounded"] = f.extension.until == UINT64_MAX;
    j["note"] = f.extension.note;
    ex["sizes"].push_back(j);
  }
  ex["nodes_model"] =
      "time = (a0 + a1 f) + size (b0 + b1 f), f = log2(n) or n (whichever predicts held-out "
      "node counts better), fitted per size over the measurements within 2 octaves by relative "
      "least squares; error = median |predicted - measured| / measured over held-out node "
      "counts";
  ex["nodes"] = OrderedJson::array();
  for (const NodeModelReport& m : r.nodeModels) {
    OrderedJson j;
    j["collective"] = m.collective;
    j["ranks_per_node"] = m.ranksPerNode;
    if (!m.setup.empty()) j["setup"] = m.setup;
    j["config"] = m.label;
    j["node_counts"] = m.nodeCounts;
    j["node_term"] = nodeScaleName(m.scale);
    j["median_rel_error"] = number(round4(m.medianRelError));
    j["held_out"] = OrderedJson::array();
    for (const auto& h : m.heldOut) {
      j["held_out"].push_back(
          {{"nodes", h.nodes}, {"median_rel_error", round4(h.medianRelError)}, {"sizes", h.sizes}});
    }
    ex["nodes"].push_back(j);
  }
  ex["node_ranges"] = OrderedJson::array();
  for (const NodeRange& range : r.nodeRanges) {
    OrderedJson j;
    j["collective"] = range.collective;
    j["ranks_per_node"] = range.ranksPerNode;
    if (!range.setup.empty()) j["setup"] = range.setup;
    j["nodes"] = {range.below + 1, range.above - 1};
    j["bands"] = OrderedJson::array();
    for (const Band& b : range.bands) j["bands"].push_back(bandJson(b));
    ex["node_ranges"].push_back(j);
  }
  out["extrapolation"] = ex;

  out["excluded_runs"] = OrderedJson::array();
  for (const ExcludedRun& e : r.data.excluded) {
    out["excluded_runs"].push_back({{"source", e.source},
                                    {"collective", e.collective},
                                    {"label", e.label},
                                    {"reasons", e.reasons}});
  }
  out["notes"] = r.notes;
  return out;
}

namespace detail {

void putShape(OrderedJson& j, const ShapeKey& k) {
  j["collective"] = k.collective;
  j["nodes"] = k.nodes;
  j["ranks"] = k.ranks;
  if (!k.setup.empty()) j["setup"] = k.setup;
}

}  // namespace detail
}  // namespace pilot::calibration
