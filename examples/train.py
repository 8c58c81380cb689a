import os
import sys

import clformer

if len(sys.argv) < 5:
    sys.exit("usage: %s SOURCE TARGET OUT STEPS [DEVICE]" % sys.argv[0])
source, target, out, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
device = sys.argv[5] if len(sys.argv) > 5 else "auto"  # auto: CLF_DEVICE or the best device
os.makedirs(out, exist_ok=True)
bpe = clformer.learn_bpe([source, target], os.path.join(out, "bpe.model"), vocab_size=400)
with clformer.Trainer(source, target, bpe, preset="tiny", max_tokens=512, warmup=10, device=device) as t:
    for _ in range(steps):
        u = t.step()  # one update: its batches, their gradients, Adam
        print(u.step, "%.6f" % u.loss)
    print(t.save(out))  # OUT/ckpt-STEPS.safetensors, bpe.model beside it: Translator loads it
