//===- Tune.h - GEMM tiling search ------------------------------*- C++ -*-===//
//
// The API of strata_tune, the GEMM tiling search that strata-tune runs to
// build a tuning database. It is a library of its own, not part of the
// runtime library that frameworks embed: the runtime carries the kernels and
// reads the tilings a plan names (GemmTiling, Kernels.h), never the search.
// strata_tune links the runtime to time its matmul kernel and, like the
// runtime, never includes an MLIR header.
//
// The tiling search of seed 000's GEMM patent ("Compiler-Level Matrix
// Multiplication Optimization for Deep Learning"): a tiling state splits each
// of m, n and k into nested loop factors whose product is the (padded)
// dimension; a neighbour moves one prime factor between two levels of one
// dimension (G-BFS and N-A2C may also take a register-tile move, an
// extension: see SearchOptions). A state maps onto the runtime's kernel
// parameters (the CPU GEMM's GemmTiling, or the CUDA GEMM's tiling); illegal
// states are pruned before anything is measured. Greedy best-first search
// (G-BFS), the neighbourhood actor-advantage-critic (N-A2C), random and
// exhaustive search share one interface and are deterministic under a seed. The
// cost of a state is the measured time of the runtime's own matmul kernel, or
// an analytic model.
//
// Padding: a state is defined on the padded dimension, the smallest number
// >= the dimension whose prime factors are all <= 7 and that is a multiple of
// the alignment of that dimension (m: 4 on CPU, 16 for CUDA; n: 16; k: 1),
// so that some register tile (or thread grid) fits. The kernel
// always runs on the real dimension: the runtime's GEMM computes partial
// blocks and edge tiles itself (remainder handling), so padding only shapes
// the search space, never the data.
//
// Nothing here throws; failures come back as messages.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TUNE_TUNE_H
#define STRATA_TUNE_TUNE_H

#include "strata-rt/Kernels.h"
#include "strata-rt/PlanFormat.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace strata::rt::tune {

/// Version of the CPU GEMM whose parameters a CPU tiling sets (Gemm.cpp).
/// Bump when the kernel changes so that old tuning databases are refused.
constexpr const char *kCpuGemmKernelVersion = "strata-cpu-gemm-1";
/// Version of the analytic model of Strata's CUDA GEMM.
constexpr const char *kCudaGemmModelVersion = "strata-cuda-gemm-model-1";

/// One GEMM as the runtime's matmul kernel computes it (the tuning key,
/// PlanFormat.h).
using GemmProblem = strata_plan::GemmShape;

/// Parses GemmProblem::str() syntax ("MxNxK[:bB][:ta][:tb]"); returns an
/// error message, empty on success.
inline std::string parseGemmProblem(const std::string &text,
                                    GemmProblem &problem) {
  return strata_plan::parseGemmShape(text, problem);
}

/// Which kernel a state parameterises.
enum class TileTarget { Cpu, Cuda };

/// Data cache sizes in bytes (per core for L1/L2, shared L3).
struct CacheSizes {
  int64_t l1 = 48 * 1024;
  int64_t l2 = 2048 * 1024;
  int64_t l3 = 32 * 1024 * 1024;
  /// This machine's caches from sysfs, the defaults where unknown.
  static CacheSizes detect();
};

/// Tiling of Strata's CUDA GEMM; mirrors cuda::CudaGemmTiling
/// (runtime/src/cuda/CudaKernels.h), which only the CUDA build may include.
struct CudaTiling {
  int64_t blockM = 128, blockN = 128, kStep = 8, threadM = 8, threadN = 8;
};

/// Empty when `t` is legal for the CUDA GEMM, else why not: the rules of
/// CudaKernels.h (blockM % threadM == 0, blockN % threadN == 0,
/// (blockM/threadM)*(blockN/threadN) threads a multiple of 32 and at most
/// 1024, (blockM + blockN) * kStep floats of shared memory within 48 KiB),
/// plus register limits: a threadM x threadN tile of at most 128
/// accumulators, and the block's registers (cudaRegistersPerThread each)
/// within the 64 Ki of one SM.
std::string verifyCudaTiling(const CudaTiling &t);
/// Estimated registers per thread: the accumulators, one column of A and one
/// row of B, and 16 for addresses and loop state.
inline int64_t cudaRegistersPerThread(const CudaTiling &t) {
  return t.threadM * t.threadN + t.threadM + t.threadN + 16;
}

