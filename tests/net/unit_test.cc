// The transport's pure parts: interface selection (NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY),
// settings, chunk planning, tag matching and the wire encodings.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>

#include "net_test_support.h"
#include "tag_queue.h"
#include "wire.h"

namespace nettest {
namespace {

InterfaceAddress v4(const std::string& name, const char* ip,
                    unsigned flags = IFF_UP | IFF_RUNNING) {
  InterfaceAddress a;
  a.name = name;
  a.flags = flags;
  auto* sin = reinterpret_cast<sockaddr_in*>(&a.address.storage);
  sin->sin_family = AF_INET;
  inet_pton(AF_INET, ip, &sin->sin_addr);
  a.address.length = sizeof(sockaddr_in);
  return a;
}

InterfaceAddress v6(const std::string& name, const char* ip) {
  InterfaceAddress a;
  a.name = name;
  a.flags = IFF_UP | IFF_RUNNING;
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&a.address.storage);
  sin6->sin6_family = AF_INET6;
  inet_pton(AF_INET6, ip, &sin6->sin6_addr);
  a.address.length = sizeof(sockaddr_in6);
  return a;
}

std::vector<std::string> names(const std::vector<NetInterface>& nics) {
  std::vector<std::string> out;
  for (const auto& n : nics) out.push_back(n.name);
  return out;
}

const std::vector<InterfaceAddress> kMachine = {
    v4("lo", "127.0.0.1"),         v6("lo", "::1"),
    v4("eth0", "10.0.0.1"),        v6("eth0", "fd00::1"),
    v4("eth10", "10.1.0.1"),       v4("docker0", "172.17.0.1"),
    v4("virbr0", "192.168.122.1"), v4("ens5", "10.2.0.1", IFF_UP),  // no carrier
    v6("ib0", "fe80::1"),          v4("ib1", "192.168.1.1", 0),     // down
};
using Names = std::vector<std::string>;

TEST(Interfaces, DefaultPrefersIbThenSkipsLoDockerVirbr) {
  EXPECT_EQ(names(selectInterfaces(kMachine, std::nullopt, AF_UNSPEC)), Names{"ib0"});
  std::vector<InterfaceAddress> noIb(kMachine.begin(), kMachine.end() - 2);
  EXPECT_EQ(names(selectInterfaces(noIb, std::nullopt, AF_UNSPEC)), (Names{"eth0", "eth10"}));
  EXPECT_EQ(names(selectInterfaces({v4("docker0", "172.17.0.1"), v4("lo", "127.0.0.1")},
                                   std::nullopt, AF_UNSPEC)),
            Names{"docker0"});
  EXPECT_EQ(
      names(selectInterfaces({v4("lo", "127.0.0.1"), v6("lo", "::1")}, std::nullopt, AF_UNSPEC)),
      Names{"lo"});
  EXPECT_TRUE(selectInterfaces({v6("lo", "::1")}, std::nullopt, AF_UNSPEC).empty())
      << "IPv6 loopback never counts";
}

TEST(Interfaces, IfnamePrefixesExclusionAndExactNames) {
  EXPECT_EQ(names(selectInterfaces(kMachine, "eth", AF_UNSPEC)), (Names{"eth0", "eth10"}));
  EXPECT_EQ(names(selectInterfaces(kMachine, "=eth1", AF_UNSPEC)), Names{});
  EXPECT_EQ(names(selectInterfaces(kMachine, "=eth10", AF_UNSPEC)), Names{"eth10"});
  EXPECT_EQ(names(selectInterfaces(kMachine, "eth1", AF_UNSPEC)), Names{"eth10"});
  EXPECT_EQ(names(selectInterfaces(kMachine, "^eth,lo,ib", AF_UNSPEC)),
            (Names{"docker0", "virbr0"}));
  EXPECT_EQ(names(selectInterfaces(kMachine, "^=eth0,lo", AF_UNSPEC)),
            (Names{"eth10", "docker0", "virbr0", "ib0"}));
  EXPECT_EQ(names(selectInterfaces(kMachine, "lo,docker", AF_UNSPEC)), (Names{"lo", "docker0"}));
  EXPECT_EQ(names(selectInterfaces(kMachine, "ens,ib1", AF_UNSPEC)), Names{})
      << "no carrier / down interfaces are never used";
  EXPECT_EQ(names(selectInterfaces(kMachine, "eth0:1", AF_UNSPEC)), Names{"eth0"})
      << "a :port suffix means nothing for IP interfaces";
}

TEST(Interfaces, FamilyAndFirstAddressWins) {
  auto both = selectInterfaces(kMachine, "eth0", AF_UNSPEC);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].address.family(), AF_INET);
  auto six = selectInterfaces(kMachine, "eth0", AF_INET6);
  ASSERT_EQ(six.size(), 1u);
  EXPECT_EQ(six[0].address.toString(), "[fd00::1]");
  EXPECT_EQ(names(selectInterfaces(kMachine, "eth", AF_INET6)), Names{"eth0"});
  EXPECT_TRUE(socketFamilyFromEnv(loopbackEnv({{"NCCL_SOCKET_FAMILY", "AF_INET6"}})).ok());
  EXPECT_EQ(*socketFamilyFromEnv(loopbackEnv()), AF_UNSPEC);
  EXPECT_FALSE(socketFamilyFromEnv(loopbackEnv({{"NCCL_SOCKET_FAMILY", "inet"}})).ok());
}

