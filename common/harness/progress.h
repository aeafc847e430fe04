#pragma once
/// \file
/// Progress of a long phase on stderr ("steps 3/5"), so a run that takes minutes is not silent.
/// Nothing is printed while a phase is quick: only once it has run for more than a second.
/// On a terminal it is one line updated in place; into a file or a pipe, plain lines (at most
/// about one a second, and the last).
#include <chrono>
#include <condition_variable>
#include <iosfwd>
#include <mutex>
#include <string>
#include <thread>

namespace pil {

class Progress {
 public:
  /// `what` names the phase ("warm-up calls", "steps", "reference"); `total` is its count of
  /// items, 0 for a phase of one piece (then only the elapsed time is shown).
  Progress(std::string what, int total);
  /// For tests: the stream, whether it is a terminal, and the quiet time before the first line.
  Progress(std::string what, int total, std::ostream& out, bool terminal,
           std::chrono::milliseconds quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// `done` items of the total are finished.
  void update(int done);
  /// The phase is over: a last line (if anything was shown) with the time it took.
  void finish();

  /// True when the process's stderr is a terminal.
  static bool stderr_is_terminal();

 private:
  void show(bool last);  // with mutex_ held
  std::string what_;
  int total_ = 0, done_ = 0;
  std::ostream& out_;
  bool terminal_ = false;
  std::chrono::milliseconds quiet_;
  std::chrono::steady_clock::time_point start_, last_line_;
  bool shown_ = false, finished_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread watch_;  // shows the first line when the phase outlasts the quiet time
};

}  // namespace pil
