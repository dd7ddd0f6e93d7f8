// libFuzzer target: kiln-train's checkpoint restore path (load_checkpoint in
// examples/train/checkpoint.h: load_safetensors, then restore) on arbitrary bytes.
//
// Contract under test: a checkpoint is restored or refused with a kiln::Error naming
// it, in a few thousand characters at most (no other exception, no crash, no deep
// recursion on nested metadata); a restored one reports 0..epochs completed epochs
// and a history of that length.
#include <kiln/kiln.h>

#include <cstdio>
#include <cstdlib>

#include "checkpoint.h"
#include "fuzz_file.h"
#include "tiny_run.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kiln::fuzz::InputFile input("kiln-fuzz-checkpoint");
  static kiln::fuzz::TinyRun run(input.path());
  input.write(data, size);
  kiln::train::History history;
  try {
    const int64_t done = kiln::train::load_checkpoint(run.args, *run.model, *run.optimizer,
                                                      run.schedule.get(), nullptr, history);
    if (done < 0 || done > run.args.epochs ||
        history.train_loss.size() != static_cast<size_t>(done)) {
      std::fprintf(stderr, "fuzz_checkpoint: restored %lld epochs with a history of %zu\n",
                   static_cast<long long>(done), history.train_loss.size());
      std::abort();
    }
  } catch (const kiln::Error& e) {
    const std::string message = e.what();
    if (message.find(input.path()) == std::string::npos || message.size() > 4096) {
      std::fprintf(stderr, "fuzz_checkpoint: the error does not name the file or is %zu long: %s\n",
                   message.size(), message.substr(0, 4096).c_str());
      std::abort();
    }
  }
  return 0;
}
