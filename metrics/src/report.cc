#include "pilot/metrics/report.h"

namespace pilot::metrics {

double busGbs(const KeyTotals& t) {
  return t.timeNs > 0 ? t.busBytes / static_cast<double>(t.timeNs) : 0.0;
}

std::string commIdText(uint64_t commId) {
  static const char* const kDigits = "0123456789abcdef";
  char reversed[16];
  int n = 0;
  do {
    reversed[n++] = kDigits[commId & 0xf];
    commId >>= 4;
  } while (commId != 0);
  std::string s = "0x";
  while (n > 0) s += reversed[--n];
  return s;
}

}  // namespace pilot::metrics
