/* settings.h: reading what the user set: a setting's value (settings.c,
 * the one table of every name the library reads), where a tunable's value
 * came from (tunables.c), and CLF_DEVICE_LIMITS's syntax (limits.c). */
#ifndef CLF_RUNTIME_SETTINGS_H
#define CLF_RUNTIME_SETTINGS_H

#include "clformer/advanced/tune.h"

/* The setting name (settings.c lists every one the library reads, the
 * tunables' too): the value clf_setting_set last gave it in this
 * process, else the environment's, or NULL when it is not set. */
const char *clf_setting_get(const char *name);
/* The origin of f's value for our kernels' parameter called name
 * (tunables.c); the name must exist. */
const struct clf_param_origin *clf_param_origin(const struct clf_params_found *f, const char *name);

/* limits.c: refuses a malformed CLF_DEVICE_LIMITS whatever the device. */
clf_status clf_device_limits_check(const char *spec);

#endif
