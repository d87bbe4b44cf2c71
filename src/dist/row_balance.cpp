#include "dist/row_balance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace orochi::dist {

int64_t share_capacity(int64_t rows, int parts) {
  if (parts <= 1) return rows;
  const int64_t even = (rows + parts - 1) / parts;
  return std::min(rows, even + even / 16);
}

Expected<RowShares> balanced_shares(int64_t rows, const std::vector<RankLoad>& loads, int64_t capacity) {
  const int n = static_cast<int>(loads.size());
  if (n == 0) return invalid_argument("row balancing needs at least one rank's load");
  if (capacity * n < rows) return invalid_argument("row balancing: " + std::to_string(n) + " ranks of at most " +
                                                   std::to_string(capacity) + " rows cannot hold " + std::to_string(rows));
  std::vector<double> fixed(n), cost(n);  // ms, ms per row
  for (int r = 0; r < n; ++r) {
    const RankLoad& l = loads[r];
    if (l.rows <= 0 || !std::isfinite(l.fixed_ms) || !std::isfinite(l.per_rows_ms) || l.fixed_ms < 0 ||
        l.per_rows_ms <= 0)
      return invalid_argument("row balancing: rank " + std::to_string(r) + "'s load cannot be used (" +
                              std::to_string(l.rows) + " rows, " + std::to_string(l.fixed_ms) + " ms fixed, " +
                              std::to_string(l.per_rows_ms) + " ms on its rows)");
    fixed[r] = l.fixed_ms;
    cost[r] = l.per_rows_ms / static_cast<double>(l.rows);
  }
  RowShares out;
  for (int r = 0; r < n; ++r) out.current_ms = std::max(out.current_ms, fixed[r] + cost[r] * loads[r].rows);

  // Equal finish time T: rank r takes x_r = (T - fixed_r) / cost_r, sum x_r = rows. Ranks that hit
  // a bound keep it and the rest are solved again (at most n rounds).
  const double even = static_cast<double>(rows) / n;
  const double hi = static_cast<double>(capacity), lo = std::max(0.0, even - (hi - even));
  std::vector<double> x(n, 0);
  std::vector<bool> bound(n, false);
  for (int round = 0; round < n; ++round) {
    double free_rows = static_cast<double>(rows), inv_sum = 0, weighted = 0;
    for (int r = 0; r < n; ++r) {
      if (bound[r]) {
        free_rows -= x[r];
        continue;
      }
      inv_sum += 1 / cost[r];
      weighted += fixed[r] / cost[r];
    }
    if (inv_sum == 0) break;
    const double T = (free_rows + weighted) / inv_sum;
    bool changed = false;
    for (int r = 0; r < n; ++r) {
      if (bound[r]) continue;
      x[r] = (T - fixed[r]) / cost[r];
      if (x[r] > hi || x[r] < lo) {
        x[r] = std::clamp(x[r], lo, hi);
        bound[r] = changed = true;
      }
    }
    if (!changed) break;
  }
  // Whole rows: round down, then hand the rows left over to the ranks with the largest remainders.
  std::vector<int64_t> whole(n);
  for (int r = 0; r < n; ++r) whole[r] = std::min(capacity, static_cast<int64_t>(std::floor(x[r])));
  int64_t left = rows - std::accumulate(whole.begin(), whole.end(), int64_t{0});
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return x[a] - std::floor(x[a]) > x[b] - std::floor(x[b]); });
  for (int pass = 0; left > 0 && pass < 2; ++pass)
    for (int r : order) {
      if (left == 0) break;
      const int64_t give = std::min(left, pass == 0 ? int64_t{1} : capacity - whole[r]);
      if (give <= 0 || whole[r] + give > capacity) continue;
      whole[r] += give;
      left -= give;
    }
  // Bounds on more than two ranks can leave the solution over `rows`: take the excess back from the
  // ranks with the smallest remainders, keeping a row on each.
  for (auto it = order.rbegin(); left < 0 && it != order.rend(); ++it) {
    const int64_t take = std::min(-left, whole[*it] - 1);
    whole[*it] -= take;
    left += take;
  }
  int64_t begin = 0;
  for (int r = 0; r < n; ++r) {
    out.shares.push_back({begin, begin + whole[r]});
    begin += whole[r];
    out.predicted_ms = std::max(out.predicted_ms, fixed[r] + cost[r] * static_cast<double>(whole[r]));
  }
  return out;
}

}  // namespace orochi::dist