struct SpaceOptions {
  TileTarget target = TileTarget::Cpu;
  /// Nested levels per dimension, outermost first. With 3/3/2 every state is
  /// a distinct kernel configuration; more levels add outer loops that the
  /// kernel does not distinguish (their states alias, see TileSpace::key).
  int levelsM = 3, levelsN = 3, levelsK = 2;
  /// CPU legality: a kc x nr panel of B must fit in L1, an mc x kc block of A
  /// in half of L2, a kc x nc block of B in half of L3.
  CacheSizes caches;
  /// CPU legality: kc of at least min(k, minKc). The micro-kernel loads and
  /// stores its mr x nr block of C once per kc block, so below 16 that
  /// traffic and the packing per block dominate: measured at 128x768x768 on
  /// the AVX-512 kernel, kc = 1, 2, 4, 8 ran 15x, 8x, 4.4x, 2.6x slower than
  /// kc >= 64, kc = 16 1.7x (bench/tune-replay.md). 1 keeps every kc.
  int64_t minKc = 16;
  /// CPU: tilings of the bf16 GEMM (a bf16 matmul) instead of the f32 one.
  /// Its register tile is the one of the path this machine runs
  /// (bf16DefaultTiling): mr x nr must equal it, m and n are padded to
  /// multiples of it, and the cache rules count 2-byte packed elements. On
  /// the fallback path (the f32 GEMM on rounded inputs) the space is the f32
  /// GEMM's.
  bool bf16 = false;
};

/// The tiling the runtime's CPU GEMM runs without tiling attributes: the f32
/// GEMM's defaults, or with `bf16` the blocking and register tile of the bf16
/// GEMM path this machine runs (AMX: 256, 2048, 1024, 32x32).
GemmTiling defaultCpuTiling(bool bf16);
/// The mr of the bf16 GEMM path this machine runs (its register tile is mr x
/// 32: 32 for AMX, 12 for AVX512-BF16), 0 on the fallback path (the f32 GEMM
/// on rounded inputs, with the f32 GEMM's tiles).
int64_t bf16TileRows();

/// factors[d][l]: dimension d (0 = m, 1 = n, 2 = k), level l (0 = outermost).
struct TileState {
  std::array<std::vector<int64_t>, 3> factors;
  bool operator==(const TileState &o) const { return factors == o.factors; }
  bool operator<(const TileState &o) const { return factors < o.factors; }
  /// "m[2,8,8] n[1,24,32] k[3,256]".
  std::string str() const;
};

/// Moves prime `prime` from level `from` to level `to` of dimension `dim`.
struct Move {
  int dim;
  int from, to;
  int64_t prime;
};

/// The space of tiling states of one problem.
///
/// CPU mapping (innermost level last): mr = m[L-1], mc = m[L-2] * m[L-1];
/// nr = n[L-1], nc = n[L-2] * n[L-1]; kc = k[L-1]. Outer levels are the loops
/// over blocks. Legal when (mr, nr) is one of the micro-kernel's register
/// tiles (verifyGemmTiling) and the cache rules of SpaceOptions hold.
///
/// CUDA mapping: threadM = m[L-1], blockM = m[L-2] * m[L-1], likewise
/// threadN/blockN for n, kStep = k[L-1]; legal when verifyCudaTiling is.
class TileSpace {
public:
  TileSpace(const GemmProblem &problem, const SpaceOptions &options = {});

