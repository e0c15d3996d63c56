#include "pilot/calibration/alpha_beta.h"

#include <cmath>
#include <map>

namespace pilot::calibration {

std::vector<double> leastSquares(const std::vector<std::vector<double>>& rows,
                                 const std::vector<double>& y, const std::vector<double>& w) {
  const size_t m = rows.size();
  const size_t n = m == 0 ? 0 : rows[0].size();
  std::vector<double> x(n, 0.0);
  if (m == 0) return x;
  // Modified Gram-Schmidt on the weighted columns: numerically sound for columns of very
  // different scale (1 next to sizes of 1e9), and a column that is (nearly) a combination of
  // earlier ones shows up as a vanishing remainder, so it is dropped instead of blowing up.
  std::vector<std::vector<double>> a(n, std::vector<double>(m));
  std::vector<double> b(m);
  for (size_t i = 0; i < m; ++i) {
    const double sw = std::sqrt(w[i]);
    for (size_t j = 0; j < n; ++j) a[j][i] = sw * rows[i][j];
    b[i] = sw * y[i];
  }
  auto dot = [m](const std::vector<double>& u, const std::vector<double>& v) {
    double s = 0;
    for (size_t i = 0; i < m; ++i) s += u[i] * v[i];
    return s;
  };
  std::vector<size_t> kept;
  std::vector<std::vector<double>> q;          // orthonormal columns, in `kept` order
  std::vector<std::map<size_t, double>> r(n);  // r[j][k]: row j of R, columns k >= j
  for (size_t j = 0; j < n; ++j) {
    std::vector<double> v = a[j];
    const double norm0 = std::sqrt(dot(v, v));
    for (size_t k = 0; k < kept.size(); ++k) {
      const double rk = dot(q[k], v);
      r[kept[k]][j] = rk;
      for (size_t i = 0; i < m; ++i) v[i] -= rk * q[k][i];
    }
    const double norm = std::sqrt(dot(v, v));
    if (norm0 == 0 || norm <= 1e-9 * norm0) continue;
    for (double& e : v) e /= norm;
    r[j][j] = norm;
    kept.push_back(j);
    q.push_back(std::move(v));
  }
  std::vector<double> c(kept.size());
  for (size_t k = 0; k < kept.size(); ++k) c[k] = dot(q[k], b);
  for (size_t k = kept.size(); k-- > 0;) {
    const size_t j = kept[k];
    double s = c[k];
    for (size_t l = k + 1; l < kept.size(); ++l) s -= r[j][kept[l]] * x[kept[l]];
    x[j] = s / r[j][j];
  }
  return x;
}

AlphaBeta fitAlphaBeta(const std::vector<SizeTime>& points) {
  AlphaBeta out;
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  bool distinct = false;
  for (const SizeTime& p : points) {
    if (!(p.timeUs > 0)) continue;
    distinct = distinct || (!rows.empty() && p.size != rows[0][1]);
    rows.push_back({1.0, p.size});
    y.push_back(p.timeUs);
    w.push_back(1.0 / (p.timeUs * p.timeUs));
  }
  if (!distinct) return out;
  std::vector<double> x = leastSquares(rows, y, w);
  out.alphaUs = x[0];
  out.usPerByte = x[1];
  out.ok = out.usPerByte > 0;
  return out;
}

double nodeFeature(int nodes, NodeScale scale) {
  const double n = static_cast<double>(nodes);
  return scale == NodeScale::Log2 ? std::log2(n) : n;
}

const char* nodeScaleName(NodeScale scale) {
  return scale == NodeScale::Log2 ? "log2(n)" : "n";
}

double NodeAlphaBeta::predict(double size, int nodes) const {
  const double f = nodeFeature(nodes, scale);
  return a0 + a1 * f + size * (b0 + b1 * f);
}

NodeAlphaBeta fitNodeAlphaBeta(const std::vector<NodePoint>& points, NodeScale scale) {
  NodeAlphaBeta out;
  out.scale = scale;
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const NodePoint& p : points) {
    if (!(p.timeUs > 0) || p.nodes < 1) continue;
    const double f = nodeFeature(p.nodes, scale);
    rows.push_back({1.0, f, p.size, p.size * f});
    y.push_back(p.timeUs);
    w.push_back(1.0 / (p.timeUs * p.timeUs));
  }
  if (rows.empty()) return out;
  std::vector<double> x = leastSquares(rows, y, w);
  out.a0 = x[0], out.a1 = x[1], out.b0 = x[2], out.b1 = x[3];
  out.ok = true;
  return out;
}

double predictAcrossNodes(const std::vector<NodePoint>& points, double size, int nodes,
                          NodeScale scale) {
  const double factor = std::exp2(kNodeModelOctaves);
  std::vector<NodePoint> near;
  for (const NodePoint& p : points) {
    if (p.size >= size / factor && p.size <= size * factor) near.push_back(p);
  }
  NodeAlphaBeta model = fitNodeAlphaBeta(near, scale);
  if (!model.ok) return -1;
  const double t = model.predict(size, nodes);
  return t > 0 ? t : -1;
}

}  // namespace pilot::calibration
