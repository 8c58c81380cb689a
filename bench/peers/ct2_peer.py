"""Peer measurement: CTranslate2 (PyPI `ctranslate2`) on the CPU, running the
weights of a clformer checkpoint converted into its format, on the same input
and with the same thread count as `clformer translate` / `clformer bench
translate`. Prints one JSON line per search (greedy, beam 4).

Usage:
  python3 ct2_peer.py CKPT INPUT [--ids] [--bpe MODEL] [--beams 1,4] [--batch 32]
                      [--max-extra N] [--alpha 0.6] [--out PREFIX] [--model-dir DIR]
                      [--compute-type float32|int8|int8_float32|int16|...]

CKPT is a clformer checkpoint (safetensors; its __metadata__ config says the
shapes). INPUT holds one source per line: text, encoded with the SentencePiece
model (--bpe, or bpe.model beside CKPT), or with --ids the subword ids
themselves (as `clformer bpe encode` writes them, or `clformer bench translate
--export`). Plain or gzip. Sources are sorted by length and cut into batches of
--batch sentences as clformer cuts them; each batch may run to its longest
source + --max-extra tokens (clformer's limit is per sentence; CTranslate2 has
one per call). THREADS=N sets the threads (default 2);
--compute-type is CTranslate2's (default float32: the weights are converted
in float32 and CTranslate2 quantizes them at load, as its users do). --out PREFIX writes the
outputs in input order to PREFIX.beamK (text, or ids with --ids).

The conversion follows the checkpoint's metadata (docs/checkpoints.md):
matrices stored (in, out) are transposed to CTranslate2's (out, in); in_proj
[W_Q | W_K | W_V] is its fused QKV (self) or Q and the fused KV (cross); the
output projection is the target embedding table (tied, no bias); embeddings
are scaled by sqrt(d_model); the sinusoids are interleaved (sin at even
columns), so the table is given explicitly (CTranslate2's own puts the sines
first); EOS is appended to every source; layer norms take the config's
ln_eps. Token strings are the ids ("<blank>", "<s>", "</s>", "<unk>" for
0..3). CTranslate2's length penalty is length^alpha, clformer's
((5 + length) / 6)^alpha: beam search may rank a few hypotheses otherwise;
greedy outputs are comparable token for token.
"""
import gzip, json, math, os, sys, tempfile, time

import numpy as np

SPECIALS = ["<blank>", "<s>", "</s>", "<unk>"]  # clformer's pad, bos, eos, unk ids 0..3


def read_checkpoint(path):
    from safetensors.numpy import load_file
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        meta = json.loads(f.read(n)).get("__metadata__", {})
    if meta.get("format") != "clformer-1":
        sys.exit(f"ct2_peer: {path} is not a clformer checkpoint (format {meta.get('format')})")
    cfg = json.loads(meta["config"])
    inf = json.loads(meta["inference"]) if "inference" in meta else {}
    return cfg, inf, meta, load_file(path)


def sinusoids(n, d):
    """clformer's table (cl/embed.cl): float32 frequency exp2(-(j & ~1) / d * log2(10000)), angle t * freq."""
    j = np.arange(d, dtype=np.int64)
    freq = np.exp2((-(j & ~1).astype(np.float32) / np.float32(d)) * np.float32(13.287712379549449)).astype(np.float32)
    a = (np.arange(n, dtype=np.float32)[:, None] * freq[None, :]).astype(np.float32).astype(np.float64)
    return np.where(j % 2 == 0, np.sin(a), np.cos(a)).astype(np.float32)


