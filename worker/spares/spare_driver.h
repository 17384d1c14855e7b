/* spare_driver: the spare lifecycle after spare_handler accepted it, on a
 * thread of its own with its own store handle, so that provisioning and
 * readiness waits never hold a broker delivery nor block scheduling.
 *
 * The store is the whole state: every half second the driver takes the
 * spares whose next step is due (spares.next_at <= now), does one step for
 * each (trigger the provisioner, probe Kubernetes, deprovision) and records
 * its outcome in one short transaction: spare row, task row and history, and
 * the event in the outbox (the main loop publishes it within its sweep
 * interval). A restarted worker resumes every spare where it was.
 *
 *   provisioning  -> create; ok: waiting_ready (deadline = ready_timeout_s);
 *                    error: retried with backoff (1, 2, 4 ... 60 s) up to
 *                    retry.max_attempts, then the task fails. A gitlab
 *                    trigger keeps the spare provisioning with its pipeline
 *                    id and ready_by = the pipeline's deadline
 *                    (provisioner.timeout_s); the pipeline is polled until
 *                    success (waiting_ready), or failed/canceled/skipped or
 *                    the deadline (the task fails)
 *   waiting_ready -> probe every readiness.poll_s; Ready: ready; past the
 *                    deadline: the task fails
 *   releasing     -> the Node out of Kubernetes (spare.release.kubernetes,
 *                    spare_kube.h), then destroy (a gitlab destroy pipeline
 *                    is waited for within the step); ok: released; error:
 *                    retried as for create, then the spare is left failed
 *                    with its error
 *
 * Progress events: spare.waiting_ready when every spare of a task is
 * created. With spare.max_age, the lease holder releases spares still ready
 * (or waiting) that long after placement through a release task of its own
 * ("release:max_age:<upgrade>:<ms>"), which ends like any other.
 *
 * A prepare task is ready (spare.ready) once all its spares are; when one
 * spare fails, the task fails (spare.failed names the spare and the step),
 * its reservations are released and spares already created are destroyed.
 * A release task is released (spare.released) once all its spares are,
 * and its prepare tasks' reservations are released with it.
 *
 * Reservations released here must also leave the scheduler's in-memory
 * overlay, which belongs to the main thread: it collects their task ids with
 * spare_driver_take_released before each batch. */
#ifndef VF_SPARE_DRIVER_H
#define VF_SPARE_DRIVER_H

#include "config.h"
#include "vf_error.h"

typedef struct spare_driver spare_driver;

/* Open a store handle and start the thread. `config` is borrowed for the
 * driver's life; `owner` names this worker in the store's "spares" lease
 * (store_owner_name): of several workers sharing a store, the lease holder
 * drives the spares. Returns an owned driver, or NULL with err. */
spare_driver *spare_driver_start(const vf_config *config, const char *owner, vf_error *err)
    __attribute__((warn_unused_result));

/* Stop the thread (a running provisioner command is killed; its step is
 * done again at the next start) and free. NULL is a no-op. */
void spare_driver_stop(spare_driver *driver);

/* Hand over (and forget) the task ids whose reservations the driver has
 * released since the last call; fn is called once per id. Thread-safe. */
void spare_driver_take_released(spare_driver *driver, void (*fn)(const char *task_id, void *user),
                                void *user);

#endif
