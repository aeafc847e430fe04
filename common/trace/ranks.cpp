#include "trace/ranks.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "trace/nesting.h"
#include "trace/parse/json_text.h"  // value_end
#include "trace/reports.h"
#include "trace/roofline_formulas.h"  // dtype_bytes
#include "trace/svg.h"
#include "trace/text_table.h"

namespace fs = std::filesystem;

namespace pil::trace {
namespace {

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

/// "gloo:all_reduce", "ncclDevKernel_AllReduce_Sum_f32", "allreduce" -> "allreduce..." lowercase
/// letters and digits only, the backend's prefix dropped: for pairing a slice with its arguments.
std::string normalized(std::string_view s) {
  for (std::string_view p : {"void (anonymous namespace)::", "symm_mem::"})  // symmetric memory's
    if (starts_with_ci(s, p)) s.remove_prefix(p.size());
  for (std::string_view p : {"gloo:", "nccl:", "nccldevkernel_", "ncclkernel_"})
    if (starts_with_ci(s, p)) {
      s.remove_prefix(p.size());
      break;
    }
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_exchange(std::string_view name) {
  if (is_expert_exchange_kernel(name)) return true;  // an expert-parallel all-to-all
  const std::string kind = normalized(name);
  return kind.find("alltoall") != std::string::npos || kind.find("sendrecv") != std::string::npos ||
         ((starts_with_ci(name, "gloo:") || starts_with_ci(name, "nccl:")) &&
          (kind.rfind("send", 0) == 0 || kind.rfind("recv", 0) == 0));
}

bool is_sharded(std::string_view name) {
  const std::string kind = normalized(name);
  return kind.find("allgather") != std::string::npos || kind.find("reducescatter") != std::string::npos;
}

/// What a collective's name says it is: an exchange, sharded, or neither (an all-reduce).
struct KindSaid {
  bool exchange = false, sharded = false;
  bool operator==(const KindSaid& o) const { return exchange == o.exchange && sharded == o.sharded; }
};
KindSaid kind_said(std::string_view name) {
  const bool exchange = is_exchange(name);
  return {exchange, !exchange && is_sharded(name)};
}

/// A backend's slice that names its collective ("nccl:all_reduce", "nccl:send 0->1"), not one
/// that groups several ("nccl:coalesced").
bool names_a_collective(std::string_view slice) {
  const std::string kind = normalized(slice);
  for (std::string_view k : {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "send",
                             "recv", "gather", "scatter", "barrier"})
    if (kind.rfind(k, 0) == 0) return true;
  return false;
}

/// A collective's name for a sentence: a kernel's without "void (anonymous namespace)::", its
/// template arguments and parameters ("multimem_all_reduce_kernel").
std::string short_name(std::string_view name) {
  for (std::string_view p : {"void ", "(anonymous namespace)::"})
    if (name.substr(0, p.size()) == p) name.remove_prefix(p.size());
  return std::string(name.substr(0, std::min(name.find('('), name.find('<'))));
}

int64_t comm_dtype_bytes(const std::string& t) {  // c10d's names: "Float"
  static const std::map<std::string, int64_t> sizes = {
      {"Float", 4}, {"Double", 8}, {"BFloat16", 2}, {"Half", 2}, {"Int", 4},  {"Long", 8},
      {"Short", 2}, {"Byte", 1},   {"Char", 1},     {"Bool", 1}, {"ComplexFloat", 8}};
  auto it = sizes.find(t);
  return it == sizes.end() ? -1 : it->second;
}

/// True when the text at `hit` is the value of a "name" key (`"name": "gloo:...`).
bool is_name_value(const std::string& s, size_t hit) {
  size_t i = hit;
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == ':')) --i;
  return i >= 6 && s.compare(i - 6, 6, "\"name\"") == 0;
}

/// The rank a file's name says ("...rank3..."), or else, for a file found in a folder per worker
/// (`in_worker_folder`: rank3/worker.pt.trace.json, as a tensorboard_trace_handler per rank
/// writes them), its folder's; -1 where neither. Only there: a lone trace in lora_rank8/ is no
/// rank 8.
int rank_from_name(const std::string& path, bool in_worker_folder = false) {
  static const std::regex re("rank[-_]?([0-9]+)", std::regex::icase);
  auto from = [](const std::string& name) {
    std::smatch m;
    int rank = -1;
    // A number too large for a rank ("rank3000000000") says no rank.
    if (std::regex_search(name, m, re) &&
        std::from_chars(name.data() + m.position(1), name.data() + m.position(1) + m.length(1), rank).ec !=
            std::errc())
      return -1;
    return rank;
  };
  const fs::path p(path);
  const int rank = from(p.filename().string());
  return rank >= 0 || !in_worker_folder ? rank : from(p.parent_path().filename().string());
}

std::string label_of(const RankProfile& p) { return fs::path(p.label).filename().string(); }

/// "a.json and b.json", by their paths where the names alone are the same (two folders'
/// rank0.json).
std::string two_labels(const RankProfile& a, const RankProfile& b) {
  if (label_of(a) != label_of(b)) return label_of(a) + " and " + label_of(b);
  return a.label + " and " + b.label;
}

}  // namespace

bool is_expert_exchange_kernel(std::string_view name) {
  // DeepEP's (deepseek-ai/DeepEP: namespace deep_ep; "dpsk::ep" in DeepSeek's own published
  // traces): its intranode (NVLink), internode (RDMA) and internode_ll (low-latency) kernels move
  // tokens between the experts' GPUs themselves: dispatch, combine and their notify kernels.
  // Its other kernels (deep_ep::layout's) compute.
  for (std::string_view ns : {"deep_ep::intranode::", "deep_ep::internode", "dpsk::ep::intranode::",
                              "dpsk::ep::internode"})
    if (name.find(ns) != std::string_view::npos)
      return name.find("clean_low_latency_buffer") == std::string_view::npos;  // zeroes its buffer, moves nothing
  return false;
}

bool is_comm_kernel(std::string_view name) {
  if (starts_with_ci(name, "nccl")) return true;
  if (is_expert_exchange_kernel(name)) return true;
  // torch's symmetric memory (torch.distributed._symmetric_memory: CUDASymmetricMemoryOps.cu),
  // whose kernels move data between GPUs themselves: "void (anonymous
  // namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(...)", one_shot_all_reduce_kernel,
  // two_shot_all_reduce_kernel(_inplace), multimem_one_shot_reduce_kernel, multimem_all_gather_kernel.
  constexpr std::string_view anon = "void (anonymous namespace)::";
  if (name.size() <= anon.size() || name.compare(0, anon.size(), anon) != 0) return false;
  const std::string_view rest = name.substr(anon.size());
  for (std::string_view k : {"multimem_all_reduce_kernel", "multimem_one_shot_reduce_kernel", "multimem_all_gather_kernel",
                             "one_shot_all_reduce_kernel", "two_shot_all_reduce_kernel"})
    if (rest.compare(0, k.size(), k) == 0) return true;
  return false;
}

bool is_comm_slice(std::string_view name) { return starts_with_ci(name, "gloo:") || is_comm_kernel(name); }

