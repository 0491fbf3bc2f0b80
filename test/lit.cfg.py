# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "weft"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".td"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.weft_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "Inputs"]

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["weft-opt", "weftc", "weft-tblgen", "weft-run"], [config.weft_tools_dir])
llvm_config.add_tool_substitutions(["FileCheck", "not", "count"],
                                   [config.llvm_tools_dir])
config.substitutions.append(("%python", config.weft_python))
# The include paths of the dialect's .td files (weft-tblgen tests).
config.substitutions.append(
    ("%weft_td_includes",
     "-I %s -I %s" % (os.path.join(config.weft_src_root, "include"),
                      os.path.join(os.path.dirname(config.llvm_tools_dir),
                                   "include"))))
# PYTHONPATH for the example models (weft.examples), e.g. the weights-free gpt.
config.substitutions.append(
    ("%weft_pythonpath",
     os.path.join(os.path.dirname(config.test_source_root), "python")))
