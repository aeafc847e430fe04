#include "trace/parse/parallel_read.h"

#include <sys/mman.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/parse/chunk_reader.h"
#include "trace/parse/json_text.h"
#include "trace/parse/part.h"
#include "trace/parse/sources.h"

namespace pil::trace::detail {

namespace {

/// Where a trace may be cut between two events: the ',' after one, and the '{' of the next with
/// at least one blank before it (the blank takes the next chunk's '[', the ',' the ']').
struct Cut {
  size_t sep, start;
};

/// Cuts about `chunk` bytes apart. Each is looked for after a line break, which JSON never puts
/// in a string, so strings and their escapes are followed exactly from there; a ',' between
/// objects may still be inside an event's nested args: the merge checks every cut against where
/// the events before it really end.
std::vector<Cut> find_cuts(const char* data, size_t from, size_t size, size_t chunk) {
  constexpr size_t kScan = size_t(1) << 20;  // give up on a cut this far past a line break
  std::vector<Cut> cuts;
  size_t nominal = from + chunk;
  while (nominal < size) {
    const void* nl = std::memchr(data + nominal, '\n', size - nominal);
    if (!nl) break;
    size_t i = size_t(static_cast<const char*>(nl) - data) + 1;
    const size_t stop = std::min(size, i + kScan);
    StringTracker strings;
    bool found = false;
    for (; i < stop && !found; ++i) {
      const char c = data[i];
      if (strings.outside(c) && c == ',') {
        size_t k = i + 1;
        while (k < size && is_space(data[k])) ++k;
        if (k > i + 1 && k < size && data[k] == '{') {
          cuts.push_back({i, k});
          found = true;
        }
      }
    }
    nominal = (found ? cuts.back().start : i) + chunk;
  }
  return cuts;
}

/// Reads the event array of a trace held whole in writable memory on several threads: the
/// array is cut into chunks at likely event boundaries, each chunk is read in place as an array
/// of its own (its '[' and ']' written over the blank and the ',' of its cuts), and the chunks'
/// parts are merged in file order as they come, so the names, named lanes and events come out
/// exactly as one sequential read makes them. Where a chunk cannot be taken whole (a cut inside
/// an event's args, an event larger than a chunk, a bad event), the sequential reader reads on
/// from the last event taken up to the next chunk that starts where it stops; bad input is
/// reported by it, so messages are the sequential read's.
class ParallelRead {
 public:
  ParallelRead(char* data, size_t size, size_t capacity, std::string label,
               const ParseOptions& options, bool mapped)
      : data_(data), size_(size), capacity_(capacity), label_(std::move(label)),
        options_(options), mapped_(mapped) {}

  /// False, with nothing read, when the trace has no place to cut (read it sequentially).
  bool run(Trace& out, unsigned threads) {
    out_ = &out;
    // The head and the tail are read through a small buffer that grows when they do not fit: a
    // chunk-sized one would be copied and indexed whole, one thread waiting, for a few hundred
    // bytes.
    ParseOptions ends = options_;
    ends.chunk_bytes = size_t(64) << 10;
    {
      Reader head(std::make_unique<PatchedSource>(data_, size_, 0, nullptr), label_, ends, out_);
      array_open_ = head.read_head_only();
      bare_array_ = head.bare_array();
    }
    judge_shapes_also(options_, *out_);  // the head is read: every chunk's reader reads alike
    const size_t chunk = std::max<size_t>(options_.chunk_bytes, 16);
    cuts_ = find_cuts(data_, array_open_ + 1, size_, chunk);
    if (cuts_.empty()) return false;
    for (const Cut& c : cuts_) {
      patches_.push_back({c.sep, data_[c.sep]});
      patches_.push_back({c.start - 1, data_[c.start - 1]});
      data_[c.sep] = ']';
      data_[c.start - 1] = '[';
    }
    data_[size_] = ']';  // the last chunk's, in the padding
    chunks_ = cuts_.size() + 1;
    ready_.assign(chunks_, nullptr);
    max_parts_ = 2 * size_t(threads) + 2;
    std::vector<std::thread> pool;
    try {
      for (unsigned k = 1; k < threads; ++k) pool.emplace_back([this] { work(); });
    } catch (const std::system_error&) {  // fewer threads than asked: the others do the work
    }
    work();
    for (auto& t : pool) t.join();
    if (error_) std::rethrow_exception(error_);
    if (!closed_) throw cut_short(label_, "inside the event array");
    Reader tail(std::make_unique<PatchedSource>(data_, size_, closed_at_, &patches_), label_,
                ends, out_);
    tail.run_tail(bare_array_);
    return true;
  }

 private:
  size_t open_of(size_t j) const { return j == 0 ? array_open_ : cuts_[j - 1].start - 1; }
  size_t close_of(size_t j) const { return j + 1 < chunks_ ? cuts_[j].sep : size_; }