RankProfile rank_profile(const Trace& t, const std::vector<CommArgs>& args, const TraceIndex* given) {
  RankProfile p;
  const int64_t base = t.base_time_ns;
  for (const Event& e : t.events)
    if (is_device_work(e.category)) {
      p.gpu = true;
      break;
    }
  auto is_comm = [&](const Event& e) {
    return p.gpu ? is_device_work(e.category) && is_comm_kernel(e.name)
                 : e.category != Category::Memory && starts_with_ci(e.name, "gloo:");
  };
  // CPU traces: the backend's worker threads carry communication only.
  std::set<std::pair<int64_t, int64_t>> comm_threads;
  if (!p.gpu)
    for (const Event& e : t.events)
      if (is_comm(e)) comm_threads.insert({e.pid, e.tid});
  // A collective's call on a computing thread (the CPU issuing it, or blocked in it).
  auto is_comm_call = [&](const Event& e) {
    return !p.gpu && e.category == Category::CpuOp && !comm_threads.count({e.pid, e.tid}) &&
           (starts_with_ci(e.name, "record_param_comms") || starts_with_ci(e.name, "c10d::") ||
            starts_with_ci(e.name, "gloo:") || starts_with_ci(e.name, "nccl:"));
  };
  auto is_compute = [&](const Event& e) {
    if (p.gpu) return is_device_work(e.category) && !is_comm_kernel(e.name);
    return e.category == Category::CpuOp && !comm_threads.count({e.pid, e.tid}) && !is_comm_call(e);
  };
  // CPU traces, per thread: the operators' time less the collectives' calls made inside them.
  // A bucket's all-reduce starts from a gradient hook inside an operator (autograd's
  // AccumulateGrad); while the call blocks, the enclosing operator computes nothing.
  std::map<std::pair<int64_t, int64_t>, std::pair<std::vector<Interval>, std::vector<Interval>>> per_thread;

  std::vector<const Event*> comm_events;
  std::set<int64_t> step_pids;
  for (const Event& e : t.events) {
    if (is_step(e)) {
      step_pids.insert(e.pid);
      RankStep s;
      s.number = step_number(e.name);
      s.start_ns = base + e.start_ns;
      s.dur_ns = e.dur_ns;
      p.steps.push_back(s);
    } else if (is_comm(e)) {
      comm_events.push_back(&e);
      p.comm.push_back({base + e.start_ns, base + e.end_ns()});
    } else if (is_compute(e)) {
      if (p.gpu)
        p.compute.push_back({base + e.start_ns, base + e.end_ns()});
      else
        per_thread[{e.pid, e.tid}].first.push_back({base + e.start_ns, base + e.end_ns()});
    } else if (is_comm_call(e)) {
      per_thread[{e.pid, e.tid}].second.push_back({base + e.start_ns, base + e.end_ns()});
    }
  }
  p.step_processes = step_pids.size();
  if (step_pids.size() == 1) p.step_pid = *step_pids.begin();
  std::sort(p.steps.begin(), p.steps.end(),
            [](const RankStep& a, const RankStep& b) { return a.start_ns < b.start_ns; });
  if (p.steps.empty() && !t.events.empty()) {
    // No ProfilerStep ranges (a script that profiled one call): the whole trace is one step, as
    // the one-trace reports take it.
    int64_t from = INT64_MAX, to = INT64_MIN;
    for (const Event& e : t.events)  // as TraceIndex's window: not the profiler's own span
      if (e.category != Category::Other) from = std::min(from, e.start_ns), to = std::max(to, e.end_ns());
    if (from > to) from = to = 0;
    RankStep s;
    s.start_ns = base + from;
    s.dur_ns = to - from;
    p.steps.push_back(s);
    p.whole_trace = true;
  }
  for (auto& [thread, work] : per_thread) {
    merge(work.first);
    merge(work.second);
    const auto busy = subtract(work.first, work.second);
    p.compute.insert(p.compute.end(), busy.begin(), busy.end());
  }
  merge(p.compute);
  merge(p.comm);

  // Collectives in start order, each paired with the next unused arguments of the same kind.
  std::sort(comm_events.begin(), comm_events.end(),
            [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  // The backend's slices pair by their start as written; record_param_comms in issue order.
  std::map<std::pair<int64_t, std::string>, int64_t> by_start;
  std::vector<const CommArgs*> ordered;
  for (const CommArgs& a : args) {
    if (a.ts_ns != INT64_MIN) by_start[{a.ts_ns, a.collective}] = a.bytes;
    else ordered.push_back(&a);
  }
  // On a GPU, the backend's slice a kernel was launched from (the innermost "nccl:" or "gloo:"
  // slice around its launch call on the launch's thread): torch 2.0-2.2's traces give the sizes
  // there only.
  std::unordered_map<const Event*, const Event*> launched_in;
  if (p.gpu) {
    std::unordered_map<uint64_t, const Event*> kernel_of;  // correlation -> the NCCL kernel
    for (const Event* e : comm_events)
      if (e->correlation) kernel_of.emplace(e->correlation, e);
    std::map<std::pair<int64_t, int64_t>, std::vector<const Event*>> slices;  // per thread
    for (const Event& e : t.events)
      if (is_torch_scope(e.category) && (starts_with_ci(e.name, "nccl:") || starts_with_ci(e.name, "gloo:")))
        slices[{e.pid, e.tid}].push_back(&e);
    for (auto& [thread, v] : slices)  // nesting order: an outer slice before those inside it
      std::stable_sort(v.begin(), v.end(), [](const Event* a, const Event* b) { return nests_before(*a, *b); });
    for (const Event& call : t.events) {
      if (!is_launch_call(call.category) || !call.correlation) continue;
      const auto k = kernel_of.find(call.correlation);
      const auto v = k == kernel_of.end() ? slices.end() : slices.find({call.pid, call.tid});
      if (v == slices.end()) continue;
      // The innermost slice around the call: of those starting at or before it, the last that
      // also ends after it (one that ended before the call, inside an outer one, is passed).
      auto it = std::upper_bound(v->second.begin(), v->second.end(), call.start_ns,
                                 [](int64_t ts, const Event* e) { return ts < e->start_ns; });
      while (it != v->second.begin() && (*std::prev(it))->end_ns() < call.end_ns()) --it;
      if (it != v->second.begin()) launched_in[k->second] = *std::prev(it);
    }
  }
  // The step each GPU item belongs to, on a GPU with steps: the one whose CPU range launched it
  // (TraceIndex::step_of_work). The GPU runs behind the CPU: a step's range on the clock holds
  // the previous step's kernels and loses its own last ones, and work launched before recording
  // began (an earlier step's, still running) is in no step. As an index into p.steps, or -1.
  std::unique_ptr<TraceIndex> own;
  const TraceIndex* index = nullptr;
  std::vector<long> step_slot;  // index.steps[k] -> its place in p.steps
  if (p.gpu && !p.whole_trace) {
    if (!given) own = std::make_unique<TraceIndex>(t);
    index = given ? given : own.get();
    std::map<int64_t, size_t> by_start;
    for (size_t k = 0; k < p.steps.size(); ++k) by_start.emplace(p.steps[k].start_ns, k);
    for (size_t s : index->steps) {
      const auto it = by_start.find(base + t.events[s].start_ns);
      step_slot.push_back(it == by_start.end() ? -1 : long(it->second));
    }
  }
  auto launched_in_step = [&](const Event* e) -> long {
    const size_t i = size_t(e - t.events.data());
    if (index->launched_before_recording(i)) return -1;
    const long s = index->step_of_work(i);
    return s < 0 ? -1 : step_slot[size_t(s)];
  };
  size_t next_arg = 0;
  for (const Event* e : comm_events) {
    Collective c;
    c.name = std::string(e->name);
    c.start_ns = base + e->start_ns;
    c.dur_ns = e->dur_ns;
    const std::string kind = normalized(e->name);
    // What the collective is: the backend's slice around its launch says where there is one
    // (NCCL runs some all-reduces as SendRecv kernels: an A100 TorchRec trace's DDP all-reduces,
    // under nccl:all_reduce, read as all-to-all), else the kernel's name.
    const auto around = launched_in.find(e);
    const std::string_view says = around != launched_in.end() && names_a_collective(around->second->name)
                                      ? std::string_view(around->second->name)
                                      : std::string_view(e->name);
    const KindSaid said = kind_said(says);
    c.exchange = said.exchange;
    c.sharded = said.sharded;
    if (says.data() != e->name.data() && !(said == kind_said(e->name))) c.kind_from = std::string(says);
    const auto exact = by_start.find({e->start_ns, c.name});
    if (exact != by_start.end()) c.bytes = exact->second;
    for (size_t k = next_arg; c.bytes < 0 && k < ordered.size() && k < next_arg + 8; ++k) {
      const std::string want = normalized(ordered[k]->collective);
      if (!want.empty() && kind.rfind(want, 0) == 0) {
        c.bytes = ordered[k]->bytes;
        next_arg = k + 1;
        break;
      }
    }
    if (const auto in = launched_in.find(e); c.bytes < 0 && in != launched_in.end()) {
      const auto slice = by_start.find({in->second->start_ns, std::string(in->second->name)});
      if (slice != by_start.end()) c.bytes = slice->second;
    }
    c.event = size_t(e - t.events.data());
    if (index) {
      const long k = launched_in_step(e);
      if (k >= 0) {
        c.step = p.steps[size_t(k)].number;
        ++p.steps[size_t(k)].collectives;
      }
    } else {
      auto it = std::upper_bound(p.steps.begin(), p.steps.end(), c.start_ns,
                                 [](int64_t x, const RankStep& s) { return x < s.start_ns; });
      if (it != p.steps.begin() && c.start_ns < std::prev(it)->start_ns + std::prev(it)->dur_ns) {
        c.step = std::prev(it)->number;
        ++std::prev(it)->collectives;
      }
    }
    p.collectives.push_back(std::move(c));
  }

  if (index) {  // each step's own GPU work, wherever on the clock it ran
    std::vector<std::vector<Interval>> compute_of(p.steps.size()), comm_of(p.steps.size());
    for (size_t i : index->device_work()) {
      const Event& e = t.events[i];
      const long k = launched_in_step(&e);
      if (k < 0) continue;
      (is_comm(e) ? comm_of : compute_of)[size_t(k)].push_back({base + e.start_ns, base + e.end_ns()});
    }
    std::vector<Interval> compute_in, comm_in;
    for (size_t k = 0; k < p.steps.size(); ++k) {
      RankStep& s = p.steps[k];
      merge(compute_of[k]);
      merge(comm_of[k]);
      s.compute_ns = length(compute_of[k]);
      s.comm_ns = length(comm_of[k]);
      s.overlap_ns = overlap(compute_of[k], comm_of[k]);
      compute_in.insert(compute_in.end(), compute_of[k].begin(), compute_of[k].end());
      comm_in.insert(comm_in.end(), comm_of[k].begin(), comm_of[k].end());
    }
    merge(compute_in);
    merge(comm_in);
    p.compute = std::move(compute_in);
    p.comm = std::move(comm_in);
    p.step_compute = std::move(compute_of);
    return p;
  }

  // Unions inside each step; the picture keeps only what lies inside steps.
  std::vector<Interval> compute_in, comm_in;
  for (RankStep& s : p.steps) {
    const auto c = clip(p.compute, s.start_ns, s.start_ns + s.dur_ns);
    const auto m = clip(p.comm, s.start_ns, s.start_ns + s.dur_ns);
    s.compute_ns = length(c);
    s.comm_ns = length(m);
    s.overlap_ns = overlap(c, m);
    compute_in.insert(compute_in.end(), c.begin(), c.end());
    comm_in.insert(comm_in.end(), m.begin(), m.end());
  }
  if (!p.steps.empty()) {
    p.compute = std::move(compute_in);
    p.comm = std::move(comm_in);
  }
  return p;
}

void scan_rank_file(const std::string& path, RankIdentity& id, std::vector<CommArgs>& args) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw ParseError(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(f, 1 << 20);
  // The backend's slices: Gloo's ("gloo:all_reduce"), and NCCL's in torch 2.0-2.2's traces, whose
  // record_param_comms carries no sizes ("nccl:all_reduce", around the launch of its kernel).
  static const std::string kInfo = "\"distributedInfo\"", kComms = "\"record_param_comms\"",
                           kGloo = "\"gloo:", kNccl = "\"nccl:";
  std::string buf;
  size_t pos = 0;  // where the search for the next hit resumes
  bool eof = false, have_info = false;
  std::vector<char> chunk(size_t(4) << 20);
  while (!eof) {
    const int n = gzread(f, chunk.data(), unsigned(chunk.size()));
    if (n < 0) {
      int code = 0;
      const std::string msg = gzerror(f, &code);
      gzclose(f);
      throw ParseError(path + ": read error: " + msg);
    }
    eof = n == 0;
    buf.append(chunk.data(), size_t(n));
    // The next place of each needle at or after `pos` (kUnknown: search again); a needle absent
    // from the rest of the buffer is not searched again until more text comes.
    constexpr size_t kUnknown = std::string::npos - 1;
    size_t next[4] = {kUnknown, kUnknown, kUnknown, kUnknown};
    const std::string* needles[4] = {&kComms, &kGloo, &kInfo, &kNccl};
    for (;;) {
      for (int k = 0; k < 4; ++k)
        if (next[k] == kUnknown || (next[k] != std::string::npos && next[k] < pos)) {
          const void* at = pos < buf.size() ? memmem(buf.data() + pos, buf.size() - pos, needles[k]->data(),
                                                     needles[k]->size())
                                            : nullptr;
          next[k] = at ? size_t(static_cast<const char*>(at) - buf.data()) : std::string::npos;
        }
      const size_t comms = next[0], info = have_info ? std::string::npos : next[2];
      const size_t gloo = std::min(next[1], next[3]);  // a backend's slice, Gloo's or NCCL's
      const size_t hit = std::min({comms, info, gloo});
      if (hit == std::string::npos) {
        pos = buf.size() > kComms.size() ? buf.size() - kComms.size() : 0;
        break;
      }
      if (hit == gloo && !is_name_value(buf, hit)) {
        pos = hit + kGloo.size();  // as long as kNccl
        continue;
      }
      size_t open = std::string::npos;
      if (hit == info) {
        // Its value, after the colon: an object, or the header says no rank.
        size_t v = buf.find_first_not_of(" \t\r\n", hit + kInfo.size());
        if (v != std::string::npos && buf[v] == ':') v = buf.find_first_not_of(" \t\r\n", v + 1);
        if (v == std::string::npos && !eof) break;  // wait for more text
        if (v == std::string::npos || buf[v] != '{') {
          have_info = true;
          id.info_problem = "is not an object";
          pos = hit + kInfo.size();
          continue;
        }
        open = v;
      } else {
        const size_t a = buf.find("\"args\"", hit), ph = buf.find("\"ph\"", hit);
        if (a == std::string::npos && !eof) break;           // its args may come in the next chunk
        if (a == std::string::npos || (ph != std::string::npos && ph < a)) {  // an event without args
          pos = hit + kComms.size();
          continue;
        }
        open = buf.find('{', a);
      }
      const size_t end = open == std::string::npos ? std::string::npos : detail::value_end(buf, open);
      if (end == std::string::npos) {
        if (!eof) break;  // wait for more text
        pos = hit + 1;    // a truncated file: the parser says so
        continue;
      }
      const nlohmann::json j = nlohmann::json::parse(buf.begin() + long(open), buf.begin() + long(end),
                                                     nullptr, /*allow_exceptions=*/false);
      if (j.is_object()) {
        if (hit == info) {
          have_info = true;
          // A rank and a world size are whole numbers below a million (compare_ranks checks the
          // rank against the size); a world size that is not one is left unknown.
          auto whole = [&](const char* key, int& out) {
            if (!j.contains(key)) return std::string("has no \"") + key + "\"";
            const auto& v = j[key];
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= 1'000'000)
              return std::string("has \"") + key + "\": " + v.dump().substr(0, 40) + ", not a whole number from 0 to 999999";
            out = int(v.get<int64_t>());
            return std::string();
          };
          id.info_problem = whole("rank", id.rank);
          if (!id.info_problem.empty()) id.rank = -1;
          int size = -1;
          if (whole("world_size", size).empty() && size > 0) id.world_size = size;
          if (j.contains("backend") && j["backend"].is_string()) id.backend = j["backend"].get<std::string>();
          if (j.contains("pil_run_id") && j["pil_run_id"].is_string())
            id.run_id = j["pil_run_id"].get<std::string>();
        } else if (hit == gloo) {
          // The slice's own arguments: its tensors' sizes and types; its start pairs it.
          CommArgs c;
          const size_t name_end = buf.find('"', hit + 1);
          c.collective = buf.substr(hit + 1, name_end - hit - 1);
          const size_t ts = buf.find("\"ts\"", hit);
          if (ts != std::string::npos && ts < open) {
            size_t a = buf.find_first_not_of(" :", ts + 4), b = buf.find_first_of(",} \n", a);
            int64_t ns = 0;
            if (a != std::string::npos && b != std::string::npos &&
                microseconds_text_to_ns(std::string_view(buf).substr(a, b - a), ns))
              c.ts_ns = ns;
          }
          if (j.contains("Input Dims") && j["Input Dims"].is_array() && j.contains("Input type") &&
              j["Input type"].is_array()) {
            int64_t bytes = 0;
            const auto& dims = j["Input Dims"];
            const auto& types = j["Input type"];
            for (size_t k = 0; k < dims.size() && k < types.size(); ++k) {
              if (!dims[k].is_array() || !types[k].is_string()) continue;
              const int64_t size = dtype_bytes(types[k].get<std::string>());
              if (size <= 0 || dims[k].empty()) continue;
              int64_t n = 1;
              for (const auto& d : dims[k]) n *= d.is_number_integer() ? d.get<int64_t>() : 0;
              bytes += n * size;
            }
            if (bytes > 0) c.bytes = bytes;
          }
          if (c.ts_ns != INT64_MIN) args.push_back(std::move(c));
        } else {
          CommArgs c;
          if (j.contains("Collective name") && j["Collective name"].is_string())
            c.collective = j["Collective name"].get<std::string>();
          if (j.contains("In msg nelems") && j["In msg nelems"].is_number_integer() &&
              j.contains("dtype") && j["dtype"].is_string()) {
            const int64_t size = comm_dtype_bytes(j["dtype"].get<std::string>());
            if (size > 0) c.bytes = j["In msg nelems"].get<int64_t>() * size;
          }
          args.push_back(std::move(c));
        }
      } else if (hit == info) {
        have_info = true;
        id.info_problem = "is not valid JSON";
      }
      pos = end;
    }
    // Keep from the first unfinished hit (or the tail a needle may straddle) on.
    const size_t keep = std::min(pos, buf.size());
    buf.erase(0, keep);
    pos -= keep;
  }
  gzclose(f);
}

int64_t StepAcross::max_wait_ns() const {
  int64_t m = 0;
  for (size_t r = 0; r < wait_ns.size(); ++r)
    if (int(r) != slowest) m = std::max(m, wait_ns[r]);
  return m;
}

namespace {

/// Each step's collectives (by step number), in the profile's order: looked up per step, not
/// searched for in every collective of the run.
std::unordered_map<int64_t, std::vector<const Collective*>> collectives_by_step(const RankProfile& p) {
  std::unordered_map<int64_t, std::vector<const Collective*>> by;
  for (const Collective& c : p.collectives) by[c.step].push_back(&c);
  return by;
}

const std::vector<const Collective*>& of_step(
    const std::unordered_map<int64_t, std::vector<const Collective*>>& by, int64_t step) {
  static const std::vector<const Collective*> kNone;
  const auto it = by.find(step);
  return it == by.end() ? kNone : it->second;
}

}  // namespace

RanksReport compare_ranks(std::vector<RankProfile> ranks) {
  if (ranks.empty()) throw RanksError("no traces given; allowed: one trace file per rank, or a folder of them");
  // One run: the same world size and run id everywhere, each rank once, none missing.
  int world = -1;
  const RankProfile* world_from = nullptr;
  bool single_process = false;
  if (ranks.size() == 1 && ranks[0].id.rank < 0) {  // one process: rank 0 of 1, and said
    ranks[0].id.rank = 0;
    ranks[0].id.world_size = 1;
    single_process = true;
  }
  for (const RankProfile& p : ranks) {
    if (p.step_processes > 1)
      throw RanksError(label_of(p) + ": steps recorded by " + std::to_string(p.step_processes) +
                       " processes: several ranks' traces merged into one file (as TraceLens's "
                       "TraceFusion writes them); allowed: each rank's own trace, as the profiler wrote it");
    if (p.id.rank < 0)
      throw RanksError(p.label + ": cannot tell which rank this is (" +
                       (p.id.info_problem.empty() ? "no distributedInfo in the trace, "
                                                  : "its distributedInfo " + p.id.info_problem + "; ") +
                       "no 'rank<k>' in its name: not a rank of a torch.distributed run?); allowed: "
                       "one trace per rank of one run, each with the distributedInfo torch.profiler "
                       "writes once torch.distributed is initialized (the lessons' ranks too), or "
                       "files named ...rank<k>...; one trace alone reads as rank 0 of 1");
    if (p.id.world_size > 0) {
      if (world_from && p.id.world_size != world)
        throw RanksError("ranks of different runs: " + label_of(*world_from) + " has world_size " +
                         std::to_string(world) + ", " + label_of(p) + " has " +
                         std::to_string(p.id.world_size) + "; allowed: the traces of one run");
      world = p.id.world_size;
      world_from = &p;
    }
  }
  if (world < 0) world = int(ranks.size());
  for (const RankProfile& a : ranks)
    for (const RankProfile& b : ranks)
      if (&a < &b && !a.id.run_id.empty() && !b.id.run_id.empty() && a.id.run_id != b.id.run_id)
        throw RanksError("ranks of different runs: " + label_of(a) + " (run " + a.id.run_id + ") and " +
                         label_of(b) + " (run " + b.id.run_id + "); allowed: the traces of one run");
  std::vector<RankProfile*> by_rank(size_t(world), nullptr);
  for (RankProfile& p : ranks) {
    if (p.id.rank >= world)
      throw RanksError(label_of(p) + ": rank " + std::to_string(p.id.rank) + " but the run has " +
                       std::to_string(world) + " ranks (0 to " + std::to_string(world - 1) + ")");
    if (by_rank[size_t(p.id.rank)] && by_rank[size_t(p.id.rank)]->label == p.label)
      throw RanksError(p.label + ": given twice; allowed: each rank's trace once");
    if (by_rank[size_t(p.id.rank)]) {
      // Two in one folder: a worker's folder over several profiling cycles (a tensorboard
      // trace handler writes one file a cycle).
      const bool one_folder = fs::path(by_rank[size_t(p.id.rank)]->label).parent_path() == fs::path(p.label).parent_path();
      throw RanksError(two_labels(*by_rank[size_t(p.id.rank)], p) + " are both rank " +
                       std::to_string(p.id.rank) +
                       (one_folder ? " (two profiling cycles of one worker, or two runs or variants, in one folder?)"
                                   : " (traces of two runs or two variants?)") +
                       "; allowed: each rank once: give one trace per rank");
    }
    by_rank[size_t(p.id.rank)] = &p;
  }
  // One trace under two names (copied as rank0 and rank1): two ranks are two processes, whose
  // steps, computation and communication never start and end at the same nanoseconds, every one.
  auto same_steps = [](const RankProfile& a, const RankProfile& b) {
    if (a.step_pid != b.step_pid || a.steps.empty() || a.steps.size() != b.steps.size()) return false;
    for (size_t k = 0; k < a.steps.size(); ++k)
      if (a.steps[k].start_ns != b.steps[k].start_ns || a.steps[k].dur_ns != b.steps[k].dur_ns) return false;
    auto same = [](const std::vector<Interval>& x, const std::vector<Interval>& y) {
      return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                        [](const Interval& i, const Interval& j) { return i.from == j.from && i.to == j.to; });
    };
    return same(a.compute, b.compute) && same(a.comm, b.comm);
  };
  for (const RankProfile& a : ranks)
    for (const RankProfile& b : ranks)
      if (&a < &b && same_steps(a, b))
        throw RanksError(two_labels(a, b) + " hold the same trace (" +
                         (a.steps.size() == 1 ? std::string("its step starts and ends")
                                              : "all " + std::to_string(a.steps.size()) + " of their steps start and end") +
                         " at the same nanosecond: one rank's trace given twice, under two names?); allowed: each "
                         "rank's own trace once");
  RanksReport out;
  out.world_size = world;
  out.single_process = single_process;
  for (int r = 0; r < world; ++r) {
    if (by_rank[size_t(r)]) out.ranks.push_back(std::move(*by_rank[size_t(r)]));
    else out.missing.push_back(r);
  }
  // The same steps everywhere.
  std::vector<int64_t> numbers;
  for (const RankStep& s : out.ranks[0].steps) numbers.push_back(s.number);
  for (const RankProfile& p : out.ranks) {
    std::vector<int64_t> mine;
    for (const RankStep& s : p.steps) mine.push_back(s.number);
    if (mine != numbers || p.whole_trace != out.ranks[0].whole_trace) {
      auto span = [](const RankProfile& q) {
        if (q.whole_trace) return std::string("no ProfilerStep ranges");
        if (q.steps.empty()) return std::string("none");
        return std::to_string(q.steps.size()) + " (#" + std::to_string(q.steps.front().number) + " to #" +
               std::to_string(q.steps.back().number) + ")";
      };
      throw RanksError("ranks of different runs: " + label_of(out.ranks[0]) + " recorded steps " +
                       span(out.ranks[0]) + ", " + label_of(p) + " " + span(p) +
                       "; allowed: the traces of one run");
    }
  }
  // Whole traces (no ProfilerStep ranges) are compared by their collectives only: how long each
  // rank recorded is no wait, and when it began recording no clock.
  const bool whole = out.ranks[0].whole_trace;

  // Per step: match the k-th collective of the step across ranks; who started last.
  const size_t n = out.ranks.size();
  std::vector<std::unordered_map<int64_t, std::vector<const Collective*>>> by_step;
  for (const RankProfile& p : out.ranks) by_step.push_back(collectives_by_step(p));
  for (size_t si = 0; si < numbers.size(); ++si) {
    StepAcross s;
    s.number = numbers[si];
    s.dur_ns.resize(n);
    s.wait_ns.assign(n, 0);
    std::vector<const std::vector<const Collective*>*> colls(n);
    size_t matched = SIZE_MAX;
    for (size_t r = 0; r < n; ++r) {
      s.dur_ns[r] = out.ranks[r].steps[si].dur_ns;
      colls[r] = &of_step(by_step[r], s.number);
      matched = std::min(matched, colls[r]->size());
    }
    s.matched_collectives = int64_t(matched);
    // Matched by order: say where the k-th is not the same collective everywhere.
    {
      std::string note;
      auto what = [](const Collective& c) {
        return short_name(c.name) + (c.bytes >= 0 ? " of " + std::to_string(c.bytes) + " bytes" : "");
      };
      for (size_t k = 0; k < matched && note.empty(); ++k) {
        const Collective& a = *(*colls[0])[k];
        for (size_t r = 1; r < n && note.empty(); ++r) {
          const Collective& b = *(*colls[r])[k];
          // Sizes only for reductions: an all-to-all's split is each rank's own.
          if (normalized(a.name) != normalized(b.name) ||
              (!a.exchange && a.bytes >= 0 && b.bytes >= 0 && a.bytes != b.bytes))
            note = "collective " + std::to_string(k + 1) + " is " + what(a) + " on rank " +
                   std::to_string(out.rank_of(0)) + ", " + what(b) + " on rank " + std::to_string(out.rank_of(r));
        }
      }
      for (size_t r = 1; r < n && note.empty(); ++r)
        if (colls[r]->size() != colls[0]->size())
          note = std::to_string(colls[0]->size()) + " collectives on rank " + std::to_string(out.rank_of(0)) + ", " +
                 std::to_string(colls[r]->size()) + " on rank " + std::to_string(out.rank_of(r)) +
                 ": the first " + std::to_string(matched) + " matched";
      if (!note.empty())
        out.match_notes.push_back((whole ? std::string("the trace") : "step #" + std::to_string(s.number)) + ": " +
                                  note + " (collectives are matched by their order in the step: events "
                                  "dropped from a trace, or ranks that ran different collectives, make its "
                                  "waits compare unlike things)");
    }
    if (whole && matched == 0) continue;  // nothing to compare
    if (matched > 0) {
      for (size_t k = 0; k < matched; ++k) {
        int64_t last = (*colls[0])[k]->start_ns;
        for (size_t r = 1; r < n; ++r) last = std::max(last, (*colls[r])[k]->start_ns);
        for (size_t r = 0; r < n; ++r)
          s.wait_ns[r] += std::min(last - (*colls[r])[k]->start_ns, (*colls[r])[k]->dur_ns);
      }
      s.slowest = 0;
      for (size_t r = 1; r < n; ++r)
        if (s.wait_ns[r] < s.wait_ns[size_t(s.slowest)]) s.slowest = int(r);
    } else {  // no collectives to read: the longest step, and the others' shortfall
      s.slowest = 0;
      for (size_t r = 1; r < n; ++r)
        if (s.dur_ns[r] > s.dur_ns[size_t(s.slowest)]) s.slowest = int(r);
      for (size_t r = 0; r < n; ++r) s.wait_ns[r] = s.dur_ns[size_t(s.slowest)] - s.dur_ns[r];
    }
    out.steps.push_back(std::move(s));
  }
  // Clocks: a rank whose steps start, by the median over the steps, more than half a median
  // step away from the median rank's start (absolute times: baseTimeNanoseconds + ts).
  if (n > 1 && !numbers.empty() && !whole) {
    std::vector<int64_t> all_steps;
    for (const RankProfile& p : out.ranks)
      for (const RankStep& st : p.steps) all_steps.push_back(st.dur_ns);
    std::nth_element(all_steps.begin(), all_steps.begin() + ptrdiff_t(all_steps.size() / 2), all_steps.end());
    const int64_t step_ns = all_steps[all_steps.size() / 2];
    std::vector<int64_t> offset(n, 0);  // median over the steps of (start - the steps' median start)
    for (size_t r = 0; r < n; ++r) {
      std::vector<int64_t> d;
      for (size_t si = 0; si < numbers.size(); ++si) {
        std::vector<int64_t> starts;
        for (size_t q = 0; q < n; ++q) starts.push_back(out.ranks[q].steps[si].start_ns);
        std::nth_element(starts.begin(), starts.begin() + ptrdiff_t(n / 2), starts.end());
        d.push_back(out.ranks[r].steps[si].start_ns - starts[n / 2]);
      }
      std::nth_element(d.begin(), d.begin() + ptrdiff_t(d.size() / 2), d.end());
      offset[r] = d[d.size() / 2];
      // Further off than its whole recorded window is long: its steps and the others' never ran
      // at the same time, which one run's clocks on one machine do not do.
      const RankProfile& p = out.ranks[r];
      const int64_t window = p.steps.back().start_ns + p.steps.back().dur_ns - p.steps.front().start_ns;
      if (std::abs(offset[r]) > window)
        out.clock_notes.push_back("rank " + std::to_string(out.rank_of(r)) + "'s steps start " +
                                  format_duration(std::abs(offset[r])) +
                                  (offset[r] > 0 ? " after" : " before") +
                                  " the others', more than its whole recorded window (" +
                                  format_duration(window) +
                                  "): not one run's ranks (another run, or another profiling "
                                  "window), or clocks of machines not synchronized; the waits "
                                  "across ranks compare unlike things");
      else if (std::abs(offset[r]) * 2 > step_ns)
        out.clock_notes.push_back("rank " + std::to_string(out.rank_of(r)) + "'s steps start " +
                                  grouped(offset[r]) + " ns from the others' (median step " +
                                  grouped(step_ns) + " ns): its clock disagrees, or it ran behind; "
                                  "the waits across ranks are not to be trusted");
    }
  }
  return out;
}

