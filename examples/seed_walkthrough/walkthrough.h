// The data flow of the explanation tapegrad grew from, computed stage by stage with tapegrad's
// own modules: a Chinese sentence -> its two segmentations -> token ids -> a (B, T, D) = (1, 5, 4)
// embedding -> LayerNorm and RMSNorm of each row -> why a norm removes scale drift -> one pre-norm
// block. seed_walkthrough prints it; tests/examples/test_seed_walkthrough.cpp checks the numbers.
#pragma once

#include <string>
#include <vector>

#include "tapegrad/tensor.h"

namespace tapegrad::walkthrough {

struct Segmentation {
  std::string method;               // "forward maximum matching", ...
  std::vector<std::string> words;
};

struct NormedRow {
  std::vector<double> x, layernorm, rmsnorm;
  double x_rms = 0;
};

struct NormSummary {  // one line of the comparison table
  std::string method;
  std::vector<double> output;
  double mean = 0, rms = 0;
  bool centred = false;
};

struct Stage {  // one intermediate of the pre-norm block, (1, 5, 4) flattened
  std::string name;
  std::vector<double> values;
  double rms = 0;
};

// X and 10 X through the same pre-norm block with one norm: the RMS of what attention reads
// (Norm1), what the MLP reads (Norm2) and of the residual stream X2, for both inputs.
struct RegulatorRow {
  std::string norm;  // registry name
  double attn_in = 0, attn_in_10x = 0;  // RMS of Norm1(X), Norm1(10 X)
  double mlp_in = 0, mlp_in_10x = 0;    // RMS of Norm2(X1), Norm2(X1 of 10 X)
  double stream = 0, stream_10x = 0;    // RMS of X2
  double attn_in_diff = 0;              // max |Norm1(10 X) - Norm1(X)|: 0 up to rounding when scale-invariant
};

struct SeedWalkthrough {
  std::string sentence;
  std::vector<std::string> dictionary;
  std::vector<Segmentation> segmentations;  // the two readings
  std::vector<std::string> tokens;          // the reading used: [乒乓球, 拍卖, 完, 了, 。]
  std::vector<int32_t> ids;                 // its illustrative ids
  Tensor<double> embeddings;                // (1, 5, 4)
  std::vector<NormedRow> rows;              // LayerNorm and RMSNorm of each embedding row
  NormedRow drift, drift10;                 // x = [1, 2, 3, 4] and 10x
  std::vector<NormSummary> table;           // none / LayerNorm / RMSNorm on [1, 2, 3, 4]
  std::vector<Stage> block;                 // X, Norm1(X), Attn, X1, Norm2(X1), MLP, X2
  std::vector<RegulatorRow> regulator;      // one per registered norm (and none), or the one asked for
};

// Norms use eps = 0, as the definitions the explanation gives; the block's weights are drawn
// from N(0, 0.3^2) with Rng(block_seed) (norm gains 1, biases 0) so that its sub-layers visibly
// change the stream (GPT-2's 0.02 would leave X2 ~ X).
// `norm`: the regulator section's norm ("" = every registered norm, and none).
SeedWalkthrough run_seed_walkthrough(uint64_t block_seed = 7, const std::string& norm = "");

// Greedy dictionary segmentation, longest word first, scanning left-to-right (forward) or
// right-to-left (backward). Characters not in the dictionary become one-character words.
std::vector<std::string> max_match(const std::string& sentence, const std::vector<std::string>& dictionary,
                                   bool forward);

std::string render(const SeedWalkthrough& w);

}  // namespace tapegrad::walkthrough