TEST(Interfaces, LoopbackFromTheRealMachine) {
  auto nics = findInterfaces(loopbackEnv());
  ASSERT_TRUE(nics.ok()) << nics.error();
  ASSERT_EQ(nics->size(), 1u);
  EXPECT_EQ((*nics)[0].name, "lo");
  EXPECT_EQ((*nics)[0].address.toString(), "127.0.0.1");
  RecordingLogger log;
  auto t = loopbackTransport(log);
  ASSERT_NE(t, nullptr);
  auto props = t->properties(0);
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(props->name, "lo");
  EXPECT_EQ(props->pciPath, "") << "lo is virtual";
  EXPECT_EQ(props->speedMbps, 10000) << "no speed in sysfs: NCCL's default";
  EXPECT_EQ(props->maxRecvs, 8);
  EXPECT_EQ(props->ptrSupport, kPtrHost);
}

TEST(Options, DefaultsRangesAndWarnings) {
  std::vector<std::string> warnings;
  SocketOptions o = socketOptionsFromEnv(loopbackEnv(), &warnings);
  EXPECT_EQ(o.streams, SocketOptions().streams);
  EXPECT_EQ(o.chunkBytes, size_t{512} << 10);
  EXPECT_EQ(o.eagerBytes, size_t{64} << 10);
  EXPECT_EQ(o.timeoutMs, 30000);
  EXPECT_TRUE(warnings.empty());
  o = socketOptionsFromEnv(loopbackEnv({{"NCCL_PILOT_SOCKET_NSTREAMS", "8"},
                                        {"NCCL_PILOT_SOCKET_CHUNK", "1M"},
                                        {"NCCL_PILOT_SOCKET_EAGER", "16K"},
                                        {"NCCL_PILOT_SOCKET_NTHREADS", "3"},
                                        {"NCCL_PILOT_SOCKET_TIMEOUT_MS", "500"}}),
                           &warnings);
  EXPECT_EQ(o.streams, 8);
  EXPECT_EQ(o.chunkBytes, size_t{1} << 20);
  EXPECT_EQ(o.eagerBytes, size_t{16} << 10);
  EXPECT_EQ(o.threads, 3);
  EXPECT_EQ(o.timeoutMs, 500);
  EXPECT_TRUE(warnings.empty());
  o = socketOptionsFromEnv(
      loopbackEnv({{"NCCL_PILOT_SOCKET_NSTREAMS", "0"}, {"NCCL_PILOT_SOCKET_EAGER", "0"}}),
      &warnings);
  EXPECT_EQ(o.streams, 0) << "0 data streams: everything on the control socket";
  EXPECT_EQ(o.eagerBytes, 0u) << "0: every message waits for its CTS record";
  EXPECT_TRUE(warnings.empty());
  o = socketOptionsFromEnv(loopbackEnv({{"NCCL_PILOT_SOCKET_NSTREAMS", "17"},
                                        {"NCCL_PILOT_SOCKET_CHUNK", "1K"},
                                        {"NCCL_PILOT_SOCKET_EAGER", "65537"},
                                        {"NCCL_PILOT_SOCKET_NTHREADS", "17"},
                                        {"NCCL_PILOT_SOCKET_TIMEOUT_MS", "soon"}}),
                           &warnings);
  EXPECT_EQ(o.streams, SocketOptions().streams);
  EXPECT_EQ(o.chunkBytes, size_t{512} << 10);
  EXPECT_EQ(o.eagerBytes, size_t{64} << 10);
  EXPECT_EQ(o.threads, 0);
  EXPECT_EQ(o.timeoutMs, 30000);
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_NE(warnings[0].find("NCCL_PILOT_SOCKET_NSTREAMS=17"), std::string::npos);
  EXPECT_NE(warnings[2].find("NCCL_PILOT_SOCKET_EAGER=65537"), std::string::npos);
}

