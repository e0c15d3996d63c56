// SHA-256 against the FIPS 180-4 / NIST example digests and, at the padding edges (55, 56, 63,
// 64 bytes ...), against Python's hashlib; fed whole and in every split.
#include "pilot/core/sha256.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>

namespace pilot {
namespace {

std::string hexOf(const std::array<uint8_t, 32>& digest) {
  std::string out;
  char buf[3];
  for (uint8_t b : digest) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

TEST(Sha256, NistExamples) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingEdges) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (const auto& [n, want] : cases) EXPECT_EQ(sha256Hex(std::string(n, 'a')), want) << n;
}

TEST(Sha256, EverySplitGivesTheSameDigest) {
  std::string data;
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 256; ++i) data += static_cast<char>(i);
  }
  const std::string want = "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363";
  ASSERT_EQ(sha256Hex(data), want);
  for (size_t a = 0; a <= data.size(); a += 7) {
    for (size_t b = a; b <= data.size(); b += 61) {
      Sha256 h;
      h.update(std::string_view(data).substr(0, a));
      h.update(std::string_view(data).substr(a, b - a));
      h.update(std::string_view(data).substr(b));
      ASSERT_EQ(hexOf(h.finish()), want) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace pilot