  void work() {
    ParseOptions small = options_;
    small.chunk_bytes = 4096;  // the reader's own buffer is not used in place
    Trace unused;
    Reader reader(nullptr, label_, small, &unused);
    const size_t max_in_place = 16 * std::max<size_t>(options_.chunk_bytes, 4096);
    for (;;) {
      // A part first, then a chunk: the first chunk not yet merged always has a part, so the
      // merge never waits on a thread that waits for a part.
      Part* part = acquire();
      if (!part) return;
      const size_t j = next_.fetch_add(1);
      if (j >= chunks_ || failed_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        free_.push_back(part);
        cv_.notify_all();
        return;
      }
      const size_t open = open_of(j), close = close_of(j);
      const size_t resume_if_none = j == 0 ? open : cuts_[j - 1].sep;
      if (close - open > max_in_place) {  // no cut for long: read it sequentially, in bounded memory
        part->clear();
        part->resume = resume_if_none;
        part->resume_first = j == 0;
      } else {
        reader.read_chunk_in_place(data_, capacity_, open, close, resume_if_none, j == 0, part);
        if (mapped_) release_pages(open, close);
      }
      deposit(j, part);
    }
  }

  /// The file's pages of a chunk read in place go back to the page cache: memory stays near
  /// the chunks in flight, not the file. Pages holding stand-ins are kept.
  void release_pages(size_t open, size_t close) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t from = (open / page + 1) * page, to = (close / page) * page;
    if (to > from) madvise(data_ + from, to - from, MADV_DONTNEED);
  }