RanksReport read_ranks(const std::vector<std::string>& paths, unsigned threads) {
  std::vector<std::string> files;
  std::set<std::string> in_worker_folder;  // the files found in a folder per worker
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      auto list = [&](const fs::path& folder) {
        std::error_code list_ec;
        for (const auto& entry : fs::directory_iterator(folder, list_ec)) {
          const std::string name = entry.path().filename().string();
          auto ends = [&](const std::string& s) {
            return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
          };
          // Files only: a FIFO named rank1.json would hold the read up forever.
          std::error_code kind;
          if ((ends(".json") || ends(".json.gz")) && !ends(".summary.json") && entry.is_regular_file(kind))
            found.push_back(entry.path().string());
        }
      };
      list(p);
      // None in it: a folder per worker (run/rank0/..., run/rank1/...), one level down.
      const bool per_worker = found.empty();
      if (per_worker) {
        for (const auto& entry : fs::directory_iterator(p, ec)) {
          std::error_code kind;
          if (entry.is_directory(kind)) list(entry.path());
        }
        in_worker_folder.insert(found.begin(), found.end());
      }
      std::sort(found.begin(), found.end());
      // Where some names say their rank, only those: other JSON files beside them are not ranks.
      auto no_rank = [&](const std::string& f) { return rank_from_name(f, per_worker) < 0; };
      if (!std::all_of(found.begin(), found.end(), no_rank))
        found.erase(std::remove_if(found.begin(), found.end(), no_rank), found.end());
      if (found.empty())
        throw RanksError(p + ": no trace files (*.json, *.json.gz) in this folder or the folders in it");
      files.insert(files.end(), found.begin(), found.end());
    } else if (!fs::exists(p, ec)) {
      throw ParseError(p + ": no such file or folder");
    } else {
      files.push_back(p);
    }
  }
  std::vector<RankProfile> profiles(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  // `threads` is every thread the read may use, as for one file: files are read at once up to
  // that many, and the threads left over are shared among them (2 files on 8 cores: 4 each).
  if (threads == 0) threads = usable_cores();
  const unsigned at_once = std::max(1u, std::min<unsigned>(threads, unsigned(files.size())));
  ParseOptions per_file;
  per_file.threads = std::max(1u, threads / at_once);
  threads = at_once;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < files.size();) {
      try {
        RankIdentity id;
        std::vector<CommArgs> args;
        scan_rank_file(files[i], id, args);
        RankProfile p;
        {
          const Trace t = parse_trace_file(files[i], per_file);  // released once its profile is made
          p = rank_profile(t, args);
          p.skipped = t.skipped;
          p.unread = t.unread;
        }
        p.label = files[i];
        p.id = id;
        if (p.id.rank < 0) p.id.rank = rank_from_name(files[i], in_worker_folder.count(files[i]) > 0);
        profiles[i] = std::move(p);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return compare_ranks(std::move(profiles));
}

namespace {
int64_t median(std::vector<int64_t> v) { return median_ns(std::move(v)); }  // as every report's
std::string pct(int64_t part, int64_t whole) { return whole > 0 ? fixed(100.0 * double(part) / double(whole)) : "-"; }
}  // namespace

std::string format_ranks(const RanksReport& r) {
  std::ostringstream o;
  const RankProfile& r0 = r.ranks.front();
  if (r.single_process)
    o << "one process: " << (r0.id.info_problem.empty() ? "no distributedInfo" : "no rank in the distributedInfo")
      << " in " << label_of(r0) << ", read as rank 0 of 1"
      << (r0.id.info_problem.empty() ? "" : " (it " + r0.id.info_problem + ")") << "\n";
  if (r.partial()) {
    // Runs of three or more as "first–last" (two of a 128-rank run's traces: 126 numbers).
    std::string missing;
    for (size_t k = 0; k < r.missing.size();) {
      size_t end = k;
      while (end + 1 < r.missing.size() && r.missing[end + 1] == r.missing[end] + 1) ++end;
      missing += (missing.empty() ? "" : ", ") + std::to_string(r.missing[k]);
      if (end - k >= 2) missing += "–" + std::to_string(r.missing[end]);
      else if (end > k) missing += ", " + std::to_string(r.missing[end]);
      k = end + 1;
    }
    o << "missing rank " << missing << " of " << r.world_size
      << (r.missing.size() > 3 ? " (" + std::to_string(r.missing.size()) + " ranks)" : std::string()) << ": PARTIAL — the slowest rank and "
      << "the waits are among the " << r.ranks.size() << " ranks given only\n";
  }
  for (const std::string& note : r.clock_notes) o << "clocks: " << note << "\n";
  for (const std::string& note : r.match_notes) o << "matching: " << note << "\n";
  // The steps each rank recorded (every rank the same ones): r.steps holds only those compared
  // across ranks, and a whole trace with no collectives compares none.
  const size_t recorded = r0.steps.size();
  o << counted(static_cast<long long>(r.ranks.size()), "rank")
    << (r.partial() ? " of " + std::to_string(r.world_size) : "")
    << (r0.id.backend.empty() ? "" : ", backend " + r0.id.backend) << ", "
    << counted(static_cast<long long>(recorded), "step")
    << (std::any_of(r.ranks.begin(), r.ranks.end(), [](const RankProfile& p) { return p.whole_trace; })
            ? " (no ProfilerStep ranges: a rank's whole trace is its step 0)"
            : "")
    << "; communication read from "
    << (r0.gpu ? "NCCL kernels (nccl*), symmetric memory's and DeepEP's, computation from the other GPU work"
               : "the backend's slices (gloo:*), computation from the operators on the threads that run none")
    << "\nper rank, medians over the steps (ns):\n";
  TextTable ranks({"Rank", "Step", "Compute", "Comm", "Overlap", "Exposed comm", "Hidden (%)",
                   "Collectives/step", "Bytes/step", "Trace"});
  bool past_step = false;  // a step's work, on a GPU, longer than its range
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankProfile& p = r.ranks[i];
    const auto by_step = collectives_by_step(p);
    std::vector<int64_t> step, compute, comm, both, exposed, colls, bytes;
    for (const RankStep& s : p.steps) {
      step.push_back(s.dur_ns), compute.push_back(s.compute_ns), comm.push_back(s.comm_ns);
      both.push_back(s.overlap_ns), exposed.push_back(s.exposed_comm_ns()), colls.push_back(s.collectives);
      int64_t b = 0;
      for (const Collective* c : of_step(by_step, s.number))
        if (c->bytes > 0) b += c->bytes;
      bytes.push_back(b);
    }
    const int64_t m_comm = median(comm), m_both = median(both);
    ranks.add({std::to_string(r.rank_of(i)), grouped(median(step)), grouped(median(compute)), grouped(m_comm),
               grouped(m_both), grouped(median(exposed)), pct(m_both, m_comm), grouped(median(colls)),
               median(bytes) > 0 ? format_bytes(median(bytes)) : "-", label_of(p)});
    past_step = past_step || std::any_of(p.steps.begin(), p.steps.end(), [](const RankStep& s) {
                  return std::max(s.compute_ns, s.comm_ns) > s.dur_ns;
                });
  }
  o << ranks.str();
  // A GPU behind its CPU runs a step's work past the step's range: unions longer than it.
  if (past_step)
    o << "Compute and Comm are the unions of the GPU work each step launched, wherever it ran: where the GPU "
         "runs behind the CPU they can exceed Step, the step's CPU range\n";
  if (!r.steps.empty()) {
    o << "per step: the slowest rank (the one the others waited for in their collectives) and the waits (ns):\n";
    std::vector<std::string> headers{"Step", "Slowest", "Its step"};
    for (size_t i = 0; i < r.ranks.size(); ++i) headers.push_back("Wait r" + std::to_string(r.rank_of(i)));
    headers.push_back("Matched collectives");
    TextTable steps(headers);
    // A long run: the steps with the longest waits, in step order (--json lists every step).
    constexpr size_t kMaxRows = 20;
    std::vector<const StepAcross*> shown;
    for (const StepAcross& s : r.steps) shown.push_back(&s);
    if (shown.size() > kMaxRows) {
      std::nth_element(shown.begin(), shown.begin() + kMaxRows, shown.end(),
                       [](const StepAcross* a, const StepAcross* b) { return a->max_wait_ns() > b->max_wait_ns(); });
      shown.resize(kMaxRows);
      std::sort(shown.begin(), shown.end(), [](const StepAcross* a, const StepAcross* b) { return a->number < b->number; });
      o << "(the " << kMaxRows << " of " << r.steps.size() << " steps with the longest waits; --json lists every step)\n";
    }
    for (const StepAcross* sp : shown) {
      const StepAcross& s = *sp;
      std::vector<std::string> row{"#" + std::to_string(s.number), "rank " + std::to_string(r.rank_of(size_t(s.slowest))),
                                   grouped(s.dur_ns[size_t(s.slowest)])};
      for (int64_t w : s.wait_ns) row.push_back(grouped(w));
      row.push_back(std::to_string(s.matched_collectives));
      steps.add(row);
    }
    o << steps.str();
    std::vector<int64_t> slowest(r.ranks.size(), 0), waited(r.ranks.size(), 0);
    size_t matched_steps = 0;
    for (const StepAcross& s : r.steps) {
      ++slowest[size_t(s.slowest)];
      matched_steps += s.matched_collectives > 0;
      for (size_t i = 0; i < s.wait_ns.size(); ++i) waited[i] += s.wait_ns[i];
    }
    // Without a collective matched, no rank waited in one: a wait is then the step's shortfall
    // against the slowest rank's, what it would wait at the next synchronization.
    if (matched_steps < r.steps.size())
      o << "(" << (matched_steps ? count_of(int64_t(r.steps.size() - matched_steps), "step", "steps") + " with "
                                 : std::string())
        << "no collective matched: there a rank's wait is its step's shortfall against the slowest rank's, "
           "what it would wait at the next synchronization, not a wait the traces show)\n";
    // One rank given: none to be slower than, or to wait for (it read "the slowest in 2 of 2").
    if (r.ranks.size() == 1)
      o << "rank " << r.rank_of(0) << " alone: no other rank's trace to compare its steps with\n";
    else
      for (size_t i = 0; i < r.ranks.size(); ++i)
        o << "rank " << r.rank_of(i) << ": the slowest in " << slowest[i] << " of " << r.steps.size()
          << " steps; " << (matched_steps ? "waited " : "shorter than the slowest by ") << format_duration(waited[i])
          << (matched_steps ? " for others in all\n" : " in all\n");
  }
  // Collectives per rank, grouped by name and size.
  TextTable colls({"Rank", "Calls", "Bytes", "Median (ns)", "Total (ns)", "Collective"});
  bool any = false;
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    std::map<std::pair<std::string, int64_t>, std::vector<int64_t>> groups;
    for (const Collective& c : r.ranks[i].collectives)
      if (c.step >= 0) groups[{c.name, c.bytes}].push_back(c.dur_ns);
    for (auto& [key, durs] : groups) {
      int64_t total = 0;
      for (int64_t d : durs) total += d;
      colls.add({std::to_string(r.rank_of(i)), grouped(int64_t(durs.size())), key.second >= 0 ? format_bytes(key.second) : "-",
                 grouped(median(durs)), grouped(total), key.first});
      any = true;
    }
  }
  o << (any ? "collectives inside the steps, per rank:\n" + colls.str() : "no collectives inside the steps\n");
  return o.str();
}

