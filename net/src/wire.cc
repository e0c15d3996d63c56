#include "wire.h"

#include <algorithm>

namespace pilot::net::wire {
namespace {

bool zeros(const uint8_t* p, size_t n) {
  uint8_t any = 0;
  for (size_t i = 0; i < n; ++i) any |= p[i];
  return any == 0;
}

}  // namespace

void encodeHandle(const Handle& h, uint8_t out[kHandleBytes]) {
  std::memset(out, 0, kHandleBytes);
  put32(out, kHandleMagic);
  put16(out + 4, kVersion);
  put16(out + 6, h.family);
  put16(out + 8, h.port);
  put32(out + 12, h.scopeId);
  std::memcpy(out + 16, h.address, sizeof(h.address));
  put64(out + 32, h.secret);
  // out + 40: the connector's ticket, 0 here.
}

bool decodeHandle(const uint8_t in[kHandleBytes], Handle* h) {
  if (get32(in) != kHandleMagic || get16(in + 4) != kVersion) return false;
  h->family = get16(in + 6);
  h->port = get16(in + 8);
  h->scopeId = get32(in + 12);
  std::memcpy(h->address, in + 16, sizeof(h->address));
  h->secret = get64(in + 32);
  return true;
}

void encodeHello(const Hello& h, uint8_t out[Hello::kBytes]) {
  put32(out, kHelloMagic);
  put16(out + 4, kVersion);
  put16(out + 6, h.index);
  put16(out + 8, h.streams);
  put16(out + 10, 0);
  put32(out + 12, h.chunkBytes);
  put64(out + 16, h.secret);
  put64(out + 24, h.nonce);
  put32(out + 32, h.eagerBytes);
}

bool decodeHello(const uint8_t in[Hello::kBytes], Hello* h) {
  if (get32(in) != kHelloMagic || get16(in + 4) != kVersion) return false;
  h->index = get16(in + 6);
  h->streams = get16(in + 8);
  h->chunkBytes = get32(in + 12);
  h->secret = get64(in + 16);
  h->nonce = get64(in + 24);
  h->eagerBytes = get32(in + 32);
  return true;
}

const char* helloProblem(const Hello& h, uint64_t secret, uint32_t maxChunk) {
  // Constant time: the comparison does not tell a prober how many bytes it got right.
  volatile uint64_t diff = h.secret ^ secret;
  if (diff != 0) return "wrong secret";
  if (h.streams > kMaxStreams || h.index > h.streams || h.chunkBytes < kMinChunk ||
      h.chunkBytes > maxChunk || h.eagerBytes > kMaxEager) {
    return "malformed hello";
  }
  return nullptr;
}

size_t encodeCts(const Cts& c, uint8_t out[Cts::kMaxBytes]) {
  put32(out, kCtsMagic);
  put32(out + 4, c.group);
  put16(out + 8, c.n);
  put16(out + 10, 0);
  put32(out + 12, 0);
  uint8_t* entry = out + Cts::kHeadBytes;
  for (int i = 0; i < c.n; ++i, entry += Cts::kEntryBytes) {
    put32(entry, static_cast<uint32_t>(c.tags[i]));
    put32(entry + 4, 0);
    put64(entry + 8, c.capacity[i]);
  }
  return Cts::kHeadBytes + c.n * Cts::kEntryBytes;
}

bool decodeCtsHead(const uint8_t in[Cts::kHeadBytes], Cts* c) {
  if (get32(in) != kCtsMagic) return false;
  c->group = get32(in + 4);
  c->n = get16(in + 8);
  return true;
}

void decodeCtsEntry(const uint8_t in[Cts::kEntryBytes], int slot, Cts* c) {
  c->tags[slot] = static_cast<int32_t>(get32(in));
  c->capacity[slot] = get64(in + 8);
}

void encodeMsgHeader(const MsgHeader& m, uint8_t out[MsgHeader::kBytes]) {
  put32(out, kMsgMagic);
  put32(out + 4, m.seq);
  put32(out + 8, static_cast<uint32_t>(m.tag));
  put32(out + 12, 0);
  put64(out + 16, m.size);
  std::memset(out + MsgHeader::kFieldBytes, 0, MsgHeader::kBytes - MsgHeader::kFieldBytes);
}

bool decodeMsgHeader(const uint8_t in[MsgHeader::kBytes], MsgHeader* m) {
  if (get32(in) != kMsgMagic || get32(in + 12) != 0) return false;
  if (!zeros(in + MsgHeader::kFieldBytes, MsgHeader::kBytes - MsgHeader::kFieldBytes)) {
    return false;
  }
  m->seq = get32(in + 4);
  m->tag = static_cast<int32_t>(get32(in + 8));
  m->size = get64(in + 16);
  return true;
}

void encodeChunkHeader(const ChunkHeader& c, uint8_t out[ChunkHeader::kBytes]) {
  put32(out, c.seq);
  put32(out + 4, c.length);
  put64(out + 8, c.offset);
  std::memset(out + ChunkHeader::kFieldBytes, 0, ChunkHeader::kBytes - ChunkHeader::kFieldBytes);
}

bool decodeChunkHeader(const uint8_t in[ChunkHeader::kBytes], ChunkHeader* c) {
  c->seq = get32(in);
  c->length = get32(in + 4);
  c->offset = get64(in + 8);
  return zeros(in + ChunkHeader::kFieldBytes, ChunkHeader::kBytes - ChunkHeader::kFieldBytes);
}

ChunkPlan planChunks(uint64_t size, int streams, uint64_t maxChunk) {
  if (streams < 1 || size <= maxChunk) return {};
  // Spread one message over every stream (a lone large message still uses them all), in whole
  // pages, but never below kMinChunk nor above the configured chunk.
  uint64_t per = (size + static_cast<uint64_t>(streams) - 1) / static_cast<uint64_t>(streams);
  per = (per + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  per = std::min(std::max<uint64_t>(per, kMinChunk), std::max<uint64_t>(maxChunk, kChunkAlign));
  return {per, static_cast<uint32_t>((size + per - 1) / per)};
}

}  // namespace pilot::net::wire
