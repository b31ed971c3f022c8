-- The W3C traceparent of the consumer span that created the delivery: each attempt's
-- egress span continues that trace (docs/operations.md, "Observability"). Null for
-- deliveries created before this column existed, or without an active trace.
alter table deliveries add column traceparent text;
