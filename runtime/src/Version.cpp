//===- Version.cpp - Strata runtime version -------------------------------===//

#include "strata-rt/Version.h"

const char *strata::rt::getVersion() { return "0.1.0"; }
