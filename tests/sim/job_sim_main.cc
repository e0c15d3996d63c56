// pilot_job_sim: the job simulator (job_sim.h) from the command line, for figures by hand.
//
//   pilot_job_sim run   --sweep FILE --out DIR [--collective allreduce] [--calls 400]
//                       [--explore F] [--table FILE] [--metrics DIR] [--seed S]
//                       [--shadow]   (also runs the job with exploration off and compares)
//   pilot_job_sim score --sweep FILE --out DIR --table FILE
//   pilot_job_sim loop  --sweep FILE --out DIR [--jobs 3] [--seeds 1] [--explore 0.05]
//                       [--fit-flags "..."]  (the in-job calibration loop, runLoop: each job
//                       explores, `nccl-pilot fit` reads every job's metrics so far, the next
//                       job runs the table; one line per job, per seed)
//   pilot_job_sim model --sweep FILE [--collective allreduce]
//                       (NCCL's model against the sweep, size by size: picks, twins, switches)
// The cost table NCCL passes (job_sim.h): --costs nccl (default: NCCL's own model of the
// machine below) or --costs truth (the sweep's times, NCCL's pick at 0.95 x the fastest).
// The machine (defaults: AWS g5.xlarge, nccl_model.h): --gpu-sm 86, --cpu amd|intel,
// --net-gbps 1.2 (the graph's bandwidth per channel, GB/s), --graph-channels 1, --channels 2
// (at run time), --ll128-path (the GPU-NIC path is PXB or better: LL128 on), --tree-balanced
// (tree pattern not TREE: no x0.85), --nccl 2.27|2.28|2.29|2.30.
// The modules are the built ones (--tuner LIB, --profiler LIB override them).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "job_sim.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "pilot_job_sim: %s\nusage: pilot_job_sim run|score --sweep FILE --out DIR "
               "[--collective C] [--calls N] [--explore F] [--table FILE] [--metrics DIR] "
               "[--seed S] [--shadow] [--tuner LIB] [--profiler LIB] [--costs nccl|truth] "
               "[--gpu-sm N] [--cpu amd|intel] [--net-gbps G] [--graph-channels N] "
               "[--channels N] [--ll128-path] [--tree-balanced] [--nccl 2.27]\n"
               "       pilot_job_sim loop --sweep FILE --out DIR [--jobs N] [--seeds N] "
               "[--explore F] [--fit-flags \"...\"] [run flags]\n"
               "       pilot_job_sim model --sweep FILE [--collective C] [machine flags]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("missing command");
  const std::string command = argv[1];
  std::string sweep, collective = "allreduce";
  bool shadow = false;
  std::string costs = "nccl";
  sim::NcclShape shape = sim::g5Shape();
  sim::JobOptions o;
  sim::LoopOptions loop;
  loop.fitCommand = PILOT_NCCL_PILOT_BIN;
  int seeds = 1;
  o.tunerModule = PILOT_TUNER_MODULE;
  o.profilerModule = PILOT_PROFILER_MODULE;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--shadow") {
      shadow = true;
      continue;
    }
    if (flag == "--ll128-path") {
      shape.ll128Path = true;
      continue;
    }
    if (flag == "--tree-balanced") {
      shape.treePattern = false;
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
    } else if (flag == "--costs") {
      if (value != "nccl" && value != "truth") return usage("--costs is nccl or truth");
      costs = value;
    } else if (flag == "--gpu-sm") {
      shape.compCap = std::stoi(value);
    } else if (flag == "--cpu") {
      if (value != "amd" && value != "intel") return usage("--cpu is amd or intel");
      shape.amdCpu = value == "amd";
    } else if (flag == "--net-gbps") {
      shape.netGBps = std::stod(value);
    } else if (flag == "--graph-channels") {
      shape.graphChannels = std::stoi(value);
    } else if (flag == "--channels") {
      shape.runChannels = std::stoi(value);
    } else if (flag == "--nccl") {
      shape.nccl = value;
    } else if (flag == "--jobs") {
      loop.jobs = std::stoi(value);
    } else if (flag == "--seeds") {
      seeds = std::stoi(value);
    } else if (flag == "--fit-flags") {
      loop.fitFlags = value;
    } else {
      return usage(("unknown option " + flag).c_str());
    }
  }
  if (sweep.empty()) return usage("--sweep is required");
  if (command != "model" && o.outDir.empty()) return usage("--out is required");
  sim::Truth truth;
  std::string error = sim::loadTruth(sweep, collective, truth);
  if (error.empty() && (costs == "nccl" || command == "model")) {
    error = sim::applyNcclModel(truth, shape);
  }
  if (!error.empty()) {
    std::fprintf(stderr, "pilot_job_sim: %s\n", error.c_str());
    return 1;
  }
  if (command == "model") {
    std::printf("%s", sim::describeModel(truth).c_str());
    return 0;
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
  if (command == "loop") {
    if (!o.explore.empty()) loop.explore = o.explore;
    std::printf("%s: %s on %d node(s), %d rank(s), %zu sizes x %d calls, cost table: %s\n",
                sweep.c_str(), collective.c_str(), truth.nodes, truth.ranks, truth.sizes.size(),
                o.calls, costs == "nccl" ? "NCCL's model" : "the truth times 0.95 at NCCL's pick");
    bool ok = true;
    const std::string out = o.outDir;
    ::mkdir(out.c_str(), 0755);  // exists already, or runLoop says why not
    for (int seed = 1; seed <= seeds; ++seed) {
      o.seed = static_cast<uint64_t>(seed);
      o.outDir = out + "/seed" + std::to_string(seed);
      const std::vector<sim::LoopJob> jobs = sim::runLoop(truth, o, loop);
      for (size_t n = 0; n < jobs.size(); ++n) {
        std::printf("seed %d %s\n", seed, sim::describe(jobs[n], static_cast<int>(n) + 1).c_str());
        ok = ok && jobs[n].error.empty() && jobs[n].job.divergence.empty();
      }
    }
    return ok ? 0 : 1;
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
    const sim::JobResult base = sim::runShadow(truth, o);
    if (!base.error.empty()) {
      std::fprintf(stderr, "pilot_job_sim: shadow: %s\n", base.error.c_str());
      return 1;
    }
    std::printf("%s\n", sim::describe(sim::compareRuns(truth, job, base)).c_str());
  }
  return job.divergence.empty() ? 0 : 1;
}
