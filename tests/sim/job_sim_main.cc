// pilot_job_sim: the job simulator (job_sim.h) from the command line, for figures by hand.
//
//   pilot_job_sim run   --sweep FILE --out DIR [--collective allreduce] [--calls 400]
//                       [--explore F] [--table FILE] [--metrics DIR] [--seed S]
//                       [--shadow]   (also runs the job with exploration off and compares)
//   pilot_job_sim score --sweep FILE --out DIR --table FILE
// The modules are the built ones (--tuner LIB, --profiler LIB override them).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "job_sim.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "pilot_job_sim: %s\nusage: pilot_job_sim run|score --sweep FILE --out DIR "
               "[--collective C] [--calls N] [--explore F] [--table FILE] [--metrics DIR] "
               "[--seed S] [--shadow] [--tuner LIB] [--profiler LIB]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("missing command");
  const std::string command = argv[1];
  std::string sweep, collective = "allreduce";
  bool shadow = false;
  sim::JobOptions o;
  o.tunerModule = PILOT_TUNER_MODULE;
  o.profilerModule = PILOT_PROFILER_MODULE;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--shadow") {
      shadow = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("no value for " + flag).c_str());
    const std::string value = argv[++i];
    if (flag == "--sweep") {
      sweep = value;
    } else if (flag == "--out") {
      o.outDir = value;
    } else if (flag == "--collective") {
      collective = value;
    } else if (flag == "--calls") {
      o.calls = std::stoi(value);
    } else if (flag == "--explore") {
      o.explore = value;
    } else if (flag == "--table") {
      o.table = value;
    } else if (flag == "--metrics") {
      o.metricsDir = value;
    } else if (flag == "--seed") {
      o.seed = std::stoull(value);
    } else if (flag == "--tuner") {
      o.tunerModule = value;
    } else if (flag == "--profiler") {
      o.profilerModule = value;
    } else {
      return usage(("unknown option " + flag).c_str());
    }
  }
  if (sweep.empty() || o.outDir.empty()) return usage("--sweep and --out are required");
  sim::Truth truth;
  const std::string error = sim::loadTruth(sweep, collective, truth);
  if (!error.empty()) {
    std::fprintf(stderr, "pilot_job_sim: %s\n", error.c_str());
    return 1;
  }
  if (command == "score") {
    if (o.table.empty()) return usage("score needs --table");
    const sim::Score s = sim::scoreTable(truth, o, o.table);
    if (!s.error.empty()) {
      std::fprintf(stderr, "pilot_job_sim: %s\n", s.error.c_str());
      return 1;
    }
    std::printf("%s", sim::describe(s).c_str());
    return 0;
  }
  if (command != "run") return usage("unknown command");
  const sim::JobResult job = sim::runJob(truth, o);
  if (!job.error.empty()) {
    std::fprintf(stderr, "pilot_job_sim: %s\n", job.error.c_str());
    return 1;
  }
  std::printf("ranks %zu, calls per rank %zu, decisions %s\n", job.ranks.size(),
              job.ranks[0].calls.size(),
              job.divergence.empty() ? "identical on every rank" : job.divergence.c_str());
  std::printf("job %.1f ms (with noise %.1f ms), NCCL alone %.1f ms: %.4fx\n", job.jobUs / 1000,
              job.jobNoisyUs / 1000, job.ncclUs / 1000, job.jobUs / job.ncclUs);
  if (shadow) {
    sim::JobOptions off = o;
    off.explore = "0";
    off.metricsDir = "";
    off.outDir = o.outDir + "/shadow";
    const sim::JobResult base = sim::runJob(truth, off);
    if (!base.error.empty()) {
      std::fprintf(stderr, "pilot_job_sim: shadow: %s\n", base.error.c_str());
      return 1;
    }
    std::printf("%s\n", sim::describe(sim::compareRuns(truth, job, base)).c_str());
  }
  return job.divergence.empty() ? 0 : 1;
}
