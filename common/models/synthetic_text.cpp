// A made-up language and its byte-pair-encoding tokeniser (see synthetic_text.h): plain C++,
// deterministic.
#include "models/synthetic_text.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <climits>
#include <set>
#include <stdexcept>

namespace pil::models {
namespace {

// splitmix64: a small generator whose stream depends only on its seed (the standard
// distributions' outputs differ between standard libraries; these draws do not).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  size_t below(size_t n) { return size_t(next() % uint64_t(n)); }
};

uint64_t mix(uint64_t a, uint64_t b) { return Rng{a * 0x100000001B3ull ^ b}.next(); }

constexpr uint64_t kLanguageSeed = 2026;  // the language: the same in every run
constexpr size_t kWords = 2000;
constexpr size_t kSuccessors = 3;
constexpr double kFollowShare = 0.8;  // a word is followed by one of its successors this often
constexpr double kFullStop = 0.08, kComma = 0.05;

size_t zipf_draw(const std::vector<double>& cdf, Rng& rng) {
  return size_t(std::lower_bound(cdf.begin(), cdf.end(), rng.uniform()) - cdf.begin());
}

// The words: one to three syllables, consonant then vowel; Zipf's law over their ranks (the
// r-th most frequent word has weight 1 / (r + 2)); a few likely successors each.
void make_words(SyntheticText::Language& l) {
  const std::string consonants = "bdfgklmnprstvz", vowels = "aeiou";
  std::vector<std::string> syllables;
  for (char c : consonants)
    for (char v : vowels) syllables.push_back(std::string{c, v});
  Rng rng{kLanguageSeed};
  std::set<std::string> seen;
  while (l.words.size() < kWords) {
    const double u = rng.uniform();
    const int n = u < 0.15 ? 1 : u < 0.65 ? 2 : 3;
    std::string w;
    for (int i = 0; i < n; ++i) w += syllables[rng.below(syllables.size())];
    if (seen.insert(w).second) l.words.push_back(w);
  }
  double total = 0;
  for (size_t r = 0; r < kWords; ++r) total += 1.0 / double(r + 2);
  double acc = 0;
  for (size_t r = 0; r < kWords; ++r) l.zipf_cdf.push_back(acc += 1.0 / double(r + 2) / total);
  l.zipf_cdf.back() = 1.0;
  l.successors.resize(kWords);
  for (auto& s : l.successors)
    for (size_t i = 0; i < kSuccessors; ++i) s.push_back(int32_t(zipf_draw(l.zipf_cdf, rng)));
}

// The tokeniser's merges, learned as byte-pair encoding learns them: start from single
// characters and merge the most frequent adjacent pair, over the words weighted by frequency,
// until the vocabulary is full.
void learn_merges(SyntheticText::Language& l) {
  auto add_piece = [&l](const std::string& p) {
    l.ids.emplace(p, int64_t(l.pieces.size()));  // a string made twice keeps its first id
    l.pieces.push_back(p);
  };
  add_piece("<unk>");
  for (const char* p : {" ", ".", ","}) add_piece(p);
  for (char c = 'a'; c <= 'z'; ++c) add_piece(std::string(1, c));
  struct Word {
    std::vector<int64_t> symbols;
    int64_t weight;
  };
  std::vector<Word> corpus;
  for (size_t r = 0; r < kWords; ++r) {
    Word w{{l.ids.at(" ")}, std::max<int64_t>(1, int64_t(1e6 * (l.zipf_cdf[r] - (r ? l.zipf_cdf[r - 1] : 0))))};
    for (char c : l.words[r]) w.symbols.push_back(l.ids.at(std::string(1, c)));
    corpus.push_back(std::move(w));
  }
  auto key = [](int64_t a, int64_t b) { return uint64_t(a) << 32 | uint64_t(b); };
  for (int rank = 0; int64_t(l.pieces.size()) < SyntheticText::kVocab; ++rank) {
    std::unordered_map<uint64_t, int64_t> counts;
    for (const Word& w : corpus)
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i) counts[key(w.symbols[i], w.symbols[i + 1])] += w.weight;
    uint64_t best = 0;
    int64_t best_count = 0;
    for (const auto& [k, n] : counts)
      if (n > best_count || (n == best_count && k < best)) best = k, best_count = n;
    if (best_count == 0) throw std::logic_error("SyntheticText: no pair left to merge");
    const int64_t a = int64_t(best >> 32), b = int64_t(best & 0xFFFFFFFFu), merged = int64_t(l.pieces.size());
    l.merge_rank[{l.pieces[size_t(a)], l.pieces[size_t(b)]}] = rank;
    add_piece(l.pieces[size_t(a)] + l.pieces[size_t(b)]);
    for (Word& w : corpus) {
      std::vector<int64_t> out;
      for (size_t i = 0; i < w.symbols.size(); ++i) {
        if (i + 1 < w.symbols.size() && w.symbols[i] == a && w.symbols[i + 1] == b) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(w.symbols[i]);
        }
      }
      w.symbols = std::move(out);
    }
  }
}

