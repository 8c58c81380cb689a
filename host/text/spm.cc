// spm.cc: SentencePiece behind the C interface of clformer_text.h (clf_spm_*).
//
// The one C++ file of the library. Every function is extern "C", catches
// every exception and reports through clf_error_set; nothing here prints.
// SentencePiece's own logging goes to stderr, so it is turned down to
// errors-only-when-fatal before any load or training.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "base/files.h"
#include "base/hash.h"
#include "base/status.h"
#include "clformer_text.h"
#include "text/text_internal.h"
}

// Exported by libsentencepiece (common.h is not installed).
namespace sentencepiece {
namespace logging {
void SetMinLogLevel(int v);
}
}  // namespace sentencepiece

struct clf_spm {
    sentencepiece::SentencePieceProcessor proc;
    uint64_t hash;
};

namespace {

// SentencePiece's log level is one process-wide variable: set once, so
// that tokenizers loaded in several threads do not write it at once.
void spm_quiet()
{
    static std::once_flag once;
    std::call_once(once, [] { sentencepiece::logging::SetMinLogLevel(3); });
}

char *dup_string(const std::string &s)
{
    char *p = static_cast<char *>(std::malloc(s.size() + 1));
    if (p) {
        std::memcpy(p, s.data(), s.size());
        p[s.size()] = '\0';
    }
    return p;
}

// The pieces or ids of text (len bytes, text NULL when len is 0) into *v
// (the three encoders' shared start); what SentencePiece throws is caught
// by the caller.
template <typename T>
clf_status encode_to(const clf_spm *spm, const char *text, size_t len, std::vector<T> *v)
{
    auto st = spm->proc.Encode(std::string(text ? text : "", len), v);
    if (!st.ok())
        return clf_error_set(NULL, CLF_ERR_FORMAT, "SentencePiece encode failed: %s",
                             st.ToString().c_str());
    return CLF_OK;
}

// Decodes ids or pieces into a new C string *text (the three decoders' one
// tail); what SentencePiece throws is caught by the caller.
template <typename T>
clf_status decode_to(const clf_spm *spm, const std::vector<T> &v, char **text)
{
    std::string out;
    auto st = spm->proc.Decode(v, &out);
    if (!st.ok())
        return clf_error_set(NULL, CLF_ERR_FORMAT, "SentencePiece decode failed: %s",
                             st.ToString().c_str());
    if (!(*text = dup_string(out)))
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory decoding");
    return CLF_OK;
}

// Feeds the trainer from several files, plain or gzip, one sentence a line.
class GzLines : public sentencepiece::SentenceIterator {
  public:
    explicit GzLines(std::vector<std::string> files) : files_(std::move(files)) { Next(); }
    ~GzLines() override
    {
        if (gz_) gzclose(gz_);
    }
    bool done() const override { return done_; }
    const std::string &value() const override { return line_; }
    sentencepiece::util::Status status() const override { return status_; }
    void Next() override
    {
        char buf[8192];
        while (!done_) {
            if (!gz_) {
                if (next_ == files_.size()) {
                    done_ = true;
                    return;
                }
                path_ = files_[next_++];
                gz_ = gzopen(path_.c_str(), "rb");
                if (!gz_) {
                    fail(path_ + ": cannot open: " + std::strerror(errno ? errno : ENOENT));
                    return;
                }
            }
            line_.clear();
            bool got = false;
            while (gzgets(gz_, buf, sizeof buf)) {
                got = true;
                line_ += buf;
                if (!line_.empty() && line_.back() == '\n') break;
            }
            int err = 0;
            const char *msg = gzerror(gz_, &err);
            if (err != Z_OK && err != Z_STREAM_END) {
                fail(path_ + ": read error: " + msg);
                return;
            }
            if (!got) {
                gzclose(gz_);
                gz_ = nullptr;
                continue;
            }
            while (!line_.empty() && (line_.back() == '\n' || line_.back() == '\r')) line_.pop_back();
            return;
        }
    }
    const std::string &error() const { return error_; }

  private:
    void fail(const std::string &msg)
    {
        error_ = msg;
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound, msg);
        done_ = true;
    }
    std::vector<std::string> files_;
    size_t next_ = 0;
    gzFile gz_ = nullptr;
    std::string path_, line_, error_;
    bool done_ = false;
    sentencepiece::util::Status status_;
};

clf_status write_file(const char *path, const std::string &bytes)
{
    return clf_file_write_atomic(path, bytes.data(), bytes.size());
}

}  // namespace

