// A project that extends tapegrad without touching its sources: it registers its own norm,
// placement, MLP and tokenizer, trains the language model with all four by name through
// tapegrad::lm, checkpoints and resumes it (the checkpoint stores the names), and checks that a
// taken name is refused.
#include <cstdio>
#include <filesystem>
#include <string>

#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/nn.h"
#include "tapegrad/ops.h"
#include "tapegrad/text/tokenizer.h"

using namespace tapegrad;

// y = g tanh(x), one learned scalar g (initially 1): a statistics-free norm of the DyT family.
template <typename T>
class TanhNorm : public nn::UnaryModule<T> {
 public:
  TanhNorm() {
    g_ = &this->add_parameter("g", Tensor<T>(Shape{1}));
    Rng unused(0);
    reset_parameters(unused);
  }
  static std::unique_ptr<nn::UnaryModule<T>> from_spec(const nn::NormSpec&) { return std::make_unique<TanhNorm>(); }
  void reset_parameters(Rng&) override { g_->value().fill(1); }
  Var<T> forward(Var<T> x) override { return scale(tanh(x), x.tape().param(*g_)); }
  std::string type_name() const override { return "TanhNorm"; }

 private:
  Parameter<T>* g_;
};

// W2 relu(W1 x)^2 (Primer's squared ReLU), from library modules.
template <typename T>
std::unique_ptr<nn::UnaryModule<T>> make_relu2(const nn::MlpSpec& s) {
  struct Relu2 : nn::UnaryModule<T> {
    nn::Linear<T>* fc;
    nn::Linear<T>* proj;
    explicit Relu2(const nn::MlpSpec& s) {
      fc = &this->add_module("fc", std::make_unique<nn::Linear<T>>(nn::LinearOptions{.in = s.dim, .out = s.hidden, .bias = s.bias}));
      proj = &this->add_module("proj", std::make_unique<nn::Linear<T>>(nn::LinearOptions{.in = s.hidden, .out = s.dim, .bias = s.bias}));
    }
    Var<T> forward(Var<T> x) override { return proj->forward(square(relu(fc->forward(x)))); }
    std::string type_name() const override { return "Relu2"; }
  };
  return std::make_unique<Relu2>(s);
}

// One token per byte.
class ByteTokenizer : public text::Tokenizer {
 public:
  std::string type() const override { return "bytes"; }
  int64_t vocab_size() const override { return 256; }
  std::vector<int32_t> encode(std::string_view s) const override {
    std::vector<int32_t> ids;
    for (const unsigned char c : s) ids.push_back(c);
    return ids;
  }
  std::string decode(std::span<const int32_t> ids) const override {
    std::string s;
    for (const int32_t id : ids) {
      check(id >= 0 && id < 256, "bytes tokenizer: id ", id, " is not a byte");
      s += static_cast<char>(id);
    }
    return s;
  }
  nlohmann::json to_json() const override { return {{"type", "bytes"}}; }
};

int main() {
  nn::register_norm<TanhNorm>("tanhnorm", "TanhNorm", "g tanh(x), one learned scalar g");
  nn::register_placement({.name = "pre-and-sum", .description = "Norm(X + F(Norm(X)))", .norm_input = true, .norm_sum = true});
  nn::register_mlp({.name = "relu2",
                    .description = "W2 relu(W1 x)^2 (Primer)",
                    .make_float = make_relu2<float>,
                    .make_double = make_relu2<double>,
                    .default_hidden = [](int64_t dim) { return 4 * dim; }});
  text::register_tokenizer({.name = "bytes",
                            .description = "one token per byte",
                            .train = [](std::string_view, int64_t, const std::string&) -> std::unique_ptr<text::Tokenizer> {
                              return std::make_unique<ByteTokenizer>();
                            },
                            .from_json = [](const nlohmann::json&, int64_t) -> std::unique_ptr<text::Tokenizer> {
                              return std::make_unique<ByteTokenizer>();
                            }});

  std::string text;
  for (int i = 0; i < 60; ++i) text += "the fox sees the heron by the river. ";
  lm::TrainConfig c;
  c.model.layers = 2, c.model.heads = 2, c.model.dim = 32, c.model.ctx = 16, c.batch = 8, c.steps = 60, c.warmup = 5, c.lr = 1e-2, c.threads = 1;
  c.model.norm = nn::NormKind::parse("tanhnorm"), c.model.placement = nn::Placement::parse("pre-and-sum");
  c.model.mlp = nn::MlpKind::parse("relu2"), c.tokenizer = "bytes", c.vocab_size = 256;
  c.validate();
  auto tokenizer = lm::build_tokenizer(c, text, "the text");
  auto data = lm::make_token_data(c, *tokenizer, text);
  lm::Trainer t(c, tokenizer, data);
  const std::string repr = t.model().summary();
  const double first = t.train_step().loss;
  for (int i = 1; i < 30; ++i) t.train_step();
  const std::string dir = (std::filesystem::temp_directory_path() / "tapegrad_consumer_registries").string();
  std::filesystem::remove_all(dir);
  lm::save_checkpoint(t, dir);
  const double at30 = t.train_step().loss;
  auto resumed = lm::resume_trainer(dir, {.text = text});
  const bool bitwise = resumed->train_step().loss == at30;
  for (int i = 31; i < c.steps; ++i) resumed->train_step();
  const double last = resumed->train_step().loss;
  std::filesystem::remove_all(dir);

  bool refused = false;
  try {
    nn::register_placement({.name = "pre", .description = "again", .norm_input = true});
  } catch (const Error&) {
    refused = true;
  }
  const bool named = repr.find("TanhNorm") != std::string::npos && repr.find("Relu2") != std::string::npos &&
                     repr.find("attn_sum_norm") != std::string::npos;
  const bool ok = named && bitwise && refused && last < 0.6 * first;
  std::printf("%s: registries consumer: tanhnorm/pre-and-sum/relu2/bytes loss %.3f -> %.3f, resumed %s, taken name %s\n",
              ok ? "ok" : "FAIL", first, last, bitwise ? "bitwise" : "DIFFERENTLY", refused ? "refused" : "ACCEPTED");
  if (!named) std::printf("the model does not show its registered parts:\n%s\n", repr.c_str());
  return ok ? 0 : 1;
}
