# -*- Python -*-
# gtest binaries (names ending in "Tests") run through lit, one test per case.
import os

import lit.formats

config.name = "STRATA-Unit"
config.suffixes = []
config.test_source_root = os.path.join(config.strata_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.environment["STRATA_TARGET_PATH"] = os.path.join(config.strata_src_root, "targets")
