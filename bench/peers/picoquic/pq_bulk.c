/*
 * pq_bulk: mpq's speed-2x100 work in picoquic, in virtual time.
 *
 * A client downloads from a server over one or two paths, each a pair of
 * picoquic's simulated links (sim_link.c in picoquic-core: a rate, a one-way
 * latency and a drop-tail queue bounded in time). The two endpoints are
 * picoquic contexts driven through picoquic's public API only
 * (picoquic_prepare_next_packet, picoquic_incoming_packet,
 * picoquic_get_next_wake_time); AES-128-GCM through picotls/OpenSSL, as
 * picoquic ships. The loop below is this driver's own: it steps virtual time
 * from one event (a packet arriving, an endpoint's wake-up) to the next.
 *
 * usage: pq_bulk CERT KEY PATHS SECONDS [MTU_MAX]
 *   CERT, KEY  the server's certificate and key (picoquic's certs/cert.pem
 *              and certs/key.pem serve)
 *   PATHS      1 or 2
 *   SECONDS    simulated seconds of download (the server never runs dry)
 *   MTU_MAX    picoquic's mtu_max (default 1378: 1350-byte UDP payloads)
 *
 * It prints one line: paths, simulated seconds, bytes received by the
 * client, packets carried by the links, and "sim_s=" for the harness.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "picoquic.h"
#include "picoquic_utils.h"
#include "picoquic_newreno.h"

#define MAX_PATHS 2
#define RATE_GBPS 0.1
#define LATENCY_US 25000
#define QUEUE_US 50000

/* bench_t is the whole simulation: the two endpoints, the links of each
 * path (up: client to server) and the addresses that name the paths. */
typedef struct {
    uint64_t now;
    picoquic_quic_t* client;
    picoquic_quic_t* server;
    picoquic_cnx_t* cnx;
    int paths;
    int probed;
    picoquictest_sim_link_t* up[MAX_PATHS];
    picoquictest_sim_link_t* down[MAX_PATHS];
    struct sockaddr_in caddr[MAX_PATHS];
    struct sockaddr_in saddr[MAX_PATHS];
    uint64_t received;
    uint64_t packets;
} bench_t;

static void set_addr(struct sockaddr_in* a, int path, int host)
{
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(0x0a000000u | ((uint32_t)(path + 1) << 16) | (uint32_t)host);
    a->sin_port = htons(host == 1 ? 40000 : 443);
}

/* path_of returns the path whose client address is a (0 if none is). */
static int path_of(bench_t* b, struct sockaddr_storage* a)
{
    struct sockaddr_in* in = (struct sockaddr_in*)a;
    for (int i = 1; i < b->paths; i++) {
        if (in->sin_family == AF_INET && in->sin_addr.s_addr == b->caddr[i].sin_addr.s_addr) {
            return i;
        }
    }
    return 0;
}

/* The server answers any stream the client opens with an endless body. */
static int server_cb(picoquic_cnx_t* cnx, uint64_t stream_id, uint8_t* bytes, size_t length,
    picoquic_call_back_event_t event, void* ctx, void* stream_ctx)
{
    (void)bytes;
    (void)ctx;
    (void)stream_ctx;
    switch (event) {
    case picoquic_callback_stream_data:
    case picoquic_callback_stream_fin:
        if (event == picoquic_callback_stream_fin) {
            picoquic_mark_active_stream(cnx, stream_id, 1, NULL);
        }
        break;
    case picoquic_callback_prepare_to_send:
        /* The payload's bytes are left as they are: mpq's bulk source
         * sends zeros without writing them either. */
        (void)picoquic_provide_stream_data_buffer(bytes, length, 0, 1);
        break;
    default:
        break;
    }
    return 0;
}

/* The client counts what it receives and opens the second path once the
 * handshake is done. */
static int client_cb(picoquic_cnx_t* cnx, uint64_t stream_id, uint8_t* bytes, size_t length,
    picoquic_call_back_event_t event, void* ctx, void* stream_ctx)
{
    bench_t* b = (bench_t*)ctx;
    (void)cnx;
    (void)stream_id;
    (void)bytes;
    (void)stream_ctx;
    switch (event) {
    case picoquic_callback_stream_data:
    case picoquic_callback_stream_fin:
        b->received += length;
        break;
    case picoquic_callback_ready:
        if (b->paths > 1 && !b->probed) {
            b->probed = 1;
            if (picoquic_probe_new_path(cnx, (struct sockaddr*)&b->saddr[1], (struct sockaddr*)&b->caddr[1], b->now) != 0) {
                fprintf(stderr, "pq_bulk: cannot probe the second path\n");
            }
        }
        break;
    default:
        break;
    }
    return 0;
}

/* send_all lets an endpoint send every packet it has for now; the client's
 * go up the path of their source address, the server's down the path of
 * their destination. */
static int send_all(bench_t* b, picoquic_quic_t* q, int is_client)
{
    for (;;) {
        picoquictest_sim_packet_t* p = picoquictest_sim_link_create_packet();
        if (p == NULL) {
            return -1;
        }
        int if_index = 0;
        int ret = picoquic_prepare_next_packet(q, b->now, p->bytes, PICOQUIC_MAX_PACKET_SIZE, &p->length,
            &p->addr_to, &p->addr_from, &if_index, NULL, NULL);
        if (ret != 0 || p->length == 0) {
            free(p);
            return ret;
        }
        int path;
        if (is_client) {
            if (p->addr_from.ss_family == 0) {
                memcpy(&p->addr_from, &b->caddr[0], sizeof(b->caddr[0]));
            }
            path = path_of(b, &p->addr_from);
            picoquictest_sim_link_submit(b->up[path], p, b->now);
        } else {
            path = path_of(b, &p->addr_to);
            if (p->addr_from.ss_family == 0) {
                memcpy(&p->addr_from, &b->saddr[path], sizeof(b->saddr[path]));
            }
            picoquictest_sim_link_submit(b->down[path], p, b->now);
        }
        b->packets++;
    }
}

