#include "harness/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "trace/text_table.h"

namespace pil {

bool Progress::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string what, int total)
    : Progress(std::move(what), total, std::cerr, stderr_is_terminal(), std::chrono::seconds(1)) {
  std::cout << std::flush;  // what the run printed so far comes before any progress line
}

Progress::Progress(std::string what, int total, std::ostream& out, bool terminal,
                   std::chrono::milliseconds quiet)
    : what_(std::move(what)), total_(total), out_(out), terminal_(terminal), quiet_(quiet),
      start_(std::chrono::steady_clock::now()) {
  watch_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!wake_.wait_for(lock, quiet_, [this] { return finished_; })) show(false);
    // On a terminal, keep the elapsed time moving while one long item runs.
    while (terminal_ && !finished_)
      if (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return finished_; })) show(false);
  });
}

Progress::~Progress() { finish(); }

void Progress::update(int done) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = done;
  if (!shown_ || finished_) return;  // quiet until the watch shows the first line
  if (!terminal_ && total_ > 0 && done >= total_) return;  // finish() prints the last line
  // update() runs between the recorded steps: a redraw there is time inside the next step.
  // A terminal's line is rewritten at most ten times a second, a pipe's line once a second.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_line_ >= (terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000)))
    show(false);
}

void Progress::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (shown_) show(true);
  }
  wake_.notify_all();
  if (watch_.joinable()) watch_.join();
}

void Progress::show(bool last) {
  const auto now = std::chrono::steady_clock::now();
  const int64_t elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(now - start_).count();
  std::string line = what_;
  if (total_ > 0) line += " " + std::to_string(done_) + "/" + std::to_string(total_);
  // A last line short of the total is a phase an error ended (the destructor's, unwinding): not
  // "done".
  const bool stopped = last && total_ > 0 && done_ < total_;
  line += (stopped ? ", stopped after " : last ? ", done in " : ", ") + trace::format_duration(elapsed);
  if (terminal_)
    out_ << "\r\033[K" << line << (last ? "\n" : "") << std::flush;  // one line, rewritten
  else
    out_ << line << "\n" << std::flush;
  shown_ = true;
  last_line_ = now;
}

}  // namespace pil
