// The shape of an lstopo export, checked before hwloc reads one (hwloc_xml_check.h).
#include "hwloc_xml_check.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "detect_internal.h"
#include "pilot/core/text.h"

namespace pilot::topology {
namespace {

using text::endsWith;

constexpr size_t kMaxNesting = 256;

using Attributes = std::vector<std::pair<std::string_view, std::string_view>>;

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':';
}

/// Every '&' of `s` begins &amp; &lt; &gt; &quot; &apos; or &#digits; (or &#xhex;).
bool entitiesAreXml(std::string_view s) {
  for (size_t amp = s.find('&'); amp != std::string_view::npos; amp = s.find('&', amp + 1)) {
    const std::string_view rest = s.substr(amp + 1);
    const size_t semi = rest.find(';');
    if (semi == std::string_view::npos || semi > 10) return false;
    const std::string_view name = rest.substr(0, semi);
    if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos") continue;
    const bool hex = name.size() > 2 && name.compare(0, 2, "#x") == 0;
    if (name.size() < 2 || name[0] != '#' ||
        name.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789", hex ? 2 : 1) !=
            std::string_view::npos)
      return false;
  }
  return true;
}

/// A bitmap as lstopo writes it: "0xf...f" (all the rest set) and/or comma-separated groups of
/// "0x" and at most 8 hex digits, where groups after the first may be empty ("0x1,,0x2").
bool isBitmap(std::string_view v) {
  if (v.rfind("0xf...f", 0) == 0) {
    if (v.size() == 7) return true;
    if (v[7] != ',') return false;
    v.remove_prefix(8);
  }
  for (bool first = true;; first = false) {
    const size_t comma = v.find(',');
    const std::string_view group = v.substr(0, comma);
    if ((first || !group.empty()) &&
        (group.size() < 3 || group.size() > 10 || group.compare(0, 2, "0x") != 0 ||
         group.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string_view::npos))
      return false;
    if (comma == std::string_view::npos) return true;
    v.remove_prefix(comma + 1);
  }
}

/// hwloc 2.9 dereferences a null bitmap loading a NUMANode without complete_cpuset (1.x
/// format) or complete_nodeset (2.0), and aborts on an assertion parsing a bitmap that starts
/// with a comma. "" when the tag's attributes are safe, else why not.
std::string unsafeAttributes(std::string_view element, const Attributes& attributes) {
  static const std::string_view kWithoutSets[] = {"Bridge", "PCIDev", "OSDev", "Misc"};
  static const std::string_view kSets[] = {"cpuset", "complete_cpuset", "nodeset",
                                           "complete_nodeset"};
  for (const auto& [name, value] : attributes) {
    if ((endsWith(name, "cpuset") || endsWith(name, "nodeset")) && !isBitmap(value))
      return "a " + std::string(name) + " that is not a bitmap as lstopo writes them";
  }
  if (element != "object") return "";
  std::vector<std::string_view> names, types;
  for (const auto& [name, value] : attributes) {
    names.push_back(name);
    if (name == "type") types.push_back(value);
  }
  auto has = [](const auto& list, std::string_view s) {
    return std::find(std::begin(list), std::end(list), s) != std::end(list);
  };
  if (types.size() != 1) return "an <object> tag with " + std::to_string(types.size()) + " types";
  if (has(kWithoutSets, types[0])) return "";
  for (std::string_view set : kSets) {
    if (!has(names, set))
      return "<object type=\"" + std::string(types[0]) + "\"> without " + std::string(set);
  }
  // hwloc sets the bit of a PU's or NUMA node's os_index in its sets: without one (unknown,
  // 2^32 - 1) it copies 512 MiB bitmaps for seconds (found by hwloc_xml_fuzz as a timeout).
  if (types[0] != "PU" && types[0] != "NUMANode") return "";
  for (const auto& [name, value] : attributes) {
    const std::optional<uint64_t> index = text::parseUnsigned(value);
    if (name == "os_index" && index && *index < detail::kMaxCpus) return "";
  }
  return "<object type=\"" + std::string(types[0]) + "\"> without an os_index below " +
         std::to_string(detail::kMaxCpus);
}

class Checker {
 public:
  explicit Checker(std::string_view xml) : xml_(xml) {}

  /// "" or "line N: why" (the line the offending tag or text begins on).
  std::string run() {
    if (const size_t nul = xml_.find('\0'); nul != std::string_view::npos)
      return at(nul, "a NUL byte, which no XML holds");
    for (size_t i = 0;;) {
      const size_t lt = xml_.find('<', i);
      const std::string_view text = xml_.substr(i, lt == std::string_view::npos ? lt : lt - i);
      if (open_.empty() && text.find_first_not_of(" \t\r\n") != std::string_view::npos)
        return at(i, "text outside the <topology> element");
      if (!entitiesAreXml(text)) return at(i, "an '&' that begins no XML entity");
      if (lt == std::string_view::npos) break;
      std::string why;
      i = tag(lt, &why);
      if (!why.empty()) return at(lt, why);
    }
    if (!open_.empty()) return at(open_.back().second, "<" + open_.back().first + "> never closed");
    if (!rootSeen_) return at(0, "no <topology> element");
    return "";
  }

