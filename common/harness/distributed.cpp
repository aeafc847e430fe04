#include "harness/distributed.h"

#include "base/command_line.h"

#include "harness/error_text.h"
#include "trace/text_table.h"  // count_of

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if PIL_HAVE_C10D_NCCL
#include <ATen/DeviceAccelerator.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string_view>
#include <thread>

namespace pil::dist {
namespace {


std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int env_int(const char* name, int fallback, int lo, int hi) {
  const auto v = env(name);
  if (!v) return fallback;
  int64_t x = 0;
  if (const std::string why = whole_number_problem(*v, lo, hi, x); !why.empty())
    throw SetupError(std::string(name) + "=" + *v + ": " + why);
  return int(x);
}

/// A TCP port nobody listens on right now (the kernel picks it); the store binds it soon after.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw SetupError(std::string("cannot open a socket to find a free port: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw SetupError(std::string("cannot find a free port: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

/// One child rank as the launcher sees it.
struct Child {
  int rank = 0;
  pid_t pid = -1;
  int out = -1, err = -1;         // read ends of its stdout and stderr
  std::string out_buf, err_buf;   // a line not yet complete
  bool running = true;
  int status = 0;
  bool killed = false;
};

void forward_lines(std::string& buf, const std::string& prefix, std::ostream& to, bool flush_all) {
  size_t pos = 0;
  for (size_t nl; (nl = buf.find('\n', pos)) != std::string::npos; pos = nl + 1)
    to << prefix << std::string_view(buf).substr(pos, nl + 1 - pos);
  buf.erase(0, pos);
  if (flush_all && !buf.empty()) {
    to << prefix << buf << "\n";
    buf.clear();
  }
  to.flush();
}

/// Reads what is there from `fd` into `buf`; closes it at end of file.
void drain(int& fd, std::string& buf) {
  char chunk[8192];
  const ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0) {
    buf.append(chunk, size_t(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    ::close(fd);
    fd = -1;
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

bool passed(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
bool skipped(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 77; }

std::optional<Group>& the_group() {
  static std::optional<Group> g;
  return g;
}

std::string random_run_id() {
  std::random_device rd;
  std::ostringstream s;
  s << std::hex << (uint64_t(rd()) << 32 | rd());
  return s.str();
}

/// While it lives, c10d's own retry and timeout logs (with their stack dumps) stay quiet: the
/// failure becomes one line of ours. TORCH_CPP_LOG_LEVEL set by the user is respected.
struct QuietC10dLogs {
  int saved = FLAGS_caffe2_log_level;
  QuietC10dLogs() {
    if (!std::getenv("TORCH_CPP_LOG_LEVEL")) FLAGS_caffe2_log_level = 3;  // FATAL only
  }
  ~QuietC10dLogs() { FLAGS_caffe2_log_level = saved; }
};

bool loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

}  // namespace


RankEnv read_rank_env() {
  RankEnv e;
  if (!env("RANK")) {
    // A rank's other variables without RANK are a launcher's half-set environment (or one left
    // from another run): refused rather than read as "no launcher", which started ranks of its own.
    for (const char* name : {"WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"})
      if (env(name))
        throw SetupError(std::string(name) + " is set but RANK is not; allowed: RANK and WORLD_SIZE set together (as " +
                         "torchrun sets them), or neither (the lesson starts its own --ranks)");
    return e;
  }
  e.launched = true;
  e.world_size = env_int("WORLD_SIZE", -1, 1, 1 << 16);
  if (e.world_size < 0) throw SetupError("RANK is set but WORLD_SIZE is not; allowed: both, or neither");
  e.rank = env_int("RANK", 0, 0, e.world_size - 1);
  e.local_world_size = env_int("LOCAL_WORLD_SIZE", e.world_size, 1, e.world_size);
  // A rank's GPU is its LOCAL_RANK, one of this machine's LOCAL_WORLD_SIZE; unset, as torchrun
  // numbers ranks machine by machine.
  e.local_rank = env_int("LOCAL_RANK", e.rank % e.local_world_size, 0, e.world_size - 1);
  if (e.local_rank >= e.local_world_size)
    throw SetupError("LOCAL_RANK=" + std::to_string(e.local_rank) + ": not allowed with LOCAL_WORLD_SIZE=" +
                     std::to_string(e.local_world_size) + "; allowed: a whole number from 0 to " +
                     std::to_string(e.local_world_size - 1));
  e.master_addr = env("MASTER_ADDR").value_or("127.0.0.1");
  e.master_port = env_int("MASTER_PORT", c10d::TCPStoreOptions::kDefaultPort, 1, 65535);
  return e;
}

int launch_ranks(int ranks, const std::vector<std::string>& args, std::chrono::seconds grace) {
  const std::string addr = env("MASTER_ADDR").value_or("127.0.0.1");
  const int port = env("MASTER_PORT") ? env_int("MASTER_PORT", 0, 1, 65535) : free_port();
  std::cout << "launcher: " << trace::count_of(ranks, "rank", "ranks") << ", store at " << addr << ":" << port
            << " (one process each; output prefixed [rankK])" << std::endl;

  std::vector<std::string> argv_s{"/proc/self/exe"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<Child> children(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    // Everything the rank needs is made before the fork: LibTorch's threads may hold the
    // allocator's lock at that moment, and the child may only call what is safe after a fork of a
    // threaded process (no malloc) until it execs.
    const std::vector<std::string> rank_env = {
        "RANK=" + std::to_string(r),           "LOCAL_RANK=" + std::to_string(r),
        "WORLD_SIZE=" + std::to_string(ranks), "LOCAL_WORLD_SIZE=" + std::to_string(ranks),
        "MASTER_ADDR=" + addr,                 "MASTER_PORT=" + std::to_string(port)};
    std::vector<std::string> env_s(rank_env);
    for (char** e = environ; *e; ++e) {  // the launcher's own, less what the rank's replace
      const std::string_view kv(*e);
      const std::string_view name_eq = kv.substr(0, kv.find('=') + 1);  // "NAME="
      const bool replaced = std::any_of(rank_env.begin(), rank_env.end(), [&](const std::string& mine) {
        return std::string_view(mine).substr(0, name_eq.size()) == name_eq;
      });
      if (!replaced) env_s.emplace_back(kv);
    }
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string exec_failed = "launcher: cannot start rank " + std::to_string(r) + " (errno ";
    // Close-on-exec: a rank started later does not inherit the pipes of the ranks before it.
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      throw SetupError(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw SetupError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a launcher killed (ctest timeout) takes its ranks along
      ::dup2(out[1], 1);  // the copies on 1 and 2 stay open across exec
      ::dup2(err[1], 2);
      ::execve(argv[0], argv.data(), envp.data());
      // Only async-signal-safe calls here: the errno as digits, no strerror.
      char digits[16];
      int n = 0;
      for (int code = errno; n == 0 || code > 0; code /= 10) digits[n++] = char('0' + code % 10);
      ssize_t ignored = ::write(2, exec_failed.data(), exec_failed.size());
      while (n > 0) ignored = ::write(2, &digits[--n], 1);
      ignored = ::write(2, ")\n", 2);
      (void)ignored;
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    Child& c = children[size_t(r)];
    c.rank = r;
    c.pid = pid;
    c.out = out[0];
    c.err = err[0];
  }

  // Forward output and watch the ranks. After the first failure the others get `grace`.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  int first_failed = -1;
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& c : children) {
      if (c.out >= 0) fds.push_back({c.out, POLLIN, 0});
      if (c.err >= 0) fds.push_back({c.err, POLLIN, 0});
    }
    bool any_running = false;
    for (auto& c : children) any_running = any_running || c.running;
    if (fds.empty() && !any_running) break;
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // Ranks found failed in this sweep: the launcher cannot tell which of them failed first (a
    // rank whose peer died fails a moment later, often before the sweep comes round).
    std::vector<const Child*> failed_now;
    for (auto& c : children) {
      const std::string prefix = "[rank" + std::to_string(c.rank) + "] ";
      for (const pollfd& p : fds) {
        if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (p.fd == c.out) drain(c.out, c.out_buf);
        else if (p.fd == c.err) drain(c.err, c.err_buf);
      }
      forward_lines(c.out_buf, prefix, std::cout, c.out < 0);
      forward_lines(c.err_buf, prefix, std::cerr, c.err < 0);
      if (c.running && ::waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.running = false;
        if (!passed(c.status) && !skipped(c.status) && first_failed == -1) failed_now.push_back(&c);
      }
    }
    if (failed_now.size() == 1) {
      first_failed = failed_now.front()->rank;
      std::cerr << "launcher: rank " << first_failed << " failed (" << describe_status(failed_now.front()->status)
                << "); the other ranks get " << grace.count() << " s to stop" << std::endl;
    } else if (failed_now.size() > 1) {
      first_failed = -2;  // at once: no order to report
      std::cerr << "launcher: ";
      for (size_t k = 0; k < failed_now.size(); ++k)
        std::cerr << (k ? " and " : "") << "rank " << failed_now[k]->rank << " ("
                  << describe_status(failed_now[k]->status) << ")";
      std::cerr << " failed at once; the other ranks get " << grace.count() << " s to stop" << std::endl;
    }
    if (!failed_now.empty()) deadline = std::chrono::steady_clock::now() + grace;
    if (deadline && std::chrono::steady_clock::now() > *deadline) {
      for (auto& c : children)
        if (c.running && !c.killed) {
          ::kill(c.pid, SIGKILL);
          c.killed = true;
          std::cerr << "launcher: rank " << c.rank << " did not stop within " << grace.count()
                    << " s of "
                    << (first_failed >= 0 ? "rank " + std::to_string(first_failed) + "'s failure"
                                          : std::string("the first failures"))
                    << " (hung?): killed" << std::endl;
        }
    }
  }

  bool all_passed = true, all_skipped = true;
  for (const auto& c : children) {
    all_passed = all_passed && passed(c.status);
    all_skipped = all_skipped && skipped(c.status);
  }
  if (all_passed) {
    std::cout << "RESULT: PASSED (" << trace::count_of(ranks, "rank", "ranks") << ")" << std::endl;
    return 0;
  }
  if (all_skipped) {
    std::cout << "RESULT: SKIPPED (every rank skipped)" << std::endl;
    return 77;
  }
  std::string line;
  for (const auto& c : children)
    if (!passed(c.status))
      line += (line.empty() ? "" : "; ") + std::string("rank ") + std::to_string(c.rank) + " " +
              (c.killed ? std::string("killed after hanging") : describe_status(c.status));
  std::cerr << "launcher: failed: " << line
            << (first_failed >= 0 ? " (rank " + std::to_string(first_failed) + " failed first)" : "")
            << std::endl;
  std::cout << "RESULT: FAILED" << std::endl;
  return 1;
}

bool build_has_nccl() {
#if PIL_HAVE_C10D_NCCL
  return true;
#else
  return false;
#endif
}

Group open_group(const RankEnv& e, Backend backend, std::chrono::milliseconds timeout) {
  Group g;
  g.backend = backend;
  g.rank = e.rank;
  g.size = e.world_size;
  g.local_rank = e.local_rank;
  g.local_size = e.local_world_size;
  g.timeout = timeout;
  const std::string where = e.master_addr + ":" + std::to_string(e.master_port);
  const std::string secs = std::to_string(timeout.count() / 1000) + " s";

  c10::intrusive_ptr<c10d::Store> store;
  const QuietC10dLogs quiet;
  try {
    c10d::TCPStoreOptions o;
    o.port = uint16_t(e.master_port);
    // Under torchrun the agent already serves a store at MASTER_ADDR:MASTER_PORT and says so in
    // TORCHELASTIC_USE_AGENT_STORE=True: every rank is then a client, as Python's
    // _create_c10d_store makes them (torch/distributed/rendezvous.py).
    const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
    o.isServer = e.rank == 0 && !(agent && std::string(agent) == "True");
    o.numWorkers = size_t(e.world_size);
    o.waitWorkers = true;
    o.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(e.master_addr, o);
  } catch (const std::exception& ex) {
    const std::string what = ex.what();
    if (what.find("EADDRINUSE") != std::string::npos || what.find("already in use") != std::string::npos)
      throw SetupError("MASTER_PORT=" + std::to_string(e.master_port) + ": port already in use on " +
                       e.master_addr + "; allowed: a free port (unset MASTER_PORT and --ranks picks one)");
    if (e.rank == 0)
      throw SetupError("rank 0: the c10d store at " + where + " did not see all " +
                       std::to_string(e.world_size) + " ranks join within " + secs +
                       " (did every rank start, with the same MASTER_ADDR, MASTER_PORT, WORLD_SIZE?)");
    throw SetupError("rank " + std::to_string(e.rank) + ": cannot reach the c10d store at " + where +
                     " within " + secs + " (is rank 0 running there? are MASTER_ADDR and MASTER_PORT right?)");
  }

  // One id per run, from rank 0, in every rank's trace: pil-trace ranks refuses traces of
  // different runs.
  try {
    if (e.rank == 0) {
      const std::string id = random_run_id();
      store->set("pil/run_id", std::vector<uint8_t>(id.begin(), id.end()));
    }
    const std::vector<uint8_t> id = store->get("pil/run_id");
    g.run_id.assign(id.begin(), id.end());
  } catch (const std::exception& ex) {
    throw SetupError("rank " + std::to_string(e.rank) + ": the store at " + where +
                     " failed: " + one_line(ex));
  }

  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("default_pg", store);
  g.pg = c10::make_intrusive<c10d::ProcessGroup>(prefixed, e.rank, e.world_size);
  if (backend == Backend::Gloo) {
    auto o = c10d::ProcessGroupGloo::Options::create(timeout);
    // GLOO_SOCKET_IFNAME as in PyTorch; on one machine the loopback; else this host's address.
    if (const auto ifname = env("GLOO_SOCKET_IFNAME"))
      o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(*ifname));
    else if (loopback(e.master_addr))
      o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    c10::intrusive_ptr<c10d::Backend> b;
    try {
      b = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, e.rank, e.world_size, o);
    } catch (const std::exception& ex) {
      throw SetupError("rank " + std::to_string(e.rank) + ": Gloo could not connect the ranks within " +
                       secs + ": " + one_line(ex));
    }
    g.pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, b);
    g.pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  } else {
#if PIL_HAVE_C10D_NCCL
    // This rank's GPU (LOCAL_RANK) is the current device from here on, as PyTorch's
    // torch.cuda.set_device(local_rank) before init_process_group: NCCL's communicators and the
    // run's current stream are on it, not on device 0 for every rank of a machine of several GPUs.
    c10::intrusive_ptr<c10d::Backend> b;
    try {
      at::accelerator::setDeviceIndex(c10::DeviceIndex(e.local_rank));
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = timeout;
      b = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, e.rank, e.world_size, o);
    } catch (const std::exception& ex) {  // a GPU taken (exclusive mode), a bad NCCL_* variable
      throw SetupError("rank " + std::to_string(e.rank) + ": NCCL could not start on GPU " +
                       std::to_string(e.local_rank) + ": " + one_line(ex));
    }
    g.pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, b);
    g.pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
#else
    throw SetupError("--backend nccl: this build has no NCCL (a LibTorch with CUDA and nccl.h are needed); allowed: --backend gloo");
#endif
  }
  g.pg->setGroupName("0");
  the_group() = g;
  return g;
}

