// The job reader's JSON side: a "provenance" line into a ProcessRecord and a "communicator"
// line into a membership, each field's type checked before use, every string and list cut to
// job_audit.h's bounds. Not public API (job_audit.h is).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pilot/doctor/job_audit.h"

namespace pilot::doctor::detail {

/// `text` cut to kJobMaxTextBytes at a UTF-8 boundary, control characters as '?' (a value
/// ends up in one line of text).
std::string boundedText(std::string_view text);

/// A "provenance" object as a record. "" when usable, else why not ("\"pid\" is not an
/// integer"). A format above ours is read for what this reader knows: fields of another type
/// are then left empty instead of refusing the record; node and pid are needed in any format.
std::string recordFromJson(const nlohmann::json& line, JobProcess* out);

/// A "communicator" object: its id and this process's place. "" when usable, else why not.
std::string memberFromJson(const nlohmann::json& line, std::string* comm, CommMember* out);

}  // namespace pilot::doctor::detail
