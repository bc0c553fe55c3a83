// A plugin of one C++ norm, as a user builds one (tapegrad/nn/plugin.h): y = w x / (mean|x| + eps),
// composed from tape ops (their backward passes are the ops'). tests/python/test_plugin.py loads it
// into `import tapegrad`, trains with it by name and resumes the run in a new process.
#include "tapegrad/nn/plugin.h"
#include "tapegrad/ops/div.h"
#include "tapegrad/ops/mul.h"
#include "tapegrad/ops/pointwise.h"
#include "tapegrad/ops/reduce.h"

namespace {

using namespace tapegrad;

template <typename T>
class MeanAbsScale : public nn::UnaryModule<T> {
 public:
  explicit MeanAbsScale(const nn::NormSpec& s) : eps_(s.eps) {
    weight_ = &this->add_parameter("weight", Tensor<T>::full({s.dim}, T(1)));
  }
  static std::unique_ptr<nn::UnaryModule<T>> from_spec(const nn::NormSpec& s) { return std::make_unique<MeanAbsScale>(s); }
  Var<T> forward(Var<T> x) override {
    return x / (mean(abs(x), -1, true) + eps_) * x.tape().param(*weight_);
  }
  void reset_parameters(Rng&) override { weight_->value().fill(T(1)); }
  std::string type_name() const override { return "MeanAbsScale"; }

 private:
  double eps_;
  Parameter<T>* weight_;
};

}  // namespace

TAPEGRAD_PLUGIN(host) {
  host.register_norm(nn::norm_entry<MeanAbsScale>("cpp-meanabs", "MeanAbsScale", "w x / (mean|x| + eps), from a plugin"));
}
