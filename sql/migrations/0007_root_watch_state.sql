-- How each root is watched, written by the watcher (throttled): "events"
-- (inotify) or "polling" (the kernel's inotify limit was reached), since when,
-- when the watcher last confirmed it was running, and when it last saw a change.
ALTER TABLE pgrecall.roots
    ADD COLUMN watch_mode text CHECK (watch_mode IN ('events', 'polling')),
    ADD COLUMN watch_mode_since timestamptz,
    ADD COLUMN watcher_seen_at timestamptz,
    ADD COLUMN last_event_at timestamptz;
