# Included right after llama.cpp's project() (CMAKE_PROJECT_llama.cpp_INCLUDE, set by install_llama.sh).
# llama-cpp-python forces LLAMA_BUILD_COMMON on, which compiles llama.cpp's command-line helper library and its HTTP
# client (about half of the compile) that the Python package neither loads nor needs. A normal variable of that name
# overrides the cached one in llama.cpp's directory, so llama.cpp skips them; libllama and libggml are unchanged.
set(LLAMA_BUILD_COMMON OFF)