/* deliver hands an endpoint the packets of link that have arrived. */
static void deliver(bench_t* b, picoquictest_sim_link_t* link, picoquic_quic_t* q)
{
    picoquictest_sim_packet_t* p;
    while ((p = picoquictest_sim_link_dequeue(link, b->now)) != NULL) {
        (void)picoquic_incoming_packet(q, p->bytes, p->length, (struct sockaddr*)&p->addr_from,
            (struct sockaddr*)&p->addr_to, 0, 0, b->now);
        free(p);
    }
}

int main(int argc, char** argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: %s CERT KEY PATHS SECONDS [MTU_MAX]\n", argv[0]);
        return 2;
    }
    bench_t b;
    memset(&b, 0, sizeof(b));
    b.paths = atoi(argv[3]);
    double seconds = atof(argv[4]);
    uint32_t mtu_max = argc > 5 ? (uint32_t)atoi(argv[5]) : 1378;
    if (b.paths < 1 || b.paths > MAX_PATHS || seconds <= 0) {
        fprintf(stderr, "pq_bulk: PATHS is 1 or 2, SECONDS positive\n");
        return 2;
    }
    uint64_t end = (uint64_t)(seconds * 1e6);

    for (int i = 0; i < b.paths; i++) {
        set_addr(&b.caddr[i], i, 1);
        set_addr(&b.saddr[i], i, 2);
        b.up[i] = picoquictest_sim_link_create(RATE_GBPS, LATENCY_US, NULL, QUEUE_US, 0);
        b.down[i] = picoquictest_sim_link_create(RATE_GBPS, LATENCY_US, NULL, QUEUE_US, 0);
        if (b.up[i] == NULL || b.down[i] == NULL) {
            return 1;
        }
    }
    b.server = picoquic_create(8, argv[1], argv[2], NULL, "bench", server_cb, &b, NULL, NULL, NULL,
        b.now, &b.now, NULL, NULL, 0);
    b.client = picoquic_create(8, NULL, NULL, NULL, "bench", client_cb, &b, NULL, NULL, NULL,
        b.now, &b.now, NULL, NULL, 0);
    if (b.server == NULL || b.client == NULL) {
        fprintf(stderr, "pq_bulk: cannot create the endpoints (certificate %s, key %s)\n", argv[1], argv[2]);
        return 1;
    }
    picoquic_set_null_verifier(b.client);
    picoquic_quic_t* both[2] = { b.client, b.server };
    for (int i = 0; i < 2; i++) {
        picoquic_set_default_congestion_algorithm(both[i], picoquic_newreno_algorithm);
        picoquic_set_mtu_max(both[i], mtu_max);
        if (b.paths > 1) {
            picoquic_set_default_multipath_option(both[i], 1);
        }
    }
    b.cnx = picoquic_create_cnx(b.client, picoquic_null_connection_id, picoquic_null_connection_id,
        (struct sockaddr*)&b.saddr[0], b.now, 0, "test.example.com", "bench", 1);
    if (b.cnx == NULL || picoquic_start_client_cnx(b.cnx) != 0) {
        fprintf(stderr, "pq_bulk: cannot start the client\n");
        return 1;
    }
    /* A request: the client opens stream 0 and closes its side. */
    if (picoquic_add_to_stream(b.cnx, 0, (const uint8_t*)"GET", 3, 1) != 0) {
        return 1;
    }

    while (b.now < end) {
        for (int i = 0; i < b.paths; i++) {
            deliver(&b, b.up[i], b.server);
            deliver(&b, b.down[i], b.client);
        }
        if (send_all(&b, b.client, 1) != 0 || send_all(&b, b.server, 0) != 0) {
            fprintf(stderr, "pq_bulk: sending failed at %llu us\n", (unsigned long long)b.now);
            return 1;
        }
        if (picoquic_get_cnx_state(b.cnx) >= picoquic_state_disconnecting) {
            fprintf(stderr, "pq_bulk: the connection closed at %llu us\n", (unsigned long long)b.now);
            return 1;
        }
        uint64_t next = end;
        for (int i = 0; i < b.paths; i++) {
            uint64_t t = picoquictest_sim_link_next_arrival(b.up[i], next);
            next = t < next ? t : next;
            t = picoquictest_sim_link_next_arrival(b.down[i], next);
            next = t < next ? t : next;
        }
        uint64_t t = picoquic_get_next_wake_time(b.client, b.now);
        next = t < next ? t : next;
        t = picoquic_get_next_wake_time(b.server, b.now);
        next = t < next ? t : next;
        b.now = next > b.now ? next : b.now + 1;
    }
    int paths_used = 0;
    for (int i = 0; i < b.paths; i++) {
        if (b.down[i]->packets_sent > 1000) {
            paths_used++;
        }
    }
    printf("paths=%d paths_used=%d sim_s=%.3f received=%llu goodput_mbit=%.1f packets=%llu\n", b.paths, paths_used,
        seconds, (unsigned long long)b.received, (double)b.received * 8 / seconds / 1e6, (unsigned long long)b.packets);
    picoquic_free(b.client);
    picoquic_free(b.server);
    return 0;
}
