#include "pilot/tuner/decision.h"

namespace pilot::tuner {
namespace {

int lowestBit(unsigned v) {
  return __builtin_ctz(v);
}

}  // namespace

Outcome applyToCostTable(const Rule& rule, const CostTableView& table, int* nChannels) {
  if (rule.namesChoice()) {
    const int numAlgo = table.numAlgo < kNumAlgorithms ? table.numAlgo : kNumAlgorithms;
    const int numProto = table.numProto < kNumProtocols ? table.numProto : kNumProtocols;
    const unsigned algos = rule.algorithms ? rule.algorithms : 0xffu;
    const unsigned protos = rule.protocols ? rule.protocols : 0xffu;
    if (rule.selectsOneCell()) {
      int a = lowestBit(algos), p = lowestBit(protos);
      if (a >= numAlgo || p >= numProto || !table.usable(a, p)) return Outcome::NotApplicable;
      table.at(a, p) = 0.0f;
    } else {
      bool anyKept = false;
      for (int a = 0; a < numAlgo && !anyKept; ++a) {
        if (!(algos & (1u << a))) continue;
        for (int p = 0; p < numProto; ++p) {
          if ((protos & (1u << p)) && table.usable(a, p)) {
            anyKept = true;
            break;
          }
        }
      }
      if (!anyKept) return Outcome::NotApplicable;
      // Only the cells we understand are touched; anything past them keeps NCCL's value.
      for (int a = 0; a < numAlgo; ++a) {
        for (int p = 0; p < numProto; ++p) {
          bool allowed = (algos & (1u << a)) && (protos & (1u << p));
          if (!allowed && table.usable(a, p)) table.at(a, p) = kIgnoreCost;
        }
      }
    }
  }
  if (rule.channels > 0 && nChannels != nullptr) *nChannels = rule.channels;
  return Outcome::Applied;
}

bool v2Supports(Algorithm algo, const V2Support& s) {
  const Collective c = s.collective;
  switch (algo) {
    case Algorithm::Ring:
      return true;
    case Algorithm::Tree:
      return c == Collective::AllReduce;
    case Algorithm::CollNetDirect:
    case Algorithm::CollNetChain:
      return c == Collective::AllReduce && s.collNet;
    case Algorithm::Nvls:
      if (!s.nvls) return false;
      if (c == Collective::AllReduce) return s.nNodes == 1 || s.collNet;
      return (c == Collective::AllGather || c == Collective::ReduceScatter) && s.nNodes == 1;
    case Algorithm::NvlsTree:
      return c == Collective::AllReduce && s.nvls && s.nNodes > 1;
    case Algorithm::Pat:
      return false;  // PAT arrived in 2.23; 2.21's tables have 6 algorithms
  }
  return false;
}

V2Outcome applyV2(const Rule& rule, const V2Support& support, int* algorithm, int* protocol,
                  int* nChannels) {
  if (rule.namesChoice()) {
    if (!rule.selectsOneCell()) {
      // 2.21 takes both or neither: NCCL keeps its algorithm/protocol, the channels still apply.
      if (rule.channels > 0 && nChannels != nullptr) *nChannels = rule.channels;
      return V2Outcome::KeepNccl;
    }
    auto a = static_cast<Algorithm>(lowestBit(rule.algorithms));
    if (!v2Supports(a, support)) return V2Outcome::NotApplicable;
    // CollNet, NVLS and NVLSTree run the Simple protocol only, and 2.21 does not check.
    if (a != Algorithm::Tree && a != Algorithm::Ring && !(rule.protocols & bit(Protocol::Simple))) {
      return V2Outcome::NotApplicable;
    }
    *algorithm = static_cast<int>(a);
    *protocol = lowestBit(rule.protocols);
  }
  if (rule.channels > 0 && nChannels != nullptr) *nChannels = rule.channels;
  return V2Outcome::Applied;
}

}  // namespace pilot::tuner
