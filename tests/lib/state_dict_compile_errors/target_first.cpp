// The state dict a load writes into comes second, after where the tensors come from, in every
// load_state_dict; the order of io::load_state_dict(path, target) written for a map is refused.
#include <map>
#include <string>

#include "tapegrad/state_dict.h"

using namespace tapegrad;

void load(Tensor<float>& w, const std::map<std::string, Tensor<float>>& source) {
  const StateDict<float> target{{"w", &w}};
  load_state_dict(target, source);
}
