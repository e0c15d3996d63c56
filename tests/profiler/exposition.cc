#include "exposition.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace fakeprof {

std::vector<Sample> Exposition::find(const std::string& name,
                                     const std::map<std::string, std::string>& match) const {
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      all = all && it != s.labels.end() && it->second == v;
    }
    if (all) out.push_back(s);
  }
  return out;
}

std::optional<double> Exposition::value(const std::string& name,
                                        const std::map<std::string, std::string>& match) const {
  auto found = find(name, match);
  if (found.size() != 1) return std::nullopt;
  return found[0].value;
}

double Exposition::at(const std::string& name,
                      const std::map<std::string, std::string>& match) const {
  auto found = find(name, match);
  if (found.size() == 1) return found[0].value;
  std::string labels;
  for (const auto& [k, v] : match) labels += " " + k + "=" + v;
  ADD_FAILURE() << found.size() << " samples of " << name << " with" << labels;
  return std::numeric_limits<double>::quiet_NaN();
}

Exposition parseExposition(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const std::string rest = line.substr(7);
      const size_t sp = rest.find(' ');
      (line[2] == 'H' ? e.help : e.types)[rest.substr(0, sp)] =
          sp == std::string::npos ? "" : rest.substr(sp + 1);
      continue;
    }
    if (line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    bool ok = true;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (ok && i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          ok = false;
          break;
        }
        const std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) {
          ok = false;
          break;
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) ok = false;
      ++i;  // past '}'
    }
    if (!ok || i >= line.size() || line[i] != ' ') {
      e.errors.push_back(line);
      continue;
    }
    const std::string value = line.substr(i + 1);
    if (value == "+Inf") {
      s.value = std::numeric_limits<double>::infinity();
    } else {
      char* end = nullptr;
      s.value = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0') {
        e.errors.push_back(line);
        continue;
      }
    }
    e.samples.push_back(std::move(s));
  }
  return e;
}

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace fakeprof
