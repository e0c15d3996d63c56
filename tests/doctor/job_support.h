// Jobs written for the `doctor --job` tests: each rank's provenance record as the library
// writes it (provenance::renderRecordJson) into nccl_pilot_<node>_<pid>.provenance.json, and
// summaries with "communicator" lines, in a temporary directory; and the issue's 4-rank job.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "pilot/doctor/job_audit.h"
#include "pilot/provenance/nccl_settings.h"
#include "pilot/provenance/record.h"

namespace pilot::doctor::testing {

inline const std::string kSystemNccl = "/usr/lib/x86_64-linux-gnu/libnccl.so.2";

/// A healthy rank: NCCL 2.28.9 from the system library, net v10 and tuner v5 of nccl-pilot,
/// NCCL_SOCKET_IFNAME=eth0 and NCCL_IB_HCA=mlx5.
inline provenance::ProcessRecord rankRecord(const std::string& node, int64_t pid,
                                            const std::string& rank) {
  provenance::ProcessRecord r;
  r.node = node;
  r.pid = pid;
  r.writtenMs = 1764770000000;
  r.rank = rank;
  r.rankFrom = rank.empty() ? "" : "RANK";
  r.pilotVersion = "0.1.0";
  r.nccl = {kSystemNccl, "2.28.9"};
  r.ncclHow = "the caller of init";
  r.libraries = {{kSystemNccl, "2.28.9"}};
  r.plugins = {{"net", 10, "/opt/pilot/libnccl-net-pilot.so"},
               {"tuner", 5, "/opt/pilot/libnccl-net-pilot.so"}};
  r.pluginSettings = {{"NCCL_NET_PLUGIN", "/opt/pilot/libnccl-net-pilot.so"}};
  return r;
}

/// Sets (or replaces) a setting, classified as the plugin classifies it.
inline void set(provenance::ProcessRecord* r, const std::string& name, const std::string& value,
                const std::string& source = "env") {
  for (auto it = r->settings.begin(); it != r->settings.end(); ++it) {
    if (it->name == name) {
      r->settings.erase(it);
      break;
    }
  }
  provenance::Setting s;
  s.name = name;
  s.value = value;
  s.source = source;
  const provenance::Classification c = provenance::classifySetting(name, value);
  s.cls = c.cls;
  s.why = c.why;
  s.closest = c.closest;
  r->settings.push_back(std::move(s));
}

inline void writeText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string recordName(const provenance::ProcessRecord& r) {
  return "nccl_pilot_" + r.node + "_" + std::to_string(r.pid) + ".provenance.json";
}

/// DIR/nccl_pilot_<node>_<pid>.provenance.json holding the record's line.
inline void writeRecord(const std::string& dir, const provenance::ProcessRecord& r) {
  writeText(dir + "/" + recordName(r), provenance::renderRecordJson(r) + "\n");
}

/// A "communicator" line as metrics/summary.cc writes it (the fields the reader uses and some).
inline std::string commLine(const std::string& comm, const provenance::ProcessRecord& r, int rank,
                            int nranks) {
  return "{\"kind\":\"communicator\",\"comm\":\"" + comm +
         "\",\"comm_name\":\"\",\"rank\":" + std::to_string(rank) +
         ",\"nranks\":" + std::to_string(nranks) +
         ",\"n_nodes\":1,\"gpu\":\"unknown\",\"node\":\"" + r.node +
         "\",\"pid\":" + std::to_string(r.pid) + ",\"abi\":6,\"finalized\":false}";
}

/// DIR/nccl_pilot_<node>_<pid>.jsonl: a process line, the record's line, then `lines`.
inline void writeSummary(const std::string& dir, const provenance::ProcessRecord& r,
                         const std::vector<std::string>& lines, bool withRecord = true) {
  std::string text = "{\"kind\":\"process\",\"node\":\"" + r.node +
                     "\",\"pid\":" + std::to_string(r.pid) + ",\"version\":\"0.1.0\"}\n";
  if (withRecord) text += provenance::renderRecordJson(r) + "\n";
  for (const std::string& l : lines) text += l + "\n";
  writeText(dir + "/nccl_pilot_" + r.node + "_" + std::to_string(r.pid) + ".jsonl", text);
}

/// The issue's job: ranks 0-1 on node-a, 2-3 on node-b; rank 1 also maps cupy's libnccl
/// 2.27.5, rank 2 sets NCCL_PROTO=LL128, rank 3 runs NCCL 2.28.3 from its own copy with
/// NCCL_SOCKET_IFNAME=eth1 where the others run 2.28.9 with eth0.
inline std::vector<provenance::ProcessRecord> issueJob() {
  std::vector<provenance::ProcessRecord> job;
  for (int rank = 0; rank < 4; ++rank) {
    provenance::ProcessRecord r =
        rankRecord(rank < 2 ? "node-a" : "node-b", 100 + rank, std::to_string(rank));
    set(&r, "NCCL_SOCKET_IFNAME", "eth0");
    set(&r, "NCCL_IB_HCA", "mlx5");
    job.push_back(std::move(r));
  }
  job[1].libraries.push_back(
      {"/opt/conda/lib/python3.11/site-packages/cupy/libnccl.so.2", "2.27.5"});
  set(&job[2], "NCCL_PROTO", "LL128");
  job[3].nccl = {"/opt/nccl-2.28.3/lib/libnccl.so.2", "2.28.3"};
  job[3].libraries = {job[3].nccl};
  set(&job[3], "NCCL_SOCKET_IFNAME", "eth1");
  return job;
}

/// A temporary directory, removed at the end of the test.
class JobDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pilot-doctor-job-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void writeAll(const std::vector<provenance::ProcessRecord>& job) {
    for (const provenance::ProcessRecord& r : job) writeRecord(dir_, r);
  }

  std::string dir_;
};

}  // namespace pilot::doctor::testing
