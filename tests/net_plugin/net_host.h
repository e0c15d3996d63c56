// The fake NCCL host for the net plugin: loads the built module like NCCL (dlopen RTLD_NOW |
// RTLD_LOCAL), records what the plugin logs, and runs each scenario in a fork()ed child, since
// the plugin detects the topology and sets NCCL_TOPO_FILE once per process.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "net_host_abi.h"

namespace nethost {

/// Runs body in a child with the plugin's variables and NCCL_TOPO_FILE unset; the parent fails
/// the test when the child failed an assertion, threw, crashed or leaked (sanitizer builds).
void inChild(const std::function<void()>& body);

/// dlopen's the module under test; fails the current test (and returns nullptr) if it cannot.
void* openModule();
/// The exported ncclNetPlugin_vN, or nullptr.
void* netSymbol(void* module, int version);

/// The logger handed to init: formats like NCCL's (C varargs) and records the line.
void captureLog(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                ...) __attribute__((format(printf, 5, 6)));

struct LogLine {
  int level;
  std::string text;
};
std::vector<LogLine> logs();
/// Lines at `level` containing every needle.
int countLogs(int level, const std::vector<std::string>& needles);
std::string dumpLogs();

/// A fresh empty directory under $TMPDIR; the caller removes it.
std::string makeTempDir();
/// The whole content of a file, "" when unreadable.
std::string readFile(const std::string& path);

/// Our own hwloc export of the recorded bare-metal machine (tests/topology/data/hwloc: 2 H100,
/// 2 IB HCAs, one PCIe switch per socket), present in every checkout.
std::string recordedMachineXml();

/// Points detection at that export and at an empty sysfs root (a directory of the build tree),
/// so this host's hardware stays out of every result.
void useRecordedMachine();

/// Calls init the way the NCCL release of `version` does (v11+: a context per communicator,
/// which is returned; older: nullptr).
Result initLikeNccl(void* symbol, int version, void** ctx, uint64_t commId = 0x1234);

}  // namespace nethost