 private:
  std::string at(size_t pos, const std::string& why) const {
    return "line " +
           std::to_string(1 +
                          std::count(xml_.begin(), xml_.begin() + static_cast<long>(pos), '\n')) +
           ": " + why;
  }

  /// Reads the markup at `lt` ('<'); the position after it, or sets `why`.
  size_t tag(size_t lt, std::string* why) {
    const std::string_view rest = xml_.substr(lt);
    auto skipTo = [&](std::string_view end, const char* what) -> size_t {
      const size_t e = xml_.find(end, lt);
      if (e == std::string_view::npos) *why = std::string(what) + " that never ends";
      return e == std::string_view::npos ? xml_.size() : e + end.size();
    };
    if (rest.compare(0, 4, "<!--") == 0) return skipTo("-->", "a comment");
    const bool prolog = !rootSeen_ && open_.empty();
    if (rest.compare(0, 5, "<?xml") == 0 && prolog) return skipTo("?>", "an <?xml declaration");
    if (rest.compare(0, 9, "<!DOCTYPE") == 0 && prolog) {
      const size_t end = skipTo(">", "a <!DOCTYPE");
      if (why->empty() && xml_.substr(lt, end - lt).find_first_of("[<", 1) != std::string::npos)
        *why = "a <!DOCTYPE with declarations of its own";
      return end;
    }
    const bool closing = rest.compare(0, 2, "</") == 0;
    size_t p = lt + (closing ? 2 : 1);
    const size_t nameBegin = p;
    while (p < xml_.size() && isNameChar(xml_[p])) ++p;
    const std::string_view name = xml_.substr(nameBegin, p - nameBegin);
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
      *why = "a '<' that begins no tag lstopo writes";
      return p;
    }
    if (closing) {
      p = xml_.find_first_not_of(" \t\r\n", p);
      if (p == std::string_view::npos || xml_[p] != '>') {
        *why = "a </" + std::string(name) + " tag not closed by '>'";
      } else if (open_.empty() || open_.back().first != name) {
        *why = "</" + std::string(name) + "> closing " +
               (open_.empty() ? std::string("nothing") : "<" + open_.back().first + ">");
      } else {
        open_.pop_back();
      }
      return p == std::string_view::npos ? xml_.size() : p + 1;
    }
    Attributes attributes;
    bool selfClosing = false;
    p = attributesFrom(p, &attributes, &selfClosing, why);
    if (!why->empty()) return p;
    if (open_.empty() && (rootSeen_ || name != "topology")) {
      *why = rootSeen_ ? "a second root element <" + std::string(name) + ">"
                       : "a root element <" + std::string(name) + ">, not <topology>";
      return p;
    }
    rootSeen_ = true;
    *why = unsafeAttributes(name, attributes);
    if (!why->empty()) return p;
    if (!selfClosing) open_.emplace_back(name, lt);
    if (open_.size() > kMaxNesting)
      *why = "elements nested deeper than " + std::to_string(kMaxNesting);
    return p;
  }

  /// name="value" pairs, each after whitespace, then '>' or "/>": the position after them.
  size_t attributesFrom(size_t p, Attributes* out, bool* selfClosing, std::string* why) {
    for (;;) {
      const size_t name = xml_.find_first_not_of(" \t\r\n", p);
      if (name == std::string_view::npos) break;
      if (xml_[name] == '>') return name + 1;
      if (xml_.compare(name, 2, "/>") == 0) {
        *selfClosing = true;
        return name + 2;
      }
      size_t eq = name;
      while (eq < xml_.size() && isNameChar(xml_[eq])) ++eq;
      if (name == p || eq == name || xml_.compare(eq, 2, "=\"") != 0) break;
      const size_t close = xml_.find('"', eq + 2);
      if (close == std::string_view::npos) break;
      const std::string_view value = xml_.substr(eq + 2, close - eq - 2);
      if (value.find('<') != std::string_view::npos || !entitiesAreXml(value)) break;
      out->emplace_back(xml_.substr(name, eq - name), value);
      p = close + 1;
    }
    *why = "a tag not in lstopo's shape (a name, name=\"value\" pairs, then '>' or \"/>\")";
    return xml_.size();
  }

  std::string_view xml_;
  std::vector<std::pair<std::string, size_t>> open_;  ///< elements open, where they began
  bool rootSeen_ = false;
};

}  // namespace

std::string unsafeHwlocXml(const std::string& xml) {
  return Checker(xml).run();
}

}  // namespace pilot::topology
