/* console_hosts: /hosts, the inventory beside the store's live reservations
 * as bars per host and per pool, counted the way `virtflowctl nodes` and the
 * scheduler's filters count (capacity after reserve and overcommit, minus
 * what guests hold, minus what is reserved); the headroom picture
 * (console_headroom.c); the failure domains of the hosts' labels, as GET
 * /v1/hosts publishes them (failure_domains.h); and the utilisation
 * picture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "failure_domains.h"
#include "host_capacity.h"
#include "human.h"

/* One host's (or pool's) numbers. */
typedef struct usage {
    double cpu_cap, cpu_allocated, cpu_reserved; /* vCPUs */
    double mem_cap, mem_allocated, mem_reserved; /* MiB */
    int64_t disk_free, vm_free, reservations;
} usage;

typedef struct picture {
    hostset *hosts;
    usage *per_host;
    sched_host_load *loads; /* per host: what live reservations hold */
    sched_params params;
    int64_t unknown_hosts;
} picture;

static void picture_free(picture *p)
{
    hostset_free(p->hosts);
    free(p->per_host);
    free(p->loads);
}

/* Fetch the inventory and the live reservations. Returns 0, or -1 with a
 * message in error. */
static int picture_load(console *c, picture *p, char *error, size_t error_size)
{
    memset(p, 0, sizeof *p);
    vf_error err;
    vf_error_init(&err);
    if (!(p->hosts = inventory_fetch(c->inventory, &err))) {
        snprintf(error, error_size, "inventory unavailable: %s", err.text);
        return -1;
    }
    size_t n = p->hosts->n_hosts ? p->hosts->n_hosts : 1;
    host_held *per_host = calloc(n, sizeof *per_host);
    p->per_host = calloc(n, sizeof *p->per_host);
    p->loads = calloc(n, sizeof *p->loads);
    if (!per_host || !p->per_host || !p->loads) {
        free(per_host);
        snprintf(error, error_size, "out of memory");
        return -1;
    }
    sched_params params;
    if (host_capacity_held(p->hosts, c->store, per_host, &p->unknown_hosts, &err) < 0 ||
        host_capacity_params(c->config, &params, &err) < 0) {
        snprintf(error, error_size, "%s", err.text);
        free(per_host);
        return -1;
    }
    for (size_t i = 0; i < p->hosts->n_hosts; i++) {
        const host *h = &p->hosts->hosts[i];
        usage *u = &p->per_host[i];
        u->cpu_cap = sched_cpu_capacity(&params, h);
        u->cpu_allocated = h->allocated_cpu;
        u->cpu_reserved = per_host[i].cpu;
        u->mem_cap = sched_memory_capacity(&params, h);
        u->mem_allocated = (double)h->allocated_memory;
        u->mem_reserved = (double)per_host[i].memory;
        u->disk_free = h->storage - per_host[i].disk;
        u->vm_free = (int64_t)h->max_vms - h->current_vms - per_host[i].count;
        u->reservations = per_host[i].count;
        p->loads[i] = (sched_host_load){.cpu = per_host[i].cpu,
                                        .memory = per_host[i].memory,
                                        .disk = per_host[i].disk,
                                        .vms = per_host[i].count};
    }
    p->params = params;
    free(per_host);
    return 0;
}

static void usage_cells(html *page, const usage *u)
{
    double cpu_free = u->cpu_cap - u->cpu_allocated - u->cpu_reserved;
    double mem_free = u->mem_cap - u->mem_allocated - u->mem_reserved;
    html_raw(page, "<td>");
    console_bar(page, u->cpu_allocated, u->cpu_reserved, u->cpu_cap, 160);
    html_raw(page, "</td><td class=\"cpu-free\">%.1f / %.1f</td><td>", cpu_free, u->cpu_cap);
    console_bar(page, u->mem_allocated, u->mem_reserved, u->mem_cap, 160);
    /* As people read them (8 GiB, 1.5 TiB); the exact MiB in the title. */
    char free_text[HUMAN_SIZE], cap_text[HUMAN_SIZE], disk_text[HUMAN_SIZE];
    human_mib((int64_t)mem_free, free_text);
    human_mib((int64_t)u->mem_cap, cap_text);
    human_mib((int64_t)u->disk_free * 1024, disk_text);
    html_raw(page,
             "</td><td class=\"mem-free\" title=\"%.0f / %.0f MiB\">%s / %s</td>"
             "<td class=\"disk-free\" title=\"%lld GiB\">%s</td><td>%lld</td><td>%lld</td>",
             mem_free, u->mem_cap, free_text, cap_text, (long long)u->disk_free, disk_text,
             (long long)u->vm_free, (long long)u->reservations);
}

