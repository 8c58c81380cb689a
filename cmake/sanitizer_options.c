/* sanitizer_options.c: LeakSanitizer's and AddressSanitizer's defaults in
 * a sanitizer build (CLF_SANITIZE, CLF_FUZZ), linked into every executable
 * of the build (the runtime looks for __lsan_default_options and
 * __asan_default_options in the program itself). Options in LSAN_OPTIONS
 * (tests/CMakeLists.txt names the suppressions there) and ASAN_OPTIONS are
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
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>

const char *__lsan_default_options(void)
{
    return "intercept_tls_get_addr=0";
}

/* use_sigaltstack=0: ASan gives each thread an alternate signal stack
 * (4·SIGSTKSZ, 54016 bytes on an AVX-512 machine, where the kernel's
 * SIGSTKSZ is 13504) and unmaps "its" stack when the thread ends. LLVM,
 * which PoCL loads to compile kernels, replaces a stack smaller than its
 * own (SIGSTKSZ + 64 KiB = 79040 bytes) with one from malloc in the thread
 * that compiles; when that thread ends, ASan's munmap of the malloc'd
 * memory fails and the process dies ("AddressSanitizer failed to
 * deallocate ... unable to unmap", in UnsetAlternateSignalStack). Seen in
 * test_threads, whose threads open contexts and compile (strace: the
 * thread's sigaltstack replaced by one at an ASan heap address), on every
 * run on this 2-vCPU AVX-512 EPYC, the commit before this stop's changes
 * too. Without ASan's own stacks, a stack overflow is reported as a plain
 * SIGSEGV instead of ASan's report: a smaller loss than a false crash. */
const char *__asan_default_options(void)
{
    return "use_sigaltstack=0";
}
