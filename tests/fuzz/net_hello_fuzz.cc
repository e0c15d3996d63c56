// libFuzzer target: the bytes a stranger sends a listener before it is trusted (the hello),
// and the listen handle a connector decodes. For every input:
//  1. decoding never reads past the fixed-size record (ASan);
//  2. a hello the listener would accept keeps every bound it relies on (stream count, index,
//     chunk size, eager limit), and it carries the secret;
//  3. a decoded hello or handle encodes back to the same bytes (no field is half-read).
// Any violation aborts with the details on stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "pilot/net/socket.h"
#include "wire.h"

using namespace pilot::net;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "net_hello_fuzz: %s\n", what.c_str());
  std::abort();
}

constexpr uint64_t kSecret = 0x0123456789abcdefull;

void checkHello(const uint8_t* bytes) {
  wire::Hello h;
  if (!wire::decodeHello(bytes, &h)) return;
  uint8_t again[wire::Hello::kBytes];
  wire::encodeHello(h, again);
  // Bytes 10..11 are reserved (written as zero, ignored on reading).
  for (size_t i = 0; i < wire::Hello::kBytes; ++i) {
    if ((i < 10 || i > 11) && again[i] != bytes[i]) die("hello byte " + std::to_string(i));
  }
  if (wire::helloProblem(h, kSecret, SocketOptions::kMaxChunk) != nullptr) return;
  if (h.secret != kSecret) die("accepted without the secret");
  if (h.streams > wire::kMaxStreams || h.index > h.streams) die("accepted a bad stream count");
  if (h.chunkBytes < wire::kMinChunk || h.chunkBytes > SocketOptions::kMaxChunk) {
    die("accepted a bad chunk size");
  }
  if (h.eagerBytes > wire::kMaxEager) {
    die("accepted a bad eager limit");
  }
}

void checkHandle(const uint8_t* bytes) {
  wire::Handle h;
  if (!wire::decodeHandle(bytes, &h)) return;
  uint8_t again[kHandleBytes];
  wire::encodeHandle(h, again);
  // The fields: magic, version, family, port (0..9), scope id, address, secret (12..39).
  for (size_t i = 0; i < 40; ++i) {
    if ((i < 10 || i > 11) && again[i] != bytes[i]) die("handle byte " + std::to_string(i));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t hello[wire::Hello::kBytes] = {};
  std::memcpy(hello, data, std::min(size, sizeof(hello)));
  // Inputs of odd length get the secret in place, so the bounds behind it are reached.
  if (size % 2 == 1) wire::put64(hello + 16, kSecret);
  checkHello(hello);
  uint8_t handle[kHandleBytes] = {};
  std::memcpy(handle, data, std::min(size, sizeof(handle)));
  checkHandle(handle);
  return 0;
}
