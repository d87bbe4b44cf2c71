// The ranks of a tensor x sequence parallel layout: world rank w is TP rank w % tp and SP rank
// w / tp, so the members of a TP group are neighbours ({0,1},{2,3} for 2 x 2) and an SP group
// holds the ranks of one TP index ({0,2},{1,3}).
#pragma once

#include <vector>

namespace orochi::dist {

struct RankGrid {
  int tp = 1, sp = 1;
  int world() const { return tp * sp; }
  int tp_rank(int world_rank) const { return world_rank % tp; }
  int sp_rank(int world_rank) const { return world_rank / tp; }
  // The world ranks of TP group `g` (one per SP index), in TP rank order.
  std::vector<int> tp_group(int g) const {
    std::vector<int> ranks;
    for (int m = 0; m < tp; ++m) ranks.push_back(g * tp + m);
    return ranks;
  }
  // The world ranks of SP group `g` (one per TP index), in SP rank order.
  std::vector<int> sp_group(int g) const {
    std::vector<int> ranks;
    for (int m = 0; m < sp; ++m) ranks.push_back(m * tp + g);
    return ranks;
  }
};

}  // namespace orochi::dist
