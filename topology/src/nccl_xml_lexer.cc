// NCCL's XML grammar, character by character: only space, \n and \r between elements, no text,
// no prolog, a tag on one line, quoted values, comments where an element may start.
#include "nccl_xml_lexer.h"

#include <algorithm>

namespace pilot::topology::xml {
namespace {

std::string show(char c) {
  if (c == '\t') return "'\\t'";
  if (c == '\n') return "'\\n'";
  if (c == '\r') return "'\\r'";
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    static const char* kHex = "0123456789abcdef";
    return std::string("'\\x") + kHex[(c >> 4) & 0xf] + kHex[c & 0xf] + "'";
  }
  return std::string("'") + c + "'";
}

std::string unescape(const std::string& s) {
  // Our writer spells the apostrophe &#39;; &apos; is the other spelling a file may carry.
  static const std::pair<const char*, char> kEntities[] = {{"&amp;", '&'},  {"&lt;", '<'},
                                                           {"&gt;", '>'},   {"&quot;", '"'},
                                                           {"&#39;", '\''}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool done = false;
    for (const auto& [entity, c] : kEntities) {
      if (s.compare(i, std::char_traits<char>::length(entity), entity) == 0) {
        out += c;
        i += std::char_traits<char>::length(entity) - 1;
        done = true;
        break;
      }
    }
    if (!done) out += s[i];
  }
  return out;
}

}  // namespace

const std::string* Tag::get(const char* key) const {
  for (const auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

Expected<Tag> Lexer::next() {
  Tag tag;
  char c;
  // Comments may come one after another; a loop keeps a file of nothing else off the stack.
  while (true) {
    c = ' ';
    while (c == ' ' || c == '\n' || c == '\r') {
      if (!get(c)) return Tag{};
    }
    tag.line = tagLine_ = line_;
    if (c != '<') return fail("XML Parse error : expecting '<', got " + show(c));
    inTag_ = true;
    const size_t nameStart = pos_;
    tag.name.clear();
    if (Status s = token(tag.name, nullptr, c, kMaxName); !s) return Error{s.error()};
    if (tag.name.compare(0, 3, "!--") != 0) break;
    const size_t end = t_.find("-->", nameStart + 3);
    if (end == std::string::npos) return fail("XML Parse error : unterminated comment");
    for (size_t i = pos_; i < end + 3; ++i) line_ += t_[i] == '\n';
    pos_ = std::max(pos_, end + 3);
    inTag_ = false;
  }
  if (tag.name.empty() && c == '/') {
    tag.kind = Tag::Close;
    if (Status s = token(tag.name, nullptr, c, kMaxName); !s) return Error{s.error()};
    if (c != '>') {
      return fail("XML Parse error : unexpected trailing " + show(c) + " in closing tag " +
                  tag.name);
    }
    inTag_ = false;
    return tag;
  }
  tag.kind = Tag::Open;
  while (c == ' ') {
    std::string key, value;
    if (Status s = token(key, &value, c, kMaxName + 1); !s) return Error{s.error()};
    if (tag.attrs.size() < kMaxAttrs) tag.attrs.emplace_back(key, unescape(value));
  }
  if (c == '/') {
    tag.kind = Tag::SelfClosing;
    std::string ignored;
    if (Status s = token(ignored, nullptr, c, kMaxName); !s) return Error{s.error()};
  }
  if (c != '>') {
    const std::string hint = tag.name == "?xml" ? " (NCCL does not accept an <?xml prolog)" : "";
    return fail("XML Parse : expected >, got " + show(c) + hint);
  }
  inTag_ = false;
  return tag;
}

Error Lexer::fail(const std::string& what) const {
  return Error{source_ + " line " + std::to_string(inTag_ ? tagLine_ : line_) + ": " + what};
}

bool Lexer::get(char& c) {
  if (pos_ >= t_.size()) return false;
  c = t_[pos_++];
  line_ += c == '\n';
  return true;
}

/// A name up to a separator, or `name="value"` when `value` is given.
Status Lexer::token(std::string& name, std::string* value, char& last, size_t maxName) {
  char c;
  while (true) {
    if (!get(c)) return fail("XML Parse : Unexpected EOF");
    if (c == '=') {
      if (!value) return fail("XML Parse : Unexpected value with name " + name);
      return quoted(*value, last);
    }
    if (c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r') break;
    name += c;
    if (name.size() > maxName) {
      return fail("Error : name " + name.substr(0, 32) + "... too long (max 255)");
    }
  }
  last = c;
  return Status::success();
}

Status Lexer::quoted(std::string& value, char& last) {
  char quote;
  if (!get(quote)) return fail("XML Parse : Unexpected EOF");
  if (quote != '"' && quote != '\'') return fail("XML Parse : Expected (double) quote.");
  char c;
  while (true) {
    if (!get(c)) return fail("XML Parse : Unexpected EOF");
    if (c == quote) break;
    value += c;
    if (value.size() > kMaxValue) {
      return fail("Error : value " + value.substr(0, 32) + "... too long (max 255)");
    }
  }
  if (!get(last)) return fail("XML Parse : Unexpected EOF");
  return Status::success();
}

}  // namespace pilot::topology::xml
