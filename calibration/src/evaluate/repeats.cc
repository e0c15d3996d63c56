#include "pilot/calibration/evaluate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace pilot::calibration {

double geomean(const std::vector<double>& values) {
  if (values.empty()) return 1;
  double logs = 0;
  for (double v : values) logs += std::log(v);
  return std::exp(logs / static_cast<double>(values.size()));
}

namespace {

/// Held-out times of one fold: run index -> size -> time, for the runs left out.
using HeldOut = std::map<int, std::map<uint64_t, double>>;

/// The time a series scores with at `size` in a fold: its held-out run when it has one,
/// otherwise its median over every run (a configuration that cannot be split).
double testTime(const Series& s, uint64_t size, const HeldOut& held) {
  for (int r : s.runs) {
    auto it = held.find(r);
    if (it == held.end()) continue;
    auto t = it->second.find(size);
    return t == it->second.end() ? -1 : t->second;
  }
  const SizeStat* st = s.at(size);
  return st == nullptr ? -1 : st->timeUs;
}

struct Accumulator {
  std::vector<double> chosenUs, bestUs, defaultUs, oracle, defaultOracle, speedup;
  std::set<std::string> chosen;
  std::map<std::string, int> best;
};

}  // namespace

Evaluation evaluate(const Dataset& data, const FitOptions& options) {
  Evaluation out;
  const Measurements all = summarize(data);

  int folds = 0;
  std::set<std::string> unsplit;
  for (const Shape& shape : all.shapes) {
    for (const Series& s : shape.series) {
      if (s.runs.size() >= 2) folds = std::max(folds, static_cast<int>(s.runs.size()));
      if (s.runs.size() < 2) unsplit.insert(s.label);
    }
    const Series* d = shape.defaults();
    if (d != nullptr && static_cast<int>(d->runs.size()) == options.minRepeats &&
        d->runs.size() >= 2) {
      out.notes.push_back(shape.key.str() + ": the default has " + std::to_string(d->runs.size()) +
                          " runs; leaving one out leaves fewer than --min-repeats, so every "
                          "fold keeps NCCL's default there");
    }
  }
  out.inSample = folds < 2;
  out.folds = out.inSample ? 1 : folds;
  if (out.inSample) {
    out.notes.push_back(
        "no configuration was run twice: the table is fitted and scored on the "
        "same runs (in-sample)");
  } else if (!unsplit.empty()) {
    std::string list;
    for (const std::string& l : unsplit) list += (list.empty() ? "" : ", ") + l;
    out.notes.push_back(list + ": run once, so used both to fit and to score in every fold");
  }

  std::map<std::pair<ShapeKey, uint64_t>, Accumulator> acc;
  for (int fold = 0; fold < out.folds; ++fold) {
    HeldOut held;
    if (!out.inSample) {
      for (const Shape& shape : all.shapes) {
        for (const Series& s : shape.series) {
          if (s.runs.size() >= 2 && fold < static_cast<int>(s.runs.size())) {
            const int r = s.runs[static_cast<size_t>(fold)];
            held[r] = runTimes(data.runs[static_cast<size_t>(r)]);
          }
        }
      }
    }
    Dataset train;
    train.problems = data.problems;
    for (size_t i = 0; i < data.runs.size(); ++i) {
      if (held.count(static_cast<int>(i)) == 0) train.runs.push_back(data.runs[i]);
    }
    const FitResult fitted = fit(train, options);
    std::map<std::pair<ShapeKey, uint64_t>, const Config*> choice;
    for (const Decision& d : fitted.decisions) {
      const Config* c = nullptr;
      if (d.chosen != kDefaultChoice) {
        for (const Shape& s : fitted.data.shapes) {
          if (s.key == d.shape) c = &s.series[static_cast<size_t>(d.chosen)].config;
        }
      }
      choice[{d.shape, d.size}] = c;
    }

    for (const Shape& shape : all.shapes) {
      const Series* def = shape.defaults();
      if (def == nullptr) continue;
      // A shape whose default has no run left out in this fold would be scored in-sample.
      if (!out.inSample && fold >= static_cast<int>(def->runs.size())) continue;
      for (const SizeStat& st : def->sizes) {
        auto c = choice.find({shape.key, st.size});
        if (c == choice.end()) continue;
        const double tDefault = testTime(*def, st.size, held);
        if (tDefault <= 0) continue;
        const Series* chosen = def;
        double bestTime = tDefault;
        std::string bestLabel = def->label;
        for (const Series& s : shape.series) {
          if (c->second != nullptr && !s.isDefault() && sameForcing(s.config, *c->second)) {
            chosen = &s;
          }
          if (s.isDefault() || !ruleForConfig(s.config).ok()) continue;
          const double t = testTime(s, st.size, held);
          if (t > 0 && t < bestTime) bestTime = t, bestLabel = s.label;
        }
        const double tChosen = testTime(*chosen, st.size, held);
        if (tChosen <= 0) continue;
        Accumulator& a = acc[{shape.key, st.size}];
        a.chosenUs.push_back(tChosen);
        a.bestUs.push_back(bestTime);
        a.defaultUs.push_back(tDefault);
        a.oracle.push_back(bestTime / tChosen);
        a.defaultOracle.push_back(bestTime / tDefault);
        a.speedup.push_back(tDefault / tChosen);
        a.chosen.insert(chosen->label);
        ++a.best[bestLabel];
      }
    }
  }

  // Noise from every run, as the fit on all data sees it (measured, or estimated without
  // repeats of the default).
  std::map<std::pair<ShapeKey, uint64_t>, double> noise;
  for (const Shape& shape : all.shapes) {
    if (const Series* def = shape.defaults()) {
      const ShapeEvidence ev = assessEvidence(shape, options);
      for (size_t i = 0; i < def->sizes.size() && i < ev.noise.size(); ++i) {
        noise[{shape.key, def->sizes[i].size}] = ev.noise[i];
      }
    }
  }

  std::vector<double> oracle, defaultOracle, speedup;
  for (auto& [key, a] : acc) {
    SizeScore s;
    s.shape = key.first;
    s.size = key.second;
    for (const std::string& c : a.chosen) s.chosen += (s.chosen.empty() ? "" : "/") + c;
    s.best = std::max_element(a.best.begin(), a.best.end(), [](const auto& x, const auto& y) {
               return x.second < y.second;
             })->first;
    s.chosenUs = geomean(a.chosenUs);
    s.bestUs = geomean(a.bestUs);
    s.defaultUs = geomean(a.defaultUs);
    s.oracleFraction = geomean(a.oracle);
    s.defaultOracleFraction = geomean(a.defaultOracle);
    s.speedup = geomean(a.speedup);
    s.noise = noise[key];
    s.slower = s.speedup < 1.0 / (1.0 + s.noise) - 1e-12;
    s.folds = static_cast<int>(a.speedup.size());
    oracle.push_back(s.oracleFraction);
    defaultOracle.push_back(s.defaultOracleFraction);
    speedup.push_back(s.speedup);
    out.slowerSizes += s.slower;
    if (out.worst < 0 || s.speedup < out.sizes[static_cast<size_t>(out.worst)].speedup) {
      out.worst = static_cast<int>(out.sizes.size());
    }
    out.sizes.push_back(std::move(s));
  }
  out.oracleFraction = geomean(oracle);
  out.defaultOracleFraction = geomean(defaultOracle);
  out.speedup = geomean(speedup);
  return out;
}

}  // namespace pilot::calibration