  Part* acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || parts_.size() < max_parts_ || failed_.load(); });
    if (failed_.load()) return nullptr;
    if (!free_.empty()) {
      Part* p = free_.back();
      free_.pop_back();
      return p;
    }
    parts_.push_back(std::make_unique<Part>());
    return parts_.back().get();
  }

  /// Hands chunk j's part in; whoever finds the next chunk in file order ready merges it (one
  /// thread at a time), and every one after it that is ready too.
  void deposit(size_t j, Part* part) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_[j] = part;
      if (committing_) return;
      committing_ = true;
    }
    for (;;) {
      Part* p = nullptr;
      size_t k = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        k = next_commit_;
        if (k >= chunks_ || !ready_[k]) {
          committing_ = false;
          return;
        }
        p = ready_[k];
        ready_[k] = nullptr;
      }
      if (!failed_.load()) {
        try {
          commit(k, *p);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu_);
          error_ = std::current_exception();
          failed_.store(true);
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++next_commit_;
        free_.push_back(p);
      }
      cv_.notify_all();
    }
  }

  void commit(size_t j, Part& p) {
    if (closed_) return;  // past the event array
    if (!cursor_) {       // chunk j starts where the events before it end
      merge(p);
      if (p.closed) {
        closed_ = true;
        closed_at_ = p.closed_at;
        return;
      }
      if (p.whole) return;
      cursor_ = std::make_unique<Reader>(
          std::make_unique<PatchedSource>(data_, size_, p.resume, &patches_), label_, options_,
          &cursor_part_.t);
      cursor_->use_part(&cursor_part_);
      cursor_->start_stretch(p.resume, p.resume_first, elements_);
    }
    // The sequential read goes on from where the chunks stopped being whole, up to the next
    // chunk's first event (a chunk it passes is left out: its cut was not between events).
    const uint64_t limit = j + 1 < chunks_ ? cuts_[j].start : std::numeric_limits<uint64_t>::max();
    if (cursor_at_ > limit) return;
    if (cursor_at_ < limit) {
      cursor_part_.clear();
      cursor_->use_part(&cursor_part_);
      cursor_at_ = cursor_->run_stretch(limit);
      cursor_part_.elements = cursor_->elements() - elements_;
      merge(cursor_part_);
      if (cursor_at_ == 0) {
        closed_ = true;
        closed_at_ = cursor_->closed_at();
        cursor_.reset();
        return;
      }
    }
    if (cursor_at_ == limit) {  // in step with the chunks again
      cursor_.reset();
      cursor_at_ = 0;
    }
  }

  /// The trace's own copy of a name a part interned (after its names were merged).
  std::string_view global_name(std::string_view local) const {
    return local.empty() ? std::string_view() : global_[LocalNames::id_of(local)];
  }

  /// Appends a part to the trace: names interned in the order the part first saw them (so in
  /// file order overall), named lanes numbered likewise, kernel and memory indices shifted.
  void merge(Part& p) {
    const auto& names = p.names.in_order();
    global_.resize(names.size());
    for (size_t k = 0; k < names.size(); ++k) global_[k] = out_->intern(names[k]);
    lane_ids_.resize(p.lanes.size());
    for (size_t k = 0; k < p.lanes.size(); ++k) {
      const std::string_view name = global_name(p.lanes[k]);
      lane_ids_[k] = named_lanes_.emplace(name, -int64_t(named_lanes_.size()) - 1).first->second;
    }
    const uint32_t kbase = uint32_t(out_->kernels.size()), mbase = uint32_t(out_->memory.size()),
                   cbase = uint32_t(out_->copy_bytes.size());
    const size_t ebase = out_->events.size();
    // Operators' recorded inputs (read_shapes): each distinct one once over the whole trace, by
    // its key, numbered in the order first seen; its views moved to the trace's copy of the key.
    input_ids_.resize(p.t.op_inputs.size());
    for (size_t k = 0; k < p.t.op_inputs.size(); ++k) {
      const std::string_view local = p.input_keys[k], key = global_name(local);
      const auto [it, fresh] = input_ids_by_key_.emplace(key.data(), uint32_t(out_->op_inputs.size()));
      input_ids_[k] = it->second;
      if (!fresh) continue;
      OpInputs in = std::move(p.t.op_inputs[k]);
      auto moved = [&](std::string_view v) { return key.substr(size_t(v.data() - local.data()), v.size()); };
      in.dims_text = moved(in.dims_text);
      for (InputArg& arg : in.args) {
        arg.type = moved(arg.type);
        if (in.has_concrete) arg.concrete = moved(arg.concrete);  // else none: no view to move
      }
      out_->input_shapes.push_back(in.dims_text);
      out_->op_inputs.push_back(std::move(in));
    }
    out_->events.insert(out_->events.end(), p.t.events.begin(), p.t.events.end());
    for (size_t k = ebase; k < out_->events.size(); ++k) {
      Event& e = out_->events[k];
      e.name = global_name(e.name);
      if (e.kernel_info != kNoKernelInfo) e.kernel_info += kbase;
      if (e.memory_info != kNoKernelInfo) e.memory_info += e.category == Category::Memory ? mbase : cbase;
      if (e.input_shapes != kNoKernelInfo) e.input_shapes = input_ids_[e.input_shapes];
    }
    auto lane = [&](int64_t local) { return lane_ids_[size_t(-local - 1)]; };
    for (const auto& [k, named] : p.lane_fixes) {
      Event& e = out_->events[ebase + k];
      if (named & 1u) e.pid = lane(e.pid);
      if (named & 2u) e.tid = lane(e.tid);
    }
    for (const LaneMeta& m : p.metas)
      out_->lane_names[{(m.named & 1u) ? lane(m.pid) : m.pid, (m.named & 2u) ? lane(m.tid) : m.tid}] =
          std::string(global_name(m.name));
    out_->kernels.insert(out_->kernels.end(), p.t.kernels.begin(), p.t.kernels.end());
    out_->memory.insert(out_->memory.end(), p.t.memory.begin(), p.t.memory.end());
    out_->copy_bytes.insert(out_->copy_bytes.end(), p.t.copy_bytes.begin(), p.t.copy_bytes.end());
    for (ElementSource src : p.t.sources) {
      if (src.event != kNoKernelInfo) src.event += uint32_t(ebase);
      out_->sources.push_back(src);
    }
    out_->flows.starts += p.t.flows.starts;
    out_->flows.finishes += p.t.flows.finishes;
    out_->skipped.add(p.t.skipped);
    for (const auto& [kind, n] : p.t.unread) out_->unread[kind] += n;
    out_->autograd_profiler_slices += p.t.autograd_profiler_slices;
    out_->python_functions += p.t.python_functions;
    out_->cuda_sync_events += p.t.cuda_sync_events;
    elements_ += p.elements;
  }

  char* data_;
  size_t size_, capacity_;
  std::string label_;
  ParseOptions options_;
  bool mapped_;
  Trace* out_ = nullptr;
  uint64_t array_open_ = 0;
  bool bare_array_ = false;
  std::vector<Cut> cuts_;
  std::vector<std::pair<size_t, char>> patches_;
  size_t chunks_ = 0;
  // Work handed out, parts in flight.
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::vector<Part*> free_;
  size_t max_parts_ = 0;
  std::vector<Part*> ready_;
  size_t next_commit_ = 0;
  bool committing_ = false;
  std::exception_ptr error_;
  // The merge (one thread at a time, in file order).
  size_t elements_ = 0;
  std::vector<std::string_view> global_;
  std::vector<int64_t> lane_ids_;
  std::unordered_map<std::string_view, int64_t> named_lanes_;
  std::vector<uint32_t> input_ids_;  // a part's op_inputs -> the trace's
  std::unordered_map<const char*, uint32_t> input_ids_by_key_;
  std::unique_ptr<Reader> cursor_;
  Part cursor_part_;
  uint64_t cursor_at_ = 0;
  bool closed_ = false;
  uint64_t closed_at_ = 0;
};

}  // namespace

bool read_in_parallel(char* data, size_t size, size_t capacity, const std::string& label,
                      const ParseOptions& options, bool mapped, unsigned threads, Trace& out) {
  ParallelRead read(data, size, capacity, label, options, mapped);
  return read.run(out, threads);
}

}  // namespace pil::trace::detail
