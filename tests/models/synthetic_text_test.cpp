// The made-up text lesson 06 trains on (common/models/synthetic_text.h): a batch depends on the
// seed and its index alone, whichever thread makes it; the byte-pair tokens spell the text back.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>
#include <thread>
#include <vector>

#include "models/synthetic_text.h"

namespace {

TEST(SyntheticText, BatchesDependOnlyOnSeedAndIndex) {
  const pil::models::SyntheticText a(7), b(7), c(8);
  const at::Tensor x = a.batch(3, 2, 64, 200);
  ASSERT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 65}));
  EXPECT_TRUE(x.equal(b.batch(3, 2, 64, 200)));
  EXPECT_FALSE(x.equal(a.batch(4, 2, 64, 200)));
  EXPECT_FALSE(x.equal(c.batch(3, 2, 64, 200)));
  at::Tensor on_a_thread;
  std::thread([&] { on_a_thread = b.batch(3, 2, 64, 200); }).join();
  EXPECT_TRUE(x.equal(on_a_thread));
  EXPECT_GE(x.min().item<int64_t>(), 1) << "no unknown piece in the language's own text";
  EXPECT_LT(x.max().item<int64_t>(), pil::models::SyntheticText::kVocab);
}

TEST(SyntheticText, TheTokensSpellTheTextBack) {
  const pil::models::SyntheticText text(0);
  const std::string doc = text.document(42, 300);
  const std::vector<int64_t> ids = text.tokenise(doc);
  std::string back;
  for (int64_t id : ids) back += text.piece(id);
  EXPECT_EQ(back, doc);
  // Byte-pair merges: far fewer tokens than characters, at least one per word.
  EXPECT_LT(ids.size(), doc.size() / 2);
  EXPECT_GE(ids.size(), 300u);
}

}  // namespace
