// Whole-file reads and writes for the tool and calibration layers, with the error text their
// commands print ("cannot open PATH"). The plugin reads its inputs with their own size bounds.
#pragma once

#include <string>

#include "pilot/core/result.h"

namespace pilot {

/// The whole file; an Error "cannot open PATH" or "cannot read PATH".
Expected<std::string> readFile(const std::string& path);

/// Replaces the file's content; an Error "cannot write PATH".
Status writeFile(const std::string& path, const std::string& content);

}  // namespace pilot
