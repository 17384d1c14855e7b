/* nats_stream URL STREAM [--count]: what a JetStream stream holds, for the
 * tests and benchmarks of virtflow-nats: a first line "messages N", then
 * (without --count) one line per message, "SEQ NATS-MSG-ID SUBJECT", read
 * back by sequence. Exit 0, or 1 with the reason on stderr. */
#include <string.h>
#include <inttypes.h>
#include <nats/nats.h>
#include <stdbool.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    bool count_only = argc == 4 && strcmp(argv[3], "--count") == 0;
    if (argc != 3 && !count_only) {
        fprintf(stderr, "usage: nats_stream URL STREAM [--count]\n");
        return 2;
    }
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsStreamInfo *info = NULL;
    jsErrCode code = 0;
    natsStatus st = natsConnection_ConnectTo(&nc, argv[1]);
    if (st == NATS_OK)
        st = natsConnection_JetStream(&js, nc, NULL);
    if (st == NATS_OK)
        st = js_GetStreamInfo(&info, js, argv[2], NULL, &code);
    if (st != NATS_OK) {
        fprintf(stderr, "nats_stream: %s (%d)\n", natsStatus_GetText(st), (int)code);
        return 1;
    }
    printf("messages %" PRIu64 "\n", info->State.Msgs);
    for (uint64_t seq = info->State.FirstSeq; !count_only && seq && seq <= info->State.LastSeq;
         seq++) {
        natsMsg *msg = NULL;
        if (js_GetMsg(&msg, js, argv[2], seq, NULL, &code) != NATS_OK)
            continue; /* a gap (deleted) */
        const char *id = NULL;
        if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) != NATS_OK)
            id = "-";
        printf("%" PRIu64 " %s %s\n", seq, id, natsMsg_GetSubject(msg));
        natsMsg_Destroy(msg);
    }
    jsStreamInfo_Destroy(info);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return 0;
}