std::string ranks_json(const RanksReport& r) {
  nlohmann::ordered_json j = {{"world_size", r.world_size}, {"missing_ranks", r.missing},
                              {"partial", r.partial()}, {"single_process", r.single_process},
                              {"clock_notes", r.clock_notes}, {"match_notes", r.match_notes},
                              {"ranks", nlohmann::ordered_json::array()},
                              {"steps", nlohmann::ordered_json::array()}};
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankProfile& p = r.ranks[i];
    nlohmann::ordered_json rank = {{"rank", r.rank_of(i)},       {"trace", p.label},  {"backend", p.id.backend},
                                   {"run_id", p.id.run_id}, {"gpu", p.gpu}, {"whole_trace", p.whole_trace}, {"steps", nlohmann::ordered_json::array()},
                                   {"collectives", nlohmann::ordered_json::array()}};
    for (const RankStep& s : p.steps)
      rank["steps"].push_back({{"step", s.number},          {"start_ns", s.start_ns},
                               {"duration_ns", s.dur_ns},   {"compute_ns", s.compute_ns},
                               {"comm_ns", s.comm_ns},      {"overlap_ns", s.overlap_ns},
                               {"exposed_comm_ns", s.exposed_comm_ns()}, {"collectives", s.collectives}});
    for (const Collective& c : p.collectives)
      rank["collectives"].push_back({{"name", c.name}, {"bytes", c.bytes}, {"start_ns", c.start_ns},
                                     {"duration_ns", c.dur_ns}, {"step", c.step}});
    j["ranks"].push_back(rank);
  }
  for (const StepAcross& s : r.steps)
    j["steps"].push_back({{"step", s.number}, {"slowest_rank", r.rank_of(size_t(s.slowest))}, {"partial", r.partial()}, {"duration_ns", s.dur_ns},
                          {"wait_ns", s.wait_ns}, {"max_wait_ns", s.max_wait_ns()},
                          {"matched_collectives", s.matched_collectives}});
  return j.dump(2) + "\n";
}

