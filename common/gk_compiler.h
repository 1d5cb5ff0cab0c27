/*
 * gk_compiler.h - the compiler attributes every folder's C shares (loader,
 * cache, recipes, packager, cli, tests). Macros only: no code, no types, no
 * dependency, so including it adds no edge between the folders. Never
 * installed; not API.
 */
#ifndef GK_COMPILER_H
#define GK_COMPILER_H

/* Marks a printf-like function: argument f is the format, the values start
 * at argument a (0 for a va_list). The compiler then checks each call's
 * format against its arguments, as it does printf's. */
#if defined(__GNUC__)
#define GK__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GK__PRINTF(f, a)
#endif

#endif /* GK_COMPILER_H */
