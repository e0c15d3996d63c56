// NCCL's topology XML rules, checked on text. The grammar part follows NCCL's reader character
// by character: what it rejects (a tab between elements, a prolog, text, an unquoted value, a
// line break inside a tag, a value of 254+ characters) is a violation in both modes.
#include "nccl_rules.h"

#include <cstring>
#include <map>
#include <set>

namespace pilot::topology::test {
namespace {

constexpr size_t kNcclMaxValue = 253;  // MAX_STR_LEN 255 with terminator; 254 already fails
constexpr size_t kNcclMaxElementName = 253;
constexpr size_t kNcclMaxAttrs = 16;
constexpr int kNcclMaxNodes = 256;

struct Attr {
  std::string key, value;
  char quote = 0;  // 0: no value
};

struct Elem {
  std::string name;
  std::vector<Attr> attrs;
  int line = 0;
  int parent = -1;
  bool ignored = false;  // NCCL logs "Ignoring element" and skips it with its subtree
  std::vector<int> kids;

  const std::string* attr(const char* key) const {
    for (const Attr& a : attrs) {
      if (a.key == key) return &a.value;
    }
    return nullptr;
  }
};

bool isStop(char c) {
  return c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r';
}

const std::map<std::string, std::set<std::string>>& handlers() {
  static const std::map<std::string, std::set<std::string>> kTable = {
      {"", {"system"}},           {"system", {"cpu"}},
      {"cpu", {"pci", "nic"}},    {"pci", {"pci", "gpu", "nic", "pcilink"}},
      {"gpu", {"nvlink", "c2c"}}, {"nic", {"net"}},
  };
  return kTable;
}

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  std::vector<Elem> elems;
  std::vector<int> top;
  std::string fatal;
  int fatalLine = 0;

  void run() {
    std::vector<int> open;  // element indices; -1 for the document
    while (fatal.empty()) {
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r')) step();
      if (i_ >= s_.size()) break;
      if (s_[i_] != '<') return die(std::string("expecting '<', got ") + quoteChar(s_[i_]));
      step();
      tag(open);
    }
    if (fatal.empty() && !open.empty()) die("unterminated " + elems[open.back()].name);
  }

 private:
  void step() {
    if (s_[i_] == '\n') ++line_;
    ++i_;
  }
  void die(const std::string& why) {
    if (fatal.empty()) {
      fatal = why;
      fatalLine = line_;
    }
  }
  static std::string quoteChar(char c) {
    if (c == '\t') return "'\\t'";
    if (c == '\n') return "'\\n'";
    return std::string("'") + c + "'";
  }
  /// Up to a separator; '=' returns with *sawEquals set. nullopt-like: fatal set.
  std::string word(size_t limit, bool* sawEquals) {
    std::string w;
    while (true) {
      if (i_ >= s_.size()) {
        die("unexpected EOF inside a tag");
        return w;
      }
      const char c = s_[i_];
      if (c == '=' || isStop(c)) {
        if (sawEquals) *sawEquals = c == '=';
        return w;
      }
      w += c;
      step();
      if (w.size() > limit) {
        die("name too long");
        return w;
      }
    }
  }