std::shared_ptr<const SyntheticText::Language> the_language() {
  static const std::shared_ptr<const SyntheticText::Language> language = [] {
    auto l = std::make_shared<SyntheticText::Language>();
    make_words(*l);
    learn_merges(*l);
    // GPT-2's pre-split, for a language of lower-case letters: a word with the space before it,
    // punctuation, white space.
    l->pre_split = std::regex(R"( ?[a-z]+| ?[^\sa-z]+|\s+)", std::regex::optimize);
    return l;
  }();
  return language;
}

}  // namespace

SyntheticText::SyntheticText(uint64_t seed) : seed_(seed), language_(the_language()) {}

const std::string& SyntheticText::piece(int64_t id) const { return language_->pieces.at(size_t(id)); }

std::string SyntheticText::document(uint64_t stream, int64_t words) const {
  const Language& l = *language_;
  Rng rng{stream};
  std::string text;
  size_t w = zipf_draw(l.zipf_cdf, rng);
  for (int64_t i = 0; i < words; ++i) {
    if (i) text += ' ';
    text += l.words[w];
    const double p = rng.uniform();
    if (p < kFullStop) text += '.';
    else if (p < kFullStop + kComma) text += ',';
    w = rng.uniform() < kFollowShare ? size_t(l.successors[w][rng.below(kSuccessors)]) : zipf_draw(l.zipf_cdf, rng);
  }
  return text;
}

// [bpe-encode]
// GPT-2's encoder, written plainly: pre-split the text; in each piece start from its characters
// and merge the adjacent pair of best (lowest) rank, again and again, until no pair has a rank.
std::vector<int64_t> SyntheticText::tokenise(const std::string& text) const {
  const Language& l = *language_;
  std::vector<int64_t> out;
  for (std::sregex_iterator it(text.begin(), text.end(), l.pre_split), end; it != end; ++it) {
    std::vector<std::string> word;
    for (char c : it->str()) word.emplace_back(1, c);
    while (word.size() > 1) {
      int best = INT_MAX;
      size_t at = 0;
      for (size_t i = 0; i + 1 < word.size(); ++i) {
        const auto rank = l.merge_rank.find({word[i], word[i + 1]});
        if (rank != l.merge_rank.end() && rank->second < best) best = rank->second, at = i;
      }
      if (best == INT_MAX) break;
      const std::string first = word[at], second = word[at + 1];
      std::vector<std::string> merged;
      for (size_t i = 0; i < word.size(); ++i) {
        if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
          merged.push_back(first + second);
          ++i;
        } else {
          merged.push_back(word[i]);
        }
      }
      word = std::move(merged);
    }
    for (const std::string& symbol : word) {
      const auto id = l.ids.find(symbol);
      out.push_back(id == l.ids.end() ? 0 : id->second);
    }
  }
  return out;
}
// [bpe-encode]

at::Tensor SyntheticText::batch(int64_t index, int64_t batch, int64_t seq, int64_t doc_words) const {
  std::vector<int64_t> tokens;
  tokens.reserve(size_t(batch * (seq + 1)));
  for (int64_t b = 0; b < batch; ++b) {
    const uint64_t stream = mix(mix(seed_, uint64_t(index)), uint64_t(b));
    // Each word is at least one token: seq + 1 words always fill a window.
    const std::vector<int64_t> doc = tokenise(document(stream, std::max(doc_words, seq + 1)));
    Rng pick{stream ^ 0x5851F42D4C957F2Dull};
    const size_t start = pick.below(doc.size() - size_t(seq));
    tokens.insert(tokens.end(), doc.begin() + long(start), doc.begin() + long(start + size_t(seq) + 1));
  }
  return at::from_blob(tokens.data(), {batch, seq + 1}, at::kLong).clone();
}

}  // namespace pil::models