extern "C" {

void clf_spm_learn_defaults(struct clf_spm_learn_opts *o)
{
    o->vocab_size = 8000;
    o->threads = 2;
    o->byte_fallback = true;
    o->character_coverage = 1.0;
    o->max_sentences = 0;
}

clf_status clf_spm_learn(const char *const *files, int nfiles, const char *model_path,
                         const struct clf_spm_learn_opts *opts)
{
    struct clf_spm_learn_opts o;
    if (opts)
        o = *opts;
    else
        clf_spm_learn_defaults(&o);
    if (!files || nfiles < 1 || !model_path || o.vocab_size < 8 || o.threads < 1)
        return clf_error_set(NULL, CLF_ERR_ARG,
                             "clf_spm_learn: need at least one file, a model path, "
                             "vocab_size >= 8 and threads >= 1");
    try {
        spm_quiet();
        std::vector<std::string> paths(files, files + nfiles);
        GzLines lines(paths);
        // Fixed special ids (CLF_SPM_*); the rest are SentencePiece defaults.
        std::unordered_map<std::string, std::string> kw = {
            {"model_type", "bpe"},
            {"vocab_size", std::to_string(o.vocab_size)},
            {"pad_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"}, {"unk_id", "3"},
            {"byte_fallback", o.byte_fallback ? "true" : "false"},
            {"character_coverage", std::to_string(o.character_coverage)},
            {"num_threads", std::to_string(o.threads)},
            {"input_sentence_size", std::to_string(o.max_sentences)},
            {"shuffle_input_sentence", "true"},
            {"minloglevel", "3"},
        };
        std::string model;
        auto st = sentencepiece::SentencePieceTrainer::Train(kw, &lines, &model);
        if (!lines.error().empty())
            return clf_error_set(NULL, CLF_ERR_IO, "%s", lines.error().c_str());
        if (!st.ok())
            return clf_error_set(NULL, CLF_ERR_ARG, "SentencePiece training failed: %s",
                                 st.ToString().c_str());
        return write_file(model_path, model);
    } catch (const std::bad_alloc &) {
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory learning %s", model_path);
    } catch (const std::exception &e) {
        return clf_error_set(NULL, CLF_ERR_ARG, "SentencePiece training failed: %s", e.what());
    } catch (...) {
        return clf_error_set(NULL, CLF_ERR_ARG, "SentencePiece training failed");
    }
}

clf_status clf_spm_load(clf_spm_t **out, const char *model_path)
{
    if (!out || !model_path) return clf_error_set(NULL, CLF_ERR_ARG, "clf_spm_load: NULL argument");
    *out = nullptr;
    clf_spm *spm = nullptr;
    try {
        spm_quiet();
        std::string bytes;
        FILE *f = std::fopen(model_path, "rb");
        if (!f)
            return clf_error_set(NULL, CLF_ERR_IO, "%s: cannot open: %s", model_path,
                                 std::strerror(errno));
        char buf[65536];
        size_t got;
        while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, got);
        bool bad = std::ferror(f);
        std::fclose(f);
        if (bad) return clf_error_set(NULL, CLF_ERR_IO, "%s: read error", model_path);
        spm = new clf_spm;
        auto st = spm->proc.LoadFromSerializedProto(bytes);
        if (!st.ok()) {
            delete spm;
            return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: not a SentencePiece model: %s",
                                 model_path, st.ToString().c_str());
        }
        spm->hash = clf_fnv1a(CLF_FNV_INIT, bytes.data(), bytes.size());
        *out = spm;
        return CLF_OK;
    } catch (const std::bad_alloc &) {
        delete spm;
        return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory loading %s", model_path);
    } catch (const std::exception &e) {
        delete spm;
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: %s", model_path, e.what());
    } catch (...) {
        delete spm;
        return clf_error_set(NULL, CLF_ERR_FORMAT, "%s: cannot load", model_path);
    }
}

void clf_spm_free(clf_spm_t *spm) { delete spm; }

int clf_spm_vocab_size(const clf_spm_t *spm) { return spm ? spm->proc.GetPieceSize() : 0; }

uint64_t clf_spm_hash(const clf_spm_t *spm) { return spm ? spm->hash : 0; }

const char *clf_spm_piece(const clf_spm_t *spm, int32_t id)
{
    if (!spm || id < 0 || id >= spm->proc.GetPieceSize()) return "";
    try {
        return spm->proc.IdToPiece(id).c_str();
    } catch (...) {
        return "";
    }
}

