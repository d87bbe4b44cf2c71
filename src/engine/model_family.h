// A model family as the engine sees it: how it recognizes a model folder, the components the
// folder holds, the workflows it runs (and which of them are built), and the phases a request goes
// through. MiniMax-H3 is the one family today; Wan 2.x registers beside it (docs/ARCHITECTURE.md).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::engine {

struct FamilyComponent {
  std::string folder;  // "transformer", "vae", ...
  std::string what;    // one line for errors and `orochi inspect`
  bool required = true;
};

struct FamilyWorkflow {
  std::string name;   // "t2va"
  std::string about;  // one line
  bool built = false; // false: named, so a request for it gets a clear "not yet" instead of nothing
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  virtual std::string name() const = 0;
  // Whether the folder holds this family's model (from its configs alone, no weights read).
  virtual bool detect(const std::string& dir) const = 0;
  virtual std::vector<FamilyComponent> components() const = 0;
  virtual std::vector<FamilyWorkflow> workflows() const = 0;
  // The phases of a request in order; the planner plans each ("text encoder", "denoiser", "decode").
  virtual std::vector<std::string> phases() const = 0;
};

// Every family this build knows.
const std::vector<const ModelFamily*>& model_families();

// The family of the model in `dir`: not_found when the folder is missing, unsupported (naming what
// the folder looks like and the families known) when no family recognizes it.
Expected<const ModelFamily*> detect_family(const std::string& dir);

// `workflow` of `family`: unsupported when the family does not name it or has not built it yet.
Status check_workflow(const ModelFamily& family, const std::string& workflow);

}  // namespace orochi::engine