  const GemmProblem &problem() const { return problem_; }
  const SpaceOptions &options() const { return options_; }
  int levels(int dim) const { return levels_[dim]; }
  /// The padded dimension the factors multiply to (see the file comment).
  int64_t paddedDim(int dim) const { return padded_[dim]; }
  /// Every ordered factorisation of dimension `dim` into its levels.
  const std::vector<std::vector<int64_t>> &dimStates(int dim) const {
    return dimStates_[dim];
  }
  /// Number of states (legal or not): the product of dimStates sizes.
  uint64_t size() const;
  /// State number `index` in [0, size()), m varying slowest.
  TileState stateAt(uint64_t index) const;
  /// Whether every dimension's factors multiply to its padded dimension.
  bool isValid(const TileState &s) const;
  /// Valid and mapped onto a configuration the kernel accepts; `why` gets
  /// the reason when not.
  bool isLegal(const TileState &s, std::string *why = nullptr) const;
  GemmTiling cpuTiling(const TileState &s) const;
  CudaTiling cudaTiling(const TileState &s) const;
  /// The kernel configuration of `s` (five numbers of the target's tiling):
  /// states with equal keys run the same kernel.
  std::array<int64_t, 5> key(const TileState &s) const;
  /// Every move that applies to `s` (legal result or not), in a fixed order.
  std::vector<Move> moves(const TileState &s) const;
  /// Every move of the fixed action set (dims x ordered level pairs x primes
  /// 2, 3, 5, 7), whether it applies to a state or not.
  const std::vector<Move> &actions() const { return actions_; }
  /// Whether `move` applies to `s` (the prime divides the source level).
  bool applies(const TileState &s, const Move &move) const;
  TileState apply(const TileState &s, const Move &move) const;
  /// The legal state nearest to the target's default tiling (in log
  /// distance of the five parameters); nothing legal -> `found` is false.
  TileState initialState(bool *found = nullptr) const;
  /// Number of legal states (counts all of size(); may take a while for
  /// huge spaces).
  uint64_t countLegal() const;

private:
  GemmProblem problem_;
  SpaceOptions options_;
  std::array<int, 3> levels_;
  std::array<int64_t, 3> padded_;
  /// The bf16 GEMM path's mr (its tile is mr x 32); 0 for the f32 GEMM's
  /// tiles.
  int64_t bf16Tile_ = 0;
  std::array<std::vector<std::vector<int64_t>>, 3> dimStates_;
  std::vector<Move> actions_;
};

/// The cost of a state in seconds; +infinity when it cannot run.
using CostFunction = std::function<double(const TileState &)>;

enum class Algorithm { Gbfs, Na2c, Random, Exhaustive };
/// "gbfs", "na2c", "random", "exhaustive".
const char *algorithmName(Algorithm a);
bool parseAlgorithm(const std::string &name, Algorithm &a);

/// One measured state, in measuring order.
struct Trial {
  int64_t index; // 1-based
  double cost;
  double bestCost; // best so far, this one included
  double elapsed;  // seconds since the search started
  TileState state;
};

struct SearchOptions {
  Algorithm algorithm = Algorithm::Gbfs;
  uint64_t seed = 0;
  /// Stop after this many measured (distinct, legal) states; <= 0: no limit.
  int64_t maxTrials = 100;
  /// Stop after this many seconds; <= 0: no limit.
  double maxSeconds = 0;
  /// G-BFS: neighbours sampled per expansion (p).
  int gbfsSamples = 8;
  /// G-BFS extension: starting states, the one nearest the default tiling
  /// plus gbfsStarts - 1 legal states drawn by the seed (each costs a
  /// trial). 1 is the paper's search.
  int gbfsStarts = 1;
  /// G-BFS extension: per expansion, also sample up to this many register-
  /// tile moves (states that re-split only the innermost two levels of m and
  /// n, keeping the cache blocks: a new mr x nr with the same mc, nc, kc) on
  /// top of the p prime-factor neighbours. The paper's moves change a tile
  /// one prime at a time, and the tiles in between are often slower or no
  /// micro-kernel at all (8x32 -> 8x48 needs a 3 in and a 2 out), so a
  /// greedy search stays with its first tile; bench/tune-replay.md. 0 is the
  /// paper's search.
  int gbfsTileMoves = 6;
  /// N-A2C: steps per episode (how far from the best state an episode
  /// walks), hidden units, learning rates, discount, exploration rate.
  int a2cEpisodeSteps = 4;
  int a2cHidden = 32;
  double a2cActorRate = 0.05;
  double a2cCriticRate = 0.05;
  double a2cDiscount = 0.9;
  double a2cEpsilon = 0.3;
  /// N-A2C extension: half of the exploring steps (probability a2cEpsilon)
  /// take a random register-tile move (see gbfsTileMoves) instead of a
  /// random action, where the state has one; such a step trains only the
  /// critic (the actor's action set stays the paper's prime moves). false is
  /// the paper's search.
  bool a2cTileMoves = true;
  /// Exhaustive: measure the legal states in an order shuffled by `seed`
  /// (spreads a changing machine load over the space) instead of in index
  /// order.
  bool exhaustiveShuffle = false;
  /// Called after every trial (progress reports).
  std::function<void(const Trial &)> onTrial;
};

