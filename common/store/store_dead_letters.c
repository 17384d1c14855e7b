/* store_dead_letters: the record of what is parked in virtflow.dead. */
#include "store_dead_letters.h"
#include "store_internal.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#define DEAD_LETTER_COLUMNS                                                                        \
    "id, routing_key, message_id, task_id, reason, parked_by, parked_at, body_bytes, "             \
    "body_excerpt, redriven_at"

/* "sha256:" and 64 hex digits, and a NUL. */
#define MESSAGE_KEY_SIZE (7 + 64 + 1)
/* Every excerpt byte as \xNN at worst, "..." and a NUL. */
#define EXCERPT_SIZE (STORE_DEAD_LETTER_EXCERPT * 4 + 4)

/* The message_id when there is one, else the body's digest: the same message
 * parked twice gets the same key. */
static int message_key(const char *message_id, const unsigned char *body, size_t body_len,
                       char out[MESSAGE_KEY_SIZE], vf_error *err)
{
    size_t id_len = message_id ? strlen(message_id) : 0;
    if (id_len > 0 && id_len < 7 + 64 && strncmp(message_id, "sha256:", 7) != 0) {
        memcpy(out, message_id, id_len + 1);
        return 0;
    }
    /* No id: the body's digest. An id too long for a key (or looking like
     * a digest): the id's. */
    const unsigned char *text = id_len ? (const unsigned char *)message_id : body;
    size_t text_len = id_len ? id_len : body ? body_len : 0;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    static const unsigned char empty[1] = {0};
    if (!EVP_Digest(text ? text : empty, text ? text_len : 0, digest, &n, EVP_sha256(), NULL) ||
        n != 32) {
        vf_error_set(err, VF_EINTERNAL, "SHA-256 of a dead letter failed");
        return -1;
    }
    memcpy(out, "sha256:", 7);
    for (unsigned int i = 0; i < n; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

/* The body's first bytes, printable ASCII as they are, others as \xNN. */
static void excerpt(const unsigned char *body, size_t body_len, char out[EXCERPT_SIZE])
{
    size_t n = 0;
    out[0] = '\0';
    if (!body)
        return;
    for (size_t i = 0; i < body_len && i < STORE_DEAD_LETTER_EXCERPT; i++) {
        unsigned char ch = body[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[n++] = (char)ch;
        else
            n += (size_t)snprintf(out + n, EXCERPT_SIZE - n, "\\x%02x", ch);
    }
    out[n] = '\0';
    if (body_len > STORE_DEAD_LETTER_EXCERPT)
        snprintf(out + n, EXCERPT_SIZE - n, "...");
}

int store_dead_letter_record(store *s, const store_dead_letter_park *p, vf_error *err)
{
    char key[MESSAGE_KEY_SIZE], text[EXCERPT_SIZE];
    if (message_key(p->message_id, p->body, p->body_len, key, err) < 0)
        return -1;
    excerpt(p->body, p->body_len, text);
    db_stmt *st = store_stmt(
        s, STORE_STMT_DEAD_LETTER_RECORD,
        "INSERT INTO dead_letters (routing_key, message_key, message_id, task_id, reason, "
        "parked_by, parked_at, body_bytes, body_excerpt) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
        "ON CONFLICT (routing_key, message_key) DO UPDATE SET message_id = excluded.message_id, "
        "task_id = excluded.task_id, reason = excluded.reason, parked_by = excluded.parked_by, "
        "parked_at = excluded.parked_at, body_bytes = excluded.body_bytes, "
        "body_excerpt = excluded.body_excerpt, redriven_at = NULL",
        err);
    if (!st)
        return -1;
    db_bind_text(st, 1, p->routing_key ? p->routing_key : "");
    db_bind_text(st, 2, key);
    db_bind_text(st, 3, p->message_id);
    db_bind_text(st, 4, p->task_id && p->task_id[0] ? p->task_id : NULL);
    db_bind_text(st, 5, p->reason ? p->reason : "");
    db_bind_text(st, 6, p->parked_by);
    db_bind_text(st, 7, p->parked_at);
    db_bind_int64(st, 8, (int64_t)p->body_bytes);
    db_bind_text(st, 9, text);
    if (store_defers(s))
        return store_exec_deferred(st, "recording a dead letter", &(db_expect){0}, err);
    return store_exec_change(s, st, "recording a dead letter", err) < 0 ? -1 : 0;
}

int store_dead_letter_parked_at(store *s, const char *routing_key, const char *message_id,
                                const unsigned char *body, size_t body_len,
                                char parked_at[STORE_TIME_SIZE], vf_error *err)
{
    char key[MESSAGE_KEY_SIZE];
    parked_at[0] = '\0';
    if (message_key(message_id, body, body_len, key, err) < 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_DEAD_LETTER_PARKED_AT,
                             "SELECT parked_at FROM dead_letters "
                             "WHERE routing_key = ?1 AND message_key = ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, routing_key ? routing_key : "");
    db_bind_text(st, 2, key);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 1, &rows, "reading a dead letter", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    if (rows.count == 1 && store_rows_text(&rows, 0, 0))
        snprintf(parked_at, STORE_TIME_SIZE, "%s", store_rows_text(&rows, 0, 0));
    store_rows_free(&rows);
    return 0;
}

int store_dead_letter_redriven(store *s, const char *routing_key, const char *message_id,
                               const unsigned char *body, size_t body_len, const char *parked_at,
                               const char *now, vf_error *err)
{
    char key[MESSAGE_KEY_SIZE];
    if (message_key(message_id, body, body_len, key, err) < 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_DEAD_LETTER_REDRIVEN,
                             "UPDATE dead_letters SET redriven_at = ?3 "
                             "WHERE routing_key = ?1 AND message_key = ?2 AND parked_at = ?4",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, routing_key ? routing_key : "");
    db_bind_text(st, 2, key);
    db_bind_text(st, 3, now);
    db_bind_text(st, 4, parked_at);
    return store_exec_change(s, st, "marking a dead letter redriven", err);
}

int store_dead_letter_list(store *s, const store_dead_letter_filter *filter,
                           store_dead_letter_fn fn, void *ctx, vf_error *err)
{
    /* ?1: which rows by their redrive (see the filter); the cursor is a
     * range on the (parked_at, id) index. */
#define DEAD_LETTERS_SELECT                                                                        \
    "SELECT " DEAD_LETTER_COLUMNS " FROM dead_letters "                                            \
    "WHERE (?1 < 0 OR (?1 = 1) = (redriven_at IS NULL)) "
#define DEAD_LETTERS_ORDER " ORDER BY parked_at DESC, id DESC LIMIT ?2"
    db_stmt *st =
        filter->after_parked_at
            ? store_stmt(s, STORE_STMT_DEAD_LETTERS_AFTER,
                         DEAD_LETTERS_SELECT
                         "AND parked_at <= ?3 AND (parked_at < ?3 OR id < ?4)" DEAD_LETTERS_ORDER,
                         err)
            : store_stmt(s, STORE_STMT_DEAD_LETTERS_FIRST, DEAD_LETTERS_SELECT DEAD_LETTERS_ORDER,
                         err);
#undef DEAD_LETTERS_SELECT
#undef DEAD_LETTERS_ORDER
    if (!st)
        return -1;
    db_bind_int64(st, 1, filter->parked);
    store_bind_limit(st, 2, filter->limit);
    if (filter->after_parked_at) {
        db_bind_text(st, 3, filter->after_parked_at);
        db_bind_int64(st, 4, filter->after_id);
    }
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing dead letters", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_dead_letter d = {
            .id = store_rows_int(&rows, i, 0),
            .routing_key = store_rows_text(&rows, i, 1),
            .message_id = store_rows_text(&rows, i, 2),
            .task_id = store_rows_text(&rows, i, 3),
            .reason = store_rows_text(&rows, i, 4),
            .parked_by = store_rows_text(&rows, i, 5),
            .parked_at = store_rows_text(&rows, i, 6),
            .body_bytes = store_rows_int(&rows, i, 7),
            .body_excerpt = store_rows_text(&rows, i, 8),
            .redriven_at = store_rows_text(&rows, i, 9),
        };
        if (fn(&d, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}