/* One table per label key: each domain, whether a control plane could go
 * there, the labels its hosts share, and its room (failure_domains.h).
 * Nothing when no host has labels. */
static void failure_domains_section(console *c, html *page, const hostset *hosts)
{
    vf_error err;
    vf_error_init(&err);
    json_t *capacity = host_capacity_json(c->config, hosts, c->store, NULL, &err);
    json_t *domains = capacity ? failure_domains_json(capacity) : NULL;
    json_decref(capacity);
    if (!domains || json_object_size(domains) == 0) {
        if (!domains && err.text[0])
            console_page_error(page, err.text);
        json_decref(domains);
        return;
    }
    html_raw(page, "<h2>Failure domains</h2><p class=\"muted\">The values of each host label, "
                   "as GET /v1/hosts publishes them (a CAPI provider's "
                   "status.failureDomains); room: free on the online hosts.</p>");
    const char *key;
    json_t *by_value;
    json_object_foreach(domains, key, by_value)
    {
        html_raw(page, "<table class=\"failure-domains\" id=\"domains-");
        html_url_part(page, key);
        html_raw(page, "\"><thead><tr><th>");
        html_text(page, key);
        html_raw(page, "</th><th>Control plane</th><th>Attributes</th><th>Hosts</th>"
                       "<th>Online</th><th>vCPU free</th><th>MiB free</th><th>VM slots free</th>"
                       "</tr></thead><tbody>");
        const char *name;
        json_t *domain;
        json_object_foreach(by_value, name, domain)
        {
            json_t *room = json_object_get(domain, "room");
            html_raw(page, "<tr class=\"domain\"><td class=\"name\">");
            html_text(page, name);
            html_raw(page, "</td><td>%s</td><td>",
                     json_is_true(json_object_get(domain, "controlPlane")) ? "yes" : "no");
            const char *attribute;
            json_t *value;
            bool first = true;
            json_object_foreach(json_object_get(domain, "attributes"), attribute, value)
            {
                html_raw(page, "%s", first ? "" : ", ");
                html_text(page, attribute);
                html_raw(page, "=");
                html_text(page, json_string_value(value));
                first = false;
            }
            html_raw(
                page,
                "</td><td>%lld</td><td>%lld</td><td>%.1f</td><td>%.0f</td><td>%lld</td></tr>\n",
                (long long)json_integer_value(json_object_get(room, "hosts")),
                (long long)json_integer_value(json_object_get(room, "online")),
                json_number_value(json_object_get(room, "cpu_free")),
                json_number_value(json_object_get(room, "memory_free")),
                (long long)json_integer_value(json_object_get(room, "vms_free")));
        }
        html_raw(page, "</tbody></table>");
    }
    json_decref(domains);
}

static const char usage_head[] =
    "<th>vCPU (guests, reserved)</th><th>vCPU free / cap</th><th>Memory (guests, reserved)</th>"
    "<th>Memory free / cap</th><th>Disk free</th><th>VM slots free</th><th>Reservations</th>";