std::string render_ranks_svg(const RanksReport& r, int width, long step, const std::string& title) {
  // The window: the chosen step on every rank, or every step.
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (const RankProfile& p : r.ranks)
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (step < 0 || long(i) == step) {
        from = std::min(from, p.steps[i].start_ns);
        to = std::max(to, p.steps[i].start_ns + p.steps[i].dur_ns);
      }
  if (from >= to) from = 0, to = 1;
  const int label_w = 90, lane_h = 44, top = 40;
  const double plot_w = double(width - label_w - 20), scale = plot_w / double(to - from);
  const int height = top + int(r.ranks.size()) * lane_h + 50;
  auto x = [&](int64_t t) { return double(label_w) + double(t - from) * scale; };
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"10\" y=\"18\" font-size=\"14\">" << escape(title.empty() ? "ranks side by side" : title) << "</text>\n";
  // Draws merged intervals, joining those closer than a pixel so the picture stays small.
  auto lane = [&](const std::vector<Interval>& v, double y, double h, const char* color, const char* what) {
    double run_from = -1, run_to = -1;
    auto flush = [&] {
      if (run_from < 0) return;
      s << "<rect x=\"" << run_from << "\" y=\"" << y << "\" width=\"" << std::max(0.5, run_to - run_from)
        << "\" height=\"" << h << "\" fill=\"" << color << "\"><title>" << what << "</title></rect>\n";
    };
    for (const Interval& i : v) {
      if (i.to <= from || i.from >= to) continue;
      const double a = x(std::max(i.from, from)), b = x(std::min(i.to, to));
      if (run_from >= 0 && a - run_to < 1.0) {
        run_to = std::max(run_to, b);
        continue;
      }
      flush();
      run_from = a, run_to = b;
    }
    flush();
  };
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const double y = top + double(i) * lane_h;
    s << "<text x=\"10\" y=\"" << y + 24 << "\">rank " << r.rank_of(i) << "</text>\n";
    s << "<rect x=\"" << label_w << "\" y=\"" << y << "\" width=\"" << plot_w << "\" height=\"" << lane_h - 6
      << "\" fill=\"#f4f4f4\"/>\n";
    lane(r.ranks[i].compute, y + 2, 18, "#4c78a8", "computation");
    lane(r.ranks[i].comm, y + 20, 18, "#f58518", "communication");
    for (size_t k = 0; k < r.ranks[i].steps.size(); ++k) {
      const RankStep& st = r.ranks[i].steps[k];
      if (st.start_ns + st.dur_ns <= from || st.start_ns >= to) continue;
      const bool slowest = k < r.steps.size() && r.steps[k].slowest == int(i);
      s << "<line x1=\"" << x(std::max(st.start_ns, from)) << "\" y1=\"" << y - 2 << "\" x2=\""
        << x(std::max(st.start_ns, from)) << "\" y2=\"" << y + lane_h - 6 << "\" stroke=\"#333\"/>\n";
      if (slowest)
        s << "<text x=\"" << x(std::max(st.start_ns, from)) + 3 << "\" y=\"" << y + 12
          << "\" font-size=\"10\" fill=\"#b00\">slowest in #" << st.number << "</text>\n";
    }
  }
  const double ly = top + double(r.ranks.size()) * lane_h + 10;
  s << "<rect x=\"" << label_w << "\" y=\"" << ly << "\" width=\"12\" height=\"12\" fill=\"#4c78a8\"/>"
    << "<text x=\"" << label_w + 16 << "\" y=\"" << ly + 10 << "\">computation</text>\n"
    << "<rect x=\"" << label_w + 120 << "\" y=\"" << ly << "\" width=\"12\" height=\"12\" fill=\"#f58518\"/>"
    << "<text x=\"" << label_w + 136 << "\" y=\"" << ly + 10 << "\">communication (where both show: overlap)</text>\n"
    << "<text x=\"" << label_w << "\" y=\"" << ly + 30 << "\">window " << format_duration(to - from)
    << "; lines: step starts</text>\n</svg>\n";
  return s.str();
}

}  // namespace pil::trace
