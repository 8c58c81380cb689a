/* limits.c: CLF_DEVICE_LIMITS, which makes a device look like one with
 * smaller limits (or another type), so the code paths that only GPUs take
 * run in CI on CPU implementations. Only lowering is allowed: a kernel
 * tested under limits the device does not have would prove nothing. The
 * word `gpu` is a shape, not a demand: its local memory and work-group size
 * are clamped to a device that has less (Mesa's llvmpipe has 32 KiB), where
 * an explicit local_mem= or max_wg= above the device is refused. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "settings.h"

#define VAR "CLF_DEVICE_LIMITS"

/* What a spec asks for; a zero `has_*` leaves the device's own value. */
struct limits {
    bool has_type, has_local, has_wg, has_alloc, has_global, has_unified;
    bool local_soft, wg_soft; /* set by the word gpu: clamp, do not refuse */
    cl_device_type type;
    cl_ulong local_mem, max_alloc, global_mem;
    size_t max_wg;
    bool unified;
    char local_item[48], wg_item[48], alloc_item[48], global_item[48], unified_item[48];  /* for messages */
};

/* "48K", "1M", "4096": bytes (or a count) with an optional K/M/G suffix. */
static bool parse_size(const char *s, cl_ulong *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1024 * 1024, end++;
    else if (*end == 'g' || *end == 'G')
        mul = 1024ULL * 1024 * 1024, end++;
    if (*end || v == 0 || v > (~0ULL) / mul)
        return false;
    *out = v * mul;
    return true;
}

static clf_status bad(const char *item, const char *why)
{
    return clf_error_set(NULL, CLF_ERR_ARG, VAR ": '%s' %s", item, why);
}

static clf_status parse_item(const char *item, struct limits *l)
{
    if (!strcmp(item, "gpu")) {
        l->has_type = l->has_local = l->has_wg = l->has_unified = true;
        l->local_soft = l->wg_soft = true;
        l->type = CL_DEVICE_TYPE_GPU;
        l->local_mem = 48 * 1024;
        l->max_wg = 256;
        l->unified = false;
        snprintf(l->local_item, sizeof l->local_item, "gpu (local_mem=48K)");
        snprintf(l->wg_item, sizeof l->wg_item, "gpu (max_wg=256)");
        snprintf(l->unified_item, sizeof l->unified_item, "gpu (unified=0)");
        return CLF_OK;
    }
    const char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1])
        return bad(item, "is not key=value (keys: type, local_mem, max_wg, max_alloc, global_mem, unified; or the word gpu)");
    size_t klen = (size_t)(eq - item);
    const char *v = eq + 1;
    cl_ulong n;
#define KEY(k) (klen == strlen(k) && !strncmp(item, k, klen))
    if (KEY("type")) {
        if (!strcmp(v, "gpu"))
            l->type = CL_DEVICE_TYPE_GPU;
        else if (!strcmp(v, "cpu"))
            l->type = CL_DEVICE_TYPE_CPU;
        else if (!strcmp(v, "accelerator"))
            l->type = CL_DEVICE_TYPE_ACCELERATOR;
        else
            return bad(item, "has an unknown type: want gpu, cpu or accelerator");
        l->has_type = true;
    } else if (KEY("local_mem") || KEY("max_alloc") || KEY("global_mem")) {
        if (!parse_size(v, &n))
            return bad(item, "is not a positive size in bytes (a number, optionally with K, M or G)");
        cl_ulong *value = &l->global_mem;
        bool *has = &l->has_global;
        char *named = l->global_item;
        if (KEY("local_mem"))
            value = &l->local_mem, has = &l->has_local, named = l->local_item, l->local_soft = false;
        else if (KEY("max_alloc"))
            value = &l->max_alloc, has = &l->has_alloc, named = l->alloc_item;
        *value = n;
        *has = true;
        snprintf(named, sizeof l->local_item, "%s", item);
    } else if (KEY("max_wg")) {
        if (!parse_size(v, &n) || n > (1u << 30))
            return bad(item, "is not a positive work-group size");
        l->max_wg = (size_t)n;
        l->has_wg = true;
        l->wg_soft = false;
        snprintf(l->wg_item, sizeof l->wg_item, "%s", item);
    } else if (KEY("unified")) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return bad(item, "wants 0 or 1");
        l->unified = v[0] == '1';
        l->has_unified = true;
        snprintf(l->unified_item, sizeof l->unified_item, "%s", item);
    } else {
        return bad(item, "has an unknown key: want type, local_mem, max_wg, max_alloc, global_mem or unified");
    }