clf_status clf_spm_encode(const clf_spm_t *spm, const char *text, size_t len, int32_t **ids,
                          size_t *n)
{
    if (!spm || (!text && len) || !ids || !n)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_spm_encode: NULL argument");
    *ids = nullptr;
    *n = 0;
    try {
        std::vector<int> v;
        if (clf_status st = encode_to(spm, text, len, &v))
            return st;
        if (v.empty()) return CLF_OK;
        int32_t *p = static_cast<int32_t *>(std::malloc(v.size() * sizeof *p));
        if (!p) return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory encoding");
        for (size_t i = 0; i < v.size(); i++) p[i] = v[i];
        *ids = p;
        *n = v.size();
        return CLF_OK;
    } catch (...) {
        return clf_error_set(NULL, CLF_ERR_MEMORY, "SentencePiece encode failed");
    }
}

clf_status clf_spm_encode_pieces(const clf_spm_t *spm, const char *text, size_t len,
                                 char **pieces)
{
    if (!spm || (!text && len) || !pieces)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_spm_encode_pieces: NULL argument");
    *pieces = nullptr;
    try {
        std::vector<std::string> v;
        if (clf_status st = encode_to(spm, text, len, &v))
            return st;
        std::string joined;
        for (size_t i = 0; i < v.size(); i++) {
            if (i) joined += ' ';
            joined += v[i];
        }
        if (!(*pieces = dup_string(joined)))
            return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory encoding");
        return CLF_OK;
    } catch (...) {
        return clf_error_set(NULL, CLF_ERR_MEMORY, "SentencePiece encode failed");
    }
}

clf_status clf_spm_decode(const clf_spm_t *spm, const int32_t *ids, size_t n, char **text)
{
    if (!spm || (!ids && n) || !text)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_spm_decode: NULL argument");
    *text = nullptr;
    try {
        int size = spm->proc.GetPieceSize();
        std::vector<int> v;
        v.reserve(n);
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || ids[i] >= size)
                return clf_error_set(NULL, CLF_ERR_ARG, "id %d out of range (vocabulary of %d)",
                                     (int)ids[i], size);
            if (ids[i] != CLF_SPM_PAD && ids[i] != CLF_SPM_BOS && ids[i] != CLF_SPM_EOS)
                v.push_back(ids[i]);
        }
        return decode_to(spm, v, text);
    } catch (...) {
        return clf_error_set(NULL, CLF_ERR_MEMORY, "SentencePiece decode failed");
    }
}

clf_status clf_spm_decode_pieces(const clf_spm_t *spm, const char *pieces, char **text)
{
    if (!spm || !pieces || !text)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_spm_decode_pieces: NULL argument");
    *text = nullptr;
    try {
        std::vector<std::string> v;
        const char *p = pieces;
        while (*p) {
            while (*p == ' ' || *p == '\t') p++;
            const char *q = p;
            while (*q && *q != ' ' && *q != '\t') q++;
            if (q > p) v.emplace_back(p, q - p);
            p = q;
        }
        return decode_to(spm, v, text);
    } catch (...) {
        return clf_error_set(NULL, CLF_ERR_MEMORY, "SentencePiece decode failed");
    }
}

clf_status clf_spm_encode_list(const clf_spm_t *spm, const char *text, size_t len, char **buf,
                               size_t *n)
{
    if (!spm || (!text && len) || !buf || !n)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_spm_encode_list: NULL argument");
    *buf = nullptr;
    *n = 0;
    try {
        std::vector<std::string> v;
        if (clf_status st = encode_to(spm, text, len, &v))
            return st;
        if (v.empty()) return CLF_OK;
        size_t bytes = 0;
        for (const auto &p : v) bytes += p.size() + 1;
        char *out = static_cast<char *>(std::malloc(bytes));
        if (!out) return clf_error_set(NULL, CLF_ERR_MEMORY, "out of memory encoding");
        char *q = out;
        for (const auto &p : v) {
            std::memcpy(q, p.c_str(), p.size() + 1);
            q += p.size() + 1;
        }
        *buf = out;
        *n = v.size();
        return CLF_OK;
    } catch (...) {
        return clf_error_set(NULL, CLF_ERR_MEMORY, "SentencePiece encode failed");
    }
}

clf_status clf_spm_decode_list(const clf_spm_t *spm, const char *const *pieces, size_t n,
                               char **text)
{
    if (!spm || (!pieces && n) || !text)
        return clf_error_set(NULL, CLF_ERR_ARG, "clf_spm_decode_list: NULL argument");
    *text = nullptr;
    try {
        std::vector<std::string> v(pieces, pieces + n);
        return decode_to(spm, v, text);
    } catch (...) {
        return clf_error_set(NULL, CLF_ERR_MEMORY, "SentencePiece decode failed");
    }
}

}  // extern "C"
