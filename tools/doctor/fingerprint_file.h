// The files of the distributed check: DIR/<node>.json holds one node's fingerprint facts and
// findings. Other nodes wrote them, so reading is bounded and checked like any input.
#pragma once

#include <string>
#include <vector>

#include "doctor/report.h"
#include "pilot/core/result.h"
#include "pilot/doctor/doctor.h"
#include "pilot/doctor/fingerprint.h"

namespace pilot::cli {

/// A node name usable as a file name: [A-Za-z0-9._-], anything else becomes '_'; "" -> "node".
std::string safeNodeName(const std::string& node);

/// Writes DIR/<node>.json (through a temporary file and a rename, so a reader never sees half
/// of it). Creates DIR if needed.
Status writeFingerprint(const std::string& dir, const std::string& node,
                        const doctor::DoctorReport& report);

/// Every DIR/*.json, sorted by node; files that are not fingerprints land in `unreadable`.
/// Fails only when DIR cannot be listed.
Expected<std::vector<doctor::Fingerprint>> readFingerprints(
    const std::string& dir, std::vector<UnreadableFingerprint>* unreadable);

}  // namespace pilot::cli
