//===- AtomicOutput.h - Replace -o FILE only on success ---------*- C++ -*-===//
//
// mlir-opt and mlir-translate style drivers open `-o FILE` before they run and
// delete it when they fail, so a failed run used to destroy the previous
// output. `runWithAtomicOutput` runs such a driver with `-o` pointing at a
// temporary file beside FILE and renames it over FILE only when the driver
// succeeds; on failure FILE stays as it was and the temporary file is
// removed. Standard output (`-`) and existing files that are not regular
// files (/dev/null) are passed through untouched.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TOOLS_ATOMICOUTPUT_H
#define STRATA_TOOLS_ATOMICOUTPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace strata::tools {

/// Runs `driver(argc, argv)` (0 on success) with its `-o FILE` argument
/// (`-o FILE`, `-o=FILE`, `--o FILE` or `--o=FILE`) redirected as described
/// above. Returns the driver's exit code, or 1 when the output cannot be
/// created or renamed.
inline int runWithAtomicOutput(int argc, char **argv,
                               llvm::function_ref<int(int, char **)> driver) {
  namespace fs = llvm::sys::fs;
  std::vector<std::string> args(argv, argv + argc);
  // The last -o wins; remember where its value is.
  int valueIndex = -1;
  bool joined = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = args[i];
    if (arg == "--")
      break;
    if ((arg == "-o" || arg == "--o") && i + 1 < argc) {
      valueIndex = ++i;
      joined = false;
    } else if (arg.starts_with("-o=") || arg.starts_with("--o=")) {
      valueIndex = i;
      joined = true;
    }
  }
  if (valueIndex < 0)
    return driver(argc, argv);
  llvm::StringRef arg = args[valueIndex];
  std::string prefix, output;
  if (joined) {
    size_t eq = arg.find('=');
    prefix = arg.substr(0, eq + 1).str();
    output = arg.substr(eq + 1).str();
  } else {
    output = arg.str();
  }
  fs::file_status status;
  if (output == "-" ||
      (!fs::status(output, status) && !fs::is_regular_file(status)))
    return driver(argc, argv);

  int fd;
  llvm::SmallString<256> temporary;
  if (std::error_code ec =
          fs::createUniqueFile(output + ".tmp-%%%%%%%%", fd, temporary)) {
    llvm::errs() << args[0] << ": error: cannot write '" << output
                 << "': " << ec.message() << "\n";
    return 1;
  }
  {
    llvm::raw_fd_ostream close(fd, /*shouldClose=*/true);
  }
  args[valueIndex] = prefix + temporary.str().str();
  std::vector<char *> newArgv;
  for (std::string &a : args)
    newArgv.push_back(a.data());
  newArgv.push_back(nullptr);
  int code = driver(argc, newArgv.data());
  if (code != 0) {
    fs::remove(temporary);
    return code;
  }
  if (std::error_code ec = fs::rename(temporary, output)) {
    fs::remove(temporary);
    llvm::errs() << args[0] << ": error: cannot write '" << output
                 << "': " << ec.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace strata::tools

#endif // STRATA_TOOLS_ATOMICOUTPUT_H