  void tag(std::vector<int>& open) {
    const int tagLine = line_;
    bool eq = false;
    std::string name = word(kNcclMaxElementName, &eq);
    if (!fatal.empty()) return;
    if (eq) return die("unexpected value with name " + name);
    if (name.rfind("!--", 0) == 0) {
      const size_t end = s_.find("-->", i_ - name.size() + 3);
      if (end == std::string::npos) return die("unterminated comment");
      while (i_ < end + 3) step();
      return;
    }
    char c = s_[i_];
    step();
    if (name.empty() && c == '/') {
      std::string closing = word(kNcclMaxElementName, nullptr);
      if (!fatal.empty()) return;
      if (s_[i_] != '>') return die("unexpected trailing character in closing tag " + closing);
      step();
      if (open.empty()) return die("closing tag </" + closing + "> without an open element");
      if (elems[open.back()].name != closing) {
        return die("mismatch: " + elems[open.back()].name + " / " + closing);
      }
      open.pop_back();
      return;
    }
    Elem e;
    e.name = name;
    e.line = tagLine;
    while (c == ' ') {
      Attr a;
      a.key = word(kNcclMaxElementName + 1, &eq);
      if (!fatal.empty()) return;
      c = s_[i_];
      step();
      if (eq) {
        if (i_ >= s_.size()) return die("unexpected EOF inside a tag");
        a.quote = s_[i_];
        if (a.quote != '"' && a.quote != '\'') return die("expected (double) quote");
        step();
        const size_t close = s_.find(a.quote, i_);
        if (close == std::string::npos || close + 1 >= s_.size()) {
          return die("unexpected EOF inside a value");
        }
        a.value = s_.substr(i_, close - i_);
        if (a.value.size() > kNcclMaxValue) return die("value too long (max 255)");
        while (i_ <= close) step();
        c = s_[i_];
        step();
      }
      e.attrs.push_back(a);
    }
    bool single = false;
    if (c == '/') {
      single = true;
      word(kNcclMaxElementName, nullptr);
      if (!fatal.empty()) return;
      c = s_[i_];
      step();
    }
    if (c != '>') return die(std::string("expected >, got ") + quoteChar(c));

    e.parent = open.empty() ? -1 : open.back();
    const bool parentIgnored = e.parent >= 0 && elems[e.parent].ignored;
    const std::string parentName = e.parent >= 0 ? elems[e.parent].name : "";
    auto allowed = handlers().find(parentName);
    e.ignored = parentIgnored || allowed == handlers().end() || !allowed->second.count(name);
    const int idx = static_cast<int>(elems.size());
    elems.push_back(e);
    (e.parent >= 0 ? elems[e.parent].kids : top).push_back(idx);
    if (!single) open.push_back(idx);
  }

  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1;
};

bool isBusId(const std::string& b) {
  if (b.size() != 12 || b[4] != ':' || b[7] != ':' || b[10] != '.') return false;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    if (!std::strchr("0123456789abcdef", b[i]) || b[i] == '\0') return false;
  }
  return b[11] <= '7';
}

bool isDecimal(const std::string& s, bool allowMinus) {
  size_t start = allowMinus && !s.empty() && s[0] == '-' ? 1 : 0;
  if (s.size() == start) return false;
  return s.find_first_not_of("0123456789", start) == std::string::npos;
}

bool isClass(const std::string& s) {
  return s.size() == 8 && s.rfind("0x", 0) == 0 &&
         s.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
}

