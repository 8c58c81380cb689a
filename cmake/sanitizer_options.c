/* sanitizer_options.c: LeakSanitizer's defaults in a sanitizer build
 * (CLF_SANITIZE, CLF_FUZZ), linked into every executable of the build (the
 * runtime looks for __lsan_default_options in the program itself). Options
 * in LSAN_OPTIONS (tests/CMakeLists.txt names the suppressions there) are
 * read after these and add to them.
 *
 * intercept_tls_get_addr=0: in GCC 12's runtime (and LLVM's of those
 * years, the fuzzing build's) the __tls_get_addr interceptor records each dynamic TLS block (a thread's
 * block for a thread_local of a dlopen'd library: here libLLVM, which PoCL
 * uses to compile kernels, in the thread that builds a program and in
 * PoCL's worker threads that compile work-group functions) for the leak
 * check to scan. When a block starts 16 bytes past a page boundary, it
 * takes the block for glibc 2.19's layout and reads the two words before it
 * as the block's real start and size; since glibc 2.25 those words are
 * ASan's own chunk header. LeakSanitizer's tracer then scans that garbage
 * range at exit and dies ("Tracer caught signal 11 ... LeakSanitizer has
 * encountered a fatal error"; google/sanitizers#1322). LLVM's blocks are
 * ASan chunks of 32 or 48 bytes, one in 128 or 256 of which starts there,
 * and each thread that compiles takes its own: a rare crash of any process
 * that compiles kernels on a cold cache, with live threads. Without the
 * interception the blocks are not scanned as roots of their own, yet with
 * GCC 12's runtime a heap pointer held only in a live thread's thread_local
 * of a dlopen'd library is still not reported: the blocks are themselves
 * heap chunks that glibc keeps reachable. */
#include <sanitizer/lsan_interface.h>

const char *__lsan_default_options(void)
{
    return "intercept_tls_get_addr=0";
}
