# Included right after llama.cpp's project() when scripts/install.sh builds llama-cpp-python
# (-DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>). Why: llama-cpp-python forces llama.cpp's common
# library on (set(LLAMA_BUILD_COMMON ON CACHE BOOL "" FORCE), so -DLLAMA_BUILD_COMMON=OFF is
# overwritten), yet its Python package never loads it: llama_cpp loads libllama and libggml* from
# llama_cpp/lib, libllama does not link libllama-common, and the common library (with the
# cpp-httplib it pulls in) is about 30 % of the compile. A normal variable set here shadows that
# cache entry for llama.cpp's directory (policy CMP0077: its option() then leaves it alone), so
# common, cpp-httplib and their install rule are not generated. The multimodal libmtmd is switched
# off with -DLLAVA_BUILD=OFF in CMAKE_ARGS.
set(LLAMA_BUILD_COMMON OFF)
