// nccl: which libnccl.so.2 a process here would load and which other copies are in sight, and
// what NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN resolve to. The facts come from
// a probe (tools/doctor loads the libraries the way NCCL does); this file only judges them.
#include <algorithm>
#include <cstdio>

#include "context.h"

namespace pilot::doctor::detail {
namespace {

constexpr const char* kNccl = "nccl";

std::string abiRange(const std::vector<int>& abis) {
  if (abis.empty()) return "none";
  if (abis.size() == 1) return "v" + std::to_string(abis.front());
  return "v" + std::to_string(abis.front()) + "..v" + std::to_string(abis.back());
}

std::string copyText(const NcclCopy& c) {
  return c.path + " (" + (c.version.empty() ? "version unknown" : c.version) + ", " + c.how + ")";
}

/// "2.28.9" < "2.21"? Compares major.minor only; unknown versions are never older.
bool olderThan(const std::string& version, int major, int minor) {
  int a = 0, b = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &a, &b) != 2) return false;
  return a < major || (a == major && b < minor);
}

struct Kind {
  const char* variable;
  const char* symbol;
  const char* without;  ///< what NCCL does when nothing loads
  bool hasFallback;     ///< tuner and profiler fall back to the net plugin's library
};
const Kind kKinds[] = {
    {"NCCL_NET_PLUGIN", "ncclNetPlugin_v", "its internal IB and Socket transports", false},
    {"NCCL_TUNER_PLUGIN", "ncclTunerPlugin_v",
     "the net plugin library's tuner, else its own tuning", true},
    {"NCCL_PROFILER_PLUGIN", "ncclProfiler_v", "the net plugin library's profiler, else none",
     true},
};

const std::vector<int>& abisOf(const PluginResolution& r, const Kind& k) {
  if (k.symbol == kKinds[0].symbol) return r.netAbis;
  if (k.symbol == kKinds[1].symbol) return r.tunerAbis;
  return r.profilerAbis;
}

void judgePlugin(Context& ctx, const PluginResolution& r, const NcclFacts& facts) {
  const Kind* kind = &kKinds[0];
  for (const Kind& k : kKinds) {
    if (r.variable == k.variable) kind = &k;
  }
  const std::string subject = r.variable + (r.value ? "=" + *r.value : std::string(" (unset)"));
  std::string tried;
  for (const std::string& t : r.tried) tried += (tried.empty() ? "" : ", ") + t;
  if (r.disabled) {
    ctx.add(kNccl, Verdict::Pass, subject, "none: NCCL loads no such plugin");
    return;
  }
  if (r.path.empty()) {
    const std::string evidence = "nothing loads (tried " + (tried.empty() ? "nothing" : tried) +
                                 (r.error.empty() ? "" : ": " + r.error) + "); NCCL uses " +
                                 kind->without;
    if (!r.value) {
      ctx.add(kNccl, Verdict::Pass, subject, evidence);
    } else {
      ctx.add(kNccl, kind->hasFallback ? Verdict::Warn : Verdict::Fail, subject,
              evidence + ", without an error",
              "give the library's absolute path, or put lib" +
                  std::string(kind == &kKinds[0]   ? "nccl-net-"
                              : kind == &kKinds[1] ? "nccl-tuner-"
                                                   : "nccl-profiler-") +
                  "NAME.so on LD_LIBRARY_PATH");
    }
    return;
  }
  ctx.fact("plugin." + std::string(kind->variable), r.path + " " + r.digest);
  const std::vector<int>& abis = abisOf(r, *kind);
  std::string evidence = r.path + (r.name.empty() ? "" : ", name \"" + r.name + "\"") +
                         ", exports " + kind->symbol + "* " + abiRange(abis);
  if (r.name == "Pilot" && !facts.toolVersion.empty())
    evidence += " (nccl-pilot's library; this tool is " + facts.toolVersion + ")";
  if (!r.digest.empty()) evidence += ", " + r.digest;
  if (abis.empty()) {
    ctx.add(kNccl, kind->hasFallback ? Verdict::Warn : Verdict::Fail, subject,
            evidence + ": NCCL finds no " + kind->symbol + "* symbol and uses " + kind->without,
            "point " + r.variable + " at a library that exports " + kind->symbol + "*");
    return;
  }
  const std::string nccl = facts.loaded && !facts.loaded->version.empty()
                               ? "NCCL " + facts.loaded->version
                               : std::string("NCCL");
  if (r.abiTaken == 0) {
    ctx.add(kNccl, Verdict::Fail, subject, evidence + ": " + nccl + " loads none of these versions",
            "use a plugin built for " + nccl +
                " (nccl-pilot version lists which release takes "
                "which ABI)");
    return;
  }
  if (r.abiTaken > 0) evidence += "; " + nccl + " takes v" + std::to_string(r.abiTaken);
  ctx.add(kNccl, Verdict::Pass, subject, evidence);
}

}  // namespace

void checkNccl(Context& ctx) {
  if (!ctx.inputs.probes.nccl) {
    ctx.add(kNccl, Verdict::Skip, "NCCL libraries",
            "not probed: the libraries of a recorded machine are not on this one");
    return;
  }
  const NcclFacts facts = ctx.inputs.probes.nccl(ctx.inputs.env);
  std::string others;
  bool versionsDiffer = false;
  for (const NcclCopy& c : facts.others) {
    others += (others.empty() ? "" : "; ") + copyText(c);
    if (facts.loaded && !c.version.empty() && !facts.loaded->version.empty() &&
        c.version != facts.loaded->version)
      versionsDiffer = true;
  }
  const std::string keepOne =
      "keep one NCCL per image or virtualenv, or put the one you mean first on LD_LIBRARY_PATH; "
      "NCCL_DEBUG=VERSION prints the version a job really loads";
  if (facts.loaded) {
    ctx.fact("nccl.version", facts.loaded->version);
    ctx.fact("nccl.path", facts.loaded->path);
    std::string evidence = "libnccl.so.2 -> " + copyText(*facts.loaded);
    if (!others.empty()) evidence += "; other copies in sight: " + others;
    if (versionsDiffer) {
      ctx.add(kNccl, Verdict::Warn, "libnccl.so.2",
              evidence +
                  ": a job loads whichever its loader finds first (PyTorch: its wheel's, "
                  "through RPATH)",
              keepOne);
    } else if (olderThan(facts.loaded->version, 2, 21)) {
      ctx.add(kNccl, Verdict::Warn, "libnccl.so.2",
              evidence + ": nccl-pilot's plugin serves NCCL 2.21 and later",
              "upgrade NCCL to 2.21 or later");
    } else {
      ctx.add(kNccl, Verdict::Pass, "libnccl.so.2", evidence);
    }
  } else {
    ctx.fact("nccl.version", "none");
    ctx.add(kNccl, Verdict::Warn, "libnccl.so.2",
            "the dynamic loader finds none (" + facts.loadError + ")" +
                (others.empty() ? "" : "; copies in sight: " + others),
            others.empty() ? "install NCCL, or run nccl-pilot doctor inside the job's image or "
                             "virtualenv"
                           : keepOne);
  }
  for (const PluginResolution& r : facts.plugins) judgePlugin(ctx, r, facts);
}

}  // namespace pilot::doctor::detail
