import sys

import clformer

if len(sys.argv) < 2:
    sys.exit("usage: %s CKPT [DEVICE] < SOURCE > TRANSLATION" % sys.argv[0])
lines = sys.stdin.read().splitlines()
device = sys.argv[2] if len(sys.argv) > 2 else "auto"  # auto: CLF_DEVICE or the best device
with clformer.Translator(sys.argv[1], device=device) as t:  # the checkpoint's tokenizer and defaults
    for result in t.translate_batch(lines):
        print(result.hypotheses[0])