int console_hosts_page(console *c, const httpd_request *req, html *page)
{
    (void)req;
    console_page_start(page, "Hosts", "/hosts");
    picture p;
    char error[1024];
    if (picture_load(c, &p, error, sizeof error) < 0) {
        console_page_error(page, error);
        console_page_end(page);
        picture_free(&p);
        return 503;
    }
    html_raw(page, "<p class=\"muted\">Bars: <svg width=\"10\" height=\"10\"><rect width=\"10\" "
                   "height=\"10\" fill=\"#5577aa\"/></svg> held by guests, <svg width=\"10\" "
                   "height=\"10\"><rect width=\"10\" height=\"10\" fill=\"#e0a030\"/></svg> "
                   "reserved by placements, light: free. Capacity after scheduler.reserve and "
                   "scheduler.overcommit.</p>");

    /* Pools in the order they first appear. */
    html_raw(page,
             "<h2>Pools</h2><table id=\"pools\"><thead><tr><th>Pool</th><th>Hosts</th>%s"
             "</tr></thead><tbody>",
             usage_head);
    for (size_t i = 0; i < p.hosts->n_hosts; i++) {
        const char *pool = p.hosts->hosts[i].pool;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(p.hosts->hosts[k].pool, pool) == 0;
        if (seen)
            continue;
        usage sum = {0};
        int members = 0;
        for (size_t k = i; k < p.hosts->n_hosts; k++) {
            if (strcmp(p.hosts->hosts[k].pool, pool) != 0)
                continue;
            const usage *u = &p.per_host[k];
            members++;
            sum.cpu_cap += u->cpu_cap;
            sum.cpu_allocated += u->cpu_allocated;
            sum.cpu_reserved += u->cpu_reserved;
            sum.mem_cap += u->mem_cap;
            sum.mem_allocated += u->mem_allocated;
            sum.mem_reserved += u->mem_reserved;
            sum.disk_free += u->disk_free;
            sum.vm_free += u->vm_free;
            sum.reservations += u->reservations;
        }
        html_raw(page, "<tr class=\"pool\"><td>");
        html_text(page, pool);
        html_raw(page, "</td><td>%d</td>", members);
        usage_cells(page, &sum);
        html_raw(page, "</tr>\n");
    }
    html_raw(page, "</tbody></table>");
    failure_domains_section(c, page, p.hosts);
    console_headroom_svg(c, page, p.hosts, p.loads, &p.params);
    console_forecast_svg(c, page, p.hosts, p.loads, &p.params);

    html_raw(page,
             "<h2>Hosts</h2><table id=\"hosts\"><thead><tr><th>Host</th><th>Pool</th>"
             "<th>Status</th>%s</tr></thead><tbody>",
             usage_head);
    for (size_t i = 0; i < p.hosts->n_hosts; i++) {
        const host *h = &p.hosts->hosts[i];
        html_raw(page, "<tr class=\"host\" id=\"host-");
        html_url_part(page, h->name);
        /* Its tasks, as /tasks?node= finds them. */
        html_raw(page, "\"><td class=\"name\"><a class=\"host-tasks\" href=\"/tasks?node=");
        html_url_part(page, h->name);
        html_raw(page, "\">");
        html_text(page, h->name);
        html_raw(page, "</a></td><td>");
        html_text(page, h->pool);
        html_raw(page, "%s</td><td>%s</td>", h->dedicated ? " (dedicated)" : "",
                 host_status_name(h->status));
        usage_cells(page, &p.per_host[i]);
        html_raw(page, "</tr>\n");
    }
    html_raw(page, "</tbody></table>");
    if (p.unknown_hosts > 0)
        html_raw(page,
                 "<p class=\"muted\">%lld live reservation(s) on hosts the inventory "
                 "does not list.</p>",
                 (long long)p.unknown_hosts);
    console_page_end(page);
    picture_free(&p);
    return 200;
}

int console_hosts_svg(console *c, html *page, char *error, size_t error_size)
{
    picture p;
    if (picture_load(c, &p, error, error_size) < 0) {
        picture_free(&p);
        return -1;
    }
    /* Two bars per host: vCPU and memory, each the share of capacity held
     * by guests and by reservations. */
    const int label = 150, bar = 420, row = 34;
    int height = 30 + row * (int)p.hosts->n_hosts;
    html_raw(page,
             "<svg id=\"utilisation\" width=\"%d\" height=\"%d\" role=\"img\" "
             "font-family=\"sans-serif\" font-size=\"12\">"
             "<text x=\"%d\" y=\"14\">vCPU and memory in use (guests + reserved), %% of "
             "capacity</text>",
             label + bar + 80, height, label);
    for (size_t i = 0; i < p.hosts->n_hosts; i++) {
        const usage *u = &p.per_host[i];
        int y = 24 + row * (int)i;
        double cpu = u->cpu_cap > 0 ? (u->cpu_allocated + u->cpu_reserved) / u->cpu_cap : 0;
        double mem = u->mem_cap > 0 ? (u->mem_allocated + u->mem_reserved) / u->mem_cap : 0;
        cpu = cpu < 0 ? 0 : cpu > 1 ? 1 : cpu;
        mem = mem < 0 ? 0 : mem > 1 ? 1 : mem;
        html_raw(page, "<text x=\"0\" y=\"%d\">", y + 16);
        html_text(page, p.hosts->hosts[i].name);
        html_raw(page,
                 "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"13\" fill=\"#e8e8e8\"/>"
                 "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"13\" fill=\"#5577aa\"/>"
                 "<text x=\"%d\" y=\"%d\">cpu %.0f%%</text>"
                 "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"13\" fill=\"#e8e8e8\"/>"
                 "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"13\" fill=\"#55aa77\"/>"
                 "<text x=\"%d\" y=\"%d\">mem %.0f%%</text>",
                 label, y, bar, label, y, cpu * bar, label + bar + 6, y + 11, cpu * 100, label,
                 y + 15, bar, label, y + 15, mem * bar, label + bar + 6, y + 26, mem * 100);
    }
    html_raw(page, "</svg>");
    picture_free(&p);
    return 0;
}