Group& group() {
  if (!the_group()) throw std::logic_error("pil::dist::group() before open_group()");
  return *the_group();
}

bool group_open() { return the_group().has_value(); }

[[noreturn]] void collective_failed(const std::string& what, const std::exception& e) {
  const Group& g = group();
  throw std::runtime_error("rank " + std::to_string(g.rank) + ": " + what + " failed after at most " +
                           std::to_string(g.timeout.count() / 1000) +
                           " s: another rank died or hung (" + to_string(g.backend) + ": " +
                           one_line(e) + ")");
}

void barrier(const std::string& what) {
  try {
    c10d::BarrierOptions o;
    o.timeout = group().timeout;
    group().pg->barrier(o)->wait();
  } catch (const std::exception& e) {
    collective_failed("barrier (" + what + ")", e);
  }
}

void test_failure_point() {
  static int calls = 0;
  ++calls;
  const auto spec = env("PIL_TEST_RANK_FAIL");
  if (!spec || !group_open()) return;
  // K:exit or K:hang, optionally :AT (the call at which it happens; default 2)
  std::istringstream s(*spec);
  std::string rank, mode, at = "2";
  std::getline(s, rank, ':');
  std::getline(s, mode, ':');
  std::getline(s, at, ':');
  if (rank != std::to_string(group().rank) || std::to_string(calls) != at) return;
  std::cout << "PIL_TEST_RANK_FAIL: rank " << rank << " " << (mode == "hang" ? "hangs" : "exits")
            << " now (call " << calls << ")" << std::endl;
  if (mode == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  std::_Exit(3);
}

std::string distributed_info_json() {
  const Group& g = group();
  std::ostringstream s;
  s << "{\"backend\": \"" << to_string(g.backend) << "\", \"rank\": " << g.rank
    << ", \"world_size\": " << g.size << ", \"pg_count\": 1, \"pil_run_id\": \"" << g.run_id << "\"}";
  return s.str();
}

}  // namespace pil::dist
