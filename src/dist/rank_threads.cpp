#include "dist/rank_threads.h"

#include <exception>
#include <string>
#include <thread>

namespace orochi::dist {

std::vector<Status> run_on_ranks(int ranks, const std::function<Status(int rank)>& fn) {
  std::vector<Status> results(ranks > 0 ? ranks : 0);
  std::vector<std::thread> threads;
  threads.reserve(results.size());
  for (int rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&fn, &results, rank] {
      try {
        results[rank] = fn(rank);
      } catch (const std::exception& e) {
        results[rank] = Status(ErrorCode::kInternal, "rank " + std::to_string(rank) + ": " + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace orochi::dist
