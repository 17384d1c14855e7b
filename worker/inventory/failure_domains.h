/* failure_domains: the hosts' topology labels published as failure
 * domains (docs/scheduling.md "Failure domains and topology spread"), in the
 * shape a Cluster API infrastructure provider gives its status.failureDomains:
 * a map of domain name to {controlPlane, attributes}, so that a CAPPX user
 * sees where a control plane could go, with each domain's room beside.
 *
 *   {"rack": {"r1": {"controlPlane": true,
 *                    "attributes": {"rack": "r1", "zone": "z1"},
 *                    "room": {"hosts": 3, "online": 3, "cpu_free": 90.5,
 *                             "memory_free": 180224, "disk_free": 2700,
 *                             "vms_free": 297}}, ...},
 *    "zone": {...}}
 *
 * One map per label key any host carries, each domain a value of it.
 * attributes: every label all the domain's hosts share (the key's own
 * among them: a rack in one zone names its zone). controlPlane: the domain
 * has an online host, so a control plane machine could go there. room: the
 * domain's hosts, the online ones, and what is free on the online ones
 * summed (a host with nothing left counts 0, not less), as GET /v1/hosts'
 * pools sum it. No I/O. */
#ifndef VF_FAILURE_DOMAINS_H
#define VF_FAILURE_DOMAINS_H

#include <jansson.h>

/* The failure domains of `hosts`, an array as host_capacity_json makes it
 * (each host with its status, labels and cpu/memory/disk/vms free). Owned;
 * NULL when out of memory. */
json_t *failure_domains_json(const json_t *hosts);

#endif
