/* energy.c: energy.h's counters: RAPL package energy in microjoules from
 * /sys/class/powercap/intel-rapl:N/energy_uj, read at a span's start and
 * end. Reading them may need root (Linux 5.10 made energy_uj readable by
 * root only, after PLATYPUS); where it is not readable, or the machine
 * (a VM, as the 2-vCPU ones this project runs on) has no powercap at all,
 * the figure is NaN and the report says null. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "energy.h"

static bool read_ull(const char *root, const char *dir, const char *file, unsigned long long *v)
{
    char path[320];
    snprintf(path, sizeof path, "%s/%s/%s", root, dir, file);
    FILE *f = fopen(path, "r");
    bool ok = f && fscanf(f, "%llu", v) == 1;
    if (f)
        fclose(f);
    return ok;
}

/* "intel-rapl:N", one colon: a package domain. */
static bool is_package(const char *name)
{
    const char *c = strchr(name, ':');
    return !strncmp(name, "intel-rapl:", 11) && c && !strchr(c + 1, ':') && c[1];
}

void bench_energy_begin(struct bench_energy *e, const char *root)
{
    memset(e, 0, sizeof *e);
    snprintf(e->root, sizeof e->root, "%s", root ? root : "/sys/class/powercap");
    DIR *d = opendir(e->root);
    struct dirent *de;
    while (d && (de = readdir(d)) && e->n < BENCH_ENERGY_DOMAINS) {
        if (!is_package(de->d_name) || strlen(de->d_name) >= sizeof e->dir[0])
            continue;
        int k = e->n;
        snprintf(e->dir[k], sizeof e->dir[k], "%s", de->d_name);
        if (!read_ull(e->root, e->dir[k], "energy_uj", &e->start[k]))
            continue;  /* not readable (root only): not counted */
        if (!read_ull(e->root, e->dir[k], "max_energy_range_uj", &e->range[k]))
            e->range[k] = 0;
        e->n++;
    }
    if (d)
        closedir(d);
}

double bench_energy_end(const struct bench_energy *e)
{
    double uj = 0;
    int read = 0;
    for (int k = 0; k < e->n; k++) {
        unsigned long long now;
        if (!read_ull(e->root, e->dir[k], "energy_uj", &now))
            continue;
        if (now >= e->start[k])
            uj += (double)(now - e->start[k]);
        else if (e->range[k] >= e->start[k])  /* wrapped once at max_energy_range_uj */
            uj += (double)(e->range[k] - e->start[k] + now);
        else
            continue;  /* went back with no known range: not a figure */
        read++;
    }
    return read && read == e->n ? uj * 1e-6 : NAN;  /* a domain missing at the end: no sum to trust */
}
