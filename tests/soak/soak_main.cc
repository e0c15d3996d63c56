// pilot_soak: the soak under faults (run.sh says what it does; coordinator.h how it checks).
// run.sh makes the namespaces and calls `pilot_soak run`; the coordinator starts this same
// program as `pilot_soak peer` inside them.
//
//   pilot_soak run --ns-a NS --ns-b NS --if-a IF --if-b IF --log-dir DIR
//                  [--seconds N] [--seed S] [--timeout-ms T] [--pairs P] [--comms K] [--rate R]
//   pilot_soak peer --side A|B --pair P --comms K --seed S --hang-ms H --rate R --env K=V...
#include <sys/random.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "coordinator.h"
#include "peer.h"
#include "pilot/core/text.h"

namespace {

int usage(const char* problem) {
  std::fprintf(stderr, "pilot_soak: %s\n", problem);
  std::fprintf(stderr,
               "usage: pilot_soak run --ns-a NS --ns-b NS --if-a IF --if-b IF --log-dir DIR "
               "[--seconds N] [--seed S] [--timeout-ms T] [--pairs P] [--comms K] [--rate R]\n");
  return 2;
}

bool number(const char* text, uint64_t low, uint64_t high, uint64_t* out) {
  auto value = pilot::text::parseBytes(text);
  if (!value || *value < low || *value > high) return false;
  *out = *value;
  return true;
}

int runCommand(int argc, char** argv) {
  soak::SoakOptions o;
  bool seeded = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    uint64_t n = 0;
    if (flag == "--ns-a")
      o.ns[0] = value;
    else if (flag == "--ns-b")
      o.ns[1] = value;
    else if (flag == "--if-a")
      o.ifname[0] = value;
    else if (flag == "--if-b")
      o.ifname[1] = value;
    else if (flag == "--log-dir")
      o.logDir = value;
    else if (flag == "--seconds" && number(value, 10, 86400, &n))
      o.seconds = static_cast<int>(n);
    else if (flag == "--seed" && number(value, 0, UINT64_MAX, &n)) {
      o.seed = n;
      seeded = true;
    } else if (flag == "--timeout-ms" && number(value, 1000, 60000, &n))
      o.timeoutMs = static_cast<int>(n);
    else if (flag == "--pairs" && number(value, 1, 16, &n))
      o.pairs = static_cast<int>(n);
    else if (flag == "--comms" && number(value, 1, 16, &n))
      o.commsPerPair = static_cast<int>(n);
    else if (flag == "--rate" && number(value, 1 << 20, uint64_t{1} << 32, &n))
      o.bytesPerSecond = static_cast<double>(n);
    else
      return usage(("bad option " + flag + " " + value).c_str());
  }
  if (o.ns[0].empty() || o.ns[1].empty() || o.ifname[0].empty() || o.ifname[1].empty() ||
      o.logDir.empty()) {
    return usage("the namespaces, their interfaces and a log directory are required");
  }
  if (!seeded && getrandom(&o.seed, sizeof(o.seed), 0) != sizeof(o.seed)) o.seed = getpid();
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return usage("cannot find this executable (/proc/self/exe)");
  o.self.assign(self, static_cast<size_t>(n));
  return soak::runSoak(o);
}

int peerCommand(int argc, char** argv) {
  soak::PeerOptions o;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    const uint64_t n = std::strtoull(value.c_str(), nullptr, 10);
    if (flag == "--side")
      o.side = value == "B" ? 'B' : 'A';
    else if (flag == "--pair")
      o.pair = static_cast<int>(n);
    else if (flag == "--comms")
      o.commsPerPair = static_cast<int>(n);
    else if (flag == "--seed")
      o.seed = n;
    else if (flag == "--hang-ms")
      o.hangMs = static_cast<int>(n);
    else if (flag == "--rate")
      o.bytesPerSecond = static_cast<double>(n);
    else if (flag == "--env" && value.find('=') != std::string::npos) {
      o.env[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    } else {
      return usage(("bad peer option " + flag).c_str());
    }
  }
  return soak::runPeer(o);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "run") == 0) return runCommand(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "peer") == 0) return peerCommand(argc, argv);
  return usage("the first argument is run (or peer, which the coordinator starts)");
}
