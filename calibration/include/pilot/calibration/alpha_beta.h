// Latency-bandwidth (alpha-beta) models: time = alpha + size / beta. Used to carry a fitted
// choice past the largest measured size, and, with alpha and 1/beta linear in log2(nodes), to
// predict node counts that were not measured.
#pragma once

#include <cstdint>
#include <vector>

namespace pilot::calibration {

/// time_us = alphaUs + size * usPerByte (usPerByte = 1 / beta).
struct AlphaBeta {
  double alphaUs = 0;
  double usPerByte = 0;
  bool ok = false;  ///< false: too few points, or a fit without a positive bandwidth

  double predict(double size) const { return alphaUs + size * usPerByte; }
  /// beta in GB/s (1e9 bytes per second), as nccl-tests reports bandwidth.
  double betaGBps() const { return usPerByte > 0 ? 1e-3 / usPerByte : 0; }
};

struct SizeTime {
  double size = 0;
  double timeUs = 0;
};

/// Least squares on relative error (each point weighted by 1/time^2), so a 10 us latency and a
/// 10 ms transfer count alike. Needs two distinct sizes.
AlphaBeta fitAlphaBeta(const std::vector<SizeTime>& points);

/// One measurement of one configuration at one node count.
struct NodePoint {
  double size = 0;
  int nodes = 1;
  double timeUs = 0;
};

/// How latency and per-byte cost grow with the node count n: with log2(n) for trees (NCCL's
/// AllReduce at small sizes), with n for rings (AllGather, ReduceScatter: one step per rank).
enum class NodeScale { Log2, Linear };

double nodeFeature(int nodes, NodeScale scale);
const char* nodeScaleName(NodeScale scale);  ///< "log2(n)", "n"

/// time = (a0 + a1 f) + size (b0 + b1 f), f = nodeFeature(nodes).
struct NodeAlphaBeta {
  double a0 = 0, a1 = 0, b0 = 0, b1 = 0;
  NodeScale scale = NodeScale::Log2;
  bool ok = false;

  double predict(double size, int nodes) const;
};

/// Fits NodeAlphaBeta (relative error) to the points. With a single node count the model is
/// flat in nodes (a1 = b1 = 0); with a single size, flat in size.
NodeAlphaBeta fitNodeAlphaBeta(const std::vector<NodePoint>& points, NodeScale scale);

/// Octaves either side of a size whose measurements enter the node model for that size. NCCL
/// switches protocol and algorithm with size, so one alpha-beta pair cannot describe a whole
/// sweep; four octaves of neighbours can, and still average out single-size noise.
constexpr double kNodeModelOctaves = 2;

/// The node model's prediction at (size, nodes), fitted over the points within
/// kNodeModelOctaves of `size`. Returns a negative value when no point is near enough.
double predictAcrossNodes(const std::vector<NodePoint>& points, double size, int nodes,
                          NodeScale scale);

/// Weighted linear least squares: minimises sum_i w_i (row_i . x - y_i)^2. Columns that add
/// nothing (constant, collinear) get coefficient 0 instead of failing the solve.
std::vector<double> leastSquares(const std::vector<std::vector<double>>& rows,
                                 const std::vector<double>& y, const std::vector<double>& w);

}  // namespace pilot::calibration
