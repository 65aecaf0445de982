//===- SanitizerDefaults.cpp - Default options of the sanitizer runtimes --===//
//
// Linked into every executable of a STRATA_SANITIZE build
// (cmake/StrataOptions.cmake). $ASAN_OPTIONS and $UBSAN_OPTIONS still
// override each option.
//
// allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the unused part of
// its slabs when the code including Allocator.h is built with ASan, and
// unpoisons what it hands out. Strata's code is instrumented but Debian's
// libMLIR.so is not, and both allocate from the same allocators (the
// StorageUniquer's), so memory that libMLIR.so allocated would still read as
// poisoned to the instrumented side ("use-after-poison" in StringAttr::get).
// Manual poisoning is therefore off; every other check stays on.
//
//===----------------------------------------------------------------------===//

extern "C" {
__attribute__((used, visibility("default"))) const char *
__asan_default_options() {
  return "allow_user_poisoning=0";
}
__attribute__((used, visibility("default"))) const char *
__ubsan_default_options() {
  return "print_stacktrace=1";
}
}
