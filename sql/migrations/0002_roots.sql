-- Watched roots by name, so that searches can filter on "notes" rather than a path.
CREATE TABLE pgrecall.roots (
    name text PRIMARY KEY,
    path text NOT NULL UNIQUE,
    added_at timestamptz NOT NULL DEFAULT now()
);