def convert(ckpt, out_dir):
    from ctranslate2.specs import common_spec, transformer_spec
    cfg, inf, _, w = read_checkpoint(ckpt)
    if cfg.get("enc_window", -1) >= 0 or cfg.get("dec_window", -1) >= 0:
        sys.exit("ct2_peer: restricted attention (enc_window/dec_window) has no CTranslate2 equivalent")
    acts = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}
    act = inf.get("activation", cfg.get("activation", "relu"))
    if act not in acts:
        sys.exit(f"ct2_peer: activation {act} is not mapped")
    pre = cfg["norm"] == "pre"
    d, L = cfg["d_model"], (cfg["enc_layers"], cfg["dec_layers"])
    spec = transformer_spec.TransformerSpec.from_config(L, cfg["heads"], pre_norm=pre, activation=acts[act])
    spec.config.layer_norm_epsilon = cfg["ln_eps"]
    spec.config.add_source_eos = True
    spec.config.decoder_start_token = "<s>"
    T = lambda name: np.ascontiguousarray(w[name].T)

    def linear(s, weight, bias):
        s.weight, s.bias = np.ascontiguousarray(weight), np.ascontiguousarray(bias)

    def norm(s, prefix):
        s.gamma, s.beta = w[prefix + ".weight"], w[prefix + ".bias"]

    def attention(s, prefix, self_attn):
        wi, bi = T(prefix + ".in_proj.weight"), w[prefix + ".in_proj.bias"]  # (3d, d), (3d)
        if self_attn:
            linear(s.linear[0], wi, bi)
        else:
            linear(s.linear[0], wi[:d], bi[:d])
            linear(s.linear[1], wi[d:], bi[d:])
        linear(s.linear[-1], T(prefix + ".out_proj.weight"), w[prefix + ".out_proj.bias"])

    def ffn(s, prefix):
        linear(s.linear_0, T(prefix + ".linear1.weight"), w[prefix + ".linear1.bias"])
        linear(s.linear_1, T(prefix + ".linear2.weight"), w[prefix + ".linear2.bias"])

    pos = w["pos.weight"] if cfg["positions"] == "learned" else sinusoids(cfg["max_len"], d)
    embed = w["embed.weight"]
    spec.encoder.embeddings[0].weight = embed if cfg["share_embeddings"] else w["src_embed.weight"]
    spec.decoder.embeddings.weight = embed
    spec.decoder.projection.weight = embed  # tied, no bias
    for side in (spec.encoder, spec.decoder):
        side.scale_embeddings = True
        side.position_encodings.encodings = pos
    for l, layer in enumerate(spec.encoder.layer):
        p = f"encoder.layers.{l}"
        attention(layer.self_attention, p + ".self_attn", True)
        norm(layer.self_attention.layer_norm, p + ".norm1")
        ffn(layer.ffn, p + ".ffn")
        norm(layer.ffn.layer_norm, p + ".norm2")
    for l, layer in enumerate(spec.decoder.layer):
        p = f"decoder.layers.{l}"
        attention(layer.self_attention, p + ".self_attn", True)
        norm(layer.self_attention.layer_norm, p + ".norm1")
        attention(layer.attention, p + ".cross_attn", False)
        norm(layer.attention.layer_norm, p + ".norm2")
        ffn(layer.ffn, p + ".ffn")
        norm(layer.ffn.layer_norm, p + ".norm3")
    if pre:
        norm(spec.encoder.layer_norm, "encoder.norm")
        norm(spec.decoder.layer_norm, "decoder.norm")
    vocab = SPECIALS + [str(i) for i in range(len(SPECIALS), cfg["vocab"])]
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.validate()
    spec.optimize(quantization=None)
    spec.save(out_dir)
    return cfg


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def tokens(ids):
    return [SPECIALS[i] if i < len(SPECIALS) else str(i) for i in ids]


def main(argv):
    args, opts, flags = [], {}, set()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--ids",):
            flags.add(a)
        elif a.startswith("--"):
            if i + 1 >= len(argv):
                sys.exit(f"ct2_peer: {a} wants a value")
            opts[a], i = argv[i + 1], i + 1
        else:
            args.append(a)
        i += 1
    if len(args) != 2:
        sys.exit(__doc__)
    ckpt, inp = args
    import ctranslate2
    threads = int(os.environ.get("THREADS", "2"))
    batch = int(opts.get("--batch", "32"))
    max_extra = int(opts.get("--max-extra", "50"))
    alpha = float(opts.get("--alpha", "0.6"))
    beams = [int(b) for b in opts.get("--beams", "1,4").split(",")]
    lines = read_lines(inp)
    sp = None
    if "--ids" in flags:
        src = [[int(x) for x in line.split()] for line in lines]
    else:
        import sentencepiece
        bpe = opts.get("--bpe", os.path.join(os.path.dirname(os.path.abspath(ckpt)), "bpe.model"))
        sp = sentencepiece.SentencePieceProcessor(model_file=bpe)
        src = [sp.encode(line) for line in lines]
    tmp = None
    model_dir = opts.get("--model-dir")
    if not model_dir:
        tmp = tempfile.TemporaryDirectory(prefix="ct2_peer.")
        model_dir = tmp.name
    cfg = convert(ckpt, model_dir)
    src = [s[: cfg["max_len"] - 1] for s in src]  # what clformer translate keeps (truncated with a warning)
    order = sorted(range(len(src)), key=lambda k: (len(src[k]), k))
    batches = [order[k:k + batch] for k in range(0, len(order), batch)]
    compute = opts.get("--compute-type", "float32")
    tr = ctranslate2.Translator(model_dir, device="cpu", compute_type=compute, inter_threads=1,
                                intra_threads=threads)

    def run(beam, which):
        out = [None] * len(src)
        for b in which:
            limit = min(max(len(src[k]) for k in b) + max_extra, cfg["max_len"] - 1)
            res = tr.translate_batch([tokens(src[k]) for k in b], beam_size=beam, length_penalty=alpha,
                                     max_decoding_length=limit, min_decoding_length=1)
            for k, r in zip(b, res):
                out[k] = [SPECIALS.index(t) if t in SPECIALS else int(t) for t in r.hypotheses[0]]
        return out

    for beam in beams:
        run(beam, batches[:1])  # warm-up
        t0 = time.perf_counter()
        out = run(beam, batches)
        dt = time.perf_counter() - t0
        ntok = sum(len(o) for o in out)
        print(json.dumps({"peer": "ctranslate2", "version": ctranslate2.__version__, "what": "translate",
                          "compute_type": compute, "beam": beam, "threads": threads, "batch": batch, "sentences": len(src),
                          "tgt_tokens": ntok, "seconds": round(dt, 3),
                          "sentences_per_s": round(len(src) / dt, 2), "tgt_tokens_per_s": round(ntok / dt, 1)}))
        sys.stdout.flush()
        if "--out" in opts:
            with open(f"{opts['--out']}.beam{beam}", "w", encoding="utf-8") as f:
                for o in out:
                    f.write((sp.decode(o) if sp else " ".join(map(str, o))) + "\n")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main(sys.argv[1:])
