#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

struct metrics_series {
    metrics_series *next;
    metrics_family *family;
    char *labels[METRICS_MAX_LABELS]; /* owned values */
    _Atomic uint64_t count;           /* counter value */
    _Atomic uint64_t bits;            /* gauge value / histogram sum: a double's bits */
    _Atomic uint64_t buckets[METRICS_MAX_BUCKETS + 1]; /* histogram, per bucket (last: +Inf) */
};

struct metrics_family {
    metrics_family *next;
    metrics_type type;
    const char *name;
    const char *help;
    size_t n_labels;
    const char *label_names[METRICS_MAX_LABELS];
    double bounds[METRICS_MAX_BUCKETS];
    size_t n_buckets;
    pthread_mutex_t lock; /* the series list */
    metrics_series *series, *last;
};

struct metrics {
    metrics_family *families, *last;
    metrics_collect_fn collect;
    void *collect_ctx;
};

metrics *metrics_new(void)
{
    return calloc(1, sizeof(metrics));
}

static void series_free(metrics_series *s)
{
    for (size_t i = 0; i < METRICS_MAX_LABELS; i++)
        free(s->labels[i]);
    free(s);
}

void metrics_free(metrics *m)
{
    if (!m)
        return;
    for (metrics_family *f = m->families, *next; f; f = next) {
        next = f->next;
        for (metrics_series *s = f->series, *snext; s; s = snext) {
            snext = s->next;
            series_free(s);
        }
        pthread_mutex_destroy(&f->lock);
        free(f);
    }
    free(m);
}

void metrics_set_collect(metrics *m, metrics_collect_fn fn, void *ctx)
{
    m->collect = fn;
    m->collect_ctx = ctx;
}