TEST(Options, EverySettingIsInTheTable) {
  std::set<std::string> known;
  for (const auto& s : allSettings()) known.insert(s.name);
  for (const char* name :
       {socket_env::kSocketStreams, socket_env::kSocketChunk, socket_env::kSocketEager,
        socket_env::kSocketThreads, socket_env::kSocketTimeoutMs}) {
    EXPECT_EQ(known.count(name), 1u) << name;
  }
}

TEST(ChunkPlan, UpToAChunkFollowsTheHeaderLargerSpreadsOverEveryStream) {
  constexpr uint64_t kChunk = 512 << 10;
  EXPECT_EQ(wire::planChunks(0, 4, kChunk).chunks, 0u);
  EXPECT_EQ(wire::planChunks(kChunk, 4, kChunk).chunks, 0u) << "NCCL's 512K step is not cut";
  EXPECT_EQ(wire::planChunks(16 << 20, 0, kChunk).chunks, 0u)
      << "without data streams everything follows its header";
  auto p = wire::planChunks(kChunk + 1, 4, kChunk);
  EXPECT_EQ(p.chunks, 4u);
  EXPECT_EQ(p.chunkBytes, 132u << 10) << "a quarter, rounded up to whole pages";
  p = wire::planChunks(70000, 4, wire::kMinChunk);
  EXPECT_EQ(p.chunks, 2u);
  EXPECT_EQ(p.chunkBytes, wire::kMinChunk) << "never below NCCL's socket task minimum";
  p = wire::planChunks(512 << 10, 4, 128 << 10);
  EXPECT_EQ(p.chunks, 4u) << "a smaller chunk spreads NCCL's 512K step over the streams";
  EXPECT_EQ(p.chunkBytes, 128u << 10);
  p = wire::planChunks(1 << 20, 4, kChunk);
  EXPECT_EQ(p.chunks, 4u);
  EXPECT_EQ(p.chunkBytes, 256u << 10);
  p = wire::planChunks(16 << 20, 4, kChunk);
  EXPECT_EQ(p.chunks, 32u);
  EXPECT_EQ(p.chunkBytes, 512u << 10);
  p = wire::planChunks(1000001, 3, kChunk);  // uneven: page-rounded, last chunk shorter
  EXPECT_EQ(p.chunkBytes % wire::kChunkAlign, 0u);
  EXPECT_GE(p.chunkBytes * p.chunks, 1000001u);
  EXPECT_LT(p.chunkBytes * (p.chunks - 1), 1000001u);
  p = wire::planChunks(wire::kMaxMessage, 16, 64 << 20);
  EXPECT_EQ(p.chunks, wire::kMaxMessage / (64 << 20));
}

