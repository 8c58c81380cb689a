/* fuzz.h: what the harnesses share. Each fuzz_<thing>.c defines
 * LLVMFuzzerTestOneInput over one parser of outside input; libFuzzer
 * drives it (-DCLF_FUZZ=ON, clang) and replay.c runs it on the corpus
 * (ctest fuzz_replay_<thing>, any compiler). Most of the library's parsers
 * take a path, so the input is written to a file first: one per process
 * and slot, created once and rewritten for every input. */
#ifndef CLF_FUZZ_H
#define CLF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data[0..size) to this process's temporary file number slot
 * (0..7) and returns its path; aborts (a harness failure, not a finding)
 * when the file cannot be written. */
const char *fuzz_file(int slot, const uint8_t *data, size_t size);

/* The input cut at its NUL bytes, for harnesses that need several texts:
 * part k is parts[k] with lens[k] bytes; returns how many (at most max;
 * the last one takes the rest, NULs included). */
int fuzz_split(const uint8_t *data, size_t size, const uint8_t **parts, size_t *lens, int max);

/* data[0..size) as a malloc'd NUL-terminated string (aborts when out of
 * memory); the caller frees it. */
char *fuzz_text(const uint8_t *data, size_t size);

#endif