struct SearchResult {
  bool found = false; // some legal state was measured
  TileState best;
  double bestCost = 0;
  int64_t trials = 0;
  /// Cost-function calls avoided because an equal kernel configuration had
  /// been measured already.
  int64_t cacheHits = 0;
  double seconds = 0;
  /// The whole space was searched (exhaustive, or nothing left to try).
  bool complete = false;
  std::vector<Trial> history;
};

/// Searches `space` for the state of least `cost`. Deterministic for a given
/// seed when `cost` is; only legal states are passed to `cost`, each kernel
/// configuration at most once.
SearchResult search(const TileSpace &space, const CostFunction &cost,
                    const SearchOptions &options);

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

struct MeasureOptions {
  /// Threads of the pool the matmul kernel runs on (<= 0: one per hardware
  /// thread).
  int threads = 0;
  int warmup = 1;
  /// Timed calls; the cost is their median.
  int repeats = 5;
  /// Keep timing (beyond `repeats`) until this many seconds have passed.
  double minSeconds = 0;
  uint64_t seed = 0;
  /// Time the bf16 matmul (the instruction's `bf16` attribute: the bf16
  /// GEMM, operands rounded as they are packed) instead of the f32 one.
  bool bf16 = false;
};

/// Times the runtime's matmul kernel (the plan instruction's kernel, with the
/// tiling as its attributes) on one problem. Inputs are refilled with fresh
/// random non-zero values before each configuration is timed.
class GemmMeasurer {
public:
  GemmMeasurer(const GemmProblem &problem, const MeasureOptions &options = {});
  ~GemmMeasurer();
  GemmMeasurer(const GemmMeasurer &) = delete;
  GemmMeasurer &operator=(const GemmMeasurer &) = delete;

  /// Median seconds of one call with `tiling`; +infinity (and `error` set)
  /// when the kernel rejects it.
  double measure(const GemmTiling &tiling, std::string *error = nullptr);
  int threads() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Analytic time of the CPU GEMM with tiling `t`: micro-kernel efficiency of
/// the register tile, padding waste of edge tiles, packing and C traffic per
/// block, cache-fit penalties and the split over `threads`, on a core of
/// `peakGflops` and memory of `bandwidthGBs`.
double modelCpuSeconds(const GemmProblem &p, const GemmTiling &t,
                       const CacheSizes &caches, int threads,
                       double peakGflops = 100.0, double bandwidthGBs = 20.0);

/// A GPU for the analytic CUDA model. The defaults are an A100 SXM;
/// strata-tune fills peak, bandwidth and SMs from the target description.
struct GpuModel {
  double peakTflops = 19.5;         // fp32, whole device
  double bandwidthGBs = 1555;       // global memory
  int sms = 108;                    // streaming multiprocessors
  int64_t sharedPerSm = 164 * 1024; // bytes
  int maxThreadsPerSm = 2048;
  int maxBlocksPerSm = 32;
};

/// Analytic time of Strata's CUDA GEMM with tiling `t` (wave quantisation
/// over SMs with occupancy from threads and shared memory, register-tile
/// arithmetic intensity, global traffic of the block tiles).
double modelCudaSeconds(const GemmProblem &p, const CudaTiling &t,
                        const GpuModel &gpu);

/// The machine a measured database is valid for: CPU model name, the GEMM's
/// instruction set and the thread count, e.g.
/// "Intel Xeon ... | avx512 | 2 threads".
std::string machineIdentity(int threads);

/// Measured seconds per GEMM (GemmProblem::str()) and CPU tiling
/// (mc, nc, kc, mr, nr): `strata-tune --save-cost-table` writes one line
/// "GEMM mc,nc,kc,mr,nr SECONDS" per measured state ('#' starts a comment,
/// SECONDS may be "inf"); `--cost-table` replays searches over it.
using CostTable =
    std::map<std::string, std::map<std::array<int64_t, 5>, double>>;

/// Parses a cost table into `table`; a tiling listed more than once keeps its
/// least time. Returns an error message ("line N: why (expected ...)"), empty
/// on success.
std::string parseCostTable(const std::string &text, CostTable &table);

} // namespace strata::rt::tune

#endif // STRATA_TUNE_TUNE_H
