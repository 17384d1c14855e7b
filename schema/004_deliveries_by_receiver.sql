-- virtflow SQLite store, schema version 4: due deliveries found per receiver.
--
-- The relay asks, for each receiver with free slots, for its due deliveries
-- (store_deliveries_due_receiver: receiver = ? AND status = 'pending' AND
-- next_attempt_at <= now, oldest first). With only deliveries_due (status,
-- next_attempt_at) that walked every due row of every receiver: a receiver
-- that is down with a backlog of 1,000,000 due rows made each scan for a
-- healthy receiver cost 0.2-0.3 s (issue 13, finding 7). Keyed by receiver
-- first, a scan reads only that receiver's rows, whatever the others hold
-- (tests/bench/bench_deliveries.c prints both figures). Building the index
-- holds the write lock once, at the first start after the upgrade: a few
-- seconds for 1,000,000 deliveries.
-- Never edit a released migration: add 005_*.sql instead.

CREATE INDEX deliveries_due_by_receiver ON deliveries (receiver, status, next_attempt_at);

-- The old index served the all-receivers due scan, which the relay does not
-- run; the crash requeue (status = 'delivering'), which the small partial
-- index below serves; and the counts of `virtflowctl stats`, which now group
-- by receiver first to read the new index in order. Keeping it would cost a
-- second index update on every change of a delivery's state.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_delivering ON deliveries (receiver) WHERE status = 'delivering';