/// The checks that make a file ours: NCCL loads it on a machine where only our GPU and NIC
/// ids exist, so everything NCCL would otherwise read from sysfs must be in it.
void checkOurs(const std::string& text, const std::vector<Elem>& elems, const std::vector<int>& top,
               std::vector<std::string>& out) {
  auto at = [&](int line, const std::string& what) {
    out.push_back("line " + std::to_string(line) + ": " + what);
  };
  if (text.find('\t') != std::string::npos) out.push_back("a tab character");
  if (top.size() != 1 || elems[top[0]].name != "system") out.push_back("root must be one <system>");
  // One tag per line, nothing else on it.
  int lineNo = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    ++lineNo;
    const size_t first = line.find_first_not_of(' ');
    size_t tags = 0;
    for (char c : line) tags += c == '<';
    if (first == std::string::npos || line[first] != '<' || line.back() != '>' || tags != 1) {
      at(lineNo, "not exactly one tag on the line");
    }
    start = end + 1;
  }
  std::map<int, std::vector<std::string>> busesUnder;
  std::set<std::string> allBuses;
  for (size_t i = 0; i < elems.size(); ++i) {
    const Elem& e = elems[i];
    if (e.ignored) at(e.line, "<" + e.name + "> is ignored by NCCL here");
    if (e.name != "system" && e.name != "cpu" && e.name != "pci") {
      at(e.line, "<" + e.name + "> in our file (NCCL detects gpu/nic/net itself)");
    }
    if (e.attrs.size() > kNcclMaxAttrs) at(e.line, "more than 16 attributes");
    for (const Attr& a : e.attrs) {
      if (a.quote != '"') at(e.line, "attribute '" + a.key + "' not double-quoted");
      for (const char* bad : {"keep", "rank", "dev", "gdr", "host_hash"}) {
        if (a.key == bad) at(e.line, "attribute " + a.key + " must not be in our files");
      }
    }
    if (e.name == "cpu") {
      const std::string* numa = e.attr("numaid");
      if (!numa || !isDecimal(*numa, true)) at(e.line, "cpu without a numeric numaid");
      const std::string* arch = e.attr("arch");
      if (!arch || (*arch != "x86_64" && *arch != "arm64" && *arch != "ppc64")) {
        at(e.line, "cpu without arch x86_64/arm64/ppc64");
      } else if (*arch == "x86_64") {
        const std::string* vendor = e.attr("vendor");
        if (!vendor) at(e.line, "x86 cpu without vendor");
        const bool needsModel = vendor && (*vendor == "GenuineIntel" || *vendor == "CentaurHauls" ||
                                           *vendor == "  Shanghai  ");
        for (const char* k : {"familyid", "modelid"}) {
          if (needsModel && (!e.attr(k) || !isDecimal(*e.attr(k), false))) {
            at(e.line, std::string("cpu without decimal ") + k);
          }
        }
      }
    }
    if (e.name == "pci") {
      const std::string* bus = e.attr("busid");
      if (!bus || !isBusId(*bus)) {
        at(e.line, "pci busid missing or not dddd:bb:dd.f in lowercase");
      } else {
        if (!allBuses.insert(*bus).second) at(e.line, "busid " + *bus + " twice");
        busesUnder[e.parent].push_back(*bus);
      }
      const std::string* cls = e.attr("class");
      if (!cls || !isClass(*cls)) at(e.line, "pci class missing or not 0x + 6 hex digits");
      if (!e.kids.empty() && cls && *cls != "0x060400") at(e.line, "a bridge needs class 0x060400");
      const std::string* speed = e.attr("link_speed");
      if (!speed || ncclSpeedGeneration(*speed) == 0) at(e.line, "link_speed not in NCCL's table");
      const std::string* width = e.attr("link_width");
      if (!width || !isDecimal(*width, false) || *width == "0") at(e.line, "link_width missing");
    }
  }
  for (const auto& [parent, buses] : busesUnder) {
    for (size_t k = 1; k < buses.size(); ++k) {
      if (buses[k - 1] > buses[k]) out.push_back("children not sorted by busid: " + buses[k]);
    }
  }
}

}  // namespace

int ncclSpeedGeneration(const std::string& linkSpeed) {
  // NCCL's kvDictPciGen order matters: the first prefix wins.
  static const std::pair<const char*, int> kTable[] = {
      {"2.5 GT/s", 1},       {"5 GT/s", 2},         {"8 GT/s", 3},        {"16 GT/s", 4},
      {"32 GT/s", 5},        {"2.5 GT/s PCIe", 1},  {"5.0 GT/s PCIe", 2}, {"8.0 GT/s PCIe", 3},
      {"16.0 GT/s PCIe", 4}, {"32.0 GT/s PCIe", 5}, {"64.0 GT/s PCIe", 6}};
  for (const auto& [prefix, gen] : kTable) {
    if (linkSpeed.compare(0, std::strlen(prefix), prefix) == 0) return gen;
  }
  return 0;
}

std::vector<std::string> checkNcclRules(const std::string& text, RulesMode mode) {
  std::vector<std::string> out;
  Parser p(text);
  p.run();
  if (!p.fatal.empty()) {
    out.push_back("line " + std::to_string(p.fatalLine) + ": NCCL fails: " + p.fatal);
    return out;
  }
  int systems = 0, accepted = 0;
  for (const Elem& e : p.elems) {
    if (e.ignored) continue;
    ++accepted;
    if (e.name != "system") continue;
    ++systems;
    const std::string* version = e.attr("version");
    if (!version) out.push_back("line " + std::to_string(e.line) + ": system without version");
    if (version && *version != "1") out.push_back("system version is not 1");
  }
  if (systems == 0) out.push_back("no <system> element");
  if (accepted > kNcclMaxNodes) out.push_back("more than 256 XML nodes");
  if (mode == RulesMode::OurFile) checkOurs(text, p.elems, p.top, out);
  return out;
}

}  // namespace pilot::topology::test
