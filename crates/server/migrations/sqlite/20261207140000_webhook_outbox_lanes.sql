-- Webhook lanes (issue 37, item 3): each endpoint's delivery workers claim only that
-- endpoint's due rows, so the claim looks them up by endpoint first; a dead endpoint's
-- backlog of pending rows is never scanned by another endpoint's lane.
CREATE INDEX webhook_outbox_lane ON webhook_outbox (endpoint, state, next_attempt_ms);
