// Across node counts: the alpha-beta node model per configuration, its leave-one-node-count-out
// error, and bands for the node counts between measured ones.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "fit/bands.h"
#include "fit/internal.h"

namespace pilot::calibration::detail {
namespace {

/// Shapes that differ only in node count, with the same ranks per node.
struct Family {
  std::string collective, setup;
  int ranksPerNode = 0;
  bool operator<(const Family& o) const {
    return std::tie(collective, setup, ranksPerNode) <
           std::tie(o.collective, o.setup, o.ranksPerNode);
  }
};

/// family -> shapes in it, ascending node count.
std::map<Family, std::vector<const Shape*>> families(const Measurements& data) {
  std::map<Family, std::vector<const Shape*>> out;
  for (const Shape& s : data.shapes) {
    const int rpn = s.key.ranksPerNode();
    if (rpn > 0) out[{s.key.collective, s.key.setup, rpn}].push_back(&s);
  }
  for (auto& [f, shapes] : out) {
    std::sort(shapes.begin(), shapes.end(),
              [](const Shape* a, const Shape* b) { return a->key.nodes < b->key.nodes; });
  }
  return out;
}

const Series* findForcing(const Shape& shape, const std::string& forcing) {
  for (const Series& s : shape.series) {
    if (seriesKey(s.config) == forcing) return &s;
  }
  return nullptr;
}

/// Median times of one configuration at every node count of a family but `skipNodes`.
std::vector<NodePoint> pointsOf(const std::vector<const Shape*>& shapes, const std::string& forcing,
                                int skipNodes) {
  std::vector<NodePoint> pts;
  for (const Shape* shape : shapes) {
    if (shape->key.nodes == skipNodes) continue;
    const Series* s = findForcing(*shape, forcing);
    if (s == nullptr) continue;
    for (const SizeStat& st : s->sizes) {
      pts.push_back({static_cast<double>(st.size), shape->key.nodes, st.timeUs});
    }
  }
  return pts;
}

const NodeModelReport* modelOf(const std::vector<NodeModelReport>& models, const Family& f,
                               const std::string& label) {
  for (const NodeModelReport& m : models) {
    if (m.collective == f.collective && m.setup == f.setup && m.ranksPerNode == f.ranksPerNode &&
        m.label == label) {
      return &m;
    }
  }
  return nullptr;
}

double modelError(const NodeModelReport* m) {
  return m == nullptr ? std::numeric_limits<double>::quiet_NaN() : m->medianRelError;
}

}  // namespace

std::vector<NodeModelReport> nodeModels(const Measurements& data) {
  std::vector<NodeModelReport> out;
  for (const auto& [family, shapes] : families(data)) {
    // Configurations in first-seen order, each with the node counts that measured it.
    std::vector<std::pair<std::string, NodeModelReport>> byForcing;
    for (const Shape* shape : shapes) {
      for (const Series& s : shape->series) {
        const std::string key = seriesKey(s.config);
        auto it = std::find_if(byForcing.begin(), byForcing.end(),
                               [&](const auto& e) { return e.first == key; });
        if (it == byForcing.end()) {
          NodeModelReport r;
          r.collective = family.collective;
          r.setup = family.setup;
          r.ranksPerNode = family.ranksPerNode;
          r.label = s.label;
          byForcing.emplace_back(key, r);
          it = byForcing.end() - 1;
        }
        it->second.nodeCounts.push_back(shape->key.nodes);
      }
    }
    for (auto& [forcing, report] : byForcing) {
      if (report.nodeCounts.size() < 2) continue;
      // Both node terms are tried; the one that predicts held-out node counts better is kept
      // (trees grow like log2(n), rings like n) and its error is the one reported.
      bool first = true;
      for (NodeScale scale : {NodeScale::Log2, NodeScale::Linear}) {
        NodeModelReport candidate = report;
        candidate.scale = scale;
        candidate.heldOut.clear();
        std::vector<double> all;
        for (int held : candidate.nodeCounts) {
          const std::vector<NodePoint> train = pointsOf(shapes, forcing, held);
          std::vector<double> errors;
          NodeModelReport::HeldOut h;
          h.nodes = held;
          for (const NodePoint& p : pointsOf(shapes, forcing, -1)) {
            if (p.nodes != held) continue;
            const double predicted = predictAcrossNodes(train, p.size, held, scale);
            if (predicted < 0) continue;
            errors.push_back(std::fabs(predicted - p.timeUs) / p.timeUs);
            h.measured.push_back({p.size, p.timeUs});
            h.predicted.push_back({p.size, predicted});
          }
          if (errors.empty()) continue;
          all.insert(all.end(), errors.begin(), errors.end());
          h.medianRelError = median(errors);
          h.sizes = static_cast<int>(errors.size());
          candidate.heldOut.push_back(std::move(h));
        }
        if (!all.empty()) candidate.medianRelError = median(all);
        if (first || candidate.medianRelError < report.medianRelError) report = candidate;
        first = false;
      }
      out.push_back(std::move(report));
    }
  }
  return out;
}

std::vector<NodeRange> nodeRanges(const Measurements& data, const std::vector<ShapeFit>& fits,
                                  const std::vector<Decision>& decisions,
                                  const std::vector<NodeModelReport>& models) {
  std::map<std::pair<ShapeKey, uint64_t>, const Decision*> decisionAt;
  for (const Decision& d : decisions) decisionAt[{d.shape, d.size}] = &d;
  auto fitOf = [&](const Shape* s) -> const ShapeFit* {
    for (const ShapeFit& f : fits) {
      if (f.key == s->key) return &f;
    }
    return nullptr;
  };

  std::vector<NodeRange> out;
  for (const auto& [family, shapes] : families(data)) {
    for (size_t i = 0; i + 1 < shapes.size(); ++i) {
      const Shape& a = *shapes[i];
      const Shape& b = *shapes[i + 1];
      if (b.key.nodes <= a.key.nodes + 1 || a.defaults() == nullptr || b.defaults() == nullptr) {
        continue;
      }
      const std::string defaultKey = seriesKey(a.defaults()->config);
      const NodeModelReport* defaultModel = modelOf(models, family, a.defaults()->label);
      const double defaultError = modelError(defaultModel);
      NodeRange range;
      range.collective = family.collective;
      range.setup = family.setup;
      range.ranksPerNode = family.ranksPerNode;
      range.below = a.key.nodes;
      range.above = b.key.nodes;
      std::vector<SizeChoice> choices;
      std::vector<double> errors;
      for (const SizeStat& st : a.defaults()->sizes) {
        auto da = decisionAt.find({a.key, st.size});
        auto db = decisionAt.find({b.key, st.size});
        if (da == decisionAt.end() || db == decisionAt.end()) continue;
        SizeChoice choice{st.size, kDefaultChoice, "default", 0};
        double error = 0;
        const Decision& x = *da->second;
        const Decision& y = *db->second;
        if (x.chosen != kDefaultChoice && y.chosen != kDefaultChoice) {
          const Series& sa = a.series[static_cast<size_t>(x.chosen)];
          const Series& sb = b.series[static_cast<size_t>(y.chosen)];
          const std::string forcing = seriesKey(sa.config);
          // The measured node counts either side agree; the model must agree in between, by
          // more than its own error on held-out node counts.
          const NodeModelReport* model = modelOf(models, family, sa.label);
          error = std::max(modelError(model), defaultError);
          if (forcing == seriesKey(sb.config) && std::isfinite(error)) {
            const double bar = std::max({x.threshold, y.threshold, error});
            const auto pc = pointsOf(shapes, forcing, -1);
            const auto pd = pointsOf(shapes, defaultKey, -1);
            double worst = 1;
            for (int n : {a.key.nodes + 1, b.key.nodes - 1}) {
              const double size = static_cast<double>(st.size);
              const double tc = predictAcrossNodes(pc, size, n, model->scale);
              const double td = predictAcrossNodes(pd, size, n, defaultModel->scale);
              worst = tc > 0 && td > 0 ? std::min(worst, 1.0 - tc / td) : -1;
            }
            if (worst > bar) choice = {st.size, x.chosen, sa.label, worst};
          }
        }
        choices.push_back(choice);
        errors.push_back(error);
      }
      if (choices.empty()) continue;
      range.bands = makeBands(choices);
      size_t next = 0;
      for (const Band& band : range.bands) {
        double e = 0;
        for (int k = 0; k < band.sizes; ++k) e = std::max(e, errors[next++]);
        range.modelError.push_back(e);
      }
      // Past the largest size only as far as both neighbours were carried.
      Band& last = range.bands.back();
      const ShapeFit* fa = fitOf(&a);
      const ShapeFit* fb = fitOf(&b);
      if (last.series != kDefaultChoice && fa != nullptr && fb != nullptr && !fa->bands.empty() &&
          !fb->bands.empty() && fa->bands.back().extended && fb->bands.back().extended &&
          fb->bands.back().series != kDefaultChoice && fa->bands.back().series == last.series &&
          sameForcing(b.series[static_cast<size_t>(fb->bands.back().series)].config,
                      a.series[static_cast<size_t>(last.series)].config)) {
        last.hi = std::min(fa->bands.back().hi, fb->bands.back().hi);
        last.extended = last.hi > last.lastSize;
      }
      out.push_back(std::move(range));
    }
  }
  return out;
}

}  // namespace pilot::calibration::detail
