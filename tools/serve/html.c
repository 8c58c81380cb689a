/* html.c: `format: "html"` for /translate: an HTML fragment parsed with
 * libxml2's HTML parser (a kept, error-tolerant HTML4 parser, the same that
 * lxml uses), its text nodes handed out to be translated one by one, and
 * the tree written back with every tag, attribute, comment and entity kept.
 * Text inside <script>, <style>, <noscript> and <template> is not prose
 * and is left as is; a node of whitespace only is left too.
 *
 * The fragment is parsed inside <html><body><div>, so that the parser
 * adds no <p> around bare text; the answer is the children of that div (and
 * whatever the fragment's own stray </div> pushed after it, in order). */
#include <stdlib.h>
#include <string.h>

#include "serve_libre.h"

#ifdef CLF_HAVE_LIBXML2
#include <libxml/HTMLparser.h>
#include <libxml/HTMLtree.h>

struct serve_html {
    htmlDocPtr doc;
    xmlNodePtr body, wrap; /* <body>, and the <div> the fragment went in */
    xmlNodePtr *text;      /* the text nodes to translate, in document order */
    size_t n, cap;
};

static bool skipped(const xmlNode *n)
{
    static const char *const raw[] = {"script", "style", "noscript", "template", "textarea"};
    for (; n; n = n->parent)
        if (n->type == XML_ELEMENT_NODE)
            for (size_t i = 0; i < sizeof raw / sizeof *raw; i++)
                if (!strcmp((const char *)n->name, raw[i]))
                    return true;
    return false;
}

static bool blank(const xmlChar *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f')
            return false;
    return true;
}

static bool collect(struct serve_html *h, xmlNodePtr n)
{
    for (; n; n = n->next) {
        if (n->type == XML_TEXT_NODE && !blank(n->content) && !skipped(n->parent)) {
            if (h->n == h->cap) {
                const size_t cap = h->cap ? 2 * h->cap : 16;
                xmlNodePtr *x = realloc(h->text, cap * sizeof *x);
                if (!x)
                    return false;
                h->text = x, h->cap = cap;
            }
            h->text[h->n++] = n;
        }
        if (n->type == XML_ELEMENT_NODE && !collect(h, n->children))
            return false;
    }
    return true;
}

void serve_html_init(void) { xmlInitParser(); }

struct serve_html *serve_html_parse(const char *html, size_t len)
{
    static const char head[] = "<html><body><div>", tail[] = "</div></body></html>";
    struct serve_html *h = calloc(1, sizeof *h);
    char *buf = malloc(sizeof head + len + sizeof tail);
    if (!h || !buf || len > INT_MAX / 2)
        goto fail;
    memcpy(buf, head, sizeof head - 1);
    memcpy(buf + sizeof head - 1, html, len);
    memcpy(buf + sizeof head - 1 + len, tail, sizeof tail);
    h->doc = htmlReadMemory(buf, (int)(sizeof head - 1 + len + sizeof tail - 1), NULL, "UTF-8",
                            HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET);
    free(buf);
    buf = NULL;
    if (!h->doc)
        goto fail;
    for (xmlNodePtr n = xmlDocGetRootElement(h->doc) ? xmlDocGetRootElement(h->doc)->children : NULL; n; n = n->next)
        if (n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, "body"))
            h->body = n;
    h->wrap = h->body ? h->body->children : NULL;
    if (!h->wrap || h->wrap->type != XML_ELEMENT_NODE || strcmp((const char *)h->wrap->name, "div"))
        goto fail; /* cannot happen with libxml2's parser; no guess at what it built */
    if (!collect(h, h->body->children))
        goto fail;
    return h;
fail:
    free(buf);
    serve_html_free(h);
    return NULL;
}

size_t serve_html_count(const struct serve_html *h) { return h->n; }

const char *serve_html_text(const struct serve_html *h, size_t i) { return (const char *)h->text[i]->content; }

bool serve_html_set(struct serve_html *h, size_t i, const char *text)
{
    /* a text node's content is the decoded text: the writer escapes it */
    xmlChar *x = xmlStrdup((const xmlChar *)text);
    if (!x)
        return false;
    xmlNodePtr n = h->text[i];
    if (n->content != (xmlChar *)&n->properties && !(h->doc->dict && xmlDictOwns(h->doc->dict, n->content)))
        xmlFree(n->content);
    n->content = x;
    return true;
}

char *serve_html_dump(const struct serve_html *h, size_t *len)
{
    xmlOutputBufferPtr out = xmlAllocOutputBuffer(NULL);
    if (!out)
        return NULL;
    for (xmlNodePtr n = h->body->children; n; n = n->next)
        if (n == h->wrap)
            for (xmlNodePtr k = n->children; k; k = k->next)
                htmlNodeDumpFormatOutput(out, h->doc, k, "UTF-8", 0);
        else
            htmlNodeDumpFormatOutput(out, h->doc, n, "UTF-8", 0);
    xmlOutputBufferFlush(out);
    char *s = NULL;
    if (!out->error) {
        const xmlChar *c = xmlOutputBufferGetContent(out);
        *len = xmlOutputBufferGetSize(out);
        if ((s = malloc(*len + 1))) {
            memcpy(s, c, *len);
            s[*len] = 0;
        }
    }
    xmlOutputBufferClose(out);
    return s;
}

void serve_html_free(struct serve_html *h)
{
    if (!h)
        return;
    if (h->doc)
        xmlFreeDoc(h->doc);
    free(h->text);
    free(h);
}
#endif