#undef KEY
    return CLF_OK;
}

static clf_status parse(const char *spec, struct limits *l)
{
    memset(l, 0, sizeof *l);
    char buf[256];
    if (strlen(spec) >= sizeof buf)
        return clf_error_set(NULL, CLF_ERR_ARG, VAR " is longer than %zu characters", sizeof buf - 1);
    strcpy(buf, spec);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item))
            item++;
        for (size_t e = strlen(item); e > 0 && isspace((unsigned char)item[e - 1]); e--)
            item[e - 1] = 0;
        clf_status st;
        if (*item && (st = parse_item(item, l)) != CLF_OK)
            return st;
    }
    return CLF_OK;
}

static clf_status raised(const struct clf_device_info *di, const char *item, const char *what,
                         unsigned long long real)
{
    return clf_error_set(NULL, CLF_ERR_ARG,
                         VAR ": %s asks for more %s than %s has (%llu): limits can only be lowered", item, what,
                         di->device_name, real);
}

clf_status clf_device_shape(struct clf_device_info *di, const char *spec)
{
    if (!spec || !*spec)
        return CLF_OK;
    struct limits l;
    clf_status st = parse(spec, &l);
    if (st)
        return st;
    if (l.local_soft && l.local_mem > di->local_mem)
        l.local_mem = di->local_mem;
    if (l.wg_soft && l.max_wg > di->max_work_group)
        l.max_wg = di->max_work_group;
    if (l.has_local && l.local_mem > di->local_mem)
        return raised(di, l.local_item, "local memory (local_mem, bytes)", di->local_mem);
    if (l.has_wg && l.max_wg > di->max_work_group)
        return raised(di, l.wg_item, "work-items per group (max_wg)", di->max_work_group);
    if (l.has_alloc && l.max_alloc > di->max_alloc)
        return raised(di, l.alloc_item, "bytes per allocation (max_alloc)", di->max_alloc);
    if (l.has_global && l.global_mem > di->global_mem)
        return raised(di, l.global_item, "device memory (global_mem, bytes)", di->global_mem);
    if (l.has_unified && l.unified && !di->host_unified)
        return clf_error_set(NULL, CLF_ERR_ARG,
                             VAR ": %s claims host-unified memory, which %s does not have (unified=0): limits "
                             "can only be lowered", l.unified_item, di->device_name);
    if (l.has_type)
        di->type = l.type;
    if (l.has_local)
        di->local_mem = l.local_mem;
    if (l.has_wg)
        di->max_work_group = l.max_wg;
    if (l.has_alloc)
        di->max_alloc = l.max_alloc;
    if (l.has_global)
        di->global_mem = l.global_mem;
    if (di->max_alloc > di->global_mem)  /* no allocation larger than the whole memory */
        di->max_alloc = di->global_mem;
    if (l.has_unified)
        di->host_unified = l.unified;
    snprintf(di->shaped, sizeof di->shaped, "%s", spec);
    return CLF_OK;
}

/* The checks of a spec that do not depend on a device: for clf_devices_list,
 * which refuses a malformed CLF_DEVICE_LIMITS outright. */
clf_status clf_device_limits_check(const char *spec)
{
    struct limits l;
    return spec && *spec ? parse(spec, &l) : CLF_OK;
}
