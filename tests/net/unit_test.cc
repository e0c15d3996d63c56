// The transport's pure parts: interface selection (NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY),
// settings, chunk planning and the wire encodings.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "net_test_support.h"
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
  EXPECT_EQ(o.timeoutMs, 30000);
  EXPECT_TRUE(warnings.empty());
  o = socketOptionsFromEnv(loopbackEnv({{"NCCL_PILOT_SOCKET_NSTREAMS", "8"},
                                        {"NCCL_PILOT_SOCKET_CHUNK", "1M"},
                                        {"NCCL_PILOT_SOCKET_TIMEOUT_MS", "500"}}),
                           &warnings);
  EXPECT_EQ(o.streams, 8);
  EXPECT_EQ(o.chunkBytes, size_t{1} << 20);
  EXPECT_EQ(o.timeoutMs, 500);
  EXPECT_TRUE(warnings.empty());
  o = socketOptionsFromEnv(loopbackEnv({{"NCCL_PILOT_SOCKET_NSTREAMS", "17"},
                                        {"NCCL_PILOT_SOCKET_CHUNK", "1K"},
                                        {"NCCL_PILOT_SOCKET_TIMEOUT_MS", "soon"}}),
                           &warnings);
  EXPECT_EQ(o.streams, SocketOptions().streams);
  EXPECT_EQ(o.chunkBytes, size_t{512} << 10);
  EXPECT_EQ(o.timeoutMs, 30000);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(warnings[0].find("NCCL_PILOT_SOCKET_NSTREAMS=17"), std::string::npos);
}

TEST(Options, EverySettingIsInTheTable) {
  std::set<std::string> known;
  for (const auto& s : allSettings()) known.insert(s.name);
  for (const char* name :
       {socket_env::kSocketStreams, socket_env::kSocketChunk, socket_env::kSocketTimeoutMs}) {
    EXPECT_EQ(known.count(name), 1u) << name;
  }
}

TEST(ChunkPlan, SmallMessagesAreInlineLargeOnesSpreadOverEveryStream) {
  EXPECT_EQ(wire::planChunks(0, 4, 512 << 10).chunks, 0u);
  EXPECT_EQ(wire::planChunks(wire::kInlineBytes, 4, 512 << 10).chunks, 0u);
  auto p = wire::planChunks(wire::kInlineBytes + 1, 4, 512 << 10);
  EXPECT_EQ(p.chunks, 1u);
  EXPECT_EQ(p.chunkBytes, wire::kMinChunk);
  p = wire::planChunks(1 << 20, 4, 512 << 10);
  EXPECT_EQ(p.chunks, 4u);
  EXPECT_EQ(p.chunkBytes, 256u << 10);
  p = wire::planChunks(16 << 20, 4, 512 << 10);
  EXPECT_EQ(p.chunks, 32u);
  EXPECT_EQ(p.chunkBytes, 512u << 10);
  p = wire::planChunks(1000001, 3, 512 << 10);  // uneven: page-rounded, last chunk shorter
  EXPECT_EQ(p.chunkBytes % wire::kChunkAlign, 0u);
  EXPECT_GE(p.chunkBytes * p.chunks, 1000001u);
  EXPECT_LT(p.chunkBytes * (p.chunks - 1), 1000001u);
  p = wire::planChunks(wire::kMaxMessage, 16, 64 << 20);
  EXPECT_EQ(p.chunks, wire::kMaxMessage / (64 << 20));
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
  wire::encodeMsgHeader({5, 7, 11, 123456789012ull}, msg);
  wire::MsgHeader m;
  ASSERT_TRUE(wire::decodeMsgHeader(msg, &m));
  EXPECT_EQ(m.group, 5u);
  EXPECT_EQ(m.slot, 7);
  EXPECT_EQ(m.seq, 11u);
  EXPECT_EQ(m.size, 123456789012ull);
  EXPECT_FALSE(wire::decodeCtsHead(msg, &d)) << "a message header is not a CTS record";
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
