// Turning inputs into a Dataset: files (text or -J JSON, told apart by content), directories
// of them, and sweep plan directories (manifest.json + runs/). Each run's configuration is
// settled here, strongest evidence first:
//   1. the sweep manifest (what the run was launched with)  -> configSource "manifest"
//   2. the -J file's environment (complete)                 -> "json"
//   3. NCCL's "NCCL_ALGO set by environment to ..." lines   -> "nccl-log"
//   4. the first --label rule matching the run's label key  -> "label"
// A run none of these describe is failed as unlabelled, never assumed to be the default:
// `--label '*=default'` says so when that is what the logs are.
//
// Then repeats are numbered (assignRepeats) and equal forcings get one label across the
// dataset (the first seen), so fit and report name each configuration one way.
#pragma once

#include <string>
#include <vector>

#include "pilot/calibration/labels.h"
#include "pilot/calibration/measurements.h"
#include "pilot/calibration/nccl_tests_parser.h"

namespace pilot::calibration {

struct LoadOptions {
  std::vector<LabelRule> labels;
};

/// Reads every input. Problems with an input as a whole (unreadable, empty, not nccl-tests
/// output) land in Dataset::problems; problems with a run in its Run::problems.
Dataset loadDataset(const std::vector<std::string>& inputs, const LoadOptions& options);

/// Parses one file's text (JSON or nccl-tests text) and settles its runs' configurations with
/// `labelKey` (the file's name) as the fallback label key. Appends to `data`; call
/// finishDataset() after the last.
void addOutput(Dataset& data, const std::string& text, const std::string& name,
               const std::string& labelKey, const LoadOptions& options);

/// Settles one parsed run's configuration from its evidence and the rules (steps 2-4 above).
void settleConfig(ParsedRun& parsed, const std::vector<LabelRule>& rules,
                  const std::string& fallbackKey);

/// Unifies labels, numbers repeats, summarises unlabelled runs. loadDataset calls it.
void finishDataset(Dataset& data);

/// Run::repeat: 0, 1, 2, ... in input order among the runs that are not failed and share
/// collective, nodes, ranks, setup and forcing; -1 for failed runs.
void assignRepeats(Dataset& data);

/// The dataset as JSON (for `nccl-pilot sweep show --json`); samples only when asked.
std::string datasetJson(const Dataset& data, bool withSamples);

}  // namespace pilot::calibration
