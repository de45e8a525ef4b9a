/* VKGMM_API marks what libvkgmm.so exports: the C functions of vkgmm.h and the C++ classes and functions
 * of the other public headers. The library is built with hidden visibility (-fvisibility=hidden,
 * -fvisibility-inlines-hidden), so everything without the mark, the internals, stays inside it.
 * VKGMM_HIDDEN keeps a part of an exported class (its private implementation types) inside the library.
 * C and C++ (C99 / C++17 and later). */
#ifndef VKGMM_EXPORT_H_
#define VKGMM_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define VKGMM_API __attribute__((visibility("default")))
#define VKGMM_HIDDEN __attribute__((visibility("hidden")))
#else
#define VKGMM_API
#define VKGMM_HIDDEN
#endif

#endif /* VKGMM_EXPORT_H_ */
