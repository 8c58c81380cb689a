/* fuzz_numbers.c: the command's reader of numeric option values
 * (cli/cli.c: cli_number, cli_long), which every `clformer` command uses
 * for its --steps, --beam, --alpha, … The input is the value's text. An
 * accepted integer must be all decimal digits after an optional sign and
 * equal strtoll's reading within the range; an accepted number must be
 * what strtod reads, finite, within the range, with nothing left over.
 * Each refusal prints its message: fuzz/run.sh passes -close_fd_mask=2. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_text(data, size);
    double x;
    if (cli_number("--n", s, -1000, 1e6, true, &x)) {
        const char *p = s + (*s == '-' || *s == '+');
        if (!*p || strspn(p, "0123456789") != strlen(p) || x < -1000 || x > 1e6 || x != (double)strtoll(s, NULL, 10))
            abort();
    }
    if (cli_number("--x", s, -1e300, 1e300, false, &x)) {
        char *end;
        errno = 0;
        double y = strtod(s, &end);
        if (*end || x != y || !(x >= -1e300 && x <= 1e300))
            abort();
    }
    long l;
    if (cli_long("--l", s, -5, 5, &l) && (l < -5 || l > 5))
        abort();
    free(s);
    return 0;
}
