// libFuzzer target: the live state file (metrics/state_file.h, format "nccl-pilot-state" 1)
// and `nccl-pilot hang`'s reader and verdict (tools/hang). Every input is used twice:
//  A. its bytes as a state file: no crash, no exception, no undefined behaviour; refused
//     with one reason naming the file, and always when an independent reading says it is not
//     a version-1 state object; accepted, every field is within the documented bounds, and
//     rendered again (renderStateFile) it reads back as the same record; judged (as one rank
//     and a second copy of each communicator at the next rank, as of a time from the file):
//     every stall lists each rank at most once, its suspects are ranks of it, it says why, and
//     both reports are produced, the JSON one parsing back (hang_state_reader.cc);
//  B. its bytes as a profiler process's live state within what the library can hold, written
//     by metrics::renderState and read back: accepted, with the same counts, operations,
//     channels, proxy entries, window keys and times (to the millisecond the writer keeps)
//     (hang_state_trip.cc).
// Any violation aborts with the details on stderr.
#include <string>

#include "hang_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::checkStateReader(std::string(reinterpret_cast<const char*>(data), size));
  fuzz::checkStateRoundTrip(data, size);
  return 0;
}
