// Which symbols libdnngraph.so exports: the library is compiled with -fvisibility=hidden, and each
// public header wraps its declarations in DNNGRAPH_API_BEGIN / DNNGRAPH_API_END, so exactly what
// include/dnngraph declares is exported and every internal symbol stays private to the library
// (a downstream program cannot come to depend on it, and it cannot clash with the program's own).
// The pImpl structs the public classes point to are declared before DNNGRAPH_API_BEGIN, so they
// keep the visibility of the code that includes them (hidden in the library).
#pragma once
#if defined(__GNUC__) || defined(__clang__)
#define DNNGRAPH_API_BEGIN _Pragma("GCC visibility push(default)")
#define DNNGRAPH_API_END _Pragma("GCC visibility pop")
#else
#define DNNGRAPH_API_BEGIN
#define DNNGRAPH_API_END
#endif
