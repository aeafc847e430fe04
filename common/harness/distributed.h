#pragma once
/// \file
/// Data-parallel runs: one process per rank, joined by a c10d process group. How ranks are
/// started, a launcher's environment read, the backend chosen and the group opened, each failure
/// as one clear line; lesson.cpp's `run_distributed` calls these in order (launcher or rank) and
/// says a refused backend or --out folder once, before any rank starts.
///
/// Two ways to start the same binary:
///   - as its own launcher, `LESSON --ranks 2`: it starts N copies of itself (fork and exec,
///     RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set), forwards their output with a
///     `[rankK] ` prefix, and stops the others when one dies or hangs;
///   - under a torchrun-style launcher (torchrun, Slurm with the variables exported): RANK and
///     WORLD_SIZE are set, and the process is one rank; MASTER_ADDR:MASTER_PORT is the
///     c10d::TCPStore that rank 0 serves and the others join.
/// Gloo runs on the CPU; NCCL on a CUDA GPU per rank (LOCAL_RANK picks it).
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backend_choice.h"

namespace pil::dist {

/// What a launcher told this process (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
/// MASTER_ADDR, MASTER_PORT). `launched` is false when RANK is not set: no launcher.
struct RankEnv {
  bool launched = false;
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
};

/// A bad launcher environment or an unusable store: one line, exit 2.
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads the environment. Throws SetupError naming the variable when a value is not allowed.
RankEnv read_rank_env();

/// Starts `ranks` copies of this executable with `args` (argv[1..]) and the rank variables set,
/// forwards their output line by line with a `[rankK] ` prefix, and waits. When a rank fails
/// (exit code other than 0 and 77, or a signal), the others get `grace` to stop on their own
/// (their collectives time out or see the closed connection), then are killed. Returns 0 when
/// every rank passed, 77 when every rank skipped, 1 otherwise; prints one line per failed rank
/// and a final `RESULT:` line.
int launch_ranks(int ranks, const std::vector<std::string>& args, std::chrono::seconds grace);

/// Whether this build has c10d's NCCL backend (a LibTorch with CUDA and nccl.h).
bool build_has_nccl();

/// The process group of this run, and who this process is in it.
struct Group {
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  Backend backend = Backend::Gloo;
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  std::string run_id;  ///< the same on every rank of one run (from the store), different between runs
  std::chrono::milliseconds timeout{30000};
};

/// Opens the group: a c10d::TCPStore at MASTER_ADDR:MASTER_PORT (rank 0 serves it; under
/// torchrun, TORCHELASTIC_USE_AGENT_STORE=True, the agent serves it and every rank joins), then a
/// c10d::ProcessGroup with a Gloo or NCCL backend, each collective limited to `timeout`.
/// Throws SetupError on a port in use, an unreachable store or a backend this build lacks.
Group open_group(const RankEnv& env, Backend backend, std::chrono::milliseconds timeout);

/// The group opened by open_group() in this process; throws std::logic_error before that.
Group& group();
bool group_open();

/// Waits for every rank (a barrier), turning a timeout or a dead peer into one line
/// ("rank 0: waited 30 s in barrier: another rank died or hung").
void barrier(const std::string& what);

/// Rethrows a failed collective as one line naming this rank, what it waited for and the
/// backend's own first line.
[[noreturn]] void collective_failed(const std::string& what, const std::exception& e);

/// For the failure tests: PIL_TEST_RANK_FAIL=K:exit|hang makes rank K exit with code 3, or
/// sleep forever, when call() is called the `at`-th time (1-based; default 2).
void test_failure_point();

/// Kineto's `distributedInfo` metadata for this rank, as torch.profiler writes it (backend,
/// rank, world_size) plus the run id.
std::string distributed_info_json();

}  // namespace pil::dist
