// The tag reader under readNcclXml: NCCL's XML grammar (src/graph/xml.cc, research/topology.md
// §1.1), one tag at a time, failing where NCCL fails with NCCL's words and a line number.
// Private to the topology library.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::topology::xml {

// NCCL's MAX_STR_LEN is 255 with the terminator; its reader fails once a value or an element
// name reaches 254 characters (an attribute name 255).
constexpr size_t kMaxValue = 253;
constexpr size_t kMaxName = 253;
constexpr size_t kMaxAttrs = 16;  // NCCL's MAX_ATTR_COUNT: later attributes are dropped

struct Tag {
  enum Kind { Open, SelfClosing, Close, End } kind = End;
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;  ///< values with entities decoded
  int line = 0;

  const std::string* get(const char* key) const;
};

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& source) : t_(text), source_(source) {}

  /// The next tag, comments skipped; kind End at the end of the text.
  Expected<Tag> next();
  /// "<source> line N: <what>"; inside a tag, N is the line the tag starts on.
  Error fail(const std::string& what) const;

 private:
  bool get(char& c);
  Status token(std::string& name, std::string* value, char& last, size_t maxName);
  Status quoted(std::string& value, char& last);

  const std::string& t_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
  int tagLine_ = 1;
  bool inTag_ = false;
};

}  // namespace pilot::topology::xml