TEST(TagQueue, TheKthMessageWithATagTakesTheKthBufferPostedWithIt) {
  TagQueue q;
  // Two grouped receives {10, 11}, {10, 11}, then one {12}.
  for (int32_t tag : {10, 11, 10, 11, 12}) q.push(tag);
  uint32_t at = 99;
  EXPECT_FALSE(q.take(13, &at)) << "no buffer with this tag";
  ASSERT_TRUE(q.take(10, &at));
  EXPECT_EQ(at, 0u);
  ASSERT_TRUE(q.take(10, &at));
  EXPECT_EQ(at, 2u) << "the second 10 goes to the second receive, as NCCL's IB places it";
  EXPECT_FALSE(q.take(10, &at));
  EXPECT_EQ(q.outstanding(), 4u) << "buffer 0 taken, buffer 1 still waiting";
  ASSERT_TRUE(q.take(12, &at));
  EXPECT_EQ(at, 4u);
  ASSERT_TRUE(q.take(11, &at));
  EXPECT_EQ(at, 1u);
  EXPECT_EQ(q.outstanding(), 2u) << "buffers 0..2 taken: the oldest waiting one is 3";
  ASSERT_TRUE(q.take(11, &at));
  EXPECT_EQ(at, 3u);
  EXPECT_FALSE(q.waiting());
  EXPECT_EQ(q.push(10), 5u);
  EXPECT_EQ(q.tagOf(5), 10);
}

TEST(Wire, EncodingsRoundTripAndRejectForeignBytes) {
  wire::Handle h;
  h.family = AF_INET6;
  h.port = 4242;
  h.scopeId = 3;
  h.address[15] = 1;
  h.secret = 0x0123456789abcdefull;
  uint8_t bytes[kHandleBytes];
  wire::encodeHandle(h, bytes);
  EXPECT_EQ(wire::handleTicket(bytes), 0u);
  wire::Handle back;
  ASSERT_TRUE(wire::decodeHandle(bytes, &back));
  EXPECT_EQ(back.port, 4242);
  EXPECT_EQ(back.secret, h.secret);
  EXPECT_EQ(back.scopeId, 3u);
  wire::setHandleTicket(bytes, 77);
  EXPECT_EQ(wire::handleTicket(bytes), 77u);
  bytes[0] ^= 0xff;
  EXPECT_FALSE(wire::decodeHandle(bytes, &back));

  wire::Hello hi;
  hi.index = 2;
  hi.streams = 3;
  hi.chunkBytes = 1 << 20;
  hi.secret = 42;
  hi.nonce = 0xfeedfacecafebeefull;
  hi.eagerBytes = 32 << 10;
  uint8_t hello[wire::Hello::kBytes];
  wire::encodeHello(hi, hello);
  wire::Hello hb;
  ASSERT_TRUE(wire::decodeHello(hello, &hb));
  EXPECT_EQ(hb.index, 2);
  EXPECT_EQ(hb.streams, 3);
  EXPECT_EQ(hb.nonce, hi.nonce);
  EXPECT_EQ(hb.eagerBytes, 32u << 10);
  EXPECT_EQ(wire::helloProblem(hb, 42, 64 << 20), nullptr);
  EXPECT_STREQ(wire::helloProblem(hb, 43, 64 << 20), "wrong secret");
  for (auto spoil : std::vector<std::function<void(wire::Hello&)>>{
           [](wire::Hello& x) { x.streams = wire::kMaxStreams + 1; },
           [](wire::Hello& x) { x.index = 4; }, [](wire::Hello& x) { x.chunkBytes = 4096; },
           [](wire::Hello& x) { x.chunkBytes = 128 << 20; },
           [](wire::Hello& x) { x.eagerBytes = wire::kMaxEager + 1; }}) {
    wire::Hello bad = hb;
    spoil(bad);
    EXPECT_STREQ(wire::helloProblem(bad, 42, 64 << 20), "malformed hello");
  }
  hello[4] = 1;  // protocol version 1
  EXPECT_FALSE(wire::decodeHello(hello, &hb));

  wire::Cts c;
  c.group = 9;
  c.n = 3;
  for (int i = 0; i < 3; ++i) {
    c.tags[i] = -i;
    c.capacity[i] = uint64_t{1} << (40 - i);
  }
  uint8_t cts[wire::Cts::kMaxBytes];
  ASSERT_EQ(wire::encodeCts(c, cts), 16u + 3 * 16);
  wire::Cts d;
  ASSERT_TRUE(wire::decodeCtsHead(cts, &d));
  for (int i = 0; i < 3; ++i) wire::decodeCtsEntry(cts + 16 + 16 * i, i, &d);
  EXPECT_EQ(d.group, 9u);
  EXPECT_EQ(d.tags[2], -2);
  EXPECT_EQ(d.capacity[1], uint64_t{1} << 39);

  uint8_t msg[wire::MsgHeader::kBytes];
  wire::encodeMsgHeader({11, -7, 123456789012ull}, msg);
  wire::MsgHeader m;
  ASSERT_TRUE(wire::decodeMsgHeader(msg, &m));
  EXPECT_EQ(m.seq, 11u);
  EXPECT_EQ(m.tag, -7);
  EXPECT_EQ(m.size, 123456789012ull);
  EXPECT_FALSE(wire::decodeCtsHead(msg, &d)) << "a message header is not a CTS record";
  msg[12] = 1;  // the reserved word must be zero
  EXPECT_FALSE(wire::decodeMsgHeader(msg, &m));
  msg[12] = 0;
  msg[wire::MsgHeader::kBytes - 1] = 1;  // and so must the padding to the cache line
  EXPECT_FALSE(wire::decodeMsgHeader(msg, &m));

  // Payloads start on a cache line of their stream behind either header.
  static_assert(wire::MsgHeader::kBytes % 64 == 0 && wire::ChunkHeader::kBytes % 64 == 0);
  uint8_t chunk[wire::ChunkHeader::kBytes];
  wire::encodeChunkHeader({5, 4096, 1u << 20}, chunk);
  wire::ChunkHeader ch;
  ASSERT_TRUE(wire::decodeChunkHeader(chunk, &ch));
  EXPECT_EQ(ch.seq, 5u);
  EXPECT_EQ(ch.length, 4096u);
  EXPECT_EQ(ch.offset, uint64_t{1} << 20);
  chunk[wire::ChunkHeader::kFieldBytes] = 1;
  EXPECT_FALSE(wire::decodeChunkHeader(chunk, &ch));
}