static bool valid_name(const char *name)
{
    if (!name || !*name || (name[0] >= '0' && name[0] <= '9'))
        return false;
    return name[strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")] ==
           '\0';
}

metrics_family *metrics_family_add(metrics *m, metrics_type type, const char *name,
                                   const char *help, size_t n_labels,
                                   const char *const *label_names, const double *buckets,
                                   size_t n_buckets, vf_error *err)
{
    if (!valid_name(name) || n_labels > METRICS_MAX_LABELS ||
        (type == METRICS_HISTOGRAM && (n_buckets == 0 || n_buckets > METRICS_MAX_BUCKETS))) {
        vf_error_set(err, VF_EINVAL, "metric %s: invalid name, labels or buckets",
                     name ? name : "(null)");
        return NULL;
    }
    for (size_t i = 0; i < n_labels; i++)
        if (!valid_name(label_names[i]) || strchr(label_names[i], ':')) {
            vf_error_set(err, VF_EINVAL, "metric %s: invalid label name", name);
            return NULL;
        }
    for (size_t i = 1; type == METRICS_HISTOGRAM && i < n_buckets; i++)
        if (!(buckets[i] > buckets[i - 1])) {
            vf_error_set(err, VF_EINVAL, "metric %s: buckets must increase", name);
            return NULL;
        }
    metrics_family *f = calloc(1, sizeof *f);
    if (!f) {
        vf_error_set(err, VF_ENOMEM, "out of memory adding metric %s", name);
        return NULL;
    }
    f->type = type;
    f->name = name;
    f->help = help;
    f->n_labels = n_labels;
    for (size_t i = 0; i < n_labels; i++)
        f->label_names[i] = label_names[i];
    if (type == METRICS_HISTOGRAM) {
        memcpy(f->bounds, buckets, n_buckets * sizeof *buckets);
        f->n_buckets = n_buckets;
    }
    pthread_mutex_init(&f->lock, NULL);
    if (m->last)
        m->last->next = f;
    else
        m->families = f;
    m->last = f;
    return f;
}

metrics_series *metrics_series_get(metrics_family *f, const char *const *label_values)
{
    if (!f)
        return NULL;
    pthread_mutex_lock(&f->lock);
    metrics_series *s = f->series;
    for (; s; s = s->next) {
        size_t i = 0;
        while (i < f->n_labels && strcmp(s->labels[i], label_values[i] ? label_values[i] : "") == 0)
            i++;
        if (i == f->n_labels)
            break;
    }
    if (!s && (s = calloc(1, sizeof *s)) != NULL) {
        s->family = f;
        for (size_t i = 0; i < f->n_labels; i++) {
            if (!(s->labels[i] = strdup(label_values[i] ? label_values[i] : ""))) {
                series_free(s);
                s = NULL;
                break;
            }
        }
        if (s) {
            if (f->last)
                f->last->next = s;
            else
                f->series = s;
            f->last = s;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return s;
}

metrics_series *metrics_series_only(metrics_family *f)
{
    return metrics_series_get(f, NULL);
}

static double bits_to_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static uint64_t double_to_bits(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return bits;
}

/* A double kept in an atomic word: add by compare-and-swap. */
static void atomic_add_double(_Atomic uint64_t *slot, double by)
{
    uint64_t seen = atomic_load_explicit(slot, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(slot, &seen,
                                                  double_to_bits(bits_to_double(seen) + by),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

void metrics_add(metrics_series *s, uint64_t n)
{
    if (!s)
        return;
    if (s->family->type == METRICS_GAUGE)
        atomic_add_double(&s->bits, (double)n);
    else
        atomic_fetch_add_explicit(&s->count, n, memory_order_relaxed);
}

void metrics_set(metrics_series *s, double value)
{
    /* A counter keeps what is set beside what is added (metrics_value sums
     * them): one of the two is used, never both. */
    if (s && s->family->type != METRICS_HISTOGRAM)
        atomic_store_explicit(&s->bits, double_to_bits(value), memory_order_relaxed);
}

void metrics_observe(metrics_series *s, double value)
{
    if (!s || s->family->type != METRICS_HISTOGRAM)
        return;
    const metrics_family *f = s->family;
    size_t i = 0;
    while (i < f->n_buckets && value > f->bounds[i])
        i++;
    atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
    atomic_add_double(&s->bits, value);
}

void metrics_family_zero(metrics_family *f)
{
    if (!f || f->type != METRICS_GAUGE)
        return;
    pthread_mutex_lock(&f->lock);
    for (metrics_series *s = f->series; s; s = s->next)
        metrics_set(s, 0);
    pthread_mutex_unlock(&f->lock);
}

void metrics_family_clear(metrics_family *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    metrics_series *s = f->series;
    f->series = f->last = NULL;
    pthread_mutex_unlock(&f->lock);
    while (s) {
        metrics_series *next = s->next;
        series_free(s);
        s = next;
    }
}

double metrics_value(const metrics_series *s)
{
    if (!s)
        return 0;
    if (s->family->type == METRICS_COUNTER)
        return (double)atomic_load_explicit(&s->count, memory_order_relaxed) +
               bits_to_double(atomic_load_explicit(&s->bits, memory_order_relaxed));
    return bits_to_double(atomic_load_explicit(&s->bits, memory_order_relaxed));
}

/* ---- rendering ---- */

/* The format's escapes: in HELP, backslash and newline; in label values
 * also the double quote. Anything else (UTF-8 included) is kept. */
static void put_escaped(strbuf *t, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            strbuf_puts(t, "\\\\");
        else if (*s == '\n')
            strbuf_puts(t, "\\n");
        else if (quote && *s == '"')
            strbuf_puts(t, "\\\"");
        else
            strbuf_append(t, s, 1);
    }
}

/* The shortest text that reads back as the same double (0.1, not
 * 0.10000000000000001), as Prometheus' own clients print; integers without
 * an exponent. */
static void put_number(strbuf *t, double v)
{
    char buf[40];
    if (isnan(v))
        snprintf(buf, sizeof buf, "NaN");
    else if (isinf(v))
        snprintf(buf, sizeof buf, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, sizeof buf, "%.0f", v);
    else
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(buf, sizeof buf, "%.*g", digits, v);
            if (strtod(buf, NULL) == v)
                break;
        }
    strbuf_puts(t, buf);
}

static void put_labels(strbuf *t, const metrics_series *s, const char *le)
{
    const metrics_family *f = s->family;
    if (f->n_labels == 0 && !le)
        return;
    strbuf_puts(t, "{");
    for (size_t i = 0; i < f->n_labels; i++) {
        if (i)
            strbuf_puts(t, ",");
        strbuf_puts(t, f->label_names[i]);
        strbuf_puts(t, "=\"");
        put_escaped(t, s->labels[i], true);
        strbuf_puts(t, "\"");
    }
    if (le) {
        if (f->n_labels)
            strbuf_puts(t, ",");
        strbuf_puts(t, "le=\"");
        strbuf_puts(t, le);
        strbuf_puts(t, "\"");
    }
    strbuf_puts(t, "}");
}

static void render_series(strbuf *t, const metrics_series *s)
{
    const metrics_family *f = s->family;
    if (f->type != METRICS_HISTOGRAM) {
        strbuf_puts(t, f->name);
        put_labels(t, s, NULL);
        strbuf_puts(t, " ");
        put_number(t, metrics_value(s));
        strbuf_puts(t, "\n");
        return;
    }
    /* Stored per bucket, shown cumulative, as the format requires. */
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= f->n_buckets; i++) {
        cumulative += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
        strbuf le = {0};
        if (i < f->n_buckets)
            put_number(&le, f->bounds[i]);
        else
            strbuf_puts(&le, "+Inf");
        strbuf_puts(t, f->name);
        strbuf_puts(t, "_bucket");
        put_labels(t, s, le.data ? le.data : "");
        strbuf_close(&le);
        strbuf_puts(t, " ");
        put_number(t, (double)cumulative);
        strbuf_puts(t, "\n");
    }
    strbuf_puts(t, f->name);
    strbuf_puts(t, "_sum");
    put_labels(t, s, NULL);
    strbuf_puts(t, " ");
    put_number(t, bits_to_double(atomic_load_explicit(&s->bits, memory_order_relaxed)));
    strbuf_puts(t, "\n");
    strbuf_puts(t, f->name);
    strbuf_puts(t, "_count");
    put_labels(t, s, NULL);
    strbuf_puts(t, " ");
    put_number(t, (double)cumulative);
    strbuf_puts(t, "\n");
}

int metrics_render(metrics *m, char **out, size_t *out_len)
{
    static const char *const type_names[] = {"counter", "gauge", "histogram"};
    if (m->collect)
        m->collect(m, m->collect_ctx);
    strbuf t = {0};
    for (metrics_family *f = m->families; f; f = f->next) {
        strbuf_puts(&t, "# HELP ");
        strbuf_puts(&t, f->name);
        strbuf_puts(&t, " ");
        put_escaped(&t, f->help ? f->help : "", false);
        strbuf_puts(&t, "\n# TYPE ");
        strbuf_puts(&t, f->name);
        strbuf_puts(&t, " ");
        strbuf_puts(&t, type_names[f->type]);
        strbuf_puts(&t, "\n");
        pthread_mutex_lock(&f->lock);
        for (const metrics_series *s = f->series; s; s = s->next)
            render_series(&t, s);
        pthread_mutex_unlock(&f->lock);
    }
    size_t len = t.len;
    if (!(*out = strbuf_take(&t)))
        return -1;
    *out_len = len;
    return 0;
}
