// Steps of fit() shared between its source files.
#pragma once

#include <string>
#include <vector>

#include "pilot/calibration/fit.h"

namespace pilot::calibration::detail {

/// Per measured size of the shape's default: the choice and why. `note` says why the shape
/// gets no rules when that is not the data's verdict (no default, too few repeats).
std::vector<Decision> decideShape(const Shape& shape, const std::vector<bool>& expressible,
                                  const ShapeEvidence& evidence, std::string& note);

/// assessEvidence for a shape of per-call samples (Shape::perCall).
ShapeEvidence assessCallsEvidence(const Shape& shape, const FitOptions& options);

/// Per-call samples from jobs that ran under a table: where a rule chose the baseline and the
/// fit keeps it, the decision names the baseline's own configuration (gain 0), so the new
/// table says it again rather than leave the size to NCCL.
void keepTableChoices(const Shape& shape, const std::vector<bool>& expressible,
                      std::vector<Decision>& decisions);

/// Per-call samples: one `explore=` mark per cell and run of adjacent measured sizes where the
/// cell measured clearly slower than the fastest (slow), enough (known, kKnownCalls) or too
/// little (first). `choices` holds each series' table choice (parallel to Shape::series),
/// `base` the shape's keys.
void addExploreMarks(const Shape& shape, const std::vector<tuner::Rule>& choices,
                     const tuner::Rule& base, const FitOptions& options,
                     std::vector<FittedRule>& marks);

/// The shape's rule keys (nccl=, fabric=) from the options or the runs, with the line that says
/// where they came from (ShapeFit::keys).
void assignKeys(const Shape& shape, const FitOptions& options, ShapeFit& fit);

/// Carries the last band past the largest measured size where the alpha-beta models of its
/// configuration and of the default predict a gain above the threshold at that size.
SizeExtension extendLastBand(const Shape& shape, const Decision& last, std::vector<Band>& bands);

/// Leave-one-node-count-out errors of the node model, per configuration and shape family.
std::vector<NodeModelReport> nodeModels(const Measurements& data);

/// Bands for the node counts between each pair of adjacent measured ones.
std::vector<NodeRange> nodeRanges(const Measurements& data, const std::vector<ShapeFit>& fits,
                                  const std::vector<Decision>& decisions,
                                  const std::vector<NodeModelReport>& models);

/// The shape's keys in a JSON record: collective, nodes, ranks and (when set) setup.
void putShape(nlohmann::ordered_json& j, const ShapeKey& k);

/// "1.5 us", "12.3 ms".
std::string formatTime(double us);
/// `v` with `decimals` decimals; "n/a" when it is not finite.
std::string fixed(double v, int decimals);
/// `s` padded with spaces to `width`: on the left (right-aligned) or on the right.
std::string pad(const std::string& s, size_t width, bool right = true);
/// NaN and infinities are not JSON: null says "not computed".
nlohmann::ordered_json number(double v);
/// The current time in UTC, in strftime's `format`.
std::string utcNow(const char* format);
/// "8K" style exact byte counts for comments.
std::string bytes(uint64_t v);

/// A band's range as people read it, from edge to edge: "88K..704K", "0..64K", "2816K..".
/// (Band::lo is the byte after the lower edge; tables write the edge itself, see fit/fit.cc.)
std::string bandRange(const Band& band, const std::string& separator = "..");

}  // namespace pilot::calibration::detail
