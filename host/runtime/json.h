/* json.h: the runtime's side of the JSON reader (clformer_json.h): the
 * writer of string literals its own files need. */
#ifndef CLF_RUNTIME_JSON_H
#define CLF_RUNTIME_JSON_H

#include <stdio.h>

#include "clformer_json.h"

/* Writes s as a JSON string literal, quotes included. */
void clf_json_write_str(FILE *f, const char *s);

#endif
