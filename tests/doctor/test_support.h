// Shared helpers for the doctor tests: the recorded trees (data/, written by write_trees.py)
// and lookups over findings.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "pilot/doctor/doctor.h"

namespace pilot::doctor::testing {

inline std::string tree(const std::string& name) {
  return std::string(PILOT_DOCTOR_DATA) + "/" + name;
}

/// runDoctor on a recorded tree with this environment and no live probes.
inline DoctorReport runOn(const std::string& name, std::map<std::string, std::string> env = {},
                          std::vector<std::string> only = {}, Probes probes = {}) {
  DoctorInputs in;
  in.sysfsRoot = tree(name);
  in.env.vars = std::move(env);
  in.probes = std::move(probes);
  return runDoctor(in, only);
}

inline std::vector<Finding> of(const DoctorReport& r, const std::string& check) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

/// The findings of `check` with this verdict whose subject contains `subject`.
inline std::vector<Finding> matching(const DoctorReport& r, const std::string& check, Verdict v,
                                     const std::string& subject = "") {
  std::vector<Finding> out;
  for (const Finding& f : of(r, check)) {
    if (f.verdict == v && f.subject.find(subject) != std::string::npos) out.push_back(f);
  }
  return out;
}

inline std::string dump(const DoctorReport& r) {
  std::string out = r.machine + "\n";
  for (const Finding& f : r.findings) {
    out += std::string(verdictName(f.verdict)) + " " + f.check + " " + f.subject + " | " +
           f.evidence + (f.fix.empty() ? "" : " | fix: " + f.fix) + "\n";
  }
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

/// A scratch copy of a recorded tree (links kept) for variants a test writes into.
class TreeCopy {
 public:
  explicit TreeCopy(const std::string& name) {
    char tmpl[] = "/tmp/pilot-doctor-tree-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
    std::filesystem::copy(
        tree(name), root_,
        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  }
  ~TreeCopy() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  TreeCopy(const TreeCopy&) = delete;
  TreeCopy& operator=(const TreeCopy&) = delete;

  const std::string& root() const { return root_; }
  /// Replaces a file (path inside the tree, e.g. "sys/bus/pci/devices/BDF/max_link_width"),
  /// following the tree's links as the kernel's layout has them.
  void write(const std::string& rel, const std::string& content) const {
    const std::filesystem::path path =
        std::filesystem::weakly_canonical(std::filesystem::path(root_) / rel);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
  }
  void remove(const std::string& rel) const { std::filesystem::remove(root_ + "/" + rel); }
  DoctorReport run(std::map<std::string, std::string> env = {}, std::vector<std::string> only = {},
                   Probes probes = {}) const {
    DoctorInputs in;
    in.sysfsRoot = root_;
    in.env.vars = std::move(env);
    in.probes = std::move(probes);
    return runDoctor(in, only);
  }

 private:
  std::string root_;
};

inline bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

}  // namespace pilot::doctor::testing