TEST(Properties, PciPathAndSpeedComeFromTheSysfsRoot) {
  // A recorded-style tree: the interface's device link leads to its PCI function.
  char dir[] = "/tmp/pilot-sysfs-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = dir;
  const std::string pci = root + "/sys/devices/pci0000:00/0000:00:03.0";
  ASSERT_EQ(std::system(("mkdir -p " + pci + "/net/eth9 " + root + "/sys/class/net").c_str()), 0);
  ASSERT_EQ(symlink("../../devices/pci0000:00/0000:00:03.0/net/eth9",
                    (root + "/sys/class/net/eth9").c_str()),
            0);
  ASSERT_EQ(symlink("../../../0000:00:03.0", (pci + "/net/eth9/device").c_str()), 0);
  ASSERT_EQ(std::system(("echo 25000 > " + pci + "/net/eth9/speed").c_str()), 0);
  ASSERT_EQ(std::system(("mkdir -p " + root + "/sys/class/net/veth0").c_str()), 0);
  ASSERT_EQ(std::system(("echo -1 > " + root + "/sys/class/net/veth0/speed").c_str()), 0);

  SocketOptions options;
  options.sysfsRoot = root;
  RecordingLogger log;
  auto nics =
      selectInterfaces({v4("eth9", "10.0.0.9"), v4("veth0", "10.0.0.10")}, "eth9,veth", AF_UNSPEC);
  ASSERT_EQ(nics.size(), 2u);
  auto t = makeSocketTransport(nics, options, log);
  auto eth = t->properties(0);
  ASSERT_TRUE(eth.ok());
  EXPECT_EQ(eth->pciPath, pci);
  EXPECT_EQ(eth->speedMbps, 25000);
  auto veth = t->properties(1);
  ASSERT_TRUE(veth.ok());
  EXPECT_EQ(veth->pciPath, "");
  EXPECT_EQ(veth->speedMbps, 10000) << "-1 (no link speed) means NCCL's default";
  EXPECT_EQ(veth->guid, 1u);
  std::system(("rm -rf " + root).c_str());
}

}  // namespace
}  // namespace nettest
