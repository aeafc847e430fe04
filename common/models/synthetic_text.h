#pragma once
/// \file
/// Text for a language model to train on, made up and tokenised on the spot, in plain C++: a
/// small made-up language (words of syllables, each word followed most often by one of a few
/// successors, so that there is something to learn) and a byte-pair-encoding tokeniser for it,
/// written as GPT-2's encoder is: a pre-split by regular expression, then, in each piece, the
/// adjacent pair of symbols with the best merge rank merged again and again (no cache). Lesson
/// 06 trains on it. A batch depends only on (seed, batch index): the same batch on whichever
/// thread makes it.
///
/// Nothing here is a LibTorch operator but the batch's final copy into a tensor: a profiler that
/// records operators sees none of the work.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pil::models {

class SyntheticText {
 public:
  /// The language and the tokeniser's merges are fixed (the same in every run and build, made
  /// once per process); `seed` picks the documents.
  explicit SyntheticText(uint64_t seed);

  /// Tokens in the vocabulary (the model's embedding and output size).
  static constexpr int64_t kVocab = 512;

  /// Batch `index`: `batch` sequences of `seq` + 1 tokens ([batch, seq + 1], int64, CPU; the
  /// model reads tokens [:, :-1] and predicts [:, 1:]). Each sequence is a window of its own
  /// document of at least `doc_words` words (more where a window needs more), generated and
  /// tokenised whole.
  at::Tensor batch(int64_t index, int64_t batch, int64_t seq, int64_t doc_words) const;

  /// One document of `words` words, as text (for the tests and the curious).
  std::string document(uint64_t stream, int64_t words) const;
  /// The token ids of `text`.
  std::vector<int64_t> tokenise(const std::string& text) const;
  /// The piece a token id stands for.
  const std::string& piece(int64_t id) const;

  /// The language and its tokeniser: made once, shared by every SyntheticText.
  struct Language {
    std::vector<std::string> words;                // most frequent first
    std::vector<std::vector<int32_t>> successors;  // each word's likely next words
    std::vector<double> zipf_cdf;                  // P(word rank <= r)
    std::vector<std::string> pieces;               // the vocabulary: id -> piece
    std::unordered_map<std::string, int64_t> ids;  // piece -> id
    std::map<std::pair<std::string, std::string>, int> merge_rank;  // as GPT-2's bpe_ranks
    std::regex pre_split;
  };

 private:
  uint64_t seed_;
  std::shared_ptr<const Language> language_;
};

}  // namespace pil::models
