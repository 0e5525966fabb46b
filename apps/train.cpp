// train.cpp: `bitgrad train CONFIG`: reads the config (train_config.cpp) and runs it
// (models/lm_run.h: the data, the model, the Trainer's loop, checkpoints and the final sample).
#include "train.h"

#include "cli.h"
#include "core/config.h"
#include "models/train_run.h"

namespace bg::cli {

ConfiguredRun configured_run(const std::string& config_path,
                             const std::vector<std::string>& overrides) {
  ConfigReader reader(config_path, overrides);
  ConfiguredRun out;
  out.run = read_train_config(reader);
  out.context.config_path = config_path;
  out.context.effective_yaml = reader.effective_yaml();
  out.context.draw_losses = loss_plot;
  return out;
}

int run_train(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.size() == 1, "train",
           "usage: bitgrad train CONFIG [--set key=value ...]");
  const ConfiguredRun configured = configured_run(args.positional[0], args.overrides);
  return train_run(configured.run, configured.context);
}

}  // namespace bg::cli
