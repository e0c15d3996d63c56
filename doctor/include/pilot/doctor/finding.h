// What a check says: one finding per subject (a device, a bridge, a port, a setting), with the
// value read and where, and the command or setting that repairs it. The ids and the four
// verdicts are stable: scripts and the --json output key on them.
#pragma once

#include <string>
#include <vector>

namespace pilot::doctor {

enum class Verdict {
  Pass,  ///< checked and fine
  Warn,  ///< may cost bandwidth or is worth a look; the job runs
  Fail,  ///< will cost bandwidth (or break the job): repair before running
  Skip,  ///< could not be checked here (nothing to check, or the input was unreadable)
};
/// "PASS", "WARN", "FAIL", "SKIP".
const char* verdictName(Verdict verdict);

struct Finding {
  std::string check;  ///< stable id, e.g. "pcie-acs"
  Verdict verdict = Verdict::Skip;
  std::string subject;   ///< "0000:17:01.0 (switch downstream port above GPU 0000:18:00.0)"
  std::string evidence;  ///< the value read and where it was read
  std::string fix;       ///< "" when there is nothing to repair
};

struct Summary {
  int pass = 0, warn = 0, fail = 0, skip = 0;
};
Summary summarize(const std::vector<Finding>& findings);

/// The exit status of `nccl-pilot doctor`: 1 with any FAIL, else 0 (2 is for usage errors).
int exitStatus(const Summary& summary);

/// The worst verdict among the findings of one check (Fail > Warn > Pass > Skip); Skip if none.
Verdict worstVerdict(const std::vector<Finding>& findings, const std::string& check);

}  // namespace pilot::doctor
